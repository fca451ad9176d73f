//! The numbers: one read of the statistics rollups and the actions table
//! per viewer and query, shared by identical refreshes for half a second.

use super::access::Viewer;
use super::data::{
    Counts, DuplicateRate, LiveData, LiveHorizon, LivePoint, LiveRow, LiveUncertain,
    LiveUnresolved, Window,
};
use super::params::LiveQuery;
use super::{data, MAX_TENANTS, PARALLEL_READS, SHARE_FOR, UNCERTAIN_LISTED};
use crate::http::live::state::LiveState;
use futures_util::StreamExt;
use idem_api::error::{ApiError, Problem};
use idem_core::TenantId;
use idem_store::stats::Granularity;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The tenants a viewer sees for a query; a tenant asking for another is
/// refused (403), never shown an empty page that would hint either way.
pub(super) async fn scope(
    state: &LiveState,
    viewer: &Viewer,
    q: &LiveQuery,
) -> Result<Vec<TenantId>, ApiError> {
    match (viewer, &q.tenant) {
        (Viewer::Tenant(own), Some(asked)) if asked != own.as_str() => Err(ApiError::forbidden(
            Problem::OtherTenant,
            "this token sees only its own tenant: drop the tenant parameter or ask for your own",
        )),
        (Viewer::Tenant(own), _) => Ok(vec![own.clone()]),
        (Viewer::Admin, Some(t)) => Ok(vec![TenantId::try_from(t.as_str())
            .map_err(|e| ApiError::unprocessable(format!("tenant: {e}")))?]),
        (Viewer::Admin, None) => every_tenant(state).await,
    }
}

/// Every tenant an admin sees (the dashboard's own tenant left out), at
/// most [`MAX_TENANTS`].
pub(super) async fn every_tenant(state: &LiveState) -> Result<Vec<TenantId>, ApiError> {
    let mut all = state.api.store.tenants().await?;
    all.retain(|t| t.as_str() != crate::http::saved::SCENARIO_TENANT);
    all.truncate(MAX_TENANTS);
    Ok(all)
}

