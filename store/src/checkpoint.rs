//! SQLite's WAL copied back into the database file off the request path.
//!
//! By default SQLite checkpoints inside a commit: the commit that takes the
//! WAL past 1000 pages copies it into the database file and syncs both
//! before it returns. A guarded effect's two commits write about ten pages
//! each (the intent, the action and their indexes), so one request in fifty
//! or so paid that copy and two fsyncs, 10 to 20 ms on this machine's disk:
//! the p99 of every write route (docs/PERFORMANCE.md).
//!
//! Here a task of the store's own does it: a PASSIVE checkpoint (it takes
//! no write lock, so writers go on appending while it copies) every
//! [`EVERY`], on a connection of its own. Commits checkpoint only past
//! [`BACKSTOP_PAGES`], so a stalled task never lets the WAL grow without
//! bound; what it costs then is what every commit risked before.

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// How often the task checkpoints.
pub(crate) const EVERY: Duration = Duration::from_millis(200);

/// The WAL's size, in pages, past which a commit checkpoints by itself
/// (SQLite's `wal_autocheckpoint`; its default is 1000). 40 MB.
pub(crate) const BACKSTOP_PAGES: u32 = 10_000;

/// Checkpoints the database of `options` every [`EVERY`] until `owner` is
/// dropped or `stop` is notified (the store closed: its connection closes
/// too, so the last one to close checkpoints and removes the WAL as SQLite
/// does). Failures are logged once in a row and retried on the next tick:
/// a commit's own checkpoint past [`BACKSTOP_PAGES`] still bounds the WAL.
pub(crate) fn spawn<T: Send + Sync + 'static>(
    owner: Weak<T>,
    options: SqliteConnectOptions,
    stop: Arc<Notify>,
) {
    tokio::spawn(async move {
        let mut conn = None;
        let mut failing = false;
        // The first tick one period in, not at once: a CLI command that
        // opens the store for a moment opens no connection for it.
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.notified() => break,
            }
            if owner.strong_count() == 0 {
                break;
            }
            if conn.is_none() {
                conn = options
                    .connect()
                    .await
                    .map_err(|e| note(&mut failing, &e))
                    .ok();
            }
            let Some(c) = conn.as_mut() else { continue };
            match sqlx::query("pragma wal_checkpoint(passive)")
                .execute(&mut *c)
                .await
            {
                Ok(_) => failing = false,
                Err(e) => {
                    note(&mut failing, &e);
                    // A fresh connection next time.
                    conn = None;
                }
            }
        }
        if let Some(c) = conn {
            let _ = c.close().await;
        }
    });
}

fn note(failing: &mut bool, e: &sqlx::Error) {
    if !*failing {
        tracing::warn!(error = %e, "SQLite's background checkpoint failed; commits checkpoint by themselves past {BACKSTOP_PAGES} pages of WAL");
    }
    *failing = true;
}
