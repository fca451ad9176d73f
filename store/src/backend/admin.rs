//! Tenants, their tokens and monitor sessions, retention and its purges,
//! chore leases, and the checks a deployment runs.

use super::common::{queries, R};
use crate::model::Millis;
use crate::stats::Granularity;

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

/// A tenant's retention row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RetentionRow {
    pub intent_retention_ms: i64,
    pub action_retention_ms: i64,
    pub http_retention_ms: i64,
}

queries! {
    statements in admin;
    /// The administration queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait AdminQueries {
        fn select_retention(c, tenant: &str) -> R<Option<RetentionRow>> {
            sqlx::query_as::<Db, RetentionRow>(q::SELECT_RETENTION)
                .bind(tenant)
                .fetch_optional(&mut *c)
                .await
        }

        fn upsert_retention(c, tenant: &str, r: &crate::model::Retention) -> R<u64> {
            sqlx::query::<Db>(q::UPSERT_RETENTION)
                .bind(tenant)
                .bind(r.intent_ms)
                .bind(r.action_ms)
                .bind(r.http_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// One bounded purge batch of one table (`sql` is a `PURGE_*` statement).
        fn purge_batch(c, sql: &'static str, tenant: &str, cutoff: Millis, limit: i64, granularity: Option<Granularity>) -> R<u64> {
            let mut query = sqlx::query::<Db>(sql)
                .bind(tenant)
                .bind(cutoff)
                .bind(limit);
            if let Some(g) = granularity {
                query = query.bind(g.as_str());
            }
            query.execute(&mut *c).await.map(|r| r.rows_affected())
        }

        /// Unsettled actions older than the cutoff.
        fn count_unresolved_past(c, tenant: &str, cutoff: Millis) -> R<u64> {
            let row = sqlx::query::<Db>(q::COUNT_UNRESOLVED_PAST)
                .bind(tenant)
                .bind(cutoff)
                .fetch_one(&mut *c)
                .await?;
            Ok(u64::try_from(row.try_get::<i64, _>("n")?).unwrap_or(0))
        }

        /// Admin: unsettled actions by state: (state, count, oldest start).
        fn admin_unresolved(c, now: Millis) -> R<Vec<(String, i64, Option<i64>)>> {
            sqlx::query_as::<Db, (String, i64, Option<i64>)>(crate::sql::admin::ADMIN_UNRESOLVED)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        /// Records a deployment check value unless one exists; returns the
        /// stored one.
        fn deployment_check(c, tenant: &str, name: &str, value: &str, now: Millis) -> R<String> {
            sqlx::query::<Db>(q::INSERT_DEPLOYMENT_CHECK)
                .bind(tenant)
                .bind(name)
                .bind(value)
                .bind(now)
                .execute(&mut *c)
                .await?;
            let row = sqlx::query::<Db>(q::SELECT_DEPLOYMENT_CHECK)
                .bind(tenant)
                .bind(name)
                .fetch_one(&mut *c)
                .await?;
            row.try_get("value")
        }

        /// Admin: the tenants with rows in one table.
        fn tenants_in(c, sql: &'static str) -> R<Vec<String>> {
            let rows = sqlx::query::<Db>(sql).fetch_all(&mut *c).await?;
            rows.iter()
                .map(|r| r.try_get::<String, _>("tenant_id"))
                .collect()
        }

        fn insert_tenant(c, tenant: &str, name: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_TENANT)
                .bind(tenant)
                .bind(name)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn insert_token(c, tenant: &str, hash: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_TOKEN)
                .bind(tenant)
                .bind(hash)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// `None`: no live token; `Some(disabled_ms)`: live, and whether
        /// (since when) its tenant is disabled.
        fn find_token(c, tenant: &str, hash: &str, now: Millis) -> R<Option<Option<i64>>> {
            sqlx::query::<Db>(q::FIND_TOKEN)
                .bind(tenant)
                .bind(hash)
                .bind(now)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| r.try_get::<Option<i64>, _>("disabled_ms"))
                .transpose()
        }

        fn revoke_other_tokens(c, tenant: &str, keep: &str, at: Millis) -> R<u64> {
            sqlx::query::<Db>(q::REVOKE_OTHER_TOKENS)
                .bind(tenant)
                .bind(keep)
                .bind(at)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn set_tenant_disabled(c, tenant: &str, at: Option<Millis>) -> R<u64> {
            sqlx::query::<Db>(q::SET_TENANT_DISABLED)
                .bind(tenant)
                .bind(at)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn tenant_info(c, tenant: &str) -> R<Option<TenantRow>> {
            sqlx::query_as::<Db, TenantRow>(q::TENANT_INFO)
                .bind(tenant)
                .fetch_optional(&mut *c)
                .await
        }

        fn tenant_list(c, now: Millis) -> R<Vec<TenantListRow>> {
            sqlx::query_as::<Db, TenantListRow>(crate::sql::admin::TENANT_LIST)
                .bind(now)
                .fetch_all(&mut *c)
                .await
        }

        fn insert_session(c, tenant: &str, session_hash: &str, token_hash: &str, now: Millis, expires: Millis) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(token_hash)
                .bind(now)
                .bind(expires)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn find_session(c, tenant: &str, session_hash: &str, now: Millis) -> R<Option<String>> {
            sqlx::query::<Db>(q::FIND_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(now)
                .fetch_optional(&mut *c)
                .await?
                .map(|r| r.try_get::<String, _>("token_hash"))
                .transpose()
        }

        fn end_session(c, tenant: &str, session_hash: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::END_SESSION)
                .bind(tenant)
                .bind(session_hash)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn purge_sessions(c, tenant: &str, before: Millis) -> R<u64> {
            sqlx::query::<Db>(q::PURGE_SESSIONS)
                .bind(tenant)
                .bind(before)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn touch_readiness(c, tenant: &str, chore: &str, now: Millis) -> R<u64> {
            sqlx::query::<Db>(q::TOUCH_READINESS)
                .bind(tenant)
                .bind(chore)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        /// One of the probe's no-row touches (`sql` is a `PROBE_*` statement).
        fn probe_table(c, sql: &'static str, tenant: &str) -> R<u64> {
            sqlx::query::<Db>(sql)
                .bind(tenant)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn bound_probe(c, ms: &str) -> R<()> {
            sqlx::query::<Db>(q::PROBE_BOUND)
                .bind(ms)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        fn purge_readiness(c, tenant: &str, before: Millis) -> R<u64> {
            sqlx::query::<Db>(q::PURGE_READINESS)
                .bind(tenant)
                .bind(before)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn take_chore_lease(c, tenant: &str, chore: &str, holder: &str, now: Millis, until: Millis) -> R<Option<i64>> {
            sqlx::query_scalar::<Db, i64>(q::TAKE_CHORE_LEASE)
                .bind(tenant)
                .bind(chore)
                .bind(holder)
                .bind(now)
                .bind(until)
                .fetch_optional(&mut *c)
                .await
        }
    }
}
