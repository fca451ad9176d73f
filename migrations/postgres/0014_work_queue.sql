-- The live monitor as a work queue: what an on-call engineer needs to act
-- on an uncertain action without opening the database.

-- The sweep used to clear an expired claim's lease so a later takeover would
-- not count it twice; that lost when the lease ran out, which is what the
-- engineer asks the provider about. The sweep now keeps the lease and marks
-- the row; a takeover reads the mark (and clears it) instead.
alter table actions add column swept_ms bigint;

-- Every attempt a takeover replaced. The actions row holds the current
-- attempt and the one before; the action's page shows them all. Written
-- only when a claim replaces an attempt (a retry after a failure, a lease
-- that ran out), never on a first claim, so the common path pays nothing.
create table action_attempts (
    tenant_id text not null,
    idem_key text not null,
    attempt integer not null,
    fencing_token bigint not null,
    started_ms bigint not null,
    lease_until_ms bigint,
    -- How it ended: 'failed' (retryable), 'expired' (its lease ran out and
    -- a claim took over before the sweep), 'swept' (the sweep marked it
    -- uncertain), 'uncertain' (it held an uncertain action and its lease
    -- ran out too).
    ended text not null,
    error text,
    replaced_ms bigint not null,
    primary key (tenant_id, idem_key, attempt)
);
-- Retention removes a purged action's attempts by age.
create index action_attempts_replaced on action_attempts (tenant_id, replaced_ms);

-- The work queue shows each uncertain key's intent (business reference,
-- amount, customer): found by its key, which the intents' primary key does
-- not lead with. Read only for the few uncertain keys listed.
create index intents_key on intents (tenant_id, idem_key);
