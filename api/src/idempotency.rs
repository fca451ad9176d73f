//! `IdempotencyLayer`: the `Idempotency-Key` header semantics of
//! draft-ietf-httpapi-idempotency-key-header, for any axum route.
//!
//! For each request on a guarded route:
//! 1. The tenant comes from the [`Tenant`] the authentication middleware
//!    left in the extensions; keys are scoped to it.
//! 2. The key is the `Idempotency-Key` header: an RFC 8941 string
//!    (`"abc"`) or the bare value (`abc`), 1 to 255 characters, each a
//!    visible ASCII character other than `"` and `\` (0x21-0x7E). Missing or
//!    malformed: 400.
//! 3. The fingerprint is SHA-256 over the method, the path with its query and
//!    the body (canonical JSON when the body is JSON, so key order and
//!    spacing do not matter and numbers compare by exact decimal value; the
//!    raw bytes otherwise). GET, HEAD and OPTIONS pass through untouched:
//!    their key is ignored and nothing is stored.
//! 4. The store decides in one statement: run it, replay the stored
//!    response (`Idempotent-Replayed: true`), 409 while the first request
//!    runs (`Retry-After`), or 422 when the key came with another request.
//! 5. Once the body is read, taking the key, running the handler and
//!    storing its outcome happen in a task of their own, so a client that
//!    goes away, at any moment, leaves either the stored response or a
//!    free key, never a lock.
//!    A handler may take an [`IdempotencyGuard`] and write through
//!    [`IdempotencyGuard::transaction`]: the layer stores the response in
//!    that same transaction, so the handler's writes and the key's
//!    completion commit or roll back together.
//! 6. What is stored: every response the handler produced with a 1xx-4xx
//!    status (its successes and its deterministic refusals), except 408,
//!    409, 425 and 429, which say "try again" and so release the key. A 5xx
//!    or a body that fails mid-way rolls the handler's transaction back and
//!    releases the key, so the client's retry runs again. The layer's own
//!    answers (400, 401, 409, 413, 422, 503) are never stored.

use super::error::{ApiError, Problem};
use super::extract::Tenant;
use super::extract::BODY_LIMIT;
use super::metrics::Metrics;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use idem_core::TenantId;
use idem_store::{HttpBegin, HttpRequestKey, Session, Store, StoredResponse};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tower::{Layer, Service};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header marking a replayed response.
pub const REPLAYED: &str = "idempotent-replayed";
/// The longest key, in characters.
pub const MAX_KEY_LEN: usize = 255;
/// The largest response body stored for replay (1 MiB).
pub const RESPONSE_LIMIT: usize = 1024 * 1024;
/// How long a request that died mid-way keeps its key from a retry of the
/// same request (a different request gets 422 regardless).
pub const DEFAULT_LOCK: Duration = Duration::from_secs(60);

/// Headers that describe the connection, not the response: never stored.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "content-length",
    "date",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "idempotent-replayed",
];

/// The layer. See the module documentation for the semantics.
#[derive(Clone)]
pub struct IdempotencyLayer {
    config: Arc<Config>,
}

struct Config {
    store: Store,
    metrics: Arc<Metrics>,
    lock: Duration,
}

impl IdempotencyLayer {
    /// Guards routes with keys stored in `store`.
    pub fn new(store: Store, metrics: Arc<Metrics>) -> Self {
        Self {
            config: Arc::new(Config {
                store,
                metrics,
                lock: DEFAULT_LOCK,
            }),
        }
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Idempotency<S> {
        Idempotency {
            inner,
            config: self.config.clone(),
        }
    }
}

/// The service [`IdempotencyLayer`] wraps a route in.
#[derive(Clone)]
pub struct Idempotency<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> Service<Request> for Idempotency<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The clone that was driven to readiness serves this call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        // Safe methods repeat harmlessly: their key is ignored and nothing is
        // stored (a 405 must not be replayed, nor block a later POST).
        if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
            return Box::pin(inner.call(req));
        }
        let config = self.config.clone();
        Box::pin(async move {
            Ok(guard(config, inner, req)
                .await
                .unwrap_or_else(IntoResponse::into_response))
        })
    }
}

