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

/// The answers every `/v1` operation may give before or around its own:
/// added to each operation that does not document the status itself, so
/// the document says what the trust boundary answers.
struct CommonProblems;

impl Modify for CommonProblems {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, RefOr, ResponseBuilder};
        let common: [(&str, &str); 9] = [
            ("400", "Malformed: a header, path or query parameter (two Authorization headers, for one), or JSON syntax"),
            ("401", "Missing or invalid token (`urn:idem:problem:unauthorized`), or a token of a disabled tenant (`urn:idem:problem:tenant-disabled`)"),
            ("405", "The route does not take this method (`Allow` lists those it takes)"),
            ("413", "The body is over 64 KiB"),
            ("415", "The body is not `application/json`"),
            ("421", "The request names a host this server does not answer for: an open monitor (loopback, no admin token) answers localhost and loopback addresses only, plus `--allowed-host` names"),
            ("422", "The body cannot be honoured; JSON nested more than 64 levels is `urn:idem:problem:too-deep` (with `max_depth`), text with a NUL character `urn:idem:problem:unstorable-text`"),
            ("431", "More than 64 headers or 32 KiB of them"),
            ("503", "The store is unavailable; retry after `Retry-After`"),
        ];
        for item in api.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                for (code, text) in common {
                    op.responses
                        .responses
                        .entry(code.to_owned())
                        .or_insert_with(|| {
                            RefOr::T(
                                ResponseBuilder::new()
                                    .description(text)
                                    .content(
                                        "application/problem+json",
                                        ContentBuilder::new()
                                            .schema(Some(RefOr::Ref(
                                                utoipa::openapi::Ref::from_schema_name(
                                                    "ProblemDoc",
                                                ),
                                            )))
                                            .build(),
                                    )
                                    .build(),
                            )
                        });
                }
            }
        }
    }
}

/// Every problem type the server answers with, as the enum of the problem
/// document's `type`: the list the clients' error tables are checked
/// against.
struct ProblemTypes;

impl Modify for ProblemTypes {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, Schema};
        let Some(components) = api.components.as_mut() else {
            return;
        };
        let Some(RefOr::T(Schema::Object(doc))) = components.schemas.get_mut("ProblemDoc") else {
            return;
        };
        if let Some(RefOr::T(Schema::Object(kind))) = doc.properties.get_mut("type") {
            kind.enum_values = Some(
                super::error::Problem::ALL
                    .iter()
                    .map(|p| serde_json::Value::from(p.urn()))
                    .collect(),
            );
        }
        // Per type, what a client does with it and which of the document's
        // optional members it carries: the one column both clients' error
        // tables are checked against.
        let table: serde_json::Map<String, serde_json::Value> = super::error::Problem::ALL
            .iter()
            .map(|p| {
                (
                    p.urn().to_owned(),
                    serde_json::json!({"class": p.class().as_str(), "members": p.members()}),
                )
            })
            .collect();
        let mut ext = doc.extensions.take().unwrap_or_default();
        ext.merge(
            utoipa::openapi::extensions::ExtensionsBuilder::new()
                .add("x-idem-problems", serde_json::Value::Object(table))
                .build(),
        );
        doc.extensions = Some(ext);
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
Errors are RFC 9457 problem documents, the framework's own included (no route 404, wrong method 405, \
body over 64 KiB 413, not JSON 415, too many headers 431). JSON bodies nest at most 64 levels (422 \
`urn:idem:problem:too-deep` past it). A token that was rotated, expired or disabled is refused within one second \
on every instance.",
    ),
    paths(
        super::v1::keys::derive_key,
        super::v1::intents::record_intent,
        super::v1::intents::get_intent,
        super::v1::intents::supersede_intent,
        super::v1::actions::get_action,
        super::v1::actions::begin_action,
        super::v1::actions::complete_action,
        super::v1::actions::fail_action,
        super::v1::actions::reconcile_action,
        super::v1::actions::renew_action,
        super::v1::actions::mark_uncertain,
        super::v1::events::consume_event,
        super::v1::events::complete_event,
        super::v1::events::fail_event,
        super::v1::stats::stats,
        super::demo::create_charge,
        super::demo::count,
        super::demo::list,
    ),
    modifiers(&Bearer, &CommonProblems, &ProblemTypes),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every problem type the API can answer is in the document's enum.
    #[test]
    fn the_document_lists_every_problem_type() {
        let doc = serde_json::to_value(&*WITHOUT_DEMO).unwrap_or_default();
        let listed = &doc["components"]["schemas"]["ProblemDoc"]["properties"]["type"]["enum"];
        let want: Vec<&str> = crate::error::Problem::ALL.iter().map(|p| p.urn()).collect();
        assert_eq!(listed, &serde_json::json!(want));
        // Every member a row declares is a property of the document, and
        // every optional property is some row's.
        let props: Vec<&str> = doc["components"]["schemas"]["ProblemDoc"]["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut declared: Vec<&str> = crate::error::Problem::ALL
            .iter()
            .flat_map(|p| p.members().iter().copied())
            .collect();
        declared.sort_unstable();
        declared.dedup();
        let mut optional: Vec<&str> = props
            .into_iter()
            .filter(|p| !["type", "title", "status", "detail"].contains(p))
            .collect();
        optional.sort_unstable();
        assert_eq!(optional, declared);
        let table = &doc["components"]["schemas"]["ProblemDoc"]["x-idem-problems"];
        assert_eq!(
            table[crate::error::Problem::OutcomeTooLarge.urn()],
            serde_json::json!({"class": "outcome_too_large", "members": ["size", "limit", "marked_uncertain"]})
        );
    }

    /// The wire contract the clients are checked against is committed
    /// (`clients/conformance/openapi.json`, the document without the demo
    /// provider, whose routes are a test tool): a change to `/v1` that does
    /// not update it fails here. `IDEM_WRITE_OPENAPI=1 cargo test -p
    /// idem-api --lib openapi` writes it.
    #[test]
    fn the_committed_document_is_the_generated_one() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../clients/conformance/openapi.json"
        );
        let generated = serde_json::to_string_pretty(&*WITHOUT_DEMO).unwrap_or_default() + "\n";
        if std::env::var_os("IDEM_WRITE_OPENAPI").is_some() {
            std::fs::write(path, &generated).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "{path} is not the document /v1 serves: run IDEM_WRITE_OPENAPI=1 cargo test -p idem-api --lib openapi, and review the difference"
        );
    }
}
