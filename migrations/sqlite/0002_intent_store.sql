-- The intent store. Every table leads its primary key and every index with
-- tenant_id, so the Postgres twin can be distributed by tenant_id and every
-- tenant-scoped statement is routed to one shard (see docs/DESIGN.md).
-- Times are milliseconds since the Unix epoch, supplied by idem's clock: the
-- same arithmetic on both backends, and tests can move time without sleeping.

-- How long each tenant keeps its rows; absent means the defaults (7 days for
-- intents, actions and events, 24 h for HTTP keys).
create table tenant_settings (
    tenant_id text primary key not null,
    intent_retention_ms integer not null check (intent_retention_ms > 0),
    action_retention_ms integer not null check (action_retention_ms > 0),
    http_retention_ms integer not null check (http_retention_ms > 0)
) without rowid;

-- One row per unit of intention. The primary key is what makes a redelivery
-- land on the existing row instead of creating a second action: no
-- application-side check decides it.
create table intents (
    tenant_id text not null,
    reference text not null,
    action text not null,
    rules_version integer not null,
    idem_key text not null,
    -- The frozen normalized payload (canonical JSON). Only correct_intent
    -- replaces it; a redelivery never does.
    payload text not null,
    revision integer not null default 1,
    deliveries integer not null default 1,
    divergences integer not null default 0,
    first_seen_ms integer not null,
    last_seen_ms integer not null,
    revised_ms integer,
    primary key (tenant_id, reference, action)
) without rowid;
-- Retention deletes by age of the last delivery.
create index intents_last_seen on intents (tenant_id, last_seen_ms);

-- Every payload a correction replaced, so the change is auditable.
create table intent_history (
    tenant_id text not null,
    reference text not null,
    action text not null,
    revision integer not null,
    rules_version integer not null,
    idem_key text not null,
    payload text not null,
    replaced_ms integer not null,
    reason text not null,
    primary key (tenant_id, reference, action, revision)
) without rowid;
create index intent_history_replaced on intent_history (tenant_id, replaced_ms);

-- One row per side effect, keyed by the derived key.
create table actions (
    tenant_id text not null,
    idem_key text not null,
    action text not null,
    state text not null check (state in ('started', 'completed', 'failed', 'uncertain')),
    -- Grows on every claim; complete/fail must present the current one.
    fencing_token integer not null,
    attempts integer not null,
    lease_until_ms integer,
    started_ms integer not null,
    updated_ms integer not null,
    -- The attempt a takeover replaced, so the new holder knows what to reconcile.
    prev_token integer,
    prev_state text,
    prev_started_ms integer,
    prev_lease_until_ms integer,
    response text,
    error text,
    retryable boolean,
    reconciled boolean not null default false,
    primary key (tenant_id, idem_key)
) without rowid;
create index actions_updated on actions (tenant_id, updated_ms);
-- Only live claims are swept for expired leases; the partial index stays small.
create index actions_live_leases on actions (tenant_id, lease_until_ms) where state = 'started';

-- Idempotency-Key records of the HTTP API.
create table http_keys (
    tenant_id text not null,
    client_key text not null,
    fingerprint text not null,
    method text not null,
    path text not null,
    state text not null check (state in ('in_progress', 'completed')),
    -- A crashed request frees its key after this instant, not after expiry.
    locked_until_ms integer,
    status integer,
    headers text,
    body blob,
    created_ms integer not null,
    expires_at_ms integer not null,
    primary key (tenant_id, client_key)
) without rowid;
create index http_keys_expiry on http_keys (tenant_id, expires_at_ms);

-- Queue and webhook deliveries already handled.
create table consumed_events (
    tenant_id text not null,
    source text not null,
    event_id text not null,
    seen_ms integer not null,
    primary key (tenant_id, source, event_id)
) without rowid;
create index consumed_events_seen on consumed_events (tenant_id, seen_ms);

-- Messages written in the same transaction as an action's claim or outcome.
create table outbox (
    tenant_id text not null,
    -- Assigned as max(id) + 1 inside the insert: SQLite has one writer at a time.
    id integer not null,
    topic text not null,
    payload text not null,
    created_ms integer not null,
    sent_ms integer,
    primary key (tenant_id, id)
) without rowid;
-- The relay reads only pending rows: a partial index that sent rows leave.
create index outbox_pending on outbox (tenant_id, id) where sent_ms is null;
create index outbox_sent on outbox (tenant_id, sent_ms) where sent_ms is not null;

-- Statistics rollups, written by each process's accumulator about once a
-- second (never on the hot path), so reads touch a few hundred rows however
-- large the intent tables grow. granularity: 'minute', 'hour' or 'day'.
create table stats_rollup (
    tenant_id text not null,
    granularity text not null check (granularity in ('minute', 'hour', 'day')),
    bucket_start_ms integer not null,
    action text not null,
    intents integer not null default 0,
    deliveries integer not null default 0,
    redeliveries integer not null default 0,
    redelivered_intents integer not null default 0,
    divergences integer not null default 0,
    corrections integer not null default 0,
    actions_started integer not null default 0,
    actions_completed integer not null default 0,
    actions_failed integer not null default 0,
    actions_uncertain integer not null default 0,
    http_replays integer not null default 0,
    http_409 integer not null default 0,
    http_422 integer not null default 0,
    delay_max_ms integer not null default 0,
    primary key (tenant_id, granularity, bucket_start_ms, action)
) without rowid;

-- Redelivery delays (first delivery to this one) as a histogram: le_ms is the
-- bucket's upper bound, so percentiles are upper bounds, which is the safe
-- side when sizing retention.
create table stats_delay (
    tenant_id text not null,
    granularity text not null,
    bucket_start_ms integer not null,
    action text not null,
    le_ms integer not null,
    count integer not null,
    primary key (tenant_id, granularity, bucket_start_ms, action, le_ms)
) without rowid;
