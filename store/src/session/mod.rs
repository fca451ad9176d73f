//! [`Session`]: every store operation, on a pooled connection (each call
//! commits on its own) or inside a transaction the caller commits.

use crate::backend::{ActionRow, BeginRow, HistoryRow, IntentRow, IntentWrite};
use crate::clock::duration_ms;
use crate::model::*;
use crate::stats::{Accumulator, Cell};
use crate::{Error, Store};
use idem_core::{ActionType, IdempotencyKey, NormalizedPayload, Payload, RulesVersion, TenantId};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres, Sqlite, SqliteConnection, Transaction};
use std::time::Duration;

/// The connection a session runs on.
enum Inner {
    SqliteConn(PoolConnection<Sqlite>),
    SqliteTx(Transaction<'static, Sqlite>),
    PgConn(PoolConnection<Postgres>),
    PgTx(Transaction<'static, Postgres>),
}

/// A borrowed connection of either backend.
pub(crate) enum Exec<'a> {
    Sqlite(&'a mut SqliteConnection),
    Pg(&'a mut PgConnection),
}

/// Runs one backend function on whichever backend the session holds.
macro_rules! on {
    ($self:ident . $f:ident ( $($arg:expr),* $(,)? )) => {
        match $self.exec() {
            $crate::session::Exec::Sqlite(c) => $crate::backend::sqlite::$f(c, $($arg),*).await,
            $crate::session::Exec::Pg(c) => $crate::backend::pg::$f(c, $($arg),*).await,
        }
    };
}
pub(crate) use on;

/// A connection to the store, alone or inside a transaction.
///
/// Outside a transaction ([`Store::session`]) every call commits on its own.
/// Inside one ([`Store::transaction`]) nothing is visible to others, and the
/// statistics it produced are not counted, until [`commit`](Self::commit);
/// dropping the session rolls it back.
pub struct Session {
    inner: Inner,
    store: Store,
    /// Statistics of an open transaction, counted on commit.
    pending: Option<Accumulator>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("transaction", &self.pending.is_some())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) async fn open(store: &Store, transaction: bool) -> Result<Self, Error> {
        let inner = match (&store.inner.db, transaction) {
            (crate::Db::Sqlite(p), false) => Inner::SqliteConn(p.acquire().await?),
            // IMMEDIATE takes the write lock up front: a deferred transaction
            // that reads and then writes can fail with SQLITE_BUSY when another
            // writer got in between, and the busy timeout does not cover that.
            (crate::Db::Sqlite(p), true) => Inner::SqliteTx(p.begin_with("begin immediate").await?),
            (crate::Db::Postgres(p), false) => Inner::PgConn(p.acquire().await?),
            (crate::Db::Postgres(p), true) => Inner::PgTx(p.begin().await?),
        };
        Ok(Self {
            inner,
            store: store.clone(),
            pending: transaction.then(Accumulator::default),
        })
    }

    pub(crate) fn exec(&mut self) -> Exec<'_> {
        match &mut self.inner {
            Inner::SqliteConn(c) => Exec::Sqlite(c),
            Inner::SqliteTx(t) => Exec::Sqlite(t),
            Inner::PgConn(c) => Exec::Pg(c),
            Inner::PgTx(t) => Exec::Pg(t),
        }
    }

    fn now(&self) -> Millis {
        self.store.inner.clock.now_ms()
    }

    /// Counts into the transaction's pending statistics, or straight into the
    /// store's accumulator outside a transaction.
    fn note(&mut self, tenant: &TenantId, action: &str, f: impl FnOnce(&mut Cell)) {
        let now = self.now();
        match &mut self.pending {
            Some(acc) => f(acc.cell(tenant.as_str(), action, now)),
            None => self.store.count(tenant.as_str(), action, now, f),
        }
    }

    /// Commits the transaction (a no-op outside one) and counts its statistics.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn commit(self) -> Result<(), Error> {
        match self.inner {
            Inner::SqliteTx(t) => t.commit().await?,
            Inner::PgTx(t) => t.commit().await?,
            Inner::SqliteConn(_) | Inner::PgConn(_) => {}
        }
        if let Some(acc) = self.pending {
            self.store.merge_counts(acc);
        }
        Ok(())
    }

    /// Rolls the transaction back (a no-op outside one).
    pub async fn rollback(self) -> Result<(), Error> {
        match self.inner {
            Inner::SqliteTx(t) => t.rollback().await?,
            Inner::PgTx(t) => t.rollback().await?,
            Inner::SqliteConn(_) | Inner::PgConn(_) => {}
        }
        Ok(())
    }
}

// The operations, one module per concern; each adds to `impl Session`.
mod actions;
mod demo;
mod events;
mod http_keys;
mod intents;
mod live;
mod scenarios;
mod settings;

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
            state: ActionState::parse(&row.state)
                .ok_or_else(|| Error::Corrupt(format!("action state {:?}", row.state)))?,
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
        })
    }
}

/// Reads a successful claim.
fn claimed(row: BeginRow) -> Result<Begin, Error> {
    let lease_until_ms = row
        .lease_until_ms
        .ok_or_else(|| Error::Corrupt("a claim without a lease".into()))?;
    Ok(match (row.state.as_str(), row.prev_token) {
        ("uncertain", Some(prev)) => Begin::Uncertain {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            previous: PreviousAttempt {
                token: prev,
                started_ms: row.prev_started_ms.unwrap_or_default(),
                lease_until_ms: row.prev_lease_until_ms,
            },
        },
        ("started", _) => Begin::Claimed {
            token: row.fencing_token,
            attempt: row.attempts,
            lease_until_ms,
            // Only a retry after a retryable failure carries one.
            previous_error: if row.prev_state.as_deref() == Some("failed") {
                row.error
            } else {
                None
            },
        },
        (state, _) => return Err(Error::Corrupt(format!("claim returned state {state:?}"))),
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
