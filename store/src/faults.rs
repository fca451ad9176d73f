//! What a database error says about the connection it came on, and a pool
//! that heals after a failover.
//!
//! After a failover, a pooled connection may still reach the old primary,
//! now a standby that answers every write with SQLSTATE 25006
//! (read_only_sql_transaction), or have been ended by the server (57P01
//! admin_shutdown when Patroni restarts or demotes a member). sqlx discards
//! a connection whose socket fails, but it puts back one whose statement
//! the server refused, and reuses it. So every such fault is noted here
//! with the instant it was seen, and the pool's `before_acquire` check
//! discards each connection opened before the last fault: the next caller
//! gets a fresh connection, which the router sends to the new primary.
//! Costs nothing until a fault: one atomic load per acquire.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// When this process first looked at a fault (the epoch the others count from).
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Microseconds from [`origin`] to the last fault, plus one (0: none yet).
static LAST_FAULT: AtomicU64 = AtomicU64::new(0);

/// Whether an error means the connection it came on should not be used
/// again: its socket failed, the server ended the session, or the server
/// it reaches cannot take writes (a standby, a server shutting down).
pub(crate) fn is_connection_fault(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| {
            // 25006 read-only transaction (a standby); 57P01..57P03
            // admin_shutdown, crash_shutdown, cannot_connect_now; class 08
            // connection exceptions.
            matches!(c.as_ref(), "25006" | "57P01" | "57P02" | "57P03") || c.starts_with("08")
        }),
        _ => false,
    }
}

/// Notes `e` when it is a connection fault ([`is_connection_fault`]).
pub(crate) fn observe(e: &sqlx::Error) {
    if is_connection_fault(e) {
        note();
    }
}

/// Notes a fault now: every connection opened before it is discarded at
/// its next acquire.
pub(crate) fn note() {
    let micros = u64::try_from(origin().elapsed().as_micros()).unwrap_or(u64::MAX - 1);
    LAST_FAULT.fetch_max(micros + 1, Ordering::Relaxed);
}

/// Whether a connection of age `age` was opened before the last fault.
pub(crate) fn opened_before_last_fault(age: Duration) -> bool {
    let last = LAST_FAULT.load(Ordering::Relaxed);
    if last == 0 {
        return false;
    }
    let now = origin().elapsed();
    let opened = now.saturating_sub(age);
    let fault = Duration::from_micros(last - 1);
    opened <= fault
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_retires_older_connections_only() {
        // A connection opened long ago is older than any fault noted now.
        let old = Duration::from_secs(3600);
        note();
        assert!(opened_before_last_fault(origin().elapsed() + old));
        std::thread::sleep(Duration::from_millis(5));
        // Opened after the fault: kept.
        assert!(!opened_before_last_fault(Duration::from_millis(1)));
    }

    #[test]
    fn connection_faults_are_told_apart_from_refused_statements() {
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(is_connection_fault(&io));
        assert!(!is_connection_fault(&sqlx::Error::RowNotFound));
        assert!(!is_connection_fault(&sqlx::Error::PoolTimedOut));
    }
}
