//! idem-store: the intent store, over SQLite (the embedded default) or
//! PostgreSQL (production), chosen from the database URL.
//!
//! "Record the intent before acting" and "the primary key decides, not an
//! if" live here: [`Session::record_intent`] is one upsert whose conflict
//! target is the intent's primary key, [`Session::begin_action`] one upsert
//! on the action's, and every statement is scoped to one tenant.
//!
//! # A charge that runs once
//!
//! A worker that may see the same message twice records the intent first,
//! claims the action under the key derived from the frozen payload, acts,
//! and records the outcome. A redelivery then finds the outcome instead of
//! acting again:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use idem_core::{ActionType, Catalog, KeyDeriver, Payload, Secret, TenantId};
//! use idem_store::{Begin, Options, Store};
//! use std::{sync::Arc, time::Duration};
//!
//! # let dir = tempfile::tempdir()?;
//! # let url = format!("sqlite://{}", dir.path().join("idem.db").display());
//! // Every service that derives keys shares this secret.
//! let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
//! let store = Store::connect(&url, Options::new(Arc::new(Catalog::builtin()), deriver)).await?;
//! store.migrate().await?;
//!
//! let tenant = TenantId::try_from("acme")?;
//! let action = ActionType::try_from("pix.cobranca")?;
//! let message = r#"{"cliente_id": "c-1", "valor": "180.00",
//!     "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}"#;
//!
//! for delivery in 1..=2 {
//!     // 1. Record the intent before acting: the first delivery freezes it.
//!     let intent = store.record_intent(&tenant, action.as_str(), &Payload::from_json(message)?).await?;
//!     assert_eq!(intent.inserted, delivery == 1);
//!
//!     // 2. Claim the side effect under the frozen intent's key.
//!     match store.begin_action(&tenant, &action, &intent.key, Duration::from_secs(30)).await? {
//!         Begin::Claimed { token, .. } => {
//!             // 3. Call the provider with `intent.key` as its idempotency key...
//!             let receipt = r#"{"charge_id": "ch_1"}"#;
//!             // ...and record what it answered, under the claim's fencing token.
//!             store.session().await?.complete(&tenant, &intent.key, token, receipt).await?;
//!         }
//!         // The redelivery: the stored answer, byte for byte, and no second charge.
//!         Begin::Completed { response, .. } => assert_eq!(response, r#"{"charge_id": "ch_1"}"#),
//!         other => panic!("not expected here: {other:?}"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The other outcomes of a claim are in [`Begin`]: another worker holds the
//! lease ([`Begin::InFlight`]), the action failed for good
//! ([`Begin::Failed`]), or an attempt started and its outcome is unknown
//! ([`Begin::Uncertain`]), settled with [`Session::reconcile`].

mod backend;
mod batch;
mod checkpoint;
mod clock;
mod expiring;
mod facts;
mod faults;
mod maintenance;
mod model;
pub mod observe;
mod session;
pub mod sql;
pub mod stats;
mod tenants;
mod write_queue;

pub use clock::{Clock, ManualClock, SystemClock};
pub use maintenance::{Chore, PurgeReport};
pub use model::*;
pub use observe::Observer;
pub use session::Session;
pub use tenants::{token_hash, ApiToken, SessionId, SessionOwner, TenantInfo};
pub use write_queue::MAX_WRITE_TRANSACTION;

use idem_core::{Catalog, IdempotencyKey, KeyDeriver, Payload, TenantId};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use stats::{Accumulator, Granularity};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Store errors. Database details stay in the logs; callers see the kind.
/// A database failure keeps the driver's error as its `source`, so a log
/// line can show the cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The row asked for does not exist (for this tenant).
    #[error("not found")]
    NotFound,
    /// A fencing token that is not the current claim's: a newer claim holds
    /// the action (or it was settled with another answer).
    #[error(
        "fencing token {token} is not the current claim (current token {current}, state {state})"
    )]
    StaleToken {
        /// The token presented.
        token: i64,
        /// The current claim's token.
        current: i64,
        /// The action's state.
        state: String,
    },
    /// The claim's lease ran out before it was renewed: another claim may
    /// take it over, so the holder no longer holds it.
    #[error("the lease of fencing token {token} ran out: the claim is no longer held")]
    LeaseLost {
        /// The token presented.
        token: i64,
    },
    /// The action changed state again and again while being claimed.
    #[error("the action changed state three times while being claimed; retry")]
    ClaimContended,
    /// Another correction of the same intent landed first.
    #[error("another correction of this intent landed first; read it and retry")]
    ConcurrentCorrection,
    /// An Idempotency-Key record is no longer held by this request (its lock
    /// ran out and another request took it, or it was completed already).
    #[error("the key is not in progress for this request")]
    HttpKeyNotHeld,
    /// A tenant of that id exists already.
    #[error("tenant {0} already exists")]
    TenantExists(String),
    /// The token is live but its tenant is disabled (`idem tenant disable`).
    #[error("tenant {0} is disabled")]
    TenantDisabled(String),
    /// A saved scenario's or comparison's id already names other content.
    #[error("saved id {0} already names another saved scenario or comparison")]
    ScenarioIdTaken(String),
    /// The input cannot be recorded (unknown action, bad payload, ...).
    #[error("{0}")]
    Invalid(String),
    /// The database URL is not one idem understands.
    #[error("unsupported database URL: {0}")]
    Url(String),
    /// Applying migrations failed.
    #[error("migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be read back: a bug or tampering, not an
    /// outage, so the API answers 500 and logs it as corruption.
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// The database failed or could not be reached.
    #[error("database error")]
    Database(#[source] sqlx::Error),
    /// The connection failed while a commit was on its way: the database
    /// may or may not have made the transaction durable. Never "not done":
    /// the caller retries with the same key, which cannot act twice.
    #[error("the outcome of the commit is unknown")]
    OutcomeUnknown(#[source] sqlx::Error),
    /// A coalesced write failed; every caller in it gets the same error.
    #[error("database error")]
    Shared(#[source] Arc<sqlx::Error>),
    /// The store is shutting down.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// An intent whose action is not failed cannot be superseded: started
    /// without a known outcome, uncertain or completed, the effect may have
    /// run (or did), and a new key would run it again.
    #[error("the intent's action is {0}: only an action that failed (nothing executed) can be superseded")]
    NotSupersedable(String),
    /// This database was set up with another HMAC secret: this instance
    /// would derive other keys for the same intents.
    #[error("this database was set up with another HMAC secret")]
    SecretMismatch,
}

impl Error {
    /// Whether this is a conflict with what is stored (a 409 at the API).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Error::StaleToken { .. }
                | Error::LeaseLost { .. }
                | Error::ClaimContended
                | Error::ConcurrentCorrection
                | Error::NotSupersedable(_)
                | Error::HttpKeyNotHeld
                | Error::TenantExists(_)
                | Error::ScenarioIdTaken(_)
        )
    }

    /// Whether the database refused text it cannot hold: PostgreSQL keeps
    /// no NUL character in `text` (SQLSTATE 22021) nor one its encoding
    /// lacks (22P05). The input is at fault, not the database: a 422 at
    /// the API, never a "retry later".
    pub fn is_unstorable_text(&self) -> bool {
        matches!(self.sqlstate().as_deref(), Some("22021" | "22P05"))
    }

    /// Whether the database refused a value for its size: a text too long
    /// for an index entry (PostgreSQL's 54000, about 2,700 bytes in a
    /// B-tree) or for its column (22001), a number out of its range
    /// (22003). Every limit idem documents is checked before a statement
    /// runs, far below these; this is the net under them, so a value that
    /// slips through is still the client's 422, never a retryable 503.
    pub fn is_too_large_for_the_database(&self) -> bool {
        matches!(
            self.sqlstate().as_deref(),
            Some("54000" | "22001" | "22003")
        )
    }

    fn sqlstate(&self) -> Option<std::borrow::Cow<'_, str>> {
        let db = match self {
            Error::Database(sqlx::Error::Database(d)) => d,
            Error::Shared(e) => match e.as_ref() {
                sqlx::Error::Database(d) => d,
                _ => return None,
            },
            _ => return None,
        };
        db.code()
    }
}

