//! The option groups several commands share: the catalog and the database.
//! A leaf of `cli`, so each command's module can use them without going
//! through the command line's top-level types.

use clap::Args;
use idem_core::Catalog;
use std::path::PathBuf;

/// Where the action catalog comes from.
#[derive(Debug, Clone, Args)]
pub struct CatalogArgs {
    /// Action catalog (TOML); the built-in one when absent.
    #[arg(long, env = "IDEM_CATALOG", value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

impl CatalogArgs {
    /// Loads the catalog, with the file name in any error.
    pub fn load(&self) -> anyhow::Result<Catalog> {
        match &self.catalog {
            None => Ok(Catalog::builtin()),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("cannot read catalog {}: {e}", path.display()))?;
                Catalog::from_toml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
            }
        }
    }
}

/// Database selection.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Directory for the embedded database and the generated secret.
    #[arg(long, env = "IDEM_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: SQLite at DATA_DIR/idem.db.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// How long a caller waits for a database connection, opening a new
    /// one included (so also the connect timeout), e.g. 5s.
    #[arg(long, env = "IDEM_DB_ACQUIRE_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub db_acquire_timeout: std::time::Duration,
    /// PostgreSQL: the server ends a statement running longer, e.g. 15s
    /// (0: no limit, for a long `idem stats rebuild` or migration).
    #[arg(long, env = "IDEM_DB_STATEMENT_TIMEOUT", default_value = "15s", value_parser = parse_timeout)]
    pub db_statement_timeout: std::time::Duration,
}

impl DbArgs {
    /// The database timeouts these options set.
    pub fn timeouts(&self) -> crate::config::DbTimeouts {
        crate::config::DbTimeouts {
            acquire: self.db_acquire_timeout,
            statement: Some(self.db_statement_timeout).filter(|t| !t.is_zero()),
        }
    }

    /// The URL to connect to, creating the data directory for SQLite.
    pub fn url(&self) -> anyhow::Result<String> {
        match &self.database_url {
            Some(u) => Ok(u.clone()),
            None => {
                crate::config::private_data_dir(&self.data_dir)?;
                Ok(crate::config::sqlite_url(&self.data_dir))
            }
        }
    }
}

/// The largest provider outcome idem keeps (`idem serve`, `idem mcp
/// serve`, `idem mcp gateway`): one bound for every door.
#[derive(Debug, Clone, Args)]
pub struct OutcomeArgs {
    /// The largest provider outcome kept, in bytes: a `complete`'s
    /// response or a `fail`'s error on /v1, a settlement's evidence (the
    /// monitor, idem's MCP tools), a guarded tool's result the MCP gateway
    /// stores for replay. Past it /v1 answers 413 (`outcome-too-large`)
    /// and marks the action uncertain first, since the provider acted; the
    /// gateway stores a note that the call was executed once.
    #[arg(long = "max-outcome-bytes", env = "IDEM_MAX_OUTCOME_BYTES", default_value_t = idem_wire::DEFAULT_MAX_OUTCOME_BYTES as u64, value_parser = clap::value_parser!(u64).range(idem_wire::MIN_MAX_OUTCOME_BYTES..=idem_wire::MAX_MAX_OUTCOME_BYTES))]
    pub max_outcome_bytes: u64,
}

impl OutcomeArgs {
    /// The bound, in bytes.
    pub fn bytes(&self) -> usize {
        usize::try_from(self.max_outcome_bytes).unwrap_or(usize::MAX)
    }
}

/// Where traces go (`idem serve`, `idem mcp gateway`, `idem mcp serve`).
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Export traces as OTLP over HTTP (protobuf) to this collector, e.g.
    /// http://127.0.0.1:4318 (spans go to /v1/traces under it; a URL with
    /// a path is used as written). A span per HTTP request, store
    /// operation, guarded MCP call and upstream call; a caller's
    /// `traceparent` is continued. Off when unset.
    #[arg(long = "otlp-endpoint", env = "IDEM_OTLP_ENDPOINT", value_name = "URL", value_parser = crate::telemetry::parse_otlp_endpoint)]
    pub otlp_endpoint: Option<crate::telemetry::OtlpEndpoint>,
}

