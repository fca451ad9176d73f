//! The HTTP side: one `AppState`, `router(state)` for tests, `serve` for the binary.

use crate::cli::ServeArgs;
use crate::metrics::{observe, serve_metrics, Metrics};
use app::{shell, App};
use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;
use idem_core::{Catalog, KeyDeriver};
use idem_store::{Options, Store};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Everything a handler may need, cloned cheaply per request.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Where the site's files are and how they are named.
    pub leptos_options: LeptosOptions,
    /// What the API and the probes need.
    pub api: ApiState,
    /// The live monitor: the API's handles plus who may look.
    pub live: crate::live::LiveState,
}

/// What the API needs, behind one reference count. The `/v1` routes hold
/// this rather than [`AppState`]: axum clones a route's state for every
/// request (several times, through its layers), and each clone of four
/// handles was four atomic increments on cache lines every core shares
/// (2% of the server's CPU under load, docs/PERFORMANCE.md).
#[derive(Clone)]
pub struct ApiState(Arc<ApiParts>);

/// The handles inside an [`ApiState`]; reached through `Deref`.
pub struct ApiParts {
    /// The database.
    pub store: Store,
    /// The action catalog.
    pub catalog: Arc<Catalog>,
    /// The keyed HMAC state.
    pub deriver: Arc<KeyDeriver>,
    /// The process's Prometheus counters.
    pub metrics: Arc<Metrics>,
}

impl ApiState {
    /// Bundles the API's handles.
    pub fn new(parts: ApiParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for ApiState {
    type Target = ApiParts;
    fn deref(&self) -> &ApiParts {
        &self.0
    }
}

/// The site options: cargo-leptos's environment variables when present
/// (`LEPTOS_OUTPUT_NAME`, `LEPTOS_SITE_ROOT`, `LEPTOS_SITE_PKG_DIR`,
/// `LEPTOS_SITE_ADDR`), else the workspace's defaults.
pub fn leptos_options(addr: Option<&str>) -> anyhow::Result<LeptosOptions> {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let addr = match addr {
        Some(a) => a.to_owned(),
        None => env("LEPTOS_SITE_ADDR", "127.0.0.1:3000"),
    };
    let site_addr: std::net::SocketAddr = addr
        .parse()
        .map_err(|e| anyhow::anyhow!("`{addr}` is not an address like 127.0.0.1:3000: {e}"))?;
    Ok(LeptosOptions::builder()
        .output_name(env("LEPTOS_OUTPUT_NAME", "idem"))
        .site_root(env("LEPTOS_SITE_ROOT", "target/site"))
        .site_pkg_dir(env("LEPTOS_SITE_PKG_DIR", "pkg"))
        .site_addr(site_addr)
        .build())
}

/// The application's routes, without a listener: tests call this directly.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let options = state.leptos_options.clone();
    // The pages: saved scenarios are looked up before a page renders.
    let pages = Router::new()
        .leptos_routes_with_context(
            &state,
            routes,
            crate::dashboard::page_context(),
            move || shell(options.clone()),
        )
        .route_layer(from_fn_with_state(
            state.api.clone(),
            crate::dashboard::resolve_saved,
        ))
        .route_layer(from_fn_with_state(
            state.live.clone(),
            crate::live::live_markup,
        ));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(serve_metrics))
        .merge(crate::api::routes(&state))
        .route("/s", post(crate::dashboard::save))
        .route("/export.csv", get(crate::dashboard::export_csv))
        .route("/live/data.json", get(crate::live::data_json))
        .route("/live/fragment", get(crate::live::fragment))
        .route("/live/events", get(crate::live::events))
        .route("/live/login", post(crate::live::login))
        // Counted by route pattern, so only the routes above (the dashboard's
        // pages and files are not API traffic).
        .route_layer(from_fn_with_state(state.api.metrics.clone(), observe))
        .merge(pages)
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .with_state(state)
}

async fn readyz(State(api): State<ApiState>) -> (StatusCode, &'static str) {
    match api.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable")
        }
    }
}

/// Serves `router` on `listener` until Ctrl-C or SIGTERM.
pub async fn serve(listener: TcpListener, router: Router) -> anyhow::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
    tracing::info!("shutting down");
}

/// Opens the database of `db` (migrated), loads its secret, and builds the
/// state `idem serve` and `idem simulate` run on.
pub async fn open_state(
    db: &crate::cli::DbArgs,
    catalog: idem_core::Catalog,
    addr: Option<&str>,
    admin: Option<crate::live::AdminToken>,
) -> anyhow::Result<AppState> {
    let url = db.url()?;
    check_writable(&url)?;
    let (secret, created) = crate::secret::for_serve(&db.data_dir)?;
    if created {
        tracing::info!(
            path = %db.data_dir.join(crate::secret::FILE).display(),
            "created a random HMAC secret for this data directory (export it as {} to derive the same keys elsewhere)",
            crate::secret::ENV
        );
    }
    let catalog = Arc::new(catalog);
    let deriver = Arc::new(KeyDeriver::new(&secret));
    let store = Store::connect(&url, Options::new(catalog.clone(), deriver.clone())).await?;
    store.migrate().await?;
    let options = leptos_options(addr)?;
    let api = ApiState::new(ApiParts {
        store,
        catalog,
        deriver,
        metrics: Arc::new(Metrics::new()),
    });
    let access = crate::live::LiveAccess::for_addr(options.site_addr, admin);
    Ok(AppState {
        leptos_options: options,
        live: crate::live::LiveState::new(api.clone(), access),
        api,
    })
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

/// `idem serve`: open the database, load the secret and catalog, listen.
pub async fn serve_cmd(args: ServeArgs) -> anyhow::Result<()> {
    let admin = args
        .admin_token
        .as_deref()
        .and_then(crate::live::AdminToken::new);
    let state = open_state(&args.db, args.catalog.load()?, args.addr.as_deref(), admin).await?;
    let store = state.api.store.clone();
    let maintenance = tokio::spawn(maintain(
        store.clone(),
        state.api.metrics.clone(),
        args.purge_every,
    ));
    let addr = state.leptos_options.site_addr;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    tracing::info!(backend = ?store.backend(), "listening on http://{}", listener.local_addr()?);
    serve(listener, router(state)).await?;
    maintenance.abort();
    store.close().await;
    Ok(())
}

/// Purges expired rows and sweeps expired leases every `every`.
async fn maintain(store: Store, metrics: Arc<Metrics>, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match store.purge(1000).await {
            Ok(report) => metrics.count_purge(&report),
            Err(e) => {
                tracing::warn!(error = %e, "periodic purge failed; it runs again next period")
            }
        }
    }
}
