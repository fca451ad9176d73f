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
    -- (0: none did). A write whose redeliveries span several buckets
    -- appends one row per bucket; the counters above add up across them.
    delay_le_ms bigint,
    delay_count bigint not null default 0,
    -- An alias of the rowid, numbered by SQLite in ascending order.
    seq integer primary key
);
-- SQLite has one writer at a time, so counts of one minute, action and
-- delay bucket (0: none) add up in one row instead of appending one per
-- write (no lock to wait on, unlike PostgreSQL): the journal stays a few
-- rows between folds, and a fold deletes those few.
create unique index stats_journal_cell
    on stats_journal (tenant_id, bucket_start_ms, action, delay_le_ms);

-- SQLite: an intent delivery journals its own counts, inside its statement
-- (issue 16). A trigger runs in the statement's program, so a lone
-- delivery stays one autocommit statement: the Rust side appending a journal
-- row in a transaction would cost three more statement round trips per
-- delivery (a third of the writer's throughput with one caller). PostgreSQL
-- does the same in the intent writer's statement (a data-modifying CTE).
--
-- The delay histogram's upper bounds (ms), as stats::DELAY_BOUNDS_MS lists
-- them (a unit test holds the two equal).
create table stats_delay_bounds (le_ms integer primary key) without rowid;
insert into stats_delay_bounds (le_ms) values
    (1),
    (2),
    (5),
    (10),
    (20),
    (50),
    (100),
    (200),
    (500),
    (1000),
    (2000),
    (5000),
    (10000),
    (30000),
    (60000),
    (120000),
    (300000),
    (600000),
    (1800000),
    (3600000),
    (7200000),
    (21600000),
    (43200000),
    (86400000),
    (172800000),
    (259200000),
    (604800000),
    (1209600000),
    (2592000000),
    (9223372036854775807);

-- A first delivery: a new intent. (A trigger's upsert names its table, not
-- an alias: SQLite's trigger grammar has none.)
create trigger intents_journal_insert after insert on intents
begin
    insert into stats_journal
        (tenant_id, bucket_start_ms, action, intents, deliveries, redeliveries,
         redelivered_intents, delay_le_ms)
    values (new.tenant_id, new.last_seen_ms - new.last_seen_ms % 60000, new.action, 1,
        new.deliveries, new.deliveries - 1, case when new.deliveries >= 2 then 1 else 0 end, 0)
    on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
        intents = stats_journal.intents + excluded.intents,
        deliveries = stats_journal.deliveries + excluded.deliveries,
        redeliveries = stats_journal.redeliveries + excluded.redeliveries,
        redelivered_intents = stats_journal.redelivered_intents + excluded.redelivered_intents;
end;

-- A redelivery, absorbed by the primary key: how many, whether it made the
-- intent a duplicate, whether it diverged, and its delay since the first
-- delivery (last_seen_ms is the delivery's moment).
create trigger intents_journal_update after update of deliveries on intents
begin
    insert into stats_journal
        (tenant_id, bucket_start_ms, action, deliveries, redeliveries, redelivered_intents,
         divergences, delay_max_ms, delay_le_ms, delay_count)
    values (new.tenant_id, new.last_seen_ms - new.last_seen_ms % 60000, new.action,
        new.deliveries - old.deliveries, new.deliveries - old.deliveries,
        case when old.deliveries < 2 and new.deliveries >= 2 then 1 else 0 end,
        new.divergences - old.divergences,
        max(new.last_seen_ms - new.first_seen_ms, 0),
        (select min(le_ms) from stats_delay_bounds
         where le_ms >= max(new.last_seen_ms - new.first_seen_ms, 0)),
        new.deliveries - old.deliveries)
    on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
        deliveries = stats_journal.deliveries + excluded.deliveries,
        redeliveries = stats_journal.redeliveries + excluded.redeliveries,
        redelivered_intents = stats_journal.redelivered_intents + excluded.redelivered_intents,
        divergences = stats_journal.divergences + excluded.divergences,
        delay_max_ms = max(stats_journal.delay_max_ms, excluded.delay_max_ms),
        delay_count = stats_journal.delay_count + excluded.delay_count;
end;
