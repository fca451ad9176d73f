//! [`Session`]: every store operation, on a pooled connection (each call
//! commits on its own) or inside a transaction the caller commits.

use crate::backend::{ActionRow, BeginRow, HistoryRow, IntentRow, IntentWrite};
use crate::clock::duration_ms;
use crate::model::*;
use crate::stats::{Accumulator, Cell};
use crate::write_queue::{Held, Turn};
use crate::{Error, Store};
use idem_core::{ActionType, IdempotencyKey, NormalizedPayload, Payload, RulesVersion, TenantId};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres, Sqlite, SqliteConnection, Transaction};
use std::time::Duration;
use tracing::Instrument as _;

/// The connection a session runs on.
enum Inner {
    /// Outside a transaction, before the first statement: nothing held yet
    /// (a session that only counts opens its own transaction instead).
    Idle,
    SqliteConn(PoolConnection<Sqlite>),
    /// A SQLite transaction and its write turn ([`crate::gate`]), where
    /// the gate's watchdog can take it back ([`SqliteTx`]).
    SqliteTx(Held<SqliteTx>),
    PgConn(PoolConnection<Postgres>),
    PgTx(Transaction<'static, Postgres>),
}

/// A SQLite transaction with its write turn, held together: the turn is
/// declared second, so a dropped transaction queues its rollback before
/// the next writer is let in.
pub(crate) struct SqliteTx {
    tx: Transaction<'static, Sqlite>,
    _turn: Turn,
}

/// A borrowed connection of either backend.
pub(crate) enum Exec<'a> {
    Sqlite(&'a mut SqliteConnection),
    /// A SQLite transaction's connection, locked for one statement so the
    /// gate's watchdog cannot take it away mid-statement.
    SqliteHeld(tokio::sync::OwnedMappedMutexGuard<Option<SqliteTx>, SqliteConnection>),
    Pg(&'a mut PgConnection),
}

/// Runs one backend function on whichever backend the session holds, and
/// tells the store's observer how long the statement took (from when the
/// connection was in hand: taking it is timed on its own).
macro_rules! on {
    ($self:ident . $f:ident ( $($arg:expr),* $(,)? )) => {{
        let (result, since) = match $self.exec().await {
            Ok($crate::session::Exec::Sqlite(c)) => {
                use $crate::backend::prelude::*;
                use tracing::Instrument as _;
                let span = $crate::observe::span(stringify!($f), $crate::Backend::Sqlite);
                let since = std::time::Instant::now();
                (c.$f($($arg),*).instrument(span).await, Some(since))
            }
            Ok($crate::session::Exec::SqliteHeld(mut c)) => {
                use $crate::backend::prelude::*;
                use tracing::Instrument as _;
                let span = $crate::observe::span(stringify!($f), $crate::Backend::Sqlite);
                let since = std::time::Instant::now();
                ((&mut *c).$f($($arg),*).instrument(span).await, Some(since))
            }
            Ok($crate::session::Exec::Pg(c)) => {
                use $crate::backend::prelude::*;
                use tracing::Instrument as _;
                let span = $crate::observe::span(stringify!($f), $crate::Backend::Postgres);
                let since = std::time::Instant::now();
                (c.$f($($arg),*).instrument(span).await, Some(since))
            }
            Err(e) => (Err(e), None),
        };
        if let Some(since) = since {
            $self.observe(stringify!($f), since);
        }
        result
    }};
}
pub(crate) use on;

/// A connection to the store, alone or inside a transaction.
///
/// Outside a transaction ([`Store::session`]) every call commits on its own,
/// together with the statistics it counted. Inside one
/// ([`Store::transaction`]) nothing is visible to others, its statistics
/// included, until [`commit`](Self::commit); dropping the session rolls it
/// back, statistics and all.
pub struct Session {
    inner: Inner,
    store: Store,
    /// Whether the caller opened the transaction ([`Store::transaction`]).
    explicit: bool,
    /// Counts of the open transaction (the caller's, or the one a counting
    /// call opened for itself), journaled just before it commits.
    pending: Accumulator,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("transaction", &self.explicit)
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) async fn open(store: &Store, transaction: bool) -> Result<Self, Error> {
        let inner = if transaction {
            begin(store).await?
        } else {
            Inner::Idle
        };
        Ok(Self {
            inner,
            store: store.clone(),
            explicit: transaction,
            pending: Accumulator::default(),
        })
    }

    /// The connection, taken from the pool on first use.
    pub(crate) async fn exec(&mut self) -> Result<Exec<'_>, sqlx::Error> {
        if matches!(self.inner, Inner::Idle) {
            let since = std::time::Instant::now();
            let span = crate::observe::span(crate::observe::ACQUIRE, self.store.backend());
            self.inner = match &self.store.inner.db {
                crate::Db::Sqlite(p) => Inner::SqliteConn(p.acquire().instrument(span).await?),
                crate::Db::Postgres(p) => Inner::PgConn(p.acquire().instrument(span).await?),
            };
            self.observe(crate::observe::ACQUIRE, since);
        }
        Ok(match &mut self.inner {
            Inner::Idle => unreachable!("a connection was just taken"),
            Inner::SqliteConn(c) => Exec::Sqlite(c),
            Inner::SqliteTx(held) => {
                let locked = held.clone().lock_owned().await;
                match tokio::sync::OwnedMutexGuard::try_map(locked, |t| {
                    t.as_mut().map(|t| &mut *t.tx)
                }) {
                    Ok(c) => Exec::SqliteHeld(c),
                    Err(_) => return Err(rolled_back_by_watchdog()),
                }
            }
            Inner::PgConn(c) => Exec::Pg(c),
            Inner::PgTx(t) => Exec::Pg(t),
        })
    }

