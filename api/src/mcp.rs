//! The MCP routes (Streamable HTTP): idem's own server at `/mcp` and each
//! gateway `idem serve --mcp-gateway NAME=FILE` mounts at
//! `/mcp/gateways/{name}`. A tenant's bearer token picks the tenant, as on
//! `/v1`; the site's Host rule applies (the boundary layer), and a request
//! that carries a foreign `Origin` is refused (403): the MCP transport
//! requires servers to validate it, against DNS rebinding.

use super::error::{ApiError, Problem};
use super::extract::authenticate;
use super::state::ApiState;
use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use idem_mcp::{IdemTools, TenantSource};

/// Which tools of one MCP route are guarded (none on idem's own server).
type Guarded = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The MCP routes.
pub fn router(api: &ApiState) -> Router {
    let own = IdemTools::new(api.store.clone(), TenantSource::FromRequest)
        .with_max_outcome(api.max_outcome_bytes);
    let none: Guarded = std::sync::Arc::new(|_: &str| false);
    let mut routes = Router::new().merge(
        Router::new()
            .route_service("/mcp", idem_mcp::streamable::own(own))
            .route_layer(from_fn_with_state(none, every_message_answered)),
    );
    for (name, gateway) in &api.mcp_gateways {
        let tenants: std::sync::Arc<Vec<idem_core::TenantId>> =
            std::sync::Arc::new(gateway.tenants().map(<[_]>::to_vec).unwrap_or_default());
        let g = gateway.clone();
        let guarded: Guarded = std::sync::Arc::new(move |tool: &str| g.guards(tool));
        routes = routes.merge(
            Router::new()
                .route_service(
                    &format!("/mcp/gateways/{name}"),
                    idem_mcp::streamable::gateway(gateway.clone()),
                )
                .route_layer(from_fn_with_state(guarded, every_message_answered))
                .route_layer(from_fn_with_state(tenants, its_tenants_only)),
        );
    }
    routes
        .route_layer(from_fn_with_state(api.store.clone(), authenticate))
        .route_layer(from_fn(same_origin_only))
}

/// Screens a POSTed JSON-RPC message before the MCP transport reads it
/// ([`idem_mcp::screen`]): one over the bound is answered with its
/// request's id (read from the start of the body, which is read no further),
/// text that is not JSON with a parse error, and a guarded call naming a
/// member twice with an `isError` result naming it. An answer with an id is
/// a 200 an agent's SDK matches to its request; one without is a 400.
async fn every_message_answered(
    axum::extract::State(guarded): axum::extract::State<Guarded>,
    req: Request,
    next: Next,
) -> Response {
    use http_body_util::BodyExt;
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    let max = idem_mcp::streamable::MAX_MESSAGE_BYTES;
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // Read up to one byte past the bound, and no further: the start is
    // kept for the id, the rest of an oversized body is never read.
    let mut body = body;
    let mut kept = Vec::new();
    let mut read = 0usize;
    while read <= max {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read += data.len();
                    let room = (max + 1).saturating_sub(kept.len()).min(data.len());
                    kept.extend_from_slice(&data[..room]);
                }
            }
            Some(Err(_)) => {
                return ApiError::body(
                    axum::http::StatusCode::BAD_REQUEST,
                    "the body could not be read",
                )
                .into_response()
            }
        }
    }
    let len = if read > max {
        declared.unwrap_or(read).max(read)
    } else {
        read
    };
    let bytes = axum::body::Bytes::from(kept);
    match idem_mcp::screen::screen(&bytes, len, max, |t| guarded(t)) {
        idem_mcp::screen::Screened::Pass => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        idem_mcp::screen::Screened::Answer(a) => {
            let status = if a["id"].is_null() {
                axum::http::StatusCode::BAD_REQUEST
            } else {
                axum::http::StatusCode::OK
            };
            (status, axum::Json(a)).into_response()
        }
    }
}

/// Refuses (403) a token whose tenant the mounted gateway does not name in
/// its guard file's `tenants`: its upstream and credentials are theirs.
async fn its_tenants_only(
    axum::extract::State(tenants): axum::extract::State<std::sync::Arc<Vec<idem_core::TenantId>>>,
    req: Request,
    next: Next,
) -> Response {
    let allowed = req
        .extensions()
        .get::<idem_core::TenantId>()
        .is_some_and(|t| tenants.contains(t));
    if !allowed {
        return ApiError::forbidden(
            Problem::OtherTenant,
            "this MCP gateway serves other tenants (its guard file's `tenants`)",
        )
        .into_response();
    }
    next.run(req).await
}

/// Refuses a request whose `Origin` names another site (a page there
/// cannot drive an agent's tools through the visitor's browser).
async fn same_origin_only(req: Request, next: Next) -> Response {
    if !super::boundary::same_origin(req.headers()) {
        return ApiError::forbidden(
            Problem::CrossSite,
            "the MCP endpoint takes no request from another site's pages (Origin)",
        )
        .into_response();
    }
    next.run(req).await
}
