//! Alerts: a tenant's thresholds on the monitor's numbers. The evaluator
//! (in the server) reads them and records each evaluation here; a change to
//! firing or back is announced through the outbox relay, in the same
//! transaction as the change.

use super::*;

impl Session {
    /// Adds an alert. Its endpoint must be one of the tenant's
    /// ([`Error::NotFound`] otherwise).
    pub async fn add_alert(&mut self, tenant: &TenantId, alert: &Alert) -> Result<(), Error> {
        let t = tenant.as_str();
        let endpoints = on!(self.list_webhook_endpoints(t))?;
        if !endpoints.iter().any(|e| e.endpoint_id == alert.endpoint_id) {
            return Err(Error::NotFound);
        }
        on!(self.insert_alert(t, alert)).map_err(|e| match &e {
            sqlx::Error::Database(d) if d.is_unique_violation() => {
                Error::Invalid(format!("alert {} exists", alert.alert_id))
            }
            _ => Error::Database(e),
        })
    }

    /// The tenant's alerts, oldest first.
    pub async fn alerts(&mut self, tenant: &TenantId) -> Result<Vec<Alert>, Error> {
        Ok(on!(self.list_alerts(tenant.as_str()))?)
    }

    /// Removes an alert ([`Error::NotFound`] when the tenant has none by
    /// that id).
    pub async fn remove_alert(&mut self, tenant: &TenantId, alert_id: &str) -> Result<(), Error> {
        if on!(self.delete_alert(tenant.as_str(), alert_id))? {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Records an evaluation of `alert` (read in state `alert.state`) and,
    /// with `announce = Some((topic, payload))`, queues that message for
    /// the alert's endpoint alone: an outbox row (already fanned out) and
    /// its delivery, which the relay signs, sends and retries. Call it in a
    /// transaction so the change and its announcement commit together.
    /// Returns false, writing nothing, when another evaluator moved the
    /// alert first.
    pub async fn record_alert(
        &mut self,
        tenant: &TenantId,
        alert: &Alert,
        to: &AlertEvaluation<'_>,
        announce: Option<(&str, &str)>,
    ) -> Result<bool, Error> {
        let now = self.now();
        let t = tenant.as_str();
        if !on!(self.update_alert(t, &alert.alert_id, alert.state, to, now))? {
            return Ok(false);
        }
        if let Some((topic, payload)) = announce {
            let id = on!(self.outbox_insert(t, topic, payload, now))?;
            on!(self.outbox_mark_sent(t, id, now))?;
            let m = OutboxMessage {
                id,
                topic: topic.to_owned(),
                payload: payload.to_owned(),
                created_ms: now,
            };
            on!(self.insert_webhook_delivery(t, &m, &alert.endpoint_id, now))?;
        }
        Ok(true)
    }
}
