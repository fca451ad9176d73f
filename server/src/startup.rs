//! Building and running the application: [`Application::build`] turns a
//! [`Config`] into an open, migrated store, the state and a bound listener;
//! [`Application::run_until_stopped`] serves it. `idem serve`, `idem
//! simulate` and every HTTP test start here, so they cannot drift apart.

use crate::config::{Config, SecretSource};
use crate::http::assets::AssetTable;
use crate::http::live::state::LiveState;
use crate::http::state::{ApiParts, ApiState, AppState, LiveAccess};
use idem_api::boundary::HostRule;
use idem_api::metrics::Metrics;
use idem_core::KeyDeriver;
use idem_store::{Chore, Options, Store};
use leptos::config::LeptosOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// A built application: the state, and the listener it will serve on.
pub struct Application {
    state: AppState,
    listener: TcpListener,
    addr: SocketAddr,
    purge_every: Duration,
    alert_every: Duration,
    relay: Option<crate::relay::Relay>,
    limits: idem_api::conn::ConnLimits,
}

impl Application {
    /// Opens (and migrates) the database, loads the secret, binds the
    /// listener. Fails, naming the cause, when any of them cannot be done.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let catalog = Arc::new(config.catalog);
        // Made before the store, which reports its operations' times to it.
        let metrics = Arc::new(Metrics::new());
        let (store, deriver) = open_keyed_store(KeyedStore {
            database_url: &config.database_url,
            data_dir: &config.data_dir,
            secret: config.secret,
            catalog: catalog.clone(),
            timeouts: config.db_timeouts,
            clock: config.clock.clone(),
            observer: Some(Arc::new(metrics.store_seconds.clone())),
        })
        .await?;
        let listener = TcpListener::bind(config.addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.addr))?;
        let addr = listener.local_addr()?;
        if config.conformance_fixture {
            tracing::warn!(
                "the conformance fixture is mounted (/echo, /status/{{code}}, /slow, /large, /counter, /reset) without authentication: a test tool, never for production"
            );
            if let Some(ms) = config.fixture_ttl_ms {
                let tenant = idem_api::fixture::fixture_tenant();
                let mut s = store.session().await?;
                let mut r = s.retention(&tenant).await?;
                r.http_ms = ms;
                s.set_retention(&tenant, &r).await?;
            }
        }
        if config.demo {
            tracing::warn!(
                "the demo payment provider is mounted (/v1/demo/charges, Idem-Demo-Fault): a test and demo tool, never for production"
            );
        }
        let mut mcp_gateways = Vec::with_capacity(config.mcp_gateways.len());
        for (name, path) in &config.mcp_gateways {
            let mut file = idem_mcp::GuardFile::load(path, &catalog)
                .map_err(|e| Misconfigured(format!("--mcp-gateway {name}: {e}")))?;
            if file.upstream_user.is_none() {
                file.upstream_user = config.upstream_user.clone();
            }
            // A mount shares one upstream and its credentials: it serves the
            // tenants it names, each of which must exist.
            let Some(tenants) = &file.tenants else {
                return Err(Misconfigured(format!(
                    "--mcp-gateway {name}: {}:1: a mounted gateway names the tenants it serves: add `tenants = [\"<tenant>\"]` at the top of the file",
                    file.path
                ))
                .into());
            };
            for t in tenants {
                match store.tenant_info(t).await {
                    Ok(_) => {}
                    Err(idem_store::Error::NotFound) => {
                        return Err(Misconfigured(format!(
                            "--mcp-gateway {name}: {}:{}: there is no tenant {:?} in this database; `idem tenant create` adds one",
                            file.path,
                            file.tenants_line,
                            t.as_str()
                        ))
                        .into())
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let gateway = idem_mcp::Gateway::start(
                store.clone(),
                idem_mcp::TenantSource::FromRequest,
                file,
                None,
                config.max_outcome_bytes,
            )
            .await
            .map_err(|e| Misconfigured(format!("--mcp-gateway {name}: {e}")))?;
            tracing::info!(gateway = %name, "MCP gateway mounted at /mcp/gateways/{name}");
            mcp_gateways.push((name.clone(), gateway));
        }
        let api = ApiState::new(ApiParts {
            store,
            catalog,
            deriver,
            metrics,
            demo: config.demo,
            conformance_fixture: config.conformance_fixture,
            max_outcome_bytes: config.max_outcome_bytes,
            mcp_gateways,
            attempts: Default::default(),
        });
        for (name, gateway) in &api.mcp_gateways {
            gateway.time_with(name, api.metrics.mcp_times.clone());
        }
        // The access rule follows the configured address (an unspecified
        // 0.0.0.0 is not loopback even when the port is picked later).
        let access = LiveAccess {
            metrics_open: config.metrics_open,
            cookie_secure: config.cookie_secure,
            ..LiveAccess::for_addr(config.addr, config.admin_token)
        };
        let hosts = Arc::new(HostRule {
            deadline: Some(config.limits.request_timeout).filter(|d| !d.is_zero()),
            ..HostRule::new(access.open, &config.allowed_hosts)
        });
        let (leptos_options, assets) = site(addr);
        let state = AppState {
            leptos_options,
            assets,
            live: LiveState::with_feeds(
                api.clone(),
                access,
                crate::http::live::state::Feeds::new(
                    config.limits.feed_slots(),
                    config.limits.feed_max_age,
                ),
            ),
            api,
            hosts,
            saves: Arc::new(crate::http::forms::SaveLimits::new(
                config.saves_per_address,
                config.saves_per_day,
            )),
        };
        let relay = match config.relay {
            Some(cfg) => {
                let store = crate::relay::store(
                    &config.database_url,
                    config.clock.clone(),
                    &cfg,
                    config.db_timeouts,
                )
                .await?;
                Some(crate::relay::Relay::new(store, cfg)?)
            }
            None => None,
        };
        Ok(Self {
            state,
            listener,
            addr,
            purge_every: config.purge_every,
            alert_every: config.alert_every,
            relay,
            limits: config.limits,
        })
    }

    /// The address the listener is bound to (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, for clients of this application.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The state the routes run on (the store, metrics, ...).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until Ctrl-C or SIGTERM, purging expired rows and sweeping
    /// expired leases every purge period, and relaying the outbox to webhook
    /// endpoints (unless `--no-relay`), meanwhile; then closes the store.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let store = self.state.api.store.clone();
        let maintenance = tokio::spawn(maintain(
            store.clone(),
            self.state.api.metrics.clone(),
            self.purge_every,
        ));
        let alerts = tokio::spawn(evaluate_alerts(
            store.clone(),
            self.state.api.metrics.clone(),
            self.alert_every,
        ));
        // Deliveries in flight at shutdown are dropped with the task: their
        // leases run out and the next relay sends them again.
        let relay = self.relay.map(|r| {
            let store = r.store().clone();
            (tokio::spawn(r.run(std::future::pending())), store)
        });
        tracing::info!(backend = ?store.backend(), "listening on http://{}", self.addr);
        let feeds = self.state.live.feeds.clone();
        let served = crate::http::serve_with_feeds(
            self.listener,
            crate::http::router(self.state),
            self.limits,
            feeds,
        )
        .await;
        maintenance.abort();
        alerts.abort();
        if let Some((task, store)) = relay {
            task.abort();
            store.close().await;
        }
        store.close().await;
        served
    }
}

