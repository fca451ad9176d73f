//! The actions' statements: claims with a lease and a fencing token, the attempts they replace, outcomes, and the sweep.

/// The columns an action row is read with (`ActionRow`), in one place for
/// every statement that returns one.
macro_rules! action_row {
    () => {
        "action, state, fencing_token, attempts, lease_until_ms, started_ms, updated_ms,
    response, error, retryable, reconciled, swept_ms"
    };
}

/// Success under the holder's fencing token (binds $1 to $6).
macro_rules! complete_update {
    () => {
        "update actions set
    state = 'completed', response = $4, error = null, retryable = null,
    lease_until_ms = null, updated_ms = $5, reconciled = $6
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain')"
    };
}

/// A failure under the holder's fencing token (binds $1 to $7).
macro_rules! fail_update {
    () => {
        "update actions set
    state = 'failed', response = null, error = $4, retryable = $5,
    lease_until_ms = null, updated_ms = $6, reconciled = $7
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain')"
    };
}

statements! {
    HERE;

    /// Claims an action: inserts it, or takes it over when the previous
    /// claim's lease ran out without an outcome (it becomes uncertain) or the
    /// last attempt failed in a retryable way. Every claim grows the fencing
    /// token. No row comes back when the action is held, completed or failed
    /// for good; the caller then reads it.
    pub const BEGIN_ACTION: &str = "\
insert into actions as a
    (tenant_id, idem_key, action, state, fencing_token, attempts,
     lease_until_ms, started_ms, updated_ms, attempt_id)
values ($1, $2, $3, 'started', 1, 1, $5, $4, $4, $6)
on conflict (tenant_id, idem_key) do update set
    -- 'swept': the sweep marked this attempt uncertain and counted it.
    prev_state = case when a.swept_ms is not null then 'swept' else a.state end,
    swept_ms = null,
    prev_token = a.fencing_token,
    prev_started_ms = a.started_ms,
    prev_lease_until_ms = a.lease_until_ms,
    -- What the replaced attempt ended with (a failure's text, the reason
    -- it was marked uncertain) moves to `prev_error` and the history: the
    -- new attempt starts with no error, so none is ever read as another
    -- attempt's.
    prev_error = a.error,
    error = null,
    -- A known failure is safe to retry; an expired lease is not known to
    -- have failed, so the new holder inherits an uncertain action.
    state = case when a.state = 'failed' then 'started' else 'uncertain' end,
    fencing_token = a.fencing_token + 1,
    attempts = a.attempts + 1,
    lease_until_ms = excluded.lease_until_ms,
    started_ms = excluded.started_ms,
    updated_ms = excluded.updated_ms,
    attempt_id = excluded.attempt_id
where ((a.state in ('started', 'uncertain') and coalesce(a.lease_until_ms, 0) <= excluded.started_ms)
   or (a.state = 'failed' and a.retryable))
  -- A key names one action: a claim naming another never takes it over.
  and a.action = excluded.action
returning state, fencing_token, attempts, lease_until_ms, prev_state, prev_token,
    prev_started_ms, prev_lease_until_ms, prev_error";

    /// The claim an attempt holds, asked again by the same attempt (its
    /// first answer was lost): the same token, while its lease runs.
    pub const SELECT_HELD_CLAIM: &str = "\
select state, fencing_token, attempts, lease_until_ms, prev_state, prev_token,
    prev_started_ms, prev_lease_until_ms, prev_error
from actions
where tenant_id = $1 and idem_key = $2 and attempt_id = $3
    and state in ('started', 'uncertain') and lease_until_ms > $4";

    /// Extends a held claim's lease. Only the current token, only while its
    /// lease still runs: a lease that ran out may have been swept or taken
    /// over, and the holder must learn it lost the claim. A renewal proves
    /// the holder has its token, so it spends the claim's attempt id: from
    /// then on nobody else asking with the id is handed the token (a
    /// lost answer's recovery is over by then).
    pub const RENEW_ACTION: &str = "\
update actions set lease_until_ms = $4, updated_ms = $5, attempt_id = null
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain') and lease_until_ms > $5
returning lease_until_ms";

    /// Marks a held claim uncertain now (its effect raised, so the outcome
    /// is unknown): the lease ends at once, so the next claim takes it over
    /// as uncertain without waiting, and `swept_ms` says it was counted.
    pub const MARK_UNCERTAIN: &str = "\
update actions set
    state = 'uncertain', error = $4, lease_until_ms = $5, swept_ms = $5, updated_ms = $5
where tenant_id = $1 and idem_key = $2 and fencing_token = $3
    and state in ('started', 'uncertain') and swept_ms is null
returning action";

    /// An action as stored.
    pub const SELECT_ACTION: &str = concat!(
        "select ",
        action_row!(),
        "
from actions
where tenant_id = $1 and idem_key = $2"
    );

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

    /// Records success. The fencing token must be the current one: a holder
    /// whose lease was taken over matches no row and changes nothing.
    pub const COMPLETE_ACTION: &str = concat!(complete_update!(), "\nreturning ", action_row!());

    /// Seals a failed action for good before its intent is superseded: no
    /// claim takes it over again (a claim racing it re-reads this row on
    /// PostgreSQL, and SQLite writes one at a time). Only a failure: an
    /// action started, uncertain or completed is never superseded.
    pub const SEAL_FAILED_ACTION: &str = "\
update actions set retryable = false, updated_ms = $3
where tenant_id = $1 and idem_key = $2 and state = 'failed'
returning action";

    /// Records a failure, retryable or final, under the same fencing rule.
    pub const FAIL_ACTION: &str = concat!(fail_update!(), "\nreturning ", action_row!());

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
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;

    /// [`COMPLETE_ACTION`] with its count journaled in the same statement
    /// (a data-modifying CTE, as the intent writer's): one round trip and
    /// one commit for an outcome, where a transaction around the update and
    /// the journal's append took four round trips. The minute is the
    /// write's `now`, as the Rust side's count would have it.
    pub const COMPLETE_ACTION_COUNTED: &str = concat!(
        "with done as (\n",
        complete_update!(),
        "\nreturning ",
        action_row!(),
        "
), counted as (
insert into stats_journal (tenant_id, bucket_start_ms, action, actions_completed)
select $1, $5 - $5 % 60000, action, 1 from done
)
select ",
        action_row!(),
        "\nfrom done"
    );

    /// [`FAIL_ACTION`] with its count journaled in the same statement.
    pub const FAIL_ACTION_COUNTED: &str = concat!(
        "with done as (\n",
        fail_update!(),
        "\nreturning ",
        action_row!(),
        "
), counted as (
insert into stats_journal (tenant_id, bucket_start_ms, action, actions_failed)
select $1, $6 - $6 % 60000, action, 1 from done
)
select ",
        action_row!(),
        "\nfrom done"
    );
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;

    /// The outcome's count is journaled by the actions table's trigger
    /// (migration 0022): the statement is the plain one.
    pub const COMPLETE_ACTION_COUNTED: &str = COMPLETE_ACTION;
    /// As [`COMPLETE_ACTION_COUNTED`].
    pub const FAIL_ACTION_COUNTED: &str = FAIL_ACTION;
}
