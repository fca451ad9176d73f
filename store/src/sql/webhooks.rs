//! The outbox's and the webhook relay's statements.

statements! {
    HERE;

    /// Marks one outbox message as sent.
    pub const OUTBOX_MARK_SENT: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and id = $2 and sent_ms is null";

    /// Registers a webhook endpoint.
    pub const INSERT_WEBHOOK_ENDPOINT: &str = "\
insert into webhook_endpoints (tenant_id, endpoint_id, url, events, secret, created_ms)
values ($1, $2, $3, $4, $5, $6)";

    /// A tenant's endpoints, oldest first (the relay reads them each round).
    pub const LIST_WEBHOOK_ENDPOINTS: &str = "\
select endpoint_id, url, events, secret, created_ms
from webhook_endpoints
where tenant_id = $1
order by created_ms, endpoint_id";

    /// Removes an endpoint.
    pub const DELETE_WEBHOOK_ENDPOINT: &str = "\
delete from webhook_endpoints
where tenant_id = $1 and endpoint_id = $2";

    /// Drops a removed endpoint's deliveries still waiting: nobody is there
    /// to receive them (settled ones stay for the record until retention).
    pub const DELETE_ENDPOINT_PENDING: &str = "\
delete from webhook_deliveries
where tenant_id = $1 and endpoint_id = $2 and state = 'pending'";

    /// Fans one outbox message out to one endpoint, due now. The primary key
    /// makes a second fan-out of the same message a no-op.
    pub const INSERT_WEBHOOK_DELIVERY: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
values ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7)
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

    /// Records a 2xx, under the attempt that claimed the delivery.
    pub const WEBHOOK_DELIVERED: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $5, last_error = null,
    updated_ms = $6
where tenant_id = $1 and outbox_id = $2 and endpoint_id = $3 and attempts = $4
    and state = 'pending'";

    /// Records a failed attempt: the next one's time, or 'dead' ($8) when
    /// the give-up time has passed; under the attempt that claimed it.
    pub const WEBHOOK_FAILED: &str = "\
update webhook_deliveries
set state = $8, lease_until_ms = null, next_attempt_ms = $5, last_status = $6,
    last_error = $7, updated_ms = $9
where tenant_id = $1 and outbox_id = $2 and endpoint_id = $3 and attempts = $4
    and state = 'pending'";

    /// A tenant's deliveries by state for the live monitor: pending ones
    /// split by whether an attempt failed, with the oldest waiting message.
    pub const LIVE_WEBHOOKS: &str = "\
select state, last_status is not null or last_error is not null as failed_before,
    count(*) as n, min(created_ms) as oldest_ms
from webhook_deliveries
where tenant_id = $1
group by state, last_status is not null or last_error is not null";
}

statements! {
    ADMIN;

    /// Admin: the tenants with webhook endpoints (the relay visits them).
    pub const WEBHOOK_TENANTS: &str = tenants_sql!("webhook_endpoints");

    /// Admin: deliveries of every tenant by state (the `/metrics` gauges, made
    /// only when Prometheus scrapes), as [`shared::LIVE_WEBHOOKS`] splits them.
    pub const ADMIN_WEBHOOKS: &str = "\
select state, last_status is not null or last_error is not null as failed_before,
    count(*) as n, min(created_ms) as oldest_ms
from webhook_deliveries
group by state, last_status is not null or last_error is not null";
}

/// What PostgreSQL runs: the statements above, and its own text where its
/// dialect needs one.
pub mod pg {
    pub use super::*;
    statements! {
        HERE;

        /// Queues an outbox message; the identity column numbers it.
        pub const OUTBOX_INSERT: &str = "\
insert into outbox (tenant_id, topic, payload, created_ms)
values ($1, $2, $3, $4)
returning id";

        /// Claims an endpoint's due deliveries for one relay: a lease, and the
        /// attempt number as its fencing token. SKIP LOCKED lets several relays
        /// share the queue without waiting, and the lease condition, checked
        /// again on each row once locked, keeps any two from claiming one
        /// delivery at once. The pick is a CTE so it runs once, and the update
        /// finds its rows by primary key (`= any(array(…))`): as an `in`
        /// subquery, a table whose statistics lag behind its growth was planned
        /// as a scan of every delivery of the endpoint (70 ms at 10,000).
        pub const WEBHOOK_CLAIM: &str = "\
with picked as (
    select outbox_id from webhook_deliveries
    where tenant_id = $1 and endpoint_id = $2 and state = 'pending' and next_attempt_ms <= $3
        and (lease_until_ms is null or lease_until_ms <= $3)
    order by next_attempt_ms
    limit $5
    for update skip locked)
update webhook_deliveries
set lease_until_ms = $4, attempts = attempts + 1, updated_ms = $3
where tenant_id = $1 and outbox_id = any(array(select outbox_id from picked)) and endpoint_id = $2
returning outbox_id, topic, payload, created_ms, attempts";

        /// Fans a batch of outbox messages out in one statement: $2 is a JSON
        /// array of `{"o": outbox id, "e": endpoint id}`, one per delivery, and
        /// the topic and payload are copied from the message row. One statement
        /// per batch, not two per message: on SQLite every statement inside
        /// the fan-out's transaction held the write lock the API waits for.
        pub const WEBHOOK_FAN_OUT: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
select $1, m.id, p.e, m.topic, m.payload, m.created_ms, 'pending', 0, $3, $3
from outbox as m, jsonb_to_recordset(cast($2 as jsonb)) as p(o bigint, e text)
where tenant_id = $1 and m.id = p.o
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

