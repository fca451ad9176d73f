//! The API's error: every failure a handler or layer reports, rendered as
//! RFC 9457 `application/problem+json`. A leaf: it imports no other module
//! of the server.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

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

    /// 401: the token is live but its tenant is disabled.
    pub fn tenant_disabled() -> Self {
        let mut e = Self::new(
            StatusCode::UNAUTHORIZED,
            "urn:idem:problem:tenant-disabled",
            "This tenant is disabled",
        )
        .detail("an administrator disabled this tenant (`idem tenant disable`); its data is kept, and `idem tenant enable` lets its tokens work again");
        e.0.challenge = Some(r#"Bearer realm="idem", error="invalid_token""#);
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

    /// 413: the provider's outcome is over `--max-outcome-bytes`. `size` is
    /// its length when the body could be read (else the body was over the
    /// limit plus the envelope, and is not read further); `marked` says
    /// whether the action was marked uncertain before this answer.
    pub fn outcome_too_large(size: Option<usize>, limit: usize, marked: bool) -> Self {
        let what = match size {
            Some(n) => format!("the outcome is {n} bytes"),
            None => "the body is over the outcome limit".to_owned(),
        };
        let then = if marked {
            "the action is now uncertain (the provider acted, but its answer could not be kept): settle it on /live or with reconcile; do not treat this as bad input"
        } else {
            "the action was not marked (its token could not be read): mark it uncertain with POST /v1/actions/{key}/uncertain; do not treat this as bad input"
        };
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "urn:idem:problem:outcome-too-large",
            "The provider's outcome is too large to keep",
        )
        .detail(format!(
            "{what}, over the limit of {limit} bytes (--max-outcome-bytes); {then}"
        ))
        .extra(serde_json::json!({
            "size": size,
            "limit": limit,
            "marked_uncertain": marked,
        }))
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

    /// 429: a limit per client address or per day was reached.
    pub fn too_many(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "urn:idem:problem:rate-limited",
            "Too many requests",
        )
        .detail(detail)
    }

    /// 431: too many or too large request headers.
    pub fn headers_too_large(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "urn:idem:problem:headers-too-large",
            "The request headers are too large",
        )
        .detail(detail)
    }

    /// The problem document for a status the framework answered before any
    /// handler ran (no route, wrong method, body too large, ...).
    pub fn from_status(status: StatusCode) -> Self {
        let (kind, title, detail) = match status.as_u16() {
            404 => (
                "urn:idem:problem:no-route",
                "No such route",
                "no /v1 route has this path; see /v1/openapi.json",
            ),
            405 => (
                "urn:idem:problem:method-not-allowed",
                "Method not allowed",
                "this route does not take this method; the Allow header lists those it takes",
            ),
            411 => (
                "urn:idem:problem:length-required",
                "Length required",
                "send the body with a Content-Length",
            ),
            413 => (
                "urn:idem:problem:body-too-large",
                "The request body is too large",
                "the API reads bodies of at most 64 KiB",
            ),
            415 => (
                "urn:idem:problem:unsupported-media-type",
                "Unsupported media type",
                "send the body as JSON with Content-Type: application/json",
            ),
            431 => (
                "urn:idem:problem:headers-too-large",
                "The request headers are too large",
                "send fewer or smaller headers",
            ),
            s if s >= 500 => (
                "urn:idem:problem:internal",
                "Internal error; it was logged",
                "",
            ),
            _ => (
                "urn:idem:problem:bad-request",
                "The request is malformed",
                "",
            ),
        };
        let e = Self::new(status, kind, title);
        if detail.is_empty() {
            e
        } else {
            e.detail(detail)
        }
    }

    /// 421: the request names a host this server does not answer for.
    pub fn misdirected(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::MISDIRECTED_REQUEST,
            "urn:idem:problem:misdirected",
            "This server does not answer for that host",
        )
        .detail(detail)
    }

    /// 403 with a specific problem type.
    pub fn forbidden(kind: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, kind, "Forbidden").detail(detail)
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

    /// 409 for a lease someone else holds until `lease_until_ms`: says how
    /// long to wait (`Retry-After`, whole seconds) and when the lease ends.
    pub fn lease_held(
        kind: &'static str,
        title: &'static str,
        detail: &'static str,
        lease_until_ms: i64,
        now_ms: i64,
    ) -> Self {
        let wait_ms = lease_until_ms.saturating_sub(now_ms).max(0);
        let seconds = u64::try_from(wait_ms).unwrap_or(0).div_ceil(1000);
        Self::conflict(kind, title, detail)
            .retry_after(seconds)
            .extra(serde_json::json!({ "lease_until_ms": lease_until_ms }))
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

    /// 422: JSON that nests deeper than idem reads; names the limit.
    pub fn too_deep(e: idem_core::json::TooDeep) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "urn:idem:problem:too-deep",
            "The JSON nests too deeply",
        )
        .detail(e.to_string())
        .extra(serde_json::json!({ "max_depth": e.limit }))
    }

    /// 422: an object in the body names a member twice (parsers disagree on
    /// which one counts, so idem takes neither).
    pub fn duplicate_member(name: &str, at: &str) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "urn:idem:problem:duplicate-member",
            "The JSON names a member twice",
        )
        .detail(format!(
            "the object at {at} names `{name}` more than once; send each member once"
        ))
        .extra(serde_json::json!({ "member": name, "at": at }))
    }

    /// Refuses JSON text that nests too deeply or names a member twice in
    /// one object: the checks every reader of a client's JSON makes first.
    pub fn check_json(text: &[u8]) -> Result<(), Self> {
        idem_core::json::check_depth(text, idem_core::json::MAX_DEPTH).map_err(Self::too_deep)?;
        if let Some((name, at)) = std::str::from_utf8(text)
            .ok()
            .and_then(idem_core::json::duplicate_member)
        {
            return Err(Self::duplicate_member(&name, &at));
        }
        Ok(())
    }

    /// 503: every live-feed slot is taken; the page polls instead.
    pub fn feeds_full(cap: usize) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:idem:problem:feeds-full",
            "Every live-feed stream is taken",
        )
        .detail(format!(
            "{cap} live-feed streams are open, the most this server keeps; poll /live/fragment or retry later"
        ))
        .retry_after(5)
    }

    /// 503: every export slot is taken.
    pub fn exports_busy(at_once: usize) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:idem:problem:exports-busy",
            "Other exports are running",
        )
        .detail(format!(
            "{at_once} exports of the uncertain list are running, the most this server runs at once; retry after Retry-After seconds"
        ))
        .retry_after(2)
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

    /// 503: the database connection failed while the request's write was
    /// being committed, so it may have taken effect. A retry with the same
    /// key (or the same intent) finds what was done, and cannot act twice.
    pub fn outcome_unknown() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:idem:problem:outcome-unknown",
            "The outcome is unknown: the database connection failed while this write was being committed",
        )
        .detail("it may or may not have been recorded; retry the same request (same Idempotency-Key, same intent), which finds what was done and never acts twice")
        .retry_after(1)
    }

    /// 503: the request ran past the server's limit (`--request-timeout`),
    /// typically waiting on a database host that stopped answering. What
    /// it wrote may or may not have been committed.
    pub fn timed_out(limit: std::time::Duration) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "urn:idem:problem:timeout",
            "The request took longer than the server allows; its outcome is unknown",
        )
        .detail(format!(
            "no answer within {} ms; retry the same request (same Idempotency-Key, same intent), which finds what was done and never acts twice",
            limit.as_millis()
        ))
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

