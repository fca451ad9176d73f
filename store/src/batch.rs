//! The intent writer: concurrent `record_intent` calls, coalesced.
//!
//! Flat combining: a caller queues its derived candidate, then either takes a
//! free writer connection and writes everything queued (its own job and any
//! that arrived meanwhile), or waits for another caller to have written it.
//! A batch is one `unnest` upsert per tenant on Postgres, one `begin
//! immediate` transaction on SQLite (which has one writer anyway). A lone
//! caller writes its own row directly, with no task hop; 32 callers share a
//! few statements or commits. The counts are journaled in the same
//! statement: on Postgres one journal row per tenant and action, whatever the
//! batch's size; on SQLite the intents table's triggers append one per row.
//!
//! The workers own their connections instead of borrowing from the pool:
//! sqlx pings every pooled connection when it is returned, a second round
//! trip per call that the hot path cannot afford. A connection that fails is
//! dropped and reopened for the next batch; that batch's callers get the
//! error (the write may or may not have committed; recording again is safe).
//!
//! A caller may go away mid-write (an HTTP client that disconnects drops its
//! handler, and with it this future). A batch holding other callers' jobs is
//! therefore written in a task of its own, so their answers never depend on
//! the combiner's caller staying; a batch of the caller's own job alone is
//! written inline, with no task hop.

use crate::backend::prelude::IntentQueries;
use crate::backend::{IntentRow, IntentWrite};
use crate::model::{Millis, RecordedIntent};
use crate::session::Candidate;
use crate::Error;
use idem_core::TenantId;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, SqliteConnection};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{oneshot, Semaphore};
use tracing::Instrument as _;

/// Most deliveries per statement or transaction.
pub(crate) const MAX_BATCH: usize = 256;

/// Where the workers connect.
#[derive(Clone)]
pub(crate) enum Target {
    Sqlite(SqliteConnectOptions),
    Postgres(PgConnectOptions),
}

enum Conn {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

struct Job {
    /// Which caller queued it.
    id: u64,
    tenant: TenantId,
    action: String,
    candidate: Candidate,
    json: String,
    now: Millis,
    reply: oneshot::Sender<Result<RecordedIntent, Error>>,
}

/// The queue and the writer connections the callers share.
pub(crate) struct Batcher {
    target: Target,
    /// Journal the counts with each write (Postgres; SQLite's triggers
    /// always do).
    stats: bool,
    queue: std::sync::Mutex<Vec<Job>>,
    /// One permit per writer connection (Postgres runs several statements
    /// at once; SQLite has one writer).
    permits: Arc<Semaphore>,
    /// Numbers the jobs, so a combiner knows a batch of its own job alone.
    next_id: std::sync::atomic::AtomicU64,
    /// Idle connections; `None` slots are reopened on use.
    idle: std::sync::Mutex<Vec<Option<Conn>>>,
    /// SQLite: the store's queue of writers, which this one joins.
    gate: crate::write_queue::WriteQueue,
    /// Told how long each batch took.
    observer: Option<Arc<dyn crate::Observer>>,
    /// How long opening a writer's connection may take: the pool's acquire
    /// time-out. During a failover a connection attempt can wait in the
    /// router, or never be answered when packets are dropped (the kernel's
    /// own limit is minutes), while its writer's permit holds every intent
    /// behind it.
    connect_within: std::time::Duration,
}

impl Batcher {
    pub(crate) fn new(
        target: Target,
        stats: bool,
        gate: crate::write_queue::WriteQueue,
        observer: Option<Arc<dyn crate::Observer>>,
        connect_within: std::time::Duration,
    ) -> Self {
        let writers = match target {
            Target::Sqlite(_) => 1,
            // Fewer writers make bigger batches, and a batch costs the
            // database about one statement whatever its size: on a 2-core
            // PostgreSQL, 64 callers recorded ~50k intents/s with 4 or 8
            // writers and ~58k with 2, and 16 callers ~23k with 4 against
            // ~17k with 8 (docs/PERFORMANCE.md). Two since each statement
            // also journals its counts (a fixed ~50 µs per statement): bigger
            // batches amortize it, and 32 callers record as fast as they did
            // with four writers and no journal, 8 callers faster.
            Target::Postgres(_) => 2,
        };
        Self {
            target,
            stats,
            queue: std::sync::Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(writers)),
            next_id: std::sync::atomic::AtomicU64::new(0),
            idle: std::sync::Mutex::new((0..writers).map(|_| None).collect()),
            gate,
            observer,
            connect_within,
        }
    }

    /// Stops taking work and closes the writer connections.
    pub(crate) async fn close(&self) {
        self.permits.close();
        let conns: Vec<_> = lock(&self.idle).drain(..).flatten().collect();
        for c in conns {
            let _ = match c {
                Conn::Sqlite(c) => c.close().await,
                Conn::Postgres(c) => c.close().await,
            };
        }
        for j in lock(&self.queue).drain(..) {
            let _ = j
                .reply
                .send(Err(Error::Unavailable("the store is closed".into())));
        }
    }

