//! Logging and traces.
//!
//! Logs: one `tracing` subscriber to standard error, filtered by `IDEM_LOG`
//! (default `info,sqlx=warn`).
//!
//! Traces, off unless `--otlp-endpoint` (`IDEM_OTLP_ENDPOINT`) names a
//! collector: the spans of the target [`idem_wire::trace::TARGET`] (each
//! HTTP request, store operation, guarded MCP call and upstream call) go to
//! an OpenTelemetry layer that exports them as OTLP over HTTP (protobuf).
//! Those spans are never logs: the log filter turns them off, so without a
//! collector each costs a disabled-callsite check and nothing else. The
//! SDK's own variables apply (`OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`). A failed export (the collector down,
//! refusing) is logged by the SDK at warn and error, never silent.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::fmt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Where traces go: a collector's OTLP/HTTP traces URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpEndpoint(String);

impl OtlpEndpoint {
    /// The URL spans are posted to.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OtlpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `--otlp-endpoint` takes: `http(s)://host[:port][/path]`. A base
/// address (no path) gets OTLP's `/v1/traces`, as the OpenTelemetry SDKs do
/// with `OTEL_EXPORTER_OTLP_ENDPOINT`; a path is used as written.
pub fn parse_otlp_endpoint(s: &str) -> Result<OtlpEndpoint, String> {
    let how = "give the collector's OTLP/HTTP address, like http://127.0.0.1:4318 \
               (spans are posted to /v1/traces under it)";
    let url =
        reqwest::Url::parse(s.trim()).map_err(|e| format!("{s:?} is not a URL ({e}): {how}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{s:?} is {}:, and idem sends OTLP over HTTP: {how}",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{s:?} names no host: {how}"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{s:?} carries credentials, which would show in `ps` and logs: \
             put them in OTEL_EXPORTER_OTLP_HEADERS (e.g. authorization=Bearer …) instead"
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("{s:?} has a query or fragment: {how}"));
    }
    let mut url = url;
    if matches!(url.path(), "" | "/") {
        url.set_path("/v1/traces");
    }
    Ok(OtlpEndpoint(url.to_string()))
}

/// Ends the export when dropped: the spans still queued are sent (within
/// the SDK's export time-out) before the process exits.
#[must_use = "dropping it ends the export at once"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            if let Err(e) = p.shutdown() {
                eprintln!("warning: the last spans could not be exported: {e}");
            }
        }
    }
}

/// The log filter: `IDEM_LOG`, else `info,sqlx=warn`; never idem's spans
/// for the collector, and the OpenTelemetry SDK's own notes only from warn.
fn log_filter() -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("IDEM_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let mut directives = vec![format!("{}=off", idem_wire::trace::TARGET)];
    if std::env::var_os("IDEM_LOG").is_none() {
        directives.extend(
            ["opentelemetry", "opentelemetry_sdk", "opentelemetry_otlp"]
                .map(|t| format!("{t}=warn")),
        );
    }
    directives.iter().fold(filter, |f, d| {
        f.add_directive(d.parse().expect("a valid directive"))
    })
}

/// Installs the subscriber once (later calls do nothing): logs, and traces
/// to `otlp` when given.
pub fn init(otlp: Option<&OtlpEndpoint>) -> Telemetry {
    use std::io::IsTerminal;
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into log files.
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(log_filter());
    let Some(endpoint) = otlp else {
        let _ = tracing_subscriber::registry().with(logs).try_init();
        warn_if_meant_on();
        return Telemetry { provider: None };
    };
    let provider = match provider(endpoint) {
        Ok(p) => p,
        Err(e) => {
            let _ = tracing_subscriber::registry().with(logs).try_init();
            tracing::error!(error = %e, endpoint = %endpoint, "traces cannot be exported; serving without them");
            return Telemetry { provider: None };
        }
    };
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("idem"))
        // The source line of every span is noise in a trace view.
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::dynamic_filter_fn(|meta, cx| {
            // idem's spans; a store operation only inside a request or a
            // guarded call: the relay's and the chores' polling, several
            // times a second, are no one's trace.
            meta.target() == idem_wire::trace::TARGET
                && (meta.name() != "db" || cx.lookup_current().is_some())
        }));
    if tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()
        .is_ok()
    {
        tracing::info!(endpoint = %endpoint, "exporting traces (OTLP over HTTP)");
        if endpoint_port(endpoint) == Some(4317) {
            tracing::warn!(
                endpoint = %endpoint,
                "4317 is OTLP's gRPC port, and idem sends OTLP over HTTP (usually 4318): \
                 if no span arrives, point --otlp-endpoint at the collector's HTTP receiver"
            );
        }
    }
    Telemetry {
        provider: Some(provider),
    }
}

/// Installs logs only (the commands that serve nothing).
pub fn init_tracing() {
    // Without an exporter there is nothing to end.
    let _ = init(None);
}

fn endpoint_port(e: &OtlpEndpoint) -> Option<u16> {
    reqwest::Url::parse(e.as_str()).ok()?.port()
}

/// A collector configured the SDKs' way, which idem does not read on its
/// own: traces stay off, and the log says how to turn them on.
fn warn_if_meant_on() {
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
            tracing::warn!(
                "{var} is set, but idem exports traces only to --otlp-endpoint (IDEM_OTLP_ENDPOINT): traces are off"
            );
            return;
        }
    }
}

fn provider(endpoint: &OtlpEndpoint) -> Result<SdkTracerProvider, String> {
    // reqwest 0.13 here is built without a TLS crypto provider of its own
    // (as the gateway's upstream client): rustls' ring, the relay's already.
    // Installing fails only when one is installed, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(endpoint.as_str())
        .build()
        .map_err(|e| e.to_string())?;
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(
        opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    );
    if !named {
        resource = resource.with_service_name("idem");
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

#[cfg(test)]
mod tests {
    use super::parse_otlp_endpoint;

    #[test]
    fn an_endpoint_is_read_as_meant_or_refused_saying_how() {
        for (given, read) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example.com",
                "https://otel.example.com/v1/traces",
            ),
            ("http://c:4318/custom/traces", "http://c:4318/custom/traces"),
            (" http://c:4318 ", "http://c:4318/v1/traces"),
        ] {
            assert_eq!(
                parse_otlp_endpoint(given).map(|e| e.0),
                Ok(read.into()),
                "{given}"
            );
        }
        for (given, says) in [
            ("127.0.0.1:4318", "not a URL"),
            ("localhost:4318", "OTLP over HTTP"),
            ("localhost", "not a URL"),
            ("grpc://c:4317", "OTLP over HTTP"),
            ("http://user:pw@c:4318", "OTEL_EXPORTER_OTLP_HEADERS"),
            ("http://c:4318/v1/traces?x=1", "query"),
            ("", "not a URL"),
        ] {
            let e = parse_otlp_endpoint(given).expect_err(given);
            assert!(e.contains(says), "{given}: {e}");
        }
    }
}
