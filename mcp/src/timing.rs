//! How long a guarded call took, in two parts: the upstream's own time (the
//! tool call, and a lookup's) and the gateway's around it (recording the
//! intent, claiming, storing the result, answering). `/metrics` shows both
//! per mounted gateway and tool, so an operator sees how much of an
//! agent's slow payment was idem. Labels name a gateway and a tool, never
//! a key or a reference.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

/// The latency buckets, in seconds: fine below a millisecond, where a
/// guarded effect's own work lives on SQLite, and up to the 10 s a request
/// may take before its deadline. `/metrics` uses them for every latency.
pub const LATENCY_BUCKETS: [f64; 17] = [
    0.000_1, 0.000_25, 0.000_5, 0.000_75, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5, 10.0,
];

/// A histogram with [`LATENCY_BUCKETS`].
pub fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Labels of a guarded call's times.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    /// The mount's name (`/mcp/gateways/{gateway}`).
    pub gateway: String,
    /// The guarded tool.
    pub tool: String,
}

/// Seconds by gateway and tool.
pub type Seconds = Family<ToolLabels, Histogram, fn() -> Histogram>;

/// The two histograms of guarded calls; clones share them.
#[derive(Clone, Debug)]
pub struct GatewayTimes {
    /// The gateway's own time per guarded call: the call's time less the
    /// upstream's.
    pub own: Seconds,
    /// The upstream's time per guarded call that asked it (the tool call,
    /// and a lookup's).
    pub upstream: Seconds,
}

impl Default for GatewayTimes {
    fn default() -> Self {
        Self {
            own: Family::new_with_constructor(latency_histogram),
            upstream: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl GatewayTimes {
    /// One guarded call of `tool` on `gateway` that took `total`, of which
    /// `upstream` (when it asked the upstream at all).
    pub fn observe(&self, gateway: &str, tool: &str, total: Duration, upstream: Option<Duration>) {
        let labels = ToolLabels {
            gateway: gateway.to_owned(),
            tool: tool.to_owned(),
        };
        let theirs = upstream.unwrap_or_default();
        self.own
            .get_or_create(&labels)
            .observe(total.saturating_sub(theirs).as_secs_f64());
        if upstream.is_some() {
            self.upstream
                .get_or_create(&labels)
                .observe(theirs.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_s_own_time_is_the_call_s_less_the_upstream_s() {
        let t = GatewayTimes::default();
        t.observe(
            "pay",
            "charge",
            Duration::from_millis(30),
            Some(Duration::from_millis(28)),
        );
        t.observe("pay", "charge", Duration::from_millis(1), None);
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("own", "", t.own.clone());
        registry.register("upstream", "", t.upstream.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_default();
        assert!(
            text.contains("own_count{gateway=\"pay\",tool=\"charge\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("upstream_count{gateway=\"pay\",tool=\"charge\"} 1"),
            "{text}"
        );
        // 2 ms and 1 ms of the gateway's own: both under the 3 ms bucket.
        assert!(
            text.contains("own_bucket{le=\"0.003\",gateway=\"pay\",tool=\"charge\"} 2"),
            "{text}"
        );
    }
}
