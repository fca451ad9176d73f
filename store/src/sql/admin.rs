//! Tenants, tokens, monitor sessions, retention and its purges, chore leases, and the statements that span tenants.

statements! {
    HERE;

    /// A tenant's retention settings.
    pub const SELECT_RETENTION: &str = "\
select intent_retention_ms, action_retention_ms, http_retention_ms
from tenant_settings
where tenant_id = $1";

    /// Sets a tenant's retention.
    pub const UPSERT_RETENTION: &str = "\
insert into tenant_settings (tenant_id, intent_retention_ms, action_retention_ms, http_retention_ms)
values ($1, $2, $3, $4)
on conflict (tenant_id) do update set
    intent_retention_ms = excluded.intent_retention_ms,
    action_retention_ms = excluded.action_retention_ms,
    http_retention_ms = excluded.http_retention_ms";

    /// Purges intents whose last delivery is older than the cutoff, one
    /// bounded batch per statement so no lock is held for long. An intent
    /// whose action is not settled stays, whatever its age: a redelivery
    /// must find the frozen payload of an action whose outcome is unknown.
    pub const PURGE_INTENTS: &str = concat!(
        "\
delete from intents
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES):
-- an intent delivered again while the purge ran stays.
where tenant_id = $1 and last_seen_ms < $2 and (reference, action) in (
    select reference, action from intents
    where tenant_id = $1 and last_seen_ms < $2
        and not exists (
            select 1 from actions
            where tenant_id = $1 and actions.idem_key = intents.idem_key and ",
        unsettled!(),
        ")
    limit $3)"
    );

    /// Purges the history of corrections older than the cutoff.
    pub const PURGE_INTENT_HISTORY: &str = "\
delete from intent_history
where tenant_id = $1 and (reference, action, revision) in (
    select reference, action, revision from intent_history
    where tenant_id = $1 and replaced_ms < $2
    limit $3)";

    /// Purges the replaced attempts of actions retention removed: older than
    /// the cutoff (a purged action's attempts all are) and without their
    /// action.
    pub const PURGE_ACTION_ATTEMPTS: &str = "\
delete from action_attempts
where tenant_id = $1 and (idem_key, attempt) in (
    select idem_key, attempt from action_attempts t
    where tenant_id = $1 and replaced_ms < $2
        -- Unqualified columns name the innermost table (actions here).
        and not exists (
            select 1 from actions where tenant_id = $1 and idem_key = t.idem_key)
    limit $3)";

    /// Purges settled actions (completed, failed for good, reconciled) not
    /// touched since the cutoff. Claimed, uncertain and retryable-failed
    /// actions stay until they are settled: deleting one would let the next
    /// `begin` claim afresh as if nothing had been attempted.
    pub const PURGE_ACTIONS: &str = concat!(
        "\
delete from actions
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES).
where tenant_id = $1 and updated_ms < $2 and idem_key in (
    select idem_key from actions
    where tenant_id = $1 and updated_ms < $2 and not ",
        // Not unsettled: settled (completed, failed for good, reconciled).
        unsettled!(),
        "
    limit $3)"
    );

    /// How many unsettled actions started before the retention cutoff: a
    /// purge by age alone would have removed them. Reported so an operator
    /// sees what waits on reconciling.
    pub const COUNT_UNRESOLVED_PAST: &str = concat!(
        "\
select count(*) as n from actions
where tenant_id = $1 and started_ms < $2 and ",
        unsettled!()
    );

    /// Purges expired HTTP key records.
    pub const PURGE_HTTP_KEYS: &str = "\
delete from http_keys
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES):
-- a record a new request took again while the purge ran is that request's
-- lock, and stays.
where tenant_id = $1 and expires_at_ms <= $2 and client_key in (
    select client_key from http_keys
    where tenant_id = $1 and expires_at_ms <= $2
    limit $3)";

    /// Purges consumed-event marks older than the cutoff.
    pub const PURGE_CONSUMED_EVENTS: &str = "\
delete from consumed_events
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES).
where tenant_id = $1 and seen_ms < $2 and (source, event_id) in (
    select source, event_id from consumed_events
    where tenant_id = $1 and seen_ms < $2
    limit $3)";

    /// Purges outbox messages sent before the cutoff; pending ones are never
    /// purged.
    pub const PURGE_OUTBOX: &str = "\
delete from outbox
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES).
where tenant_id = $1 and sent_ms < $2 and id in (
    select id from outbox
    where tenant_id = $1 and sent_ms is not null and sent_ms < $2
    limit $3)";

    /// Purges statistics buckets of one granularity older than the cutoff.
    pub const PURGE_STATS_ROLLUP: &str = "\
delete from stats_rollup
where tenant_id = $1 and (granularity, bucket_start_ms, action) in (
    select granularity, bucket_start_ms, action from stats_rollup
    where tenant_id = $1 and granularity = $4 and bucket_start_ms < $2
    limit $3)";

    /// The same for the delay histograms.
    pub const PURGE_STATS_DELAY: &str = "\
delete from stats_delay
where tenant_id = $1 and (granularity, bucket_start_ms, action, le_ms) in (
    select granularity, bucket_start_ms, action, le_ms from stats_delay
    where tenant_id = $1 and granularity = $4 and bucket_start_ms < $2
    limit $3)";

    /// Purges settled deliveries (delivered or dead-lettered) last changed
    /// before the cutoff; pending ones are never purged.
    pub const PURGE_WEBHOOK_DELIVERIES: &str = "\
delete from webhook_deliveries
-- The outer where repeats the row's own condition (see SWEEP_EXPIRED_LEASES):
-- a delivery sent again while the purge ran stays.
where tenant_id = $1 and state <> 'pending' and updated_ms < $2 and (outbox_id, endpoint_id) in (
    select outbox_id, endpoint_id from webhook_deliveries
    where tenant_id = $1 and state <> 'pending' and updated_ms < $2
    limit $3)";

    /// Registers a tenant; the primary key refuses a second one of the name.
    pub const INSERT_TENANT: &str = "\
insert into tenants (tenant_id, name, created_ms)
values ($1, $2, $3)";

    /// Stores an API token's hash.
    pub const INSERT_TOKEN: &str = "\
insert into api_tokens (tenant_id, token_hash, created_ms)
values ($1, $2, $3)";

    /// Whether a token hash is live for the tenant the token names at $3
    /// (a rotated token's `revoked_ms` may lie ahead, its grace), and when
    /// the tenant was disabled, if it was.
    pub const FIND_TOKEN: &str = "\
select (select disabled_ms from tenants where tenant_id = $1) as disabled_ms
from api_tokens
where tenant_id = $1 and token_hash = $2 and (revoked_ms is null or revoked_ms > $3)";

    /// Ends every token of a tenant but one at $3 (now, or after a grace);
    /// one that already ends sooner keeps its end.
    pub const REVOKE_OTHER_TOKENS: &str = "\
update api_tokens set revoked_ms = $3
where tenant_id = $1 and token_hash <> $2 and (revoked_ms is null or revoked_ms > $3)";

    /// Disables a tenant at $2, or enables it again with null.
    pub const SET_TENANT_DISABLED: &str = "\
update tenants set disabled_ms = $2
where tenant_id = $1";

    /// One tenant's registration, for commands that name a tenant.
    pub const TENANT_INFO: &str = "\
select name, created_ms, disabled_ms from tenants
where tenant_id = $1";

    /// Opens a monitor login session (only the id's hash is kept).
    pub const INSERT_SESSION: &str = "\
insert into live_sessions (tenant_id, session_hash, token_hash, created_ms, expires_ms)
values ($1, $2, $3, $4, $5)";

    /// A session that is open at $3: the hash of the token it came from.
    pub const FIND_SESSION: &str = "\
select token_hash from live_sessions
where tenant_id = $1 and session_hash = $2 and revoked_ms is null and expires_ms > $3";

    /// Ends a session (logout).
    pub const END_SESSION: &str = "\
update live_sessions set revoked_ms = $3
where tenant_id = $1 and session_hash = $2 and revoked_ms is null";

    /// Removes a tenant's sessions that ended before $2 (the purge).
    pub const PURGE_SESSIONS: &str = "\
delete from live_sessions
where tenant_id = $1 and (expires_ms < $2 or revoked_ms < $2)";

    /// Takes or renews a chore's lease ($2) for holder $3 until $5; $4 is
    /// now. The update applies only when the holder already holds it or
    /// its lease ran out, so of several instances trying at once one gets a
    /// row back and the others none. The fence grows when the holder
    /// changes, never on a renewal.
    pub const TAKE_CHORE_LEASE: &str = "\
insert into chore_leases as c (tenant_id, chore, holder, fence, until_ms)
values ($1, $2, $3, 1, $5)
on conflict (tenant_id, chore) do update set
    fence = case when c.holder = excluded.holder then c.fence else c.fence + 1 end,
    holder = excluded.holder,
    until_ms = excluded.until_ms
