//! The HTTP side: [`router`] builds the application's routes from one
//! [`AppState`] (tests call it directly), [`serve`] runs them.
//!
//! The API (`/v1`, the probes, `/metrics`, the MCP doors) is
//! `idem_api::router`, mounted here beside the pages. Layers, lowest
//! first: `state`, `sheet`, `forms`, `page_request`, `page`, `calculator`,
//! `compare` and `assets` are leaves that import no area; the areas
//! (`dashboard`, `charts`, `live`, `prices`) import only leaves; this
//! module merges them with the API's routes.
//!
//! Every page is a route here, with its own handler: the handler reads its
//! address, loads what the page shows and renders it through
//! [`page::render`]. Nothing else decides which page a path is.

pub mod assets;
pub mod calculator;
pub mod charts;
pub mod compare;
pub mod dashboard;
pub mod drawing;
pub mod forms;
pub mod live;
pub mod page;
pub mod page_request;
pub mod prices;
pub mod saved;
pub mod sheet;
pub mod state;

use app::shell;
use axum::middleware::{from_fn, from_fn_with_state, map_response};
use axum::routing::{get, post};
use axum::Router;
pub use state::{ApiParts, ApiState, AppState};
use tokio::net::TcpListener;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// The application's routes, without a listener: tests call this directly.
pub fn router(state: AppState) -> Router {
    // Leptos renders on tokio's executor (an `Err` says it already does).
    let _ = any_spawner::Executor::init_tokio();
    // The monitor's routes answer to a token or its session cookie: never
    // kept by a cache, the browser's included; and while the monitor is
    // open, never to a visitor a proxy forwarded without credentials.
    let open = std::sync::Arc::new(state.live.access.open);
    let monitor = |routes: Router<AppState>| {
        routes
            .layer(map_response(no_store))
            .route_layer(from_fn_with_state(open.clone(), forms::open_monitor))
    };
    // The pages' posts and files, and the monitor's data, which `/metrics`
    // counts by route pattern (the pages themselves are not API traffic).
    let counted = Router::new()
        .route("/s", post(dashboard::save))
        .route("/c", post(dashboard::save_comparison))
        .route("/export.csv", get(dashboard::export_csv))
        .route("/prices", get(prices::page))
        .route("/charts/figures", get(charts::figures))
        .route("/charts/{file}", get(charts::image))
        .merge(monitor(
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
                .route("/live/uncertain.json", get(live::action::uncertain_json)),
        ))
        .route_layer(from_fn_with_state(
            state.api.metrics.clone(),
            idem_api::metrics::observe,
        ));
    let pages = Router::new()
        .route("/", get(dashboard::calculator))
        .route("/s/{id}", get(dashboard::saved))
        .route("/compare", get(dashboard::compare))
        .route("/c/{id}", get(dashboard::comparison))
        .merge(monitor(
            Router::new()
                .route("/live", get(live::page))
                .route("/live/actions/{key}", get(live::action_page)),
        ))
        .merge(counted);
    // The site's files, each at its own path (a path axum would read as a
    // parameter is left to the static file handler below).
    let pages = state
        .assets
        .paths()
        .filter(|p| !p.contains(['{', '}', '*', ':']))
        .fold(pages, |pages, path| pages.route(path, get(assets::serve)))
        // Any other path: a file of the site, else the page that says
        // there is nothing here (404), with what every page gets.
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(page::not_found_context(), shell))
        // The pages' half of the trust boundary: nonces, form tokens, the
        // policy on HTML.
        .layer(from_fn(forms::pages));
    let hosts = state.hosts.clone();
    // The API's routes come stated and concrete from idem-api, so their
    // handlers, the MCP doors and rmcp's service code are compiled once,
    // there, not again in this crate (a release build shares no generics
    // across crates).
    idem_api::router(&state.api, state.live.access.clone())
        .merge(pages.with_state(state))
        // Inside the request id (so a refusal carries one): the trust
        // boundary every route shares.
        .layer(from_fn_with_state(hosts, idem_api::boundary::boundary))
        // Outermost first: an id for every request (the client's, or a new
        // one), echoed in the response, and a span carrying it. Failures are
        // logged where they happen, once, so the trace layer logs none.
        // Every text response and the wasm, compressed with brotli or gzip
        // when the client asks; see `compress_when`.
        .layer(CompressionLayer::new().compress_when(compress_when()))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(idem_api::metrics::request_span)
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(
            idem_api::metrics::MintRequestId,
        ))
        .layer(from_fn(idem_api::boundary::bound_request_id))
}

/// Serves `router` on `listener` within `limits` until Ctrl-C or SIGTERM.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: idem_api::conn::ConnLimits,
) -> anyhow::Result<()> {
    idem_api::conn::serve(listener, router, limits, shutdown()).await?;
    Ok(())
}

/// [`serve`], ending the live feeds' streams as soon as shutdown begins.
pub async fn serve_with_feeds(
    listener: TcpListener,
    router: Router,
    limits: idem_api::conn::ConnLimits,
    feeds: std::sync::Arc<live::state::Feeds>,
) -> anyhow::Result<()> {
    let signal = async move {
        shutdown().await;
        // Live feeds never end by themselves: end them first, so the grace
        // is for requests that finish.
        feeds.close();
    };
    idem_api::conn::serve(listener, router, limits, signal).await?;
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

/// Bodies of this many bytes or fewer go as they are.
pub const COMPRESS_ABOVE: u16 = 1400;

/// Which responses are compressed: tower-http's default predicate (no
/// images but SVG, no gRPC, no server-sent events, whose events must not
/// wait in a compressor's buffer) with a floor of one TCP segment instead
/// of 32 bytes. A body that fits one segment gains nothing on the wire,
/// and setting up a compressor costs both ends: every `/v1` answer of a
/// guarded effect is a few hundred bytes, and the HTTP clients workers use
/// (httpx, Node's fetch) always ask for gzip, which cost about 0.2 ms of
/// CPU per effect. A body of unknown size (a streamed page) is compressed.
fn compress_when() -> impl Predicate {
    SizeAbove::new(COMPRESS_ABOVE)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
}
