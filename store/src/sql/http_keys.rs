//! The HTTP `Idempotency-Key` records' statements.

statements! {
    HERE;

    /// Starts an HTTP request under a client key: inserts it, or reuses a
    /// record that expired, or one whose request died holding the lock with
    /// the same fingerprint. No row comes back otherwise.
    pub const HTTP_BEGIN: &str = "\
insert into http_keys as h
    (tenant_id, client_key, fingerprint, method, path, state, locked_until_ms,
     created_ms, expires_at_ms)
values ($1, $2, $3, $4, $5, 'in_progress', $6, $7,
    -- The record lives for the tenant's HTTP retention ($8 is the default),
    -- read in the same statement rather than in a second round trip.
    $7 + coalesce(
        (select http_retention_ms from tenant_settings where tenant_id = $1), $8))
on conflict (tenant_id, client_key) do update set
    fingerprint = excluded.fingerprint, method = excluded.method, path = excluded.path,
    state = 'in_progress', locked_until_ms = excluded.locked_until_ms,
    status = null, headers = null, body = null,
    created_ms = excluded.created_ms, expires_at_ms = excluded.expires_at_ms
where h.expires_at_ms <= excluded.created_ms
   or (h.state = 'in_progress' and h.fingerprint = excluded.fingerprint
       and h.locked_until_ms <= excluded.created_ms)
returning state";

    /// An HTTP key record as stored.
    pub const SELECT_HTTP_KEY: &str = "\
select fingerprint, state, locked_until_ms, status, headers, body, expires_at_ms
from http_keys
where tenant_id = $1 and client_key = $2";

    /// Stores the response to replay.
    pub const HTTP_COMPLETE: &str = "\
update http_keys set state = 'completed', status = $4, headers = $5, body = $6,
    locked_until_ms = null
where tenant_id = $1 and client_key = $2 and fingerprint = $3 and state = 'in_progress'";

    /// Frees a key whose request failed in a way that must not be replayed
    /// (a 5xx), so the client's retry runs again.
    pub const HTTP_RELEASE: &str = "\
delete from http_keys
where tenant_id = $1 and client_key = $2 and fingerprint = $3 and state = 'in_progress'";
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
}
