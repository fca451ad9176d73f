//! Coalescing of concurrent `record_intent` calls on Postgres.
//!
//! Under load most of a single upsert's cost is the round trip and the
//! per-statement work in the server, not the row. Callers hand their derived
//! candidate to a small set of workers; a worker takes everything queued
//! (up to [`MAX_BATCH`]), writes it with one `unnest` upsert per tenant, and
//! answers each caller from the returned rows. A lone caller pays one channel
//! hop; 32 callers share a few statements instead of sending 32.

use crate::backend::IntentRow;
use crate::model::{Millis, RecordedIntent};
use crate::session::Candidate;
use crate::Error;
use idem_core::TenantId;
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Most deliveries per statement.
pub(crate) const MAX_BATCH: usize = 256;
/// Statements in flight at once.
const WORKERS: usize = 4;

struct Job {
    tenant: TenantId,
    action: String,
    candidate: Candidate,
    json: String,
    now: Millis,
    reply: oneshot::Sender<Result<RecordedIntent, Error>>,
}

/// The queue the callers share.
pub(crate) struct Batcher {
    tx: mpsc::UnboundedSender<Job>,
}

impl Batcher {
    pub(crate) fn new(pool: PgPool) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..WORKERS {
            tokio::spawn(worker(pool.clone(), rx.clone()));
        }
        Self { tx }
    }

    pub(crate) async fn record(
        &self,
        tenant: &TenantId,
        action: &str,
        candidate: Candidate,
        now: Millis,
    ) -> Result<RecordedIntent, Error> {
        let (reply, answer) = oneshot::channel();
        let json = candidate.payload.to_json();
        let job = Job {
            tenant: tenant.clone(),
            action: action.to_owned(),
            candidate,
            json,
            now,
            reply,
        };
        self.tx
            .send(job)
            .map_err(|_| Error::Unavailable("the store is shutting down".into()))?;
        answer
            .await
            .map_err(|_| Error::Unavailable("the store is shutting down".into()))?
    }
}

async fn worker(pool: PgPool, rx: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>) {
    loop {
        let mut jobs = Vec::new();
        {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else { return };
            jobs.push(first);
            while jobs.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
        }
        run(&pool, jobs).await;
    }
}

/// Writes one drained batch: one statement per tenant and round.
async fn run(pool: &PgPool, jobs: Vec<Job>) {
    let mut by_tenant: HashMap<TenantId, Vec<Job>> = HashMap::new();
    for j in jobs {
        by_tenant.entry(j.tenant.clone()).or_default().push(j);
    }
    for (tenant, mut jobs) in by_tenant {
        // Candidates for one intent with different payloads cannot share a
        // row; later ones wait for the next round (rare: a divergent
        // redelivery racing the first).
        while !jobs.is_empty() {
            let (round, rest) = split_round(jobs);
            jobs = rest;
            write_round(pool, &tenant, round).await;
        }
    }
}

type RowKey = (String, String);

/// Groups identical candidates; defers a second, different candidate for
/// the same intent to a later round.
fn split_round(jobs: Vec<Job>) -> (Vec<Vec<Job>>, Vec<Job>) {
    let mut groups: Vec<Vec<Job>> = Vec::new();
    let mut index: HashMap<RowKey, usize> = HashMap::new();
    let mut rest = Vec::new();
    for j in jobs {
        let k = (j.candidate.reference.clone(), j.action.clone());
        match index.get(&k) {
            Some(&g) if groups[g][0].json == j.json => groups[g].push(j),
            Some(_) => rest.push(j),
            None => {
                index.insert(k, groups.len());
                groups.push(vec![j]);
            }
        }
    }
    (groups, rest)
}

async fn write_round(pool: &PgPool, tenant: &TenantId, groups: Vec<Vec<Job>>) {
    let mut refs = Vec::with_capacity(groups.len());
    let mut actions = Vec::with_capacity(groups.len());
    let mut versions = Vec::with_capacity(groups.len());
    let mut keys = Vec::with_capacity(groups.len());
    let mut payloads = Vec::with_capacity(groups.len());
    let mut counts = Vec::with_capacity(groups.len());
    // One timestamp per statement: the latest of the callers' clocks.
    let now = groups.iter().flatten().map(|j| j.now).max().unwrap_or(0);
    for g in &groups {
        let j = &g[0];
        refs.push(j.candidate.reference.as_str());
        actions.push(j.action.as_str());
        versions.push(i32::try_from(j.candidate.rules_version.number()).unwrap_or(i32::MAX));
        keys.push(j.candidate.key.as_str());
        payloads.push(j.json.as_str());
        counts.push(i64::try_from(g.len()).unwrap_or(i64::MAX));
    }
    let result = write(
        pool, tenant, &refs, &actions, &versions, &keys, &payloads, &counts, now,
    )
    .await;
    let mut rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            let e = Arc::new(e);
            tracing::error!(error = %e, "coalesced intent write failed");
            for j in groups.into_iter().flatten() {
                let _ = j.reply.send(Err(Error::Shared(e.clone())));
            }
            return;
        }
    };
    for g in groups {
        let k = (g[0].candidate.reference.clone(), g[0].action.clone());
        let row = rows.remove(&k);
        let n = i64::try_from(g.len()).unwrap_or(i64::MAX);
        for (nth, j) in (0i64..).zip(g) {
            let answer = match &row {
                Some(row) => j.candidate.recorded_nth(row, &j.json, n, nth),
                None => Err(Error::Corrupt("a coalesced write returned no row".into())),
            };
            let _ = j.reply.send(answer);
        }
    }
}

#[allow(clippy::too_many_arguments)] // one array per column
#[tracing::instrument(skip_all, fields(rows = refs.len()))]
async fn write(
    pool: &PgPool,
    tenant: &TenantId,
    refs: &[&str],
    actions: &[&str],
    versions: &[i32],
    keys: &[&str],
    payloads: &[&str],
    counts: &[i64],
    now: Millis,
) -> Result<HashMap<RowKey, IntentRow>, sqlx::Error> {
    use sqlx::Row as _;
    let rows = sqlx::query(crate::sql::PG_RECORD_INTENTS)
        .bind(tenant.as_str())
        .bind(refs)
        .bind(actions)
        .bind(versions)
        .bind(keys)
        .bind(payloads)
        .bind(counts)
        .bind(now)
        .fetch_all(pool)
        .await?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in rows {
        let key = (r.try_get("reference")?, r.try_get("action")?);
        let row = <IntentRow as sqlx::FromRow<_>>::from_row(&r)?;
        out.insert(key, row);
    }
    Ok(out)
}