/// An error and its causes, `outer: inner: innermost`, for one log line
/// (the store's "database error" alone would hide the driver's reason).
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

impl From<idem_store::Error> for ApiError {
    /// Logged here, once, inside the request's span (so under its id);
    /// never sent.
    fn from(e: idem_store::Error) -> Self {
        use idem_store::Error as E;
        match e {
            E::Invalid(m) => ApiError::unprocessable(m),
            E::NotFound => ApiError::not_found("no such record for this tenant"),
            E::TenantDisabled(_) => ApiError::tenant_disabled(),
            e if e.is_unstorable_text() => ApiError::unprocessable_as(
                "urn:idem:problem:unstorable-text",
                "The request holds text the database cannot store",
                "a value holds a NUL character (\\u0000) or one the database's encoding lacks; remove it",
            ),
            e if e.is_too_large_for_the_database() => {
                tracing::warn!(error = %chain(&e), "the database refused a value for its size; a documented limit is missing");
                ApiError::unprocessable_as(
                    "urn:idem:problem:too-large",
                    "A value is too large to store",
                    "a text or number in the request is larger than the database holds; shorten it",
                )
            }
            e if e.is_conflict() => ApiError::conflict(
                "urn:idem:problem:conflict",
                "Conflicting state",
                e.to_string(),
            ),
            E::Corrupt(_) => {
                tracing::error!(error = %chain(&e), "stored data is corrupt");
                ApiError::internal()
            }
            e if e.is_outcome_unknown() => {
                tracing::error!(error = %chain(&e), "commit outcome unknown");
                ApiError::outcome_unknown()
            }
            E::Url(_) | E::Migrate(_) => {
                tracing::error!(error = %chain(&e), "store misconfigured");
                ApiError::internal()
            }
            other => {
                tracing::error!(error = %chain(&other), "store unavailable");
                ApiError::unavailable()
            }
        }
    }
}

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

/// The schema of [`ApiError`]'s document, for the OpenAPI description: an
/// RFC 9457 problem document (`application/problem+json`).
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

/// A plain-text answer, for the dashboard's routes (a form post, a CSV, a
/// chart) where a person or a spreadsheet reads the reason, not a problem
/// document.
pub fn plain_text(status: StatusCode, text: impl Into<String>) -> Response {
    let text: String = text.into();
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}