    /// Holds the writers' connection ([`crate::write_queue::writer_pool`])
    /// for an autocommit write on a SQLite write turn, in place of any
    /// pooled connection held so far.
    pub(crate) async fn take_writer(&mut self) -> Result<(), Error> {
        let Some(pool) = self.store.inner.sqlite_writer.clone() else {
            self.exec().await?;
            return Ok(());
        };
        if !matches!(self.inner, Inner::SqliteTx(_)) {
            self.inner = Inner::Idle;
            let since = std::time::Instant::now();
            let span = crate::observe::span(crate::observe::ACQUIRE, self.store.backend());
            self.inner =
                Inner::SqliteConn(crate::write_queue::writer(&pool).instrument(span).await?);
            self.observe(crate::observe::ACQUIRE, since);
        }
        Ok(())
    }

    /// Before a call that writes and counts: outside the caller's
    /// transaction, opens one for this call alone, so that its writes and
    /// its counts commit together or not at all. [`leave`](Self::leave)
    /// ends it.
    pub(crate) async fn enter(&mut self) -> Result<(), Error> {
        if !self.store.inner.stats {
            return Ok(());
        }
        self.enter_always().await
    }

    /// Like [`enter`](Self::enter), also when statistics are off: for a
    /// call whose writes must commit together whatever is counted.
    pub(crate) async fn enter_always(&mut self) -> Result<(), Error> {
        if self.explicit {
            return Ok(());
        }
        // A pooled connection held from an earlier call goes back first; the
        // transaction takes one of its own (usually the same).
        self.inner = Inner::Idle;
        self.inner = begin(&self.store).await?;
        Ok(())
    }