    pub(crate) async fn record(
        self: &Arc<Self>,
        tenant: &TenantId,
        action: &str,
        candidate: Candidate,
        now: Millis,
    ) -> Result<RecordedIntent, Error> {
        let (reply, mut answer) = oneshot::channel();
        let json = candidate.payload.to_json();
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.queue).push(Job {
            id,
            tenant: tenant.clone(),
            action: action.to_owned(),
            candidate,
            json,
            now,
            reply,
        });
        loop {
            tokio::select! {
                biased;
                a = &mut answer => {
                    return a.map_err(|_| Error::Unavailable("the store is closed".into()))?;
                }
                permit = self.permits.clone().acquire_owned() => {
                    let Ok(held) = permit else {
                        return Err(Error::Unavailable("the store is closed".into()));
                    };
                    // Whatever is queued now, ours included unless another
                    // combiner took it; an empty queue means it did.
                    let jobs: Vec<Job> = {
                        let mut q = lock(&self.queue);
                        let n = q.len().min(MAX_BATCH);
                        q.drain(..n).collect()
                    };
                    if jobs.is_empty() {
                        // Another combiner holds our job and will answer.
                        // Waiting for the permit again would wake us once per
                        // batch written by anyone (64 waiters cycling through
                        // 8 permits, for nothing). No job is stranded: every
                        // queued job's caller is still waiting for a permit,
                        // since a caller stops only once its job left the
                        // queue.
                        drop(held);
                        return answer
                            .await
                            .map_err(|_| Error::Unavailable("the store is closed".into()))?;
                    }
                    if jobs.len() == 1 && jobs[0].id == id {
                        // Only our caller waits on this write.
                        self.write(jobs).await;
                        drop(held);
                    } else {
                        // Others wait on it too: out of our caller's reach.
                        let me = Arc::clone(self);
                        let writing = tokio::spawn(async move {
                            me.write(jobs).await;
                            drop(held);
                        });
                        let _ = writing.await;
                    }
                }
            }
        }
    }

    /// Writes one batch on an idle connection (opened if needed).
    async fn write(&self, jobs: Vec<Job>) {
        let since = std::time::Instant::now();
        let backend = match self.target {
            Target::Sqlite(_) => crate::Backend::Sqlite,
            Target::Postgres(_) => crate::Backend::Postgres,
        };
        // One batch writes many requests' intents: its span belongs to the
        // request whose task wrote it, and says how many rode along.
        let span = crate::observe::span(crate::observe::BATCH, backend);
        span.record("idem.batch_size", jobs.len());
        self.write_batch(jobs).instrument(span).await;
        crate::observe::report(
            self.observer.as_deref(),
            crate::observe::BATCH,
            backend,
            since,
        );
    }

    async fn write_batch(&self, jobs: Vec<Job>) {
        let slot = lock(&self.idle).pop();
        let conn = match slot.flatten() {
            Some(c) => Ok(c),
            None => tokio::time::timeout(self.connect_within, connect(&self.target))
                .await
                .unwrap_or(Err(sqlx::Error::PoolTimedOut)),
        };
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                lock(&self.idle).push(None);
                fail_all(jobs, e);
                return;
            }
        };
        let healthy = match &mut conn {
            Conn::Postgres(c) => run_pg(c, jobs, self.stats).await,
            Conn::Sqlite(c) => match self.gate.turn().await {
                Ok(_turn) => run_sqlite(c, jobs).await,
                Err(e) => {
                    tracing::error!(error = %e, "intent write found no write turn");
                    for j in jobs {
                        let _ = j
                            .reply
                            .send(Err(Error::Unavailable("the database is busy".into())));
                    }
                    true
                }
            },
        };
        // A connection that failed is dropped and reopened on next use.
        lock(&self.idle).push(healthy.then_some(conn));
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn connect(target: &Target) -> Result<Conn, sqlx::Error> {
    Ok(match target {
        Target::Sqlite(o) => Conn::Sqlite(o.connect().await?),
        Target::Postgres(o) => Conn::Postgres(o.connect().await?),
    })
}

fn fail_all(jobs: impl IntoIterator<Item = Job>, e: sqlx::Error) {
    crate::faults::observe(&e);
    let e = Arc::new(e);
    tracing::error!(error = %e, "intent write failed");
    for j in jobs {
        let _ = j.reply.send(Err(Error::Shared(e.clone())));
    }
}

