//! `POST /v1/events/{source}/{event_id}`: webhook and queue deduplication.

use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, Tenant};
use crate::http::state::ApiState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use idem_store::Consumed;
use serde::Serialize;
use utoipa::ToSchema;

/// `POST /v1/events/{source}/{event_id}` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventResponse {
    /// `first` (handle it) or `duplicate` (acknowledge and drop it).
    pub status: &'static str,
}

/// The longest event source name.
const MAX_SOURCE: usize = 100;
/// The longest event id.
const MAX_EVENT_ID: usize = 255;

fn check_name(what: &str, s: &str, max: usize) -> Result<(), ApiError> {
    if s.is_empty() || s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "{what} must be 1 to {max} characters without control characters"
        )));
    }
    Ok(())
}

/// Marks a webhook or queue message consumed: 201 the first time, 200 after.
#[utoipa::path(post, path = "/v1/events/{source}/{event_id}", tag = "events",
    params(
        ("source" = String, Path, min_length = 1, max_length = 100, description = "Who sent it (1-100 characters, no control characters), e.g. `stripe`"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, description = "The sender's event id (1-255 characters, no control characters)"),
    ),
    responses(
        (status = 201, description = "First time: handle it", body = EventResponse),
        (status = 200, description = "Seen before: acknowledge and drop it", body = EventResponse),
        (status = 400, description = "Empty or oversized name", body = crate::http::openapi::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::http::openapi::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn consume_event(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath((source, event_id)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<EventResponse>), ApiError> {
    check_name("source", &source, MAX_SOURCE)?;
    check_name("event_id", &event_id, MAX_EVENT_ID)?;
    Ok(
        match state
            .store
            .consume_once(&tenant, &source, &event_id)
            .await?
        {
            Consumed::First => (StatusCode::CREATED, Json(EventResponse { status: "first" })),
            Consumed::Duplicate => (
                StatusCode::OK,
                Json(EventResponse {
                    status: "duplicate",
                }),
            ),
        },
    )
}
