//! The application state: one [`AppState`] for the router, with the parts
//! each area takes through axum's `FromRef`. It composes the states of the
//! leaves below it (the API's, the site's files, the monitor's, the forms'
//! limits) and imports nothing else: no handler, no area.

use super::assets::AssetTable;
use super::live::state::LiveState;
use axum::extract::FromRef;
pub use idem_api::access::LiveAccess;
use idem_api::metrics::Metrics;
pub use idem_api::{ApiParts, ApiState};
use idem_store::Store;
use leptos::config::LeptosOptions;
use std::sync::Arc;

/// Everything a handler may need, cloned cheaply per request.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Where the site's files are and how they are named.
    pub leptos_options: LeptosOptions,
    /// What the API and the probes need.
    pub api: ApiState,
    /// The site's files, read and compressed once.
    pub assets: AssetTable,
    /// The live monitor: the API's handles plus who may look.
    pub live: LiveState,
    /// Which `Host` names are answered (see `idem_api::boundary`).
    pub hosts: Arc<idem_api::boundary::HostRule>,
    /// The bounds on anonymous saves (`POST /s`, `POST /c`).
    pub saves: Arc<super::forms::SaveLimits>,
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Self {
        state.api.store.clone()
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        state.api.metrics.clone()
    }
}
