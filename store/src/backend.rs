//! One function per query, written once and compiled for each backend: the
//! `backend!` macro stamps the same bodies over SQLite's and Postgres'
//! connection types, so the two cannot drift apart. Each function takes a
//! connection, pooled or inside the caller's transaction.

use crate::model::{
    ActionState, Alert, AlertEvaluation, DeliveryOutcome, EventState, HttpKeyState, Millis,
    OutboxMessage, WebhookCounts, WebhookDelivery, WebhookEndpoint,
};
use crate::stats::{Cell, Counts, Granularity, JournalRow};

/// A tenant's registration.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TenantRow {
    pub name: String,
    pub created_ms: i64,
    pub disabled_ms: Option<i64>,
}

/// A tenant as `idem tenant list` shows it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TenantListRow {
    pub tenant_id: String,
    pub name: String,
    pub created_ms: i64,
    pub disabled_ms: Option<i64>,
    pub tokens: i64,
    pub newest_token_ms: Option<i64>,
}

/// The frozen intent columns.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct IntentRow {
    pub rules_version: i32,
    pub idem_key: String,
    pub payload: String,
    pub revision: i32,
    pub deliveries: i64,
    pub divergences: i64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
}

/// A superseded intent version.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct HistoryRow {
    pub revision: i32,
    pub rules_version: i32,
    pub idem_key: String,
    pub payload: String,
    pub replaced_ms: i64,
    pub reason: String,
}

/// What a successful claim returns.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct BeginRow {
    pub state: ActionState,
    pub fencing_token: i64,
    pub attempts: i32,
    pub lease_until_ms: Option<i64>,
    pub prev_state: Option<String>,
    pub prev_token: Option<i64>,
    pub prev_started_ms: Option<i64>,
    pub prev_lease_until_ms: Option<i64>,
    pub error: Option<String>,
}

/// What a successful event claim returns.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EventClaimRow {
    pub token: i64,
    pub attempts: i32,
    pub lease_until_ms: Option<i64>,
    pub prev_state: Option<String>,
}

/// An event's claim as stored.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EventRow {
    pub state: EventState,
    pub token: i64,
    pub lease_until_ms: Option<i64>,
}

/// An action as stored.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ActionRow {
    pub action: String,
    pub state: ActionState,
    pub fencing_token: i64,
    pub attempts: i32,
    pub lease_until_ms: Option<i64>,
    pub started_ms: i64,
    pub updated_ms: i64,
    pub response: Option<String>,
    pub error: Option<String>,
    pub retryable: Option<bool>,
    pub reconciled: bool,
    pub swept_ms: Option<i64>,
}

/// An attempt a takeover replaced.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct AttemptRow {
    pub attempt: i32,
    pub fencing_token: i64,
    pub started_ms: i64,
    pub lease_until_ms: Option<i64>,
    pub ended: String,
    pub error: Option<String>,
    pub replaced_ms: i64,
}

/// An intent found by its key.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct KeyedIntentRow {
    pub reference: String,
    pub action: String,
    #[sqlx(flatten)]
    pub intent: IntentRow,
}

/// The arguments of one replaced attempt's record.
pub(crate) struct AttemptWrite<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
    pub attempt: i32,
    pub token: i64,
    pub started_ms: i64,
    pub lease_until_ms: Option<i64>,
    pub ended: &'a str,
    pub error: Option<&'a str>,
    pub now: i64,
}

/// An HTTP key record.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct HttpRow {
    pub fingerprint: String,
    pub state: HttpKeyState,
    #[allow(dead_code)] // read for debugging output only
    pub locked_until_ms: Option<i64>,
    pub status: Option<i32>,
    pub headers: Option<String>,
    pub body: Option<Vec<u8>>,
    #[allow(dead_code)]
    pub expires_at_ms: i64,
}

/// A tenant's retention row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RetentionRow {
    pub intent_retention_ms: i64,
    pub action_retention_ms: i64,
    pub http_retention_ms: i64,
}

/// A rollup row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RollupRow {
    pub bucket_start_ms: i64,
    pub action: String,
    #[sqlx(flatten)]
    pub counts: Counts,
}

impl RollupRow {
    pub(crate) fn into_parts(self) -> (Millis, String, Counts) {
        (self.bucket_start_ms, self.action, self.counts)
    }
}

/// Binds the counters of a [`Counts`] in the order the rollup and journal
/// statements list their columns (intents … delay_max_ms).
macro_rules! bind_counts {
    ($q:expr, $n:expr) => {
        $q.bind($n.intents)
            .bind($n.deliveries)
            .bind($n.redeliveries)
            .bind($n.redelivered_intents)
            .bind($n.divergences)
            .bind($n.corrections)
            .bind($n.actions_started)
            .bind($n.actions_completed)
            .bind($n.actions_failed)
            .bind($n.actions_uncertain)
            .bind($n.http_replays)
            .bind($n.http_409)
            .bind($n.http_422)
            .bind($n.delay_max_ms)
    };
}

