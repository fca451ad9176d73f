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
}

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Key {
            command: KeyCommand::Derive(args),
        } => crate::key_cmd::run(&args),
        Command::Cost(args) => crate::cost_cmd::run(&args),
        Command::Serve(args) => run_async(crate::web::serve_cmd(args)),
        Command::Migrate(args) => run_async(migrate(args)),
    }
}

fn run_async(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    init_tracing();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(fut) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("IDEM_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn migrate(args: DbArgs) -> anyhow::Result<()> {
    let store = idem_store::Store::connect(&args.url()?).await?;
    store.migrate().await?;
    tracing::info!(backend = ?store.backend(), "migrations applied");
    store.close().await;
    Ok(())
}