/// SQLite: one job alone is one autocommit upsert; several share one
/// transaction, each its own upsert in arrival order. The intents table's
/// triggers journal the counts inside each upsert (migration 0010). Returns
/// false when the connection should be reopened.
async fn run_sqlite(c: &mut SqliteConnection, jobs: Vec<Job>) -> bool {
    if jobs.len() == 1 {
        let mut jobs = jobs;
        let Some(j) = jobs.pop() else { return true };
        let w = job_write(&j);
        return match IntentQueries::record_intent(c, &w, 1, j.now).await {
            Ok(row) => {
                let _ = j.reply.send(j.candidate.recorded_nth(&row, &j.json, 1, 0));
                true
            }
            Err(e) => {
                let fatal = is_fatal(&e);
                fail_all([j], e);
                !fatal
            }
        };
    }
    let result = async {
        let mut tx = c.begin_with("begin immediate").await?;
        let mut rows = Vec::with_capacity(jobs.len());
        for j in &jobs {
            rows.push(IntentQueries::record_intent(&mut *tx, &job_write(j), 1, j.now).await?);
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(rows)
    }
    .await;
    match result {
        Ok(rows) => {
            for (j, row) in jobs.into_iter().zip(rows) {
                let _ = j.reply.send(j.candidate.recorded_nth(&row, &j.json, 1, 0));
            }
            true
        }
        Err(e) => {
            let fatal = is_fatal(&e);
            fail_all(jobs, e);
            !fatal
        }
    }
}

fn job_write(j: &Job) -> IntentWrite<'_> {
    j.candidate.write_parts(&j.tenant, &j.action, &j.json)
}

/// Errors after which the connection cannot be trusted.
fn is_fatal(e: &sqlx::Error) -> bool {
    // A refusal that names the connection (a standby's read-only answer, a
    // session the server ended) is fatal too: the writer reconnects, and
    // the router sends it to the new primary.
    crate::faults::is_connection_fault(e)
        || !matches!(
            e,
            sqlx::Error::Database(_) | sqlx::Error::RowNotFound | sqlx::Error::ColumnDecode { .. }
        )
}

/// Postgres: one statement per tenant and round. Returns false when the
/// connection should be reopened.
async fn run_pg(c: &mut PgConnection, jobs: Vec<Job>, stats: bool) -> bool {
    let mut healthy = true;
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
            healthy &= write_round(c, &tenant, round, stats).await;
        }
    }
    healthy
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

async fn write_round(
    c: &mut PgConnection,
    tenant: &TenantId,
    mut groups: Vec<Vec<Job>>,
    stats: bool,
) -> bool {
    // Rows in key order: the statement locks them in array order, and two
    // writers whose batches share intents in different orders would each
    // wait for the other (a deadlock PostgreSQL breaks by failing one).
    groups.sort_by(|a, b| {
        (&a[0].candidate.reference, &a[0].action).cmp(&(&b[0].candidate.reference, &b[0].action))
    });
    let mut refs = Vec::with_capacity(groups.len());
    let mut actions = Vec::with_capacity(groups.len());
    let mut versions = Vec::with_capacity(groups.len());
    let mut keys = Vec::with_capacity(groups.len());
    let mut payloads = Vec::with_capacity(groups.len());
    let mut counts = Vec::with_capacity(groups.len());
    let mut candidates = Vec::with_capacity(groups.len());
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
        // Identical normalized candidates may differ as sent ("180.00",
        // "180,00"); they arrived together, so the first queued stands as
        // the first delivery.
        candidates.push(j.candidate.source.as_deref());
    }
    let columns = Columns {
        refs: &refs,
        actions: &actions,
        versions: &versions,
        keys: &keys,
        payloads: &payloads,
        counts: &counts,
        candidates: &candidates,
    };
    let result = write(c, tenant, &columns, now, stats).await;
    let mut rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            let fatal = is_fatal(&e);
            fail_all(groups.into_iter().flatten(), e);
            return !fatal;
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
    true
}

/// One array per column of a coalesced write, a row per intent.
struct Columns<'a> {
    refs: &'a [&'a str],
    actions: &'a [&'a str],
    versions: &'a [i32],
    keys: &'a [&'a str],
    payloads: &'a [&'a str],
    counts: &'a [i64],
    candidates: &'a [Option<&'a str>],
}

#[tracing::instrument(level = "debug", skip_all, fields(rows = cols.refs.len()))]
async fn write(
    c: &mut PgConnection,
    tenant: &TenantId,
    cols: &Columns<'_>,
    now: Millis,
    stats: bool,
) -> Result<HashMap<RowKey, IntentRow>, sqlx::Error> {
    use sqlx::Row as _;
    let sql = if stats {
        crate::sql::intents::PG_RECORD_INTENTS_COUNTED
    } else {
        crate::sql::intents::PG_RECORD_INTENTS
    };
    let mut query = sqlx::query(sql)
        .bind(tenant.as_str())
        .bind(cols.refs)
        .bind(cols.actions)
        .bind(cols.versions)
        .bind(cols.keys)
        .bind(cols.payloads)
        .bind(cols.counts)
        .bind(now)
        .bind(cols.candidates);
    if stats {
        query = query.bind(&crate::stats::DELAY_BOUNDS_MS[..]);
    }
    let rows = query.fetch_all(&mut *c).await?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in rows {
        let key = (r.try_get("reference")?, r.try_get("action")?);
        let row = <IntentRow as sqlx::FromRow<_>>::from_row(&r)?;
        out.insert(key, row);
    }
    Ok(out)
}
