-- The conformance fixture's POST /echo writes one row per execution (issue
-- 16), so that it commits once like a real handler: measured behind the
-- Idempotency-Key layer and without it, the layer's own cost is its commits
-- set against the handler's one, not against a handler that touches no
-- database. Only `idem serve --conformance-fixture` writes here (tenant
-- _conformance). id is the rowid, numbered by SQLite.
create table fixture_echoes (
    tenant_id text not null,
    id integer primary key,
    bytes integer not null,
    created_ms integer not null
);
