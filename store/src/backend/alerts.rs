//! Alerts: their rules and the state each evaluation moves them to.

use super::common::{queries, R};
use crate::model::{Alert, AlertEvaluation, AlertState, Millis};

queries! {
    statements in alerts;
    /// The alert queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait AlertQueries {
        /// Removes an endpoint and its waiting deliveries; returns whether it existed.
        fn insert_alert(c, tenant: &str, a: &Alert) -> R<()> {
            sqlx::query::<Db>(q::INSERT_ALERT)
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

        fn list_alerts(c, tenant: &str) -> R<Vec<Alert>> {
            sqlx::query_as::<Db, Alert>(q::LIST_ALERTS)
                .bind(tenant)
                .fetch_all(&mut *c)
                .await
        }

        fn delete_alert(c, tenant: &str, alert_id: &str) -> R<bool> {
            let n = sqlx::query::<Db>(q::DELETE_ALERT)
                .bind(tenant)
                .bind(alert_id)
                .execute(&mut *c)
                .await?
                .rows_affected();
            Ok(n > 0)
        }

        fn update_alert(c, tenant: &str, alert_id: &str, from: AlertState, to: &AlertEvaluation<'_>, now: Millis) -> R<bool> {
            let n = sqlx::query::<Db>(q::UPDATE_ALERT)
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
    }
}
