-- Calculator scenarios saved from the dashboard, served at /s/{scenario_id}
-- so contract prices need not travel in a URL. The id is derived from the
-- scenario's canonical query and its name, and rows are only ever inserted
-- (never updated): a saved link shows what was saved, forever, and saving
-- the same scenario again lands on the same row.
create table scenarios (
    tenant_id text not null,
    scenario_id text not null,
    name text not null,
    query text not null,
    created_ms integer not null,
    primary key (tenant_id, scenario_id)
) without rowid;
