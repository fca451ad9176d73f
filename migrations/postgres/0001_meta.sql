-- Facts about this database itself (when it was created, by which idem).
-- Kept apart from tenant data: it is the one table without a tenant_id, and
-- under a distributed Postgres it becomes a reference table.
create table idem_meta (
    name text primary key,
    value text not null
);
