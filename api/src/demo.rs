//! A demo payment provider behind [`IdempotencyLayer`](super::idempotency::IdempotencyLayer):
//! `POST /v1/demo/charges` writes each charge it executes to a ledger table,
//! and `GET /v1/demo/charges/count` says how many it really executed.
//!
//! Faults on request, for tests and the simulator, through the
//! `Idem-Demo-Fault` header (comma-separated, any combination):
//! - `delay=<ms>` (at most 10000): the charge waits this long while holding
//!   the key, so concurrent retries see 409;
//! - `drop`: the charge executes and commits, then the connection is cut
//!   before the response is complete;
//! - `error`: the charge executes and commits, then the answer is a 500.
//!
//! The header is not part of the request fingerprint: the retry that leaves
//! it out gets the stored response.

use super::error::ApiError;
use super::extract::BODY_LIMIT;
use super::extract::{authenticate, ApiJson, Tenant};
use super::idempotency::{IdempotencyGuard, IdempotencyLayer};
use super::state::ApiState;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use axum::{Extension, Json};
use idem_store::DemoCharge;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use utoipa::ToSchema;

/// The demo routes, mounted only by `idem serve --demo` (and `idem
/// simulate`'s in-process server): the guarded charge, and the count.
/// Faults wrap the idempotency layer, so an injected failure happens after
/// the charge and its key committed.
pub fn router(api: &ApiState) -> Router {
    let guarded = Router::new()
        .route("/demo/charges", post(create_charge))
        .layer(IdempotencyLayer::new(
            api.store.clone(),
            api.metrics.clone(),
        ))
        .layer(from_fn(inject_faults));
    Router::new()
        .route("/demo/charges/count", get(count))
        .route("/demo/ledger", get(list))
        .merge(guarded)
        .route_layer(from_fn_with_state(api.store.clone(), authenticate))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(api.clone())
}

/// The fault-injection request header.
pub const FAULT_HEADER: &str = "idem-demo-fault";
/// The longest injectable delay.
pub const MAX_DELAY_MS: u64 = 10_000;

/// Faults asked for by a request.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Wait this long (holding the key) before charging.
    pub delay: Option<Duration>,
    /// Cut the connection after executing.
    pub drop: bool,
    /// Answer 500 after executing.
    pub error: bool,
}

impl Faults {
    /// Reads the `Idem-Demo-Fault` header.
    pub fn from_headers(h: &HeaderMap) -> Result<Self, ApiError> {
        let mut f = Faults::default();
        for value in h.get_all(FAULT_HEADER) {
            let text = value
                .to_str()
                .map_err(|_| ApiError::bad_request("Idem-Demo-Fault must be ASCII"))?;
            for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                match item.split_once('=') {
                    None if item == "drop" => f.drop = true,
                    None if item == "error" => f.error = true,
                    Some(("delay", ms)) => {
                        let ms: u64 = ms.trim().parse().ok().filter(|ms| *ms <= MAX_DELAY_MS).ok_or_else(|| {
                            ApiError::bad_request(format!(
                                "Idem-Demo-Fault: delay takes milliseconds from 0 to {MAX_DELAY_MS}"
                            ))
                        })?;
                        f.delay = Some(Duration::from_millis(ms));
                    }
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "Idem-Demo-Fault: unknown fault `{item:.40}`; use delay=<ms>, drop or error"
                        )))
                    }
                }
            }
        }
        Ok(f)
    }
}

/// `POST /v1/demo/charges` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChargeRequest {
    /// Amount in cents, 1 to 100000000000.
    #[schema(minimum = 1, maximum = 100000000000_i64)]
    pub amount_cents: i64,
    /// ISO 4217 code, three uppercase letters (e.g. `BRL`).
    #[schema(pattern = "^[A-Z]{3}$", example = "BRL")]
    pub currency: String,
    /// Who to charge (1-200 characters, no control characters).
    #[schema(min_length = 1, max_length = 200, example = "cliente-42")]
    pub customer: String,
}

/// An executed charge.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChargeResponse {
    /// The charge id the provider minted (random, so a replay is visibly the same charge).
    pub id: String,
    /// Amount in cents.
    pub amount_cents: i64,
    /// Currency.
    pub currency: String,
    /// Customer.
    pub customer: String,
    /// When it executed, ms since the epoch.
    pub created_ms: i64,
    /// Always `succeeded`.
    pub status: &'static str,
}

const MAX_AMOUNT: i64 = 100_000_000_000;

