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
        if messages.is_empty() {
            return Ok(0);
        }
        // Three statements per batch (the fetch, the deliveries, the mark),
        // whatever its size: SQLite's write lock, which the API's writes
        // wait for, is held for three statements, not two per message.
        let pairs: Vec<serde_json::Value> = messages
            .iter()
            .flat_map(|m| {
                endpoints
                    .iter()
                    .filter(|e| e.wants(&m.topic))
                    .map(|e| serde_json::json!({ "o": m.id, "e": e.endpoint_id }))
            })
            .collect();
        if !pairs.is_empty() {
            let pairs = serde_json::Value::Array(pairs).to_string();
            on!(self.webhook_fan_out(t, &pairs, now))?;
        }
        let ids =
            serde_json::Value::from(messages.iter().map(|m| m.id).collect::<Vec<_>>()).to_string();
        on!(self.outbox_mark_sent_many(t, &ids, now))?;
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

    /// Records a batch of 2xx outcomes (endpoint id, the delivery as
    /// claimed, the status) in one statement, each under the attempt that
    /// claimed it. Returns how many still held their delivery; the others'
    /// leases ran out and another relay claimed them, or they were settled.
    pub async fn webhook_delivered_many(
        &mut self,
        tenant: &TenantId,
        delivered: &[(&str, &WebhookDelivery, u16)],
    ) -> Result<usize, Error> {
        if delivered.is_empty() {
            return Ok(0);
        }
        let now = self.now();
        // One statement per status: nearly always one (every 200, or every 204).
        let mut statuses: Vec<u16> = delivered.iter().map(|(_, _, s)| *s).collect();
        statuses.sort_unstable();
        statuses.dedup();
        let mut held = 0;
        for status in statuses {
            let claims = serde_json::Value::Array(
                delivered
                    .iter()
                    .filter(|(_, _, s)| *s == status)
                    .map(|(e, d, _)| serde_json::json!({ "o": d.outbox_id, "e": e, "a": d.attempts }))
                    .collect(),
            )
            .to_string();
            held += on!(self.webhook_delivered_many(tenant.as_str(), &claims, status, now))?;
        }
        Ok(usize::try_from(held).unwrap_or(usize::MAX))
    }

    /// The tenant's deliveries by state.
    pub async fn webhook_counts(&mut self, tenant: &TenantId) -> Result<WebhookCounts, Error> {
        Ok(on!(self.webhook_counts(Some(tenant.as_str())))?)
    }
}
