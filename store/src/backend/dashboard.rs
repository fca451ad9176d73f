//! The dashboard's tables: saved scenarios and comparisons, and the demo
//! provider's and the conformance fixture's.

use super::common::{queries, R};
use crate::model::Millis;

queries! {
    statements in dashboard;
    /// The dashboard queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait DashboardQueries {
        fn insert_fixture_echo(c, tenant: &str, bytes: i64, now: Millis) -> R<()> {
            sqlx::query::<Db>(q::INSERT_FIXTURE_ECHO)
                .bind(tenant)
                .bind(bytes)
                .bind(now)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        fn insert_demo_charge(c, tenant: &str, charge: &crate::model::DemoCharge) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_DEMO_CHARGE)
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

        fn count_demo_charges(c, tenant: &str) -> R<i64> {
            sqlx::query_scalar::<Db, i64>(q::COUNT_DEMO_CHARGES)
                .bind(tenant)
                .fetch_one(&mut *c)
                .await
        }

        fn insert_scenario(c, tenant: &str, s: &crate::model::SavedScenario) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_SCENARIO)
                .bind(tenant)
                .bind(&s.id)
                .bind(&s.name)
                .bind(&s.query)
                .bind(s.created_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn select_scenario(c, tenant: &str, id: &str) -> R<Option<crate::model::SavedScenario>> {
            sqlx::query_as::<Db, crate::model::SavedScenario>(q::SELECT_SCENARIO)
                .bind(tenant)
                .bind(id)
                .fetch_optional(&mut *c)
                .await
        }

        fn insert_comparison(c, tenant: &str, s: &crate::model::SavedComparison) -> R<u64> {
            sqlx::query::<Db>(q::INSERT_COMPARISON)
                .bind(tenant)
                .bind(&s.id)
                .bind(&s.name)
                .bind(&s.query)
                .bind(s.created_ms)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn select_comparison(c, tenant: &str, id: &str) -> R<Option<crate::model::SavedComparison>> {
            sqlx::query_as::<Db, crate::model::SavedComparison>(q::SELECT_COMPARISON)
                .bind(tenant)
                .bind(id)
                .fetch_optional(&mut *c)
                .await
        }

        fn list_demo_charges(c, tenant: &str) -> R<Vec<crate::model::DemoCharge>> {
            sqlx::query_as::<Db, crate::model::DemoCharge>(q::LIST_DEMO_CHARGES)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }
    }
}