/// The longest intent reference, in characters: a business reference (an
/// invoice, an order), and far below what PostgreSQL's primary-key index
/// holds (about 2,700 bytes), so both backends refuse the same text, as
/// the client's error it is.
pub const MAX_REFERENCE_CHARS: usize = 255;

/// The longest customer (the catalog's `customer` field), in characters:
/// an id or a name, shown on the monitor and in its exports.
pub const MAX_CUSTOMER_CHARS: usize = 255;

/// The reserved tenant deployment-wide rows live under.
const DEPLOYMENT_TENANT: &str = "_deployment";

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        faults::observe(&e);
        match e {
            // A stored value the store cannot read back (a state no state
            // machine has) is corrupt data, not an unreachable database.
            sqlx::Error::ColumnDecode { index, source } => {
                Error::Corrupt(format!("stored column {index}: {source}"))
            }
            e => Error::Database(e),
        }
    }
}

impl Error {
    /// The error of a commit (or of a statement that commits by itself):
    /// a failed connection leaves its outcome unknown, while a refusal by
    /// the database (a constraint, a read-only standby) means it did not
    /// happen.
    pub(crate) fn from_commit(e: sqlx::Error) -> Self {
        faults::observe(&e);
        match e {
            sqlx::Error::Database(_) => Error::Database(e),
            e if faults::is_connection_fault(&e) => Error::OutcomeUnknown(e),
            e => Error::Database(e),
        }
    }

    /// Whether the operation may have taken effect although it failed
    /// ([`Error::OutcomeUnknown`], or a coalesced write whose connection
    /// failed mid-statement).
    pub fn is_outcome_unknown(&self) -> bool {
        match self {
            Error::OutcomeUnknown(_) => true,
            Error::Shared(e) => {
                !matches!(e.as_ref(), sqlx::Error::Database(_)) && faults::is_connection_fault(e)
            }
            _ => false,
        }
    }
}

impl From<idem_core::Error> for Error {
    fn from(e: idem_core::Error) -> Self {
        Error::Invalid(e.to_string())
    }
}

/// The backend in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file, WAL mode.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

#[derive(Debug, Clone)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// How the store is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// The action catalog keys are derived with.
    pub catalog: Arc<Catalog>,
    /// The keyed HMAC; `None` for admin work (migrate, purge, statistics)
    /// that never derives a key.
    pub deriver: Option<Arc<KeyDeriver>>,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
    /// Whether to keep live statistics (on by default; off only to measure
    /// what they cost). On, every counted write also appends its counts to
    /// the statistics journal in its own transaction. On SQLite the intents
    /// table's triggers journal deliveries whatever this says.
    pub stats: bool,
    /// How often a background task folds the statistics journal into the
    /// rollups (`None`: only when [`Store::flush_stats`] is called; reads
    /// fold first either way).
    pub flush_every: Option<Duration>,
    /// Send `Store::record_intent` through the intent writer: dedicated
    /// connections, concurrent calls coalesced (one statement on Postgres,
    /// one transaction on SQLite). Off: each call takes a pooled connection.
    pub coalesce: bool,
    /// Largest connection pool.
    pub max_connections: u32,
    /// How long a caller waits for a pooled connection, opening a new one
    /// included (sqlx connects inside the acquire): this is also the
    /// connect timeout, so a database host that vanished cannot hold a
    /// request longer.
    pub acquire_timeout: Duration,
    /// PostgreSQL: the server ends any statement running longer
    /// (`statement_timeout`; `None`: no limit).
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: commit without waiting for the WAL flush
    /// (`synchronous_commit=off`). Only for a writer whose lost commits are
    /// redone, never a loss: the outbox relay, whose database crash can only
    /// make it send a message again (receivers dedupe on `webhook-id`).
    pub async_commit: bool,
    /// SQLite: how long one transaction may hold the write lock before it
    /// is rolled back and logged ([`MAX_WRITE_TRANSACTION`] by default).
    /// Every other writer of the file waits meanwhile, so this bounds how
    /// long one stalled holder can stop the store.
    pub max_write_transaction: Duration,
    /// Told how long each statement, transaction and batch took (`None`:
    /// nothing is timed).
    pub observer: Option<Arc<dyn Observer>>,
}

