//! The JSON API under `/v1`: bearer-token tenants, `application/problem+json`
//! errors. The tenant always comes from the token, never from the request.

pub mod demo;
pub mod idempotency;
pub mod openapi;
pub mod v1;

use crate::web::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use idem_core::TenantId;
use idem_store::Store;
use serde::Serialize;

/// The largest request body `/v1` reads (64 KiB); past it the answer is 413.
pub const BODY_LIMIT: usize = 64 * 1024;

/// The `/v1` routes. They hold an [`ApiState`] of their own: axum clones a
/// route's state for every request, and the API needs none of the site's.
pub fn routes(state: &AppState) -> Router<AppState> {
    let state = state.api.clone();
    // The guarded demo provider: faults wrap the idempotency layer, so an
    // injected failure happens after the charge and its key committed.
    let guarded = Router::new()
        .route("/v1/demo/charges", post(demo::create_charge))
        .layer(idempotency::IdempotencyLayer::new(
            state.store.clone(),
            state.metrics.clone(),
        ))
        .layer(from_fn(demo::inject_faults));
    let authed = Router::new()
        .route("/v1/keys", post(v1::derive_key))
        .route("/v1/intents", post(v1::record_intent))
        .route("/v1/intents/{action}/{reference}", get(v1::get_intent))
        .route("/v1/actions/{key}", get(v1::get_action))
        .route("/v1/actions/{key}/begin", post(v1::begin_action))
        .route("/v1/actions/{key}/complete", post(v1::complete_action))
        .route("/v1/actions/{key}/fail", post(v1::fail_action))
        .route("/v1/actions/{key}/reconcile", post(v1::reconcile_action))
        .route("/v1/events/{source}/{event_id}", post(v1::consume_event))
        .route("/v1/stats", get(v1::stats))
        .route("/v1/demo/charges/count", get(demo::count))
        .merge(guarded)
        .route_layer(from_fn_with_state(state.store.clone(), authenticate));
    Router::new()
        .merge(authed)
        .route("/v1/openapi.json", get(openapi::serve))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// An API error, rendered as RFC 9457 `application/problem+json`. Internal
/// details are logged once where they happen and never sent.
///
/// Boxed, so a `Result<_, ApiError>` stays one pointer wide on the happy path.
#[derive(Debug, Clone)]
pub struct ApiError(Box<ProblemParts>);

#[derive(Debug, Clone)]
struct ProblemParts {
    status: StatusCode,
    kind: &'static str,
    title: &'static str,
    detail: Option<String>,
    retry_after: Option<u64>,
    challenge: Option<&'static str>,
    extra: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    extra: Option<&'a serde_json::Value>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, title: &'static str) -> Self {
        Self(Box::new(ProblemParts {
            status,
            kind,
            title,
            detail: None,
            retry_after: None,
            challenge: None,
            extra: None,
        }))
    }

    /// Adds the human explanation of what to fix.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.0.detail = Some(detail.into());
        self
    }

    /// Adds a `Retry-After` header (seconds).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.0.retry_after = Some(seconds.max(1));
        self
    }

    /// Adds machine-readable members to the problem document.
    pub fn extra(mut self, members: serde_json::Value) -> Self {
        self.0.extra = Some(members);
        self
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// 401: no usable bearer token; `presented` says whether one was sent.
    pub fn unauthorized(presented: bool) -> Self {
        let mut e = Self::new(
            StatusCode::UNAUTHORIZED,
            "urn:idem:problem:unauthorized",
            "Missing or invalid API token",
        )
        .detail("send Authorization: Bearer <token> with a token from `idem tenant create`");
        e.0.challenge = Some(if presented {
            r#"Bearer realm="idem", error="invalid_token""#
        } else {
            r#"Bearer realm="idem""#
        });
        e
    }

    /// The body cannot be read: 400 (syntax), 413 (too large), 415 (not
    /// JSON) or 422 (wrong shape).
    pub fn body(status: StatusCode, detail: impl Into<String>) -> Self {
        let (kind, title) = if status == StatusCode::PAYLOAD_TOO_LARGE {
            (
                "urn:idem:problem:body-too-large",
                "The request body is too large",
            )
        } else {
            (
                "urn:idem:problem:bad-body",
                "The request body cannot be read",
            )
        };
        Self::new(status, kind, title).detail(detail)
    }

    /// 400: a header, path or query parameter is malformed.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "urn:idem:problem:bad-request",
            "The request is malformed",
        )
        .detail(detail)
    }

    /// 404: nothing under that name for this tenant.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "urn:idem:problem:not-found",
            "Not found for this tenant",
        )
        .detail(detail)
    }

    /// 409 with a specific problem type.
    pub fn conflict(kind: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, kind, title).detail(detail)
    }

    /// 422: well formed, but it cannot be honoured.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "urn:idem:problem:unprocessable",
            "The request cannot be processed",
        )
        .detail(detail)
    }

    /// 422 with a specific problem type.
    pub fn unprocessable_as(kind: &'static str, title: &'static str, detail: &str) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, kind, title).detail(detail)
    }

    /// 503: the store is unreachable or failed; the cause was logged.
    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:idem:problem:unavailable",
            "The store is unavailable; retry later",
        )
        .retry_after(1)
    }

    /// 500: a bug on our side; the cause was logged.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "urn:idem:problem:internal",
            "Internal error; it was logged",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let p = *self.0;
        let body = Problem {
            kind: p.kind,
            title: p.title,
            status: p.status.as_u16(),
            detail: p.detail.as_deref(),
            extra: p.extra.as_ref(),
        };
        let mut res = (p.status, Json(body)).into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(c) = p.challenge {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        if let Some(s) = p.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        res
    }
}

