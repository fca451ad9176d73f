//! Event claims: an event consumed once, or claimed with a lease and settled
//! under its token.

use super::common::{queries, R};
use crate::model::{EventState, Millis};

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

queries! {
    statements in events;
    /// The event queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait EventQueries {
        fn consume_event(c, tenant: &str, source: &str, event_id: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::CONSUME_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn claim_event(c, tenant: &str, source: &str, event_id: &str, now: Millis, lease_until: Millis) -> R<Option<EventClaimRow>> {
            sqlx::query_as::<Db, EventClaimRow>(q::CLAIM_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .bind(now)
                .bind(lease_until)
                .fetch_optional(&mut *c)
                .await
        }

        fn select_event(c, tenant: &str, source: &str, event_id: &str) -> R<Option<EventRow>> {
            sqlx::query_as::<Db, EventRow>(q::SELECT_EVENT)
                .bind(tenant)
                .bind(source)
                .bind(event_id)
                .fetch_optional(&mut *c)
                .await
        }

        fn settle_event(c, tenant: &str, source: &str, event_id: &str, token: i64, state: EventState, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::SETTLE_EVENT)
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
    }
}