/// The site options: where the built site's files are, from cargo-leptos's
/// environment variables when present (`LEPTOS_OUTPUT_NAME`,
/// `LEPTOS_SITE_ROOT`, `LEPTOS_SITE_PKG_DIR`), else the workspace's
/// defaults. They name build output, not behaviour, so they stay outside
/// [`Config`].
pub fn leptos_options(addr: SocketAddr) -> LeptosOptions {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    LeptosOptions::builder()
        .output_name(env("LEPTOS_OUTPUT_NAME", "idem"))
        .site_root(env("LEPTOS_SITE_ROOT", "target/site"))
        .site_pkg_dir(env("LEPTOS_SITE_PKG_DIR", "pkg"))
        .site_addr(addr)
        .build()
}

/// The site options and the site's files. When the build's files are there,
/// the pages link them under names carrying their digest
/// (`idem.<digest>.wasm`), which browsers may cache for good; their
/// compressed copies are made on a blocking thread, so the server answers
/// at once.
fn site(addr: SocketAddr) -> (LeptosOptions, AssetTable) {
    let mut options = leptos_options(addr);
    let output = options.output_name.to_string();
    // Under `cargo leptos watch` the files change while the server runs (a
    // front-end change rebuilds the wasm without a restart): they are read
    // from disk on each request, by the static file handler.
    if std::env::var("LEPTOS_WATCH").is_ok_and(|w| w == "true") {
        return (options, AssetTable::default());
    }
    let root = std::path::PathBuf::from(options.site_root.as_ref());
    let assets = AssetTable::load(&root, &options.site_pkg_dir, &output);
    if let Some(v) = assets.version() {
        options.output_name = format!("{output}.{v}").into();
    }
    let compress = assets.clone();
    tokio::task::spawn_blocking(move || {
        let t = std::time::Instant::now();
        compress.compress();
        tracing::debug!(
            ms = t.elapsed().as_millis() as u64,
            "the site's files are compressed"
        );
    });
    (options, assets)
}

