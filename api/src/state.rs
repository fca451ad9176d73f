//! The API's state: the handles every `/v1` route, the probes and the MCP
//! doors need, behind one reference count. The server's `AppState` holds
//! one beside the pages' own.

use super::metrics::Metrics;
use idem_core::{Catalog, KeyDeriver};
use idem_store::Store;
use std::sync::Arc;

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
    /// Whether the demo provider's routes are mounted (`idem serve --demo`);
    /// the OpenAPI document lists them only then.
    pub demo: bool,
    /// Whether the conformance fixture is mounted
    /// (`idem serve --conformance-fixture`).
    pub conformance_fixture: bool,
    /// The largest outcome kept (`--max-outcome-bytes`).
    pub max_outcome_bytes: usize,
    /// The MCP gateways mounted at `/mcp/gateways/{name}`, upstreams started.
    pub mcp_gateways: Vec<(String, idem_mcp::Gateway)>,
    /// The claims' attempt ids in use on this instance.
    pub attempts: Arc<super::attempts::Attempts>,
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
