//! Webhook endpoints and the relay's deliveries: the outbox delivered as
//! Standard Webhooks. The relay itself (HTTP, signing, backoff) lives in the
//! server; these are its statements.

use super::*;

impl Session {
    /// Registers an endpoint. Its id must be new for the tenant.
    pub async fn add_webhook_endpoint(
        &mut self,
        tenant: &TenantId,
        endpoint: &WebhookEndpoint,
    ) -> Result<(), Error> {
        on!(self.insert_webhook_endpoint(tenant.as_str(), endpoint)).map_err(|e| match &e {
            sqlx::Error::Database(d) if d.is_unique_violation() => {
                Error::Invalid(format!("endpoint {} exists", endpoint.endpoint_id))
            }
            _ => Error::Database(e),
        })
    }

    /// The tenant's endpoints, oldest first.
    pub async fn webhook_endpoints(
        &mut self,
        tenant: &TenantId,
    ) -> Result<Vec<WebhookEndpoint>, Error> {
        Ok(on!(self.list_webhook_endpoints(tenant.as_str()))?)
    }

    /// Removes an endpoint, and the deliveries still waiting for it.
    /// [`Error::NotFound`] when the tenant has no such endpoint.
    pub async fn remove_webhook_endpoint(
        &mut self,
        tenant: &TenantId,
        endpoint_id: &str,
    ) -> Result<(), Error> {
        if on!(self.delete_webhook_endpoint(tenant.as_str(), endpoint_id))? {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Fans up to `limit` pending outbox messages out to the endpoints that
    /// want their topic (one delivery each, due now) and marks them sent.
    /// Call it in a transaction: on PostgreSQL the messages stay locked until
    /// commit (another relay skips them), and the deliveries and the mark
    /// commit together. Returns how many messages it took.
    pub async fn webhook_fan_out(
        &mut self,
        tenant: &TenantId,
        endpoints: &[WebhookEndpoint],
        limit: u32,
    ) -> Result<usize, Error> {
        let now = self.now();
        let t = tenant.as_str();
        let messages = on!(self.outbox_fetch(t, i64::from(limit)))?;
        for m in &messages {
            for e in endpoints.iter().filter(|e| e.wants(&m.topic)) {
                on!(self.insert_webhook_delivery(t, m, &e.endpoint_id, now))?;
            }
            on!(self.outbox_mark_sent(t, m.id, now))?;
        }
        Ok(messages.len())
    }

    /// Claims up to `limit` of an endpoint's due deliveries for `lease`.
    pub async fn webhook_claim(
        &mut self,
        tenant: &TenantId,
        endpoint_id: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<WebhookDelivery>, Error> {
        let now = self.now();
        let until = now.saturating_add(duration_ms(lease));
        Ok(on!(self.webhook_claim(
            tenant.as_str(),
            endpoint_id,
            now,
            until,
            i64::from(limit)
        ))?)
    }

    /// Records an attempt's outcome, under the attempt number that claimed
    /// it. Returns false when that attempt no longer holds the delivery (its
    /// lease ran out and another relay claimed it, or it was settled).
    pub async fn webhook_settle(
        &mut self,
        tenant: &TenantId,
        endpoint_id: &str,
        delivery: &WebhookDelivery,
        outcome: &DeliveryOutcome,
    ) -> Result<bool, Error> {
        let now = self.now();
        let n = on!(self.webhook_settle(
            tenant.as_str(),
            delivery.outbox_id,
            endpoint_id,
            delivery.attempts,
            outcome,
            now
        ))?;
        Ok(n > 0)
    }

    /// The tenant's deliveries by state.
    pub async fn webhook_counts(&mut self, tenant: &TenantId) -> Result<WebhookCounts, Error> {
        Ok(on!(self.webhook_counts(Some(tenant.as_str())))?)
    }
}
