//! `POST /v1/intents` (record a delivery; the first one freezes the
//! payload), `GET /v1/intents/{action}/{reference}` (read it back) and
//! `POST /v1/intents/{action}/{reference}/supersede` (a way out of a wrong
//! first attempt that failed, never out of a charge).

use super::actions::{claim_action, BeginResponse, Claim, ClaimOptions};
use super::keys::payload;
use crate::error::{ApiError, Problem};
use crate::extract::{ApiJson, ApiPath, Tenant};
use crate::metrics::DeliveryLabels;
use crate::state::ApiState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use idem_core::ActionType;
use idem_wire::IntentView;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// `POST /v1/intents` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}, "claim": {"lease_ms": 30000, "attempt_id": "w1-6f1c0e2a"}}))]
pub struct RecordRequest {
    /// Action type from the catalog, e.g. `pix.cobranca`.
    #[schema(value_type = String)]
    pub action: ActionType,
    /// The candidate payload: a JSON object holding at least the action's
    /// key fields. The first delivery's is frozen as sent (`frozen`).
    #[schema(value_type = Object)]
    pub payload: Box<RawValue>,
    /// Also claim the frozen intent's action, as `begin` would, and answer
    /// the claim under `claim`: one round trip instead of two.
    pub claim: Option<ClaimOptions>,
}

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
    /// With `claim` in the request: the claim of the frozen intent's action,
    /// as `begin` answers it (`claimed`, `completed`, `failed`,
    /// `uncertain`), or `in_flight` where `begin` would answer 409.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<BeginResponse>,
}

/// Records a delivery of an intent: 201 for the first, 200 for a redelivery.
/// Payload members whose names start with this are idem's own (the MCP
/// gateway freezes a guarded call's arguments under one): a client may
/// not write them, or it could choose what the gateway executes.
pub const RESERVED_PREFIX: &str = "_idem";

/// 422 naming the first payload member idem reserves.
fn refuse_reserved_members(raw: &serde_json::value::RawValue) -> Result<(), ApiError> {
    let Ok(members) = serde_json::from_str::<
        std::collections::BTreeMap<String, serde::de::IgnoredAny>,
    >(raw.get()) else {
        // Not an object: the payload's own check names that.
        return Ok(());
    };
    match members.keys().find(|m| m.starts_with(RESERVED_PREFIX)) {
        None => Ok(()),
        Some(m) => Err(ApiError::unprocessable_as(
            Problem::ReservedMember,
            &format!(
                "payload member `{m}`: names starting with `{RESERVED_PREFIX}` are idem's own (the MCP gateway keeps a call's arguments there); rename it. Nothing was recorded"
            ),
        )
        .extra(serde_json::json!({ "member": m }))),
    }
}

