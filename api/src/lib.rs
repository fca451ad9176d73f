//! idem's HTTP API: `/v1`, the Idempotency-Key layer, the probes and
//! `/metrics`, the MCP doors (idem's own tools and the mounted gateways),
//! the OpenAPI document, the trust boundary every route shares and the
//! connection loop. The server mounts [`router`] beside its pages; nothing
//! here renders a page, so this crate has no Leptos, maud, plotters or
//! clap, and keeps its line tables in dev and test builds.
//!
//! Layers, lowest first: `error`, `conn`, `turns`, `attempts` are leaves;
//! `state`, `extract`, `metrics`, `access`, `boundary` import only leaves;
//! the areas (`v1`, `idempotency`, `demo`, `fixture`, `mcp`, `openapi`,
//! `probes`) import the layers below; this module merges the areas.

pub mod access;
pub mod attempts;
pub mod boundary;
pub mod conn;
pub mod demo;
pub mod error;
pub mod extract;
pub mod fixture;
pub mod idempotency;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod probes;
pub mod state;
pub mod turns;
pub mod v1;

pub use state::{ApiParts, ApiState};

use axum::middleware::{from_fn_with_state, map_response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The API's routes: the probes and `/metrics`, the MCP doors, `/v1` (with
/// the demo provider under `/v1/demo` when mounted) and the conformance
/// fixture when mounted. Everything under `/v1` answers its errors as
/// problem documents, an unknown path or method included. The probes, the
/// MCP doors and `/v1` but the demo provider are counted and timed in
/// `/metrics` by route pattern.
pub fn router(api: &ApiState, access: Arc<access::LiveAccess>) -> Router {
    let observe = from_fn_with_state(api.metrics.clone(), metrics::observe);
    let mut v1 = v1::router(api)
        .merge(
            Router::new()
                .route("/openapi.json", get(openapi::serve))
                .with_state(api.clone()),
        )
        .route_layer(observe.clone());
    if api.demo {
        v1 = v1.merge(demo::router(api));
    }
    let v1 = v1
        .fallback(no_such_route)
        .layer(map_response(boundary::problem_document));
    let routes = Router::new()
        .merge(probes::router(api, access))
        .merge(mcp::router(api))
        .route_layer(observe)
        .nest("/v1", v1);
    if api.conformance_fixture {
        routes.merge(fixture::router(api))
    } else {
        routes
    }
}

/// A path under `/v1` that names no route.
async fn no_such_route() -> error::ApiError {
    error::ApiError::from_status(axum::http::StatusCode::NOT_FOUND)
}
