-- SQLite: a claim and an outcome journal their own counts, inside their
-- statement, as intent deliveries do (0010). Each statement the Rust side
-- sends is a round trip to sqlx's SQLite worker thread, and a guarded
-- effect's two journal appends were a fifth of its time in the server
-- (docs/PERFORMANCE.md, "One guarded effect"). PostgreSQL keeps appending
-- from the Rust side, in the same transaction.
--
-- The counts are the ones the Rust side notes on PostgreSQL
-- (store/src/session/actions.rs), in the minute of the write's `now`:
-- the conformance suite's statistics tests hold the two backends equal.

-- A first claim: a new action row.
create trigger actions_journal_first_claim after insert on actions
begin
    insert into stats_journal (tenant_id, bucket_start_ms, action, actions_started, delay_le_ms)
    values (new.tenant_id, new.started_ms - new.started_ms % 60000, new.action, 1, 0)
    on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
        actions_started = stats_journal.actions_started + excluded.actions_started;
end;

-- A later claim (only a claim raises the fencing token): a new attempt,
-- and an uncertain one when it took over a lease nobody settled, unless
-- the sweep counted that attempt already (swept_ms) or the previous
-- attempt failed (then the new one is simply started).
create trigger actions_journal_next_claim after update of fencing_token on actions
when new.fencing_token > old.fencing_token
begin
    insert into stats_journal
        (tenant_id, bucket_start_ms, action, actions_started, actions_uncertain, delay_le_ms)
    values (new.tenant_id, new.started_ms - new.started_ms % 60000, new.action, 1,
        case when new.state = 'uncertain' and old.swept_ms is null
                  and old.lease_until_ms is not null then 1 else 0 end,
        0)
    on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
        actions_started = stats_journal.actions_started + excluded.actions_started,
        actions_uncertain = stats_journal.actions_uncertain + excluded.actions_uncertain;
end;

-- An outcome under the holder's token: completed or failed, from started
-- or uncertain (complete, fail and reconcile; nothing else writes these).
create trigger actions_journal_outcome after update of state on actions
when new.state in ('completed', 'failed') and old.state in ('started', 'uncertain')
begin
    insert into stats_journal
        (tenant_id, bucket_start_ms, action, actions_completed, actions_failed, delay_le_ms)
    values (new.tenant_id, new.updated_ms - new.updated_ms % 60000, new.action,
        case when new.state = 'completed' then 1 else 0 end,
        case when new.state = 'failed' then 1 else 0 end,
        0)
    on conflict (tenant_id, bucket_start_ms, action, delay_le_ms) do update set
        actions_completed = stats_journal.actions_completed + excluded.actions_completed,
        actions_failed = stats_journal.actions_failed + excluded.actions_failed;
end;
