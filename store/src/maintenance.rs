//! Retention, lease sweeping and statistics flushing: the store's background
//! chores, run by `idem purge` and periodically by `idem serve`.

use crate::model::{Millis, Retention};
use crate::session::{on, Session};
use crate::sql::admin as q;
use crate::stats::Granularity;
use crate::{Error, Store};
use idem_core::TenantId;
use std::collections::BTreeSet;

/// What one purge removed, per table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PurgeReport {
    /// Tenants visited.
    pub tenants: usize,
    /// Intents removed.
    pub intents: u64,
    /// Intent history rows removed.
    pub intent_history: u64,
    /// Actions removed.
    pub actions: u64,
    /// Replaced attempts removed with their actions.
    pub action_attempts: u64,
    /// HTTP key records removed.
    pub http_keys: u64,
    /// Consumed-event marks removed.
    pub consumed_events: u64,
    /// Sent outbox messages removed.
    pub outbox: u64,
    /// Settled webhook deliveries (delivered or dead-lettered) removed.
    pub webhook_deliveries: u64,
    /// Statistics rows removed.
    pub stats: u64,
    /// Claims whose lease ran out, now marked uncertain.
    pub leases_expired: u64,
    /// Unsettled actions (claimed, uncertain, failed but retryable) whose
    /// attempt started before the retention cutoff, kept with their intents
    /// until they are settled.
    pub unresolved_kept: u64,
    /// Monitor login sessions that had ended (expired or logged out).
    pub live_sessions: u64,
    /// Batches (statements) run.
    pub batches: u64,
}

/// A periodic chore that one instance of a deployment runs at a time
/// ([`Store::lead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Chore {
    /// The purge and lease sweep.
    Purge,
    /// The alerts' evaluation.
    Alerts,
    /// The statistics journal's fold into the rollups.
    StatsFold,
}

impl Chore {
    /// Every chore.
    pub const ALL: [Chore; 3] = [Chore::Purge, Chore::Alerts, Chore::StatsFold];

    /// The chore's name, as its lease row and the metrics name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Chore::Purge => "purge",
            Chore::Alerts => "alerts",
            Chore::StatsFold => "stats_fold",
        }
    }
}

/// A name for this process among a deployment's instances.
pub(crate) fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let host = if host.is_empty() {
        "host".to_owned()
    } else {
        host
    };
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

