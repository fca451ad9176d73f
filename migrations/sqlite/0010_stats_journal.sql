-- Statistics committed with what they count (issue 16). Each write that
-- counts something adds its counts here in its own transaction, so a crash
-- loses none of them. The statistics flusher folds these rows into
-- stats_rollup and stats_delay and deletes them in one transaction, so each
-- is counted once. (PostgreSQL appends a row per write instead, since there
-- writers would queue on a shared row's lock; see its 0010.)
create table stats_journal (
    tenant_id text not null,
    -- The minute the counts fell in.
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
    -- delay_count redeliveries fell in the delay histogram bucket le_ms
    -- (0: none did).
    delay_le_ms integer not null default 0,
    delay_count integer not null default 0,
    -- SQLite has one writer at a time, so the counts of one minute, action
    -- and delay bucket add up in one row instead of one row per write (no
    -- lock to wait on, unlike PostgreSQL): the journal stays a few rows
    -- between folds, and a fold deletes those few. Without a rowid, adding
    -- to a row is one B-tree lookup.
    primary key (tenant_id, bucket_start_ms, action, delay_le_ms)
) without rowid;

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
