//! The JSON API under `/v1`: bearer-token tenants, `application/problem+json`
//! errors. The tenant always comes from the token, never from the request.

use crate::web::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use idem_core::{Payload, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `/v1` routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/v1/keys", post(derive_key))
}

/// An API error, rendered as RFC 9457 `application/problem+json`. Internal
/// details are logged once and never sent.
#[derive(Debug)]
pub enum ApiError {
    /// No usable bearer token (401).
    Unauthorized {
        /// Whether a token was presented (it was then wrong).
        presented: bool,
    },
    /// The body cannot be read: 400 (syntax), 415 (not JSON) or 422 (wrong
    /// shape), with the reason.
    Body(StatusCode, String),
    /// The request is well formed but cannot be honoured (422).
    Unprocessable(String),
    /// The database is unreachable or failed (503).
    Unavailable,
}

#[derive(Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, title, detail) = match &self {
            ApiError::Unauthorized { .. } => (
                StatusCode::UNAUTHORIZED,
                "urn:idem:problem:unauthorized",
                "Missing or invalid API token",
                Some("send Authorization: Bearer <token> with a token from `idem tenant create`"),
            ),
            ApiError::Body(status, d) => (
                *status,
                "urn:idem:problem:bad-body",
                "The request body cannot be read",
                Some(d.as_str()),
            ),
            ApiError::Unprocessable(d) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "urn:idem:problem:unprocessable",
                "The request cannot be processed",
                Some(d.as_str()),
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "urn:idem:problem:unavailable",
                "The store is unavailable; retry later",
                None,
            ),
        };
        let body = Problem {
            kind,
            title,
            status: status.as_u16(),
            detail,
        };
        let mut res = (status, Json(body)).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let ApiError::Unauthorized { presented } = self {
            let challenge = if presented {
                r#"Bearer realm="idem", error="invalid_token""#
            } else {
                r#"Bearer realm="idem""#
            };
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        res
    }
}

impl From<idem_store::Error> for ApiError {
    fn from(e: idem_store::Error) -> Self {
        match e {
            idem_store::Error::Invalid(m) => ApiError::Unprocessable(m),
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::Unavailable
            }
        }
    }
}

/// The tenant a request's bearer token belongs to.
#[derive(Debug, Clone)]
pub struct Tenant(pub TenantId);

impl FromRequestParts<AppState> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::Unauthorized { presented: false });
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(ApiError::Unauthorized { presented: true })?;
        match state.store.authenticate(token).await {
            Ok(t) => Ok(Tenant(t)),
            Err(idem_store::Error::NotFound) => Err(ApiError::Unauthorized { presented: true }),
            Err(e) => Err(e.into()),
        }
    }
}

/// `Json` whose rejections are problem documents that say what to fix.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(e) => Err(ApiError::Body(e.status(), e.body_text())),
        }
    }
}

/// `POST /v1/keys` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    /// Action type from the catalog.
    pub action: String,
    /// The candidate payload.
    pub payload: Box<RawValue>,
}

/// `POST /v1/keys` answer.
#[derive(Debug, Serialize)]
pub struct KeyResponse {
    /// The derived key.
    pub key: String,
    /// The rules version it was derived with.
    pub rules_version: u32,
}

/// Derives the key of a candidate payload for the token's tenant; writes nothing.
async fn derive_key(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    ApiJson(req): ApiJson<KeyRequest>,
) -> Result<Json<KeyResponse>, ApiError> {
    let payload =
        Payload::from_raw(&req.payload).map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    let (key, version) = state
        .deriver
        .derive_key(&state.catalog, &tenant, &req.action, &payload, None)
        .map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    Ok(Json(KeyResponse {
        key: key.to_string(),
        rules_version: version.number(),
    }))
}
