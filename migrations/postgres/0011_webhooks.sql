-- Webhook endpoints and the relay's deliveries (issue 16): the outbox is
-- delivered as Standard Webhooks.
--
-- An endpoint a tenant registered (`idem webhook add`). events is a
-- comma-separated list of topics, or '*' for every topic. secret is the
-- signing key, base64 (shown once as whsec_…): kept in clear because the
-- relay signs with it, as a receiver verifies with it.
create table webhook_endpoints (
    tenant_id text not null,
    endpoint_id text not null,
    url text not null,
    events text not null,
    secret text not null,
    created_ms bigint not null,
    primary key (tenant_id, endpoint_id)
);

-- One outbox message for one endpoint. The relay fans an outbox row out to
-- the matching endpoints in one transaction (and marks it sent there), so
-- each pair exists once; the message's topic and payload are copied, so the
-- outbox row's retention never cuts a delivery short. A claim sets
-- lease_until_ms and bumps attempts (the fencing token of the attempt); an
-- outcome is written only under the attempt that claimed it. state:
-- 'pending' (waiting, in flight or retrying), 'delivered' (a 2xx came
-- back), 'dead' (dead-lettered after the give-up time).
create table webhook_deliveries (
    tenant_id text not null,
    outbox_id bigint not null,
    endpoint_id text not null,
    topic text not null,
    payload text not null,
    created_ms bigint not null,
    state text not null check (state in ('pending', 'delivered', 'dead')),
    attempts integer not null default 0,
    next_attempt_ms bigint not null,
    lease_until_ms bigint,
    last_status integer,
    last_error text,
    updated_ms bigint not null,
    primary key (tenant_id, outbox_id, endpoint_id)
);
-- The relay's claim reads only due pending rows of one endpoint; delivered
-- and dead rows are nearly all of the table and leave this index.
create index webhook_deliveries_due on webhook_deliveries (tenant_id, endpoint_id, next_attempt_ms)
    where state = 'pending';
-- Retention removes settled deliveries by age.
create index webhook_deliveries_settled on webhook_deliveries (tenant_id, updated_ms)
    where state <> 'pending';