/// The client's key from the `Idempotency-Key` header.
pub fn client_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let mut values = headers.get_all(HEADER).iter();
    let Some(value) = values.next() else {
        return Err(ApiError::bad_request(
            "this route needs an Idempotency-Key header: a unique value per operation, reused on every retry of it",
        ));
    };
    if values.next().is_some() {
        return Err(ApiError::bad_request(
            "send one Idempotency-Key header, not several",
        ));
    }
    let raw = value
        .to_str()
        .map_err(|_| ApiError::bad_request("the Idempotency-Key must be visible ASCII"))?
        .trim();
    let key = if raw.starts_with('"') {
        let item = sfv::Parser::new(raw).parse::<sfv::Item>().map_err(|e| {
            ApiError::bad_request(format!(
                "the Idempotency-Key is not an RFC 8941 string ({e}); send \"your-key\" or the bare key"
            ))
        })?;
        match item.bare_item {
            sfv::BareItem::String(s) => s.as_str().to_owned(),
            _ => {
                return Err(ApiError::bad_request(
                    "the Idempotency-Key must be a string",
                ))
            }
        }
    } else {
        raw.to_owned()
    };
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(ApiError::bad_request(format!(
            "the Idempotency-Key must be 1 to {MAX_KEY_LEN} characters"
        )));
    }
    if !key
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
    {
        return Err(ApiError::bad_request(
            "the Idempotency-Key may hold visible ASCII characters (0x21-0x7E) other than `\"` and `\\`; no spaces",
        ));
    }
    Ok(key)
}

/// SHA-256 over the method, path and query, and the body (canonical JSON
/// when it parses as JSON).
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(method.as_bytes());
    h.update(b"\n");
    h.update(path_and_query.as_bytes());
    h.update(b"\n");
    // The canonical walk recurses once per level: a body nested deeper
    // than idem reads is hashed as its bytes (the layer refuses it anyway).
    let canon = std::str::from_utf8(body)
        .ok()
        .filter(|_| idem_core::json::check_depth(body, idem_core::json::MAX_DEPTH).is_ok())
        .and_then(|text| {
            let raw = serde_json::from_str::<&RawValue>(text).ok()?;
            let mut out = Vec::with_capacity(body.len());
            canonical(raw, &mut out).then_some(out)
        });
    match canon {
        Some(out) => h.update(&out),
        None => h.update(body),
    }
    hex::encode(h.finalize())
}

/// Writes a JSON value compactly with object members sorted by key (the
/// last of duplicate names wins, as in most parsers) and every number in
/// [`canonical_number`]'s form: nothing goes through a binary float, so
/// two bodies that differ in any digit never share a fingerprint. Returns
/// `false` when the text is not JSON after all.
fn canonical(raw: &RawValue, out: &mut Vec<u8>) -> bool {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
                return false;
            };
            out.push(b'{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(serde_json::Value::String(k).to_string().as_bytes());
                out.push(b':');
                if !canonical(v, out) {
                    return false;
                }
            }
            out.push(b'}');
        }
        Some(b'[') => {
            let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                return false;
            };
            out.push(b'[');
            for (i, v) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !canonical(v, out) {
                    return false;
                }
            }
            out.push(b']');
        }
        Some(b'"') => {
            let Ok(s) = serde_json::from_str::<String>(text) else {
                return false;
            };
            out.extend_from_slice(serde_json::Value::String(s).to_string().as_bytes());
        }
        Some(b'-' | b'0'..=b'9') => match canonical_number(text) {
            Some(n) => out.extend_from_slice(n.as_bytes()),
            None => return false,
        },
        // true, false, null: their text is their only spelling.
        _ => out.extend_from_slice(text.as_bytes()),
    }
    true
}

/// A JSON number's exact value, one spelling per value: `1`, `1.0`,
/// `10e-1` and `0.1e1` are all `1`; `-0` is `0`. Plain decimal notation
/// while the exponent is small (so the usual bodies keep the text they
/// had), `DIGITSeEXP` beyond that (so `1e100000` stays eight bytes).
fn canonical_number(text: &str) -> Option<String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // value = digits × 10^exp, with no leading or trailing zeros in digits.
    let all: String = format!("{int}{frac}");
    let mut exp = exp.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let digits = all.trim_start_matches('0');
    let trimmed = digits.trim_end_matches('0');
    exp = exp.checked_add(i64::try_from(digits.len() - trimmed.len()).ok()?)?;
    if trimmed.is_empty() {
        return Some("0".into());
    }
    let sign = if negative { "-" } else { "" };
    let len = i64::try_from(trimmed.len()).ok()?;
    const PLAIN: i64 = 40;
    Some(if (0..=PLAIN).contains(&exp) {
        format!("{sign}{trimmed}{}", "0".repeat(usize::try_from(exp).ok()?))
    } else if exp < 0 && -exp < len {
        let point = usize::try_from(len + exp).ok()?;
        format!("{sign}{}.{}", &trimmed[..point], &trimmed[point..])
    } else if exp < 0 && -exp - len <= PLAIN {
        let zeros = usize::try_from(-exp - len).ok()?;
        format!("{sign}0.{}{trimmed}", "0".repeat(zeros))
    } else {
        format!("{sign}{trimmed}e{exp}")
    })
}

