//! Consumed-event marks and the outbox.

use super::*;

impl Session {
    /// Marks `(source, event_id)` consumed. Inside a transaction the mark
    /// commits or rolls back with the caller's own writes.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, source))]
    pub async fn consume_once(
        &mut self,
        tenant: &TenantId,
        source: &str,
        event_id: &str,
    ) -> Result<Consumed, Error> {
        let now = self.now();
        let n = on!(self.consume_event(tenant.as_str(), source, event_id, now))?;
        Ok(if n == 1 {
            Consumed::First
        } else {
            Consumed::Duplicate
        })
    }

    /// Queues a message; returns its id. Call it in the transaction that
    /// records the action's claim or outcome.
    pub async fn outbox_enqueue(
        &mut self,
        tenant: &TenantId,
        topic: &str,
        payload: &str,
    ) -> Result<i64, Error> {
        let now = self.now();
        Ok(on!(self.outbox_insert(
            tenant.as_str(),
            topic,
            payload,
            now
        ))?)
    }

    /// Pending messages, oldest first. In a Postgres transaction the rows
    /// stay locked (others skip them) until commit.
    pub async fn outbox_fetch(
        &mut self,
        tenant: &TenantId,
        limit: u32,
    ) -> Result<Vec<OutboxMessage>, Error> {
        Ok(on!(self.outbox_fetch(tenant.as_str(), i64::from(limit)))?)
    }

    /// Marks messages sent; returns how many were still pending.
    pub async fn outbox_mark_sent(&mut self, tenant: &TenantId, ids: &[i64]) -> Result<u64, Error> {
        let now = self.now();
        let mut n = 0;
        for id in ids {
            n += on!(self.outbox_mark_sent(tenant.as_str(), *id, now))?;
        }
        Ok(n)
    }
}
