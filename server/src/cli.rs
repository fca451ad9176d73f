//! The `idem` command line.

use clap::{Args, Parser, Subcommand};
use idem_core::Catalog;
use std::path::PathBuf;
use std::process::ExitCode;

/// idem: money and model calls that execute once.
#[derive(Debug, Parser)]
#[command(name = "idem", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Derive idempotency keys from intent payloads.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Compute the cost and risk of duplicated calls (exact decimals).
    Cost(crate::cost_cmd::CostArgs),
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
    Audit(crate::audit::AuditArgs),
    /// Run N conversations through a redelivering queue and a demo payment
    /// provider with each key strategy, and report duplicate charges.
    Simulate(crate::simulate::SimulateArgs),
    /// Manage tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TenantCommand {
    /// Register a tenant and print its API token, once (only its hash is kept).
    Create(TenantCreateArgs),
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

/// Parses `90s`, `30m`, `24h` or `7d` into milliseconds.
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
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(format!(
            "{s:?}: must be positive and at most a few million years"
        )),
    }
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Read a payload (or, with --batch, JSON lines) on stdin and print keys.
    Derive(crate::key_cmd::DeriveArgs),
}

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
}

impl DbArgs {
    /// The URL to connect to, creating the data directory for SQLite.
    pub fn url(&self) -> anyhow::Result<String> {
        match &self.database_url {
            Some(u) => Ok(u.clone()),
            None => {
                std::fs::create_dir_all(&self.data_dir).map_err(|e| {
                    anyhow::anyhow!("cannot create {}: {e}", self.data_dir.display())
                })?;
                Ok(format!(
                    "sqlite://{}",
                    self.data_dir.join("idem.db").display()
                ))
            }
        }
    }
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
    /// Token that opens the live monitor to every tenant. Without it, the
    /// monitor is open on a loopback address and takes tenant API tokens
    /// elsewhere. Prefer the environment variable: arguments show in `ps`.
    #[arg(long, env = "IDEM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    parse_duration_ms(s).map(|ms| std::time::Duration::from_millis(ms.unsigned_abs()))
}

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Key {
            command: KeyCommand::Derive(args),
        } => crate::key_cmd::run(&args),
        Command::Cost(args) => crate::cost_cmd::run(&args),
        Command::Audit(args) => crate::audit::run(&args),
        Command::Simulate(args) => {
            init_tracing();
            crate::simulate::run(&args)
        }
        Command::Serve(args) => run_async(crate::web::serve_cmd(args)),
        Command::Migrate(args) => run_async(migrate(args)),
        Command::Purge(args) => run_async(purge(args)),
        Command::Retention(args) => run_async(retention(args)),
        Command::Tenant {
            command: TenantCommand::Create(args),
        } => run_async(tenant_create(args)),
    }
}

/// The multi-threaded runtime the async commands run on; says why when it
/// cannot start.
pub(crate) fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            None
        }
    }
}

fn run_async(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    init_tracing();
    let Some(rt) = runtime() else {
        return ExitCode::FAILURE;
    };
    match rt.block_on(fut) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("IDEM_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into log files.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Opens and migrates the store for admin work (no key secret needed).
async fn admin_store(db: &DbArgs) -> anyhow::Result<idem_store::Store> {
    let store = idem_store::Store::connect(&db.url()?, idem_store::Options::admin()).await?;
    store.migrate().await?;
    Ok(store)
}

async fn migrate(args: DbArgs) -> anyhow::Result<()> {
    let store = admin_store(&args).await?;
    tracing::info!(backend = ?store.backend(), "migrations applied");
    store.close().await;
    Ok(())
}

async fn purge(args: PurgeArgs) -> anyhow::Result<()> {
    let store = admin_store(&args.db).await?;
    let report = store.purge(args.batch).await?;
    println!("{}", serde_json::to_string(&report)?);
    store.close().await;
    Ok(())
}

async fn tenant_create(args: TenantCreateArgs) -> anyhow::Result<()> {
    let tenant = idem_core::TenantId::try_from(args.name.as_str())?;
    let store = admin_store(&args.db).await?;
    let token = store.create_tenant(&tenant, &args.name).await;
    store.close().await;
    let token = token?;
    println!("{}", token.expose());
    eprintln!("tenant {tenant} created; this token is shown once: store it now");
    Ok(())
}

async fn retention(args: RetentionArgs) -> anyhow::Result<()> {
    let tenant = idem_core::TenantId::try_from(args.tenant.as_str())?;
    let store = admin_store(&args.db).await?;
    let mut s = store.session().await?;
    let mut r = s.retention(&tenant).await?;
    if args.intents.is_some() || args.actions.is_some() || args.http_keys.is_some() {
        r.intent_ms = args.intents.unwrap_or(r.intent_ms);
        r.action_ms = args.actions.unwrap_or(r.action_ms);
        r.http_ms = args.http_keys.unwrap_or(r.http_ms);
        s.set_retention(&tenant, &r).await?;
    }
    drop(s);
    println!(
        "{}",
        serde_json::json!({
            "tenant": tenant.as_str(),
            "intents_ms": r.intent_ms,
            "actions_ms": r.action_ms,
            "http_keys_ms": r.http_ms,
        })
    );
    store.close().await;
    Ok(())
}
