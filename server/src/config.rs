//! The server's configuration as plain values: no clap, no environment
//! reading. `cli::args` builds one from the command line; tests build one
//! by hand; [`crate::startup::Application::build`] starts from it.

use idem_core::{Catalog, Secret};
use idem_store::{Clock, SystemClock};
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
    /// How long the database may keep a caller waiting.
    pub db_timeouts: DbTimeouts,
    /// Where the embedded database lives and a generated secret is kept.
    pub data_dir: PathBuf,
    /// How often expired rows are purged and expired leases swept.
    pub purge_every: Duration,
    /// How often alerts are evaluated.
    pub alert_every: Duration,
    /// The token that opens the live monitor to every tenant.
    pub admin_token: Option<AdminToken>,
    /// `Host` names answered besides loopback ones (`--allowed-host`); when
    /// any is given, every other name is refused.
    pub allowed_hosts: Vec<String>,
    /// `/metrics` without the admin token even when one is set.
    pub metrics_open: bool,
    /// Mark the monitor's session cookie `Secure` always (`--cookie-secure`),
    /// not only when a proxy says the visitor came over https.
    pub cookie_secure: bool,
    /// Anonymous saves (`POST /s`, `POST /c`) one client address may make
    /// per ten minutes (0: unbounded).
    pub saves_per_address: u32,
    /// Anonymous saves per UTC day, all addresses together, per instance
    /// (0: unbounded).
    pub saves_per_day: u32,
    /// Timeouts and the bound on client connections.
    pub limits: idem_api::conn::ConnLimits,
    /// The largest provider outcome (`complete`'s response, `fail`'s
    /// error) kept byte for byte (`--max-outcome-bytes`).
    pub max_outcome_bytes: usize,
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
    /// MCP gateways to mount at `/mcp/gateways/{name}`: a name and its guard
    /// file (`--mcp-gateway NAME=FILE`).
    pub mcp_gateways: Vec<(String, PathBuf)>,
    /// The account a mounted gateway's command upstream runs as when its
    /// guard file names none (`--upstream-user`).
    pub upstream_user: Option<String>,
    /// The store's clock (leases, retention, statistics): the system's, or
    /// a manual one that tests move instead of sleeping. No command-line
    /// option sets it.
    pub clock: Arc<dyn Clock>,
}

pub use idem_wire::DEFAULT_MAX_OUTCOME_BYTES;

impl Config {
    /// The embedded default for `data_dir`: SQLite at `DATA_DIR/idem.db`,
    /// on 127.0.0.1 port 0, the built-in catalog, purges every 5 minutes,
    /// no admin token, no demo.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: sqlite_url(&data_dir),
            db_timeouts: DbTimeouts::default(),
            data_dir,
            purge_every: Duration::from_secs(300),
            alert_every: Duration::from_secs(5),
            admin_token: None,
            allowed_hosts: Vec::new(),
            metrics_open: false,
            cookie_secure: false,
            saves_per_address: 30,
            saves_per_day: 2_000,
            limits: idem_api::conn::ConnLimits::default(),
            max_outcome_bytes: DEFAULT_MAX_OUTCOME_BYTES,
            catalog: Catalog::builtin(),
            secret: SecretSource::DataDir,
            demo: false,
            conformance_fixture: false,
            fixture_ttl_ms: None,
            relay: Some(RelayConfig::default()),
            mcp_gateways: Vec::new(),
            upstream_user: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// How long the database may keep a caller waiting (`--db-acquire-timeout`,
/// `--db-statement-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbTimeouts {
    /// Waiting for a pooled connection, opening a new one included.
    pub acquire: Duration,
    /// PostgreSQL's `statement_timeout` (`None`: no limit).
    pub statement: Option<Duration>,
}

impl Default for DbTimeouts {
    fn default() -> Self {
        Self {
            acquire: Duration::from_secs(5),
            statement: Some(Duration::from_secs(15)),
        }
    }
}

impl DbTimeouts {
    /// Sets these timeouts on a store's options.
    pub fn apply(self, mut options: idem_store::Options) -> idem_store::Options {
        options.acquire_timeout = self.acquire;
        options.statement_timeout = self.statement;
        options
    }
}

/// The SQLite URL of the database inside `data_dir`.
pub fn sqlite_url(data_dir: &std::path::Path) -> String {
    format!("sqlite://{}", data_dir.join("idem.db").display())
}

/// The files of the embedded database that `private_data_dir` keeps to
/// their owner (the write-ahead log and shared memory too: SQLite creates
/// them with the database file's mode).
const DATA_FILES: [&str; 4] = ["idem.db", "idem.db-wal", "idem.db-shm", "hmac.key"];

/// Creates the data directory readable by its owner only (0700), and keeps
/// the database's files, which hold webhook signing secrets and token
/// hashes, at 0600: a new database file is created so before SQLite opens
/// it, and existing ones are narrowed. A directory that already existed
/// keeps its mode (it may be shared, `--data-dir .`); a warning says so
/// when others can read it.
pub fn private_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        } else if let Ok(m) = std::fs::metadata(dir) {
            if m.permissions().mode() & 0o077 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    "the data directory can be read by other users; its files are kept private, but `chmod 700` it"
                );
            }
        }
        let db = dir.join(DATA_FILES[0]);
        if !db.exists() {
            // SQLite would create it with the umask's mode (0644).
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&db);
        }
        for f in DATA_FILES {
            let p = dir.join(f);
            if let Ok(m) = std::fs::metadata(&p) {
                if m.permissions().mode() & 0o077 != 0 {
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
                        .map_err(|e| anyhow::anyhow!("cannot make {} private: {e}", p.display()))?;
                }
            }
        }
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    Ok(())
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

/// The fewest characters `idem serve` accepts in an admin token.
pub const ADMIN_TOKEN_MIN: usize = 32;

pub use idem_api::access::AdminToken;

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
    /// Deliver to loopback, private and link-local addresses too
    /// (`--allow-private-webhooks`: tests and the embedded demo only).
    pub allow_private: bool,
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
            allow_private: false,
        }
    }
}
