-- A tenant can be disabled (`idem tenant disable`): every token of it is
-- then refused with a problem type that says so, while its data stays and
-- the admin still sees its unsettled actions. Null: enabled.
alter table tenants add column disabled_ms bigint;

-- api_tokens.revoked_ms (0003) is the instant a token stops working: a
-- rotation with a grace period sets it in the future, so the old token
-- keeps working until then and the lookup compares it with the clock.

-- The live monitor's login sessions. The cookie carries a random session
-- id, never a token, and only the id's SHA-256 is kept here. A session
-- opened with a tenant's token names that token's hash and lives only while
-- the token does (rotating or disabling ends it too); one opened with the
-- admin token names the admin token's digest, so starting idem with a new
-- admin token ends every old admin session. Keyed by tenant like every
-- table: the admin's rows go under '_admin', a name no tenant can take.
create table live_sessions (
    tenant_id text not null,
    session_hash text not null,
    token_hash text not null,
    created_ms bigint not null,
    expires_ms bigint not null,
    revoked_ms bigint,
    primary key (tenant_id, session_hash)
);
