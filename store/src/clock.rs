//! Where the store's "now" comes from. Leases, retention and statistics all
//! read one clock, so tests can move time instead of sleeping.

use crate::model::Millis;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told (tests, simulations).
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// Starts at `start_ms`.
    pub fn new(start_ms: Millis) -> Self {
        Self(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Moves time forward.
    pub fn advance(&self, by: std::time::Duration) {
        self.0.fetch_add(duration_ms(by), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn duration_ms(d: std::time::Duration) -> Millis {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