/// Fails early, naming the cause, when an SQLite database's directory
/// cannot be written: SQLite itself would only say "unable to open database
/// file", or open read-only and fail on the first write. Its write-ahead log
/// and shared-memory files live beside the database, so the directory must
/// be writable, not only the file.
fn check_writable(url: &str) -> anyhow::Result<()> {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(());
    };
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    let dir = match std::path::Path::new(path).parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let probe = dir.join(format!(".idem-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot write in {}, where the SQLite database {path} and its write-ahead log live: {e}",
            dir.display()
        )),
    }
}

/// Purges expired rows and sweeps expired leases every `every`, the first
/// time one period after start. Not at once: a fleet restarting together
/// would purge all at once, and a purge racing the first requests made the
/// tests' own purges flaky (an expired lease is shown as uncertain, and
/// taken over by the next `begin`, before any sweep marks it).
async fn maintain(store: Store, metrics: Arc<Metrics>, every: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !leads(&store, &metrics, Chore::Purge, every).await {
            continue;
        }
        match store.purge(1000).await {
            Ok(report) => metrics.count_purge(&report),
            Err(e) => {
                tracing::warn!(error = %idem_api::error::chain(&e), "periodic purge failed; it runs again next period")
            }
        }
    }
}

/// Evaluates the alerts every `every` while this instance leads them.
async fn evaluate_alerts(store: Store, metrics: Arc<Metrics>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !leads(&store, &metrics, Chore::Alerts, every).await {
            continue;
        }
        if let Err(e) = crate::alerts::evaluate(&store).await {
            tracing::warn!(error = %idem_api::error::chain(&e), "alert evaluation failed");
        }
    }
}

/// Whether this instance runs `chore` this period: it takes or renews the
/// chore's lease for two periods and a second, so a leader renews it well
/// before it runs out and, when the leader dies, another instance takes
/// over within that time. A lease that cannot be taken (the database is
/// down) skips the run; the next period tries again.
async fn leads(store: &Store, metrics: &Metrics, chore: Chore, every: Duration) -> bool {
    let lease = i64::try_from(every.as_millis().saturating_mul(2)).unwrap_or(i64::MAX / 2) + 1000;
    match store.lead(chore, lease).await {
        Ok(Some(_)) => {
            metrics.count_chore(chore, "led");
            true
        }
        Ok(None) => {
            metrics.count_chore(chore, "skipped");
            false
        }
        Err(e) => {
            metrics.count_chore(chore, "failed");
            tracing::warn!(chore = chore.as_str(), error = %idem_api::error::chain(&e), "the chore's lease could not be taken; it runs again next period");
            false
        }
    }
}

