//! The MCP gateway's counts: one row per tenant, hour, tool and outcome.

statements! {
    HERE;

    /// Counts one guarded call's outcome in its hour.
    pub const COUNT_MCP_CALL: &str = "\
insert into mcp_calls (tenant_id, bucket_start_ms, tool, outcome, n)
values ($1, $2, $3, $4, 1)
on conflict (tenant_id, bucket_start_ms, tool, outcome) do update set n = mcp_calls.n + 1";

    /// A tenant's counts over a range of hours, per tool and outcome.
    pub const MCP_CALLS: &str = "\
select tool, outcome, cast(sum(n) as bigint) as n from mcp_calls
where tenant_id = $1 and bucket_start_ms >= $2 and bucket_start_ms < $3
group by tool, outcome
order by tool, outcome";
}

statements! {
    ADMIN;

    /// Every tenant's counts together, per tool and outcome (`/metrics`).
    pub const ADMIN_MCP_CALLS: &str = "\
select tool, outcome, cast(sum(n) as bigint) as n from mcp_calls
group by tool, outcome
order by tool, outcome";
}

/// What PostgreSQL runs: the statements above.
pub mod pg {
    pub use super::*;
}

/// What SQLite runs: the statements above.
pub mod sqlite {
    pub use super::*;
}
