-- One HMAC secret per deployment. Every instance on a database must derive
-- the same key for the same intent, so the first instance records a check
-- value of its secret (an HMAC of a fixed label under it, never the secret)
-- and an instance started with another secret refuses to run. The row
-- lives under the reserved tenant `_deployment`, so the table keeps the
-- tenant-first key every table has.
create table deployment_checks (
    tenant_id text not null,
    name text not null,
    value text not null,
    created_ms bigint not null,
    primary key (tenant_id, name)
);
