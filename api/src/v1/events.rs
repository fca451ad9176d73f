//! `/v1/events/{source}/{event_id}`: webhook and queue deduplication with a
//! lease. A consumer claims the event, acts, then completes it; one that
//! dies in between does not lose the event, because after the lease the
//! next delivery claims it again.

use crate::error::{ApiError, Problem};
use crate::extract::{ApiJson, ApiPath, Tenant};
use crate::state::ApiState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use idem_store::{EventClaim, EventOutcome};
use idem_wire::LeaseMs;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The longest event source name.
const MAX_SOURCE: usize = 100;
/// The longest event id.
const MAX_EVENT_ID: usize = 255;

const EXPIRED_ADVICE: &str = "an earlier consumer claimed this event and its lease ran out before it completed: it may have acted. Guard the effect with an action key derived from the event id (POST /v1/actions/{key}/begin), so a second attempt cannot repeat it";

/// `POST /v1/events/{source}/{event_id}` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// How long the claim holds, in ms (`default` and `maximum` in the schema).
    #[schema(value_type = LeaseMs, inline, required = false, nullable = true)]
    pub lease_ms: Option<u64>,
}

/// What a delivery of an event should do, tagged by `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum EventResponse {
    /// You hold it (201): act, then complete (or fail) it with the token
    /// before the lease ends.
    First {
        /// The fencing token for complete/fail.
        token: i64,
        /// 1 for the first claim.
        attempt: i32,
        /// When the lease ends, ms since the epoch.
        lease_until_ms: i64,
        /// Why an earlier claim no longer holds it: `expired` (its holder may
        /// have acted) or `released` (it failed retryably).
        #[serde(skip_serializing_if = "Option::is_none")]
        previous: Option<String>,
        /// What to do about an earlier claim that expired.
        #[serde(skip_serializing_if = "Option::is_none")]
        advice: Option<&'static str>,
    },
    /// Handled before (200): acknowledge and drop it.
    Duplicate,
    /// Failed for good before (200): acknowledge and drop it.
    Failed,
}

/// `POST /v1/events/{source}/{event_id}/complete` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteEventRequest {
    /// The token the claim gave.
    pub token: i64,
}

/// `POST /v1/events/{source}/{event_id}/fail` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailEventRequest {
    /// The token the claim gave.
    pub token: i64,
    /// `true`: the next delivery claims it again; `false`: later deliveries
    /// are acknowledged and dropped.
    pub retryable: bool,
}

/// How a settled event stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettledResponse {
    /// `completed`, `failed` or `released`.
    pub status: &'static str,
}

fn check_name(what: &str, s: &str, max: usize) -> Result<(), ApiError> {
    if s.is_empty() || s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "{what} must be 1 to {max} characters without control characters"
        )));
    }
    Ok(())
}

/// The optional body: nothing, `null`, or `{"lease_ms"}`.
fn claim_request(body: &Bytes) -> Result<ClaimRequest, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::body(StatusCode::BAD_REQUEST, "the body is not UTF-8"))?;
    if text.trim().is_empty() || text.trim() == "null" {
        return Ok(ClaimRequest::default());
    }
    serde_json::from_str(text).map_err(|e| {
        let status = if e.is_data() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::body(status, format!("the body: {e}"))
    })
}