impl From<idem_store::Error> for ApiError {
    fn from(e: idem_store::Error) -> Self {
        match e {
            idem_store::Error::Invalid(m) => ApiError::unprocessable(m),
            idem_store::Error::NotFound => ApiError::not_found("no such record for this tenant"),
            idem_store::Error::Conflict(m) => {
                ApiError::conflict("urn:idem:problem:conflict", "Conflicting state", m)
            }
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::unavailable()
            }
        }
    }
}

/// The tenant a request's bearer token belongs to.
#[derive(Debug, Clone)]
pub struct Tenant(pub TenantId);

/// The token in `Authorization: Bearer <token>`, or why there is none.
pub(crate) fn bearer(parts: &axum::http::HeaderMap) -> Result<&str, ApiError> {
    let Some(value) = parts.get(header::AUTHORIZATION) else {
        return Err(ApiError::unauthorized(false));
    };
    value
        .to_str()
        .ok()
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        })
        .ok_or(ApiError::unauthorized(true))
}

async fn tenant_of(store: &Store, headers: &axum::http::HeaderMap) -> Result<Tenant, ApiError> {
    let token = bearer(headers)?;
    match store.authenticate(token).await {
        Ok(t) => Ok(Tenant(t)),
        Err(idem_store::Error::NotFound) => Err(ApiError::unauthorized(true)),
        Err(e) => Err(e.into()),
    }
}

/// Middleware: authenticates the bearer token once and leaves the tenant in
/// the request's extensions for the layers and handlers inside.
pub async fn authenticate(State(store): State<Store>, mut req: Request, next: Next) -> Response {
    match tenant_of(&store, req.headers()).await {
        Ok(t) => {
            req.extensions_mut().insert(t);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    /// The tenant [`authenticate`] left in the extensions. A route that takes
    /// a `Tenant` without wearing that middleware is a wiring bug: it answers
    /// 401 (and says so in the log) rather than authenticating a second time.
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Tenant>().cloned().ok_or_else(|| {
            tracing::error!(
                "a handler takes a Tenant on a route without the authenticate middleware"
            );
            ApiError::unauthorized(false)
        })
    }
}

/// `Json` whose rejections are problem documents that say what to fix.
#[derive(FromRequest)]
#[from_request(via(Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `Path` whose rejections are problem documents.
#[derive(FromRequestParts)]
#[from_request(via(Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// `Query` whose rejections are problem documents.
#[derive(FromRequestParts)]
#[from_request(via(Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        ApiError::body(e.status(), e.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}
