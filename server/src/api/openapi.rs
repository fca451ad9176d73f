//! The OpenAPI 3.1 document of `/v1`, generated from the handlers'
//! annotations and served at `/v1/openapi.json`.

use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// An RFC 9457 problem document (`application/problem+json`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProblemDoc {
    /// A URN naming the problem, e.g. `urn:idem:problem:key-reused`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What to fix.
    pub detail: Option<String>,
}

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
        super::v1::derive_key,
        super::v1::record_intent,
        super::v1::get_intent,
        super::v1::get_action,
        super::v1::begin_action,
        super::v1::complete_action,
        super::v1::fail_action,
        super::v1::reconcile_action,
        super::v1::consume_event,
        super::v1::stats,
        super::demo::create_charge,
        super::demo::count,
    ),
    modifiers(&Bearer),
)]
pub struct ApiDoc;

/// The document, built once: it only changes with the code.
static DOCUMENT: std::sync::LazyLock<utoipa::openapi::OpenApi> =
    std::sync::LazyLock::new(ApiDoc::openapi);

/// `GET /v1/openapi.json`.
pub async fn serve() -> Response {
    Json(&*DOCUMENT).into_response()
}
