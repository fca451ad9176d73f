//! What the HTTP test binaries share: the state around a store, and a
//! server on 127.0.0.1 port 0.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use idem_core::{Catalog, KeyDeriver, Secret};
use idem_server::config::{Config, SecretSource};
use idem_server::http::AppState;
use idem_server::startup::Application;
use idem_store::{Options, Store};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The secret every HTTP test derives with.
pub const SECRET: &[u8] = b"test";

/// Opens and migrates the store at `url` with the built-in catalog.
pub async fn store(url: &str) -> Store {
    let catalog = Arc::new(Catalog::builtin());
    let deriver = Arc::new(KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap()));
    let store = Store::connect(url, Options::new(catalog, deriver))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
}

/// The configuration every HTTP test starts from: `url`, 127.0.0.1 port 0
/// (so the live monitor is open unless an admin token is given), the
/// built-in catalog, the test secret, the demo provider mounted.
pub fn config(url: &str) -> Config {
    Config {
        database_url: url.to_owned(),
        secret: SecretSource::Given(Secret::new(SECRET.to_vec()).unwrap()),
        demo: true,
        ..Config::embedded(std::env::temp_dir())
    }
}

/// Starts the application exactly as `idem serve` does, through
/// [`Application::build`], and serves it in the background; returns the
/// base URL and the state (its store included).
pub async fn spawn_app(config: Config) -> (String, AppState) {
    let app = Application::build(config).await.unwrap();
    let base = app.base_url();
    let state = app.state().clone();
    tokio::spawn(app.run_until_stopped());
    (base, state)
}

/// [`spawn_app`] on `url` with the default test configuration.
pub async fn serve(url: &str) -> (String, AppState) {
    spawn_app(config(url)).await
}

/// A database of one test: a fresh SQLite file, or a PostgreSQL schema of its
/// own that [`TestDb::done`] drops.
pub struct TestDb {
    /// What to connect to.
    pub url: String,
    cleanup: Option<(sqlx::PgPool, String)>,
    _dir: Option<tempfile::TempDir>,
}

/// A name no other test of this run (or a concurrent run) uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}_{}_{}_{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl TestDb {
    /// A new SQLite database in a temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        TestDb {
            url: format!("sqlite://{}", dir.path().join("idem.db").display()),
            cleanup: None,
            _dir: Some(dir),
        }
    }

    /// A new schema in `IDEM_TEST_POSTGRES_URL`'s database, or `None` when
    /// the variable is not set.
    pub async fn postgres(prefix: &str) -> Option<Self> {
        let base = std::env::var("IDEM_TEST_POSTGRES_URL").ok()?;
        let admin = sqlx::PgPool::connect(&base).await.unwrap();
        let schema = unique(prefix);
        sqlx::query(&format!("create schema {schema}"))
            .execute(&admin)
            .await
            .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        Some(TestDb {
            url: format!("{base}{sep}options=-c%20search_path%3D{schema}"),
            cleanup: Some((admin, schema)),
            _dir: None,
        })
    }

    /// Drops the Postgres schema (a SQLite directory goes with the value).
    pub async fn done(self) {
        if let Some((admin, schema)) = self.cleanup {
            sqlx::query(&format!("drop schema {schema} cascade"))
                .execute(&admin)
                .await
                .unwrap();
        }
    }
}

/// The body of `GET url`, as text (a page, for tests that read markup).
pub async fn page(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// Runs each named test on SQLite and on PostgreSQL. The test binary
/// provides `sqlite()` and `postgres()` (`None`: not configured), async, whose
/// value has an async `done()`; each test takes a reference to it.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let s = super::sqlite().await;
                    super::$name(&s).await;
                    s.done().await;
                }
            )*
        }
        // Ignored unless asked for, so a run without PostgreSQL lists them
        // as ignored instead of passing them; asked for without the URL,
        // they fail.
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[ignore = "PostgreSQL: needs IDEM_TEST_POSTGRES_URL and --include-ignored (scripts/test passes both)"]
                async fn $name() {
                    let s = super::postgres().await.expect("IDEM_TEST_POSTGRES_URL is not set");
                    super::$name(&s).await;
                    s.done().await;
                }
            )*
        }
    };
}
