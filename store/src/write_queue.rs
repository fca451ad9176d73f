//! SQLite's writers in this process, served in arrival order.
//!
//! SQLite lets one connection write at a time. A connection that finds the
//! write lock taken sleeps in SQLite's busy handler, whose sleeps grow from
//! 1 ms to 100 ms, and nothing wakes it early when the lock is released.
//! Under load the file then sits idle while its writers sleep, and whichever
//! writer wakes first wins, so a writer that keeps losing can wait out the
//! whole busy timeout while later ones get in (docs/PERFORMANCE.md).
//!
//! The queue is a FIFO in front of that lock for the writes that hold
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
//! transaction holds the lock. One autocommit statement does queue: an
//! action's outcome (`Session::settle_action` and the calls built on it),
//! since outcomes arrive beside the claims' transactions and, left to the
//! busy handler, waited up to 300 ms at 16 connections.
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
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The one connection writers use on their turn: every transaction and
/// every outcome that queues run on it, so its page cache stays valid.
///
/// SQLite throws a connection's whole page cache away when it starts a
/// transaction and finds that another connection wrote since its last one.
/// sqlx hands idle connections out oldest first, so with writes spread over
/// the pool every write found its cache stale and read the tables' and
/// indexes' pages again from the file: one connection measured 15% less
/// time per guarded effect than eight (docs/PERFORMANCE.md). Writes take
/// turns anyway, so one connection costs them no concurrency; reads keep the
/// rest of the pool. Waiting for it is waiting for a turn, with the same
/// bound ([`BUSY_TIMEOUT`]).
pub(crate) fn writer_pool(options: SqliteConnectOptions) -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .acquire_timeout(BUSY_TIMEOUT)
        .after_release(|c, _| Box::pin(crate::released_outside_a_transaction(c)))
        .connect_lazy_with(options)
}

/// Takes the writers' connection (see [`writer_pool`]); a wait past the
/// bound is the same refusal as a turn not given in time.
pub(crate) async fn writer(
    pool: &SqlitePool,
) -> Result<sqlx::pool::PoolConnection<sqlx::Sqlite>, Error> {
    pool.acquire().await.map_err(|e| match e {
        sqlx::Error::PoolTimedOut => {
            Error::Unavailable("the database is busy: no write turn in time".into())
        }
        e => Error::from(e),
    })
}

/// How long a writer waits for its turn: SQLite's busy timeout, so a
/// writer that would have got SQLITE_BUSY gets an error after the same wait.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one transaction may hold SQLite's write lock before the
/// watchdog rolls it back: every other writer of the file, in this process
/// and in others, waits while it is held, so a holder that stalls (a
/// request parked mid-transaction, a bug) must not stall them for longer.
pub const MAX_WRITE_TRANSACTION: Duration = Duration::from_secs(5);

/// A transaction's connection and its turn, where both the session that
/// opened it and the watchdog can reach them: the session runs its
/// statements through the lock, the watchdog takes the transaction out and
/// rolls it back once it has held the write lock past its bound.
pub(crate) type Held<T> = Arc<Mutex<Option<T>>>;

/// Who holds the turn now.
struct Holder {
    /// Which turn (a later holder is another number).
    id: u64,
    /// Since when it holds SQLite's write lock (its `begin immediate`
    /// succeeded), or since it took its turn.
    since: Instant,
    /// The watchdog's way to end it, when it is a transaction.
    end: Option<Box<dyn Fn() + Send + Sync>>,
    /// Whether the watchdog acted on it already.
    ended: bool,
}

/// The queue of this process's SQLite writers (one per store).
#[derive(Clone)]
pub(crate) struct WriteQueue {
    queue: Arc<Mutex<()>>,
    /// How long a writer waits ([`BUSY_TIMEOUT`] outside tests).
    wait: Duration,
    holder: Arc<std::sync::Mutex<Option<Holder>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl Default for WriteQueue {
    fn default() -> Self {
        Self::new(BUSY_TIMEOUT)
    }
}

/// A writer's turn: held until its write commits or rolls back.
pub(crate) struct Turn {
    _queue: OwnedMutexGuard<()>,
    id: u64,
    holder: Arc<std::sync::Mutex<Option<Holder>>>,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn").field("id", &self.id).finish()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut h = lock(&self.holder);
        if h.as_ref().is_some_and(|h| h.id == self.id) {
            *h = None;
        }
    }
}

