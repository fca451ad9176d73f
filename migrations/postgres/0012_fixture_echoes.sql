-- The conformance fixture's POST /echo writes one row per execution (issue
-- 16), so that it commits once like a real handler: measured behind the
-- Idempotency-Key layer and without it, the layer's own cost is its commits
-- set against the handler's one, not against a handler that touches no
-- database. Insert-only: concurrent echoes never wait on one another. Only
-- `idem serve --conformance-fixture` writes here (tenant _conformance).
create table fixture_echoes (
    tenant_id text not null,
    id bigint generated always as identity,
    bytes bigint not null,
    created_ms bigint not null,
    primary key (tenant_id, id)
);
