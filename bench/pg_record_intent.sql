-- pgbench's side of the record_intent comparison: the same single
-- INSERT ... ON CONFLICT ... RETURNING statement idem runs, a new intent each
-- time (a random reference), on the same table.
\set r random(1, 2000000000)
insert into intents as i
    (tenant_id, reference, action, rules_version, idem_key, payload,
     deliveries, divergences, first_seen_ms, last_seen_ms)
values ('pgbench', 'ref-' || :r || '-' || :client_id, 'pix.cobranca', 1,
    '6a1f0c1d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29',
    '{"chave_pix_destino":"+5511988887777","cliente_id":"cli-1","referencia_intencao":"x","valor":"18000"}',
    1, 0, 1790000000000, 1790000000000)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms;