where c.holder = excluded.holder or c.until_ms <= $4
returning fence";

    /// The readiness probe's own row, one per instance (chore
    /// `readiness:<instance>`), so no instance's probe waits on another's.
    pub const TOUCH_READINESS: &str = "\
insert into chore_leases as c (tenant_id, chore, holder, fence, until_ms)
values ($1, $2, $2, 1, $3)
on conflict (tenant_id, chore) do update set until_ms = excluded.until_ms";

    /// The probe's touch of the intents table: an update that matches no
    /// row (the reserved scope has no intents) but takes the same table
    /// lock every write of an intent takes, so a lock held on the table
    /// (`LOCK TABLE`, a migration) makes the probe wait like the writes.
    pub const PROBE_INTENTS: &str = "\
update intents set last_seen_ms = last_seen_ms
where tenant_id = $1 and reference = ''";

    /// As [`PROBE_INTENTS`], for the actions table.
    pub const PROBE_ACTIONS: &str = "\
update actions set updated_ms = updated_ms
where tenant_id = $1 and idem_key = ''";

    /// Removes the readiness rows of instances whose probe has not run
    /// since the cutoff (instances that stopped).
    pub const PURGE_READINESS: &str = "\
delete from chore_leases
where tenant_id = $1 and chore like 'readiness:%' and until_ms < $2";

    /// Records a deployment-wide check value under the reserved tenant; the
    /// first writer wins, later ones read what it wrote.
    pub const INSERT_DEPLOYMENT_CHECK: &str = "\
insert into deployment_checks (tenant_id, name, value, created_ms)
values ($1, $2, $3, $4)
on conflict (tenant_id, name) do nothing";

    /// Reads a deployment-wide check value.
    pub const SELECT_DEPLOYMENT_CHECK: &str = "\
select value from deployment_checks
where tenant_id = $1 and name = $2";
}

