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
    let mut file = GuardFile::load(&args.guard, &catalog).map_err(|e| Usage(e.to_string()))?;
    if file.upstream_user.is_none() {
        file.upstream_user = args.upstream_user.clone();
    }
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
    if args.check {
        return check(&args, &catalog, file, upstream).await;
    }
    let Some(tenant) = args.tenant.clone() else {
        return Err(Usage("--tenant is required unless --check".into()).into());
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
        // A stdio gateway has no /metrics to show them in.
        observer: None,
    })
    .await?;
    match store.tenant_info(&tenant).await {
        Ok(t) if t.disabled_ms.is_some() => {
            store.close().await;
            return Err(Usage(format!(
                "tenant {:?} is disabled (`idem tenant enable` lets it work again)",
                tenant.as_str()
            ))
            .into());
        }
        Ok(_) => {}
        Err(idem_store::Error::NotFound) => {
            store.close().await;
            return Err(Usage(format!(
                "there is no tenant {:?} in this database; `idem tenant create` adds one",
                tenant.as_str()
            ))
            .into());
        }
        Err(e) => return Err(e.into()),
    }
    let gateway = match Gateway::start(
        store.clone(),
        TenantSource::Fixed(tenant),
        file,
        upstream,
        args.outcome.bytes(),
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

/// The largest --sample file read.
const MAX_SAMPLE_BYTES: u64 = 1024 * 1024;

/// `idem mcp gateway --check`: the guard file bound to the upstream's tools
/// as a start would, then each sample call explained; nothing is served,
/// no store opened, and the upstream is asked for its tools only.
async fn check(
    args: &McpGatewayArgs,
    catalog: &idem_core::Catalog,
    file: GuardFile,
    upstream: Option<Upstream>,
) -> anyhow::Result<()> {
    use std::io::Read as _;
    let samples: Vec<serde_json::Value> = match &args.sample {
        None => Vec::new(),
        Some(path) => {
            let mut text = String::new();
            let read = if path.as_os_str() == "-" {
                std::io::stdin()
                    .take(MAX_SAMPLE_BYTES + 1)
                    .read_to_string(&mut text)
            } else {
                std::fs::File::open(path)
                    .and_then(|f| f.take(MAX_SAMPLE_BYTES + 1).read_to_string(&mut text))
            };
            read.map_err(|e| Usage(format!("--sample {}: {e}", path.display())))?;
            if text.len() as u64 > MAX_SAMPLE_BYTES {
                return Err(Usage(format!(
                    "--sample {}: over {MAX_SAMPLE_BYTES} bytes",
                    path.display()
                ))
                .into());
            }
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Usage(format!("--sample {}: not JSON: {e}", path.display())))?;
            match v {
                serde_json::Value::Array(a) => a,
                one => vec![one],
            }
        }
    };
    let target = upstream
        .or_else(|| file.upstream.clone())
        .ok_or_else(|| Usage(idem_mcp::StartError::NoUpstream.to_string()))?;
    let connected = idem_mcp::gateway::Connected::start(&target, &file)
        .await
        .map_err(|e| Usage(e.to_string()))?;
    let bound = idem_mcp::gateway::bind(&file, &connected)
        .await
        .map_err(|e| Usage(e.to_string()))?;
    println!(
        "{}: the guard file binds to the upstream ({} guarded: {})",
        file.path,
        bound.len(),
        bound
            .iter()
            .map(|g| g.tool.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, sample) in samples.iter().enumerate() {
        let object = |name: &str| match sample.get(name) {
            None | Some(serde_json::Value::Null) => Ok(serde_json::Map::new()),
            Some(serde_json::Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(Usage(format!(
                "--sample: call {i}: {name} is not an object"
            ))),
        };
        let Some(tool) = sample.get("tool").and_then(serde_json::Value::as_str) else {
            return Err(Usage(format!("--sample: call {i} names no \"tool\"")).into());
        };
        let arguments = object("arguments")?;
        let meta = object("_meta")?;
        print!(
            "{}",
            idem_mcp::gateway::explain(&file, catalog, tool, &arguments, &meta)
        );
    }
    Ok(())
}

/// `idem mcp serve`: idem's own tools on stdio for one tenant. It reads and
/// settles what is stored; it derives no key, so it needs no secret.
pub(crate) async fn serve(args: McpServeArgs) -> anyhow::Result<()> {
    let store = super::admin::tenant_store(&args.db, &args.tenant).await?;
    if let Ok(t) = store.tenant_info(&args.tenant).await {
        if t.disabled_ms.is_some() {
            store.close().await;
            return Err(Usage(format!(
                "tenant {:?} is disabled (`idem tenant enable` lets it work again)",
                args.tenant.as_str()
            ))
            .into());
        }
    }
    tracing::info!("idem's MCP server serves on stdio");
    let served = IdemTools::new(store.clone(), TenantSource::Fixed(args.tenant))
        .with_max_outcome(args.outcome.bytes())
        .serve_stdio()
        .await;
    store.close().await;
    served.map_err(Into::into)
}