impl Store {
    /// Takes or renews this instance's lease on `chore` for `for_ms`
    /// milliseconds. `Some(fence)` when this instance holds it now (the
    /// fence grows each time the lease changes holder), `None` when another
    /// instance's lease is still running: that instance does the chore, and
    /// this one skips it. When the holder dies, the next instance to try
    /// after the lease runs out takes it over.
    ///
    /// A lease is not a lock: a holder cut off from the database past its
    /// lease can still finish a run while another instance starts one. The
    /// chores are written to be safe to run twice; the lease is what keeps
    /// N instances from doing the work N times.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn lead(&self, chore: Chore, for_ms: Millis) -> Result<Option<i64>, Error> {
        let now = self.now_ms();
        let mut s = self.session().await?;
        Ok(on!(s.take_chore_lease(
            crate::tenants::ADMIN_SCOPE,
            chore.as_str(),
            &self.inner.instance,
            now,
            now + for_ms.max(1)
        ))?)
    }

    /// Whether the store can write now, and if not why (in words an
    /// operator can act on; the database's own error is logged here).
    ///
    /// A read such as `select 1` cannot tell: in WAL mode it succeeds while
    /// another connection holds SQLite's write lock, on a full disk and on
    /// a read-only file, and PostgreSQL answers it in recovery. So this
    /// writes: one row under the reserved scope, renewed in place (a lease
    /// that ends at once, so every instance's probe applies). A SQLite
    /// write transaction held past its bound fails it too, before the
    /// watchdog has rolled it back. Bounded by `within`.
    ///
    /// Probes at most once a second: callers within a second of a probe
    /// (or waiting on one) share its answer, so a flood of probes is not a
    /// flood of writes.
    pub async fn writable(&self, within: std::time::Duration) -> Result<(), String> {
        let mut last = self.inner.readiness.lock().await;
        if let Some((at, answer)) = &*last {
            if at.elapsed() < std::time::Duration::from_secs(1) {
                return answer.clone();
            }
        }
        let answer = self.probe_write(within).await;
        *last = Some((std::time::Instant::now(), answer.clone()));
        answer
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn probe_write(&self, within: std::time::Duration) -> Result<(), String> {
        if let Some(held) = self.inner.writers.held_for() {
            if held > self.inner.max_write_transaction {
                return Err(format!(
                    "a write transaction has held the database for {} s",
                    held.as_secs()
                ));
            }
        }
        // A transaction, so on SQLite it queues for its write turn like
        // every other writer of this process: an autocommit statement
        // would wait in SQLite's busy handler instead, where writers that
        // hand the lock to each other can starve it.
        //
        // The row is this instance's own, so no instance's probe waits on
        // another's; the two no-row updates take the locks every write of
        // an intent or an action takes, so a table locked against writes
        // (`LOCK TABLE`, a migration) is seen as what it is.
        let chore = format!("readiness:{}", self.inner.instance);
        let bound = within.as_millis().max(1).to_string();
        let probe = async {
            let now = self.now_ms();
            let mut tx = self.transaction().await?;
            on!(tx.bound_probe(&bound))?;
            on!(tx.touch_readiness(crate::tenants::ADMIN_SCOPE, &chore, now))?;
            on!(tx.probe_table(
                crate::sql::admin::PROBE_INTENTS,
                crate::tenants::ADMIN_SCOPE
            ))?;
            on!(tx.probe_table(
                crate::sql::admin::PROBE_ACTIONS,
                crate::tenants::ADMIN_SCOPE
            ))?;
            tx.commit().await
        };
        match tokio::time::timeout(within, probe).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::warn!(error = ?e, "readiness: the store could not write");
                Err(why_unwritable(&e).to_owned())
            }
            // On SQLite the likeliest cause is another writer holding the
            // file's lock (the probe waits in its busy handler).
            Err(_) => Err(format!(
                "a write did not finish within {} s (a table or the database is locked by another writer, or the store is too slow to write now)",
                within.as_secs_f32()
            )),
        }
    }

    /// Marks claims whose lease ran out as uncertain, then removes expired
    /// rows of every tenant in batches of `batch` rows, each batch its own
    /// short statement so no lock is held for long. Unsettled actions and
    /// their intents are never removed, whatever the retention.
    #[tracing::instrument(skip(self))]
    pub async fn purge(&self, batch: u32) -> Result<PurgeReport, Error> {
        let batch = i64::from(batch.max(1));
        let mut s = self.session().await?;
        let mut tenants = BTreeSet::new();
        for sql in crate::sql::admin::TENANTS_IN_TABLES {
            tenants.extend(on!(s.tenants_in(sql))?);
        }
        let now = self.inner.clock.now_ms();
        let mut report = PurgeReport {
            tenants: tenants.len(),
            ..PurgeReport::default()
        };
        for tenant in tenants {
            let Ok(tenant) = TenantId::try_from(tenant) else {
                continue; // not written through this API; leave it alone
            };
            // Expired leases become uncertain first, so the purge below
            // sees them as what they are: unsettled, and kept.
            let mut swept = 0;
            loop {
                let n = sweep_batch(&mut s, &tenant, now, batch).await?;
                report.batches += 1;
                swept += n;
                if full(n, batch) {
                    continue;
                }
                break;
            }
            report.leases_expired += swept;
            let r = s.retention(&tenant).await?;
            purge_tenant(&mut s, &tenant, &r, now, batch, &mut report).await?;
            report.unresolved_kept +=
                on!(s.count_unresolved_past(tenant.as_str(), now - r.action_ms))?;
        }
        // Readiness rows of instances that stopped probing a day ago.
        report.batches += 1;
        on!(s.purge_readiness(crate::tenants::ADMIN_SCOPE, now - 86_400_000))?;
        // Ended sessions are of no use to anyone: gone at once. Few rows per
        // scope (a login each), so one statement per scope.
        for scope in on!(s.tenants_in(crate::sql::admin::SESSION_TENANTS))? {
            report.live_sessions += on!(s.purge_sessions(&scope, now))?;
            report.batches += 1;
        }
        tracing::info!(?report, "purge finished");
        Ok(report)
    }
}

/// Marks one batch of expired claims uncertain, and counts them in the same
/// transaction, each under its own action type (rollups written before
/// this counted them under the catch-all `*`).
async fn sweep_batch(
    s: &mut Session,
    tenant: &TenantId,
    now: Millis,
    batch: i64,
) -> Result<u64, Error> {
    s.enter().await?;
    let result = on!(s.sweep_expired_leases(tenant.as_str(), now, batch)).map_err(Error::from);
    let result = result.map(|mut actions| {
        actions.sort_unstable();
        for group in actions.chunk_by(|a, b| a == b) {
            let n = i64::try_from(group.len()).unwrap_or(i64::MAX);
            s.note(tenant, &group[0], |c| c.counts.actions_uncertain += n);
        }
        actions.len() as u64
    });
    s.leave(result).await
}