    /// After a call that counts. In the transaction [`enter`](Self::enter)
    /// opened: journals the counts and commits when the call succeeded,
    /// rolls back when it failed. Outside any transaction (a call whose
    /// counts follow a read, like a replayed HTTP response): journals them
    /// in a statement of their own. In the caller's transaction: nothing
    /// yet, [`commit`](Self::commit) does it.
    pub(crate) async fn leave<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if self.explicit {
            return result;
        }
        let implicit = matches!(self.inner, Inner::SqliteTx(..) | Inner::PgTx(_));
        if !implicit && !self.store.inner.stats {
            return result;
        }
        if result.is_err() {
            self.pending = Accumulator::default();
            if implicit {
                self.end_implicit(false).await?;
            }
            return result;
        }
        if let Err(e) = self.journal().await {
            if implicit {
                // Dropped, the transaction rolls back: the call's writes go
                // with the counts that could not be written.
                self.inner = Inner::Idle;
            }
            return Err(e);
        }
        if implicit {
            self.end_implicit(true).await?;
        }
        result
    }

    /// Commits or rolls back the transaction [`enter`](Self::enter) opened;
    /// a SQLite transaction's write turn goes with it, whatever the outcome.
    async fn end_implicit(&mut self, commit: bool) -> Result<(), Error> {
        let since = std::time::Instant::now();
        let span = crate::observe::span(end_op(commit), self.store.backend());
        let ended = match std::mem::replace(&mut self.inner, Inner::Idle) {
            Inner::SqliteTx(held) => end_sqlite(held, commit).instrument(span).await,
            Inner::PgTx(t) if commit => t
                .commit()
                .instrument(span)
                .await
                .map_err(Error::from_commit),
            Inner::PgTx(t) => t.rollback().instrument(span).await.map_err(Error::from),
            _ => return Ok(()),
        };
        self.observe(end_op(commit), since);
        ended
    }

    /// Appends the pending counts to the statistics journal.
    async fn journal(&mut self) -> Result<(), Error> {
        let pending = std::mem::take(&mut self.pending);
        for (minute, tenant, action, cell) in pending.cells() {
            on!(self.append_journal(tenant, minute, action, cell))?;
        }
        Ok(())
    }

    /// Makes the caller's PostgreSQL transaction read from one snapshot
    /// (repeatable read); must come before its first statement. SQLite's
    /// `begin immediate` already excludes every other writer.
    pub(crate) async fn snapshot(&mut self) -> Result<(), Error> {
        if let Inner::PgTx(t) = &mut self.inner {
            // A session setting, not a query of any table.
            sqlx::query("set transaction isolation level repeatable read")
                .execute(&mut **t)
                .await?;
        }
        Ok(())
    }

    fn now(&self) -> Millis {
        self.store.inner.clock.now_ms()
    }

    /// Tells the store's observer how long `op` took since `since`.
    pub(crate) fn observe(&self, op: &'static str, since: std::time::Instant) {
        crate::observe::report(
            self.store.inner.observer.as_deref(),
            op,
            self.store.backend(),
            since,
        );
    }

    /// Counts into the open transaction's pending statistics (journaled by
    /// [`leave`](Self::leave) or [`commit`](Self::commit)).
    pub(crate) fn note(&mut self, tenant: &TenantId, action: &str, f: impl FnOnce(&mut Cell)) {
        if self.store.inner.stats {
            let now = self.now();
            f(self.pending.cell(tenant.as_str(), action, now));
        }
    }

    /// Commits the transaction with the statistics it counted (a no-op
    /// outside one).
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn commit(mut self) -> Result<(), Error> {
        if self.explicit {
            self.journal().await?;
        }
        let since = std::time::Instant::now();
        let (store, inner) = (self.store, self.inner);
        let span = crate::observe::span(crate::observe::COMMIT, store.backend());
        match inner {
            Inner::SqliteTx(held) => end_sqlite(held, true).instrument(span).await?,
            Inner::PgTx(t) => t
                .commit()
                .instrument(span)
                .await
                .map_err(Error::from_commit)?,
            Inner::Idle | Inner::SqliteConn(_) | Inner::PgConn(_) => return Ok(()),
        }
        report_end(&store, true, since);
        Ok(())
    }

    /// Rolls the transaction back (a no-op outside one).
    pub async fn rollback(self) -> Result<(), Error> {
        let since = std::time::Instant::now();
        let (store, inner) = (self.store, self.inner);
        let span = crate::observe::span(crate::observe::ROLLBACK, store.backend());
        match inner {
            Inner::SqliteTx(held) => end_sqlite(held, false).instrument(span).await?,
            Inner::PgTx(t) => t.rollback().instrument(span).await?,
            Inner::Idle | Inner::SqliteConn(_) | Inner::PgConn(_) => return Ok(()),
        }
        report_end(&store, false, since);
        Ok(())
    }
}

