//! `idem mcp gateway`: the MCP gateway on stdio for one agent, and `idem
//! mcp serve`, idem's own tools on stdio. It opens the
//! store as `idem serve` does (the same database and HMAC secret, so the
//! same keys), checks the guard file, the tenant and the upstream, then
//! serves until the agent closes stdin. Stdout is the MCP channel: every
//! word for a person goes to stderr.

use super::args::{McpGatewayArgs, McpServeArgs};
use super::Usage;
use crate::config::SecretSource;
use idem_mcp::{Gateway, GuardFile, IdemTools, TenantSource, Upstream};
use std::sync::Arc;

pub(crate) async fn gateway(args: McpGatewayArgs) -> anyhow::Result<()> {
    let catalog = Arc::new(args.catalog.load()?);
    let file = GuardFile::load(&args.guard, &catalog).map_err(|e| Usage(e.to_string()))?;
    let upstream = match (&args.upstream_command, &args.upstream_url) {
        (Some(cmd), _) => {
            let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
            if argv.is_empty() {
                return Err(Usage("--upstream-command is empty".into()).into());
            }
            Some(Upstream::Command(argv))
        }
        (None, Some(url)) => Some(Upstream::Url {
            url: url.clone(),
            headers: Default::default(),
        }),
        (None, None) => None,
    };
    let (store, _) = crate::startup::open_keyed_store(crate::startup::KeyedStore {
        database_url: &args.db.url()?,
        data_dir: &args.db.data_dir,
        secret: args
            .hmac_key_file
            .clone()
            .map_or(SecretSource::DataDir, SecretSource::File),
        catalog,
        timeouts: args.db.timeouts(),
        clock: Arc::new(idem_store::SystemClock),
    })
    .await?;
    match store.tenant_info(&args.tenant).await {
        Ok(t) if t.disabled_ms.is_some() => {
            store.close().await;
            return Err(Usage(format!(
                "tenant {:?} is disabled (`idem tenant enable` lets it work again)",
                args.tenant.as_str()
            ))
            .into());
        }
        Ok(_) => {}
        Err(idem_store::Error::NotFound) => {
            store.close().await;
            return Err(Usage(format!(
                "there is no tenant {:?} in this database; `idem tenant create` adds one",
                args.tenant.as_str()
            ))
            .into());
        }
        Err(e) => return Err(e.into()),
    }
    let gateway = match Gateway::start(
        store.clone(),
        TenantSource::Fixed(args.tenant),
        file,
        upstream,
    )
    .await
    {
        Ok(g) => g,
        Err(e) => {
            store.close().await;
            return Err(Usage(e.to_string()).into());
        }
    };
    tracing::info!("the MCP gateway serves on stdio");
    let served = gateway.serve_stdio().await;
    store.close().await;
    served.map_err(Into::into)
}

/// `idem mcp serve`: idem's own tools on stdio for one tenant. It reads and
/// settles what is stored; it derives no key, so it needs no secret.
pub(crate) async fn serve(args: McpServeArgs) -> anyhow::Result<()> {
    let store = super::admin::tenant_store(&args.db, &args.tenant).await?;
    tracing::info!("idem's MCP server serves on stdio");
    let served = IdemTools::new(store.clone(), TenantSource::Fixed(args.tenant))
        .serve_stdio()
        .await;
    store.close().await;
    served.map_err(Into::into)
}
