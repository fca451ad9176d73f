//! Which claims' attempt ids are being answered on this instance now: the
//! way it tells a retry of one attempt (its answer was lost: the same
//! claim and token again, by design) from a second holder asking at the
//! same moment with the same `attempt_id` (a message id two workers
//! share), who must never be handed the first one's token. A leaf.
//!
//! The rule: one request at a time per attempt id. While a request with
//! the id is in the server (from before its record to its answer),
//! another with it is answered like another holder at once (409,
//! `action-in-flight`, saying why; `in_flight` inside a record; never
//! waited on), so five callers at once get one token between them. Once the
//! first has answered, the id may be asked again: that is how an answer
//! lost on the way (a client's time-out, a proxy that dropped it) is
//! recovered, and from outside nothing tells it apart from a second
//! holder arriving later. The store closes most of that window: the
//! claim's first renewal spends the id (`RENEW_ACTION`), so after it the
//! id is another holder's to nobody. The book says why an attempt id must
//! be unique per attempt, and both clients mint one.
//!
//! Per instance: a second holder that reaches another instance of a
//! deployment at the same moment is not seen here.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// (tenant, attempt id): an id names one attempt of one worker, whatever
/// the action, so the seat is taken before the key is known (a record).
type Id = (String, String);

/// The attempt ids being answered on this instance now.
#[derive(Debug, Default)]
pub struct Attempts {
    running: Mutex<HashSet<Id>>,
}

/// Another request with the attempt id runs now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InUse;

impl Attempts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Id>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A seat for one request with `attempt_id`, unless another runs with
    /// it now; no seat for a request without one.
    pub fn seat(
        self: &Arc<Self>,
        tenant: &str,
        attempt_id: Option<&str>,
    ) -> Result<Option<Seat>, InUse> {
        attempt_id.map(|id| self.enter(tenant, id)).transpose()
    }

    /// A seat for one request with `attempt_id`, unless another runs with
    /// it now.
    pub fn enter(self: &Arc<Self>, tenant: &str, attempt_id: &str) -> Result<Seat, InUse> {
        let id = (tenant.to_owned(), attempt_id.to_owned());
        if !self.lock().insert(id.clone()) {
            return Err(InUse);
        }
        Ok(Seat {
            of: self.clone(),
            id,
        })
    }
}

/// One request's place under its attempt id, given back when dropped (the
/// request answered, failed, or its client left).
#[derive(Debug)]
pub struct Seat {
    of: Arc<Attempts>,
    id: Id,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.of.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_refused_while_a_request_with_it_runs_and_free_after() {
        let a = Arc::new(Attempts::default());
        let seat = a.enter("t", "m-1").unwrap();
        assert_eq!(a.enter("t", "m-1").err(), Some(InUse));
        assert_eq!(a.seat("t", Some("m-1")).err(), Some(InUse));
        assert!(a.seat("t", None).unwrap().is_none());
        // Another tenant or id is another attempt.
        drop(a.enter("u", "m-1").unwrap());
        drop(a.enter("t", "m-2").unwrap());
        drop(seat);
        drop(
            a.enter("t", "m-1")
                .expect("a lost answer's retry was refused"),
        );
    }
}
