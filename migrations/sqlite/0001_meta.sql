-- Facts about this database itself (when it was created, by which idem).
-- Kept apart from tenant data: it is the one table without a tenant_id.
create table idem_meta (
    name text primary key not null,
    value text not null
) without rowid;
