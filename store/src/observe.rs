//! How long the store's work took, for whoever measures it (the server's
//! `/metrics`): every statement by the name of the query function that ran
//! it, the wait for a transaction (a pooled connection, SQLite's write turn
//! and `begin`), each commit, and each batch of the intent writer.
//!
//! Names are the store's own, a fixed set (never a key, a tenant or a
//! value), so they are safe as metric labels.

use crate::Backend;
use std::time::{Duration, Instant};

/// Receives one measurement per operation, on the task that ran it.
/// Called on the hot path: keep it to an atomic add or two.
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// `op` took `took` on `backend`. `op` is a query function's name
    /// (`begin_action`, `select_action`, `append_journal`, …), or one of
    /// [`ACQUIRE`], [`OPEN`], [`COMMIT`], [`ROLLBACK`], [`BATCH`].
    fn took(&self, op: &'static str, backend: Backend, took: Duration);
}

/// Taking a pooled connection for statements outside a transaction (the
/// statement's own time is its query's).
pub const ACQUIRE: &str = "connection_acquire";
/// Opening a transaction: the pooled connection, SQLite's write turn
/// ([`crate::write_queue`]) and the `begin` statement.
pub const OPEN: &str = "transaction_open";
/// A transaction's commit.
pub const COMMIT: &str = "transaction_commit";
/// A transaction's rollback.
pub const ROLLBACK: &str = "transaction_rollback";
/// One batch of the intent writer (its turn, statement(s) and commit).
pub const BATCH: &str = "record_intent_batch";

/// The `tracing` target of every span idem exports (`idem serve
/// --otlp-endpoint`). Only the exporting layer enables it: the log filter
/// turns it off, so without a collector a span costs one disabled-callsite
/// check.
pub const SPAN_TARGET: &str = "idem::otel";

/// The span `op` is exported as: OpenTelemetry's database client span,
/// named by the operation (the names [`Observer`] gets), with the database
/// system. Never a statement's values.
pub(crate) fn span(op: &'static str, backend: Backend) -> tracing::Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "db",
        otel.name = op,
        otel.kind = "client",
        db.system.name = backend.system_name(),
        db.query.summary = op,
        idem.batch_size = tracing::field::Empty,
    )
}

/// Reports `op`, started at `since`, to `observer` if there is one.
pub(crate) fn report(
    observer: Option<&dyn Observer>,
    op: &'static str,
    backend: Backend,
    since: Instant,
) {
    if let Some(o) = observer {
        o.took(op, backend, since.elapsed());
    }
}

impl Backend {
    /// `sqlite` or `postgres`, as labels and logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    /// The system as OpenTelemetry's `db.system.name` names it.
    pub fn system_name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgresql",
        }
    }
}
