//! The intents' statements: the first write wins, a correction replaces a revision and keeps the one it replaced, and PostgreSQL's coalesced writes.

statements! {
    HERE;

    /// Statements shared by both backends.
    /// First write wins. The candidate is inserted; when the row exists, the
    /// frozen payload and key are left as they are and only the delivery count,
    /// the divergence count and the last delivery time move. `$7` is how many
    /// identical deliveries this row stands for (1, or more when concurrent
    /// calls were coalesced). RETURNING hands back the frozen row.
    pub const RECORD_INTENT: &str = "\
insert into intents as i
    (tenant_id, reference, action, rules_version, idem_key, payload,
     deliveries, divergences, first_seen_ms, last_seen_ms, candidate)
values ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8, $9)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    -- A different normalized payload means a different key under the same
    -- secret and rules; comparing payloads also survives a secret rotation.
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end,
    -- The first delivery that carries a candidate freezes it: kept once
    -- written, and written by the next delivery where none is kept (an
    -- intent recorded before idem kept them, or released by a supersession).
    candidate = coalesce(i.candidate, excluded.candidate)
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms, candidate";

    /// The frozen intent.
    pub const SELECT_INTENT: &str = "\
select rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms, candidate
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
    revision = revision + 1, revised_ms = $7, candidate = $8
where tenant_id = $1 and reference = $2 and action = $3
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms, candidate";

    /// A supersession files the current version whatever its payload (a
    /// released intent keeps it, under a key of its own).
    pub const ARCHIVE_SUPERSEDED: &str = "\
insert into intent_history
    (tenant_id, reference, action, revision, rules_version, idem_key, payload,
     replaced_ms, reason)
select tenant_id, reference, action, revision, rules_version, idem_key, payload, $4, $5
from intents
where tenant_id = $1 and reference = $2 and action = $3";

    /// The filed versions an action key was derived for (a superseded
    /// intent's old key), newest first.
    pub const HISTORY_BY_KEY: &str = "\
select reference, action, revision, replaced_ms, reason
from intent_history
where tenant_id = $1 and idem_key = $2
order by revision desc";

    /// The versions corrections replaced, oldest first.
    pub const INTENT_HISTORY: &str = "\
select revision, rules_version, idem_key, payload, replaced_ms, reason
from intent_history
where tenant_id = $1 and reference = $2 and action = $3
order by revision";

    /// The intents an action key was derived from (one, unless a
    /// correction gave two intents one key; the caller keeps the newest).
    /// No `order by`: on SQLite it would steer the planner to the
    /// last-seen index and a lookup per row (see `INTENT_FACTS`).
    pub const INTENT_BY_KEY: &str = "\
select reference, action, rules_version, idem_key, payload, revision, deliveries,
    divergences, first_seen_ms, last_seen_ms, candidate
from intents
where tenant_id = $1 and idem_key = $2";
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
     deliveries, divergences, first_seen_ms, last_seen_ms, candidate)
select $1, u.reference, u.action, u.rules_version, u.idem_key, u.payload, u.n, 0, $8, $8,
    u.candidate
from unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bigint[], $9::text[])
    as u (reference, action, rules_version, idem_key, payload, n, candidate)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end,
    -- The first delivery that carries a candidate freezes it: kept once
    -- written, and written by the next delivery where none is kept (an
    -- intent recorded before idem kept them, or released by a supersession).
    candidate = coalesce(i.candidate, excluded.candidate)
returning reference, action, rules_version, idem_key, payload, revision, deliveries,
    divergences, first_seen_ms, last_seen_ms, candidate";

    /// [`PG_RECORD_INTENTS`] with its statistics in the same statement, hence
    /// the same transaction: a crash loses neither the intents nor their counts,
    /// and the batch still costs one round trip. `d` says what this statement
    /// added to each row (a row is new when all its deliveries are this
    /// statement's; `second` marks the delivery that made it a duplicate), and
    /// `j` appends one journal row per action and delay bucket. $9 the candidates as sent, $10 the delay
    /// histogram's upper bounds, ascending: `width_bucket(delay - 1, bounds)`
    /// counts the bounds below the delay, so the next one is the first bound at
    /// or above it, as `Cell::delay` picks.
    pub const PG_RECORD_INTENTS_COUNTED: &str = "\
with u (reference, action, rules_version, idem_key, payload, n, candidate) as (
    select * from unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bigint[],
        $9::text[])),
w as (
    insert into intents as i
        (tenant_id, reference, action, rules_version, idem_key, payload,
         deliveries, divergences, first_seen_ms, last_seen_ms, candidate)
    select $1, u.reference, u.action, u.rules_version, u.idem_key, u.payload, u.n, 0, $8, $8,
        u.candidate
    from u
    on conflict (tenant_id, reference, action) do update set
        deliveries = i.deliveries + excluded.deliveries,
        divergences = i.divergences
            + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
        last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
            then i.last_seen_ms else excluded.last_seen_ms end,
        candidate = coalesce(i.candidate, excluded.candidate)
    returning reference, action, rules_version, idem_key, payload, revision, deliveries,
        divergences, first_seen_ms, last_seen_ms, candidate),
d as (
    select w.action, u.n, x.inserted, u.n - x.inserted as redeliveries,
        case when w.payload = u.payload then 0 else u.n end as diverged,
        case when w.deliveries - u.n <= 1 and w.deliveries >= 2 then 1 else 0 end as second,
        case when u.n > x.inserted then greatest($8 - w.first_seen_ms, 0) else 0 end as delay,
        case when u.n > x.inserted then ($10::bigint[])[
            width_bucket(greatest($8 - w.first_seen_ms, 0) - 1, $10::bigint[]) + 1] end as le
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
    divergences, first_seen_ms, last_seen_ms, candidate
from w";
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
    statements! {
        HERE;

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

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
    statements! {
        HERE;

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
