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
        let tenants: std::sync::Arc<Vec<idem_core::TenantId>> =
            std::sync::Arc::new(gateway.tenants().map(<[_]>::to_vec).unwrap_or_default());
        routes = routes.merge(
            Router::new()
                .route_service(
                    &format!("/mcp/gateways/{name}"),
                    idem_mcp::streamable::service(gateway.clone()),
                )
                .route_layer(from_fn_with_state(tenants, its_tenants_only)),
        );
    }
    routes
        .route_layer(from_fn_with_state(api.store.clone(), authenticate))
        .route_layer(from_fn(same_origin_only))
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
            "urn:idem:problem:other-tenant",
            "this MCP gateway serves other tenants (its guard file's `tenants`)",
        )
        .into_response();
    }
    next.run(req).await
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
