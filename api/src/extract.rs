//! Extractors and the authentication middleware: the tenant behind a bearer
//! token, JSON/path/query extractors whose rejections are problem documents,
//! and the cookie reader. A leaf beside `state` and `error`.

use super::error::{ApiError, Problem};

/// The largest request body the API reads (64 KiB); past it the answer is 413.
pub const BODY_LIMIT: usize = 64 * 1024;
use axum::extract::{FromRequest, FromRequestParts, Json, Path, Query, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use idem_core::TenantId;
use idem_store::Store;

/// The tenant a request's bearer token belongs to.
#[derive(Debug, Clone)]
pub struct Tenant(pub TenantId);

/// The token in `Authorization: Bearer <token>`, or why there is none.
pub fn bearer(parts: &axum::http::HeaderMap) -> Result<&str, ApiError> {
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
            // Its write turn is the tenant's from now on (taken once the
            // body has arrived).
            if let Some(ticket) = req.extensions().get::<super::turns::Ticket>() {
                ticket.for_tenant(t.0.as_str());
            }
            // The bare id too, for handlers outside this crate (the MCP
            // transport hands request extensions to idem-mcp's tools).
            req.extensions_mut().insert(t.0.clone());
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

/// `Json` whose rejections are problem documents that say what to fix, and
/// which measures the body's nesting before any parser sees it (422 past
/// [`idem_core::json::MAX_DEPTH`]): a field held as raw JSON is skipped by
/// serde_json without its recursion limit, and walked recursively later.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        json_only(req.headers())?;
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::body(e.status(), e.body_text()))?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// 415 unless the request says its body is JSON.
pub fn json_only(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    if json_content_type(headers) {
        Ok(())
    } else {
        Err(ApiError::body(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Expected request with `Content-Type: application/json`",
        ))
    }
}

/// What [`ApiJson`] does with a body it has read: depth and duplicate
/// members first, then the shape, then NUL characters.
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    ApiError::check_json(bytes)?;
    let value = Json::<T>::from_bytes(bytes)
        .map(|Json(v)| v)
        .map_err(ApiError::from)?;
    if let Some(field) = nul_field(bytes) {
        return Err(ApiError::unprocessable_as(
            Problem::UnstorableText,
            &format!("{field} holds a NUL character (\\u0000), which idem cannot store; remove it"),
        ));
    }
    Ok(value)
}

/// Where a JSON body holds a NUL character (only written `\u0000` in
/// valid JSON): `field \`payload.referencia\``, or `a field name` when a
/// name holds it. One scan of the bytes; the body is walked only when the
/// escape is there (its depth is already bounded).
fn nul_field(bytes: &[u8]) -> Option<String> {
    let has = bytes
        .windows(6)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && w[2..].eq_ignore_ascii_case(b"0000"));
    if !has {
        return None;
    }
    fn walk(v: &serde_json::Value, path: &mut Vec<String>) -> Option<String> {
        match v {
            serde_json::Value::String(s) if s.contains('\0') => Some(if path.is_empty() {
                "the body".to_owned()
            } else {
                format!("field `{}`", path.join("."))
            }),
            serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
                path.push(i.to_string());
                let r = walk(x, path);
                path.pop();
                r
            }),
            serde_json::Value::Object(m) => m.iter().find_map(|(k, x)| {
                if k.contains('\0') {
                    return Some("a field name".to_owned());
                }
                path.push(k.clone());
                let r = walk(x, path);
                path.pop();
                r
            }),
            _ => None,
        }
    }
    // An escaped backslash followed by `u0000` is no NUL: the walk decides.
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    walk(&v, &mut Vec::new())
}

/// Whether the request says its body is JSON (`application/json` or an
/// `application/*+json` type), as axum's own `Json` requires.
pub fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let Some(subtype) = essence.strip_prefix("application/") else {
        return false;
    };
    subtype == "json" || subtype.ends_with("+json")
}

/// `Path` whose rejections are problem documents.
#[derive(FromRequestParts)]
#[from_request(via(Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// `Query` whose rejections are problem documents.
#[derive(FromRequestParts)]
#[from_request(via(Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// The value of the request's cookie `name`, if it sent one (parsed by
/// axum-extra's cookie jar).
pub fn cookie(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    axum_extra::extract::CookieJar::from_headers(headers)
        .get(name)
        .map(|c| c.value().to_owned())
}
