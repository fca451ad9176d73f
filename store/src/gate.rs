//! SQLite's writers in this process, served in arrival order.
//!
//! SQLite lets one connection write at a time. A connection that finds the
//! write lock taken sleeps in SQLite's busy handler, whose sleeps grow from
//! 1 ms to 100 ms, and nothing wakes it early when the lock is released.
//! Under load the file then sits idle while its writers sleep, and whichever
//! writer wakes first wins, so a writer that keeps losing can wait out the
//! whole busy timeout while later ones get in (docs/PERFORMANCE.md).
//!
//! The gate is a FIFO queue in front of that lock for the writes that hold
//! it longest: every transaction (`begin immediate`) and every batch of
//! the intent writer. A writer takes its turn (tokio's mutex is fair) after
//! it has its connection and before it begins, and gives it back once it has
//! committed or rolled back. The next writer is woken at that moment.
//!
//! Single autocommit statements (an Idempotency-Key's lock row, a relay
//! claim) do not queue. Measured with the conformance fixture's unguarded
//! echo, which is one autocommit insert per request, queueing them cost a
//! third of its throughput (11k/s down to 7k/s at 64 connections). Each
//! turn's hand-off to the next task then left the file idle between
//! statements. Those statements still wait in SQLite's busy handler when a
//! transaction holds the lock.
//!
//! The gate does not replace SQLite's lock. SQLite's lock still decides, so
//! a write that does not take a turn, or a write from another process (the
//! CLI, a second server on the same file), is still correct. It just waits
//! in the busy handler.
//!
//! The turn is taken after the connection so a turn holder never waits for
//! the pool. A writer that already holds the turn and waits for it again
//! (a transaction calling a store shortcut that writes) would have met
//! SQLite's busy timeout before. It meets the same timeout here and gets an
//! error instead of hanging.

use crate::Error;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// How long a writer waits for its turn: SQLite's busy timeout, so a
/// writer that would have got SQLITE_BUSY gets an error after the same wait.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The queue of this process's SQLite writers (one per store).
#[derive(Clone)]
pub(crate) struct WriteGate {
    queue: Arc<Mutex<()>>,
    /// How long a writer waits ([`BUSY_TIMEOUT`] outside tests).
    wait: Duration,
}

impl Default for WriteGate {
    fn default() -> Self {
        Self::new(BUSY_TIMEOUT)
    }
}

/// A writer's turn: held until its write commits or rolls back.
pub(crate) type Turn = OwnedMutexGuard<()>;

impl WriteGate {
    fn new(wait: Duration) -> Self {
        Self {
            queue: Arc::default(),
            wait,
        }
    }

    /// Waits for this writer's turn, at most the busy timeout.
    pub(crate) async fn turn(&self) -> Result<Turn, Error> {
        tokio::time::timeout(self.wait, self.queue.clone().lock_owned())
            .await
            .map_err(|_| Error::Unavailable("the database is busy: no write turn in time".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_are_served_in_arrival_order() {
        let gate = WriteGate::default();
        let first = gate.turn().await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..5 {
            let (gate, order) = (gate.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let _turn = gate.turn().await.unwrap();
                order.lock().unwrap().push(i);
            }));
            // Each waiter queues before the next is spawned.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(first);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_writer_waiting_on_itself_gets_an_error_not_a_hang() {
        let gate = WriteGate::new(Duration::from_millis(50));
        let _held = gate.turn().await.unwrap();
        let again = gate.turn().await;
        assert!(matches!(again, Err(Error::Unavailable(_))), "{again:?}");
    }
}
