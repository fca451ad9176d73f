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

    /// Claims an event for `lease`: the first delivery, or one whose earlier
    /// holder's lease ran out or that failed retryably, gets it; while a
    /// lease runs, others are told to wait; a settled event says so.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant, source))]
    pub async fn claim_event(
        &mut self,
        tenant: &TenantId,
        source: &str,
        event_id: &str,
        lease: Duration,
    ) -> Result<EventClaim, Error> {
        let t = tenant.as_str();
        // A purge may remove a settled row between the two statements; the
        // next round then claims it afresh.
        for _ in 0..3 {
            let now = self.now();
            let until = now.saturating_add(duration_ms(lease));
            if let Some(r) = on!(self.claim_event(t, source, event_id, now, until))? {
                return Ok(EventClaim::Claimed {
                    token: r.token,
                    attempt: r.attempts,
                    lease_until_ms: r.lease_until_ms.unwrap_or(until),
                    previous: r.prev_state,
                });
            }
            match on!(self.select_event(t, source, event_id))? {
                Some(r) if r.state == EventState::Completed => return Ok(EventClaim::Completed),
                Some(r) if r.state == EventState::Failed => return Ok(EventClaim::Failed),
                Some(r) if r.state == EventState::Leased => {
                    return Ok(EventClaim::InFlight {
                        lease_until_ms: r.lease_until_ms.unwrap_or(now),
                    })
                }
                // Leased and just expired, or released: claim again.
                _ => continue,
            }
        }
        Err(Error::ClaimContended)
    }

    /// Settles a claimed event under its token: `completed`, `failed` (for
    /// good) or `released` (failed retryably; the next delivery claims it).
    /// Repeating the same settlement with the current token is not an error.
    pub async fn settle_event(
        &mut self,
        tenant: &TenantId,
        source: &str,
        event_id: &str,
        token: i64,
        outcome: EventOutcome,
    ) -> Result<(), Error> {
        let t = tenant.as_str();
        let now = self.now();
        let state = outcome.state();
        if on!(self.settle_event(t, source, event_id, token, state, now))? == 1 {
            return Ok(());
        }
        match on!(self.select_event(t, source, event_id))? {
            None => Err(Error::NotFound),
            Some(r) if r.token == token && r.state == state => Ok(()),
            Some(r) => Err(Error::StaleToken {
                token,
                current: r.token,
                state: r.state.as_str().to_owned(),
            }),
        }
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
        if ids.is_empty() {
            return Ok(0);
        }
        let now = self.now();
        let ids = serde_json::Value::from(ids).to_string();
        Ok(on!(self.outbox_mark_sent_many(tenant.as_str(), &ids, now))?)
    }
}
