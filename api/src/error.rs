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
    problem: Problem,
    detail: Option<String>,
    retry_after: Option<u64>,
    challenge: Option<&'static str>,
    extra: Option<serde_json::Value>,
}

/// Declares [`Problem`] from one row per problem type, so a URN, its
/// status, the client class it maps to, the extra members its document
/// carries and its title are written once.
macro_rules! problems {
    ($($variant:ident = ($urn:literal, $status:ident, $class:ident, [$($member:ident),*], $title:literal),)*) => {
        /// Every problem type idem answers with: the `type` of its problem
        /// documents. The OpenAPI document lists them all, with the class
        /// each client maps them to and their extra members
        /// (`x-idem-problems`), and the clients' tables are checked against
        /// that list.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Problem {
            $(
                #[doc = $title]
                $variant,
            )*
        }

        impl Problem {
            /// Every problem type, in URN order.
            pub const ALL: &'static [Problem] = &[$(Problem::$variant),*];

            /// The URN (`urn:idem:problem:…`), the document's `type`.
            pub fn urn(self) -> &'static str {
                match self { $(Problem::$variant => $urn,)* }
            }

            /// The status it is answered with (a few are sent with another
            /// one: a body that is not JSON is 400, one of the wrong shape 422).
            pub fn status(self) -> StatusCode {
                match self { $(Problem::$variant => StatusCode::$status,)* }
            }

            /// The document's `title`.
            pub fn title(self) -> &'static str {
                match self { $(Problem::$variant => $title,)* }
            }

            /// What a client does with it.
            pub fn class(self) -> ClientClass {
                match self { $(Problem::$variant => ClientClass::$class,)* }
            }

            /// The members its document carries besides `type`, `title`,
            /// `status` and `detail`.
            pub fn members(self) -> &'static [&'static str] {
                match self { $(Problem::$variant => &[$(stringify!($member)),*],)* }
            }
        }
    };
}

/// What a client does with a problem: the classes both clients' error
/// tables map each problem type to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientClass {
    /// No usable token: fix the configuration.
    Unauthorized,
    /// The tenant is disabled: an administrator decides.
    TenantDisabled,
    /// Another holder's lease runs: wait until `lease_until_ms`, then retry.
    InFlight,
    /// The claim was taken over: this worker must stop acting.
    StaleToken,
    /// Well formed but refused: fix the values; retrying the same fails.
    Unprocessable,
    /// The provider's outcome is too large to keep: the action may have to
    /// be marked uncertain (`marked_uncertain` says whether it was).
    OutcomeTooLarge,
    /// Transient: retry the same request after `Retry-After`.
    Retry,
    /// A request the client never sends as built: a defect to read, not to
    /// retry.
    Defect,
}

impl ClientClass {
    /// The class's name in the OpenAPI document (`x-idem-problems`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::TenantDisabled => "tenant_disabled",
            Self::InFlight => "in_flight",
            Self::StaleToken => "stale_token",
            Self::Unprocessable => "unprocessable",
            Self::OutcomeTooLarge => "outcome_too_large",
            Self::Retry => "retry",
            Self::Defect => "defect",
        }
    }
}