/// Reads the numbers (or reuses a read younger than [`SHARE_FOR`]).
pub async fn snapshot(
    state: &LiveState,
    viewer: &Viewer,
    q: &LiveQuery,
) -> Result<Arc<LiveData>, ApiError> {
    let tenants = scope(state, viewer, q).await?;
    // The asked tenant is part of the key: with one tenant, "all" and that
    // tenant read the same rows but render different controls.
    let cache_key = format!(
        "{}|{}|{}|{}",
        matches!(viewer, Viewer::Admin),
        q.window.as_str(),
        q.tenant.as_deref().unwrap_or(""),
        tenants
            .iter()
            .map(TenantId::as_str)
            .collect::<Vec<_>>()
            .join(",")
    );
    // Fresh while both clocks say so: the wall clock (identical refreshes
    // within half a second share a read) and the store's, which decides
    // when a lease runs out (a store clock moved forward, as tests move it,
    // makes the shared read stale at once).
    let share_ms = i64::try_from(SHARE_FOR.as_millis()).unwrap_or(i64::MAX);
    let store_now = state.api.store.now_ms();
    if let Some((at, data)) = lock(&state.cache).get(&cache_key) {
        let age_ms = store_now - data.generated_ms;
        if at.elapsed() < SHARE_FOR && (0..share_ms).contains(&age_ms) {
            return Ok(data.clone());
        }
    }
    let mut data = read(state, &tenants, q.window).await?;
    data.admin = matches!(viewer, Viewer::Admin);
    data.tenant = q.tenant.clone();
    // Filtered to one tenant, the select still offers the others.
    if data.admin && q.tenant.is_some() {
        data.tenant_choices = every_tenant(state)
            .await?
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
    }
    let data = Arc::new(data);
    let mut cache = lock(&state.cache);
    cache.retain(|_, (at, _)| at.elapsed() < SHARE_FOR);
    cache.insert(cache_key, (Instant::now(), data.clone()));
    Ok(data)
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[tracing::instrument(skip_all, fields(tenants = tenants.len(), window = window.as_str()))]
pub(super) async fn read(
    state: &LiveState,
    tenants: &[TenantId],
    window: Window,
) -> Result<LiveData, ApiError> {
    let store = &state.api.store;
    let catalog = state.api.catalog.clone();
    let now = store.now_ms();
    let granularity = match window {
        Window::Hour => Granularity::Minute,
        Window::Day | Window::Week => Granularity::Hour,
        Window::Month => Granularity::Day,
    };
    let bucket = window.bucket_ms();
    let to = now + 1;
    let from = granularity.floor(now - window.len_ms() + bucket);
    let mut data = LiveData {
        generated_ms: now,
        window,
        from_ms: from,
        to_ms: to,
        bucket_ms: bucket,
        tenants: tenants.iter().map(|t| t.as_str().to_owned()).collect(),
        ..LiveData::default()
    };
    let mut series: BTreeMap<i64, LivePoint> = BTreeMap::new();
    let mut start = from;
    while start < to {
        series.insert(
            start,
            LivePoint {
                start_ms: start,
                ..LivePoint::default()
            },
        );
        start += bucket;
    }
    let mut max_delay: Option<i64> = None;
    let mut p99: Option<i64> = None;
    let mut retention: Option<i64> = None;
    // One fold of the statistics journal, then every tenant read on a
    // connection of its own, a few at a time.
    store.flush_stats().await?;
    let reads = futures_util::stream::iter(tenants.iter().cloned())
        .map(|tenant| async move {
            let mut s = store.session().await?;
            let report = s.stats(&tenant, granularity, from, to).await?;
            let live = s.live_actions(&tenant, now, UNCERTAIN_LISTED).await?;
            let retention = s.retention(&tenant).await?;
            let webhooks = s.webhook_counts(&tenant).await?;
            let alerts = s.alerts(&tenant).await?;
            let mcp = s.mcp_calls(&tenant, from, to).await?;
            Ok::<_, idem_store::Error>((tenant, report, live, retention, webhooks, alerts, mcp))
        })
        .buffered(PARALLEL_READS)
        .collect::<Vec<_>>()
        .await;
    for read in reads {
        let (tenant, report, live, r, webhooks, alerts, mcp) = read?;
        data.mcp_tools
            .extend(mcp.into_iter().map(|counts| data::LiveMcpTool {
                tenant: tenant.as_str().to_owned(),
                counts,
            }));
        data.alerts_firing.extend(
            alerts
                .into_iter()
                .filter(|a| a.state == idem_store::AlertState::Firing)
                .map(|a| data::LiveAlert {
                    tenant: tenant.as_str().to_owned(),
                    alert_id: a.alert_id,
                    metric: a.metric,
                    above: a.above,
                    value: a.last_value,
                    since_ms: a.since_ms,
                }),
        );
        data.webhooks.add(&webhooks, now);
        let mut per_action: BTreeMap<String, Counts> = BTreeMap::new();
        for b in &report.buckets {
            let c = b.counts.clone();
            per_action.entry(b.action.clone()).or_default().add(&c);
            if let Some(p) = series.get_mut(&b.start_ms) {
                p.deliveries += c.deliveries;
                p.redeliveries += c.redeliveries;
                p.intents += c.intents;
                p.redelivered_intents += c.redelivered_intents;
            }
        }
        // An action with unknown outcomes gets its row even when the window
        // saw no traffic for it: the table lists what needs a look.
        for (action, _) in &live.uncertain_by_action {
            per_action.entry(action.clone()).or_default();
        }
        for (action, c) in per_action {
            data.totals.add(&c);
            let uncertain_now = live
                .uncertain_by_action
                .iter()
                .find(|(a, _)| *a == action)
                .map_or(0, |(_, n)| *n);
            data.rows.push(LiveRow {
                tenant: tenant.as_str().to_owned(),
                action,
                counts: c,
                uncertain_now,
            });
        }
        data.horizon.measured += report.delay.count;
        max_delay = max_delay.max(report.delay.max_ms);
        p99 = p99.max(report.delay.p99_ms);
        retention = Some(retention.map_or(r.intent_ms, |x: i64| x.min(r.intent_ms)));
        data.in_flight += live.in_flight;
        data.uncertain += live.uncertain;
        if live.unresolved > 0 {
            data.unresolved.push(LiveUnresolved {
                tenant: tenant.as_str().to_owned(),
                count: live.unresolved,
                oldest_started_ms: live.oldest_unresolved_ms,
                oldest_age_ms: live.oldest_unresolved_ms.map(|t| (now - t).max(0)),
            });
        }
        data.uncertain_keys.extend(
            live.uncertain_keys
                .into_iter()
                .map(|u| LiveUncertain::new(tenant.as_str(), u, &catalog, now)),
        );
    }
    data.uncertain_keys
        .sort_by_key(|u| std::cmp::Reverse(u.lease_until_ms.unwrap_or(u.started_ms)));
    data.uncertain_keys.truncate(UNCERTAIN_LISTED as usize);
    data.series = series.into_values().collect();
    data.horizon = LiveHorizon {
        measured: data.horizon.measured,
        p99_ms: p99,
        max_ms: max_delay,
        retention_ms: retention,
        warning: matches!((retention, max_delay), (Some(r), Some(m)) if r < m.saturating_mul(2)),
    };
    data.duplicate_rate_pct = data
        .totals
        .duplicate_rate_pct()
        .map(idem_core::scenario::canonical);
    // Conversations are business intents only: the HTTP-key counters and
    // the lease sweeps' bucket are not conversations.
    let mut business = Counts::default();
    for r in data
        .rows
        .iter()
        .filter(|r| data::is_conversation_action(&r.action))
    {
        business.add(&r.counts);
    }
    // The tenant the numbers are from, when one alone is in view (asked
    // for, or a tenant's own token, which sees only itself).
    let scope = match tenants {
        [one] => Some(one.as_str()),
        _ => None,
    };
    data.use_numbers = data::use_numbers_href(window, &business, scope, None);
    Ok(data)
}
