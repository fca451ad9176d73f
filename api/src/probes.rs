//! The probes and `/metrics`: `/healthz` (the process answers), `/readyz`
//! (this instance's store can write), `/readyz/mcp` (the mounted gateways'
//! upstreams) and the Prometheus text, the admin's where an admin token is
//! set.

use super::access::{may_read_reasons, LiveAccess};
use super::metrics::serve_metrics;
use super::state::ApiState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The probes' routes and `/metrics`.
pub fn router(api: &ApiState, access: Arc<LiveAccess>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/readyz/mcp", get(mcp_health))
        .route(
            "/metrics",
            get(metrics_with_probes)
                .route_layer(from_fn_with_state(access.clone(), metrics_access)),
        )
        .with_state(Probes {
            api: api.clone(),
            access,
        })
}

/// What the probes read: the API's handles and who may read reasons.
#[derive(Clone, axum::extract::FromRef)]
struct Probes {
    api: ApiState,
    access: Arc<LiveAccess>,
}

/// `/metrics` is the admin's where an admin token is set (unless
/// `--metrics-open`): the counters name every tenant.
async fn metrics_access(
    State(access): State<Arc<LiveAccess>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let (Some(admin), false) = (&access.admin, access.metrics_open) {
        let ok = super::extract::bearer(req.headers()).is_ok_and(|t| admin.matches(t));
        if !ok {
            return super::error::ApiError::unauthorized(req.headers().contains_key(axum::http::header::AUTHORIZATION))
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
    State(access): State<Arc<LiveAccess>>,
    headers: axum::http::HeaderMap,
) -> (StatusCode, String) {
    let answer = api.store.writable(READY_WITHIN).await;
    api.metrics.store_writable.set(i64::from(answer.is_ok()));
    match answer {
        Ok(()) => (StatusCode::OK, "ready".into()),
        Err(why) if may_read_reasons(&access, &headers) => {
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
    State(access): State<Arc<LiveAccess>>,
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
    if may_read_reasons(&access, &headers) {
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