problems! {
    ActionInFlight = ("urn:idem:problem:action-in-flight", CONFLICT, InFlight, [lease_until_ms], "Another attempt holds this action"),
    BadBody = ("urn:idem:problem:bad-body", BAD_REQUEST, Defect, [], "The request body cannot be read"),
    BadRequest = ("urn:idem:problem:bad-request", BAD_REQUEST, Defect, [], "The request is malformed"),
    BodyTooLarge = ("urn:idem:problem:body-too-large", PAYLOAD_TOO_LARGE, Defect, [], "The request body is too large"),
    Conflict = ("urn:idem:problem:conflict", CONFLICT, Defect, [], "Conflicting state"),
    CrossSite = ("urn:idem:problem:cross-site", FORBIDDEN, Defect, [], "Forbidden"),
    DuplicateMember = ("urn:idem:problem:duplicate-member", UNPROCESSABLE_ENTITY, Unprocessable, [member, at], "The JSON names a member twice"),
    EventInFlight = ("urn:idem:problem:event-in-flight", CONFLICT, InFlight, [lease_until_ms], "Another consumer holds this event"),
    ExportsBusy = ("urn:idem:problem:exports-busy", SERVICE_UNAVAILABLE, Retry, [], "Other exports are running"),
    FeedsFull = ("urn:idem:problem:feeds-full", SERVICE_UNAVAILABLE, Retry, [], "Every live-feed stream is taken"),
    HeadersTooLarge = ("urn:idem:problem:headers-too-large", REQUEST_HEADER_FIELDS_TOO_LARGE, Defect, [], "The request headers are too large"),
    Internal = ("urn:idem:problem:internal", INTERNAL_SERVER_ERROR, Defect, [], "Internal error; it was logged"),
    KeyReused = ("urn:idem:problem:key-reused", UNPROCESSABLE_ENTITY, Defect, [], "This Idempotency-Key was used with a different request"),
    LengthRequired = ("urn:idem:problem:length-required", LENGTH_REQUIRED, Defect, [], "Length required"),
    MethodNotAllowed = ("urn:idem:problem:method-not-allowed", METHOD_NOT_ALLOWED, Defect, [], "Method not allowed"),
    Misdirected = ("urn:idem:problem:misdirected", MISDIRECTED_REQUEST, Defect, [], "This server does not answer for that host"),
    NoRoute = ("urn:idem:problem:no-route", NOT_FOUND, Defect, [], "No such route"),
    NotFound = ("urn:idem:problem:not-found", NOT_FOUND, Defect, [], "Not found for this tenant"),
    OpenMonitorForwarded = ("urn:idem:problem:open-monitor-forwarded", FORBIDDEN, Defect, [], "Forbidden"),
    OtherTenant = ("urn:idem:problem:other-tenant", FORBIDDEN, Defect, [], "Forbidden"),
    OutcomeTooLarge = ("urn:idem:problem:outcome-too-large", PAYLOAD_TOO_LARGE, OutcomeTooLarge, [size, limit, marked_uncertain], "The provider's outcome is too large to keep"),
    OutcomeUnknown = ("urn:idem:problem:outcome-unknown", SERVICE_UNAVAILABLE, Retry, [], "The outcome is unknown: the database connection failed while this write was being committed"),
    RateLimited = ("urn:idem:problem:rate-limited", TOO_MANY_REQUESTS, Retry, [], "Too many requests"),
    RequestInProgress = ("urn:idem:problem:request-in-progress", CONFLICT, Defect, [], "A request with this Idempotency-Key is still running"),
    ReservedMember = ("urn:idem:problem:reserved-member", UNPROCESSABLE_ENTITY, Unprocessable, [member], "The payload names a member idem reserves"),
    StaleToken = ("urn:idem:problem:stale-token", CONFLICT, StaleToken, [], "The fencing token is not the current claim"),
    TenantDisabled = ("urn:idem:problem:tenant-disabled", UNAUTHORIZED, TenantDisabled, [], "This tenant is disabled"),
    Timeout = ("urn:idem:problem:timeout", SERVICE_UNAVAILABLE, Retry, [], "The request took longer than the server allows; its outcome is unknown"),
    TooDeep = ("urn:idem:problem:too-deep", UNPROCESSABLE_ENTITY, Unprocessable, [max_depth], "The JSON nests too deeply"),
    TooLarge = ("urn:idem:problem:too-large", UNPROCESSABLE_ENTITY, Unprocessable, [], "A value is too large to store"),
    Unauthorized = ("urn:idem:problem:unauthorized", UNAUTHORIZED, Unauthorized, [], "Missing or invalid API token"),
    Unavailable = ("urn:idem:problem:unavailable", SERVICE_UNAVAILABLE, Retry, [], "The store is unavailable; retry later"),
    Unprocessable = ("urn:idem:problem:unprocessable", UNPROCESSABLE_ENTITY, Unprocessable, [], "The request cannot be processed"),
    UnstorableText = ("urn:idem:problem:unstorable-text", UNPROCESSABLE_ENTITY, Unprocessable, [], "The request holds text the database cannot store"),
    UnsupportedMediaType = ("urn:idem:problem:unsupported-media-type", UNSUPPORTED_MEDIA_TYPE, Defect, [], "Unsupported media type"),
}