statements! {
    ADMIN;

    /// Admin: every tenant, for the live monitor's admin view (a small
    /// reference table; the per-tenant reads that follow are scoped).
    pub const LIST_TENANTS: &str = "\
select tenant_id from tenants
order by tenant_id";

    /// Admin: every tenant with its live tokens at $1, for `idem tenant list`
    /// (never a token: counts and the newest one's creation only).
    pub const TENANT_LIST: &str = "\
select t.tenant_id, t.name, t.created_ms, t.disabled_ms,
    (select count(*) from api_tokens k
     where k.tenant_id = t.tenant_id and (k.revoked_ms is null or k.revoked_ms > $1)) as tokens,
    (select max(k.created_ms) from api_tokens k
     where k.tenant_id = t.tenant_id and (k.revoked_ms is null or k.revoked_ms > $1)) as newest_token_ms
from tenants t
order by t.tenant_id";

    /// Admin: the tenants with monitor sessions (the purge visits them).
    pub const SESSION_TENANTS: &str = tenants_sql!("live_sessions");

    /// Admin: unsettled actions of every tenant by state, with the oldest
    /// attempt's start (the `/metrics` gauges; one scan of the actions table,
    /// made only when Prometheus scrapes). A started action whose lease ran out
    /// by $1 counts as uncertain, as the monitor, the alerts and `/v1/stats`
    /// count it: its outcome is unknown from that moment, sweep or no sweep.
    pub const ADMIN_UNRESOLVED: &str = concat!(
    "\
select case when state = 'failed' then 'failed_retryable'
    when state = 'started' and lease_until_ms <= $1 then 'uncertain'
    else state end as state,
    count(*) as n, min(started_ms) as oldest_ms
from actions
where ",
    unsettled!(),
    "
group by 1"
);
}

/// Admin: the tenants with rows in each purged table (retention uses it to
/// decide which tenants to visit; every purge statement is then scoped).
pub const TENANTS_IN_TABLES: [&str; 8] = [
    tenants_sql!("intents"),
    tenants_sql!("intent_history"),
    tenants_sql!("actions"),
    tenants_sql!("http_keys"),
    tenants_sql!("consumed_events"),
    tenants_sql!("outbox"),
    tenants_sql!("stats_rollup"),
    tenants_sql!("webhook_deliveries"),
];

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
    statements! {
        HERE;

        /// Bounds the readiness probe's transaction on the server's side
        /// too (`$1` in ms, as text): a probe that waits on a table lock
        /// gives up there, rather than holding a pooled connection after
        /// the probe answered.
        pub const PROBE_BOUND: &str = "\
    select set_config('lock_timeout', $1, true), set_config('statement_timeout', $1, true)";
    }
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
    statements! {
        HERE;

        /// SQLite has no server to bound: the write queue's wait and the
        /// caller's time-out bound the probe.
        pub const PROBE_BOUND: &str = "select $1";
    }
}
