//! Actions: a claim with a lease and a fencing token, each replaced attempt
//! kept, outcomes written under the token, expired leases swept to uncertain.

use super::common::{first_opt, queries, R};
use crate::model::{ActionState, Millis};

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
    pub prev_error: Option<String>,
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
    pub ended: crate::model::AttemptEnd,
    pub error: Option<String>,
    pub replaced_ms: i64,
}

/// The arguments of one replaced attempt's record.
pub(crate) struct AttemptWrite<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
    pub attempt: i32,
    pub token: i64,
    pub started_ms: i64,
    pub lease_until_ms: Option<i64>,
    pub ended: crate::model::AttemptEnd,
    pub error: Option<&'a str>,
    pub now: i64,
}

queries! {
    statements in actions;
    /// The action queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait ActionQueries {
        #[allow(clippy::too_many_arguments)] // one bind per column
        fn begin_action(c, tenant: &str, key: &str, action: &str, now: Millis, lease_until: Millis, attempt_id: Option<&str>) -> R<Option<BeginRow>> {
            sqlx::query_as::<Db, BeginRow>(q::BEGIN_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(action)
                .bind(now)
                .bind(lease_until)
                .bind(attempt_id)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        fn select_held_claim(c, tenant: &str, key: &str, attempt_id: &str, now: Millis) -> R<Option<BeginRow>> {
            sqlx::query_as::<Db, BeginRow>(q::SELECT_HELD_CLAIM)
                .bind(tenant)
                .bind(key)
                .bind(attempt_id)
                .bind(now)
                .fetch_optional(&mut *c)
                .await
        }

        fn renew_action(c, tenant: &str, key: &str, token: i64, lease_until: Millis, now: Millis) -> R<Option<i64>> {
            sqlx::query_scalar::<Db, Option<i64>>(q::RENEW_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(lease_until)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .map(|rows| first_opt(rows).flatten())
        }

        fn mark_uncertain(c, tenant: &str, key: &str, token: i64, error: &str, now: Millis) -> R<Option<String>> {
            sqlx::query_scalar::<Db, String>(q::MARK_UNCERTAIN)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(error)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        fn select_action(c, tenant: &str, key: &str) -> R<Option<ActionRow>> {
            sqlx::query_as::<Db, ActionRow>(q::SELECT_ACTION)
                .bind(tenant)
                .bind(key)
                .fetch_optional(&mut *c)
                .await
        }

        fn insert_action_attempt(c, w: &AttemptWrite<'_>) -> R<()> {
            sqlx::query::<Db>(q::INSERT_ACTION_ATTEMPT)
                .bind(w.tenant)
                .bind(w.key)
                .bind(w.attempt)
                .bind(w.token)
                .bind(w.started_ms)
                .bind(w.lease_until_ms)
                .bind(w.ended.as_str())
                .bind(w.error)
                .bind(w.now)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        fn action_attempts(c, tenant: &str, key: &str) -> R<Vec<AttemptRow>> {
            sqlx::query_as::<Db, AttemptRow>(q::ACTION_ATTEMPTS)
                .bind(tenant)
                .bind(key)
                .fetch_all(&mut *c)
                .await
        }

        /// `counted`: the statement also journals the outcome's count.
        #[allow(clippy::too_many_arguments)] // one bind per column
        fn complete_action(c, tenant: &str, key: &str, token: i64, response: &str, now: Millis, reconciled: bool, counted: bool) -> R<Option<ActionRow>> {
            let text = if counted { q::COMPLETE_ACTION_COUNTED } else { q::COMPLETE_ACTION };
            sqlx::query_as::<Db, ActionRow>(text)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(response)
                .bind(now)
                .bind(reconciled)
                // The row as the outcome left it; None when refused. All
                // rows read, so SQLite's statement is done with (and its
                // autocommit ended) before the answer.
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        fn seal_failed_action(c, tenant: &str, key: &str, now: Millis) -> R<Option<String>> {
            sqlx::query::<Db>(q::SEAL_FAILED_ACTION)
                .bind(tenant)
                .bind(key)
                .bind(now)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)?
                .map(|r| r.try_get("action"))
                .transpose()
        }

        #[allow(clippy::too_many_arguments)] // one bind per column
        /// `counted`: the statement also journals the outcome's count.
        fn fail_action(c, tenant: &str, key: &str, token: i64, error: &str, retryable: bool, now: Millis, reconciled: bool, counted: bool) -> R<Option<ActionRow>> {
            let text = if counted { q::FAIL_ACTION_COUNTED } else { q::FAIL_ACTION };
            sqlx::query_as::<Db, ActionRow>(text)
                .bind(tenant)
                .bind(key)
                .bind(token)
                .bind(error)
                .bind(retryable)
                .bind(now)
                .bind(reconciled)
                // The row as the outcome left it; None when refused. All
                // rows read, so SQLite's statement is done with (and its
                // autocommit ended) before the answer.
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
        }

        fn sweep_expired_leases(c, tenant: &str, now: Millis, limit: i64) -> R<Vec<String>> {
            sqlx::query_scalar::<Db, String>(q::SWEEP_EXPIRED_LEASES)
                .bind(tenant)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *c)
                .await
        }
    }
}
