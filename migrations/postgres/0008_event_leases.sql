-- Events are claimed with a lease (POST /v1/events/{source}/{event_id}): a
-- consumer that dies between its claim and its effect no longer loses the
-- event, because after the lease the next delivery claims it again. Rows
-- written before, and by the library's same-transaction consume_once, are
-- completed marks.
alter table consumed_events add column state text not null default 'completed'
    check (state in ('leased', 'completed', 'failed', 'released'));
alter table consumed_events add column token bigint not null default 0;
alter table consumed_events add column attempts integer not null default 1;
alter table consumed_events add column lease_until_ms bigint;
alter table consumed_events add column prev_state text;
alter table consumed_events add column updated_ms bigint;
