-- The demo payment provider's ledger (POST /v1/demo/charges): one row per
-- charge it really executed. Tests and the simulator count these rows to
-- prove that a retried request charged once. The handler writes its row in
-- the same transaction that completes the request's Idempotency-Key, so the
-- charge and the stored response commit or roll back together.
create table demo_charges (
    tenant_id text not null,
    charge_id text not null,
    amount_cents integer not null check (amount_cents > 0),
    currency text not null,
    customer text not null,
    created_ms integer not null,
    primary key (tenant_id, charge_id)
) without rowid;
