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

impl TenantSource {
    /// Refused when a session's fixed tenant was disabled while it runs
    /// (over HTTP a disabled tenant's token is refused before this): every
    /// call, guarded or passed through, stops being served.
    pub async fn refuse_disabled(
        &self,
        store: &idem_store::Store,
        tenant: &TenantId,
    ) -> Result<(), rmcp::ErrorData> {
        if !matches!(self, TenantSource::Fixed(_)) {
            return Ok(());
        }
        match store.tenant_info(tenant).await {
            Ok(info) if info.disabled_ms.is_some() => Err(rmcp::ErrorData::invalid_request(
                format!(
                    "tenant {} is disabled; nothing was recorded, executed or forwarded",
                    tenant.as_str()
                ),
                None,
            )),
            _ => Ok(()),
        }
    }
}
