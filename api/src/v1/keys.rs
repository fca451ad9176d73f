//! `POST /v1/keys`: the key a candidate payload derives to; writes nothing.

use crate::error::ApiError;
use crate::extract::{ApiJson, Tenant};
use crate::state::ApiState;
use axum::extract::State;
use axum::Json;
use idem_core::{ActionType, IdempotencyKey, Payload};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// `POST /v1/keys` and `POST /v1/intents` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}}))]
pub struct IntentRequest {
    /// Action type from the catalog, e.g. `pix.cobranca`.
    #[schema(value_type = String)]
    pub action: ActionType,
    /// The candidate payload: a JSON object holding at least the action's key fields.
    #[schema(value_type = Object)]
    pub payload: Box<RawValue>,
}

/// `POST /v1/keys` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyResponse {
    /// The derived key (64 lowercase hex characters).
    #[schema(value_type = String)]
    pub key: IdempotencyKey,
    /// The rules version it was derived with.
    pub rules_version: u32,
}

pub(super) fn payload(raw: &RawValue) -> Result<Payload<'_>, ApiError> {
    Payload::from_raw(raw).map_err(|e| ApiError::unprocessable(e.to_string()))
}

/// Derives the key of a candidate payload for the token's tenant; writes nothing.
#[utoipa::path(post, path = "/v1/keys", tag = "intents", request_body = IntentRequest,
    responses(
        (status = 200, description = "The key the payload derives to", body = KeyResponse),
        (status = 400, description = "Malformed JSON", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action, missing or invalid field", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn derive_key(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiJson(req): ApiJson<IntentRequest>,
) -> Result<Json<KeyResponse>, ApiError> {
    let payload = payload(&req.payload)?;
    let (key, version) = state
        .deriver
        .derive_key(&state.catalog, &tenant, req.action.as_str(), &payload, None)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    Ok(Json(KeyResponse {
        key,
        rules_version: version.number(),
    }))
}