/// An admin totals row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TotalsRow {
    pub tenant_id: String,
    pub intents: Option<i64>,
    pub deliveries: Option<i64>,
    pub redeliveries: Option<i64>,
    pub redelivered_intents: Option<i64>,
    pub divergences: Option<i64>,
    pub actions_uncertain: Option<i64>,
}

/// One action the live monitor lists as uncertain.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct UncertainRow {
    pub idem_key: String,
    pub action: String,
    pub started_ms: i64,
    pub lease_until_ms: Option<i64>,
    pub attempts: i32,
    pub updated_ms: i64,
}

/// What the monitor shows of an uncertain key's intent.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FactRow {
    pub idem_key: String,
    pub reference: String,
    pub payload: String,
    pub last_seen_ms: i64,
}

/// The arguments of one intent write.
pub(crate) struct IntentWrite<'a> {
    pub tenant: &'a str,
    pub reference: &'a str,
    pub action: &'a str,
    pub rules_version: i32,
    pub key: &'a str,
    pub payload: &'a str,
}

/// Statements that write and `returning` rows are read to the end, never
/// with `fetch_one` or `fetch_optional`. Those stop stepping a SQLite
/// statement after its first row and reset it; in autocommit mode the
/// COMMIT runs at that reset, and sqlx discards the reset's error. A commit
/// that fails there (disk full, read-only volume, I/O error) rolls the row
/// back while the caller is told it was written: an acknowledged intent that
/// is not in the database. Reading to the end makes the commit's error the
/// last step's error. The reliability suite found this with a full disk.
fn first<T>(rows: Vec<T>) -> Result<T, sqlx::Error> {
    rows.into_iter().next().ok_or(sqlx::Error::RowNotFound)
}

/// [`first`] for statements that may return no row.
fn first_opt<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
}

