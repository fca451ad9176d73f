//! The frozen intents: the first write wins, redeliveries are counted, a
//! correction replaces a revision and keeps the one it replaced.

use super::common::{first, first_opt, queries, R};
use crate::model::Millis;

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
    /// The candidate as its first delivery sent it (none before migration 0019).
    pub candidate: Option<String>,
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

/// A filed version found by its key.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FiledRow {
    pub reference: String,
    pub action: String,
    pub revision: i32,
    pub replaced_ms: i64,
    pub reason: String,
}

/// An intent found by its key.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct KeyedIntentRow {
    pub reference: String,
    pub action: String,
    #[sqlx(flatten)]
    pub intent: IntentRow,
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
    /// The candidate's JSON text as sent.
    pub candidate: Option<&'a str>,
}

queries! {
    statements in intents;
    /// The intent queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait IntentQueries {
        fn record_intent(c, w: &IntentWrite<'_>, n: i64, now: Millis) -> R<IntentRow> {
            sqlx::query_as::<Db, IntentRow>(q::RECORD_INTENT)
                .bind(w.tenant)
                .bind(w.reference)
                .bind(w.action)
                .bind(w.rules_version)
                .bind(w.key)
                .bind(w.payload)
                .bind(n)
                .bind(now)
                .bind(w.candidate)
                .fetch_all(&mut *c)
                .await
                .and_then(first)
        }

        fn select_intent(c, tenant: &str, reference: &str, action: &str) -> R<Option<IntentRow>> {
            sqlx::query_as::<Db, IntentRow>(q::SELECT_INTENT)
                .bind(tenant)
                .bind(reference)
                .bind(action)
                .fetch_optional(&mut *c)
                .await
        }

        fn archive_intent(c, w: &IntentWrite<'_>, now: Millis, reason: &str) -> R<u64> {
            sqlx::query::<Db>(q::ARCHIVE_INTENT)
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

        fn archive_superseded(c, tenant: &str, reference: &str, action: &str, now: Millis, reason: &str) -> R<u64> {
            sqlx::query::<Db>(q::ARCHIVE_SUPERSEDED)
                .bind(tenant)
                .bind(reference)
                .bind(action)
                .bind(now)
                .bind(reason)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn history_by_key(c, tenant: &str, key: &str) -> R<Vec<FiledRow>> {
            sqlx::query_as::<Db, FiledRow>(q::HISTORY_BY_KEY)
                .bind(tenant)
                .bind(key)
                .fetch_all(&mut *c)
                .await
        }

        fn replace_intent(c, w: &IntentWrite<'_>, now: Millis) -> R<Option<IntentRow>> {
            sqlx::query_as::<Db, IntentRow>(q::REPLACE_INTENT)
                .bind(w.tenant)
                .bind(w.reference)
                .bind(w.action)
                .bind(w.rules_version)
                .bind(w.key)
                .bind(w.payload)
                .bind(now)
                .bind(w.candidate)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        fn intent_history(c, tenant: &str, reference: &str, action: &str) -> R<Vec<HistoryRow>> {
            sqlx::query_as::<Db, HistoryRow>(q::INTENT_HISTORY)
                .bind(tenant)
                .bind(reference)
                .bind(action)
                .fetch_all(&mut *c)
                .await
        }

        fn intent_by_key(c, tenant: &str, key: &str) -> R<Option<KeyedIntentRow>> {
            let rows = sqlx::query_as::<Db, KeyedIntentRow>(q::INTENT_BY_KEY)
                .bind(tenant)
                .bind(key)
                .fetch_all(&mut *c)
                .await?;
            // The newest, should a correction have given two intents one key.
            Ok(rows.into_iter().max_by_key(|r| r.intent.last_seen_ms))
        }

        /// The intents of `keys` (several rows for a key only after a
        /// correction; the caller keeps the newest).
        fn intent_facts(c, tenant: &str, keys: &[&str]) -> R<Vec<FactRow>> {
            let keys = serde_json::to_string(keys).map_err(|e| sqlx::Error::Encode(e.into()))?;
            sqlx::query_as::<Db, FactRow>(q::INTENT_FACTS)
                .bind(tenant)
                .bind(keys)
                .fetch_all(&mut *c)
                .await
        }
    }
}