/// The observer's name for a transaction's end.
fn end_op(commit: bool) -> &'static str {
    if commit {
        crate::observe::COMMIT
    } else {
        crate::observe::ROLLBACK
    }
}

/// Tells `store`'s observer a transaction ended, started at `since`.
fn report_end(store: &Store, commit: bool, since: std::time::Instant) {
    crate::observe::report(
        store.inner.observer.as_deref(),
        end_op(commit),
        store.backend(),
        since,
    );
}

/// Opens a transaction on a pooled connection. SQLite's is IMMEDIATE: it
/// takes the write lock up front, since a deferred transaction that reads
/// and then writes can fail with SQLITE_BUSY when another writer got in
/// between, and the busy timeout does not cover that. It waits for its
/// write turn ([`crate::gate`]) first, after it has its connection, and
/// keeps the turn in the transaction it returns, until that ends.
///
/// SQLite's is opened in a task of its own: sqlx's `begin` with a custom
/// statement awaits once more after the `begin immediate` has run, and a
/// caller cancelled at that point (a client that went away) would drop a
/// connection that is inside a transaction no `Transaction` owns. It went
/// back to the pool holding the write lock, and every writer of the file
/// then failed busy until the process restarted. The task finishes the
/// opening whatever happens to the caller, so the transaction always has an
/// owner whose drop rolls it back.
async fn begin(store: &Store) -> Result<Inner, Error> {
    let since = std::time::Instant::now();
    let opened = open_transaction(store)
        .instrument(crate::observe::span(crate::observe::OPEN, store.backend()))
        .await;
    if opened.is_ok() {
        crate::observe::report(
            store.inner.observer.as_deref(),
            crate::observe::OPEN,
            store.backend(),
            since,
        );
    }
    opened
}

async fn open_transaction(store: &Store) -> Result<Inner, Error> {
    Ok(match &store.inner.db {
        crate::Db::Sqlite(p) => {
            let pool = store
                .inner
                .sqlite_writer
                .clone()
                .unwrap_or_else(|| p.clone());
            let gate = store.inner.writers.clone();
            let (mut reply, answer) =
                tokio::sync::oneshot::channel::<Result<Held<SqliteTx>, Error>>();
            tokio::spawn(async move {
                // Until the transaction begins, a caller that left takes its
                // place in line with it: a storm of clients that give up
                // leaves no queue of openings that would each take the
                // writers' connection and turn only to roll back.
                let ready = tokio::select! {
                    () = reply.closed() => return,
                    ready = async {
                        let conn = crate::write_queue::writer(&pool).await?;
                        let turn = gate.turn().await?;
                        Ok::<_, Error>((conn, turn))
                    } => ready,
                };
                let opened = match ready {
                    Ok(_) if reply.is_closed() => return,
                    Ok((conn, turn)) => begin_immediate(conn, turn).await,
                    Err(e) => Err(e),
                };
                // Sent to a caller that left, the transaction comes back and
                // is dropped here, which rolls it back.
                let _ = reply.send(opened);
            });
            let held = answer.await.map_err(|_| {
                Error::Unavailable("opening a transaction failed: its task ended".into())
            })??;
            Inner::SqliteTx(held)
        }
        crate::Db::Postgres(p) => Inner::PgTx(p.begin().await?),
    })
}