#[derive(Serialize)]
struct ProblemBody<'a> {
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
    /// An error of type `p`, with its status and title.
    pub fn of(p: Problem) -> Self {
        Self(Box::new(ProblemParts {
            status: p.status(),
            problem: p,
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

    /// Answers with `status` instead of the problem type's usual one.
    fn with_status(mut self, status: StatusCode) -> Self {
        self.0.status = status;
        self
    }

    /// Adds a `Retry-After` header (seconds).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.0.retry_after = Some(seconds.max(1));
        self
    }

    /// Adds machine-readable members to the problem document: only those
    /// its problem type's row declares (the OpenAPI document lists them).
    pub fn extra(mut self, members: serde_json::Value) -> Self {
        debug_assert!(
            members.as_object().is_some_and(|m| m.keys().all(|k| self
                .0
                .problem
                .members()
                .contains(&k.as_str()))),
            "{:?} declares the members {:?}, not {members}",
            self.0.problem,
            self.0.problem.members()
        );
        self.0.extra = Some(members);
        self
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// 401: no usable bearer token; `presented` says whether one was sent.
    pub fn unauthorized(presented: bool) -> Self {
        let mut e = Self::of(Problem::Unauthorized)
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
        let mut e = Self::of(Problem::TenantDisabled)
        .detail("an administrator disabled this tenant (`idem tenant disable`); its data is kept, and `idem tenant enable` lets its tokens work again");
        e.0.challenge = Some(r#"Bearer realm="idem", error="invalid_token""#);
        e
    }

    /// The body cannot be read: 400 (syntax), 413 (too large), 415 (not
    /// JSON) or 422 (wrong shape).
    pub fn body(status: StatusCode, detail: impl Into<String>) -> Self {
        let p = if status == StatusCode::PAYLOAD_TOO_LARGE {
            Problem::BodyTooLarge
        } else {
            Problem::BadBody
        };
        Self::of(p).with_status(status).detail(detail)
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
            "the action was not marked (the body has no top-level token): mark it uncertain with POST /v1/actions/{key}/uncertain; do not treat this as bad input"
        };
        Self::of(Problem::OutcomeTooLarge)
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
        Self::of(Problem::BadRequest).detail(detail)
    }

    /// 429: a limit per client address or per day was reached.
    pub fn too_many(detail: impl Into<String>) -> Self {
        Self::of(Problem::RateLimited).detail(detail)
    }

    /// 431: too many or too large request headers.
    pub fn headers_too_large(detail: impl Into<String>) -> Self {
        Self::of(Problem::HeadersTooLarge).detail(detail)
    }

    /// The problem document for a status the framework answered before any
    /// handler ran (no route, wrong method, body too large, ...).
    pub fn from_status(status: StatusCode) -> Self {
        let (p, detail) = match status.as_u16() {
            404 => (
                Problem::NoRoute,
                "no /v1 route has this path; see /v1/openapi.json",
            ),
            405 => (
                Problem::MethodNotAllowed,
                "this route does not take this method; the Allow header lists those it takes",
            ),
            411 => (
                Problem::LengthRequired,
                "send the body with a Content-Length",
            ),
            413 => (
                Problem::BodyTooLarge,
                "the API reads bodies of at most 64 KiB",
            ),
            415 => (
                Problem::UnsupportedMediaType,
                "send the body as JSON with Content-Type: application/json",
            ),
            431 => (Problem::HeadersTooLarge, "send fewer or smaller headers"),
            s if s >= 500 => (Problem::Internal, ""),
            _ => (Problem::BadRequest, ""),
        };
        let e = Self::of(p).with_status(status);
        if detail.is_empty() {
            e
        } else {
            e.detail(detail)
        }
    }

    /// 421: the request names a host this server does not answer for.
    pub fn misdirected(detail: impl Into<String>) -> Self {
        Self::of(Problem::Misdirected).detail(detail)
    }

    /// 403 with a specific problem type.
    pub fn forbidden(p: Problem, detail: impl Into<String>) -> Self {
        Self::of(p)
            .with_status(StatusCode::FORBIDDEN)
            .detail(detail)
    }

    /// 404: nothing under that name for this tenant.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::of(Problem::NotFound).detail(detail)
    }

    /// 409 with a specific problem type.
    pub fn conflict(p: Problem, detail: impl Into<String>) -> Self {
        Self::of(p).with_status(StatusCode::CONFLICT).detail(detail)
    }

    /// 409 for a lease someone else holds until `lease_until_ms`: says how
    /// long to wait (`Retry-After`, whole seconds) and when the lease ends.
    pub fn lease_held(p: Problem, detail: &'static str, lease_until_ms: i64, now_ms: i64) -> Self {
        let wait_ms = lease_until_ms.saturating_sub(now_ms).max(0);
        let seconds = u64::try_from(wait_ms).unwrap_or(0).div_ceil(1000);
        Self::conflict(p, detail)
            .retry_after(seconds)
            .extra(serde_json::json!({ "lease_until_ms": lease_until_ms }))
    }

    /// 422: well formed, but it cannot be honoured.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::of(Problem::Unprocessable).detail(detail)
    }

    /// 422 with a specific problem type.
    pub fn unprocessable_as(p: Problem, detail: &str) -> Self {
        Self::of(p)
            .with_status(StatusCode::UNPROCESSABLE_ENTITY)
            .detail(detail)
    }

    /// 422: JSON that nests deeper than idem reads; names the limit.
    pub fn too_deep(e: idem_core::json::TooDeep) -> Self {
        Self::of(Problem::TooDeep)
            .detail(e.to_string())
            .extra(serde_json::json!({ "max_depth": e.limit }))
    }

    /// 422: an object in the body names a member twice (parsers disagree on
    /// which one counts, so idem takes neither).
    pub fn duplicate_member(name: &str, at: &str) -> Self {
        Self::of(Problem::DuplicateMember)
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
        Self::of(Problem::FeedsFull)
        .detail(format!(
            "{cap} live-feed streams are open, the most this server keeps; poll /live/fragment or retry later"
        ))
        .retry_after(5)
    }

    /// 503: every export slot is taken.
    pub fn exports_busy(at_once: usize) -> Self {
        Self::of(Problem::ExportsBusy)
        .detail(format!(
            "{at_once} exports of the uncertain list are running, the most this server runs at once; retry after Retry-After seconds"
        ))
        .retry_after(2)
    }

    /// 503: the store is unreachable or failed; the cause was logged.
    pub fn unavailable() -> Self {
        Self::of(Problem::Unavailable).retry_after(1)
    }

    /// 503: the database connection failed while the request's write was
    /// being committed, so it may have taken effect. A retry with the same
    /// key (or the same intent) finds what was done, and cannot act twice.
    pub fn outcome_unknown() -> Self {
        Self::of(Problem::OutcomeUnknown)
        .detail("it may or may not have been recorded; retry the same request (same Idempotency-Key, same intent), which finds what was done and never acts twice")
        .retry_after(1)
    }

    /// 503: the request ran past the server's limit (`--request-timeout`),
    /// typically waiting on a database host that stopped answering. What
    /// it wrote may or may not have been committed.
    pub fn timed_out(limit: std::time::Duration) -> Self {
        Self::of(Problem::Timeout)
        .detail(format!(
            "no answer within {} ms; retry the same request (same Idempotency-Key, same intent), which finds what was done and never acts twice",
            limit.as_millis()
        ))
        .retry_after(1)
    }

    /// 500: a bug on our side; the cause was logged.
    pub fn internal() -> Self {
        Self::of(Problem::Internal)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let p = *self.0;
        let body = ProblemBody {
            kind: p.problem.urn(),
            title: p.problem.title(),
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
                Problem::UnstorableText,
                "a value holds a NUL character (\\u0000) or one the database's encoding lacks; remove it",
            ),
            e if e.is_too_large_for_the_database() => {
                tracing::warn!(error = %chain(&e), "the database refused a value for its size; a documented limit is missing");
                ApiError::unprocessable_as(
                    Problem::TooLarge,
                    "a text or number in the request is larger than the database holds; shorten it",
                )
            }
            e if e.is_conflict() => ApiError::conflict(
                Problem::Conflict,
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

impl From<idem_wire::NotJson> for ApiError {
    /// A stored text idem wrote is not JSON: a defect, logged once, never
    /// sent.
    fn from(e: idem_wire::NotJson) -> Self {
        tracing::error!(error = %e, "a stored answer cannot be sent");
        ApiError::internal()
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
    /// `outcome-too-large`: the outcome's length in bytes; `null` when the
    /// body was over the limit and not read further.
    pub size: Option<usize>,
    /// `outcome-too-large`: the largest outcome kept (`--max-outcome-bytes`).
    pub limit: Option<usize>,
    /// `outcome-too-large`: whether idem marked the action uncertain before
    /// answering. When `false`, mark it yourself
    /// (`POST /v1/actions/{key}/uncertain`): the provider may have acted.
    pub marked_uncertain: Option<bool>,
    /// `action-in-flight`, `event-in-flight`: when the holder's lease ends,
    /// ms since the epoch.
    pub lease_until_ms: Option<i64>,
    /// `too-deep`: the deepest nesting idem reads.
    pub max_depth: Option<usize>,
    /// `duplicate-member`, `reserved-member`: the member's name.
    pub member: Option<String>,
    /// `duplicate-member`: where the object is (`$`, `$.payload`, `$.items[2]`).
    pub at: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_type_is_declared_once_in_urn_order() {
        let urns: Vec<&str> = Problem::ALL.iter().map(|p| p.urn()).collect();
        let mut sorted = urns.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(urns, sorted, "unique, in URN order");
        for p in Problem::ALL {
            assert!(p.urn().starts_with("urn:idem:problem:"), "{p:?}");
            assert!(!p.title().is_empty(), "{p:?}");
        }
    }

    /// Each extra member a constructor writes is declared by its row, and
    /// each row's members are written by its constructor: the document's
    /// `x-idem-problems` says what a client may read.
    #[test]
    fn each_problem_writes_the_members_its_row_declares() {
        let keys = |e: ApiError| -> (Problem, Vec<String>) {
            let mut k: Vec<String> =
                e.0.extra
                    .as_ref()
                    .and_then(|v| v.as_object())
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
            k.sort();
            (e.0.problem, k)
        };
        let written = [
            keys(ApiError::outcome_too_large(Some(9), 8, true)),
            keys(ApiError::outcome_too_large(None, 8, false)),
            keys(ApiError::lease_held(Problem::ActionInFlight, "held", 2, 1)),
            keys(ApiError::lease_held(Problem::EventInFlight, "held", 2, 1)),
            keys(ApiError::too_deep(idem_core::json::TooDeep { limit: 64 })),
            keys(ApiError::duplicate_member("a", "$")),
            keys(
                ApiError::unprocessable_as(Problem::ReservedMember, "r")
                    .extra(serde_json::json!({"member": "_idem"})),
            ),
        ];
        for (p, k) in &written {
            let mut declared: Vec<String> = p.members().iter().map(|m| (*m).to_owned()).collect();
            declared.sort();
            assert_eq!(k, &declared, "{p:?}");
        }
        for p in Problem::ALL.iter().filter(|p| !p.members().is_empty()) {
            assert!(
                written.iter().any(|(w, _)| w == p),
                "{p:?} declares members no test writes"
            );
        }
    }

    /// The URNs are written in this file's table only (the API's sources and
    /// the server's are read): a handler spelling one by hand could drift
    /// from what the OpenAPI document lists.
    #[test]
    fn no_other_source_spells_a_problem_urn() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut stack = vec![root.join("src"), root.join("../server/src")];
        let mut found = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("api/src/error.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    if text.contains("\"urn:idem:problem:") {
                        found.push(path.display().to_string());
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "problem URNs spelled outside error.rs: {found:?}"
        );
    }
}