/// Whether a handler's response is stored for replay (else the key is released).
pub fn stored(status: StatusCode) -> bool {
    !status.is_server_error() && !matches!(status.as_u16(), 408 | 409 | 425 | 429)
}

fn encode_headers(h: &HeaderMap) -> String {
    let pairs: Vec<(&str, &str)> = h
        .iter()
        .filter(|(n, _)| !HOP_BY_HOP.contains(&n.as_str()))
        .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
        .collect();
    serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into())
}

fn replay(stored: StoredResponse) -> Result<Response, ApiError> {
    let corrupt = |what: &str| {
        tracing::error!(what, "a stored response cannot be replayed");
        ApiError::internal()
    };
    let status = StatusCode::from_u16(stored.status).map_err(|_| corrupt("status"))?;
    let pairs: Vec<(String, String)> =
        serde_json::from_str(&stored.headers).map_err(|_| corrupt("headers"))?;
    let mut res = Response::new(Body::from(stored.body));
    *res.status_mut() = status;
    let h = res.headers_mut();
    for (n, v) in pairs {
        let name = HeaderName::try_from(n).map_err(|_| corrupt("header name"))?;
        let value = HeaderValue::try_from(v).map_err(|_| corrupt("header value"))?;
        h.append(name, value);
    }
    h.insert(REPLAYED, HeaderValue::from_static("true"));
    Ok(res)
}

/// Runs one guarded request.
async fn guard<S>(config: Arc<Config>, inner: S, req: Request) -> Result<Response, ApiError>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let Some(Tenant(tenant)) = req.extensions().get::<Tenant>().cloned() else {
        return Err(ApiError::unauthorized(false));
    };
    let key = client_key(req.headers())?;
    let (parts, body) = req.into_parts();
    let body = read_body(body).await?;
    // A JSON body too deep for the handler's parser is refused here, with
    // the limit named, before anything is stored (other bodies are hashed
    // as bytes past the limit: see `fingerprint`).
    // So is one naming a member twice: the fingerprint would read one of
    // them and the handler refuse both, and a clean retry would then be
    // answered with that refusal.
    if super::extract::json_content_type(&parts.headers) {
        ApiError::check_json(&body)?;
    }
    let method = parts.method.as_str().to_owned();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned());
    let fingerprint = fingerprint(&method, &path, &body);
    let run = Run {
        config,
        tenant,
        key,
        fingerprint,
        method,
        path,
    };
    // From here on the request runs in a task of its own: taking the key,
    // running the handler and storing (or releasing) its outcome. A client
    // that goes away drops this future, never that task, so the key is
    // never left taken by a request that will not finish (the statement
    // that takes it may commit after the client is gone, under load).
    let req = Request::from_parts(parts, Body::from(body));
    match tokio::spawn(run.begin_and_execute(inner, req)).await {
        Ok(res) => res,
        Err(e) => {
            tracing::error!(error = %e, "a guarded handler panicked; its key lock expires on its own");
            Err(ApiError::internal())
        }
    }
}

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ApiError::body(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is over {BODY_LIMIT} bytes"),
            )
        } else {
            ApiError::body(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            )
        }
    })
}

struct Run {
    config: Arc<Config>,
    tenant: TenantId,
    key: String,
    fingerprint: String,
    method: String,
    path: String,
}