        /// Marks a batch of outbox messages sent ($2: a JSON array of ids).
        pub const OUTBOX_MARK_SENT_MANY: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and sent_ms is null
    and id = any(array(select cast(jsonb_array_elements_text(cast($2 as jsonb)) as bigint)))";

        /// Records a batch of 2xx outcomes that got one status ($3), each
        /// under the attempt that claimed it, in one statement ($2: a JSON
        /// array of `{"o": outbox id, "e": endpoint id, "a": attempt}`). The
        /// `= any(array(…))` makes it probe the primary key per outbox id (as
        /// an `in` subquery alone it may hash-join a scan of the table); the
        /// row comparison then keeps only each claim's own attempt.
        pub const WEBHOOK_DELIVERED_MANY: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $3, last_error = null,
    updated_ms = $4
where tenant_id = $1 and state = 'pending'
    and outbox_id = any(array(select cast(x ->> 'o' as bigint) from jsonb_array_elements(cast($2 as jsonb)) as x))
    and (outbox_id, endpoint_id, attempts) in (
        select o, e, a from jsonb_to_recordset(cast($2 as jsonb)) as p(o bigint, e text, a int))";

        /// Pending messages for one relay. SKIP LOCKED lets several relays share
        /// the queue: each takes rows the others have not locked.
        pub const OUTBOX_FETCH: &str = "\
select id, topic, payload, created_ms
from outbox
where tenant_id = $1 and sent_ms is null
order by id
limit $2
for update skip locked";
    }
}

/// What SQLite runs: the statements above, and its own text where its
/// dialect needs one.
pub mod sqlite {
    pub use super::*;
    statements! {
        HERE;

        /// Queues an outbox message. SQLite has one writer at a time, so max + 1
        /// inside the insert is race-free; the floor at now x 1000 keeps ids
        /// growing after a purge emptied the table.
        pub const OUTBOX_INSERT: &str = "\
insert into outbox (tenant_id, id, topic, payload, created_ms)
values ($1,
    (select max(coalesce(max(id), 0) + 1, $4 * 1000) from outbox where tenant_id = $1),
    $2, $3, $4)
returning id";

        /// Claims an endpoint's due deliveries (see the PostgreSQL one). SQLite
        /// runs one writer at a time, so no two relays claim one delivery.
        pub const WEBHOOK_CLAIM: &str = "\
with picked as (
    select outbox_id from webhook_deliveries
    where tenant_id = $1 and endpoint_id = $2 and state = 'pending' and next_attempt_ms <= $3
        and (lease_until_ms is null or lease_until_ms <= $3)
    order by next_attempt_ms
    limit $5)
update webhook_deliveries
set lease_until_ms = $4, attempts = attempts + 1, updated_ms = $3
where tenant_id = $1 and endpoint_id = $2 and outbox_id in (select outbox_id from picked)
returning outbox_id, topic, payload, created_ms, attempts";

        /// Fans a batch of outbox messages out in one statement (see the
        /// PostgreSQL one). The select has a where clause, as SQLite's upsert
        /// after an insert-select needs to parse.
        pub const WEBHOOK_FAN_OUT: &str = "\
insert into webhook_deliveries
    (tenant_id, outbox_id, endpoint_id, topic, payload, created_ms, state, attempts,
     next_attempt_ms, updated_ms)
select $1, m.id, p.e, m.topic, m.payload, m.created_ms, 'pending', 0, $3, $3
from (select json_extract(value, '$.o') as o, json_extract(value, '$.e') as e
      from json_each($2)) as p
    -- CROSS JOIN keeps the batch as the outer loop: each message found by
    -- its primary key, not the tenant's whole outbox scanned per pair.
    cross join outbox as m
where tenant_id = $1 and m.id = p.o
on conflict (tenant_id, outbox_id, endpoint_id) do nothing";

        /// Marks a batch of outbox messages sent ($2: a JSON array of ids).
        pub const OUTBOX_MARK_SENT_MANY: &str = "\
update outbox set sent_ms = $3
where tenant_id = $1 and sent_ms is null and id in (select value from json_each($2))";

        /// Records a batch of 2xx outcomes that got one status in one
        /// statement (see the PostgreSQL one); the row-value `in` probes the
        /// primary key.
        pub const WEBHOOK_DELIVERED_MANY: &str = "\
update webhook_deliveries
set state = 'delivered', lease_until_ms = null, last_status = $3, last_error = null,
    updated_ms = $4
where tenant_id = $1 and state = 'pending' and (outbox_id, endpoint_id, attempts) in (
    select json_extract(value, '$.o'), json_extract(value, '$.e'), json_extract(value, '$.a')
    from json_each($2))";

        /// Pending messages for the relay. SQLite has no row locks; one writer at
        /// a time and at-least-once delivery make a second relay harmless.
        pub const OUTBOX_FETCH: &str = "\
select id, topic, payload, created_ms
from outbox
where tenant_id = $1 and sent_ms is null
order by id
limit $2";
    }
}
