//! Extractors and the authentication middleware: the tenant behind a bearer
//! token, JSON/path/query extractors whose rejections are problem documents,
//! cookies and the request's locale. A leaf beside `state` and `error`.

use super::error::{ApiError, Problem};

/// The largest request body the API reads (64 KiB); past it the answer is 413.
pub const BODY_LIMIT: usize = 64 * 1024;
use app::i18n::LOCALE_COOKIE;
use axum::extract::{FromRequest, FromRequestParts, Json, Path, Query, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use idem_core::locale::Locale;
use idem_core::TenantId;
use idem_store::Store;

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
pub(crate) fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
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

/// The locale a request asks for, and whether it asked in the query (then
/// the choice is also kept in a cookie): `lang` in the query, else the
/// cookie, else pt-BR.
pub fn request_locale(parts: &Parts) -> (Locale, bool) {
    match query_locale(&parts.uri) {
        Some(l) => (l, true),
        None => (cookie_locale(&parts.headers), false),
    }
}

fn query_locale(uri: &axum::http::Uri) -> Option<Locale> {
    uri.query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == "lang")
            .filter_map(|(_, v)| Locale::from_tag(v))
            .next_back()
    })
}

/// The locale the `idem_lang` cookie names, else pt-BR.
pub fn cookie_locale(headers: &axum::http::HeaderMap) -> Locale {
    cookie(headers, LOCALE_COOKIE)
        .and_then(|v| Locale::from_tag(&v))
        .unwrap_or_default()
}

/// The value of the request's cookie `name`, if it sent one (parsed by
/// axum-extra's cookie jar).
pub fn cookie(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    axum_extra::extract::CookieJar::from_headers(headers)
        .get(name)
        .map(|c| c.value().to_owned())
}

/// [`request_locale`]'s choice, from a request's address and headers.
pub fn request_locale_of(uri: &axum::http::Uri, headers: &axum::http::HeaderMap) -> Locale {
    query_locale(uri).unwrap_or_else(|| cookie_locale(headers))
}

/// A scenario link's query (v1 or v2) and its `lang`, for the pages that
/// draw or export a scenario (`/charts/…`, `/export.csv`). A query the
/// calculator refuses is answered 422 in plain text, in the calculator's
/// own words and the request's language.
#[derive(Debug, Clone)]
pub struct ScenarioQuery {
    /// The scenario.
    pub scenario: idem_core::scenario::Scenario,
    /// `lang`, else pt-BR.
    pub locale: Locale,
}

impl<S: Send + Sync> FromRequestParts<S> for ScenarioQuery {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let locale = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "lang")
            .and_then(|(_, v)| Locale::from_tag(v))
            .unwrap_or_default();
        // A date only labels the rate: one that names no day, or one that
        // has not begun anywhere yet, blocks no figure and no export (the
        // rate goes out undated).
        let read = idem_core::scenario::Scenario::from_query_for_figures(
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        match read {
            Ok(mut scenario) => {
                let latest = crate::today::latest_today();
                scenario.fx_date = scenario
                    .fx_date
                    .filter(|d| idem_core::date::not_after(d, &latest).is_ok());
                Ok(ScenarioQuery { scenario, locale })
            }
            Err(e) => Err(super::error::plain_text(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                app::i18n::query_error_text(&e, locale),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    #[test]
    fn the_locale_comes_from_the_query_then_the_cookie() {
        let parts = |uri: &str, cookie: Option<&str>| {
            let mut b = axum::http::Request::builder().uri(uri);
            if let Some(c) = cookie {
                b = b.header(header::COOKIE, c);
            }
            b.body(()).map(|r| r.into_parts().0).ok()
        };
        let p = parts("/?lang=en-US", Some("idem_lang=pt-BR")).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::EnUs, true));
        let p = parts("/", Some("a=b; idem_lang=en-US")).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::EnUs, false));
        let p = parts("/?lang=xx", None).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::PtBr, false));
    }
}