impl Options {
    /// Defaults: system clock, statistics flushed every half second (the
    /// live monitor shows a write within two seconds of it), coalescing on.
    pub fn new(catalog: Arc<Catalog>, deriver: Arc<KeyDeriver>) -> Self {
        Self {
            catalog,
            deriver: Some(deriver),
            ..Self::admin()
        }
    }

    /// For admin commands that never record intents: no key secret needed.
    pub fn admin() -> Self {
        Self {
            catalog: Arc::new(Catalog::builtin()),
            deriver: None,
            clock: Arc::new(SystemClock),
            stats: true,
            flush_every: Some(Duration::from_millis(500)),
            coalesce: true,
            max_connections: 32,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Some(Duration::from_secs(30)),
            async_commit: false,
            max_write_transaction: MAX_WRITE_TRANSACTION,
            observer: None,
        }
    }
}

pub(crate) struct Inner {
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    catalog: Arc<Catalog>,
    deriver: Option<Arc<KeyDeriver>>,
    pub(crate) stats: bool,
    /// One fold at a time in this process (another process's fold of the
    /// same rows waits on their row locks instead).
    flush: tokio::sync::Mutex<()>,
    pub batcher: Option<Arc<batch::Batcher>>,
    pub(crate) tokens: tenants::TokenCache,
    /// What the monitor read of uncertain keys' intents.
    pub(crate) facts: facts::FactsCache,
    /// SQLite's writers in arrival order (unused on PostgreSQL).
    pub(crate) writers: write_queue::WriteQueue,
    /// SQLite: the one connection that writes on a turn (see
    /// [`write_queue::writer_pool`]); None on PostgreSQL.
    pub(crate) sqlite_writer: Option<SqlitePool>,
    /// SQLite: tells the checkpoint task the store closed.
    checkpoint_stop: Arc<tokio::sync::Notify>,
    /// SQLite: the longest a transaction may hold the write lock.
    pub(crate) max_write_transaction: Duration,
    /// The last readiness probe and when it ran ([`Store::writable`]).
    pub(crate) readiness: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
    /// This process among a deployment's instances, as chore leases name
    /// their holder: the host, the pid and a random part, so a restarted
    /// process on a reused pid is a new holder.
    pub(crate) instance: String,
    /// Who is told how long each operation took.
    pub(crate) observer: Option<Arc<dyn Observer>>,
}

/// Commits without waiting for the WAL flush on this connection, unless the
/// server replicates synchronously (`synchronous_standby_names` set, as
/// Patroni's synchronous mode does): there an unflushed commit is also one
/// the standby may not have, and a failover would lose it. The relay, the
/// one writer that asks, can afford to send a message again but not to
/// undo the cluster's promise that an acknowledged commit survives a
/// failover, so on such a server it commits synchronously like the rest.
async fn relaxed_commit(c: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    let (names,): (String,) = sqlx::query_as("select current_setting('synchronous_standby_names')")
        .fetch_one(&mut *c)
        .await?;
    if names.trim().is_empty() {
        sqlx::query("set synchronous_commit = off")
            .execute(&mut *c)
            .await?;
    } else {
        tracing::debug!("synchronous replication is on: this connection commits synchronously");
    }
    Ok(())
}

/// The SQLite pool's check of a connection coming back: one still inside a
/// transaction is closed (SQLite rolls back an open transaction when its
/// connection closes) instead of going back to the pool holding the write
/// lock, where every writer of the file would wait on it for good. A
/// dropped `Transaction` queues its rollback on the connection's worker,
/// so a connection that reads as in a transaction is asked once more after
/// the worker has run what was queued.
pub(crate) async fn released_outside_a_transaction(
    c: &mut sqlx::SqliteConnection,
) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    if !c.is_in_transaction() {
        return Ok(true);
    }
    // A round trip to the worker, behind whatever it had queued.
    drop(c.lock_handle().await?);
    if c.is_in_transaction() {
        tracing::error!("a SQLite connection came back to the pool inside a transaction: closing it, which rolls the transaction back");
        return Ok(false);
    }
    Ok(true)
}

/// Whether a statement failed because its table does not exist (yet).
fn missing_table(e: &sqlx::Error) -> bool {
    match e {
        // PostgreSQL's undefined_table; SQLite says it in words.
        sqlx::Error::Database(d) => {
            d.code().as_deref() == Some("42P01") || d.message().contains("no such table")
        }
        _ => false,
    }
}

/// Takes a tenant's journal rows in `tx` (one batch, or every one with
/// `all`) and adds them to the rollups. With `recounted_from`, buckets from
/// that instant on keep only what no recount can tell (the caller recounts
/// the rest). Returns how many rows it took.
async fn fold_in(
    tx: &mut Session,
    tenant: &str,
    all: bool,
    recounted_from: Option<Millis>,
) -> Result<usize, Error> {
    let mut acc = Accumulator::default();
    let mut taken = 0;
    loop {
        let rows = session::on!(tx.take_journal(tenant, FOLD_BATCH))?;
        for row in &rows {
            acc.add_journal(tenant, row);
        }
        taken += rows.len();
        if !all || rows.len() < FOLD_BATCH as usize {
            break;
        }
    }
    for ((tenant, g, start, action), mut cell) in acc.sorted_rollups() {
        if recounted_from.is_some_and(|since| start >= since) {
            cell.counts = cell.counts.unrecountable();
        }
        session::on!(tx.flush_cell(&tenant, g, start, &action, &cell))?;
    }
    Ok(taken)
}

