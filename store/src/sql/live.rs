//! What the live monitor reads.

statements! {
    HERE;

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
