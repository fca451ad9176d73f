-- Alerts: per tenant, a threshold on one of the monitor's numbers, held
-- for a while before it fires (`idem alert add`). `idem serve` evaluates
-- them; a change to firing or back is written in the same transaction as
-- the webhook delivery that announces it, which the outbox relay sends.
create table alerts (
    tenant_id text not null,
    alert_id text not null,
    metric text not null check (metric in ('uncertain_now', 'duplicate_rate_pct', 'divergences')),
    -- The threshold as exact decimal text: a rate of 2.5 stays 2.5.
    above text not null,
    -- How long the number must stay above it before the alert fires.
    for_ms bigint not null check (for_ms >= 0),
    -- The window rates and counts are measured over (uncertain_now is an
    -- instant and ignores it).
    window_ms bigint not null check (window_ms > 0),
    endpoint_id text not null,
    -- ok, pending (above, not yet for long enough) or firing.
    state text not null check (state in ('ok', 'pending', 'firing')),
    -- When the number went above the threshold (pending, firing).
    since_ms bigint,
    last_value text,
    evaluated_ms bigint,
    created_ms bigint not null,
    primary key (tenant_id, alert_id)
);
