//! The command line's types (clap). They stop here: [`ServeArgs::into_config`]
//! turns them into the plain [`Config`] the rest of the server takes.

use super::options::{
    parse_duration, parse_duration_ms, parse_timeout, CatalogArgs, DbArgs, RelayArgs,
};
use crate::config::{AdminToken, Config, SecretSource};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// idem: money and model calls that execute once.
#[derive(Debug, Parser)]
#[command(name = "idem", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Derive idempotency keys from intent payloads.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Compute the cost and risk of duplicated calls (exact decimals).
    Cost(Box<super::cost::CostArgs>),
    /// List models and their token prices from the bundled price table
    /// (genai-prices snapshot), optionally only those matching QUERY.
    Prices(super::prices::PricesArgs),
    /// Serve the dashboard and API (SQLite under ./data by default).
    Serve(ServeArgs),
    /// Apply the database migrations and exit.
    Migrate(DbArgs),
    /// Remove expired rows (per each tenant's retention) in bounded batches,
    /// mark claims whose lease ran out as uncertain, print what was done.
    Purge(PurgeArgs),
    /// Show a tenant's retention, or change it with the options.
    Retention(RetentionArgs),
    /// Scan a codebase for idempotency keys built from per-attempt values
    /// (uuid4, the clock, delivery ids, a hash of model output); exit 1 when
    /// any is found.
    Audit(super::audit::AuditArgs),
    /// Run N conversations through a redelivering queue and a demo payment
    /// provider with each key strategy, and report duplicate charges.
    Simulate(super::simulate::SimulateArgs),
    /// One worker process of `idem simulate --broker`, which starts it with
    /// its settings in IDEM_SIM_* variables.
    #[command(hide = true)]
    SimulateWorker,
    /// Agents and MCP: `idem mcp gateway` makes an upstream MCP server's
    /// money-moving tools run once per intent.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Manage tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Manage a tenant's alerts: thresholds on the live monitor's numbers,
    /// announced to a webhook endpoint when they fire and resolve.
    Alert {
        #[command(subcommand)]
        command: AlertCommand,
    },
    /// Manage the webhook endpoints the outbox relay delivers to.
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// Run the outbox relay alone (`idem serve` runs one too): deliver
    /// outbox messages to webhook endpoints until SIGTERM or Ctrl-C.
    Relay(RelayCmdArgs),
    /// Maintain the live statistics.
    Stats {
        #[command(subcommand)]
        command: StatsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// An MCP server on stdio for one agent, in front of an upstream MCP
    /// server: the tools the guard file names run once per intent (a repeat
    /// returns the first result), every other tool, resource and prompt
    /// passes through. Exit 2 when the guard file, the tenant or the
    /// upstream cannot be used.
    Gateway(McpGatewayArgs),
    /// idem's own MCP server on stdio, for one tenant: the cost estimate,
    /// the live numbers, the uncertain actions and their reconciliation as
    /// tools. `idem serve` also serves it at /mcp (bearer token).
    Serve(McpServeArgs),
}

/// `idem mcp serve` options.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// The tenant the tools read and settle (registered with `idem tenant create`).
    #[arg(long, value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// Where the intent store is.
    #[command(flatten)]
    pub db: DbArgs,
    /// The largest settlement evidence `reconcile_action` records.
    #[command(flatten)]
    pub outcome: super::options::OutcomeArgs,
}

