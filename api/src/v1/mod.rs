//! The JSON API under `/v1`: bearer-token tenants, `application/problem+json`
//! errors. The tenant always comes from the token, never from the request.

pub mod actions;
pub mod events;
pub mod intents;
pub mod keys;
pub mod oversize;
pub mod stats;

use super::extract::authenticate;
use super::state::ApiState;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;

pub use super::extract::BODY_LIMIT;

/// The `/v1` routes, relative to `/v1` (the crate's router nests them). They hold an [`ApiState`] of their own: axum clones a
/// route's state for every request, and the API needs none of the site's.
pub fn router(api: &ApiState) -> Router {
    let authed = Router::new()
        .route("/keys", post(keys::derive_key))
        .route("/intents", post(intents::record_intent))
        .route("/intents/{action}/{reference}", get(intents::get_intent))
        .route(
            "/intents/{action}/{reference}/supersede",
            post(intents::supersede_intent),
        )
        .route("/actions/{key}", get(actions::get_action))
        .route("/actions/{key}/begin", post(actions::begin_action))
        .route("/actions/{key}/complete", post(actions::complete_action))
        .route("/actions/{key}/fail", post(actions::fail_action))
        .route("/actions/{key}/renew", post(actions::renew_action))
        .route("/actions/{key}/uncertain", post(actions::mark_uncertain))
        .route("/actions/{key}/reconcile", post(actions::reconcile_action))
        .route("/events/{source}/{event_id}", post(events::consume_event))
        .route(
            "/events/{source}/{event_id}/complete",
            post(events::complete_event),
        )
        .route("/events/{source}/{event_id}/fail", post(events::fail_event))
        .route("/stats", get(stats::stats))
        .route_layer(from_fn_with_state(api.store.clone(), authenticate));
    Router::new()
        .merge(authed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(api.clone())
}
