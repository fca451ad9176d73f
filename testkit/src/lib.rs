//! What idem's test binaries share, so the store's conformance suite and the
//! server's HTTP tests set databases up one way: [`TestDb`] (a fresh SQLite
//! file, or a PostgreSQL schema of its own) and [`both!`], which runs each
//! named test on both backends.

#![allow(clippy::unwrap_used)] // test support fails loudly by design

use std::sync::atomic::{AtomicU64, Ordering};

/// The `webhook-signature` a Standard Webhooks receiver expects for a
/// message: `v1,` and the base64 HMAC-SHA256, under the endpoint's secret,
/// of `{id}.{timestamp}.{body}`. Written from the specification, apart from
/// the relay's signer, so a test receiver catches a signer that drifts.
pub fn webhook_signature(secret: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    use base64::Engine;
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// The variable naming the PostgreSQL database the tests may use.
pub const POSTGRES_URL: &str = "IDEM_TEST_POSTGRES_URL";

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

/// A database of one test: a fresh SQLite file, or a PostgreSQL schema of its
/// own that [`TestDb::done`] drops.
pub struct TestDb {
    /// What to connect to.
    pub url: String,
    pg: Option<(sqlx::PgPool, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// A new SQLite database in a temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        TestDb {
            url: format!("sqlite://{}", dir.path().join("idem.db").display()),
            pg: None,
            _dir: Some(dir),
        }
    }

    /// A new schema in [`POSTGRES_URL`]'s database, or `None` when the
    /// variable is not set. The URL sets the schema as the search path and
    /// as the application name, so a test can find its own connections.
    pub async fn postgres(prefix: &str) -> Option<Self> {
        let base = std::env::var(POSTGRES_URL).ok()?;
        let admin = sqlx::PgPool::connect(&base).await.unwrap();
        let schema = unique(prefix);
        sqlx::query(&format!("create schema {schema}"))
            .execute(&admin)
            .await
            .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        Some(TestDb {
            url: format!(
                "{base}{sep}options=-c%20search_path%3D{schema}&application_name={schema}"
            ),
            pg: Some((admin, schema)),
            _dir: None,
        })
    }

    /// The admin pool and schema name, on PostgreSQL.
    pub fn postgres_schema(&self) -> Option<(sqlx::PgPool, String)> {
        self.pg.clone()
    }

    /// Runs raw SQL on the test database, as a test's stand-in for what no
    /// API may do (losing rows, say). Several statements may be given.
    pub async fn execute(&self, sql: &str) {
        use sqlx::Connection as _;
        if self.url.starts_with("sqlite:") {
            let mut c = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
            sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
            c.close().await.unwrap();
        } else {
            let mut c = sqlx::PgConnection::connect(&self.url).await.unwrap();
            sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
            c.close().await.unwrap();
        }
    }

    /// Drops the PostgreSQL schema (a SQLite directory goes with the value).
    /// A server the test started may still be closing its connections, and
    /// a transaction of theirs can hold a lock the drop waits on or
    /// deadlocks with: the drop is tried again for a few seconds before the
    /// test fails on it.
    pub async fn done(self) {
        if let Some((admin, schema)) = self.pg {
            let drop = format!("drop schema {schema} cascade");
            let mut tries = 0;
            loop {
                match sqlx::query(&drop).execute(&admin).await {
                    Ok(_) => break,
                    Err(e) if tries < 20 => {
                        tries += 1;
                        eprintln!("testkit: {drop} failed ({e}); trying again");
                        // A teardown: blocking this worker a moment is harmless.
                        std::thread::sleep(std::time::Duration::from_millis(250));
                    }
                    Err(e) => panic!("{drop}: {e}"),
                }
            }
        }
    }
}

/// Runs each named test on SQLite and on PostgreSQL. The test binary
/// provides `sqlite()` and `postgres()` (`None`: not configured), async,
/// whose value has an async `done()`; each test takes a reference to it.
/// The PostgreSQL halves are `#[ignore]`d unless asked for
/// (`--include-ignored`, as `scripts/test` does when [`POSTGRES_URL`] is
/// set), so a run without PostgreSQL lists them as ignored instead of
/// passing them; asked for without the URL, they fail.
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

/// The corpus of hand-computed contracts (`testkit/fixtures/contracts.json`):
/// each has a calculator link, the exact figures and what the pt-BR page
/// shows, with the arithmetic that gave them. The CLI, CSV and browser
/// tests all check the same contracts.
pub const CONTRACTS: &str = include_str!("../fixtures/contracts.json");
