//! The event claims' statements.

statements! {
    HERE;

    /// Consumes an event once: the primary key turns a redelivery into a no-op.
    pub const CONSUME_EVENT: &str = "\
insert into consumed_events (tenant_id, source, event_id, seen_ms)
values ($1, $2, $3, $4)
on conflict (tenant_id, source, event_id) do nothing";

    /// Claims an event for a lease: inserts it, or takes it over when the
    /// previous holder's lease ran out (`prev_state` says `expired`) or it
    /// failed retryably (`released`). Completed, failed and still-leased
    /// events match no row; the caller then reads which it is.
    pub const CLAIM_EVENT: &str = "\
insert into consumed_events as e
    (tenant_id, source, event_id, seen_ms, state, token, attempts, lease_until_ms, updated_ms)
values ($1, $2, $3, $4, 'leased', 1, 1, $5, $4)
on conflict (tenant_id, source, event_id) do update set
    prev_state = case when e.state = 'leased' then 'expired' else e.state end,
    state = 'leased',
    token = e.token + 1,
    attempts = e.attempts + 1,
    lease_until_ms = excluded.lease_until_ms,
    updated_ms = excluded.updated_ms
where (e.state = 'leased' and e.lease_until_ms <= excluded.seen_ms) or e.state = 'released'
returning token, attempts, lease_until_ms, prev_state";

    /// An event's claim as stored.
    pub const SELECT_EVENT: &str = "\
select state, token, lease_until_ms from consumed_events
where tenant_id = $1 and source = $2 and event_id = $3";

    /// Settles a leased event (`completed`, `failed` or `released`) under
    /// its current token; a stale holder matches no row.
    pub const SETTLE_EVENT: &str = "\
update consumed_events set state = $5, lease_until_ms = null, updated_ms = $6
where tenant_id = $1 and source = $2 and event_id = $3 and token = $4 and state = 'leased'";
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