/// `idem mcp gateway` options.
#[derive(Debug, Args)]
pub struct McpGatewayArgs {
    /// The guard file (TOML): the upstream, and which tools run once under
    /// which catalog action (the book's "Agents and MCP").
    #[arg(long, value_name = "FILE")]
    pub guard: PathBuf,
    /// The tenant whose intents the guarded calls record (registered with
    /// `idem tenant create`).
    #[arg(long, value_parser = parse_tenant, required_unless_present = "check")]
    pub tenant: Option<idem_core::TenantId>,
    /// Check the guard file against the upstream and exit, serving
    /// nothing and opening no store: exit 0 when it would start, 2 naming
    /// the line when not. With --sample, say for each sample call which
    /// fields its key would cover, or why it would be forwarded unrecorded
    /// or refused.
    #[arg(long)]
    pub check: bool,
    /// With --check: a JSON file of sample calls, one object or an array
    /// of them, each {"tool": ..., "arguments": {...}, "_meta": {...}}
    /// ("-" reads standard input).
    #[arg(long, value_name = "FILE", requires = "check")]
    pub sample: Option<PathBuf>,
    /// The upstream MCP server to start over stdio, as a command line
    /// (split on spaces); overrides the guard file's [upstream].
    #[arg(long, value_name = "CMD", conflicts_with = "upstream_url")]
    pub upstream_command: Option<String>,
    /// The upstream MCP server over Streamable HTTP; overrides the guard
    /// file's [upstream].
    #[arg(long, value_name = "URL")]
    pub upstream_url: Option<String>,
    /// The account a command upstream runs as when its guard file names
    /// none ([upstream] user). Unset, a root idem runs it as `nobody`.
    #[arg(long, env = "IDEM_UPSTREAM_USER", value_name = "USER")]
    pub upstream_user: Option<String>,
    /// Where the intent store is.
    #[command(flatten)]
    pub db: DbArgs,
    /// The action catalog the guards name.
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// A file holding the HMAC secret (instead of IDEMPOTENCY_HMAC_KEY, or
    /// the data directory's `hmac.key` that `idem serve` uses).
    #[arg(long, env = "IDEM_HMAC_KEY_FILE", value_name = "FILE")]
    pub hmac_key_file: Option<PathBuf>,
    /// The largest guarded result stored for replay.
    #[command(flatten)]
    pub outcome: super::options::OutcomeArgs,
    /// Traces.
    #[command(flatten)]
    pub trace: super::options::TraceArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum WebhookCommand {
    /// Register an endpoint; prints its id and signing secret (`whsec_…`),
    /// the secret once only.
    Add(WebhookAddArgs),
    /// List a tenant's endpoints (without secrets), as JSON lines.
    List(WebhookListArgs),
    /// Remove an endpoint and the deliveries still waiting for it.
    Remove(WebhookRemoveArgs),
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum AlertCommand {
    /// Add an alert; prints it as JSON (with its id).
    Add(AlertAddArgs),
    /// List a tenant's alerts and their state, as JSON lines.
    List(WebhookListArgs),
    /// Remove an alert.
    Remove(AlertRemoveArgs),
}

/// `idem alert add` options.
#[derive(Debug, Clone, Args)]
pub struct AlertAddArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// The number watched: uncertain_now, duplicate_rate_pct or divergences.
    #[arg(long)]
    pub metric: String,
    /// Fires when the number is above this (exact decimal, e.g. 0 or 2.5).
    #[arg(long)]
    pub above: String,
    /// How long the number must stay above before the alert fires (e.g.
    /// 5m; without it the first evaluation above fires it).
    #[arg(long = "for", value_parser = parse_duration)]
    pub hold: Option<std::time::Duration>,
    /// The window rates and counts are measured over (e.g. 1h).
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub window: std::time::Duration,
    /// The webhook endpoint told when it fires and resolves (`ep_…`).
    #[arg(long)]
    pub webhook: String,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem alert remove` options.
#[derive(Debug, Clone, Args)]
pub struct AlertRemoveArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// The alert's id (`al_…`, as `add` printed it).
    pub alert_id: String,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem webhook add` options.
#[derive(Debug, Clone, Args)]
pub struct WebhookAddArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// Where to POST: an http or https URL.
    pub url: String,
    /// Topics to deliver, comma-separated (default: every topic).
    #[arg(long)]
    pub events: Option<String>,
    /// Accept a URL that points at a loopback, private, link-local or
    /// metadata address (tests and the embedded demo; the relay must run
    /// with the same flag to deliver there).
    #[arg(long)]
    pub allow_private_webhooks: bool,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem webhook list` options.
#[derive(Debug, Clone, Args)]
pub struct WebhookListArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem webhook remove` options.
#[derive(Debug, Clone, Args)]
pub struct WebhookRemoveArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub tenant: idem_core::TenantId,
    /// The endpoint's id (`ep_…`, as `add` printed it).
    pub endpoint_id: String,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem relay` options.
#[derive(Debug, Clone, Args)]
pub struct RelayCmdArgs {
    /// Pacing.
    #[command(flatten)]
    pub relay: RelayArgs,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum StatsCommand {
    /// Recount the statistics rollups from the intent, history and action
    /// tables (for data written before counts were committed with their
    /// writes, or after a restore). HTTP counters and delay histograms are
    /// kept: no table records them. Prints what was done, as JSON.
    Rebuild(StatsRebuildArgs),
}

/// `idem stats rebuild` options.
#[derive(Debug, Clone, Args)]
pub struct StatsRebuildArgs {
    /// Only this tenant (default: every tenant with data).
    #[arg(long, value_parser = parse_tenant)]
    pub tenant: Option<idem_core::TenantId>,
    /// Recount buckets from this UTC day on (`YYYY-MM-DD`; default: all).
    /// Deliveries are counted in their intent's first bucket, so a day
    /// before the first intent you care about keeps totals whole.
    #[arg(long, value_parser = parse_day_ms)]
    pub since: Option<i64>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Parses a tenant id (the message names what is wrong with it).
pub fn parse_tenant(s: &str) -> Result<idem_core::TenantId, String> {
    idem_core::TenantId::try_from(s).map_err(|e| format!("tenant {s:?}: {e}"))
}

/// Parses `--mcp-gateway NAME=FILE`.
pub fn parse_gateway(s: &str) -> Result<(String, PathBuf), String> {
    let (name, file) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=FILE (e.g. pay=guard.toml)"))?;
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok {
        return Err(format!(
            "gateway name `{name}`: 1 to 64 lowercase letters, digits or dashes"
        ));
    }
    if file.is_empty() {
        return Err(format!("gateway `{name}` names no guard file"));
    }
    Ok((name.to_owned(), PathBuf::from(file)))
}

/// Parses a UTC day, `YYYY-MM-DD`, into the epoch milliseconds of its start.
pub fn parse_day_ms(s: &str) -> Result<i64, String> {
    let bad = || format!("{s:?}: expected a day as YYYY-MM-DD, e.g. 2026-11-30");
    let mut parts = s.trim().split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if y.len() != 4 {
        return Err(bad());
    }
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<i32>(), m.parse::<u8>(), d.parse::<u8>()) else {
        return Err(bad());
    };
    let month = time::Month::try_from(m).map_err(|_| bad())?;
    let day = time::Date::from_calendar_date(y, month, d).map_err(|_| bad())?;
    Ok(day.midnight().assume_utc().unix_timestamp() * 1_000)
}

#[derive(Debug, Subcommand)]
pub(crate) enum TenantCommand {
    /// Register a tenant and print its API token, once (only its hash is kept).
    Create(TenantCreateArgs),
    /// Print a new token for a tenant (alone on stdout, once); its other
    /// tokens stop working after the grace (default: at once).
    RotateToken(TenantRotateArgs),
    /// Refuse every token of a tenant (401, problem type tenant-disabled);
    /// its data stays and the admin still sees its unsettled actions.
    Disable(TenantNameArgs),
    /// Let a disabled tenant's live tokens work again.
    Enable(TenantNameArgs),
    /// List tenants: name, created, live tokens (count, newest), disabled.
    /// Never a token.
    List(TenantListArgs),
}

/// `idem tenant rotate-token` options.
#[derive(Debug, Clone, Args)]
pub struct TenantRotateArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub name: idem_core::TenantId,
    /// How long the previous tokens keep working (e.g. 10m; at most 3650d).
    #[arg(long, value_parser = parse_duration)]
    pub grace: Option<std::time::Duration>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem tenant disable|enable` options.
#[derive(Debug, Clone, Args)]
pub struct TenantNameArgs {
    /// The tenant.
    #[arg(value_parser = parse_tenant)]
    pub name: idem_core::TenantId,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem tenant list` options.
#[derive(Debug, Clone, Args)]
pub struct TenantListArgs {
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem tenant create` options.
#[derive(Debug, Clone, Args)]
pub struct TenantCreateArgs {
    /// The tenant id (it enters every key derived for the tenant).
    pub name: String,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem purge` options.
#[derive(Debug, Clone, Args)]
pub struct PurgeArgs {
    /// Rows per delete statement: small batches keep every lock short.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: u32,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `idem retention` options. Durations are whole numbers with a unit:
/// `90s`, `30m`, `24h`, `7d`.
#[derive(Debug, Clone, Args)]
pub struct RetentionArgs {
    /// The tenant.
    pub tenant: String,
    /// Keep intents, their history and consumed-event marks this long after
    /// their last delivery. Must exceed the longest redelivery horizon.
    #[arg(long, value_parser = parse_duration_ms)]
    pub intents: Option<i64>,
    /// Keep actions and sent outbox messages this long after their last change.
    #[arg(long, value_parser = parse_duration_ms)]
    pub actions: Option<i64>,
    /// Keep HTTP Idempotency-Key records this long.
    #[arg(long = "http-keys", value_parser = parse_duration_ms)]
    pub http_keys: Option<i64>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum KeyCommand {
    /// Read a payload (or, with --batch, JSON lines) on stdin and print keys.
    Derive(super::key::DeriveArgs),
}

/// `idem serve` options.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; defaults to LEPTOS_SITE_ADDR, else 127.0.0.1:3000.
    #[arg(long, env = "IDEM_ADDR")]
    pub addr: Option<String>,
    /// Database and data directory.
    #[command(flatten)]
    pub db: DbArgs,
    /// Action catalog.
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// How often to purge expired rows and sweep expired leases (e.g. 5m).
    #[arg(long, env = "IDEM_PURGE_EVERY", default_value = "5m", value_parser = parse_duration)]
    pub purge_every: std::time::Duration,
    /// How often to evaluate alerts (`idem alert add`), e.g. 5s.
    #[arg(long, env = "IDEM_ALERT_EVERY", default_value = "5s", value_parser = parse_duration)]
    pub alert_every: std::time::Duration,
    /// Token that opens the live monitor to every tenant. Without it, the
    /// monitor is open on a loopback address and takes tenant API tokens
    /// elsewhere. Prefer the environment variable: arguments show in `ps`.
    #[arg(long, env = "IDEM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// A `Host` name to answer besides localhost and loopback addresses
    /// (repeatable; `IDEM_ALLOWED_HOSTS` takes a comma-separated list), for
    /// a deployment behind a proxy. Once any is given, requests naming
    /// another host get 421.
    #[arg(
        long = "allowed-host",
        env = "IDEM_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub allowed_hosts: Vec<String>,
    /// How long a client has to send a request's headers (also how long a
    /// kept-alive connection may wait for its next request), e.g. 10s.
    #[arg(long, env = "IDEM_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: std::time::Duration,
    /// A connection that moves no byte either way for this long is closed,
    /// mid-request included, e.g. 60s.
    #[arg(long, env = "IDEM_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// How long one request may take before it is answered 503 with its
    /// outcome unknown, e.g. 30s (0: no limit). The bound that holds when
    /// the database host vanishes without a reset.
    #[arg(long, env = "IDEM_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_timeout)]
    pub request_timeout: std::time::Duration,
    /// The largest provider outcome kept.
    #[command(flatten)]
    pub outcome: super::options::OutcomeArgs,
    /// Traces.
    #[command(flatten)]
    pub trace: super::options::TraceArgs,
    /// Client connections served at once; more wait to be accepted.
    #[arg(long, env = "IDEM_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Connections one client address may hold at once (0: a quarter of
    /// --max-connections); past it a new connection is closed at once.
    /// Behind a proxy every client has the proxy's address: set it to
    /// --max-connections there.
    #[arg(long, env = "IDEM_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub max_connections_per_address: u32,
    /// Live-feed streams (`/live/events`) open at once, every viewer
    /// together; at most a quarter of --max-connections is used, so feeds
    /// never take the slots ordinary requests need. Past it, 503 and the
    /// page polls instead.
    #[arg(long, env = "IDEM_MAX_FEEDS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_feeds: u32,
    /// How long one live-feed stream lives before the server ends it (the
    /// browser reconnects at once), e.g. 10m.
    #[arg(long, env = "IDEM_FEED_MAX_AGE", default_value = "10m", value_parser = parse_duration)]
    pub feed_max_age: std::time::Duration,
    /// Saved links (`POST /s`, `POST /c`) one client address may create per
    /// ten minutes; past it, 429 with Retry-After (0: unbounded).
    #[arg(long, env = "IDEM_SAVES_PER_ADDRESS", default_value_t = 30)]
    pub saves_per_address: u32,
    /// Saved links this instance creates per UTC day, every address
    /// together; past it, 429 until midnight UTC (0: unbounded).
    #[arg(long, env = "IDEM_SAVES_PER_DAY", default_value_t = 2_000)]
    pub saves_per_day: u32,
    /// Mark the monitor's session cookie `Secure` on every sign-in (it is
    /// when a proxy says the visitor came over https: X-Forwarded-Proto).
    #[arg(long, env = "IDEM_COOKIE_SECURE")]
    pub cookie_secure: bool,
    /// Let `/metrics` answer without the admin token when one is set (for a
    /// scraper that cannot send `Authorization: Bearer`).
    #[arg(long, env = "IDEM_METRICS_OPEN")]
    pub metrics_open: bool,
    /// A file holding the HMAC secret (instead of IDEMPOTENCY_HMAC_KEY).
    /// On PostgreSQL one of the two is required.
    #[arg(long, env = "IDEM_HMAC_KEY_FILE", value_name = "FILE")]
    pub hmac_key_file: Option<PathBuf>,
    /// Mount the demo payment provider (`/v1/demo/charges`) and its
    /// fault-injection header. A test and demo tool: never in production.
    #[arg(long, env = "IDEM_DEMO")]
    pub demo: bool,
    /// Mount the conformance fixture (POST /echo, /status/{code}, /slow,
    /// /large, /reset; GET /counter) behind the Idempotency-Key layer, for
    /// one fixed tenant and WITHOUT authentication, so an external test
    /// suite can grade the layer. A test tool: never in production.
    #[arg(long)]
    pub conformance_fixture: bool,
    /// The fixture's Idempotency-Key retention, in ms (default: 24 h).
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=31_536_000_000), requires = "conformance_fixture")]
    pub fixture_ttl_ms: Option<i64>,
    /// Do not run the outbox relay in this process (run `idem relay`
    /// elsewhere, or deliver the outbox yourself).
    #[arg(long, env = "IDEM_NO_RELAY")]
    pub no_relay: bool,
    /// Mount an MCP gateway at /mcp/gateways/NAME (Streamable HTTP; the
    /// bearer token picks the tenant): NAME=FILE, FILE a guard file whose
    /// [upstream] names a command (repeatable). NAME is 1 to 64 lowercase
    /// letters, digits or dashes.
    #[arg(long = "mcp-gateway", value_name = "NAME=FILE", value_parser = parse_gateway)]
    pub mcp_gateways: Vec<(String, PathBuf)>,
    /// The account a mounted gateway's command upstream runs as when its
    /// guard file names none ([upstream] user). Unset, a root idem runs it
    /// as `nobody`.
    #[arg(
        long,
        env = "IDEM_UPSTREAM_USER",
        value_name = "USER",
        requires = "mcp_gateways"
    )]
    pub upstream_user: Option<String>,
    /// The relay's pacing.
    #[command(flatten)]
    pub relay: RelayArgs,
}

impl ServeArgs {
    /// The plain configuration these options describe. The address is
    /// `--addr`, else `LEPTOS_SITE_ADDR` (what cargo-leptos sets), else
    /// 127.0.0.1:3000.
    pub fn into_config(self) -> anyhow::Result<Config> {
        let addr = self
            .addr
            .or_else(|| std::env::var("LEPTOS_SITE_ADDR").ok())
            .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
        let addr = addr
            .parse()
            .map_err(|e| anyhow::anyhow!("`{addr}` is not an address like 127.0.0.1:3000: {e}"))?;
        Ok(Config {
            addr,
            database_url: self.db.url()?,
            db_timeouts: self.db.timeouts(),
            data_dir: self.db.data_dir,
            purge_every: self.purge_every,
            alert_every: self.alert_every,
            admin_token: match self.admin_token.as_deref().map(str::trim) {
                None => None,
                // Blank would silently mean an open monitor.
                Some("") => anyhow::bail!(
                    "the admin token (--admin-token, IDEM_ADMIN_TOKEN) is blank: leave it unset \
                     for a monitor open on loopback only, or give one of at least {} characters",
                    crate::config::ADMIN_TOKEN_MIN
                ),
                Some(t) if t.chars().count() < crate::config::ADMIN_TOKEN_MIN => anyhow::bail!(
                    "the admin token (--admin-token, IDEM_ADMIN_TOKEN) must have at least {} \
                     characters: it opens every tenant's monitor, and a short one is guessed. \
                     Generate one with `openssl rand -hex 32`",
                    crate::config::ADMIN_TOKEN_MIN
                ),
                Some(t) => AdminToken::new(t),
            },
            allowed_hosts: self.allowed_hosts,
            metrics_open: self.metrics_open,
            cookie_secure: self.cookie_secure,
            saves_per_address: self.saves_per_address,
            saves_per_day: self.saves_per_day,
            limits: idem_api::conn::ConnLimits {
                header_timeout: self.header_timeout,
                idle_timeout: self.idle_timeout,
                max_connections: self.max_connections as usize,
                max_per_address: self.max_connections_per_address as usize,
                max_feeds: self.max_feeds as usize,
                feed_max_age: self.feed_max_age,
                request_timeout: self.request_timeout,
            },
            max_outcome_bytes: self.outcome.bytes(),
            catalog: self.catalog.load()?,
            secret: self
                .hmac_key_file
                .map_or(SecretSource::DataDir, SecretSource::File),
            demo: self.demo,
            conformance_fixture: self.conformance_fixture,
            fixture_ttl_ms: self.fixture_ttl_ms,
            relay: if self.no_relay {
                None
            } else {
                let mut relay = self.relay.config()?;
                // The demo's webhook receivers listen on this machine; the
                // relay says so when it starts (a demo setting only).
                relay.allow_private |= self.demo;
                Some(relay)
            },
            mcp_gateways: self.mcp_gateways,
            upstream_user: self.upstream_user,
            clock: std::sync::Arc::new(idem_store::SystemClock),
        })
    }
}
