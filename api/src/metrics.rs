//! `/metrics`: Prometheus counters, in an explicit registry owned by the
//! application state (no global recorder, so tests can run many servers in
//! one process).

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use idem_store::{PurgeReport, Store, UnresolvedActions};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use tracing::Instrument as _;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route's pattern (`/v1/actions/{key}/begin`), never the raw path,
    /// so keys do not explode the series count.
    pub route: String,
    /// HTTP method.
    pub method: String,
    /// Status code.
    pub status: u16,
}

/// Labels of the request latency histogram: the route's pattern, the
/// method and the status class (`2xx`…), so a histogram's buckets are
/// kept per few series, never per status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LatencyLabels {
    /// The route's pattern, as [`RequestLabels::route`].
    pub route: String,
    /// HTTP method.
    pub method: String,
    /// `1xx` to `5xx`.
    pub class: &'static str,
}

pub use idem_mcp::timing::{latency_histogram, LATENCY_BUCKETS};

/// Labels of the store's operation times.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoreLabels {
    /// A query function's name (`begin_action`), or
    /// `connection_acquire`, `transaction_open`, `transaction_commit`, `transaction_rollback`,
    /// `record_intent_batch`: the store's own fixed names.
    pub op: &'static str,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
}

/// How long the store's operations took, by operation and backend; clones
/// share the histograms. The store reports to it ([`idem_store::Observer`]).
#[derive(Clone, Debug)]
pub struct StoreSeconds(pub Family<StoreLabels, Histogram, fn() -> Histogram>);

impl Default for StoreSeconds {
    fn default() -> Self {
        Self(Family::new_with_constructor(latency_histogram))
    }
}

impl idem_store::Observer for StoreSeconds {
    fn took(&self, op: &'static str, backend: idem_store::Backend, took: std::time::Duration) {
        self.0
            .get_or_create(&StoreLabels {
                op,
                backend: backend.as_str(),
            })
            .observe(took.as_secs_f64());
    }
}

/// Labels of the chore counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChoreLabels {
    /// `purge` or `alerts`.
    pub chore: &'static str,
    /// `led` (this instance held the chore's lease and ran it), `skipped`
    /// (another instance held it) or `failed` (the lease could not be read).
    pub outcome: &'static str,
}

/// Labels naming a table.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabels {
    /// The table.
    pub table: &'static str,
}

/// Labels of the intent counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    /// `first` or `redelivery`.
    pub delivery: &'static str,
}

/// The process's counters.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Requests by route, method and status.
    pub requests: Family<RequestLabels, Counter>,
    /// How long requests took to answer, by route, method and status
    /// class.
    pub request_seconds: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    /// Idempotency-Key replays served.
    pub replays: Counter,
    /// 409s: a request with the same key still running.
    pub in_progress: Counter,
    /// 422s: the same key with another request.
    pub mismatches: Counter,
    /// Intent deliveries, first or redelivered.
    pub deliveries: Family<DeliveryLabels, Counter>,
    /// Redeliveries whose candidate payload differed from the frozen one.
    pub divergences: Counter,
    /// Claims that took an action over from an expired lease.
    pub lease_takeovers: Counter,
    /// Actions found uncertain (outcome unknown) when claimed.
    pub uncertain: Counter,
    /// Rows removed by retention, by table.
    pub purged: Family<TableLabels, Counter>,
    /// Unsettled actions now, by state (read from the database at scrape).
    pub unresolved: Family<StateLabels, Gauge>,
    /// Age of the oldest unsettled action's attempt, in seconds.
    pub oldest_unresolved: Gauge,
    /// Webhook deliveries now (every tenant), by state.
    pub webhooks: Family<StateLabels, Gauge>,
    /// Periodic chore runs of this instance, by chore and outcome.
    pub chores: Family<ChoreLabels, Counter>,
    /// Guarded MCP tool calls, by tool and outcome (from the database).
    pub mcp_calls: Family<McpLabels, Counter>,
    /// The gateway's lookups of unknown outcomes, by lookup tool and
    /// verdict (from the database).
    pub mcp_lookups: Family<LookupLabels, Counter>,
    /// Age of the oldest webhook message still waiting (pending or retrying).
    pub oldest_webhook: Gauge,
    /// Whether this instance's store could write at its last readiness
    /// probe (1) or not (0).
    pub store_writable: Gauge,
    /// Whether each mounted MCP gateway's upstream answers (1) or is
    /// being started again (0).
    pub mcp_upstream_up: Family<GatewayLabels, Gauge>,
    /// The mounted gateways' guarded calls: their own time and their
    /// upstreams', by gateway and tool.
    pub mcp_times: idem_mcp::timing::GatewayTimes,
    /// The store's statements, transactions and batches, by operation and
    /// backend; hand it to the store as its observer.
    pub store_seconds: StoreSeconds,
}