macro_rules! backend {
    ($db:ty, $conn:ty, $sql:path) => {
        use super::*;
        use sqlx::Row as _;
        use $sql as q;

        type Conn = $conn;
        type R<T> = Result<T, sqlx::Error>;

        pub(crate) async fn record_intent(
            c: &mut Conn,
            w: &IntentWrite<'_>,
            n: i64,
            now: Millis,
        ) -> R<IntentRow> {
            sqlx::query_as::<$db, IntentRow>(q::RECORD_INTENT)
                .bind(w.tenant)
                .bind(w.reference)
                .bind(w.action)
                .bind(w.rules_version)
                .bind(w.key)
                .bind(w.payload)
                .bind(n)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .and_then(first)
        }

        pub(crate) async fn select_intent(
            c: &mut Conn,
            tenant: &str,
            reference: &str,
            action: &str,
        ) -> R<Option<IntentRow>> {
            sqlx::query_as::<$db, IntentRow>(q::SELECT_INTENT)
                .bind(tenant)
                .bind(reference)
                .bind(action)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn archive_intent(
            c: &mut Conn,
            w: &IntentWrite<'_>,
            now: Millis,
            reason: &str,
        ) -> R<u64> {
            sqlx::query::<$db>(q::ARCHIVE_INTENT)
                .bind(w.tenant)
                .bind(w.reference)
                .bind(w.action)
                .bind(w.payload)
                .bind(now)
                .bind(reason)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn replace_intent(
            c: &mut Conn,
            w: &IntentWrite<'_>,
            now: Millis,
        ) -> R<Option<IntentRow>> {
            sqlx::query_as::<$db, IntentRow>(q::REPLACE_INTENT)
                .bind(w.tenant)
                .bind(w.reference)
                .bind(w.action)
                .bind(w.rules_version)
                .bind(w.key)
                .bind(w.payload)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        pub(crate) async fn intent_history(
            c: &mut Conn,
            tenant: &str,
            reference: &str,
            action: &str,
        ) -> R<Vec<HistoryRow>> {
            sqlx::query_as::<$db, HistoryRow>(q::INTENT_HISTORY)
                .bind(tenant)
                .bind(reference)
                .bind(action)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn begin_action(
            c: &mut Conn,
            tenant: &str,
            key: &str,
            action: &str,
            now: Millis,
            lease_until: Millis,
        ) -> R<Option<BeginRow>> {
            sqlx::query_as::<$db, BeginRow>(q::BEGIN_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(action)
                .bind(now)
                .bind(lease_until)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        pub(crate) async fn select_action(
            c: &mut Conn,
            tenant: &str,
            key: &str,
        ) -> R<Option<ActionRow>> {
            sqlx::query_as::<$db, ActionRow>(q::SELECT_ACTION)
                .bind(tenant)
                .bind(key)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn insert_action_attempt(c: &mut Conn, w: &AttemptWrite<'_>) -> R<()> {
            sqlx::query::<$db>(q::INSERT_ACTION_ATTEMPT)
                .bind(w.tenant)
                .bind(w.key)
                .bind(w.attempt)
                .bind(w.token)
                .bind(w.started_ms)
                .bind(w.lease_until_ms)
                .bind(w.ended)
                .bind(w.error)
                .bind(w.now)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        pub(crate) async fn action_attempts(
            c: &mut Conn,
            tenant: &str,
            key: &str,
        ) -> R<Vec<AttemptRow>> {
            sqlx::query_as::<$db, AttemptRow>(q::ACTION_ATTEMPTS)
                .bind(tenant)
                .bind(key)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn intent_by_key(
            c: &mut Conn,
            tenant: &str,
            key: &str,
        ) -> R<Option<KeyedIntentRow>> {
            let rows = sqlx::query_as::<$db, KeyedIntentRow>(q::INTENT_BY_KEY)
                .bind(tenant)
                .bind(key)
                .fetch_all(&mut *c)
                .await?;
            // The newest, should a correction have given two intents one key.
            Ok(rows.into_iter().max_by_key(|r| r.intent.last_seen_ms))
        }

        /// The intents of `keys` (several rows for a key only after a
        /// correction; the caller keeps the newest).
        pub(crate) async fn intent_facts(
            c: &mut Conn,
            tenant: &str,
            keys: &[&str],
        ) -> R<Vec<FactRow>> {
            let keys = serde_json::to_string(keys).map_err(|e| sqlx::Error::Encode(e.into()))?;
            sqlx::query_as::<$db, FactRow>(q::INTENT_FACTS)
                .bind(tenant)
                .bind(keys)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn complete_action(
            c: &mut Conn,
            tenant: &str,
            key: &str,
            token: i64,
            response: &str,
            now: Millis,
            reconciled: bool,
        ) -> R<Option<String>> {
            sqlx::query::<$db>(q::COMPLETE_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(response)
                .bind(now)
                .bind(reconciled)
                // The action type, for the statistics; None when refused.
                .fetch_all(&mut *c)
                .await
                .map(first_opt)?
                .map(|r| r.try_get("action"))
                .transpose()
        }

        #[allow(clippy::too_many_arguments)] // one bind per column
        pub(crate) async fn fail_action(
            c: &mut Conn,
            tenant: &str,
            key: &str,
            token: i64,
            error: &str,
            retryable: bool,
            now: Millis,
            reconciled: bool,
        ) -> R<Option<String>> {
            sqlx::query::<$db>(q::FAIL_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(error)
                .bind(retryable)
                .bind(now)
                .bind(reconciled)
                // The action type, for the statistics; None when refused.
                .fetch_all(&mut *c)
                .await
                .map(first_opt)?
                .map(|r| r.try_get("action"))
                .transpose()
        }

        pub(crate) async fn sweep_expired_leases(
            c: &mut Conn,
            tenant: &str,
            now: Millis,
            limit: i64,
        ) -> R<Vec<String>> {
            sqlx::query_scalar::<$db, String>(q::SWEEP_EXPIRED_LEASES)
                .bind(tenant)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn http_begin(
            c: &mut Conn,
            tenant: &str,
            k: &crate::model::HttpRequestKey<'_>,
            locked_until: Millis,
            now: Millis,
            default_ttl: Millis,
        ) -> R<bool> {
            sqlx::query::<$db>(q::HTTP_BEGIN)
                .bind(tenant)
                .bind(k.client_key)
                .bind(k.fingerprint)
                .bind(k.method)
                .bind(k.path)
                .bind(locked_until)
                .bind(now)
                .bind(default_ttl)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
                .map(|r| r.is_some())
        }

        pub(crate) async fn select_http_key(
            c: &mut Conn,
            tenant: &str,
            client_key: &str,
        ) -> R<Option<HttpRow>> {
            sqlx::query_as::<$db, HttpRow>(q::SELECT_HTTP_KEY)
                .bind(tenant)
                .bind(client_key)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn http_complete(
            c: &mut Conn,
            tenant: &str,
            client_key: &str,
            fingerprint: &str,
            r: &crate::model::StoredResponse,
        ) -> R<u64> {
            sqlx::query::<$db>(q::HTTP_COMPLETE)
                .bind(tenant)
                .bind(client_key)
                .bind(fingerprint)
                .bind(i32::from(r.status))
                .bind(&r.headers)
                .bind(&r.body)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn http_release(
            c: &mut Conn,
            tenant: &str,
            client_key: &str,
            fingerprint: &str,
        ) -> R<u64> {
            sqlx::query::<$db>(q::HTTP_RELEASE)
                .bind(tenant)
                .bind(client_key)
                .bind(fingerprint)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn consume_event(
            c: &mut Conn,
            tenant: &str,
            source: &str,
            event_id: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::CONSUME_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn outbox_insert(
            c: &mut Conn,
            tenant: &str,
            topic: &str,
            payload: &str,
            now: Millis,
        ) -> R<i64> {
            sqlx::query::<$db>(q::OUTBOX_INSERT)
                .bind(tenant)
                .bind(topic)
                .bind(payload)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .and_then(first)?
                .try_get::<i64, _>("id")
        }

        pub(crate) async fn outbox_fetch(
            c: &mut Conn,
            tenant: &str,
            limit: i64,
        ) -> R<Vec<OutboxMessage>> {
            let rows = sqlx::query::<$db>(q::OUTBOX_FETCH)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(OutboxMessage {
                        id: r.try_get("id")?,
                        topic: r.try_get("topic")?,
                        payload: r.try_get("payload")?,
                        created_ms: r.try_get("created_ms")?,
                    })
                })
                .collect()
        }

        pub(crate) async fn outbox_mark_sent(
            c: &mut Conn,
            tenant: &str,
            id: i64,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::OUTBOX_MARK_SENT)
                .bind(tenant)
                .bind(id)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn select_retention(
            c: &mut Conn,
            tenant: &str,
        ) -> R<Option<RetentionRow>> {
            sqlx::query_as::<$db, RetentionRow>(q::SELECT_RETENTION)
                .bind(tenant)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn upsert_retention(
            c: &mut Conn,
            tenant: &str,
            r: &crate::model::Retention,
        ) -> R<u64> {
            sqlx::query::<$db>(q::UPSERT_RETENTION)
                .bind(tenant)
                .bind(r.intent_ms)
                .bind(r.action_ms)
                .bind(r.http_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// One bounded purge batch of one table (`sql` is a `PURGE_*` statement).
        pub(crate) async fn purge_batch(
            c: &mut Conn,
            sql: &'static str,
            tenant: &str,
            cutoff: Millis,
            limit: i64,
            granularity: Option<Granularity>,
        ) -> R<u64> {
            let mut query = sqlx::query::<$db>(sql)
                .bind(tenant)
                .bind(cutoff)
                .bind(limit);
            if let Some(g) = granularity {
                query = query.bind(g.as_str());
            }
            query.execute(&mut *c).await.map(|r| r.rows_affected())
        }

        /// Unsettled actions older than the cutoff.
        pub(crate) async fn count_unresolved_past(
            c: &mut Conn,
            tenant: &str,
            cutoff: Millis,
        ) -> R<u64> {
            let row = sqlx::query::<$db>(q::COUNT_UNRESOLVED_PAST)
                .bind(tenant)
                .bind(cutoff)
                .fetch_one(&mut *c)
                .await?;
            Ok(u64::try_from(row.try_get::<i64, _>("n")?).unwrap_or(0))
        }

        /// Admin: unsettled actions by state: (state, count, oldest start).
        pub(crate) async fn admin_unresolved(
            c: &mut Conn,
            now: Millis,
        ) -> R<Vec<(String, i64, Option<i64>)>> {
            sqlx::query_as::<$db, (String, i64, Option<i64>)>(crate::sql::ADMIN_UNRESOLVED)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        /// Records a deployment check value unless one exists; returns the
        /// stored one.
        pub(crate) async fn deployment_check(
            c: &mut Conn,
            tenant: &str,
            name: &str,
            value: &str,
            now: Millis,
        ) -> R<String> {
            sqlx::query::<$db>(q::INSERT_DEPLOYMENT_CHECK)
                .bind(tenant)
                .bind(name)
                .bind(value)
                .bind(now)
                .execute(&mut *c)
                .await?;
            let row = sqlx::query::<$db>(q::SELECT_DEPLOYMENT_CHECK)
                .bind(tenant)
                .bind(name)
                .fetch_one(&mut *c)
                .await?;
            row.try_get("value")
        }

        pub(crate) async fn claim_event(
            c: &mut Conn,
            tenant: &str,
            source: &str,
            event_id: &str,
            now: Millis,
            lease_until: Millis,
        ) -> R<Option<EventClaimRow>> {
            sqlx::query_as::<$db, EventClaimRow>(q::CLAIM_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .bind(now)
                .bind(lease_until)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn select_event(
            c: &mut Conn,
            tenant: &str,
            source: &str,
            event_id: &str,
        ) -> R<Option<EventRow>> {
            sqlx::query_as::<$db, EventRow>(q::SELECT_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn settle_event(
            c: &mut Conn,
            tenant: &str,
            source: &str,
            event_id: &str,
            token: i64,
            state: EventState,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::SETTLE_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .bind(token)
                .bind(state)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// Admin: the tenants with rows in one table.
        pub(crate) async fn tenants_in(c: &mut Conn, sql: &'static str) -> R<Vec<String>> {
            let rows = sqlx::query::<$db>(sql).fetch_all(&mut *c).await?;
            rows.iter()
                .map(|r| r.try_get::<String, _>("tenant_id"))
                .collect()
        }

        pub(crate) async fn flush_cell(
            c: &mut Conn,
            tenant: &str,
            g: Granularity,
            start: Millis,
            action: &str,
            cell: &Cell,
        ) -> R<()> {
            let n = &cell.counts;
            let query = sqlx::query::<$db>(q::FLUSH_ROLLUP)
                .bind(tenant)
                .bind(g.as_str())
                .bind(start)
                .bind(action);
            bind_counts!(query, n).execute(&mut *c).await?;
            for (le, count) in crate::stats::DELAY_BOUNDS_MS.iter().zip(cell.delays.iter()) {
                if *count > 0 {
                    sqlx::query::<$db>(q::FLUSH_DELAY)
                        .bind(tenant)
                        .bind(g.as_str())
                        .bind(start)
                        .bind(action)
                        .bind(*le)
                        .bind(*count)
                        .execute(&mut *c)
                        .await?;
                }
            }
            Ok(())
        }

        /// Appends one cell's counts to the journal: one row, plus one per
        /// further delay bucket its redeliveries fell in.
        pub(crate) async fn append_journal(
            c: &mut Conn,
            tenant: &str,
            minute: Millis,
            action: &str,
            cell: &Cell,
        ) -> R<()> {
            let mut delays = crate::stats::DELAY_BOUNDS_MS
                .iter()
                .zip(cell.delays.iter())
                .filter(|(_, n)| **n > 0)
                .map(|(le, n)| (Some(*le), *n));
            let first = delays.next().unwrap_or((None, 0));
            let zero = Counts::default();
            for (i, (le, count)) in std::iter::once(first).chain(delays).enumerate() {
                // The counters ride on the first row only; the rest carry delays.
                let n = if i == 0 { &cell.counts } else { &zero };
                let query = sqlx::query::<$db>(q::JOURNAL_APPEND)
                    .bind(tenant)
                    .bind(minute)
                    .bind(action);
                bind_counts!(query, n)
                    // 0: no delay bucket (SQLite's journal row key has no null).
                    .bind(le.unwrap_or(0))
                    .bind(count)
                    .execute(&mut *c)
                    .await?;
            }
            Ok(())
        }

        pub(crate) async fn take_journal(
            c: &mut Conn,
            tenant: &str,
            limit: i64,
        ) -> R<Vec<JournalRow>> {
            sqlx::query_as::<$db, JournalRow>(q::JOURNAL_TAKE)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        /// `idem stats rebuild`, for one tenant from `since` (a day start):
        /// clears the recountable counters, then recounts them per granularity.
        pub(crate) async fn rebuild_rollups(c: &mut Conn, tenant: &str, since: Millis) -> R<u64> {
            let mut rows = sqlx::query::<$db>(q::REBUILD_CLEAR)
                .bind(tenant)
                .bind(since)
                .execute(&mut *c)
                .await?
                .rows_affected();
            for g in Granularity::ALL {
                for sql in [
                    q::REBUILD_INTENTS,
                    q::REBUILD_CORRECTIONS,
                    q::REBUILD_ACTIONS,
                ] {
                    rows += sqlx::query::<$db>(sql)
                        .bind(tenant)
                        .bind(since)
                        .bind(g.width_ms())
                        .bind(g.as_str())
                        .execute(&mut *c)
                        .await?
                        .rows_affected();
                }
            }
            Ok(rows)
        }

        pub(crate) async fn insert_webhook_endpoint(
            c: &mut Conn,
            tenant: &str,
            e: &WebhookEndpoint,
        ) -> R<()> {
            sqlx::query::<$db>(q::INSERT_WEBHOOK_ENDPOINT)
                .bind(tenant)
                .bind(&e.endpoint_id)
                .bind(&e.url)
                .bind(&e.events)
                .bind(&e.secret)
                .bind(e.created_ms)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        pub(crate) async fn list_webhook_endpoints(
            c: &mut Conn,
            tenant: &str,
        ) -> R<Vec<WebhookEndpoint>> {
            sqlx::query_as::<$db, WebhookEndpoint>(q::LIST_WEBHOOK_ENDPOINTS)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }

        /// Removes an endpoint and its waiting deliveries; returns whether it existed.
        pub(crate) async fn insert_alert(c: &mut Conn, tenant: &str, a: &Alert) -> R<()> {
            sqlx::query::<$db>(q::INSERT_ALERT)
                .bind(tenant)
                .bind(&a.alert_id)
                .bind(&a.metric)
                .bind(&a.above)
                .bind(a.for_ms)
                .bind(a.window_ms)
                .bind(&a.endpoint_id)
                .bind(a.created_ms)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        pub(crate) async fn list_alerts(c: &mut Conn, tenant: &str) -> R<Vec<Alert>> {
            sqlx::query_as::<$db, Alert>(q::LIST_ALERTS)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn delete_alert(c: &mut Conn, tenant: &str, alert_id: &str) -> R<bool> {
            let n = sqlx::query::<$db>(q::DELETE_ALERT)
                .bind(tenant)
                .bind(alert_id)
                .execute(&mut *c)
                .await?
                .rows_affected();
            Ok(n > 0)
        }

        pub(crate) async fn update_alert(
            c: &mut Conn,
            tenant: &str,
            alert_id: &str,
            from: &str,
            to: &AlertEvaluation<'_>,
            now: Millis,
        ) -> R<bool> {
            let n = sqlx::query::<$db>(q::UPDATE_ALERT)
                .bind(tenant)
                .bind(alert_id)
                .bind(from)
                .bind(to.state)
                .bind(to.since_ms)
                .bind(to.value)
                .bind(now)
                .execute(&mut *c)
                .await?
                .rows_affected();
            Ok(n > 0)
        }

        pub(crate) async fn delete_webhook_endpoint(
            c: &mut Conn,
            tenant: &str,
            endpoint_id: &str,
        ) -> R<bool> {
            sqlx::query::<$db>(q::DELETE_ENDPOINT_PENDING)
                .bind(tenant)
                .bind(endpoint_id)
                .execute(&mut *c)
                .await?;
            let n = sqlx::query::<$db>(q::DELETE_WEBHOOK_ENDPOINT)
                .bind(tenant)
                .bind(endpoint_id)
                .execute(&mut *c)
                .await?
                .rows_affected();
            Ok(n > 0)
        }

        pub(crate) async fn insert_webhook_delivery(
            c: &mut Conn,
            tenant: &str,
            m: &OutboxMessage,
            endpoint_id: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_WEBHOOK_DELIVERY)
                .bind(tenant)
                .bind(m.id)
                .bind(endpoint_id)
                .bind(&m.topic)
                .bind(&m.payload)
                .bind(m.created_ms)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `pairs`: a JSON array of `{"o": outbox id, "e": endpoint id}`.
        pub(crate) async fn webhook_fan_out(
            c: &mut Conn,
            tenant: &str,
            pairs: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::WEBHOOK_FAN_OUT)
                .bind(tenant)
                .bind(pairs)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `ids`: a JSON array of outbox ids.
        pub(crate) async fn outbox_mark_sent_many(
            c: &mut Conn,
            tenant: &str,
            ids: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::OUTBOX_MARK_SENT_MANY)
                .bind(tenant)
                .bind(ids)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `claims`: a JSON array of `{"o", "e", "a"}` (outbox id, endpoint
        /// id, attempt), all answered `status`.
        pub(crate) async fn webhook_delivered_many(
            c: &mut Conn,
            tenant: &str,
            claims: &str,
            status: u16,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::WEBHOOK_DELIVERED_MANY)
                .bind(tenant)
                .bind(claims)
                .bind(i32::from(status))
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn webhook_claim(
            c: &mut Conn,
            tenant: &str,
            endpoint_id: &str,
            now: Millis,
            lease_until: Millis,
            limit: i64,
        ) -> R<Vec<WebhookDelivery>> {
            sqlx::query_as::<$db, WebhookDelivery>(q::WEBHOOK_CLAIM)
                .bind(tenant)
                .bind(endpoint_id)
                .bind(now)
                .bind(lease_until)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        #[allow(clippy::too_many_arguments)] // one per column written
        pub(crate) async fn webhook_settle(
            c: &mut Conn,
            tenant: &str,
            outbox_id: i64,
            endpoint_id: &str,
            attempt: i32,
            outcome: &DeliveryOutcome,
            now: Millis,
        ) -> R<u64> {
            let q = match outcome {
                DeliveryOutcome::Delivered(status) => sqlx::query::<$db>(q::WEBHOOK_DELIVERED)
                    .bind(tenant)
                    .bind(outbox_id)
                    .bind(endpoint_id)
                    .bind(attempt)
                    .bind(i32::from(*status))
                    .bind(now),
                DeliveryOutcome::Failed {
                    status,
                    error,
                    retry_at_ms,
                } => sqlx::query::<$db>(q::WEBHOOK_FAILED)
                    .bind(tenant)
                    .bind(outbox_id)
                    .bind(endpoint_id)
                    .bind(attempt)
                    .bind(retry_at_ms.unwrap_or(now))
                    .bind(status.map(i32::from))
                    .bind(error.as_str())
                    .bind(if retry_at_ms.is_some() {
                        "pending"
                    } else {
                        "dead"
                    })
                    .bind(now),
            };
            q.execute(&mut *c).await.map(|r| r.rows_affected())
        }

        /// Deliveries by state: of one tenant, or of all with `admin`.
        pub(crate) async fn webhook_counts(c: &mut Conn, tenant: Option<&str>) -> R<WebhookCounts> {
            let rows = match tenant {
                Some(t) => {
                    sqlx::query::<$db>(q::LIVE_WEBHOOKS)
                        .bind(t)
                        .fetch_all(&mut *c)
                        .await?
                }
                None => {
                    sqlx::query::<$db>(crate::sql::ADMIN_WEBHOOKS)
                        .fetch_all(&mut *c)
                        .await?
                }
            };
            let mut out = WebhookCounts::default();
            for r in rows {
                out.add(
                    r.try_get("state")?,
                    r.try_get("failed_before")?,
                    r.try_get("n")?,
                    r.try_get("oldest_ms")?,
                );
            }
            Ok(out)
        }

        pub(crate) async fn insert_fixture_echo(
            c: &mut Conn,
            tenant: &str,
            bytes: i64,
            now: Millis,
        ) -> R<()> {
            sqlx::query::<$db>(q::INSERT_FIXTURE_ECHO)
                .bind(tenant)
                .bind(bytes)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        pub(crate) async fn read_rollup(
            c: &mut Conn,
            tenant: &str,
            g: Granularity,
            from: Millis,
            to: Millis,
        ) -> R<Vec<RollupRow>> {
            sqlx::query_as::<$db, RollupRow>(q::READ_ROLLUP)
                .bind(tenant)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn read_delay(
            c: &mut Conn,
            tenant: &str,
            g: Granularity,
            from: Millis,
            to: Millis,
        ) -> R<Vec<(Millis, String, Millis, i64)>> {
            let rows = sqlx::query::<$db>(q::READ_DELAY)
                .bind(tenant)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get("bucket_start_ms")?,
                        r.try_get("action")?,
                        r.try_get("le_ms")?,
                        r.try_get("count")?,
                    ))
                })
                .collect()
        }

        pub(crate) async fn insert_tenant(
            c: &mut Conn,
            tenant: &str,
            name: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_TENANT)
                .bind(tenant)
                .bind(name)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn insert_token(
            c: &mut Conn,
            tenant: &str,
            hash: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_TOKEN)
                .bind(tenant)
                .bind(hash)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn insert_demo_charge(
            c: &mut Conn,
            tenant: &str,
            charge: &crate::model::DemoCharge,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_DEMO_CHARGE)
                .bind(tenant)
                .bind(&charge.id)
                .bind(charge.amount_cents)
                .bind(&charge.currency)
                .bind(&charge.customer)
                .bind(charge.created_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn count_demo_charges(c: &mut Conn, tenant: &str) -> R<i64> {
            sqlx::query_scalar::<$db, i64>(q::COUNT_DEMO_CHARGES)
                .bind(tenant)
                .fetch_one(&mut *c)
                .await
        }

        pub(crate) async fn insert_scenario(
            c: &mut Conn,
            tenant: &str,
            s: &crate::model::SavedScenario,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_SCENARIO)
                .bind(tenant)
                .bind(&s.id)
                .bind(&s.name)
                .bind(&s.query)
                .bind(s.created_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn select_scenario(
            c: &mut Conn,
            tenant: &str,
            id: &str,
        ) -> R<Option<crate::model::SavedScenario>> {
            sqlx::query_as::<$db, crate::model::SavedScenario>(q::SELECT_SCENARIO)
                .bind(tenant)
                .bind(id)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn insert_comparison(
            c: &mut Conn,
            tenant: &str,
            s: &crate::model::SavedComparison,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_COMPARISON)
                .bind(tenant)
                .bind(&s.id)
                .bind(&s.name)
                .bind(&s.query)
                .bind(s.created_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn select_comparison(
            c: &mut Conn,
            tenant: &str,
            id: &str,
        ) -> R<Option<crate::model::SavedComparison>> {
            sqlx::query_as::<$db, crate::model::SavedComparison>(q::SELECT_COMPARISON)
                .bind(tenant)
                .bind(id)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn list_demo_charges(
            c: &mut Conn,
            tenant: &str,
        ) -> R<Vec<crate::model::DemoCharge>> {
            sqlx::query_as::<$db, crate::model::DemoCharge>(q::LIST_DEMO_CHARGES)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn live_action_counts(
            c: &mut Conn,
            tenant: &str,
            now: Millis,
        ) -> R<(i64, i64, i64, i64, Option<i64>)> {
            sqlx::query_as::<$db, (i64, i64, i64, i64, Option<i64>)>(q::LIVE_ACTION_COUNTS)
                .bind(tenant)
                .bind(now)
                .fetch_one(&mut *c)
                .await
        }

        pub(crate) async fn live_uncertain(
            c: &mut Conn,
            tenant: &str,
            limit: i64,
        ) -> R<Vec<UncertainRow>> {
            sqlx::query_as::<$db, UncertainRow>(q::LIVE_UNCERTAIN)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn live_uncertain_by_action(
            c: &mut Conn,
            tenant: &str,
            now: Millis,
        ) -> R<Vec<(String, i64)>> {
            sqlx::query_as::<$db, (String, i64)>(q::LIVE_UNCERTAIN_BY_ACTION)
                .bind(tenant)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn live_expired(
            c: &mut Conn,
            tenant: &str,
            now: Millis,
            limit: i64,
        ) -> R<Vec<UncertainRow>> {
            sqlx::query_as::<$db, UncertainRow>(q::LIVE_EXPIRED)
                .bind(tenant)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        /// `None`: no live token; `Some(disabled_ms)`: live, and whether
        /// (since when) its tenant is disabled.
        pub(crate) async fn find_token(
            c: &mut Conn,
            tenant: &str,
            hash: &str,
            now: Millis,
        ) -> R<Option<Option<i64>>> {
            sqlx::query::<$db>(q::FIND_TOKEN)
                .bind(tenant)
                .bind(hash)
                .bind(now)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| r.try_get::<Option<i64>, _>("disabled_ms"))
                .transpose()
        }

        pub(crate) async fn revoke_other_tokens(
            c: &mut Conn,
            tenant: &str,
            keep: &str,
            at: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::REVOKE_OTHER_TOKENS)
                .bind(tenant)
                .bind(keep)
                .bind(at)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn set_tenant_disabled(
            c: &mut Conn,
            tenant: &str,
            at: Option<Millis>,
        ) -> R<u64> {
            sqlx::query::<$db>(q::SET_TENANT_DISABLED)
                .bind(tenant)
                .bind(at)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn tenant_info(c: &mut Conn, tenant: &str) -> R<Option<TenantRow>> {
            sqlx::query_as::<$db, TenantRow>(q::TENANT_INFO)
                .bind(tenant)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn tenant_list(c: &mut Conn, now: Millis) -> R<Vec<TenantListRow>> {
            sqlx::query_as::<$db, TenantListRow>(crate::sql::TENANT_LIST)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        pub(crate) async fn insert_session(
            c: &mut Conn,
            tenant: &str,
            session_hash: &str,
            token_hash: &str,
            now: Millis,
            expires: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::INSERT_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(token_hash)
                .bind(now)
                .bind(expires)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn find_session(
            c: &mut Conn,
            tenant: &str,
            session_hash: &str,
            now: Millis,
        ) -> R<Option<String>> {
            sqlx::query::<$db>(q::FIND_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(now)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| r.try_get::<String, _>("token_hash"))
                .transpose()
        }

        pub(crate) async fn end_session(
            c: &mut Conn,
            tenant: &str,
            session_hash: &str,
            now: Millis,
        ) -> R<u64> {
            sqlx::query::<$db>(q::END_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn purge_sessions(c: &mut Conn, tenant: &str, before: Millis) -> R<u64> {
            sqlx::query::<$db>(q::PURGE_SESSIONS)
                .bind(tenant)
                .bind(before)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        pub(crate) async fn take_chore_lease(
            c: &mut Conn,
            tenant: &str,
            chore: &str,
            holder: &str,
            now: Millis,
            until: Millis,
        ) -> R<Option<i64>> {
            sqlx::query_scalar::<$db, i64>(q::TAKE_CHORE_LEASE)
                .bind(tenant)
                .bind(chore)
                .bind(holder)
                .bind(now)
                .bind(until)
                .fetch_optional(&mut *c)
                .await
        }

        pub(crate) async fn admin_totals(
            c: &mut Conn,
            g: Granularity,
            from: Millis,
            to: Millis,
        ) -> R<Vec<TotalsRow>> {
            sqlx::query_as::<$db, TotalsRow>(q::ADMIN_TOTALS)
                .bind(g.as_str())
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await
        }
    };
}

/// The SQLite functions.
pub(crate) mod sqlite {
    backend!(sqlx::Sqlite, sqlx::SqliteConnection, crate::sql::sqlite);
}

/// The PostgreSQL functions.
pub(crate) mod pg {
    backend!(sqlx::Postgres, sqlx::PgConnection, crate::sql::pg);
}
