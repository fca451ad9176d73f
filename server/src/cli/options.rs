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
                Ok(crate::config::sqlite_url(&self.data_dir))
            }
        }
    }
}
