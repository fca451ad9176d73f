//! The OpenAPI 3.1 document of `/v1`, generated from the handlers'
//! annotations and served at `/v1/openapi.json`.

use super::state::ApiState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A token from `idem tenant create NAME`. The tenant always comes from the token.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The `/v1` API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idem",
        description = "Intents, idempotent actions, Idempotency-Key replay and event deduplication, per tenant.\n\n\
Idempotency-Key records (the demo provider's route) are kept 24 hours by default (the tenant's HTTP retention, \
`idem retention TENANT --http-keys`); after that a key may be reused. \
Errors are RFC 9457 problem documents. Request bodies are limited to 64 KiB (413 past it).",
    ),
    paths(
        super::v1::keys::derive_key,
        super::v1::intents::record_intent,
        super::v1::intents::get_intent,
        super::v1::actions::get_action,
        super::v1::actions::begin_action,
        super::v1::actions::complete_action,
        super::v1::actions::fail_action,
        super::v1::actions::reconcile_action,
        super::v1::events::consume_event,
        super::v1::events::complete_event,
        super::v1::events::fail_event,
        super::v1::stats::stats,
        super::demo::create_charge,
        super::demo::count,
    ),
    modifiers(&Bearer),
)]
pub struct ApiDoc;

/// The document with the demo provider's routes, built once: it only
/// changes with the code.
static WITH_DEMO: std::sync::LazyLock<utoipa::openapi::OpenApi> =
    std::sync::LazyLock::new(ApiDoc::openapi);

/// The document without them, for a server that does not mount them.
static WITHOUT_DEMO: std::sync::LazyLock<utoipa::openapi::OpenApi> =
    std::sync::LazyLock::new(|| {
        let mut doc = ApiDoc::openapi();
        doc.paths
            .paths
            .retain(|path, _| !path.starts_with("/v1/demo/"));
        doc
    });

/// `GET /v1/openapi.json`: the routes this server really mounts.
pub async fn serve(State(api): State<ApiState>) -> Response {
    let doc = if api.demo {
        &*WITH_DEMO
    } else {
        &*WITHOUT_DEMO
    };
    Json(doc).into_response()
}
