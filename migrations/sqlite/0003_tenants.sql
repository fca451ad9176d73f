-- Tenants and their API tokens (the HTTP API's bearer tokens).
-- A token names its tenant (idem_<hex tenant>_<hex secret>), so looking it
-- up filters on tenant_id like every other statement and stays on one shard.
-- Only the SHA-256 of the token is stored: its secret part is 256 random
-- bits, so a slow password hash would add latency and no protection.
create table tenants (
    tenant_id text primary key not null,
    name text not null,
    created_ms integer not null
) without rowid;

create table api_tokens (
    tenant_id text not null references tenants (tenant_id),
    token_hash text not null,
    created_ms integer not null,
    revoked_ms integer,
    primary key (tenant_id, token_hash)
) without rowid;
