//! The server's configuration as plain values: no clap, no environment
//! reading. `cli::args` builds one from the command line; tests build one
//! by hand; [`crate::startup::Application::build`] starts from it.

use idem_core::{Catalog, Secret};
use idem_store::{Clock, SystemClock};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What `idem serve` (and `idem simulate`'s in-process server, and every
/// HTTP test) runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// Where the embedded database lives and a generated secret is kept.
    pub data_dir: PathBuf,
    /// How often expired rows are purged and expired leases swept.
    pub purge_every: Duration,
    /// How often alerts are evaluated.
    pub alert_every: Duration,
    /// The token that opens the live monitor to every tenant.
    pub admin_token: Option<AdminToken>,
    /// The action catalog.
    pub catalog: Catalog,
    /// The HMAC secret, or where to find it.
    pub secret: SecretSource,
    /// Mount the demo payment provider and its fault injection
    /// (`--demo`, `IDEM_DEMO=1`). A test and demo tool: off in production.
    pub demo: bool,
    /// Mount the conformance fixture (`--conformance-fixture`): routes behind
    /// the Idempotency-Key layer without authentication, for external test
    /// suites. Off unless asked for.
    pub conformance_fixture: bool,
    /// The fixture's key retention in ms (`--fixture-ttl-ms`); the tenant
    /// default (24 h) when absent.
    pub fixture_ttl_ms: Option<i64>,
    /// The outbox relay this process runs (`None`: `--no-relay`).
    pub relay: Option<RelayConfig>,
    /// The store's clock (leases, retention, statistics): the system's, or
    /// a manual one that tests move instead of sleeping. No command-line
    /// option sets it.
    pub clock: Arc<dyn Clock>,
}

impl Config {
    /// The embedded default for `data_dir`: SQLite at `DATA_DIR/idem.db`,
    /// on 127.0.0.1 port 0, the built-in catalog, purges every 5 minutes,
    /// no admin token, no demo.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: sqlite_url(&data_dir),
            data_dir,
            purge_every: Duration::from_secs(300),
            alert_every: Duration::from_secs(5),
            admin_token: None,
            catalog: Catalog::builtin(),
            secret: SecretSource::DataDir,
            demo: false,
            conformance_fixture: false,
            fixture_ttl_ms: None,
            relay: Some(RelayConfig::default()),
            clock: Arc::new(SystemClock),
        }
    }
}

/// The SQLite URL of the database inside `data_dir`.
pub fn sqlite_url(data_dir: &std::path::Path) -> String {
    format!("sqlite://{}", data_dir.join("idem.db").display())
}

/// Where the HMAC secret comes from.
#[derive(Debug, Clone)]
pub enum SecretSource {
    /// `IDEMPOTENCY_HMAC_KEY`, else the data directory's `hmac.key`, else a
    /// new random one written there. The generated file serves the embedded
    /// default (SQLite) only: on PostgreSQL, where several instances share
    /// one database, the secret must be given.
    DataDir,
    /// The secret in this file (`--hmac-key-file`), trimmed.
    File(PathBuf),
    /// This secret (tests, and callers that load it themselves).
    Given(Secret),
}

/// The admin token, compared by its SHA-256 digest and never printed.
#[derive(Clone)]
pub struct AdminToken([u8; 32]);

impl AdminToken {
    /// Wraps a configured token; an empty one is no token.
    pub fn new(token: &str) -> Option<Self> {
        let t = token.trim();
        (!t.is_empty()).then(|| Self(Sha256::digest(t.as_bytes()).into()))
    }

    /// Whether `presented` is this token.
    pub fn matches(&self, presented: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Digests, not tokens, are compared: their timing says nothing
        // useful about the token.
        d.iter()
            .zip(self.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

/// How the relay paces itself.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// How long a claimed delivery is held before another relay may take
    /// it (must exceed `timeout`).
    pub lease: Duration,
    /// One attempt's limit: connect, send, and read the status.
    pub timeout: Duration,
    /// The first retry's delay; each further one doubles it (capped at six
    /// hours), with ±20% jitter.
    pub retry_base: Duration,
    /// A message older than this at a failed attempt is dead-lettered.
    pub give_up: Duration,
    /// Deliveries in flight at once, all endpoints together.
    pub concurrency: usize,
    /// Deliveries in flight at once for one endpoint.
    pub per_endpoint: u32,
    /// The pause between rounds that found nothing to do.
    pub idle: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            retry_base: Duration::from_secs(5),
            give_up: Duration::from_secs(24 * 3600),
            concurrency: 32,
            per_endpoint: 8,
            idle: Duration::from_millis(200),
        }
    }
}
