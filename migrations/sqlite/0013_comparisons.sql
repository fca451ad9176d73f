-- Comparisons saved from the dashboard (issue 18), served at /c/{comparison_id}
-- so a side-by-side of several scenarios travels as one short link. query
-- is the comparison's own query (s=...&s=..., saved ids or canonical
-- scenario queries, in column order). Like saved scenarios, the id is
-- derived from the content and rows are only ever inserted: a saved link
-- shows what was saved, forever.
create table comparisons (
    tenant_id text not null,
    comparison_id text not null,
    name text not null,
    query text not null,
    created_ms integer not null,
    primary key (tenant_id, comparison_id)
) without rowid;
