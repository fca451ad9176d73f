//! HTTP Idempotency-Key records: begin, complete, release.

use super::*;

impl Session {
    /// Starts a request under a client key. `lock` bounds how long a request
    /// that died mid-way keeps its key from a retry with the same request.
    #[tracing::instrument(level = "debug", skip_all, fields(tenant = %tenant))]
    pub async fn http_begin(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
        lock: Duration,
    ) -> Result<HttpBegin, Error> {
        // No transaction of its own: a key that proceeds counts nothing, and
        // a replay or a refusal counts what a read found (journaled alone).
        let result = self.http_verdict(tenant, req, lock).await;
        self.leave(result).await
    }

    async fn http_verdict(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
        lock: Duration,
    ) -> Result<HttpBegin, Error> {
        let now = self.now();
        let locked_until = now.saturating_add(duration_ms(lock));
        let default_ttl = Retention::default().http_ms;
        let t = tenant.as_str();
        if on!(self.http_begin(t, req, locked_until, now, default_ttl))? {
            return Ok(HttpBegin::Proceed);
        }
        let row = on!(self.select_http_key(t, req.client_key))?.ok_or(Error::NotFound)?;
        let verdict = if row.fingerprint != req.fingerprint {
            HttpBegin::Mismatch
        } else if row.state == HttpKeyState::Completed {
            HttpBegin::Replay(StoredResponse {
                status: row
                    .status
                    .and_then(|s| u16::try_from(s).ok())
                    .ok_or_else(|| Error::Corrupt("stored HTTP status".into()))?,
                headers: row.headers.unwrap_or_default(),
                body: row.body.unwrap_or_default(),
            })
        } else {
            HttpBegin::InProgress
        };
        self.note(tenant, "http", |c| match &verdict {
            HttpBegin::Replay(_) => c.counts.http_replays += 1,
            HttpBegin::InProgress => c.counts.http_409 += 1,
            HttpBegin::Mismatch => c.counts.http_422 += 1,
            HttpBegin::Proceed => {}
        });
        Ok(verdict)
    }

    /// Stores the response of a request started by [`http_begin`](Self::http_begin).
    pub async fn http_complete(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
        response: &StoredResponse,
    ) -> Result<(), Error> {
        let n =
            on!(self.http_complete(tenant.as_str(), req.client_key, req.fingerprint, response))?;
        if n == 0 {
            return Err(Error::HttpKeyNotHeld);
        }
        Ok(())
    }

    /// Frees the key of a request that failed in a way that must not be
    /// replayed (a 5xx), so the client's retry runs again.
    pub async fn http_release(
        &mut self,
        tenant: &TenantId,
        req: &HttpRequestKey<'_>,
    ) -> Result<(), Error> {
        on!(self.http_release(tenant.as_str(), req.client_key, req.fingerprint))?;
        Ok(())
    }
}