/// Executes a charge (once per Idempotency-Key).
///
/// The ledger row, the stored response and a `charge.created` outbox event
/// (`charge_id`, `amount_cents`, `currency`, `customer`, `idempotency_key`)
/// commit together. The outbox relay delivers the event to the tenant's
/// webhook endpoints as a Standard Webhook (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`; see the README, "Webhooks: the outbox relay").
#[utoipa::path(post, path = "/v1/demo/charges", tag = "demo", request_body = ChargeRequest,
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!#-\\[\\]-~]{1,255}$", description = "Required. An RFC 8941 string or the bare key: 1-255 visible ASCII characters other than `\"` and `\\`. Kept 24 hours (the tenant's HTTP retention).")),
    responses(
        (status = 201, description = "Charged; a retry with the same key replays this response byte for byte with `Idempotent-Replayed: true`", body = ChargeResponse),
        (status = 400, description = "Missing or malformed Idempotency-Key, or malformed JSON", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "A request with this key is still running; retry after Retry-After seconds", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Invalid charge, or the key was used with a different request", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn create_charge(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    guard: IdempotencyGuard,
    faults: Option<Extension<Faults>>,
    headers: axum::http::HeaderMap,
    ApiJson(req): ApiJson<ChargeRequest>,
) -> Result<(StatusCode, Json<ChargeResponse>), ApiError> {
    if !(1..=MAX_AMOUNT).contains(&req.amount_cents) {
        return Err(ApiError::unprocessable(format!(
            "amount_cents must be between 1 and {MAX_AMOUNT}"
        )));
    }
    if req.currency.len() != 3 || !req.currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(ApiError::unprocessable(
            "currency must be an ISO 4217 code: three uppercase letters such as BRL",
        ));
    }
    let n = req.customer.chars().count();
    if n == 0 || n > 200 || req.customer.chars().any(char::is_control) {
        return Err(ApiError::unprocessable(
            "customer must be 1 to 200 characters without control characters",
        ));
    }
    // Parsed once, by `inject_faults`, which wraps this route.
    if let Some(d) = faults.and_then(|Extension(f)| f.delay) {
        tokio::time::sleep(d).await;
    }
    let charge = DemoCharge {
        id: format!("ch_{}", hex::encode(rand::random::<[u8; 12]>())),
        amount_cents: req.amount_cents,
        currency: req.currency,
        customer: req.customer,
        created_ms: state.store.now_ms(),
    };
    // The layer accepted the request, so its key is there and well formed.
    let key = super::idempotency::client_key(&headers)?;
    let event = serde_json::json!({
        "charge_id": charge.id,
        "amount_cents": charge.amount_cents,
        "currency": charge.currency,
        "customer": charge.customer,
        "idempotency_key": key,
    });
    let mut tx = guard.transaction().await?;
    tx.demo_charge(&tenant, &charge).await?;
    // The webhook event commits with the ledger row, or neither does: the
    // relay delivers it to the tenant's endpoints (`charge.created`).
    tx.outbox_enqueue(&tenant, "charge.created", &event.to_string())
        .await?;
    drop(tx);
    Ok((
        StatusCode::CREATED,
        Json(ChargeResponse {
            id: charge.id,
            amount_cents: charge.amount_cents,
            currency: charge.currency,
            customer: charge.customer,
            created_ms: charge.created_ms,
            status: "succeeded",
        }),
    ))
}

/// `GET /v1/demo/charges/count` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChargeCount {
    /// Charges the demo provider executed for this tenant.
    pub count: i64,
}

/// How many charges the demo provider really executed for the tenant.
#[utoipa::path(get, path = "/v1/demo/charges/count", tag = "demo",
    responses(
        (status = 200, description = "The ledger's row count", body = ChargeCount),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn count(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
) -> Result<Json<ChargeCount>, ApiError> {
    let mut s = state.store.session().await?;
    Ok(Json(ChargeCount {
        count: s.demo_charge_count(&tenant).await?,
    }))
}

/// The most charges `GET /v1/demo/ledger` lists.
const MAX_LISTED: usize = 1000;

/// `GET /v1/demo/ledger` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChargeList {
    /// The charges the demo provider executed for this tenant, oldest first
    /// (at most 1000).
    pub charges: Vec<ListedCharge>,
}

/// One executed charge, as the ledger recorded it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListedCharge {
    /// The charge id.
    pub id: String,
    /// Amount in cents: what was really charged.
    pub amount_cents: i64,
    /// Currency.
    pub currency: String,
    /// Customer.
    pub customer: String,
    /// When it executed, ms since the epoch.
    pub created_ms: i64,
}

/// The charges the demo provider really executed for the tenant, with the
/// amounts its ledger recorded: a test's oracle for "charged once, and the
/// right amount".
#[utoipa::path(get, path = "/v1/demo/ledger", tag = "demo",
    responses(
        (status = 200, description = "The ledger's rows, oldest first (at most 1000)", body = ChargeList),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
) -> Result<Json<ChargeList>, ApiError> {
    let mut s = state.store.session().await?;
    let charges = s
        .demo_charges(&tenant)
        .await?
        .into_iter()
        .take(MAX_LISTED)
        .map(|c| ListedCharge {
            id: c.id,
            amount_cents: c.amount_cents,
            currency: c.currency,
            customer: c.customer,
            created_ms: c.created_ms,
        })
        .collect();
    Ok(Json(ChargeList { charges }))
}

/// Middleware outside the idempotency layer: applies `drop` and `error`
/// after the charge and its key committed.
pub async fn inject_faults(mut req: Request, next: Next) -> Response {
    let faults = match Faults::from_headers(req.headers()) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(faults);
    let res = next.run(req).await;
    if faults.drop {
        // A body that fails: the server aborts the connection before the
        // response is complete, as a provider crashing mid-answer would.
        let (parts, _) = res.into_parts();
        let failing = futures_util::stream::once(async {
            Err::<Bytes, std::io::Error>(std::io::Error::other(
                "injected fault: connection dropped after executing",
            ))
        });
        return Response::from_parts(parts, Body::from_stream(failing));
    }
    if faults.error {
        return ApiError::internal()
            .detail("injected fault: the charge executed, then the answer failed")
            .into_response();
    }
    res
}
