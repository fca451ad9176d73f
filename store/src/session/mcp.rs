//! The MCP gateway's counts: one upsert per guarded call, read per tenant
//! for the monitor and `/v1/stats`.

use super::*;

/// The width of a count's bucket: one hour.
const BUCKET_MS: Millis = 3_600_000;

impl Session {
    /// Counts one guarded call of `tool` as `outcome`, and a divergence
    /// beside it when its arguments differed from the frozen intent's.
    pub async fn count_mcp_call(
        &mut self,
        tenant: &TenantId,
        tool: &str,
        outcome: CallCount,
        diverged: bool,
    ) -> Result<(), Error> {
        let now = self.now();
        let bucket = now - now.rem_euclid(BUCKET_MS);
        on!(self.count_mcp_call(tenant.as_str(), bucket, tool, outcome.as_str()))?;
        if diverged {
            on!(self.count_mcp_call(tenant.as_str(), bucket, tool, CallCount::Diverged.as_str()))?;
        }
        Ok(())
    }

    /// A tenant's counts per guarded tool, over the hours that start in
    /// `from..to` (ms since the epoch).
    pub async fn mcp_calls(
        &mut self,
        tenant: &TenantId,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<McpToolCounts>, Error> {
        let start = from - from.rem_euclid(BUCKET_MS);
        let rows = on!(self.mcp_calls(tenant.as_str(), start, to))?;
        Ok(McpToolCounts::from_rows(
            rows.into_iter().map(|r| (r.tool, r.outcome, r.n)),
        ))
    }

    /// Every tenant's counts per (tool, outcome), for `/metrics`.
    pub async fn admin_mcp_calls(&mut self) -> Result<Vec<(String, String, i64)>, Error> {
        let rows = on!(self.admin_mcp_calls())?;
        Ok(rows.into_iter().map(|r| (r.tool, r.outcome, r.n)).collect())
    }
}