impl Run {
    fn key(&self) -> HttpRequestKey<'_> {
        HttpRequestKey {
            client_key: &self.key,
            fingerprint: &self.fingerprint,
            method: &self.method,
            path: &self.path,
        }
    }

    async fn begin_and_execute<S>(self, inner: S, req: Request) -> Result<Response, ApiError>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let config = &self.config;
        let verdict = config
            .store
            .session()
            .await?
            .http_begin(&self.tenant, &self.key(), config.lock)
            .await?;
        match verdict {
            HttpBegin::Proceed => self.execute(inner, req).await,
            HttpBegin::Replay(stored) => {
                config.metrics.replays.inc();
                replay(stored)
            }
            HttpBegin::InProgress => {
                config.metrics.in_progress.inc();
                Err(ApiError::conflict(
                    Problem::RequestInProgress,
                    "retry with the same key after Retry-After seconds to get its response",
                )
                .retry_after(1))
            }
            HttpBegin::Mismatch => {
                config.metrics.mismatches.inc();
                Err(ApiError::unprocessable_as(
                    Problem::KeyReused,
                    "an Idempotency-Key names one operation: send a new key for a different method, path or body",
                ))
            }
        }
    }

    async fn execute<S>(self, mut inner: S, mut req: Request) -> Result<Response, ApiError>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let guard = IdempotencyGuard {
            store: self.config.store.clone(),
            tx: Arc::new(Mutex::new(None)),
        };
        req.extensions_mut().insert(guard.clone());
        let res = match inner.call(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let (parts, body) = res.into_parts();
        let collected = axum::body::to_bytes(body, RESPONSE_LIMIT).await;
        let tx = guard.tx.lock().await.take();
        let body = match collected {
            Ok(b) if stored(parts.status) => b,
            Ok(b) => {
                // Not for replay: undo the handler's writes, free the key.
                self.release(tx).await;
                return Ok(Response::from_parts(parts, Body::from(b)));
            }
            Err(e) => {
                tracing::error!(error = %crate::error::chain(&e), "a guarded handler's body failed; releasing its key");
                self.release(tx).await;
                return Err(ApiError::internal());
            }
        };
        let stored = StoredResponse {
            status: parts.status.as_u16(),
            headers: encode_headers(&parts.headers),
            body: body.to_vec(),
        };
        match self.complete(tx, &stored).await {
            Ok(()) => {}
            Err(idem_store::Error::HttpKeyNotHeld) => {
                // The lock ran out and a retry of this request holds the key
                // now: leave it to that retry.
                tracing::error!("a guarded handler outlived its key lock; its writes rolled back");
                return Err(ApiError::unavailable());
            }
            Err(e) => {
                tracing::error!(error = %crate::error::chain(&e), "storing a guarded response failed; its writes rolled back");
                self.release(None).await;
                return Err(ApiError::unavailable());
            }
        }
        Ok(Response::from_parts(parts, Body::from(body)))
    }

    async fn complete(
        &self,
        tx: Option<Session>,
        stored: &StoredResponse,
    ) -> Result<(), idem_store::Error> {
        match tx {
            Some(mut tx) => {
                tx.http_complete(&self.tenant, &self.key(), stored).await?;
                tx.commit().await
            }
            None => {
                self.config
                    .store
                    .session()
                    .await?
                    .http_complete(&self.tenant, &self.key(), stored)
                    .await
            }
        }
    }

    async fn release(&self, tx: Option<Session>) {
        if let Some(tx) = tx {
            if let Err(e) = tx.rollback().await {
                tracing::warn!(error = %crate::error::chain(&e), "rolling back a guarded handler's writes failed");
            }
        }
        let released = match self.config.store.session().await {
            Ok(mut s) => s.http_release(&self.tenant, &self.key()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = released {
            tracing::warn!(error = %crate::error::chain(&e), "releasing an Idempotency-Key failed; its lock expires on its own");
        }
    }
}

/// A guarded handler's handle on the transaction the layer completes the
/// key in. Extract it in a handler on a route wearing [`IdempotencyLayer`].
#[derive(Clone)]
pub struct IdempotencyGuard {
    store: Store,
    tx: Arc<Mutex<Option<Session>>>,
}

impl std::fmt::Debug for IdempotencyGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdempotencyGuard")
    }
}

impl IdempotencyGuard {
    /// The request's transaction, opened on first use. Writes made through
    /// it commit with the stored response, or roll back when the response
    /// is not stored (a 5xx) or storing it fails.
    pub async fn transaction(&self) -> Result<GuardedTx, idem_store::Error> {
        let mut g = self.tx.clone().lock_owned().await;
        if g.is_none() {
            *g = Some(self.store.transaction().await?);
        }
        Ok(GuardedTx(g))
    }
}

/// The transaction of [`IdempotencyGuard::transaction`]; dereferences to
/// the store's [`Session`]. Drop it before the handler returns.
pub struct GuardedTx(OwnedMutexGuard<Option<Session>>);

impl Deref for GuardedTx {
    type Target = Session;
    fn deref(&self) -> &Session {
        // `transaction` put it there before handing this out.
        self.0
            .as_ref()
            .expect("opened by IdempotencyGuard::transaction")
    }
}

