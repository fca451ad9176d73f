//! Every SQL statement idem runs, one constant per query. Both backends
//! accept `$n` placeholders (sqlx numbers SQLite's `$n` by its digits), so a
//! statement is written once unless a dialect needs its own text.
//!
//! Each statement filters by exactly one tenant (`tenant_id = $1`), so a
//! distributed Postgres routes it to one shard. The few admin statements that
//! span tenants are listed by [`admin_statements`]; a unit test holds both rules.

/// The condition of an action that is not settled: started (lease running
/// or not), uncertain, or failed but retryable. Written once, because the
/// partial index `actions_unsettled` (migration 0009) is used only by a
/// query whose condition is this very text; a unit test holds them equal.
macro_rules! unsettled {
    () => {
        "not (state = 'completed' or reconciled or (state = 'failed' and retryable is not true))"
    };
}

/// The statistics journal's counters, in the order the journal statements
/// of both backends write and return them and `fold_in` reads them.
macro_rules! journal_counts {
    () => {
        "intents, deliveries, redeliveries, redelivered_intents,
    divergences, corrections, actions_started, actions_completed, actions_failed,
    actions_uncertain, http_replays, http_409, http_422, delay_max_ms, delay_le_ms,
    delay_count"
    };
}

/// The tenants with rows in one table, by a loose index scan: one probe of
/// the tenant-led index per tenant instead of a pass over every row.
macro_rules! tenants_sql {
    ($table:literal) => {
        concat!(
            "with recursive t (tenant_id) as (
    select min(tenant_id) from ",
            $table,
            "
    union all
    select (select min(tenant_id) from ",
            $table,
            " where tenant_id > t.tenant_id)
    from t where t.tenant_id is not null)
select tenant_id from t where tenant_id is not null"
        )
    };
}

