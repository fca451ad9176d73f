//! What the live monitor reads: actions in flight and uncertain, and the
//! intents behind them.

use super::common::{queries, R};
use crate::model::Millis;

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

queries! {
    statements in live;
    /// The live monitor queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait LiveQueries {
        fn live_action_counts(c, tenant: &str, now: Millis) -> R<(i64, i64, i64, i64, Option<i64>)> {
            sqlx::query_as::<Db, (i64, i64, i64, i64, Option<i64>)>(q::LIVE_ACTION_COUNTS)
                .bind(tenant)
                .bind(now)
                .fetch_one(&mut *c)
                .await
        }

        fn live_uncertain(c, tenant: &str, limit: i64) -> R<Vec<UncertainRow>> {
            sqlx::query_as::<Db, UncertainRow>(q::LIVE_UNCERTAIN)
                .bind(tenant)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }

        fn live_uncertain_by_action(c, tenant: &str, now: Millis) -> R<Vec<(String, i64)>> {
            sqlx::query_as::<Db, (String, i64)>(q::LIVE_UNCERTAIN_BY_ACTION)
                .bind(tenant)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        fn live_expired(c, tenant: &str, now: Millis, limit: i64) -> R<Vec<UncertainRow>> {
            sqlx::query_as::<Db, UncertainRow>(q::LIVE_EXPIRED)
                .bind(tenant)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }
    }
}
