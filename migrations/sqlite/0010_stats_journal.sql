-- Statistics committed with what they count (issue 16). Each write that
-- counts something appends its counts here in its own transaction, so a
-- crash loses none of them. Appending, not upserting the rollups directly:
-- a rollup row is one per tenant, action and minute, so every writer of a
-- tenant would queue on its row lock until commit; appended rows are never
-- contended. The statistics flusher folds these rows into stats_rollup and
-- stats_delay and deletes them in one transaction, so each is counted once.
create table stats_journal (
    tenant_id text not null,
    -- The minute the counts fell in.
    bucket_start_ms bigint not null,
    action text not null,
    intents bigint not null default 0,
    deliveries bigint not null default 0,
    redeliveries bigint not null default 0,
    redelivered_intents bigint not null default 0,
    divergences bigint not null default 0,
    corrections bigint not null default 0,
    actions_started bigint not null default 0,
    actions_completed bigint not null default 0,
    actions_failed bigint not null default 0,
    actions_uncertain bigint not null default 0,
    http_replays bigint not null default 0,
    http_409 bigint not null default 0,
    http_422 bigint not null default 0,
    delay_max_ms bigint not null default 0,
    -- delay_count redeliveries fell in the delay histogram bucket le_ms
    -- (null: none did). A write whose redeliveries span several buckets
    -- appends one row per bucket; the counters above add up across them.
    delay_le_ms bigint,
    delay_count bigint not null default 0,
    -- An alias of the rowid, numbered by SQLite in ascending order. The
    -- folder reads a tenant's rows through the index below, tenant first.
    seq integer primary key
);
create index stats_journal_tenant on stats_journal (tenant_id, seq);
