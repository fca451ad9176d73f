//! The MCP gateway's counts.

use super::common::{queries, R};
use crate::model::Millis;

/// One tool's count of one outcome.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct McpCallRow {
    pub tool: String,
    pub outcome: String,
    pub n: i64,
}

queries! {
    statements in mcp;
    /// The MCP count queries, one per statement, each with its signature;
    /// [`queries!`] implements them for both backends' connections.
    pub(crate) trait McpQueries {
        fn count_mcp_call(c, tenant: &str, bucket: Millis, tool: &str, outcome: &str) -> R<()> {
            sqlx::query::<Db>(q::COUNT_MCP_CALL)
                .bind(tenant)
                .bind(bucket)
                .bind(tool)
                .bind(outcome)
                .execute(&mut *c)
                .await
                .map(|_| ())
        }

        fn mcp_calls(c, tenant: &str, from: Millis, to: Millis) -> R<Vec<McpCallRow>> {
            sqlx::query_as::<Db, McpCallRow>(q::MCP_CALLS)
                .bind(tenant)
                .bind(from)
                .bind(to)
                .fetch_all(&mut *c)
                .await
        }

        fn admin_mcp_calls(c) -> R<Vec<McpCallRow>> {
            sqlx::query_as::<Db, McpCallRow>(q::ADMIN_MCP_CALLS)
                .fetch_all(&mut *c)
                .await
        }
    }
}
