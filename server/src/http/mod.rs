//! The HTTP side: [`router`] builds the application's routes from one
//! [`AppState`] (tests call it directly), [`serve`] runs them.
//!
//! Layers, lowest first: `state`, `error`, `extract`, `sheet`,
//! `guard`, `page`, `calculator`, `compare`, `conn`, `turns`, `attempts`, `assets` and `metrics`
//! are leaves that import no area; the areas (`v1`, `demo`, `idempotency`, `openapi`, `dashboard`,
//! `charts`, `live`, `prices`) import only leaves (and the area they wear:
//! `demo` wears `idempotency`, the calculator page the `live` panel); this
//! module merges the areas.
//!
//! Every page is a route here, with its own handler: the handler reads its
//! address, loads what the page shows and renders it through
//! [`page::render`]. Nothing else decides which page a path is.

pub mod assets;
pub mod attempts;
pub mod calculator;
pub mod charts;
pub mod compare;
pub mod conn;
pub mod dashboard;
pub mod demo;
pub mod error;
pub mod extract;
pub mod fixture;
pub mod guard;
pub mod idempotency;
pub mod live;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod page;
pub mod prices;
pub mod sheet;
pub mod state;
pub mod turns;
pub mod v1;

use app::shell;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state, map_response};
use axum::routing::{get, post};
use axum::Router;
use metrics::{observe, serve_metrics};
pub use state::{ApiParts, ApiState, AppState};
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// The application's routes, without a listener: tests call this directly.
pub fn router(state: AppState) -> Router {
    // Leptos renders on tokio's executor (an `Err` says it already does).
    let _ = any_spawner::Executor::init_tokio();
    // The pages, each with its handler (`page::render` draws them). The
    // price list `/prices`, a page too, is with the counted routes below:
    // `/metrics` has always counted it.
    let pages = Router::new()
        .route("/", get(dashboard::calculator))
        .route("/s/{id}", get(dashboard::saved))
        .route("/compare", get(dashboard::compare))
        .route("/c/{id}", get(dashboard::comparison))
        // The monitor's pages show a tenant's numbers to whoever signed in
        // (a cookie): never kept by a cache, the browser's included.
        .route("/live", get(live::page).layer(map_response(no_store)))
        .route(
            "/live/actions/{key}",
            get(live::action_page).layer(map_response(no_store)),
        );
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/readyz/mcp", get(mcp_health))
        .route(
            "/metrics",
            get(metrics_with_probes).route_layer(from_fn_with_state(
                state.live.access.clone(),
                metrics_access,
            )),
        )
        .merge(v1::router(&state.api))
        .merge(mcp::router(&state.api))
        // The document describes the areas, so the router serves it, not v1.
        .route("/v1/openapi.json", get(openapi::serve))
        .route("/s", post(dashboard::save))
        .route("/c", post(dashboard::save_comparison))
        .route("/export.csv", get(dashboard::export_csv))
        .route("/prices", get(prices::page))
        .route("/charts/figures", get(charts::figures))
        .route("/charts/{file}", get(charts::image))
        // Everything under /live answers to a token or the monitor's session
        // cookie: never kept by a cache, the browser's included.
        .merge(
            Router::new()
                .route("/live/data.json", get(live::data_json))
                .route("/live/charts/{file}", get(live::chart))
                .route("/live/fragment", get(live::fragment))
                .route("/live/events", get(live::events))
                .route("/live/login", post(live::login))
                .route("/live/logout", post(live::logout))
                .route(
                    "/live/actions/{key}/reconcile",
                    post(live::action::reconcile),
                )
                .route(
                    "/live/actions/{key}/supersede",
                    post(live::action::supersede),
                )
                .route("/live/uncertain.csv", get(live::action::uncertain_csv))
                .route("/live/uncertain.json", get(live::action::uncertain_json))
                .layer(map_response(no_store)),
        )
        // Counted by route pattern, so only the routes above (the dashboard's
        // pages and files are not API traffic).
        .route_layer(from_fn_with_state(state.api.metrics.clone(), observe));
    // The site's files, each at its own path (a path axum would read as a
    // parameter is left to the static file handler below).
    let app = state
        .assets
        .paths()
        .filter(|p| !p.contains(['{', '}', '*', ':']))
        .fold(app, |app, path| app.route(path, get(assets::serve)));
    let app = if state.api.demo {
        app.merge(demo::router(&state.api))
    } else {
        app
    };
    let app = if state.api.conformance_fixture {
        app.merge(fixture::router(&state.api))
    } else {
        app
    };
    let hosts = state.hosts.clone();
    app.merge(pages)
        // Any other path: a file of the site, else the page that says
        // there is nothing here (404), with what every page gets.
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(page::not_found_context(), shell))
        .with_state(state)
        // Inside the request id (so a refusal carries one): the trust
        // boundary's checks and the headers every response wears.
        .layer(from_fn_with_state(hosts, guard::boundary))
        // Outermost first: an id for every request (the client's, or a new
        // one), echoed in the response, and a span carrying it. Failures are
        // logged where they happen, once, so the trace layer logs none.
        // Every text response and the wasm, compressed with brotli or gzip
        // when the client asks (tower-http's default predicate leaves out
        // bodies under 32 bytes, images and server-sent events, whose
        // events must not wait in a compressor's buffer).
        .layer(CompressionLayer::new())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(metrics::request_span)
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(metrics::MintRequestId))
        .layer(from_fn(guard::bound_request_id))
}