/// Begins SQLite's IMMEDIATE transaction on `conn` during `turn`, where the
/// watchdog can end it. `Transaction::begin` is what `Pool::begin_with` runs
/// on the connection it acquires; called here, the turn is taken between
/// the two.
async fn begin_immediate(
    conn: PoolConnection<Sqlite>,
    turn: Turn,
) -> Result<Held<SqliteTx>, Error> {
    let tx = Transaction::begin(conn, Some("begin immediate".into())).await?;
    let held: Held<SqliteTx> = std::sync::Arc::new(tokio::sync::Mutex::new(None));
    turn.hold(&held, |t: SqliteTx| {
        Box::pin(async move {
            if let Err(e) = t.tx.rollback().await {
                tracing::error!(error = %e, "rolling back a transaction held past its bound failed; its connection closes");
            }
        })
    });
    *held.lock().await = Some(SqliteTx { tx, _turn: turn });
    Ok(held)
}

/// Commits or rolls back a SQLite transaction, unless the watchdog rolled
/// it back already (then a commit is refused: nothing of it was kept).
async fn end_sqlite(held: Held<SqliteTx>, commit: bool) -> Result<(), Error> {
    let taken = held.lock().await.take();
    match taken {
        Some(t) if commit => t.tx.commit().await.map_err(Error::from_commit),
        Some(t) => t.tx.rollback().await.map_err(Error::from),
        None if commit => Err(Error::Unavailable(
            "the write transaction held the database past its bound and was rolled back; nothing of it was kept, retry"
                .into(),
        )),
        None => Ok(()),
    }
}

/// A statement asked of a transaction the watchdog rolled back.
fn rolled_back_by_watchdog() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the write transaction held the database past its bound and was rolled back",
    ))
}

// The operations, one module per concern; each adds to `impl Session`.
mod actions;
mod alerts;
mod demo;
mod events;
mod http_keys;
mod intents;
mod live;
mod mcp;
mod scenarios;
mod settings;
mod webhooks;

/// Statistics of one delivery.
pub(crate) fn count_delivery(c: &mut Cell, r: &RecordedIntent, now: Millis) {
    c.counts.deliveries += 1;
    if r.inserted {
        c.counts.intents += 1;
    } else {
        c.counts.redeliveries += 1;
        if r.deliveries == 2 {
            c.counts.redelivered_intents += 1;
        }
        c.delay(now - r.first_seen_ms);
    }
    if r.diverged {
        c.counts.divergences += 1;
    }
}

/// A candidate intent, normalized and keyed.
pub(crate) struct Candidate {
    pub reference: String,
    pub key: IdempotencyKey,
    pub rules_version: RulesVersion,
    pub payload: NormalizedPayload,
    /// The candidate's JSON text as sent, frozen with the intent.
    pub source: Option<String>,
}

impl Candidate {
    pub(crate) fn write_parts<'a>(
        &'a self,
        tenant: &'a TenantId,
        action: &'a str,
        json: &'a str,
    ) -> IntentWrite<'a> {
        IntentWrite {
            tenant: tenant.as_str(),
            reference: &self.reference,
            action,
            rules_version: i32::try_from(self.rules_version.number()).unwrap_or(i32::MAX),
            key: self.key.as_str(),
            payload: json,
            candidate: self.source.as_deref(),
        }
    }

    /// What this delivery learned; `n` is how many identical deliveries the
    /// row write stood for and `nth` (0-based) which of them this one was.
    pub(crate) fn recorded_nth(
        &self,
        row: &IntentRow,
        json: &str,
        n: i64,
        nth: i64,
    ) -> Result<RecordedIntent, Error> {
        let inserted = row.deliveries == n && nth == 0;
        Ok(RecordedIntent {
            reference: self.reference.clone(),
            key: stored_key(&row.idem_key)?,
            rules_version: rules_version(row.rules_version)?,
            payload: if row.payload == json {
                self.payload.clone()
            } else {
                stored_payload(&row.payload)?
            },
            revision: row.revision,
            deliveries: row.deliveries - n + 1 + nth,
            divergences: row.divergences,
            first_seen_ms: row.first_seen_ms,
            last_seen_ms: row.last_seen_ms,
            candidate: row.candidate.clone(),
            inserted,
            diverged: row.payload != json,
            candidate_key: self.key.clone(),
        })
    }

    fn recorded(&self, row: IntentRow, json: &str, n: i64) -> Result<RecordedIntent, Error> {
        self.recorded_nth(&row, json, n, 0)
    }
}

