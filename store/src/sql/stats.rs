//! The statistics' statements: the journal, its fold into the rollups, their reads, the recount.

statements! {
    HERE;

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

statements! {
    ADMIN;

    /// Admin: the tenants with statistics waiting in the journal (the flusher
    /// visits them; every fold statement is then scoped).
    pub const JOURNAL_TENANTS: &str = tenants_sql!("stats_journal");
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
    statements! {
        HERE;

        /// PostgreSQL-only statements.
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
    }
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
    statements! {
        HERE;

        /// SQLite-only statements.
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
    }
}
