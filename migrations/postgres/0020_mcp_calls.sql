-- What the MCP gateway's guarded tools did, counted per tenant, hour, tool
-- and outcome (executed, replayed, uncertain, in_flight, refused, failed;
-- and diverged, counted beside the outcome of a call whose arguments
-- differed from the frozen intent's). One upsert per call; the monitor,
-- /v1/stats and /metrics read the sums. Rows are few (tools x outcomes x
-- hours) and small.
create table mcp_calls (
    tenant_id text not null,
    bucket_start_ms bigint not null,
    tool text not null,
    outcome text not null,
    n bigint not null,
    primary key (tenant_id, bucket_start_ms, tool, outcome)
);