/// What [`open_keyed_store`] needs: where the database is and where the
/// HMAC secret comes from.
pub struct KeyedStore<'a> {
    /// `sqlite://…` or `postgres://…`.
    pub database_url: &'a str,
    /// The data directory (the embedded database's secret file lives here).
    pub data_dir: &'a std::path::Path,
    /// Where the secret comes from.
    pub secret: SecretSource,
    /// The action catalog.
    pub catalog: Arc<idem_core::Catalog>,
    /// The database timeouts.
    pub timeouts: crate::config::DbTimeouts,
    /// The store's clock.
    pub clock: Arc<dyn idem_store::Clock>,
    /// Told how long each store operation took (`/metrics`).
    pub observer: Option<Arc<dyn idem_store::Observer>>,
}

/// Opens and migrates the store that derives keys, with the deployment's
/// secret (`IDEMPOTENCY_HMAC_KEY`, `--hmac-key-file`, or the data
/// directory's), refusing a secret the database was not set up with.
/// `idem serve` and `idem mcp gateway` open it here, so they derive the
/// same keys.
pub async fn open_keyed_store(k: KeyedStore<'_>) -> anyhow::Result<(Store, Arc<KeyDeriver>)> {
    check_writable(k.database_url)?;
    let postgres = k.database_url.starts_with("postgres");
    let secret = match k.secret {
        SecretSource::Given(s) => s,
        SecretSource::File(path) => crate::secret::from_file(&path)?,
        SecretSource::DataDir if postgres && !crate::secret::in_env() => anyhow::bail!(
            "refusing to start on PostgreSQL without a shared HMAC secret: every instance on \
             one database must derive the same key for the same intent, and a secret generated \
             here would differ from the others'. Set {} (or --hmac-key-file) to the secret \
             your services share.",
            crate::secret::ENV
        ),
        SecretSource::DataDir => {
            let (secret, created) = crate::secret::for_serve(k.data_dir)?;
            if created {
                tracing::info!(
                    path = %k.data_dir.join(crate::secret::FILE).display(),
                    "created a random HMAC secret for this data directory (export it as {} to derive the same keys elsewhere)",
                    crate::secret::ENV
                );
            }
            secret
        }
    };
    let deriver = Arc::new(KeyDeriver::new(&secret));
    let mut options = k.timeouts.apply(Options::new(k.catalog, deriver.clone()));
    options.clock = k.clock;
    options.observer = k.observer;
    let store = Store::connect(k.database_url, options).await?;
    // Which file the embedded database is, so an operator can tell it
    // from the one a CLI command run elsewhere opened (a PostgreSQL URL
    // may hold a password: never logged).
    if let Some(path) = k
        .database_url
        .strip_prefix("sqlite://")
        .map(|p| p.split('?').next().unwrap_or(p))
    {
        let path = std::path::Path::new(path);
        let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        tracing::info!(database = %shown.display(), "opened the embedded database");
    }
    store.migrate().await?;
    match store.check_secret().await {
        Ok(()) => {}
        Err(idem_store::Error::SecretMismatch) => anyhow::bail!(
            "refusing to start: this database was set up with another HMAC secret, so this \
             instance would derive other keys for the same intents. Start it with the secret \
             the other instances use ({} or --hmac-key-file). The database keeps only a check \
             value of the secret, never the secret.",
            crate::secret::ENV
        ),
        Err(e) => return Err(e.into()),
    }
    Ok((store, deriver))
}

/// A configuration `idem serve` cannot start with (a guard file's mistake,
/// named with its line): the command exits 2, as for a malformed option.
#[derive(Debug)]
pub struct Misconfigured(pub String);

impl std::fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Misconfigured {}
