//! W3C trace context as both doors carry it: `traceparent` and
//! `tracestate`, in an HTTP request's headers or an MCP request's
//! `params._meta`.
//!
//! A caller's trace is continued (idem's spans become its children) and,
//! through the MCP gateway, passed on to the upstream as the gateway's own
//! span. It changes on every attempt, so it is never frozen, never part of
//! a key, and never stored: a retry that carries a new `traceparent` is
//! the same call.
//!
//! Spans are `tracing` spans of the target [`TARGET`], which only the
//! OpenTelemetry layer (`idem serve --otlp-endpoint`) enables: without it
//! they cost one disabled-callsite check each, and nothing here parses.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `tracing` target of every span idem exports.
pub const TARGET: &str = idem_store::observe::SPAN_TARGET;

/// The entries of W3C trace context and baggage. A guard file may not
/// freeze them or read a key field from them: they are new on every
/// attempt, so every retry would diverge.
pub const ENTRIES: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// Whether `name` is one of [`ENTRIES`] (a header's name in any case).
pub fn is_trace_entry(name: &str) -> bool {
    ENTRIES.iter().any(|e| e.eq_ignore_ascii_case(name))
}

/// Makes `span` a child of the trace context `get` reads, when the span is
/// exported and `get` finds a valid `traceparent`. Anything else (no
/// header, a malformed one, traces off) leaves the span a root of its own.
pub fn continue_from<'a>(span: &tracing::Span, get: impl Fn(&str) -> Option<&'a str>) {
    if span.is_disabled() {
        return;
    }
    let Some(parent) = get("traceparent") else {
        return;
    };
    let carrier = Carrier {
        parent,
        state: get("tracestate"),
    };
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        // Fails only for a span already entered or not exported; either way
        // it stays a root, which is what a trace without a parent is.
        let _ = span.set_parent(cx);
    }
}

/// The trace context of `span` to send on, as `(name, value)` entries
/// (`traceparent`, and `tracestate` when it has one). Empty when the span
/// is not exported.
pub fn entries_of(span: &tracing::Span) -> Vec<(&'static str, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut out = Outgoing(Vec::with_capacity(2));
    TraceContextPropagator::new().inject_context(&cx, &mut out);
    out.0
}

/// Sets `key` on the current span when it is exported: idem's own
/// attributes (`idem.outcome`, `idem.replayed`, `idem.diverged`,
/// `idem.uncertain`, `idem.attempt`, `idem.fencing_token`). Never a key's
/// secret, a payload or an amount.
pub fn note(key: &'static str, value: impl Into<opentelemetry::Value>) {
    // Without the exporting layer this is one cached callsite check, never
    // a lookup of the current span.
    if !tracing::enabled!(target: TARGET, tracing::Level::INFO) {
        return;
    }
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.set_attribute(key, value);
    }
}

/// What a request carried: only the two entries the propagator reads.
struct Carrier<'a> {
    parent: &'a str,
    state: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.parent),
            "tracestate" => self.state,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = vec!["traceparent"];
        if self.state.is_some() {
            keys.push("tracestate");
        }
        keys
    }
}

struct Outgoing(Vec<(&'static str, String)>);

impl Injector for Outgoing {
    fn set(&mut self, key: &str, value: String) {
        let name = match key {
            "traceparent" => "traceparent",
            "tracestate" => "tracestate",
            _ => return,
        };
        self.0.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_entries_are_known_in_any_case() {
        assert!(is_trace_entry("traceparent"));
        assert!(is_trace_entry("TraceState"));
        assert!(is_trace_entry("baggage"));
        assert!(!is_trace_entry("x402/payment"));
        assert!(!is_trace_entry("traceparent2"));
    }

    #[test]
    fn without_the_exporting_layer_nothing_is_read_or_sent() {
        let span = tracing::info_span!(target: "idem::otel", "http");
        continue_from(&span, |_| {
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        });
        assert!(entries_of(&span).is_empty());
    }
}