/// Labels naming a mounted MCP gateway.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GatewayLabels {
    /// The mount's name (`--mcp-gateway NAME=FILE`).
    pub gateway: String,
}

/// Labels naming an unsettled action state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct McpLabels {
    /// The guarded upstream tool.
    pub tool: String,
    /// `executed`, `replayed`, `uncertain`, `in_flight`, `refused`,
    /// `failed`, or `diverged` (beside the call's outcome).
    pub outcome: String,
}

/// Labels of a lookup count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LookupLabels {
    /// The upstream tool asked.
    pub tool: String,
    /// `executed`, `not_executed` or `unknown`.
    pub verdict: String,
}

/// Labels of a state gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// `started`, `uncertain` or `failed_retryable`.
    pub state: &'static str,
}

/// The unsettled states `/metrics` always reports (zero when none).
const UNRESOLVED_STATES: [&str; 3] = ["started", "uncertain", "failed_retryable"];

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every counter registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("idem");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route, method and status",
            requests.clone(),
        );
        let request_seconds =
            Family::<LatencyLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival at the router to its response's head, by route, method and status class",
            request_seconds.clone(),
        );
        let replays = Counter::default();
        registry.register(
            "idempotency_replays",
            "Responses replayed for a repeated Idempotency-Key",
            replays.clone(),
        );
        let in_progress = Counter::default();
        registry.register(
            "idempotency_in_progress",
            "409 answers: the first request with the key was still running",
            in_progress.clone(),
        );
        let mismatches = Counter::default();
        registry.register(
            "idempotency_mismatches",
            "422 answers: the key was reused with a different request",
            mismatches.clone(),
        );
        let deliveries = Family::<DeliveryLabels, Counter>::default();
        registry.register(
            "intent_deliveries",
            "Intent deliveries recorded through the API",
            deliveries.clone(),
        );
        let divergences = Counter::default();
        registry.register(
            "intent_divergences",
            "Redeliveries whose payload differed from the frozen intent",
            divergences.clone(),
        );
        let lease_takeovers = Counter::default();
        registry.register(
            "action_lease_takeovers",
            "Claims that took an action over from an expired lease",
            lease_takeovers.clone(),
        );
        let uncertain = Counter::default();
        registry.register(
            "actions_uncertain",
            "Claims that found an attempt whose outcome is unknown",
            uncertain.clone(),
        );
        let purged = Family::<TableLabels, Counter>::default();
        registry.register(
            "purged_rows",
            "Rows removed by retention, by table",
            purged.clone(),
        );
        let unresolved = Family::<StateLabels, Gauge>::default();
        registry.register(
            "actions_unresolved",
            "Actions not settled now (every tenant), by state: retention keeps them until they are completed, failed for good or reconciled",
            unresolved.clone(),
        );
        let oldest_unresolved = Gauge::default();
        registry.register(
            "actions_oldest_unresolved_age_seconds",
            "Age of the oldest unsettled action's attempt",
            oldest_unresolved.clone(),
        );
        let webhooks = Family::<StateLabels, Gauge>::default();
        registry.register(
            "webhook_deliveries",
            "Outbox webhook deliveries now (every tenant), by state: pending, retrying, delivered, dead_lettered",
            webhooks.clone(),
        );
        let oldest_webhook = Gauge::default();
        registry.register(
            "webhook_oldest_pending_age_seconds",
            "Age of the oldest outbox message still waiting for delivery (pending or retrying)",
            oldest_webhook.clone(),
        );
        let mcp_calls = Family::<McpLabels, Counter>::default();
        registry.register(
            "mcp_calls",
            "Guarded MCP tool calls (every tenant, every gateway process, read from the database), by tool and outcome: executed, replayed, uncertain, in_flight, refused, failed; diverged counts calls whose arguments differed from the frozen intent's, beside their outcome",
            mcp_calls.clone(),
        );
        let mcp_lookups = Family::<LookupLabels, Counter>::default();
        registry.register(
            "mcp_lookups",
            "Lookups the MCP gateway made to settle an unknown outcome (on_uncertain = \"lookup\"; every tenant and gateway, read from the database), by lookup tool and verdict: executed, not_executed, unknown",
            mcp_lookups.clone(),
        );
        let store_writable = Gauge::default();
        registry.register(
            "store_writable",
            "Whether this instance's store could write at its last readiness probe (1) or not (0); the reason is in the log",
            store_writable.clone(),
        );
        let mcp_upstream_up = Family::<GatewayLabels, Gauge>::default();
        registry.register(
            "mcp_upstream_up",
            "Whether each mounted MCP gateway's upstream answers (1) or is being started again (0); /readyz/mcp says the same",
            mcp_upstream_up.clone(),
        );
        let mcp_times = idem_mcp::timing::GatewayTimes::default();
        registry.register(
            "mcp_gateway_own_seconds",
            "A mounted MCP gateway's own time per guarded call (recording, claiming, storing, answering: the call's time less the upstream's), by gateway and tool",
            mcp_times.own.clone(),
        );
        registry.register(
            "mcp_upstream_seconds",
            "A mounted MCP gateway's upstream's time per guarded call that asked it (the tool call, and a lookup's), by gateway and tool",
            mcp_times.upstream.clone(),
        );
        let store_seconds = StoreSeconds::default();
        registry.register(
            "store_operation_seconds",
            "Time of the store's work by operation and backend: each statement by its query's name, connection_acquire (a pooled connection outside a transaction), transaction_open (a pooled connection, SQLite's write turn and begin), transaction_commit, transaction_rollback, record_intent_batch (one batch of the intent writer)",
            store_seconds.0.clone(),
        );
        let chores = Family::<ChoreLabels, Counter>::default();
        registry.register(
            "chore_runs",
            "Periodic chore runs of this instance: led (it held the chore's lease and ran it), skipped (another instance holds it) or failed (the lease could not be taken)",
            chores.clone(),
        );
        for chore in [idem_store::Chore::Purge, idem_store::Chore::Alerts] {
            for outcome in ["led", "skipped", "failed"] {
                chores
                    .get_or_create(&ChoreLabels {
                        chore: chore.as_str(),
                        outcome,
                    })
                    .inc_by(0);
            }
        }
        // Every table's series exists from the start, at zero.
        for (table, _) in Self::purged_tables(&PurgeReport::default()) {
            purged.get_or_create(&TableLabels { table }).inc_by(0);
        }
        Self {
            registry,
            requests,
            request_seconds,
            replays,
            in_progress,
            mismatches,
            deliveries,
            divergences,
            lease_takeovers,
            uncertain,
            purged,
            unresolved,
            oldest_unresolved,
            webhooks,
            oldest_webhook,
            chores,
            mcp_calls,
            mcp_lookups,
            store_writable,
            mcp_upstream_up,
            mcp_times,
            store_seconds,
        }
    }

    /// Sets one mounted gateway's upstream gauge.
    pub fn set_mcp_upstream(&self, gateway: &str, up: bool) {
        self.mcp_upstream_up
            .get_or_create(&GatewayLabels {
                gateway: gateway.to_owned(),
            })
            .set(i64::from(up));
    }

    /// Counts one periodic chore run's outcome.
    pub fn count_chore(&self, chore: idem_store::Chore, outcome: &'static str) {
        self.chores
            .get_or_create(&ChoreLabels {
                chore: chore.as_str(),
                outcome,
            })
            .inc();
    }

    /// Sets the webhook gauges from the database's numbers.
    pub fn set_webhooks(&self, c: &idem_store::WebhookCounts, now_ms: i64) {
        for (state, n) in [
            ("pending", c.pending),
            ("retrying", c.retrying),
            ("delivered", c.delivered),
            ("dead_lettered", c.dead_lettered),
        ] {
            self.webhooks.get_or_create(&StateLabels { state }).set(n);
        }
        self.oldest_webhook.set(
            c.oldest_waiting_ms
                .map_or(0, |t| (now_ms - t).max(0) / 1000),
        );
    }

    /// Brings the MCP call counters up to the database's sums (they only
    /// grow there, so the counters stay monotonic).
    pub fn set_mcp_calls(&self, rows: &[(String, String, i64)]) {
        for (tool, outcome, n) in rows {
            // Counted under the lookup tool already (`lookup:*`).
            if outcome == "looked_up" {
                continue;
            }
            let c = match outcome.strip_prefix("lookup:") {
                Some(verdict) => self.mcp_lookups.get_or_create(&LookupLabels {
                    tool: tool.clone(),
                    verdict: verdict.to_owned(),
                }),
                None => self.mcp_calls.get_or_create(&McpLabels {
                    tool: tool.clone(),
                    outcome: outcome.clone(),
                }),
            };
            let have = c.get();
            let want = u64::try_from(*n).unwrap_or(0);
            if want > have {
                c.inc_by(want - have);
            }
        }
    }

    /// Sets the unsettled-action gauges from the database's numbers.
    pub fn set_unresolved(&self, rows: &[UnresolvedActions], now_ms: i64) {
        for state in UNRESOLVED_STATES {
            let n = rows
                .iter()
                .find(|r| r.state == state)
                .map_or(0, |r| r.count);
            self.unresolved.get_or_create(&StateLabels { state }).set(n);
        }
        let oldest = rows.iter().filter_map(|r| r.oldest_started_ms).min();
        self.oldest_unresolved
            .set(oldest.map_or(0, |t| (now_ms - t).max(0) / 1000));
    }

    /// Counts a purge run.
    pub fn count_purge(&self, r: &PurgeReport) {
        for (table, n) in Self::purged_tables(r) {
            self.purged.get_or_create(&TableLabels { table }).inc_by(n);
        }
        self.uncertain.inc_by(r.leases_expired);
    }

    fn purged_tables(r: &PurgeReport) -> [(&'static str, u64); 9] {
        [
            ("intents", r.intents),
            ("intent_history", r.intent_history),
            ("actions", r.actions),
            ("action_attempts", r.action_attempts),
            ("http_keys", r.http_keys),
            ("consumed_events", r.consumed_events),
            ("outbox", r.outbox),
            ("webhook_deliveries", r.webhook_deliveries),
            ("stats", r.stats),
        ]
    }

    /// The registry in the text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// `GET /metrics`. The unsettled-action gauges are read from the database
/// at each scrape (one grouped query), so every instance reports the same.
pub async fn serve_metrics(
    State(metrics): State<Arc<Metrics>>,
    State(store): State<Store>,
) -> Response {
    match store.unresolved_actions().await {
        Ok(rows) => metrics.set_unresolved(&rows, store.now_ms()),
        // The counters still answer; the gauges keep their last values.
        Err(e) => {
            tracing::warn!(error = %super::error::chain(&e), "reading unsettled actions for /metrics failed")
        }
    }
    match store.admin_mcp_calls().await {
        Ok(rows) => metrics.set_mcp_calls(&rows),
        Err(e) => {
            tracing::warn!(error = %super::error::chain(&e), "reading MCP call counts for /metrics failed")
        }
    }
    match store.admin_webhook_counts().await {
        Ok(c) => metrics.set_webhooks(&c, store.now_ms()),
        Err(e) => {
            tracing::warn!(error = %super::error::chain(&e), "reading webhook deliveries for /metrics failed")
        }
    }
    let mut res = metrics.render().into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    res
}

/// The request id header: the client's when it sends one, else minted by
/// [`MintRequestId`] (tower-http's request-id layers set and echo it).
pub const REQUEST_ID: &str = "x-request-id";

/// Mints request ids: 16 hex digits from the thread's random generator
/// (cheaper than a UUID, and unique enough to find one request's lines).
#[derive(Clone, Copy, Default)]
pub struct MintRequestId;

impl tower_http::request_id::MakeRequestId for MintRequestId {
    fn make_request_id<B>(
        &mut self,
        _: &axum::http::Request<B>,
    ) -> Option<tower_http::request_id::RequestId> {
        HeaderValue::from_str(&hex::encode(rand::random::<[u8; 8]>()))
            .ok()
            .map(tower_http::request_id::RequestId::new)
    }
}

/// The span every log line of a request belongs to: its id, method and
/// path, so an internal error is logged once and can be found by the id the
/// client saw in `x-request-id`.
pub fn request_span<B>(req: &axum::http::Request<B>) -> tracing::Span {
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info_span!("request", id = %id, method = %req.method(), path = %req.uri().path())
}

/// The class of a status (`2xx`), the latency histogram's label.
fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

/// The span a request is exported as (traces on): OpenTelemetry's HTTP
/// server span, named by method and route template, a child of the
/// caller's `traceparent` when it sent one. Never the path itself, which
/// can hold an action's key.
fn server_span(req: &Request<Body>, method: &str, route: &str) -> tracing::Span {
    // A prober's and a scraper's requests, every few seconds forever, would
    // bury the traces people look for.
    if matches!(route, "/healthz" | "/readyz" | "/metrics") {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: idem_wire::trace::TARGET,
        "http",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    idem_wire::trace::continue_from(&span, |name| {
        req.headers().get(name).and_then(|v| v.to_str().ok())
    });
    span
}

/// Counts each request by route pattern, method and status, and times it
/// (route, method and status class); exported as a span when traces are on.
pub async fn observe(
    State(metrics): State<Arc<Metrics>>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let started = std::time::Instant::now();
    let span = server_span(&req, &method, &route);
    let res = next.run(req).instrument(span.clone()).await;
    let status = res.status().as_u16();
    if !span.is_disabled() {
        span.record("http.response.status_code", i64::from(status));
        if status >= 500 {
            span.record("otel.status_code", "error");
        }
    }
    metrics
        .request_seconds
        .get_or_create(&LatencyLabels {
            route: route.clone(),
            method: method.clone(),
            class: status_class(status),
        })
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .get_or_create(&RequestLabels {
            route,
            method,
            status,
        })
        .inc();
    res
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    /// The Grafana dashboard in docs/ queries only series this registry
    /// exposes: renaming a metric without the dashboard fails here.
    #[test]
    fn the_grafana_dashboard_queries_metrics_that_exist() {
        let text = include_str!("../../docs/grafana-dashboard.json");
        let board: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        // As a scrape sees it: the gauges set, one request counted (a
        // family shows in the text once it has a series).
        let m = Metrics::new();
        m.set_unresolved(&[], 0);
        m.set_webhooks(&idem_store::WebhookCounts::default(), 0);
        m.requests
            .get_or_create(&super::RequestLabels {
                route: "/healthz".into(),
                method: "GET".into(),
                status: 200,
            })
            .inc();
        m.request_seconds
            .get_or_create(&super::LatencyLabels {
                route: "/healthz".into(),
                method: "GET".into(),
                class: "2xx",
            })
            .observe(0.0004);
        m.mcp_times.observe(
            "pay",
            "create_pix_charge",
            std::time::Duration::from_millis(30),
            Some(std::time::Duration::from_millis(28)),
        );
        idem_store::Observer::took(
            &m.store_seconds,
            "begin_action",
            idem_store::Backend::Sqlite,
            std::time::Duration::from_micros(90),
        );
        let exposed = m.render();
        let mut queried = 0;
        let re = regex::Regex::new(r"idem_[a-z_]+").expect("regex");
        for panel in board["panels"].as_array().expect("panels") {
            for target in panel["targets"].as_array().expect("targets") {
                let expr = target["expr"].as_str().expect("expr");
                for m in re.find_iter(expr) {
                    // A histogram's series are its family's name and a
                    // suffix.
                    let family = ["_total", "_bucket", "_count", "_sum"]
                        .iter()
                        .fold(m.as_str(), |name, suffix| name.trim_end_matches(suffix));
                    assert!(
                        exposed.contains(&format!("# TYPE {family} ")),
                        "{} (panel {:?}) is not exposed:\n{exposed}",
                        m.as_str(),
                        panel["title"]
                    );
                    queried += 1;
                }
            }
        }
        assert!(queried >= 10, "the dashboard queries {queried} series");
    }

    /// A lookup's count goes to its own family, by the tool asked and the
    /// verdict, never into the guarded calls'.
    #[test]
    fn lookups_are_their_own_family() {
        let m = Metrics::new();
        m.set_mcp_calls(&[
            ("complete_checkout".into(), "executed".into(), 2),
            ("get_checkout".into(), "lookup:not_executed".into(), 3),
        ]);
        let text = m.render();
        assert!(
            text.contains(
                r#"idem_mcp_lookups_total{tool="get_checkout",verdict="not_executed"} 3"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"idem_mcp_calls_total{tool="complete_checkout",outcome="executed"} 2"#),
            "{text}"
        );
        assert!(!text.contains(r#"outcome="lookup:"#), "{text}");
    }
}