/// Declares SQL statements and, beside them, the list of what it declared
/// (`$list`, name and text): [`all`] reads the lists, so a statement cannot
/// be declared and left out of the tenancy checks.
macro_rules! statements {
    ($list:ident; $( $(#[$attr:meta])* pub const $name:ident: &str = $sql:expr; )*) => {
        $( $(#[$attr])* pub const $name: &str = $sql; )*
        /// Every statement declared beside this list, by name.
        pub const $list: &[(&str, &str)] = &[$((stringify!($name), $name)),*];
    };
}

/// Statements shared by both backends.
pub mod shared {
    statements! {
        HERE;
    /// First write wins. The candidate is inserted; when the row exists, the
    /// frozen payload and key are left as they are and only the delivery count,
    /// the divergence count and the last delivery time move. `$7` is how many
    /// identical deliveries this row stands for (1, or more when concurrent
    /// calls were coalesced). RETURNING hands back the frozen row.
    pub const RECORD_INTENT: &str = "\
insert into intents as i
    (tenant_id, reference, action, rules_version, idem_key, payload,
     deliveries, divergences, first_seen_ms, last_seen_ms)
values ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    -- A different normalized payload means a different key under the same
    -- secret and rules; comparing payloads also survives a secret rotation.
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms";

    /// The frozen intent.
    pub const SELECT_INTENT: &str = "\
select rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms
from intents
where tenant_id = $1 and reference = $2 and action = $3";

    /// A correction first files the current version in the history. It only
    /// writes when the payload really changes, and a concurrent correction of
    /// the same revision collides on the history's primary key.
    pub const ARCHIVE_INTENT: &str = "\
insert into intent_history
    (tenant_id, reference, action, revision, rules_version, idem_key, payload,
     replaced_ms, reason)
select tenant_id, reference, action, revision, rules_version, idem_key, payload, $5, $6
from intents
where tenant_id = $1 and reference = $2 and action = $3 and payload <> $4";

    /// Then replaces the frozen payload and key.
    pub const REPLACE_INTENT: &str = "\
update intents set
    rules_version = $4, idem_key = $5, payload = $6,
    revision = revision + 1, revised_ms = $7
where tenant_id = $1 and reference = $2 and action = $3
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms";

    /// The versions corrections replaced, oldest first.
    pub const INTENT_HISTORY: &str = "\
select revision, rules_version, idem_key, payload, replaced_ms, reason
from intent_history
where tenant_id = $1 and reference = $2 and action = $3
order by revision";

    /// Claims an action: inserts it, or takes it over when the previous
    /// claim's lease ran out without an outcome (it becomes uncertain) or the
    /// last attempt failed in a retryable way. Every claim grows the fencing
    /// token. No row comes back when the action is held, completed or failed
    /// for good; the caller then reads it.
    pub const BEGIN_ACTION: &str = "\
insert into actions as a
    (tenant_id, idem_key, action, state, fencing_token, attempts,
     lease_until_ms, started_ms, updated_ms)
values ($1, $2, $3, 'started', 1, 1, $5, $4, $4)
on conflict (tenant_id, idem_key) do update set
    -- 'swept': the sweep marked this attempt uncertain and counted it.
    prev_state = case when a.swept_ms is not null then 'swept' else a.state end,
    swept_ms = null,
    prev_token = a.fencing_token,
    prev_started_ms = a.started_ms,
    prev_lease_until_ms = a.lease_until_ms,
    -- A known failure is safe to retry; an expired lease is not known to
    -- have failed, so the new holder inherits an uncertain action.
    state = case when a.state = 'failed' then 'started' else 'uncertain' end,
    fencing_token = a.fencing_token + 1,
    attempts = a.attempts + 1,
    lease_until_ms = excluded.lease_until_ms,
    started_ms = excluded.started_ms,
    updated_ms = excluded.updated_ms
where (a.state in ('started', 'uncertain') and coalesce(a.lease_until_ms, 0) <= excluded.started_ms)
   or (a.state = 'failed' and a.retryable)
returning state, fencing_token, attempts, lease_until_ms, prev_state, prev_token,
    prev_started_ms, prev_lease_until_ms, error";

    /// An action as stored.
    pub const SELECT_ACTION: &str = "\
select action, state, fencing_token, attempts, lease_until_ms, started_ms, updated_ms,
    response, error, retryable, reconciled, swept_ms
from actions
where tenant_id = $1 and idem_key = $2";

    /// Keeps the attempt a takeover replaced (the claim's transaction writes
    /// it, so an action's history never misses one). A second write of one
    /// attempt keeps the first.
    pub const INSERT_ACTION_ATTEMPT: &str = "\
insert into action_attempts
    (tenant_id, idem_key, attempt, fencing_token, started_ms, lease_until_ms, ended,
     error, replaced_ms)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
on conflict (tenant_id, idem_key, attempt) do nothing";

    /// The attempts takeovers replaced, oldest first.
    pub const ACTION_ATTEMPTS: &str = "\
select attempt, fencing_token, started_ms, lease_until_ms, ended, error, replaced_ms
from action_attempts
where tenant_id = $1 and idem_key = $2
order by attempt";

    /// The intents an action key was derived from (one, unless a
    /// correction gave two intents one key; the caller keeps the newest).
    /// No `order by`: on SQLite it would steer the planner to the
    /// last-seen index and a lookup per row (see `INTENT_FACTS`).
    pub const INTENT_BY_KEY: &str = "\
select reference, action, rules_version, idem_key, payload, revision, deliveries,
    divergences, first_seen_ms, last_seen_ms
from intents
where tenant_id = $1 and idem_key = $2";

    /// Records success. The fencing token must be the current one: a holder
    /// whose lease was taken over matches no row and changes nothing.
    pub const COMPLETE_ACTION: &str = "\
update actions set
    state = 'completed', response = $4, error = null, retryable = null,
    lease_until_ms = null, updated_ms = $5, reconciled = $6
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain')
returning action";

    /// Records a failure, retryable or final, under the same fencing rule.
    pub const FAIL_ACTION: &str = "\
update actions set
    state = 'failed', response = null, error = $4, retryable = $5,
    lease_until_ms = null, updated_ms = $6, reconciled = $7
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain')
returning action";

    /// Marks claims whose lease ran out as uncertain, in bounded batches. The
    /// lease end stays (it is what one asks the provider about); `swept_ms`
    /// tells a later takeover the sweep counted it already. Each swept
    /// claim's action type comes back, so its count lands on it.
    pub const SWEEP_EXPIRED_LEASES: &str = "\
update actions set state = 'uncertain', swept_ms = $2, updated_ms = $2
-- The subquery reads a snapshot; on PostgreSQL a row another transaction
-- completed or claimed after it is re-checked against this outer where
-- alone, so the outer where repeats the conditions: an outcome committed
-- while the sweep ran stays.
where tenant_id = $1 and state = 'started' and lease_until_ms <= $2 and idem_key in (
    select idem_key from actions
    where tenant_id = $1 and state = 'started' and lease_until_ms <= $2
    limit $3)
returning action";

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

    /// Marks one outbox message as sent.
    pub const OUTBOX_MARK_SENT: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and id = $2 and sent_ms is null";

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

    /// Adds one accumulator flush to a rollup bucket. Runs about twice a second
    /// per process and bucket, never on the request path.
    pub const FLUSH_ROLLUP: &str = "\
insert into stats_rollup as s
    (tenant_id, granularity, bucket_start_ms, action, intents, deliveries, redeliveries,
     redelivered_intents, divergences, corrections, actions_started, actions_completed,
     actions_failed, actions_uncertain, http_replays, http_409, http_422, delay_max_ms)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
on conflict (tenant_id, granularity, bucket_start_ms, action) do update set
    intents = s.intents + excluded.intents,
    deliveries = s.deliveries + excluded.deliveries,
    redeliveries = s.redeliveries + excluded.redeliveries,
    redelivered_intents = s.redelivered_intents + excluded.redelivered_intents,
    divergences = s.divergences + excluded.divergences,
    corrections = s.corrections + excluded.corrections,
    actions_started = s.actions_started + excluded.actions_started,
    actions_completed = s.actions_completed + excluded.actions_completed,
    actions_failed = s.actions_failed + excluded.actions_failed,
    actions_uncertain = s.actions_uncertain + excluded.actions_uncertain,
    http_replays = s.http_replays + excluded.http_replays,
    http_409 = s.http_409 + excluded.http_409,
    http_422 = s.http_422 + excluded.http_422,
    delay_max_ms = case when s.delay_max_ms > excluded.delay_max_ms
        then s.delay_max_ms else excluded.delay_max_ms end";

    /// Adds to one bucket of a delay histogram.
    pub const FLUSH_DELAY: &str = "\
insert into stats_delay as d (tenant_id, granularity, bucket_start_ms, action, le_ms, count)
values ($1, $2, $3, $4, $5, $6)
on conflict (tenant_id, granularity, bucket_start_ms, action, le_ms) do update set
    count = d.count + excluded.count";

    /// `idem stats rebuild`: clears the counters the tables can tell again,
    /// from a bucket on. The HTTP counters and the delay histograms stay: a
    /// replayed response or a redelivery's moment leaves no row to recount.
    pub const REBUILD_CLEAR: &str = "\
update stats_rollup set
    intents = 0, deliveries = 0, redeliveries = 0, redelivered_intents = 0, divergences = 0,
    corrections = 0, actions_started = 0, actions_completed = 0, actions_failed = 0,
    actions_uncertain = 0
where tenant_id = $1 and bucket_start_ms >= $2";

    /// `idem stats rebuild`: the intent counters of one granularity ($3 ms
    /// wide, named $4), recounted from the intents table. A delivery is
    /// counted in its intent's first bucket: the table keeps a count per
    /// intent, not each delivery's moment.
    pub const REBUILD_INTENTS: &str = "\
insert into stats_rollup as s
    (tenant_id, granularity, bucket_start_ms, action, intents, deliveries, redeliveries,
     redelivered_intents, divergences)
select $1, $4, b.bucket, b.action, count(*), sum(b.deliveries), sum(b.deliveries - 1),
    sum(case when b.deliveries >= 2 then 1 else 0 end), sum(b.divergences)
from (
    select first_seen_ms - first_seen_ms % $3 as bucket, action, deliveries, divergences
    from intents
    where tenant_id = $1 and first_seen_ms >= $2) as b
group by b.bucket, b.action
on conflict (tenant_id, granularity, bucket_start_ms, action) do update set
    intents = excluded.intents,
    deliveries = excluded.deliveries,
    redeliveries = excluded.redeliveries,
    redelivered_intents = excluded.redelivered_intents,
    divergences = excluded.divergences";

    /// `idem stats rebuild`: corrections, recounted from the history.
    pub const REBUILD_CORRECTIONS: &str = "\
insert into stats_rollup as s (tenant_id, granularity, bucket_start_ms, action, corrections)
select $1, $4, b.bucket, b.action, count(*)
from (
    select replaced_ms - replaced_ms % $3 as bucket, action
    from intent_history
    where tenant_id = $1 and replaced_ms >= $2) as b
group by b.bucket, b.action
on conflict (tenant_id, granularity, bucket_start_ms, action) do update set
    corrections = excluded.corrections";

    /// `idem stats rebuild`: the action counters, recounted from the actions'
    /// present state in the bucket of their first claim (an action retried
    /// after an uncertain attempt and then completed counts as completed).
    pub const REBUILD_ACTIONS: &str = "\
insert into stats_rollup as s
    (tenant_id, granularity, bucket_start_ms, action, actions_started, actions_completed,
     actions_failed, actions_uncertain)
select $1, $4, b.bucket, b.action, sum(b.attempts),
    sum(case when b.state = 'completed' then 1 else 0 end),
    sum(case when b.state = 'failed' then 1 else 0 end),
    sum(case when b.state = 'uncertain' then 1 else 0 end)
from (
    select started_ms - started_ms % $3 as bucket, action, attempts, state
    from actions
    where tenant_id = $1 and started_ms >= $2) as b
group by b.bucket, b.action
on conflict (tenant_id, granularity, bucket_start_ms, action) do update set
    actions_started = excluded.actions_started,
    actions_completed = excluded.actions_completed,
    actions_failed = excluded.actions_failed,
    actions_uncertain = excluded.actions_uncertain";

    /// Registers a webhook endpoint.
    pub const INSERT_WEBHOOK_ENDPOINT: &str = "\
insert into webhook_endpoints (tenant_id, endpoint_id, url, events, secret, created_ms)
values ($1, $2, $3, $4, $5, $6)";

    /// A tenant's endpoints, oldest first (the relay reads them each round).
    pub const LIST_WEBHOOK_ENDPOINTS: &str = "\
select endpoint_id, url, events, secret, created_ms
from webhook_endpoints
where tenant_id = $1
order by created_ms, endpoint_id";

    /// Adds an alert (its id is new: random).
    pub const INSERT_ALERT: &str = "\
insert into alerts
    (tenant_id, alert_id, metric, above, for_ms, window_ms, endpoint_id, state, created_ms)
values ($1, $2, $3, $4, $5, $6, $7, 'ok', $8)";

    /// A tenant's alerts, oldest first.
    pub const LIST_ALERTS: &str = "\
select alert_id, metric, above, for_ms, window_ms, endpoint_id, state, since_ms,
    last_value, evaluated_ms, created_ms
from alerts
where tenant_id = $1
order by created_ms, alert_id";

    /// Removes an alert.
    pub const DELETE_ALERT: &str = "\
delete from alerts
where tenant_id = $1 and alert_id = $2";

    /// Records an evaluation. Only from the state the evaluator read ($3),
    /// so two instances evaluating at once move an alert once: the second
    /// matches no row and sends nothing.
    pub const UPDATE_ALERT: &str = "\
update alerts set state = $4, since_ms = $5, last_value = $6, evaluated_ms = $7
where tenant_id = $1 and alert_id = $2 and state = $3";

    /// Removes an endpoint.
    pub const DELETE_WEBHOOK_ENDPOINT: &str = "\
delete from webhook_endpoints
where tenant_id = $1 and endpoint_id = $2";

    /// Drops a removed endpoint's deliveries still waiting: nobody is there
    /// to receive them (settled ones stay for the record until retention).
    pub const DELETE_ENDPOINT_PENDING: &str = "\
delete from webhook_deliveries
where tenant_id = $1 and endpoint_id = $2 and state = 'pending'";

    /// Fans one outbox message out to one endpoint, due now. The primary key
    /// makes a second fan-out of the same message a no-op.
    pub const INSERT_WEBHOOK_DELIVERY: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
values ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7)
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

    /// Records a 2xx, under the attempt that claimed the delivery.
    pub const WEBHOOK_DELIVERED: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $5, last_error = null,
    updated_ms = $6
where tenant_id = $1 and outbox_id = $2 and endpoint_id = $3 and attempts = $4
    and state = 'pending'";

    /// Records a failed attempt: the next one's time, or 'dead' ($8) when
    /// the give-up time has passed; under the attempt that claimed it.
    pub const WEBHOOK_FAILED: &str = "\
update webhook_deliveries
set state = $8, lease_until_ms = null, next_attempt_ms = $5, last_status = $6,
    last_error = $7, updated_ms = $9
where tenant_id = $1 and outbox_id = $2 and endpoint_id = $3 and attempts = $4
    and state = 'pending'";

    /// A tenant's deliveries by state for the live monitor: pending ones
    /// split by whether an attempt failed, with the oldest waiting message.
    pub const LIVE_WEBHOOKS: &str = "\
select state, last_status is not null or last_error is not null as failed_before,
    count(*) as n, min(created_ms) as oldest_ms
from webhook_deliveries
where tenant_id = $1
group by state, last_status is not null or last_error is not null";

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

    /// The conformance fixture's echo: one row per execution.
    pub const INSERT_FIXTURE_ECHO: &str = "\
insert into fixture_echoes (tenant_id, bytes, created_ms)
values ($1, $2, $3)";

    /// A tenant's rollups over a time range.
    pub const READ_ROLLUP: &str = "\
select bucket_start_ms, action, intents, deliveries, redeliveries, redelivered_intents,
    divergences, corrections, actions_started, actions_completed, actions_failed,
    actions_uncertain, http_replays, http_409, http_422, delay_max_ms
from stats_rollup
where tenant_id = $1 and granularity = $2 and bucket_start_ms >= $3 and bucket_start_ms < $4
order by bucket_start_ms, action";

    /// A tenant's delay histograms over a time range.
    pub const READ_DELAY: &str = "\
select bucket_start_ms, action, le_ms, count
from stats_delay
where tenant_id = $1 and granularity = $2 and bucket_start_ms >= $3 and bucket_start_ms < $4";

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

    /// Writes one executed demo charge into its ledger.
    pub const INSERT_DEMO_CHARGE: &str = "\
insert into demo_charges (tenant_id, charge_id, amount_cents, currency, customer, created_ms)
values ($1, $2, $3, $4, $5, $6)";

    /// How many charges the demo provider executed for a tenant.
    pub const COUNT_DEMO_CHARGES: &str = "\
select count(*) as n from demo_charges
where tenant_id = $1";

    /// Every charge the demo provider executed for a tenant (the simulator
    /// compares them with what each conversation asked for).
    pub const LIST_DEMO_CHARGES: &str = "\
select charge_id, amount_cents, currency, customer, created_ms from demo_charges
where tenant_id = $1
order by created_ms, charge_id";

    /// The live monitor's current action states. A started action whose
    /// lease ran out is counted apart: its outcome is unknown, so the
    /// monitor shows it as uncertain before the periodic sweep marks it.
    /// Each count reads a partial index (`actions_live_leases`,
    /// `actions_uncertain`), not the table.
    pub const LIVE_ACTION_COUNTS: &str = concat!(
        "\
select
    (select count(*) from actions
     where tenant_id = $1 and state = 'started' and lease_until_ms > $2) as in_flight,
    (select count(*) from actions
     where tenant_id = $1 and state = 'started' and lease_until_ms <= $2) as expired,
    (select count(*) from actions
     where tenant_id = $1 and state = 'uncertain') as uncertain,
    (select count(*) from actions where tenant_id = $1 and ",
        unsettled!(),
        ") as unresolved,
    (select min(started_ms) from actions where tenant_id = $1 and ",
        unsettled!(),
        ") as oldest_unresolved_ms"
    );

    /// The newest uncertain actions, for reconciliation (their intents'
    /// facts are read apart, by `INTENT_FACTS`, once per key).
    pub const LIVE_UNCERTAIN: &str = "\
select idem_key, action, started_ms, lease_until_ms, attempts, updated_ms
from actions
where tenant_id = $1 and state = 'uncertain'
order by updated_ms desc
limit $2";

    /// "Uncertain now" per action type: marked uncertain, or started with a
    /// lease that ran out and not swept yet (the live monitor's one
    /// definition: its card is the sum, its list the newest of the same
    /// rows). Read only when the counts found some.
    pub const LIVE_UNCERTAIN_BY_ACTION: &str = "\
select action, count(*) as n from actions
where tenant_id = $1
    and (state = 'uncertain' or (state = 'started' and lease_until_ms <= $2))
group by action
order by action";

    /// Started actions whose lease ran out (uncertain, not yet swept).
    pub const LIVE_EXPIRED: &str = "\
select idem_key, action, started_ms, lease_until_ms, attempts, updated_ms
from actions
where tenant_id = $1 and state = 'started' and lease_until_ms <= $2
order by lease_until_ms desc
limit $3";

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

    /// Saves a dashboard scenario. The id is derived from the content, so a
    /// conflict means this very scenario was saved before: keep that row.
    pub const INSERT_SCENARIO: &str = "\
insert into scenarios (tenant_id, scenario_id, name, query, created_ms)
values ($1, $2, $3, $4, $5)
on conflict (tenant_id, scenario_id) do nothing";

    /// One saved scenario.
    pub const SELECT_SCENARIO: &str = "\
select scenario_id, name, query, created_ms from scenarios
where tenant_id = $1 and scenario_id = $2";

    /// Saves a dashboard comparison; as with scenarios, a conflict means
    /// this very comparison was saved before: keep that row.
    pub const INSERT_COMPARISON: &str = "\
insert into comparisons (tenant_id, comparison_id, name, query, created_ms)
values ($1, $2, $3, $4, $5)
on conflict (tenant_id, comparison_id) do nothing";

    /// One saved comparison.
    pub const SELECT_COMPARISON: &str = "\
select comparison_id, name, query, created_ms from comparisons
where tenant_id = $1 and comparison_id = $2";

    /// Admin: totals per tenant over a time range (the one statement that
    /// reads across tenants; it reads the small rollup table only).
    pub const ADMIN_TOTALS: &str = "\
select tenant_id,
    -- cast: Postgres sums bigints into numeric.
    cast(sum(intents) as bigint) as intents,
    cast(sum(deliveries) as bigint) as deliveries,
    cast(sum(redeliveries) as bigint) as redeliveries,
    cast(sum(redelivered_intents) as bigint) as redelivered_intents,
    cast(sum(divergences) as bigint) as divergences,
    cast(sum(actions_uncertain) as bigint) as actions_uncertain
from stats_rollup
where granularity = $1 and bucket_start_ms >= $2 and bucket_start_ms < $3
group by tenant_id
order by tenant_id";
    }
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

/// Admin: the tenants with webhook endpoints (the relay visits them).
pub const WEBHOOK_TENANTS: &str = tenants_sql!("webhook_endpoints");

/// Admin: the tenants with alerts (the evaluator visits them).
pub const ALERT_TENANTS: &str = tenants_sql!("alerts");

/// Admin: deliveries of every tenant by state (the `/metrics` gauges, made
/// only when Prometheus scrapes), as [`shared::LIVE_WEBHOOKS`] splits them.
pub const ADMIN_WEBHOOKS: &str = "\
select state, last_status is not null or last_error is not null as failed_before,
    count(*) as n, min(created_ms) as oldest_ms
from webhook_deliveries
group by state, last_status is not null or last_error is not null";

/// Admin: the tenants with statistics waiting in the journal (the flusher
/// visits them; every fold statement is then scoped).
pub const JOURNAL_TENANTS: &str = tenants_sql!("stats_journal");

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

/// PostgreSQL-only statements.
pub mod pg {
    pub use super::shared::*;
    statements! {
        HERE;
    /// Takes (deletes and returns) a tenant's oldest journal rows, for the
    /// flusher to fold into the rollups in the same transaction: a row is
    /// folded once, or stays if the fold rolls back. On PostgreSQL a second
    /// flusher waits for the first's rows and then skips them.
    pub const JOURNAL_TAKE: &str = concat!(
        "delete from stats_journal
where tenant_id = $1 and seq in (
    select seq from stats_journal
    where tenant_id = $1
    order by seq
    limit $2)
returning bucket_start_ms, action, ",
        journal_counts!()
    );
    /// Appends one write's counts to the statistics journal, in that write's
    /// transaction (see migration 0010 for why a journal and not the rollups).
    pub const JOURNAL_APPEND: &str = concat!(
        "insert into stats_journal
    (tenant_id, bucket_start_ms, action, ",
        journal_counts!(),
        ")
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)"
    );

    /// Queues an outbox message; the identity column numbers it.
    pub const OUTBOX_INSERT: &str = "\
insert into outbox (tenant_id, topic, payload, created_ms)
values ($1, $2, $3, $4)
returning id";

    /// Claims an endpoint's due deliveries for one relay: a lease, and the
    /// attempt number as its fencing token. SKIP LOCKED lets several relays
    /// share the queue without waiting, and the lease condition, checked
    /// again on each row once locked, keeps any two from claiming one
    /// delivery at once. The pick is a CTE so it runs once, and the update
    /// finds its rows by primary key (`= any(array(…))`): as an `in`
    /// subquery, a table whose statistics lag behind its growth was planned
    /// as a scan of every delivery of the endpoint (70 ms at 10,000).
    pub const WEBHOOK_CLAIM: &str = "\
with picked as (
    select outbox_id from webhook_deliveries
    where tenant_id = $1 and endpoint_id = $2 and state = 'pending' and next_attempt_ms <= $3
        and (lease_until_ms is null or lease_until_ms <= $3)
    order by next_attempt_ms
    limit $5
    for update skip locked)
update webhook_deliveries
set lease_until_ms = $4, attempts = attempts + 1, updated_ms = $3
where tenant_id = $1 and outbox_id = any(array(select outbox_id from picked)) and endpoint_id = $2
returning outbox_id, topic, payload, created_ms, attempts";

    /// Fans a batch of outbox messages out in one statement: $2 is a JSON
    /// array of `{"o": outbox id, "e": endpoint id}`, one per delivery, and
    /// the topic and payload are copied from the message row. One statement
    /// per batch, not two per message: on SQLite every statement inside
    /// the fan-out's transaction held the write lock the API waits for.
    pub const WEBHOOK_FAN_OUT: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
select $1, m.id, p.e, m.topic, m.payload, m.created_ms, 'pending', 0, $3, $3
from outbox as m, jsonb_to_recordset(cast($2 as jsonb)) as p(o bigint, e text)
where tenant_id = $1 and m.id = p.o
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

    /// Marks a batch of outbox messages sent ($2: a JSON array of ids).
    pub const OUTBOX_MARK_SENT_MANY: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and sent_ms is null
    and id = any(array(select cast(jsonb_array_elements_text(cast($2 as jsonb)) as bigint)))";

    /// Records a batch of 2xx outcomes that got one status ($3), each
    /// under the attempt that claimed it, in one statement ($2: a JSON
    /// array of `{"o": outbox id, "e": endpoint id, "a": attempt}`). The
    /// `= any(array(…))` makes it probe the primary key per outbox id (as
    /// an `in` subquery alone it may hash-join a scan of the table); the
    /// row comparison then keeps only each claim's own attempt.
    pub const WEBHOOK_DELIVERED_MANY: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $3, last_error = null,
    updated_ms = $4
where tenant_id = $1 and state = 'pending'
    and outbox_id = any(array(select cast(x ->> 'o' as bigint) from jsonb_array_elements(cast($2 as jsonb)) as x))
    and (outbox_id, endpoint_id, attempts) in (
        select o, e, a from jsonb_to_recordset(cast($2 as jsonb)) as p(o bigint, e text, a int))";

    /// Pending messages for one relay. SKIP LOCKED lets several relays share
    /// the queue: each takes rows the others have not locked.
    pub const OUTBOX_FETCH: &str = "\
select id, topic, payload, created_ms
from outbox
where tenant_id = $1 and sent_ms is null
order by id
limit $2
for update skip locked";

    /// The intents of several action keys (a JSON array of keys), for the
    /// monitor's uncertain list: one probe of the `intents_key` index per
    /// key. `= any(array(…))` and not `in (…)`: the set function's row
    /// estimate is a guess, and the array form always probes the index.
    pub const INTENT_FACTS: &str = "\
select idem_key, reference, payload, last_seen_ms
from intents
where tenant_id = $1
    and idem_key = any(array(select jsonb_array_elements_text(cast($2 as jsonb))))";
    }
}

/// SQLite-only statements.
pub mod sqlite {
    pub use super::shared::*;
    statements! {
        HERE;
    /// Takes (deletes and returns) a tenant's oldest journal rows, for the
    /// flusher to fold into the rollups in the same transaction (SQLite's
    /// journal is keyed by minute, action and delay bucket, not numbered).
    pub const JOURNAL_TAKE: &str = concat!(
        "delete from stats_journal
where tenant_id = $1 and (bucket_start_ms, action, delay_le_ms) in (
    select bucket_start_ms, action, delay_le_ms from stats_journal
    where tenant_id = $1
    order by bucket_start_ms
    limit $2)
returning bucket_start_ms, action, ",
        journal_counts!()
    );

    /// Adds one write's counts to the statistics journal, in that write's
    /// transaction: to the tenant's row for the minute, action and delay
    /// bucket ($18, 0 for none), which the triggers of migration 0010 keep
    /// too. One writer at a time, so the shared row costs no waiting, and
    /// the journal stays a few rows between folds.
    pub const JOURNAL_APPEND: &str = concat!(
        "insert into stats_journal as j
    (tenant_id, bucket_start_ms, action, ",
        journal_counts!(),
        ")
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
    intents = j.intents + excluded.intents,
    deliveries = j.deliveries + excluded.deliveries,
    redeliveries = j.redeliveries + excluded.redeliveries,
    redelivered_intents = j.redelivered_intents + excluded.redelivered_intents,
    divergences = j.divergences + excluded.divergences,
    corrections = j.corrections + excluded.corrections,
    actions_started = j.actions_started + excluded.actions_started,
    actions_completed = j.actions_completed + excluded.actions_completed,
    actions_failed = j.actions_failed + excluded.actions_failed,
    actions_uncertain = j.actions_uncertain + excluded.actions_uncertain,
    http_replays = j.http_replays + excluded.http_replays,
    http_409 = j.http_409 + excluded.http_409,
    http_422 = j.http_422 + excluded.http_422,
    delay_max_ms = max(j.delay_max_ms, excluded.delay_max_ms),
    delay_count = j.delay_count + excluded.delay_count"
    );

    /// Queues an outbox message. SQLite has one writer at a time, so max + 1
    /// inside the insert is race-free; the floor at now x 1000 keeps ids
    /// growing after a purge emptied the table.
    pub const OUTBOX_INSERT: &str = "\
insert into outbox (tenant_id, id, topic, payload, created_ms)
values ($1,
    (select max(coalesce(max(id), 0) + 1, $4 * 1000) from outbox where tenant_id = $1),
    $2, $3, $4)
returning id";

    /// Claims an endpoint's due deliveries (see the PostgreSQL one). SQLite
    /// runs one writer at a time, so no two relays claim one delivery.
    pub const WEBHOOK_CLAIM: &str = "\
with picked as (
    select outbox_id from webhook_deliveries
    where tenant_id = $1 and endpoint_id = $2 and state = 'pending' and next_attempt_ms <= $3
        and (lease_until_ms is null or lease_until_ms <= $3)
    order by next_attempt_ms
    limit $5)
update webhook_deliveries
set lease_until_ms = $4, attempts = attempts + 1, updated_ms = $3
where tenant_id = $1 and endpoint_id = $2 and outbox_id in (select outbox_id from picked)
returning outbox_id, topic, payload, created_ms, attempts";

    /// Fans a batch of outbox messages out in one statement (see the
    /// PostgreSQL one). The select has a where clause, as SQLite's upsert
    /// after an insert-select needs to parse.
    pub const WEBHOOK_FAN_OUT: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
select $1, m.id, p.e, m.topic, m.payload, m.created_ms, 'pending', 0, $3, $3
from (select json_extract(value, '$.o') as o, json_extract(value, '$.e') as e
      from json_each($2)) as p
    -- CROSS JOIN keeps the batch as the outer loop: each message found by
    -- its primary key, not the tenant's whole outbox scanned per pair.
    cross join outbox as m
where tenant_id = $1 and m.id = p.o
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

    /// Marks a batch of outbox messages sent ($2: a JSON array of ids).
    pub const OUTBOX_MARK_SENT_MANY: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and sent_ms is null and id in (select value from json_each($2))";

    /// Records a batch of 2xx outcomes that got one status in one
    /// statement (see the PostgreSQL one); the row-value `in` probes the
    /// primary key.
    pub const WEBHOOK_DELIVERED_MANY: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $3, last_error = null,
    updated_ms = $4
where tenant_id = $1 and state = 'pending' and (outbox_id, endpoint_id, attempts) in (
    select json_extract(value, '$.o'), json_extract(value, '$.e'), json_extract(value, '$.a')
    from json_each($2))";

    /// Pending messages for the relay. SQLite has no row locks; one writer at
    /// a time and at-least-once delivery make a second relay harmless.
    pub const OUTBOX_FETCH: &str = "\
select id, topic, payload, created_ms
from outbox
where tenant_id = $1 and sent_ms is null
order by id
limit $2";

    /// The intents of several action keys (a JSON array of keys), for the
    /// monitor's uncertain list. SQLite has no index on the key (migration
    /// 0016 dropped it: a random key's index cost a third of `record_intent`'s
    /// throughput), so this reads the tenant's intents once for the whole
    /// list, checking each against the keys; the monitor keeps what it found
    /// (`FactsCache`), so a key costs one such read, not one per refresh.
    pub const INTENT_FACTS: &str = "\
select idem_key, reference, payload, last_seen_ms
from intents
where tenant_id = $1
    and idem_key in (select value from json_each($2))";
    }
}

/// Every statement that is not scoped to one tenant.
pub fn admin_statements() -> impl Iterator<Item = &'static str> {
    [
        shared::ADMIN_TOTALS,
        LIST_TENANTS,
        TENANT_LIST,
        SESSION_TENANTS,
        ADMIN_UNRESOLVED,
        JOURNAL_TENANTS,
        WEBHOOK_TENANTS,
        ALERT_TENANTS,
        ADMIN_WEBHOOKS,
    ]
    .into_iter()
    .chain(TENANTS_IN_TABLES)
}

statements! {
    COALESCED;

/// Coalesced intent writes (Postgres): many callers' deliveries for one
/// tenant in one statement. Same conflict rule as
/// [`RECORD_INTENT`](shared::RECORD_INTENT); rows are distinct by primary
/// key (the batcher merges identical candidates into one row with a count),
/// because one statement cannot update the same row twice.
pub const PG_RECORD_INTENTS: &str = "\
insert into intents as i
    (tenant_id, reference, action, rules_version, idem_key, payload,
     deliveries, divergences, first_seen_ms, last_seen_ms)
select $1, u.reference, u.action, u.rules_version, u.idem_key, u.payload, u.n, 0, $8, $8
from unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bigint[])
    as u (reference, action, rules_version, idem_key, payload, n)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end
returning reference, action, rules_version, idem_key, payload, revision, deliveries,
    divergences, first_seen_ms, last_seen_ms";

/// [`PG_RECORD_INTENTS`] with its statistics in the same statement, hence
/// the same transaction: a crash loses neither the intents nor their counts,
/// and the batch still costs one round trip. `d` says what this statement
/// added to each row (a row is new when all its deliveries are this
/// statement's; `second` marks the delivery that made it a duplicate), and
/// `j` appends one journal row per action and delay bucket. $9 is the delay
/// histogram's upper bounds, ascending: `width_bucket(delay - 1, bounds)`
/// counts the bounds below the delay, so the next one is the first bound at
/// or above it, as `Cell::delay` picks.
pub const PG_RECORD_INTENTS_COUNTED: &str = "\
with u (reference, action, rules_version, idem_key, payload, n) as (
    select * from unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bigint[])),
w as (
    insert into intents as i
        (tenant_id, reference, action, rules_version, idem_key, payload,
         deliveries, divergences, first_seen_ms, last_seen_ms)
    select $1, u.reference, u.action, u.rules_version, u.idem_key, u.payload, u.n, 0, $8, $8
    from u
    on conflict (tenant_id, reference, action) do update set
        deliveries = i.deliveries + excluded.deliveries,
        divergences = i.divergences
            + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
        last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
            then i.last_seen_ms else excluded.last_seen_ms end
    returning reference, action, rules_version, idem_key, payload, revision, deliveries,
        divergences, first_seen_ms, last_seen_ms),
d as (
    select w.action, u.n, x.inserted, u.n - x.inserted as redeliveries,
        case when w.payload = u.payload then 0 else u.n end as diverged,
        case when w.deliveries - u.n <= 1 and w.deliveries >= 2 then 1 else 0 end as second,
        case when u.n > x.inserted then greatest($8 - w.first_seen_ms, 0) else 0 end as delay,
        case when u.n > x.inserted then ($9::bigint[])[
            width_bucket(greatest($8 - w.first_seen_ms, 0) - 1, $9::bigint[]) + 1] end as le
    from w
    join u on u.reference = w.reference and u.action = w.action
    cross join lateral (
        select case when w.deliveries = u.n then 1 else 0 end as inserted) as x),
j as (
    insert into stats_journal
        (tenant_id, bucket_start_ms, action, intents, deliveries, redeliveries,
         redelivered_intents, divergences, delay_max_ms, delay_le_ms, delay_count)
    select $1, $8 - $8 % 60000, d.action, sum(d.inserted), sum(d.n), sum(d.redeliveries),
        sum(d.second), sum(d.diverged), max(d.delay), d.le, sum(d.redeliveries)
    from d
    group by d.action, d.le)
select reference, action, rules_version, idem_key, payload, revision, deliveries,
    divergences, first_seen_ms, last_seen_ms
from w";
}

/// Every statement, by name (`pg::` and `sqlite::` for a backend's own):
/// each `statements!` block lists what it declares, so no statement can be
/// left out of the tenancy checks.
pub fn all() -> impl Iterator<Item = (String, &'static str)> {
    let listed = |module: &'static str, list: &'static [(&'static str, &'static str)]| {
        list.iter()
            .map(move |(name, sql)| (format!("{module}{name}"), *sql))
    };
    listed("", shared::HERE)
        .chain(listed("pg::", pg::HERE))
        .chain(listed("sqlite::", sqlite::HERE))
        .chain(listed("", ADMIN))
        .chain(listed("", COALESCED))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement is tenant-scoped when it filters on `tenant_id = $1` or,
    /// for an insert, writes `$1` into tenant_id and conflicts on a key
    /// that starts with it.
    fn scoped(sql: &str) -> bool {
        // Comments are prose: only the statement's own words count.
        let code: String = sql
            .lines()
            .map(|l| l.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        let flat = code.split_whitespace().collect::<Vec<_>>().join(" ");
        // A DO UPDATE ... WHERE tests the one conflicting row, which the
        // conflict target already pinned to the tenant.
        let head = flat.split(" on conflict ").next().unwrap_or_default();
        // Every where clause, including subqueries', names the tenant.
        let wheres = head.matches(" where ").count();
        let filtered = wheres == head.matches("where tenant_id = $1").count();
        if flat.starts_with("with ") && !flat.starts_with("with recursive") {
            // A CTE: every insert writes $1 as its tenant, every conflict
            // target leads with tenant_id, and any where clause names the
            // tenant (the CTE's own rows need none); one without inserts
            // filters every table it reads or updates.
            let inserts = flat.matches("insert into ").count();
            let conflicts = flat.matches("on conflict (").count();
            let all_wheres = flat.matches(" where ").count();
            if inserts == 0 {
                return all_wheres > 0
                    && all_wheres == flat.matches("where tenant_id = $1").count();
            }
            return inserts == flat.matches("select $1,").count()
                && conflicts == flat.matches("on conflict (tenant_id").count()
                && all_wheres == flat.matches("where tenant_id = $1").count();
        }
        if flat.starts_with("insert into") {
            let writes_tenant = flat.contains("(tenant_id,")
                && (flat.contains("values ($1,")
                    || flat.contains("select $1,")
                    || (wheres > 0 && flat.contains("select tenant_id,")));
            let conflict_ok =
                !flat.contains("on conflict") || flat.contains("on conflict (tenant_id");
            return writes_tenant && conflict_ok && filtered;
        }
        wheres > 0 && filtered
    }

    #[test]
    fn every_statement_is_tenant_scoped_except_admin() {
        let admin: Vec<&str> = admin_statements().collect();
        for (name, sql) in all() {
            if admin.contains(&sql) {
                continue;
            }
            assert!(scoped(sql), "{name} is not scoped to one tenant:\n{sql}");
        }
        for sql in admin {
            assert!(
                !scoped(sql),
                "an admin statement is listed that is scoped:\n{sql}"
            );
        }
    }

    /// The stored tables, read off the migrations of both backends.
    fn stored_tables() -> std::collections::BTreeSet<String> {
        let mut tables = std::collections::BTreeSet::new();
        for dir in ["sqlite", "postgres"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../migrations")
                .join(dir);
            for f in std::fs::read_dir(dir).unwrap() {
                let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
                let flat = text.to_lowercase();
                for part in flat.split("create table ").skip(1) {
                    let name: String = part
                        .trim_start_matches("if not exists ")
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    tables.insert(name);
                }
            }
        }
        tables
    }

    /// Each reference to a stored table in a statement (`from T`, `join T`,
    /// `update T`, `insert into T`, `delete from T`).
    fn table_refs<'a>(flat: &str, tables: &'a std::collections::BTreeSet<String>) -> Vec<&'a str> {
        let words: Vec<&str> = flat.split([' ', '(', ')', ',']).collect();
        let mut refs = Vec::new();
        for w in words.windows(2) {
            if matches!(w[0], "from" | "join" | "update" | "into") {
                if let Some(t) = tables.get(w[1]) {
                    refs.push(t.as_str());
                }
            }
        }
        refs
    }

    /// What a sharded PostgreSQL (Citus, every table distributed by
    /// `tenant_id`) needs to route a statement to one shard: every stored
    /// table it touches is pinned to the one tenant `$1`, by a `where
    /// tenant_id = $1` of its own or, for an insert, by writing `$1` as the
    /// tenant (and conflicting on a key that leads with it). So a statement
    /// pins at least as many times as it names stored tables (an insert of
    /// rows selected from a pinned table counts its `select tenant_id`), and a join of
    /// two stored tables never happens on anything but one tenant's rows.
    /// The admin statements, which span tenants, are listed and excepted:
    /// docs/DEPLOY.md says what each would become.
    #[test]
    fn every_tenant_statement_routes_to_one_shard() {
        let tables = stored_tables();
        assert!(tables.contains("intents") && tables.contains("chore_leases"));
        let admin: Vec<&str> = admin_statements().collect();
        let mut checked = 0;
        for (name, sql) in all() {
            if admin.contains(&sql) {
                continue;
            }
            let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            let refs = table_refs(&flat, &tables);
            assert!(!refs.is_empty(), "{name} touches no stored table:\n{sql}");
            // An insert of rows selected from a pinned table keeps their
            // tenant (`select tenant_id, ...`): on their shard too.
            let pins = flat.matches("tenant_id = $1").count()
                + flat.matches("values ($1,").count()
                + flat.matches("select $1,").count()
                + flat.matches("select tenant_id,").count();
            assert!(
                pins >= refs.len(),
                "{name} names {} stored tables ({refs:?}) but pins the tenant {pins} times:\n{sql}",
                refs.len()
            );
            checked += 1;
        }
        assert!(checked >= 100, "only {checked} statements checked");
    }

    #[test]
    fn the_unsettled_index_has_the_queries_condition() {
        // SQLite uses a partial index only for a query whose condition
        // contains the index's condition term for term: keep the text equal.
        for sql in [
            include_str!("../../migrations/sqlite/0009_unsettled_actions.sql"),
            include_str!("../../migrations/postgres/0009_unsettled_actions.sql"),
        ] {
            assert!(sql.contains(unsettled!()), "{sql}");
        }
    }

    #[test]
    fn the_sqlite_delay_bounds_are_the_histograms() {
        let sql = include_str!("../../migrations/sqlite/0010_stats_journal.sql");
        let listed: Vec<i64> = sql
            .split("insert into stats_delay_bounds (le_ms) values")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_default()
            .split(',')
            .map(|v| {
                v.trim()
                    .trim_matches(|c| c == '(' || c == ')')
                    .parse()
                    .unwrap_or(-1)
            })
            .collect();
        assert_eq!(listed, crate::stats::DELAY_BOUNDS_MS);
    }

    #[test]
    fn every_statement_is_listed_once_and_the_admin_ones_are_among_them() {
        let listed: Vec<(String, &str)> = all().collect();
        // shared, pg, sqlite, the admin statements and the coalesced writes.
        assert!(listed.len() > 100, "{}", listed.len());
        let names: std::collections::BTreeSet<&str> =
            listed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.len(), listed.len(), "a name is listed twice");
        for name in [
            "RECORD_INTENT",
            "pg::OUTBOX_FETCH",
            "sqlite::OUTBOX_FETCH",
            "ADMIN_UNRESOLVED",
            "PG_RECORD_INTENTS",
        ] {
            assert!(names.contains(name), "{name}");
        }
        let texts: Vec<&str> = listed.iter().map(|(_, sql)| *sql).collect();
        for sql in admin_statements() {
            assert!(
                texts.contains(&sql) || TENANTS_IN_TABLES.contains(&sql),
                "an admin statement is not declared in a list:\n{sql}"
            );
        }
    }

    #[test]
    fn every_key_and_index_leads_with_tenant_id() {
        for (backend, tables, sql) in [
            (
                "sqlite",
                9,
                include_str!("../../migrations/sqlite/0002_intent_store.sql"),
            ),
            (
                "postgres",
                9,
                include_str!("../../migrations/postgres/0002_intent_store.sql"),
            ),
            (
                "sqlite",
                2,
                include_str!("../../migrations/sqlite/0003_tenants.sql"),
            ),
            (
                "postgres",
                2,
                include_str!("../../migrations/postgres/0003_tenants.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../migrations/sqlite/0004_demo_ledger.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../migrations/postgres/0004_demo_ledger.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../migrations/sqlite/0005_scenarios.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../migrations/postgres/0005_scenarios.sql"),
            ),
            (
                "sqlite",
                0,
                include_str!("../../migrations/sqlite/0006_live_monitor.sql"),
            ),
            (
                "postgres",
                0,
                include_str!("../../migrations/postgres/0006_live_monitor.sql"),
            ),
            (
                "sqlite",
                1,
                include_str!("../../migrations/sqlite/0007_deployment_checks.sql"),
            ),
            (
                "postgres",
                1,
                include_str!("../../migrations/postgres/0007_deployment_checks.sql"),
            ),
            (
                "sqlite",
                0,
                include_str!("../../migrations/sqlite/0009_unsettled_actions.sql"),
            ),
            (
                "postgres",
                0,
                include_str!("../../migrations/postgres/0009_unsettled_actions.sql"),
            ),
        ] {
            let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            let keys = flat.matches("primary key (").count()
                + flat.matches(" primary key,").count()
                + flat.matches(" primary key not null,").count();
            let led = flat.matches("primary key (tenant_id").count()
                + flat.matches("tenant_id text primary key").count();
            assert_eq!(
                keys, led,
                "{backend}: a primary key does not lead with tenant_id"
            );
            assert_eq!(keys, tables, "{backend}: tables with keys");
            for part in flat.split("create index ").skip(1) {
                let cols = part.split_once(" (").map(|x| x.1).unwrap_or_default();
                assert!(
                    cols.starts_with("tenant_id"),
                    "{backend}: index {part:.60} does not lead with tenant_id"
                );
            }
        }
    }
}