fn stored_key(k: &str) -> Result<IdempotencyKey, Error> {
    IdempotencyKey::try_from(k).map_err(|_| Error::Corrupt("stored key".into()))
}

fn stored_payload(p: &str) -> Result<NormalizedPayload, Error> {
    NormalizedPayload::from_json(p).map_err(|_| Error::Corrupt("stored payload".into()))
}

fn rules_version(v: i32) -> Result<RulesVersion, Error> {
    u32::try_from(v)
        .ok()
        .and_then(|v| RulesVersion::try_from(v).ok())
        .ok_or_else(|| Error::Corrupt(format!("stored rules version {v}")))
}

impl TryFrom<IntentRow> for Intent {
    type Error = Error;
    fn try_from(row: IntentRow) -> Result<Self, Error> {
        Ok(Intent {
            key: stored_key(&row.idem_key)?,
            rules_version: rules_version(row.rules_version)?,
            payload: stored_payload(&row.payload)?,
            revision: row.revision,
            deliveries: row.deliveries,
            divergences: row.divergences,
            first_seen_ms: row.first_seen_ms,
            last_seen_ms: row.last_seen_ms,
            candidate: row.candidate,
        })
    }
}

impl TryFrom<HistoryRow> for IntentVersion {
    type Error = Error;
    fn try_from(row: HistoryRow) -> Result<Self, Error> {
        Ok(IntentVersion {
            revision: row.revision,
            rules_version: rules_version(row.rules_version)?,
            key: stored_key(&row.idem_key)?,
            payload: stored_payload(&row.payload)?,
            replaced_ms: row.replaced_ms,
            reason: row.reason,
        })
    }
}

impl TryFrom<ActionRow> for Action {
    type Error = Error;
    fn try_from(row: ActionRow) -> Result<Self, Error> {
        Ok(Action {
            state: row.state,
            action: row.action,
            token: row.fencing_token,
            attempts: row.attempts,
            lease_until_ms: row.lease_until_ms,
            started_ms: row.started_ms,
            updated_ms: row.updated_ms,
            response: row.response,
            error: row.error,
            retryable: row.retryable,
            reconciled: row.reconciled,
            swept_ms: row.swept_ms,
        })
    }
}

/// Reads a successful claim.
fn claimed(row: BeginRow) -> Result<Begin, Error> {
    let lease_until_ms = row
        .lease_until_ms
        .ok_or_else(|| Error::Corrupt("a claim without a lease".into()))?;
    Ok(match (row.state, row.prev_token) {
        (ActionState::Uncertain, Some(prev)) => Begin::Uncertain {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            previous: PreviousAttempt {
                token: prev,
                started_ms: row.prev_started_ms.unwrap_or_default(),
                lease_until_ms: row.prev_lease_until_ms,
            },
        },
        (ActionState::Started, _) => Begin::Claimed {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            // Only a retry after a retryable failure carries one.
            previous_error: if row.prev_state.as_deref() == Some("failed") {
                row.prev_error
            } else {
                None
            },
        },
        (state, _) => {
            return Err(Error::Corrupt(format!(
                "claim returned state {:?}",
                state.as_str()
            )))
        }
    })
}

/// A unique violation inside a correction means another correction of the
/// same revision won.
fn conflict_on_unique(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => Error::ConcurrentCorrection,
        _ => Error::Database(e),
    }
}
