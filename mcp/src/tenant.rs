//! Which tenant an MCP call acts for: one fixed for a stdio session, or
//! the one the HTTP request's bearer token authenticated.

use idem_core::TenantId;
use rmcp::service::{RequestContext, RoleServer};

/// Which tenant a call acts for.
#[derive(Clone, Debug)]
pub enum TenantSource {
    /// One tenant for the whole session (`idem mcp serve --tenant`,
    /// `idem mcp gateway --tenant`).
    Fixed(TenantId),
    /// The tenant the HTTP request's bearer token authenticated: the
    /// server's authentication layer puts its [`TenantId`] in the request's
    /// extensions, which the Streamable HTTP transport hands to the call.
    FromRequest,
}

impl TenantSource {
    /// The tenant of this call, when there is one.
    pub fn of(&self, context: &RequestContext<RoleServer>) -> Option<TenantId> {
        match self {
            TenantSource::Fixed(t) => Some(t.clone()),
            TenantSource::FromRequest => context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|p| p.extensions.get::<TenantId>())
                .cloned(),
        }
    }
}