/// With `claim`, also claims the frozen intent's action in the same call.
#[utoipa::path(post, path = "/v1/intents", tag = "intents", request_body = RecordRequest,
    responses(
        (status = 201, description = "First delivery: the intent is now frozen", body = IntentResponse),
        (status = 200, description = "Redelivery: the frozen intent, unchanged", body = IntentResponse),
        (status = 400, description = "Malformed JSON", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action, missing or invalid field, or claim options out of range", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn record_intent(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    waiter: crate::turns::Waiter,
    ApiJson(req): ApiJson<RecordRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    // Checked before anything is written: a bad claim records nothing.
    let claim = req.claim.map(Claim::try_from).transpose()?;
    refuse_reserved_members(&req.payload)?;
    let payload = payload(&req.payload)?;
    // Taken before the record and held to the end of this request, so two
    // requests with one attempt id are never in the server together (see
    // `crate::attempts`).
    let attempt = state
        .attempts
        .seat(tenant.as_str(), claim.as_ref().and_then(Claim::attempt_id));
    // With a claim, and no other request of its attempt in the server, the
    // record and the claim are one transaction: one commit, not two.
    let (r, first) = match &claim {
        Some(c) if attempt.is_ok() => {
            let (r, begin) = state
                .store
                .record_and_claim(&tenant, &req.action, &payload, c.lease(), c.attempt_id())
                .await?;
            (r, Some(begin))
        }
        _ => (
            state
                .store
                .record_intent(&tenant, req.action.as_str(), &payload)
                .await?,
            None,
        ),
    };
    let delivery = if r.inserted { "first" } else { "redelivery" };
    idem_wire::trace::note("idem.delivery", delivery);
    idem_wire::trace::note("idem.diverged", r.diverged);
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
    let claim = match claim {
        Some(c) => Some(
            claim_action(
                &state,
                &tenant,
                &req.action,
                &intent.key,
                &c,
                attempt.is_err(),
                &waiter,
                first,
            )
            .await?
            .1,
        ),
        None => None,
    };
    Ok((
        status,
        Json(IntentResponse {
            intent: IntentView::of(req.action, reference, intent)?,
            diverged,
            first_delivery: inserted,
            candidate_key: candidate_key.to_string(),
            claim,
        }),
    )
        .into_response())
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
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such intent for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
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

/// `POST /v1/intents/{action}/{reference}/supersede` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"reason": "the merchant refused the total: the cart had 3 items", "candidate": {"cliente_id": "c-1", "valor": "190.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}}))]
pub struct SupersedeRequest {
    /// Why, for the audit (1 to 1000 characters).
    pub reason: String,
    /// The corrected candidate, with the intent's own reference. Absent:
    /// the frozen fields stay and the frozen candidate is released, so the
    /// next delivery's is frozen (a payment authorization signed anew).
    #[schema(value_type = Option<Object>)]
    pub candidate: Option<Box<RawValue>>,
}

/// The intent after a supersession.
#[derive(Debug, Serialize, ToSchema)]
pub struct SupersedeResponse {
    /// The intent as it now stands: its own key, its revision one more.
    #[serde(flatten)]
    pub intent: IntentView,
    /// The key of the failed action it superseded (sealed for good).
    pub superseded_key: String,
    /// Whether the candidate was released for the next delivery.
    pub released: bool,
}

/// Supersedes an intent whose action failed (nothing executed): the failed
/// action is sealed for good, the version it replaces is filed with who
/// (this tenant's token), when and why (`GET /live/actions/{key}` shows
/// it), and the intent runs again under a key of its own. Refused (409)
/// for an action started, uncertain, completed, or not started: a new key
/// for an effect that may have run would run it twice.
#[utoipa::path(post, path = "/v1/intents/{action}/{reference}/supersede", tag = "intents",
    request_body = SupersedeRequest,
    params(
        ("action" = String, Path, description = "Action type from the catalog, e.g. pix.cobranca"),
        ("reference" = String, Path, description = "The intent reference"),
    ),
    responses(
        (status = 200, description = "Superseded: the intent under its new key", body = SupersedeResponse),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such intent for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Its action did not fail: started, uncertain, completed or not started", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action, a reason missing or too long, a candidate invalid or of another reference", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn supersede_intent(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((action, reference)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<SupersedeRequest>,
) -> Result<Json<SupersedeResponse>, ApiError> {
    let action =
        ActionType::try_from(action).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    if let Err(e) = state.catalog.action(action.as_str()) {
        return Err(ApiError::unprocessable(e.to_string()));
    }
    if let Some(c) = &req.candidate {
        refuse_reserved_members(c)?;
    }
    let candidate = req.candidate.as_deref().map(payload).transpose()?;
    let actor = format!("tenant {} (/v1)", tenant.as_str());
    let done = match state
        .store
        .supersede_intent(
            &tenant,
            action.as_str(),
            &reference,
            candidate.as_ref(),
            &actor,
            &req.reason,
        )
        .await
    {
        Ok(d) => d,
        Err(idem_store::Error::NotFound) => {
            return Err(ApiError::not_found(format!(
                "no intent `{reference}` of action `{action}` for this tenant"
            )))
        }
        Err(idem_store::Error::Invalid(m)) if m.starts_with("reason") => {
            return Err(ApiError::unprocessable(m.replacen("reason", "`reason`", 1)))
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Json(SupersedeResponse {
        superseded_key: done.previous_key.to_string(),
        released: done.released,
        intent: IntentView::of(action, reference, done.intent)?,
    }))
}