/// Whether a batch came back full (so another may follow).
fn full(n: u64, batch: i64) -> bool {
    i64::try_from(n).unwrap_or(i64::MAX) >= batch
}

async fn purge_tenant(
    s: &mut Session,
    tenant: &TenantId,
    r: &Retention,
    now: Millis,
    batch: i64,
    report: &mut PurgeReport,
) -> Result<(), Error> {
    let plan: [(&'static str, Millis, Option<Granularity>); 11] = [
        (q::PURGE_INTENTS, now - r.intent_ms, None),
        (q::PURGE_INTENT_HISTORY, now - r.intent_ms, None),
        (q::PURGE_CONSUMED_EVENTS, now - r.intent_ms, None),
        (q::PURGE_ACTIONS, now - r.action_ms, None),
        // After the actions: only attempts whose action is gone go.
        (q::PURGE_ACTION_ATTEMPTS, now - r.action_ms, None),
        (q::PURGE_OUTBOX, now - r.action_ms, None),
        (q::PURGE_WEBHOOK_DELIVERIES, now - r.action_ms, None),
        // HTTP records carry their own expiry instant.
        (q::PURGE_HTTP_KEYS, now, None),
        (
            q::PURGE_STATS_ROLLUP,
            now - Granularity::Minute.retention_ms(),
            Some(Granularity::Minute),
        ),
        (
            q::PURGE_STATS_ROLLUP,
            now - Granularity::Hour.retention_ms(),
            Some(Granularity::Hour),
        ),
        (
            q::PURGE_STATS_ROLLUP,
            now - Granularity::Day.retention_ms(),
            Some(Granularity::Day),
        ),
    ];
    for (sql, cutoff, g) in plan {
        let mut n = 0;
        loop {
            let got = on!(s.purge_batch(sql, tenant.as_str(), cutoff, batch, g))?;
            let mut more = full(got, batch);
            n += got;
            report.batches += 1;
            if let (Some(g), true) = (g, sql == q::PURGE_STATS_ROLLUP) {
                // The delay histograms age out with their rollup rows.
                let d = on!(s.purge_batch(
                    q::PURGE_STATS_DELAY,
                    tenant.as_str(),
                    cutoff,
                    batch,
                    Some(g)
                ))?;
                more |= full(d, batch);
                n += d;
                report.batches += 1;
            }
            if !more {
                break;
            }
        }
        let slot = match sql {
            q::PURGE_INTENTS => &mut report.intents,
            q::PURGE_INTENT_HISTORY => &mut report.intent_history,
            q::PURGE_CONSUMED_EVENTS => &mut report.consumed_events,
            q::PURGE_ACTIONS => &mut report.actions,
            q::PURGE_ACTION_ATTEMPTS => &mut report.action_attempts,
            q::PURGE_OUTBOX => &mut report.outbox,
            q::PURGE_WEBHOOK_DELIVERIES => &mut report.webhook_deliveries,
            q::PURGE_HTTP_KEYS => &mut report.http_keys,
            _ => &mut report.stats,
        };
        *slot += n;
    }
    Ok(())
}

/// What a failed write says about the store, in an operator's words.
fn why_unwritable(e: &Error) -> &'static str {
    let db = match e {
        Error::Database(sqlx::Error::Database(d)) => Some(d),
        _ => None,
    };
    let code = db.and_then(|d| d.code()).map(|c| c.into_owned());
    // SQLite's codes are numbers, and so are many of PostgreSQL's
    // SQLSTATEs (57014, 53100): ask the error which database said it.
    let sqlite = db.is_some_and(|d| d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some());
    match code.as_deref() {
        // SQLite's primary result codes (extended ones share the low byte).
        Some(c) if sqlite => match c.parse::<i32>().unwrap_or(0) & 0xff {
            5 | 6 => "the database is locked: another writer holds it",
            8 => "the database is read-only",
            13 => "the disk is full",
            10 => "the database file cannot be written (I/O error)",
            _ => "the database refused a write",
        },
        Some("25006") => "the database is read-only (a standby, or in recovery)",
        Some("53100") => "the disk is full",
        Some("55P03") => "a table is locked against writes (LOCK TABLE, a migration)",
        Some("57014") => "a write did not finish in time",
        Some(c) if c.starts_with("08") || c.starts_with("57") => "the database is unreachable",
        Some(_) => "the database refused a write",
        None => match e {
            Error::Unavailable(_) => "the database is busy: no write turn in time",
            _ => "the database is unreachable",
        },
    }
}
