//! `GET /v1/stats`: the tenant's live statistics.

use crate::error::ApiError;
use crate::extract::{ApiQuery, Tenant};
use crate::state::ApiState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use idem_store::stats::Granularity;
use serde::Deserialize;
use utoipa::IntoParams;

/// `GET /v1/stats` query.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsQuery {
    /// `minute`, `hour` (default) or `day`.
    #[param(value_type = Option<String>, pattern = "^(minute|hour|day)$")]
    pub granularity: Option<Granularity>,
    /// Range start, ms since the epoch (default: 24 hours before `to_ms`).
    #[param(minimum = 0)]
    pub from_ms: Option<i64>,
    /// Range end, exclusive (default: now).
    #[param(minimum = 1)]
    pub to_ms: Option<i64>,
}

/// The most buckets one report may span.
const MAX_BUCKETS: i64 = 10_000;

/// The live statistics of the token's tenant.
#[utoipa::path(get, path = "/v1/stats", tag = "stats", params(StatsQuery),
    responses(
        (status = 200, description = "Counters per bucket and action, totals, redelivery delays and the duplicate rate", body = Object),
        (status = 400, description = "Malformed query", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Empty or too long a range", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn stats(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiQuery(q): ApiQuery<StatsQuery>,
) -> Result<Response, ApiError> {
    let g = q.granularity.unwrap_or(Granularity::Hour);
    let to = q.to_ms.unwrap_or_else(|| state.store.now_ms() + 1);
    let from = q.from_ms.unwrap_or(to.saturating_sub(24 * 3_600_000));
    if from >= to || from < 0 {
        return Err(ApiError::unprocessable(
            "from_ms must be non-negative and before to_ms",
        ));
    }
    if (to - from) / g.width_ms() > MAX_BUCKETS {
        return Err(ApiError::unprocessable(format!(
            "the range spans more than {MAX_BUCKETS} {} buckets: narrow it or use a coarser granularity",
            g.as_str()
        )));
    }
    let report = state.store.stats(&tenant, g, from, to).await?;
    let now = state.store.now_ms();
    let live = state
        .store
        .session()
        .await?
        .live_actions(&tenant, now, 0)
        .await?;
    let mcp_tools = state
        .store
        .session()
        .await?
        .mcp_calls(&tenant, from, to)
        .await?;
    Ok(Json(StatsResponse {
        report,
        uncertain_now: live.uncertain,
        mcp_tools,
    })
    .into_response())
}

/// The report and what is uncertain now.
#[derive(serde::Serialize)]
struct StatsResponse {
    #[serde(flatten)]
    report: idem_store::stats::Report,
    /// Actions whose outcome is unknown now, whatever the range: marked
    /// uncertain, or started with a lease that has run out. The one
    /// definition `/live`, the alerts and `/metrics` use;
    /// `totals.actions_uncertain` counts transitions once recorded.
    uncertain_now: i64,
    /// The MCP gateway's guarded tools over the range (whole hours), per
    /// tool: calls, executions, replays, divergences, uncertain, in_flight,
    /// refused, failed. Empty when no gateway called any.
    mcp_tools: Vec<idem_store::McpToolCounts>,
}