impl DerefMut for GuardedTx {
    fn deref_mut(&mut self) -> &mut Session {
        self.0
            .as_mut()
            .expect("opened by IdempotencyGuard::transaction")
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyGuard {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<IdempotencyGuard>()
            .cloned()
            .ok_or_else(|| {
                tracing::error!(
                    "a handler takes an IdempotencyGuard on a route without IdempotencyLayer"
                );
                ApiError::internal()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(v: &str) -> Result<String, StatusCode> {
        let mut h = HeaderMap::new();
        h.insert(
            HEADER,
            HeaderValue::from_str(v).map_err(|_| StatusCode::IM_A_TEAPOT)?,
        );
        client_key(&h).map_err(|e| e.status())
    }

    #[test]
    fn keys_are_rfc8941_strings_or_bare_values() {
        assert_eq!(key_of("\"abc-1\"").unwrap(), "abc-1");
        assert_eq!(
            key_of("8e03978e-40d5-43e8-bc93-6894a57f9324").unwrap(),
            "8e03978e-40d5-43e8-bc93-6894a57f9324"
        );
        assert_eq!(key_of("  tok:1/2  ").unwrap(), "tok:1/2");
        assert_eq!(key_of(&"k".repeat(255)).unwrap().len(), 255);
        for bad in ["\"unterminated", "\"\"", "\"a b\"", "a b", "\"a\\\\b\"", ""] {
            assert_eq!(key_of(bad), Err(StatusCode::BAD_REQUEST), "{bad:?}");
        }
        assert_eq!(key_of(&"k".repeat(256)), Err(StatusCode::BAD_REQUEST));
        assert_eq!(
            client_key(&HeaderMap::new()).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn fingerprint_ignores_json_spacing_and_member_order_only() {
        let a = fingerprint("POST", "/x", br#"{"a":1,"b":[1,2]}"#);
        assert_eq!(a, fingerprint("POST", "/x", b"{ \"b\": [1, 2], \"a\": 1 }"));
        assert_ne!(a, fingerprint("POST", "/x", br#"{"a":2,"b":[1,2]}"#));
        assert_ne!(a, fingerprint("POST", "/y", br#"{"a":1,"b":[1,2]}"#));
        assert_ne!(a, fingerprint("PUT", "/x", br#"{"a":1,"b":[1,2]}"#));
        assert_ne!(a, fingerprint("POST", "/x", br#"{"a":1,"b":[2,1]}"#));
        assert_ne!(
            fingerprint("POST", "/x", b"raw"),
            fingerprint("POST", "/x", b"raw ")
        );
    }

    #[test]
    fn fingerprint_numbers_compare_by_exact_value() {
        let f = |body: &str| fingerprint("POST", "/x", body.as_bytes());
        for same in [
            [r#"{"n":1}"#, r#"{"n":1.0}"#],
            [r#"{"n":1}"#, r#"{"n":10e-1}"#],
            [r#"{"n":1}"#, r#"{"n":0.1E1}"#],
            [r#"{"n":0}"#, r#"{"n":-0.0}"#],
            [r#"{"n":150}"#, r#"{"n":1.5e2}"#],
            [r#"{"n":0.25}"#, r#"{"n":25e-2}"#],
        ] {
            assert_eq!(f(same[0]), f(same[1]), "{same:?}");
        }
        for differ in [
            [r#"{"n":9007199254740993}"#, r#"{"n":9007199254740992}"#],
            [r#"{"n":9007199254740993.0}"#, r#"{"n":9007199254740992.0}"#],
            [r#"{"n":0.1}"#, r#"{"n":0.10000000000000001}"#],
            [r#"{"n":1e400}"#, r#"{"n":1e401}"#],
            [r#"{"n":-1}"#, r#"{"n":1}"#],
            [r#"{"n":1}"#, r#"{"n":"1"}"#],
        ] {
            assert_ne!(f(differ[0]), f(differ[1]), "{differ:?}");
        }
    }

    #[test]
    fn canonical_numbers_keep_the_usual_text() {
        for (text, want) in [
            ("100", "100"),
            ("-42", "-42"),
            ("1.50", "1.5"),
            ("0.001", "0.001"),
            ("12.0e3", "12000"),
            ("1e100000", "1e100000"),
            ("123e-60", "123e-60"),
        ] {
            assert_eq!(canonical_number(text).as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn five_hundreds_and_try_again_statuses_release_the_key() {
        for s in [200, 201, 204, 301, 400, 402, 404, 422] {
            assert!(stored(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [408, 409, 425, 429, 500, 502, 503, 504] {
            assert!(!stored(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }
}
