//! idem-store: the intent store, over SQLite (the embedded default) or
//! PostgreSQL (production), chosen from the database URL.

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::str::FromStr;
use std::time::Duration;

/// Store errors. Database details stay in the logs; callers see the kind.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The row asked for does not exist (for this tenant).
    #[error("not found")]
    NotFound,
    /// The write conflicts with what is stored.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database URL is not one idem understands.
    #[error("unsupported database URL: {0}")]
    Url(String),
    /// Applying migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database failed or could not be reached.
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

/// The backend in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file, WAL mode.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A connection pool to one of the two backends.
#[derive(Debug, Clone)]
pub enum Store {
    /// SQLite.
    Sqlite(SqlitePool),
    /// PostgreSQL.
    Postgres(PgPool),
}

impl Store {
    /// Connects to `sqlite://path` (created when missing) or `postgres://...`.
    #[tracing::instrument(skip_all, fields(backend))]
    pub async fn connect(url: &str) -> Result<Self, Error> {
        if url.starts_with("sqlite:") {
            tracing::Span::current().record("backend", "sqlite");
            let opts = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                // WAL lets readers (the dashboard) run beside the writer;
                // NORMAL syncs at checkpoints: a power cut may lose the last
                // transactions, never corrupt the file. Documented in the README.
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(5))
                .foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(opts)
                .await?;
            Ok(Store::Sqlite(pool))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            tracing::Span::current().record("backend", "postgres");
            let pool = PgPoolOptions::new()
                .max_connections(32)
                .acquire_timeout(Duration::from_secs(5))
                .connect(url)
                .await?;
            Ok(Store::Postgres(pool))
        } else {
            Err(Error::Url("expected sqlite://… or postgres://…".into()))
        }
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        match self {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies the backend's migrations (`migrations/sqlite` or `migrations/postgres`).
    #[tracing::instrument(skip_all)]
    pub async fn migrate(&self) -> Result<(), Error> {
        match self {
            Store::Sqlite(p) => sqlx::migrate!("../migrations/sqlite").run(p).await?,
            Store::Postgres(p) => sqlx::migrate!("../migrations/postgres").run(p).await?,
        }
        Ok(())
    }

    /// Checks that the database answers (for `/readyz`).
    #[tracing::instrument(skip_all)]
    pub async fn ping(&self) -> Result<(), Error> {
        match self {
            Store::Sqlite(p) => sqlx::query("select 1").execute(p).await.map(|_| ())?,
            Store::Postgres(p) => sqlx::query("select 1").execute(p).await.map(|_| ())?,
        }
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            Store::Sqlite(p) => p.close().await,
            Store::Postgres(p) => p.close().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sqlite_file_is_created_and_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idem.db");
        let store = Store::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store.ping().await.unwrap();
        assert!(path.exists());
        // Migrating twice is a no-op, not an error.
        store.migrate().await.unwrap();
        assert_eq!(store.backend(), Backend::Sqlite);
    }

    #[tokio::test]
    async fn postgres_when_configured() {
        let Ok(url) = std::env::var("IDEM_TEST_POSTGRES_URL") else {
            eprintln!(
                "SKIPPED: IDEM_TEST_POSTGRES_URL is not set; the Postgres store test did not run"
            );
            return;
        };
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        store.ping().await.unwrap();
        assert_eq!(store.backend(), Backend::Postgres);
    }

    #[tokio::test]
    async fn unknown_urls_are_refused() {
        assert!(matches!(
            Store::connect("mysql://x").await,
            Err(Error::Url(_))
        ));
    }
}