impl Turn {
    /// Marks the write lock taken now by a transaction the watchdog can
    /// end through `held` (a weak handle: a transaction that ended on its
    /// own is not kept alive by it).
    pub(crate) fn hold<T, F>(&self, held: &Held<T>, end: F)
    where
        T: Send + 'static,
        F: Fn(T) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
            + Send
            + Sync
            + 'static,
    {
        let weak: Weak<Mutex<Option<T>>> = Arc::downgrade(held);
        let end = Arc::new(end);
        let mut h = lock(&self.holder);
        if let Some(h) = h.as_mut().filter(|h| h.id == self.id) {
            h.since = Instant::now();
            h.end = Some(Box::new(move || {
                let (weak, end) = (weak.clone(), end.clone());
                tokio::spawn(async move {
                    let Some(held) = weak.upgrade() else { return };
                    // Waits for a statement under way (bounded by the busy
                    // timeout), then takes the transaction from its session,
                    // whose next statement or commit fails instead.
                    let taken = held.lock().await.take();
                    if let Some(t) = taken {
                        end(t).await;
                    }
                });
            }));
        }
    }
}

impl WriteQueue {
    fn new(wait: Duration) -> Self {
        Self {
            queue: Arc::default(),
            wait,
            holder: Arc::default(),
            next: Arc::default(),
        }
    }

    /// Waits for this writer's turn, at most the busy timeout.
    pub(crate) async fn turn(&self) -> Result<Turn, Error> {
        let queue = tokio::time::timeout(self.wait, self.queue.clone().lock_owned())
            .await
            .map_err(|_| {
                Error::Unavailable("the database is busy: no write turn in time".into())
            })?;
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lock(&self.holder) = Some(Holder {
            id,
            since: Instant::now(),
            end: None,
            ended: false,
        });
        Ok(Turn {
            _queue: queue,
            id,
            holder: self.holder.clone(),
        })
    }

    /// How long the current holder has held its turn, if any.
    pub(crate) fn held_for(&self) -> Option<Duration> {
        lock(&self.holder).as_ref().map(|h| h.since.elapsed())
    }

    /// The watchdog's check: a holder past `bound` is ended (a transaction
    /// rolled back) and logged, once. Returns whether it acted.
    pub(crate) fn check(&self, bound: Duration) -> bool {
        let mut h = lock(&self.holder);
        let Some(h) = h.as_mut() else { return false };
        if h.ended || h.since.elapsed() < bound {
            return false;
        }
        h.ended = true;
        match &h.end {
            Some(end) => {
                tracing::error!(
                    held_ms = h.since.elapsed().as_millis() as u64,
                    "a SQLite write transaction held the write lock past {bound:?}: rolling it back so other writers can go on"
                );
                end();
            }
            None => tracing::error!(
                held_ms = h.since.elapsed().as_millis() as u64,
                "a SQLite writer has held its write turn past {bound:?}"
            ),
        }
        true
    }

    /// Checks the holder every quarter second until the store is dropped.
    pub(crate) fn spawn_watchdog<T: Send + Sync + 'static>(&self, owner: Weak<T>, bound: Duration) {
        let gate = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250).min(bound));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if owner.strong_count() == 0 {
                    break;
                }
                gate.check(bound);
            }
        });
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_are_served_in_arrival_order() {
        let gate = WriteQueue::default();
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
    async fn a_transaction_held_past_the_bound_is_taken_and_ended_once() {
        let gate = WriteQueue::default();
        let turn = gate.turn().await.unwrap();
        let held: Held<u32> = Arc::new(Mutex::new(Some(7)));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let tx = std::sync::Mutex::new(Some(tx));
        turn.hold(&held, move |v| {
            let tx = tx.lock().unwrap().take();
            Box::pin(async move {
                if let Some(tx) = tx {
                    let _ = tx.send(v);
                }
            })
        });
        assert!(!gate.check(Duration::from_secs(5)), "within the bound");
        assert!(gate.check(Duration::ZERO), "past it");
        assert!(!gate.check(Duration::ZERO), "once");
        assert_eq!(rx.await.unwrap(), 7, "the transaction was ended");
        assert!(held.lock().await.is_none(), "and taken from its session");
        drop(turn);
        assert!(gate.held_for().is_none());
    }

    #[tokio::test]
    async fn a_writer_waiting_on_itself_gets_an_error_not_a_hang() {
        let gate = WriteQueue::new(Duration::from_millis(50));
        let _held = gate.turn().await.unwrap();
        let again = gate.turn().await;
        assert!(matches!(again, Err(Error::Unavailable(_))), "{again:?}");
    }
}
