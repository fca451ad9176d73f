//! HTTP `Idempotency-Key` records: the first request runs, a repeat replays
//! its stored response.

use super::common::{first_opt, queries, R};
use crate::model::{HttpKeyState, Millis};

/// An HTTP key record.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct HttpRow {
    pub fingerprint: String,
    pub state: HttpKeyState,
    #[allow(dead_code)] // read for debugging output only
    pub locked_until_ms: Option<i64>,
    pub status: Option<i32>,
    pub headers: Option<String>,
    pub body: Option<Vec<u8>>,
    #[allow(dead_code)]
    pub expires_at_ms: i64,
}

queries! {
    statements in http_keys;
    /// The HTTP key queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait HttpKeyQueries {
        fn http_begin(c, tenant: &str, k: &crate::model::HttpRequestKey<'_>, locked_until: Millis, now: Millis, default_ttl: Millis) -> R<bool> {
            sqlx::query::<Db>(q::HTTP_BEGIN)
                .bind(tenant)
                .bind(k.client_key)
                .bind(k.fingerprint)
                .bind(k.method)
                .bind(k.path)
                .bind(locked_until)
                .bind(now)
                .bind(default_ttl)
                .fetch_all(&mut *c)
                .await
                .map(first_opt)
                .map(|r| r.is_some())
        }

        fn select_http_key(c, tenant: &str, client_key: &str) -> R<Option<HttpRow>> {
            sqlx::query_as::<Db, HttpRow>(q::SELECT_HTTP_KEY)
                .bind(tenant)
                .bind(client_key)
                .fetch_optional(&mut *c)
                .await
        }

        fn http_complete(c, tenant: &str, client_key: &str, fingerprint: &str, r: &crate::model::StoredResponse) -> R<u64> {
            sqlx::query::<Db>(q::HTTP_COMPLETE)
                .bind(tenant)
                .bind(client_key)
                .bind(fingerprint)
                .bind(i32::from(r.status))
                .bind(&r.headers)
                .bind(&r.body)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }

        fn http_release(c, tenant: &str, client_key: &str, fingerprint: &str) -> R<u64> {
            sqlx::query::<Db>(q::HTTP_RELEASE)
                .bind(tenant)
                .bind(client_key)
                .bind(fingerprint)
                .execute(&mut *c)
                .await
                .map(|r| r.rows_affected())
        }
    }
}