/// The outbox relay's pacing (`idem serve` and `idem relay`).
#[derive(Debug, Clone, Args)]
pub struct RelayArgs {
    /// How long a claimed delivery is held before another relay may take it
    /// over (ms; must exceed the timeout).
    #[arg(long, env = "IDEM_RELAY_LEASE_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub relay_lease_ms: u64,
    /// One attempt's limit: connect, send and read the status (ms).
    #[arg(long, env = "IDEM_RELAY_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(50..=600_000))]
    pub relay_timeout_ms: u64,
    /// The first retry's delay (ms); each further one doubles, up to 6 h,
    /// with ±20% jitter. Messages are retried for 24 h, then dead-lettered.
    #[arg(long, env = "IDEM_RELAY_RETRY_BASE_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub relay_retry_base_ms: u64,
    /// Deliveries in flight at once, all endpoints together.
    #[arg(long, env = "IDEM_RELAY_CONCURRENCY", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub relay_concurrency: u64,
    /// Deliver webhooks to loopback, private, link-local and metadata
    /// addresses too. For tests and the embedded demo, whose receivers
    /// listen on 127.0.0.1; never in production.
    #[arg(long, env = "IDEM_ALLOW_PRIVATE_WEBHOOKS")]
    pub allow_private_webhooks: bool,
}

impl RelayArgs {
    /// The relay configuration these options describe.
    pub fn config(&self) -> anyhow::Result<crate::relay::RelayConfig> {
        let ms = std::time::Duration::from_millis;
        anyhow::ensure!(
            self.relay_lease_ms > self.relay_timeout_ms,
            "--relay-lease-ms ({}) must exceed --relay-timeout-ms ({}): a delivery still running must not be claimed again",
            self.relay_lease_ms,
            self.relay_timeout_ms
        );
        Ok(crate::relay::RelayConfig {
            lease: ms(self.relay_lease_ms),
            timeout: ms(self.relay_timeout_ms),
            retry_base: ms(self.relay_retry_base_ms),
            concurrency: usize::try_from(self.relay_concurrency).unwrap_or(32),
            allow_private: self.allow_private_webhooks,
            ..crate::relay::RelayConfig::default()
        })
    }
}

/// The longest duration any option takes: ten years (3650d). Retention and
/// lease arithmetic add a duration to the current instant; past this the
/// sum could overflow, and nothing needs longer.
pub const MAX_DURATION_MS: i64 = 3_650 * 86_400_000;

/// Parses `90s`, `30m`, `24h` or `7d` into milliseconds, at most
/// [`MAX_DURATION_MS`].
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: i64 = n
        .parse()
        .map_err(|_| format!("{s:?}: expected a whole number and a unit (s, m, h, d), e.g. 7d"))?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{s:?}: the unit must be s, m, h or d")),
    };
    match n.checked_mul(unit_ms) {
        Some(ms) if ms > 0 && ms <= MAX_DURATION_MS => Ok(ms),
        _ => Err(format!(
            "{s:?}: must be positive and at most 3650d (ten years)"
        )),
    }
}

/// [`parse_duration_ms`] as a duration.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    parse_duration_ms(s).map(|ms| std::time::Duration::from_millis(ms.unsigned_abs()))
}

/// A timeout: a duration as [`parse_duration`] reads it, or `0` for none
/// (returned as zero, which the caller reads as "no limit").
pub(crate) fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    if s.trim() == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_timeout_is_a_duration_or_zero_for_none() {
        assert_eq!(parse_timeout("0"), Ok(Duration::ZERO));
        assert_eq!(parse_timeout("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(
            parse_timeout("0s"),
            Err("\"0s\": must be positive and at most 3650d (ten years)".to_owned())
        );
        assert_eq!(
            parse_timeout("15"),
            Err("\"15\": the unit must be s, m, h or d".to_owned())
        );
    }
}
