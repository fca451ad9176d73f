//! The conformance fixture (`idem serve --conformance-fixture`): a few plain
//! routes behind [`IdempotencyLayer`], for one fixed tenant and without
//! authentication, so any external Idempotency-Key test suite can grade the
//! layer. Off by default on either database and never enabled implicitly:
//! it answers without a token.
//!
//! | route | what it does |
//! |---|---|
//! | `POST /echo` | 201, the body's bytes with its Content-Type (default `application/octet-stream`); counter +1; writes one row (`fixture_echoes`) in the layer's transaction, so it commits like a real handler |
//! | `POST /status/{code}` | answers `{code}` with body `status:{code}` (text/plain); counter +1 |
//! | `POST /slow?ms=N` | waits N ms (at most 60000), then 200 `slept:N`; counter +1 |
//! | `POST /large?bytes=N` | 200, N bytes of `x` (at most 8 MiB); counter +1 |
//! | `GET /counter` | `{"count": n}`; behind the layer, where a key on a GET is ignored |
//! | `POST /reset` | 204, counter back to 0; outside the layer |
//! | `POST /echo/unguarded` | `/echo`'s handler outside the layer: the baseline `bench/fixture-load.sh` measures the layer against |

use super::error::ApiError;
use super::extract::Tenant;
use super::idempotency::{IdempotencyGuard, IdempotencyLayer};
use super::state::ApiState;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{from_fn, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use idem_core::TenantId;
use idem_store::Store;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The one tenant the fixture's keys belong to.
pub const FIXTURE_TENANT: &str = "_conformance";
/// The longest `/slow` wait.
const MAX_SLOW_MS: u64 = 60_000;
/// The largest `/large` body.
const MAX_LARGE_BYTES: usize = 8 * 1024 * 1024;

/// How many handler executions the fixture has seen since the last reset,
/// and the store the echo writes its row to.
#[derive(Clone)]
struct Counter(Arc<AtomicU64>, Store);

impl Counter {
    fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The fixture tenant's id (also for setting its key retention at start-up).
pub fn fixture_tenant() -> TenantId {
    // A constant that satisfies TenantId's rules; a unit test proves it parses.
    TenantId::try_from(FIXTURE_TENANT).unwrap_or_else(|_| unreachable!("constant tenant id"))
}

/// Every request is the fixture tenant's: the layer scopes keys per tenant.
async fn as_fixture_tenant(mut req: Request, next: Next) -> Response {
    req.extensions_mut().insert(Tenant(fixture_tenant()));
    next.run(req).await
}

/// The fixture's routes.
pub fn router(api: &ApiState) -> Router {
    let counter = Counter(Arc::default(), api.store.clone());
    let guarded = Router::new()
        .route("/echo", post(echo))
        .route("/status/{code}", post(status))
        .route("/slow", post(slow))
        .route("/large", post(large))
        .route("/counter", get(count))
        .layer(IdempotencyLayer::new(
            api.store.clone(),
            api.metrics.clone(),
        ))
        .layer(from_fn(as_fixture_tenant));
    Router::new()
        .merge(guarded)
        .route("/reset", post(reset))
        .route("/echo/unguarded", post(echo_unguarded))
        .with_state(counter)
}

/// Behind the layer: the echo's row commits with the stored response.
async fn echo(
    State(c): State<Counter>,
    guard: IdempotencyGuard,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    guard
        .transaction()
        .await?
        .fixture_echo(&fixture_tenant(), body.len())
        .await?;
    Ok(echoed(&c, &headers, body))
}

/// The same handler without the layer: its row commits on its own.
async fn echo_unguarded(
    State(c): State<Counter>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    c.1.session()
        .await?
        .fixture_echo(&fixture_tenant(), body.len())
        .await?;
    Ok(echoed(&c, &headers, body))
}

fn echoed(c: &Counter, headers: &HeaderMap, body: Bytes) -> Response {
    c.bump();
    let ct = headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    (StatusCode::CREATED, [(header::CONTENT_TYPE, ct)], body).into_response()
}

async fn status(State(c): State<Counter>, Path(code): Path<String>) -> Result<Response, ApiError> {
    let code = code
        .parse::<u16>()
        .ok()
        .and_then(|n| StatusCode::from_u16(n).ok())
        .filter(|s| (200..=599).contains(&s.as_u16()))
        .ok_or_else(|| ApiError::bad_request("code must be a status from 200 to 599"))?;
    c.bump();
    Ok((
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("status:{}", code.as_u16()),
    )
        .into_response())
}

/// `?ms=` / `?bytes=`.
#[derive(Debug, Deserialize)]
struct Amount {
    ms: Option<u64>,
    bytes: Option<usize>,
}

async fn slow(State(c): State<Counter>, Query(q): Query<Amount>) -> Result<Response, ApiError> {
    let ms = q.ms.unwrap_or(0);
    if ms > MAX_SLOW_MS {
        return Err(ApiError::bad_request(format!(
            "ms must be at most {MAX_SLOW_MS}"
        )));
    }
    c.bump();
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok((StatusCode::OK, format!("slept:{ms}")).into_response())
}

async fn large(State(c): State<Counter>, Query(q): Query<Amount>) -> Result<Response, ApiError> {
    let n = q.bytes.unwrap_or(0);
    if n > MAX_LARGE_BYTES {
        return Err(ApiError::bad_request(format!(
            "bytes must be at most {MAX_LARGE_BYTES}"
        )));
    }
    c.bump();
    Ok((StatusCode::OK, "x".repeat(n)).into_response())
}

async fn count(State(c): State<Counter>) -> Json<serde_json::Value> {
    Json(serde_json::json!({ "count": c.0.load(Ordering::SeqCst) }))
}

async fn reset(State(c): State<Counter>) -> StatusCode {
    c.0.store(0, Ordering::SeqCst);
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fixture_tenant_is_a_valid_tenant_id() {
        assert_eq!(super::fixture_tenant().as_str(), super::FIXTURE_TENANT);
    }
}