/// Claims a webhook or queue message for a lease.
#[utoipa::path(post, path = "/v1/events/{source}/{event_id}", tag = "events",
    params(
        ("source" = String, Path, min_length = 1, max_length = 100, description = "Who sent it (1-100 characters, no control characters), e.g. `stripe`"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, description = "The sender's event id (1-255 characters, no control characters)"),
    ),
    request_body(content = Option<ClaimRequest>, description = "Optional: the lease, `{\"lease_ms\": …}`"),
    responses(
        (status = 201, description = "`first`: you hold it. Act, then POST .../complete (or .../fail) with the token before the lease ends. `attempt` > 1 with `previous: expired` when an earlier holder's lease ran out (it may have acted)", body = EventResponse),
        (status = 200, description = "`duplicate` (handled before) or `failed` (failed for good): acknowledge and drop it", body = EventResponse),
        (status = 400, description = "Empty or oversized name, or a malformed body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Another consumer holds it: retry after Retry-After seconds", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "lease_ms out of range, or an unknown member", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn consume_event(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((source, event_id)): ApiPath<(String, String)>,
    body: Bytes,
) -> Result<(StatusCode, Json<EventResponse>), ApiError> {
    check_name("source", &source, MAX_SOURCE)?;
    check_name("event_id", &event_id, MAX_EVENT_ID)?;
    let lease = LeaseMs::from_request(claim_request(&body)?.lease_ms)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let claim = state
        .store
        .session()
        .await?
        .claim_event(&tenant, &source, &event_id, lease.duration())
        .await?;
    Ok(match claim {
        EventClaim::Claimed {
            token,
            attempt,
            lease_until_ms,
            previous,
        } => {
            let advice = (previous.as_deref() == Some("expired")).then_some(EXPIRED_ADVICE);
            (
                StatusCode::CREATED,
                Json(EventResponse::First {
                    token,
                    attempt,
                    lease_until_ms,
                    previous,
                    advice,
                }),
            )
        }
        EventClaim::Completed => (StatusCode::OK, Json(EventResponse::Duplicate)),
        EventClaim::Failed => (StatusCode::OK, Json(EventResponse::Failed)),
        EventClaim::InFlight { lease_until_ms } => {
            return Err(ApiError::lease_held(
                Problem::EventInFlight,
                "do not act: another consumer's lease is running; deliver it again after Retry-After seconds",
                lease_until_ms,
                state.store.now_ms(),
            ));
        }
    })
}

async fn settle(
    state: &ApiState,
    tenant: &idem_core::TenantId,
    source: &str,
    event_id: &str,
    token: i64,
    outcome: EventOutcome,
) -> Result<Json<SettledResponse>, ApiError> {
    check_name("source", source, MAX_SOURCE)?;
    check_name("event_id", event_id, MAX_EVENT_ID)?;
    let done = state
        .store
        .session()
        .await?
        .settle_event(tenant, source, event_id, token, outcome)
        .await;
    match done {
        Ok(()) => Ok(Json(SettledResponse {
            status: outcome.as_str(),
        })),
        Err(idem_store::Error::NotFound) => Err(ApiError::not_found(format!(
            "no claimed event `{event_id:.80}` from `{source:.40}` for this tenant: claim it with POST /v1/events/{{source}}/{{event_id}}"
        ))),
        Err(e @ idem_store::Error::StaleToken { .. }) => Err(ApiError::conflict(
            Problem::StaleToken,
            format!("{e}; nothing was recorded"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Records that the consumer handled the event: later deliveries are duplicates.
#[utoipa::path(post, path = "/v1/events/{source}/{event_id}/complete", tag = "events", request_body = CompleteEventRequest,
    params(
        ("source" = String, Path, min_length = 1, max_length = 100, description = "Who sent it"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, description = "The sender's event id"),
    ),
    responses(
        (status = 200, description = "Completed (or already completed with this token)", body = SettledResponse),
        (status = 400, description = "Malformed name or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such claimed event for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale token: a newer claim holds the event; nothing was recorded", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn complete_event(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((source, event_id)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<CompleteEventRequest>,
) -> Result<Json<SettledResponse>, ApiError> {
    settle(
        &state,
        &tenant,
        &source,
        &event_id,
        req.token,
        EventOutcome::Completed,
    )
    .await
}

/// Records that handling failed: retryable releases the event to the next
/// delivery; final drops every later one.
#[utoipa::path(post, path = "/v1/events/{source}/{event_id}/fail", tag = "events", request_body = FailEventRequest,
    params(
        ("source" = String, Path, min_length = 1, max_length = 100, description = "Who sent it"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, description = "The sender's event id"),
    ),
    responses(
        (status = 200, description = "`released` (retryable) or `failed` (for good)", body = SettledResponse),
        (status = 400, description = "Malformed name or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such claimed event for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn fail_event(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((source, event_id)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<FailEventRequest>,
) -> Result<Json<SettledResponse>, ApiError> {
    let outcome = if req.retryable {
        EventOutcome::Released
    } else {
        EventOutcome::Failed
    };
    settle(&state, &tenant, &source, &event_id, req.token, outcome).await
}
