-- The live monitor lists a tenant's uncertain actions, newest first, on
-- every refresh. Uncertain rows are few (they wait for reconciliation), so
-- a partial index keeps that read small however large the table grows.
create index actions_uncertain on actions (tenant_id, updated_ms) where state = 'uncertain';