/// `/metrics` is the admin's where an admin token is set (unless
/// `--metrics-open`): the counters name every tenant.
async fn metrics_access(
    State(access): State<std::sync::Arc<state::LiveAccess>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let (Some(admin), false) = (&access.admin, access.metrics_open) {
        let ok = extract::bearer(req.headers()).is_ok_and(|t| admin.matches(t));
        if !ok {
            return error::ApiError::unauthorized(req.headers().contains_key(axum::http::header::AUTHORIZATION))
                .detail("/metrics needs the admin token (Authorization: Bearer <admin token>) while one is set; start with --metrics-open to let any scraper read it")
                .into_response();
        }
    }
    next.run(req).await
}

/// `/metrics`, with the probes' gauges brought up to date first: the
/// store's writability (the readiness probe's answer, shared with
/// `/readyz` within a second) and each mounted gateway's upstream.
async fn metrics_with_probes(State(api): State<ApiState>) -> axum::response::Response {
    let writable = api.store.writable(READY_WITHIN).await;
    api.metrics.store_writable.set(i64::from(writable.is_ok()));
    for (name, gateway) in &api.mcp_gateways {
        api.metrics.set_mcp_upstream(name, gateway.upstream_up());
    }
    serve_metrics(State(api.metrics.clone()), State(api.store.clone())).await
}

/// Whether a probe's caller may read why: the admin token, or a loopback
/// visitor of an open monitor (who sees every tenant there already). Any
/// other caller gets `ready` or `not ready`, nothing of the deployment.
fn may_read_reasons(access: &state::LiveAccess, headers: &axum::http::HeaderMap) -> bool {
    match &access.admin {
        Some(admin) => extract::bearer(headers).is_ok_and(|t| admin.matches(t)),
        None => access.open_to(headers),
    }
}

/// Ready when *this instance's* store can write now
/// ([`idem_store::Store::writable`]): 503 otherwise. Nothing else decides
/// it: a mounted MCP gateway whose upstream is down is one tenant's
/// trouble, reported by `/readyz/mcp` and `/metrics`, and never pulls the
/// instance from a load balancer for every tenant. The reason goes to the
/// log and `/metrics` (`idem_store_writable`), and to a caller holding the
/// admin token; anyone else reads `ready` or `not ready`. Answers within
/// [`READY_WITHIN`].
async fn readyz(
    State(api): State<ApiState>,
    State(live): State<state::LiveState>,
    headers: axum::http::HeaderMap,
) -> (StatusCode, String) {
    let answer = api.store.writable(READY_WITHIN).await;
    api.metrics.store_writable.set(i64::from(answer.is_ok()));
    match answer {
        Ok(()) => (StatusCode::OK, "ready".into()),
        Err(why) if may_read_reasons(&live.access, &headers) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}"))
        }
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "not ready".into()),
    }
}

/// The mounted MCP gateways' upstreams: 200 `up` when every one answers
/// (or none is mounted), 503 `down` while one is being started again. The
/// gateways' names go only to the admin (as [`readyz`]'s reasons); the
/// gauge `idem_mcp_upstream_up{gateway}` carries them to `/metrics`.
async fn mcp_health(
    State(api): State<ApiState>,
    State(live): State<state::LiveState>,
    headers: axum::http::HeaderMap,
) -> (StatusCode, String) {
    let down: Vec<&str> = api
        .mcp_gateways
        .iter()
        .filter(|(name, g)| {
            let up = g.upstream_up();
            api.metrics.set_mcp_upstream(name, up);
            !up
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if down.is_empty() {
        return (StatusCode::OK, "up".into());
    }
    if may_read_reasons(&live.access, &headers) {
        let names = down
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "down: the upstream of MCP gateway {names} is down (it is being started again)"
            ),
        );
    }
    (StatusCode::SERVICE_UNAVAILABLE, "down".into())
}

/// How long the readiness probe's write may take: well under the 5 to 10
/// s interval load balancers and orchestrators probe at, so a write that
/// hangs (a table lock, a full disk, a replica in recovery) is seen as
/// not ready within one probe, and a probe never overlaps the next.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves `router` on `listener` within `limits` until Ctrl-C or SIGTERM.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: conn::ConnLimits,
) -> anyhow::Result<()> {
    conn::serve(listener, router, limits, shutdown()).await?;
    Ok(())
}

/// [`serve`], ending the live feeds' streams as soon as shutdown begins.
pub async fn serve_with_feeds(
    listener: TcpListener,
    router: Router,
    limits: conn::ConnLimits,
    feeds: std::sync::Arc<state::Feeds>,
) -> anyhow::Result<()> {
    let signal = async move {
        shutdown().await;
        // Live feeds never end by themselves: end them first, so the grace
        // is for requests that finish.
        feeds.close();
    };
    conn::serve(listener, router, limits, signal).await?;
    Ok(())
}

pub(crate) async fn shutdown() {
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

/// `Cache-Control: no-store` on a response that says nothing of caching
/// (one that does, such as a chart's `private, max-age=5`, chose already).
async fn no_store(mut res: axum::response::Response) -> axum::response::Response {
    res.headers_mut()
        .entry(axum::http::header::CACHE_CONTROL)
        .or_insert(axum::http::HeaderValue::from_static("no-store"));
    res
}
