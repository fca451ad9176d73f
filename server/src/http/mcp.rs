//! The MCP routes (Streamable HTTP): idem's own server at `/mcp` and each
//! gateway `idem serve --mcp-gateway NAME=FILE` mounts at
//! `/mcp/gateways/{name}`. A tenant's bearer token picks the tenant, as on
//! `/v1`; the site's Host rule applies (the boundary layer), and a request
//! that carries a foreign `Origin` is refused (403): the MCP transport
//! requires servers to validate it, against DNS rebinding.

use super::error::ApiError;
use super::extract::authenticate;
use super::state::ApiState;
use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use idem_mcp::{IdemTools, TenantSource};

/// The MCP routes.
pub fn router<S: Clone + Send + Sync + 'static>(api: &ApiState) -> Router<S> {
    let own = IdemTools::new(api.store.clone(), TenantSource::FromRequest);
    let mut routes = Router::new().route_service("/mcp", idem_mcp::streamable::service(own));
    for (name, gateway) in &api.mcp_gateways {
        routes = routes.route_service(
            &format!("/mcp/gateways/{name}"),
            idem_mcp::streamable::service(gateway.clone()),
        );
    }
    routes
        .route_layer(from_fn_with_state(api.store.clone(), authenticate))
        .route_layer(from_fn(same_origin_only))
}

/// Refuses a request whose `Origin` names another site (a page there
/// cannot drive an agent's tools through the visitor's browser).
async fn same_origin_only(req: Request, next: Next) -> Response {
    if !super::guard::same_origin(req.headers()) {
        return ApiError::forbidden(
            "urn:idem:problem:cross-site",
            "the MCP endpoint takes no request from another site's pages (Origin)",
        )
        .into_response();
    }
    next.run(req).await
}
