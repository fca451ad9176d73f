-- The live monitor counts each tenant's unsettled actions (and the oldest)
-- on every refresh, and retention and /metrics ask the same. Settled rows
-- are nearly all of the table and grow with it; the unsettled ones wait for
-- an outcome and stay few. A partial index keeps those reads proportional to
-- the few. Its condition is, word for word, the queries' (sql.rs,
-- `unsettled!`): SQLite uses a partial index only then.
create index actions_unsettled on actions (tenant_id, started_ms)
    where not (state = 'completed' or reconciled or (state = 'failed' and retryable is not true));