/// Most journal rows one fold transaction takes.
const FOLD_BATCH: i64 = 5_000;

/// A handle to the store: cheap to clone, one pool underneath.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Connects to `sqlite://path` (created when missing) or `postgres://...`.
    ///
    /// SQLite runs in WAL mode with `synchronous=NORMAL` unless the URL says
    /// `?synchronous=full`: NORMAL survives a crash of idem, and a power cut
    /// may lose the last commits but never corrupts the file; FULL makes
    /// every commit durable at several times the cost.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use idem_core::{Catalog, KeyDeriver, Secret};
    /// use idem_store::{Backend, Options, Store};
    /// use std::sync::Arc;
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("idem.db");
    /// let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
    /// let options = Options::new(Arc::new(Catalog::builtin()), deriver);
    /// let store = Store::connect(&format!("sqlite://{}", path.display()), options).await?;
    /// store.migrate().await?;
    /// assert_eq!(store.backend(), Backend::Sqlite);
    /// # Ok(())
    /// # }
    /// ```
    #[tracing::instrument(skip_all, fields(backend))]
    pub async fn connect(url: &str, options: Options) -> Result<Self, Error> {
        let mut sqlite_writer = None;
        let mut checkpointer = None;
        let (db, target) = if url.starts_with("sqlite:") {
            tracing::Span::current().record("backend", "sqlite");
            let (url, sync) = sqlite_sync(url)?;
            let opts = SqliteConnectOptions::from_str(&url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(sync)
                .busy_timeout(Duration::from_secs(5))
                .foreign_keys(true)
                // The store's own task checkpoints (see `checkpoint`).
                .pragma("wal_autocheckpoint", checkpoint::BACKSTOP_PAGES.to_string());
            checkpointer = Some(opts.clone());
            let pool = SqlitePoolOptions::new()
                .max_connections(options.max_connections.clamp(1, 8))
                // A local file does not drop connections; sqlx's default ping
                // on every acquire would double the cost of each call.
                .test_before_acquire(false)
                .after_release(|c, _| Box::pin(released_outside_a_transaction(c)))
                .connect_with(opts.clone())
                .await?;
            sqlite_writer = Some(write_queue::writer_pool(opts.clone()));
            (Db::Sqlite(pool), batch::Target::Sqlite(opts))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            tracing::Span::current().record("backend", "postgres");
            let mut opts = PgConnectOptions::from_str(url)?;
            if let Some(t) = options.statement_timeout.filter(|t| !t.is_zero()) {
                opts = opts.options([("statement_timeout", t.as_millis().to_string())]);
            }
            let async_commit = options.async_commit;
            let pool = PgPoolOptions::new()
                .max_connections(options.max_connections.max(1))
                // No ping round trip before every call: a dead connection
                // fails its statement, the caller gets an error (never a
                // wrong answer) and the pool replaces it.
                .test_before_acquire(false)
                .acquire_timeout(options.acquire_timeout)
                // After a failover, connections opened before the fault may
                // reach a standby or a server that ended them: retired.
                .before_acquire(|_, meta| {
                    Box::pin(async move { Ok(!faults::opened_before_last_fault(meta.age)) })
                })
                .after_connect(move |c, _| {
                    Box::pin(async move {
                        if async_commit {
                            relaxed_commit(c).await?;
                        }
                        Ok(())
                    })
                })
                .connect_with(opts.clone())
                .await?;
            // The intent writer's statement is planned once per connection:
            // its plan does not depend on the batch's values, and replanning
            // the counted CTE (0.2 ms) would cost more than running it.
            let writer = opts
                .clone()
                .options([("plan_cache_mode", "force_generic_plan")]);
            (Db::Postgres(pool), batch::Target::Postgres(writer))
        } else {
            return Err(Error::Url("expected sqlite://… or postgres://…".into()));
        };
        let gate = write_queue::WriteQueue::default();
        let sqlite = matches!(db, Db::Sqlite(_));
        let batcher = options.coalesce.then(|| {
            Arc::new(batch::Batcher::new(
                target,
                options.stats,
                gate.clone(),
                options.observer.clone(),
                options.acquire_timeout,
            ))
        });
        let store = Store {
            inner: Arc::new(Inner {
                db,
                clock: options.clock,
                catalog: options.catalog,
                deriver: options.deriver,
                stats: options.stats,
                flush: tokio::sync::Mutex::new(()),
                batcher,
                tokens: tenants::token_cache(),
                facts: facts::FactsCache::new(),
                writers: gate,
                sqlite_writer,
                checkpoint_stop: Arc::default(),
                max_write_transaction: options.max_write_transaction,
                readiness: tokio::sync::Mutex::new(None),
                instance: maintenance::instance_name(),
                observer: options.observer,
            }),
        };
        if let (Some(every), true) = (options.flush_every, options.stats) {
            store.spawn_flusher(every);
        }
        if sqlite {
            store
                .inner
                .writers
                .spawn_watchdog(Arc::downgrade(&store.inner), options.max_write_transaction);
        }
        if let Some(opts) = checkpointer {
            checkpoint::spawn(
                Arc::downgrade(&store.inner),
                opts,
                store.inner.checkpoint_stop.clone(),
            );
        }
        Ok(store)
    }

    /// Flushes statistics every `every` until the last handle is dropped.
    fn spawn_flusher(&self, every: Duration) {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            // The first fold waits a period: a store is usually migrated
            // right after it connects.
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                let store = Store { inner };
                // One instance of a deployment folds at a time; any other
                // folds only before it reads the rollups. A lease that
                // cannot be read (a database between connect and migrate,
                // or down) does not stop the fold, which is safe to run
                // twice.
                let lease = i64::try_from(every.as_millis() * 2).unwrap_or(i64::MAX) + 1000;
                if let Ok(None) = store.lead(maintenance::Chore::StatsFold, lease).await {
                    continue;
                }
                if let Err(e) = store.flush_stats().await {
                    tracing::warn!(error = %e, "statistics fold failed; the journal keeps the counts for the next one");
                }
            }
        });
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        match self.inner.db {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// The catalog keys are derived with.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The store's clock reading.
    pub fn now_ms(&self) -> Millis {
        self.inner.clock.now_ms()
    }

    /// This process's name among a deployment's instances (the holder its
    /// chore leases name).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Applies the backend's migrations (`migrations/sqlite` or `migrations/postgres`).
    #[tracing::instrument(skip_all)]
    pub async fn migrate(&self) -> Result<(), Error> {
        match &self.inner.db {
            Db::Sqlite(p) => sqlx::migrate!("../migrations/sqlite").run(p).await?,
            Db::Postgres(p) => sqlx::migrate!("../migrations/postgres").run(p).await?,
        }
        Ok(())
    }

    /// Checks that the database answers (for `/readyz`).
    #[tracing::instrument(skip_all)]
    pub async fn ping(&self) -> Result<(), Error> {
        match &self.inner.db {
            Db::Sqlite(p) => sqlx::query("select 1").execute(p).await.map(|_| ())?,
            Db::Postgres(p) => sqlx::query("select 1").execute(p).await.map(|_| ())?,
        }
        Ok(())
    }

    /// Flushes statistics, then closes every connection.
    pub async fn close(&self) {
        if let Some(b) = &self.inner.batcher {
            b.close().await;
        }
        if let Err(e) = self.flush_stats().await {
            tracing::warn!(error = %e, "final statistics flush failed");
        }
        // Stored as a permit when the task is not waiting.
        self.inner.checkpoint_stop.notify_one();
        if let Some(w) = &self.inner.sqlite_writer {
            w.close().await;
        }
        match &self.inner.db {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }

    /// A pooled connection; each call on it commits on its own.
    pub async fn session(&self) -> Result<Session, Error> {
        Session::open(self, false).await
    }

    /// A transaction; commit it with [`Session::commit`], or drop it to roll back.
    pub async fn transaction(&self) -> Result<Session, Error> {
        Session::open(self, true).await
    }

    /// Supersedes an intent whose action failed (nothing executed): a
    /// wrong first attempt (a total the merchant refused, an authorization
    /// that expired) is otherwise frozen for good. In one transaction the
    /// failed action is sealed (never claimed again), the current version
    /// is filed in the history with `reason` and `actor` (who, when, why,
    /// the old values), and the intent gets the new candidate (or, with
    /// none, keeps its payload and releases its candidate, so the next
    /// delivery's is frozen) under a key of its own: derived with the new
    /// revision (`"s"` in the canonical form), so neither the failed action
    /// nor the provider's record of the old key is reused. Refused
    /// ([`Error::NotSupersedable`]) for an action started, uncertain or
    /// completed, or an intent with no action yet.
    pub async fn supersede_intent(
        &self,
        tenant: &TenantId,
        action: &str,
        reference: &str,
        candidate: Option<&Payload<'_>>,
        actor: &str,
        reason: &str,
    ) -> Result<Superseded, Error> {
        for (what, text, max) in [("actor", actor, 200usize), ("reason", reason, 1000)] {
            if text.trim().is_empty() || text.chars().count() > max || text.contains('\0') {
                return Err(Error::Invalid(format!(
                    "{what}: say who and why in 1 to {max} characters (no NUL)"
                )));
            }
        }
        let mut tx = self.transaction().await?;
        match tx
            .supersede_in(tenant, action, reference, candidate, actor, reason)
            .await
        {
            Ok(done) => {
                tx.commit().await?;
                Ok(done)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// Records a delivery of an intent (see [`Session::record_intent`]),
    /// through the intent writer: concurrent calls are coalesced.
    ///
    /// The first delivery freezes the normalized payload and its key; a
    /// redelivery counts itself and gets the frozen ones back, whatever it
    /// carried:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use idem_core::{Catalog, KeyDeriver, Secret};
    /// # use idem_store::{Options, Store};
    /// # use std::sync::Arc;
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    /// # let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
    /// # let store = Store::connect(&url, Options::new(Arc::new(Catalog::builtin()), deriver)).await?;
    /// # store.migrate().await?;
    /// use idem_core::{Payload, TenantId};
    ///
    /// let tenant = TenantId::try_from("acme")?;
    /// let first = r#"{"cliente_id": "c-1", "valor": "180.00",
    ///     "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}"#;
    /// // The model re-extracted the amount differently on the redelivery.
    /// let again = first.replace("180.00", "18000");
    ///
    /// let a = store.record_intent(&tenant, "pix.cobranca", &Payload::from_json(first)?).await?;
    /// let b = store.record_intent(&tenant, "pix.cobranca", &Payload::from_json(&again)?).await?;
    /// assert!(a.inserted && !b.inserted);
    /// assert_eq!(a.key, b.key); // the frozen intent's key
    /// assert!(b.diverged); // said, not stored
    /// assert_eq!(b.deliveries, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn record_intent(
        &self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
    ) -> Result<RecordedIntent, Error> {
        if let Some(b) = &self.inner.batcher {
            let candidate = self.derive(tenant, action, payload)?;
            let now = self.now_ms();
            // The writer journals the counts in the write's own statement.
            return b.record(tenant, action, candidate, now).await;
        }
        self.session()
            .await?
            .record_intent(tenant, action, payload)
            .await
    }

    /// Records a delivery and claims the frozen intent's action in one
    /// transaction (see [`Session::record_and_claim`]): the worker's first
    /// call, one commit instead of two.
    pub async fn record_and_claim(
        &self,
        tenant: &TenantId,
        action: &idem_core::ActionType,
        payload: &Payload<'_>,
        lease: Duration,
        attempt_id: Option<&str>,
    ) -> Result<(RecordedIntent, Begin), Error> {
        self.session()
            .await?
            .record_and_claim(tenant, action, payload, lease, attempt_id)
            .await
    }

    /// Claims an action (see [`Session::begin_action`]).
    ///
    /// One claim at a time: while its lease runs, another caller is told
    /// to come back later.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use idem_core::{Catalog, KeyDeriver, Secret};
    /// # use idem_store::{Options, Store};
    /// # use std::sync::Arc;
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("idem.db").display());
    /// # let deriver = Arc::new(KeyDeriver::new(&Secret::new(b"the shared secret".to_vec())?));
    /// # let store = Store::connect(&url, Options::new(Arc::new(Catalog::builtin()), deriver)).await?;
    /// # store.migrate().await?;
    /// use idem_core::{ActionType, IdempotencyKey, TenantId};
    /// use idem_store::Begin;
    /// use std::time::Duration;
    ///
    /// let tenant = TenantId::try_from("acme")?;
    /// let action = ActionType::try_from("pix.cobranca")?;
    /// let key = IdempotencyKey::try_from("7".repeat(64))?;
    /// let lease = Duration::from_secs(30);
    ///
    /// let Begin::Claimed { token, attempt, .. } = store.begin_action(&tenant, &action, &key, lease).await? else {
    ///     panic!("the first claim is granted");
    /// };
    /// assert_eq!((token, attempt), (1, 1));
    /// // A second worker, while the first one's lease runs:
    /// assert!(matches!(
    ///     store.begin_action(&tenant, &action, &key, lease).await?,
    ///     Begin::InFlight { .. }
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn begin_action(
        &self,
        tenant: &TenantId,
        action: &idem_core::ActionType,
        key: &IdempotencyKey,
        lease: Duration,
    ) -> Result<Begin, Error> {
        self.session()
            .await?
            .begin_action(tenant, action, key, lease)
            .await
    }

    /// Claims an action for a named attempt (see [`Session::begin_attempt`]).
    pub async fn begin_attempt(
        &self,
        tenant: &TenantId,
        action: &idem_core::ActionType,
        key: &IdempotencyKey,
        lease: Duration,
        attempt_id: Option<&str>,
    ) -> Result<Begin, Error> {
        self.session()
            .await?
            .begin_attempt(tenant, action, key, lease, attempt_id)
            .await
    }

    /// Consumes an event once (see [`Session::consume_once`]).
    pub async fn consume_once(
        &self,
        tenant: &TenantId,
        source: &str,
        event_id: &str,
    ) -> Result<Consumed, Error> {
        self.session()
            .await?
            .consume_once(tenant, source, event_id)
            .await
    }

    /// The key `payload` derives to for `tenant` and `action` under rules
    /// `version`: what a caller checks a frozen intent's values against
    /// before acting on them. Writes nothing.
    pub fn key_of(
        &self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
        version: idem_core::RulesVersion,
    ) -> Result<IdempotencyKey, Error> {
        let Some(deriver) = &self.inner.deriver else {
            return Err(Error::Invalid(
                "this store was opened without a key secret; it cannot derive keys".into(),
            ));
        };
        Ok(deriver
            .derive_key(&self.inner.catalog, tenant, action, payload, Some(version))?
            .0)
    }

    /// The fields `payload` normalizes to for `action` under rules
    /// `version`: what a caller compares with a frozen intent's payload
    /// (which holds for a superseding intent too, whose key is its own).
    /// Writes nothing, needs no secret.
    pub fn normalized_of(
        &self,
        action: &str,
        payload: &Payload<'_>,
        version: idem_core::RulesVersion,
    ) -> Result<idem_core::NormalizedPayload, Error> {
        let spec = self.inner.catalog.action(action)?;
        Ok(idem_core::derive::normalize_payload(
            spec, version, payload,
        )?)
    }

    pub(crate) fn deriver(&self) -> Result<&KeyDeriver, Error> {
        self.inner.deriver.as_deref().ok_or_else(|| {
            Error::Invalid(
                "this store was opened without a key secret; it cannot derive keys".into(),
            )
        })
    }

    pub(crate) fn derive(
        &self,
        tenant: &TenantId,
        action: &str,
        payload: &Payload<'_>,
    ) -> Result<session::Candidate, Error> {
        let spec = self.inner.catalog.action(action)?;
        let Some(deriver) = &self.inner.deriver else {
            return Err(Error::Invalid(
                "this store was opened without a key secret; it cannot record intents".into(),
            ));
        };
        let d = deriver.derive(&self.inner.catalog, tenant, action, payload, None)?;
        let reference = d.reference(spec).to_owned();
        if reference.is_empty() {
            return Err(Error::Invalid(format!(
                "the intent reference field {:?} is empty",
                spec.reference
            )));
        }
        let n = reference.chars().count();
        if n > MAX_REFERENCE_CHARS {
            return Err(Error::Invalid(format!(
                "field `{}`: the intent reference is {n} characters; at most {MAX_REFERENCE_CHARS}",
                spec.reference
            )));
        }
        if let Some(field) = &spec.customer {
            let n = match payload.get(field) {
                Some(idem_core::payload::FieldValue::Str(t)) => t.chars().count(),
                Some(idem_core::payload::FieldValue::Num(t)) => t.len(),
                _ => 0,
            };
            if n > MAX_CUSTOMER_CHARS {
                return Err(Error::Invalid(format!(
                    "field `{field}`: the customer is {n} characters; at most {MAX_CUSTOMER_CHARS}"
                )));
            }
        }
        Ok(session::Candidate {
            reference,
            key: d.key,
            rules_version: d.rules_version,
            payload: d.normalized,
            source: payload.source().map(str::to_owned),
        })
    }

    /// Folds the statistics journal (every process's committed counts, not
    /// only this one's) into the rollups. Each batch of journal rows is
    /// deleted and added to the rollups in one transaction: on failure it
    /// rolls back and the rows wait for the next fold, never counted twice.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn flush_stats(&self) -> Result<(), Error> {
        if !self.inner.stats {
            return Ok(());
        }
        let _guard = self.inner.flush.lock().await;
        let tenants = {
            let mut s = self.session().await?;
            match session::on!(s.tenants_in(sql::stats::JOURNAL_TENANTS)) {
                Ok(t) => t,
                // Not migrated yet (an admin store between connect and
                // migrate): nothing can have been journaled.
                Err(e) if missing_table(&e) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        };
        for tenant in tenants {
            while self.fold_journal(&tenant).await? == FOLD_BATCH {}
        }
        Ok(())
    }

    /// Folds up to [`FOLD_BATCH`] journal rows of one tenant; returns how many.
    async fn fold_journal(&self, tenant: &str) -> Result<i64, Error> {
        let mut tx = self.transaction().await?;
        let n = fold_in(&mut tx, tenant, false, None).await?;
        tx.commit().await?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }

    /// Recounts the rollups from the tables (`idem stats rebuild`), for data
    /// written before counts were journaled with their writes, or after a
    /// restore. Intents, deliveries, duplicates, divergences, corrections and
    /// action outcomes are recounted from `since_ms` (floored to its UTC day,
    /// so every granularity's buckets are whole) for one tenant or every
    /// tenant with data; HTTP counters and delay histograms are kept, since
    /// no row records them. Runs in one transaction per tenant, which reads
    /// the tables and takes the tenant's journal from one snapshot, so a
    /// write is counted once whether it lands before or after.
    #[tracing::instrument(skip(self))]
    pub async fn rebuild_stats(
        &self,
        tenant: Option<&TenantId>,
        since_ms: Millis,
    ) -> Result<RebuildReport, Error> {
        let since = Granularity::Day.floor(since_ms.max(0));
        let _guard = self.inner.flush.lock().await;
        let tenants = match tenant {
            Some(t) => vec![t.as_str().to_owned()],
            None => {
                let mut s = self.session().await?;
                let mut all = std::collections::BTreeSet::new();
                for table in [0, 2, 6] {
                    all.extend(session::on!(
                        s.tenants_in(sql::admin::TENANTS_IN_TABLES[table])
                    )?);
                }
                all.into_iter().collect()
            }
        };
        let mut report = RebuildReport {
            since_ms: since,
            tenants: 0,
            rows: 0,
        };
        for t in tenants {
            let mut attempt = 0;
            loop {
                attempt += 1;
                match self.rebuild_tenant(&t, since).await {
                    Ok(rows) => {
                        report.rows += rows;
                        break;
                    }
                    // A concurrent fold touched the same rollup rows after
                    // this snapshot (PostgreSQL, repeatable read): again.
                    Err(Error::Database(sqlx::Error::Database(d)))
                        if attempt < 5 && d.code().as_deref() == Some("40001") => {}
                    Err(e) => return Err(e),
                }
            }
            report.tenants += 1;
        }
        Ok(report)
    }

    async fn rebuild_tenant(&self, tenant: &str, since: Millis) -> Result<u64, Error> {
        let mut tx = self.transaction().await?;
        tx.snapshot().await?;
        // The recount below covers what the journal held from `since` on.
        fold_in(&mut tx, tenant, true, Some(since)).await?;
        let rows = session::on!(tx.rebuild_rollups(tenant, since))?;
        tx.commit().await?;
        Ok(rows)
    }

    /// A tenant's statistics between `from_ms` (inclusive) and `to_ms`
    /// (exclusive), bucketed by `granularity`. Flushes first, so the report
    /// includes this process's latest counts.
    #[tracing::instrument(skip(self))]
    pub async fn stats(
        &self,
        tenant: &TenantId,
        granularity: Granularity,
        from_ms: Millis,
        to_ms: Millis,
    ) -> Result<stats::Report, Error> {
        self.flush_stats().await?;
        self.session()
            .await?
            .stats(tenant, granularity, from_ms, to_ms)
            .await
    }

    /// Admin: every tenant, in order (the live monitor's admin view).
    pub async fn tenants(&self) -> Result<Vec<TenantId>, Error> {
        let mut s = self.session().await?;
        let ids = session::on!(s.tenants_in(crate::sql::admin::LIST_TENANTS))?;
        ids.iter()
            .map(|t| TenantId::try_from(t.as_str()).map_err(|e| Error::Corrupt(e.to_string())))
            .collect()
    }

    /// Records the check value of this store's HMAC secret on first use, or
    /// compares it with the one recorded: `Err(Error::SecretMismatch)` when
    /// another secret set this database up. A store opened without a
    /// deriver (admin commands) has nothing to check.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn check_secret(&self) -> Result<(), Error> {
        let Some(deriver) = &self.inner.deriver else {
            return Ok(());
        };
        let mine = deriver.secret_check();
        let mut s = self.session().await?;
        let now = self.inner.clock.now_ms();
        let stored =
            session::on!(s.deployment_check(DEPLOYMENT_TENANT, "hmac_secret", &mine, now))?;
        if stored == mine {
            Ok(())
        } else {
            Err(Error::SecretMismatch)
        }
    }

    /// Admin: the MCP gateway's guarded calls of every tenant, as
    /// (tool, outcome, count) rows.
    pub async fn admin_mcp_calls(&self) -> Result<Vec<(String, String, i64)>, Error> {
        self.session().await?.admin_mcp_calls().await
    }

    /// Admin: unsettled actions of every tenant, by state (what retention
    /// keeps until someone settles or reconciles them). A started action
    /// whose lease has run out is `uncertain` here, as everywhere.
    #[tracing::instrument(level = "debug", skip(self))]
    pub async fn unresolved_actions(&self) -> Result<Vec<UnresolvedActions>, Error> {
        let now = self.now_ms();
        let mut s = self.session().await?;
        let rows = session::on!(s.admin_unresolved(now))?;
        Ok(rows
            .into_iter()
            .map(|(state, count, oldest_started_ms)| UnresolvedActions {
                state,
                count,
                oldest_started_ms,
            })
            .collect())
    }

    /// Admin: the tenants with alerts (the evaluator visits them).
    pub async fn alert_tenants(&self) -> Result<Vec<TenantId>, Error> {
        let mut s = self.session().await?;
        let ids = session::on!(s.tenants_in(crate::sql::alerts::ALERT_TENANTS))?;
        Ok(ids
            .into_iter()
            .filter_map(|t| TenantId::try_from(t).ok())
            .collect())
    }

    /// Admin: the tenants with webhook endpoints (the relay visits them).
    pub async fn webhook_tenants(&self) -> Result<Vec<TenantId>, Error> {
        let mut s = self.session().await?;
        let ids = session::on!(s.tenants_in(crate::sql::webhooks::WEBHOOK_TENANTS))?;
        Ok(ids
            .into_iter()
            .filter_map(|t| TenantId::try_from(t).ok())
            .collect())
    }

    /// Admin: every tenant's webhook deliveries by state (`/metrics`).
    pub async fn admin_webhook_counts(&self) -> Result<WebhookCounts, Error> {
        let mut s = self.session().await?;
        Ok(session::on!(s.webhook_counts(None))?)
    }

    /// Admin: per-tenant totals over a range, read from the rollups.
    pub async fn admin_totals(
        &self,
        granularity: Granularity,
        from_ms: Millis,
        to_ms: Millis,
    ) -> Result<Vec<stats::TenantTotals>, Error> {
        self.flush_stats().await?;
        let mut s = self.session().await?;
        let rows = session::on!(s.admin_totals(granularity, granularity.floor(from_ms), to_ms))?;
        Ok(rows
            .into_iter()
            .map(|r| stats::TenantTotals {
                tenant: r.tenant_id,
                intents: r.intents.unwrap_or(0),
                deliveries: r.deliveries.unwrap_or(0),
                redeliveries: r.redeliveries.unwrap_or(0),
                redelivered_intents: r.redelivered_intents.unwrap_or(0),
                divergences: r.divergences.unwrap_or(0),
                actions_uncertain: r.actions_uncertain.unwrap_or(0),
            })
            .collect())
    }
}

/// Splits idem's own `synchronous=` setting off a SQLite URL.
fn sqlite_sync(url: &str) -> Result<(String, SqliteSynchronous), Error> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), SqliteSynchronous::Normal));
    };
    let mut sync = SqliteSynchronous::Normal;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("synchronous", v)) => {
                sync = match v.to_ascii_lowercase().as_str() {
                    "normal" => SqliteSynchronous::Normal,
                    "full" => SqliteSynchronous::Full,
                    _ => return Err(Error::Url(format!("synchronous={v}: use normal or full"))),
                }
            }
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, sync))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_urls_are_refused() {
        assert!(matches!(
            Store::connect("mysql://x", Options::admin()).await,
            Err(Error::Url(_))
        ));
    }

    #[test]
    fn synchronous_is_read_off_the_sqlite_url() {
        let (url, s) = sqlite_sync("sqlite://a.db?synchronous=FULL&mode=rwc").unwrap();
        assert_eq!(url, "sqlite://a.db?mode=rwc");
        assert!(matches!(s, SqliteSynchronous::Full));
        let (url, s) = sqlite_sync("sqlite://a.db").unwrap();
        assert_eq!(url, "sqlite://a.db");
        assert!(matches!(s, SqliteSynchronous::Normal));
        assert!(sqlite_sync("sqlite://a.db?synchronous=off").is_err());
    }

    /// An admin store folds before it migrates (its flusher may tick first):
    /// no journal yet, nothing to fold, no error.
    #[tokio::test]
    async fn folding_before_migrating_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("f.db").display());
        let store = Store::connect(&url, Options::admin()).await.unwrap();
        store.flush_stats().await.unwrap();
        store.migrate().await.unwrap();
        store.flush_stats().await.unwrap();
    }

    /// Commits leave the WAL to the store's checkpoint task (a commit that
    /// checkpoints pays two fsyncs): within a few of its ticks what was
    /// committed is in the database file itself, which a reader that
    /// ignores the WAL (`immutable`) sees, and a connection of the store's
    /// checkpoints by itself only past the backstop.
    #[tokio::test]
    async fn the_wal_is_checkpointed_off_the_commit_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = Store::connect(&format!("sqlite://{}", path.display()), Options::admin())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        for i in 0..20 {
            let t = TenantId::try_from(format!("t{i}")).unwrap();
            store.create_tenant(&t, "x").await.unwrap();
        }
        let Db::Sqlite(pool) = &store.inner.db else {
            unreachable!()
        };
        let (pages,): (i64,) = sqlx::query_as("pragma wal_autocheckpoint")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(pages, i64::from(checkpoint::BACKSTOP_PAGES));
        let file_only = format!("sqlite://{}?immutable=true", path.display());
        let mut seen = -1;
        for _ in 0..25 {
            tokio::time::sleep(checkpoint::EVERY).await;
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&file_only)
                .await
                .unwrap();
            seen = sqlx::query_as::<_, (i64,)>("select count(*) from tenants")
                .fetch_one(&mut c)
                .await
                .map_or(-1, |r| r.0);
            if seen == 20 {
                break;
            }
        }
        assert_eq!(seen, 20, "the database file has every committed tenant");
        // Closed, the store closes the task's connection too: the last
        // connection to close removes the WAL, as SQLite does.
        store.close().await;
        let wal = dir.path().join("c.db-wal");
        for _ in 0..40 {
            if !wal.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!wal.exists(), "a closed store left its WAL behind");
    }

    #[tokio::test]
    async fn admin_stores_refuse_to_record() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("a.db").display());
        let store = Store::connect(&url, Options::admin()).await.unwrap();
        store.migrate().await.unwrap();
        let tenant = TenantId::try_from("t").unwrap();
        let p = Payload::from_json(r#"{"referencia_intencao":"x"}"#).unwrap();
        let e = store
            .record_intent(&tenant, "email.cobranca", &p)
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Invalid(ref m) if m.contains("secret")),
            "{e:?}"
        );
    }
}
