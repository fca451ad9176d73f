//! `POST /v1/intents` (record a delivery; the first one freezes the
//! payload) and `GET /v1/intents/{action}/{reference}` (read it back).

use super::keys::{payload, IntentRequest};
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiPath, Tenant};
use crate::http::metrics::DeliveryLabels;
use crate::http::state::ApiState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use idem_core::{ActionType, IdempotencyKey};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// The intent as frozen by its first delivery, and what this delivery was.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntentResponse {
    /// The frozen intent, as `GET /v1/intents/{action}/{reference}` shows
    /// it (its `deliveries` count this one).
    #[serde(flatten)]
    pub intent: IntentView,
    /// Whether this delivery's candidate differed (it was not stored).
    pub diverged: bool,
    /// Whether this delivery created the intent.
    pub first_delivery: bool,
    /// The key this delivery's candidate alone would have had.
    pub candidate_key: String,
}

/// Records a delivery of an intent: 201 for the first, 200 for a redelivery.
#[utoipa::path(post, path = "/v1/intents", tag = "intents", request_body = IntentRequest,
    responses(
        (status = 201, description = "First delivery: the intent is now frozen", body = IntentResponse),
        (status = 200, description = "Redelivery: the frozen intent, unchanged", body = IntentResponse),
        (status = 400, description = "Malformed JSON", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action, missing or invalid field", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn record_intent(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiJson(req): ApiJson<IntentRequest>,
) -> Result<(StatusCode, Json<IntentResponse>), ApiError> {
    let payload = payload(&req.payload)?;
    let r = state
        .store
        .record_intent(&tenant, req.action.as_str(), &payload)
        .await?;
    let delivery = if r.inserted { "first" } else { "redelivery" };
    state
        .metrics
        .deliveries
        .get_or_create(&DeliveryLabels { delivery })
        .inc();
    if r.diverged {
        state.metrics.divergences.inc();
    }
    let status = if r.inserted {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let (intent, reference, inserted, diverged, candidate_key) = r.into_parts();
    Ok((
        status,
        Json(IntentResponse {
            intent: IntentView::of(req.action, reference, intent)?,
            diverged,
            first_delivery: inserted,
            candidate_key: candidate_key.to_string(),
        }),
    ))
}

/// `GET /v1/intents/{action}/{reference}` answer: the intent as frozen.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntentView {
    /// The frozen key.
    #[schema(value_type = String)]
    pub key: IdempotencyKey,
    /// The rules version of the frozen key.
    pub rules_version: u32,
    /// The action type.
    #[schema(value_type = String)]
    pub action: ActionType,
    /// The intent reference, as stored.
    pub reference: String,
    /// The frozen normalized payload.
    #[schema(value_type = Object)]
    pub payload: Box<RawValue>,
    /// 1 for the first write, then one more per correction.
    pub revision: i32,
    /// Deliveries so far.
    pub deliveries: i64,
    /// Deliveries whose candidate differed from the frozen payload.
    pub divergences: i64,
    /// First delivery, ms since the epoch.
    pub first_seen_ms: i64,
    /// Latest delivery, ms since the epoch.
    pub last_seen_ms: i64,
}

impl IntentView {
    /// The view of a stored intent: the one shape both the record and the
    /// read answer with.
    fn of(action: ActionType, reference: String, i: idem_store::Intent) -> Result<Self, ApiError> {
        Ok(IntentView {
            key: i.key,
            rules_version: i.rules_version.number(),
            action,
            reference,
            payload: frozen(&i.payload)?,
            revision: i.revision,
            deliveries: i.deliveries,
            divergences: i.divergences,
            first_seen_ms: i.first_seen_ms,
            last_seen_ms: i.last_seen_ms,
        })
    }
}

/// Reads a recorded intent without counting a delivery. A redelivered
/// worker asks this first: when the intent exists it acts on the frozen
/// payload and skips the model call that would re-extract it.
#[utoipa::path(get, path = "/v1/intents/{action}/{reference}", tag = "intents",
    params(
        ("action" = String, Path, description = "Action type from the catalog, e.g. pix.cobranca"),
        ("reference" = String, Path, description = "The intent reference, as `POST /v1/intents` returned it"),
    ),
    responses(
        (status = 200, description = "The frozen intent", body = IntentView),
        (status = 401, description = "Missing or invalid token", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such intent for this tenant", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action", body = crate::http::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn get_intent(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((action, reference)): ApiPath<(String, String)>,
) -> Result<Json<IntentView>, ApiError> {
    let action =
        ActionType::try_from(action).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    if let Err(e) = state.catalog.action(action.as_str()) {
        return Err(ApiError::unprocessable(e.to_string()));
    }
    let intent = match state
        .store
        .session()
        .await?
        .intent(&tenant, action.as_str(), &reference)
        .await
    {
        Ok(i) => i,
        Err(idem_store::Error::NotFound) => {
            return Err(ApiError::not_found(format!(
                "no intent `{reference}` of action `{action}` for this tenant: record it with POST /v1/intents"
            )))
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Json(IntentView::of(action, reference, intent)?))
}

/// A frozen payload, sent as the JSON it was stored as.
fn frozen(payload: &idem_core::NormalizedPayload) -> Result<Box<RawValue>, ApiError> {
    RawValue::from_string(payload.to_json()).map_err(|e| {
        tracing::error!(error = %e, "a frozen payload is not JSON");
        ApiError::internal()
    })
}
