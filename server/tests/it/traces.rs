//! Traces through a real OTLP/HTTP receiver: `idem serve --otlp-endpoint`
//! as a child process posts protobuf to a receiver in this test, which
//! decodes it with the official OTLP messages (`opentelemetry-proto`). On
//! SQLite and PostgreSQL.
//!
//! What must hold: a caller's `traceparent` is continued (the request's span
//! is its child, in its trace); every store operation is a client span under
//! the request's; idem's outcome is on the request's span (claimed, then
//! replayed with the same attempt); nothing exported carries the HMAC
//! secret, an action key, the payload's amount or its reference; and a
//! request with a malformed trace context starts a trace of its own.

use crate::common;

use axum::body::Bytes;
use axum::routing::post;
use common::tenant;
use idem_testkit::TestDb as Db;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, Span};
use prost::Message as _;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("traces").await
}

idem_testkit::both!(a_caller_trace_is_continued_through_every_store_operation);

type Received = Arc<Mutex<Vec<Span>>>;

/// An OTLP/HTTP receiver on port 0: decodes each export, keeps its spans,
/// answers an empty success (the protocol's `ExportTraceServiceResponse`).
async fn receiver() -> (String, Received) {
    let got: Received = Arc::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let keep = keep.clone();
            async move {
                let req = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
                let mut spans = keep.lock().unwrap();
                for rs in req.resource_spans {
                    let service = rs
                        .resource
                        .iter()
                        .flat_map(|r| &r.attributes)
                        .find(|kv| kv.key == "service.name")
                        .and_then(|kv| kv.value.as_ref())
                        .and_then(|v| v.value.clone());
                    assert_eq!(service, Some(Any::StringValue("idem".into())));
                    for ss in rs.scope_spans {
                        spans.extend(ss.spans);
                    }
                }
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), got)
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attr(span, key)? {
        Any::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key)? {
        Any::IntValue(i) => Some(*i),
        _ => None,
    }
}

fn flag(span: &Span, key: &str) -> Option<bool> {
    match attr(span, key)? {
        Any::BoolValue(b) => Some(*b),
        _ => None,
    }
}

/// Waits until `got` holds a span `pick` finds.
async fn wait_for(got: &Received, what: &str, pick: impl Fn(&Span) -> bool) -> Span {
    let t = Instant::now();
    loop {
        if let Some(s) = got.lock().unwrap().iter().find(|s| pick(s)) {
            return s.clone();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no {what} arrived; spans: {:?}",
            got.lock()
                .unwrap()
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

async fn a_caller_trace_is_continued_through_every_store_operation(db: &Db) {
    let (collector, got) = receiver().await;
    let srv = common::child_serve(
        &db.url,
        &["--otlp-endpoint", &collector],
        // Exported every 50 ms, so the test waits for nothing longer.
        &[("OTEL_BSP_SCHEDULE_DELAY", "50")],
    )
    .await;
    let store = common::store(&db.url).await;
    let token = tenant(&store, "acme").await;
    let c = common::http_client();
    let reference = "FAT-TRACE-7781";
    let body = json!({
        "action": "pix.cobranca",
        "payload": {"cliente_id": "c-1", "valor": "180.37", "chave_pix_destino": "fulano@example.com", "referencia_intencao": reference},
        "claim": {"lease_ms": 30000},
    });
    let first = common::get_json(
        c.post(format!("{}/v1/intents", srv.base))
            .bearer_auth(&token)
            .header("traceparent", format!("00-{TRACE}-{CALLER}-01"))
            .header("tracestate", "vendor=1")
            .json(&body),
    )
    .await;
    let key = first["key"].as_str().unwrap().to_owned();
    let claim_token = first["claim"]["token"].as_i64().unwrap();
    let done = c
        .post(format!("{}/v1/actions/{key}/complete", srv.base))
        .bearer_auth(&token)
        .json(&json!({"token": claim_token, "response": {"charge": "ch_1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    // The redelivery, with trace context that is not (a malformed header,
    // NUL-free but hostile in length and shape): a trace of its own.
    let again = c
        .post(format!("{}/v1/intents", srv.base))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{}-zz-01", "f".repeat(4000)))
        .header("tracestate", "=,=,".repeat(500))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);

    let trace = hex::decode(TRACE).unwrap();
    let caller = hex::decode(CALLER).unwrap();
    let record = wait_for(&got, "span of the first record", |s| {
        s.trace_id == trace && s.name == "POST /v1/intents"
    })
    .await;
    assert_eq!(
        record.parent_span_id, caller,
        "a child of the caller's span"
    );
    assert_eq!(record.kind, SpanKind::Server as i32);
    assert_eq!(record.trace_state, "vendor=1");
    assert_eq!(text(&record, "http.route").as_deref(), Some("/v1/intents"));
    assert_eq!(
        text(&record, "http.request.method").as_deref(),
        Some("POST")
    );
    assert_eq!(
        int(&record, "http.response.status_code"),
        Some(201),
        "{:?}",
        record.attributes
    );
    assert_eq!(text(&record, "idem.outcome").as_deref(), Some("claimed"));
    assert_eq!(text(&record, "idem.delivery").as_deref(), Some("first"));
    assert_eq!(flag(&record, "idem.diverged"), Some(false));
    assert_eq!(flag(&record, "idem.replayed"), Some(false));
    assert_eq!(int(&record, "idem.attempt"), Some(1));
    assert_eq!(int(&record, "idem.fencing_token"), Some(claim_token));

    // Record and claim: one transaction, every step a client span under
    // the request's.
    let system = if db.url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgresql"
    };
    let commit = wait_for(&got, "the record's commit", |s| {
        s.parent_span_id == record.span_id && s.name == "transaction_commit"
    })
    .await;
    assert_eq!(commit.kind, SpanKind::Client as i32);
    assert_eq!(commit.trace_id, trace);
    assert_eq!(text(&commit, "db.system.name").as_deref(), Some(system));
    for op in ["transaction_open", "record_intent", "begin_action"] {
        let s = wait_for(&got, op, |s| {
            s.parent_span_id == record.span_id && s.name.starts_with(op)
        })
        .await;
        assert_eq!(
            text(&s, "db.query.summary").as_deref(),
            Some(s.name.as_str())
        );
    }

    let completed = wait_for(&got, "span of the outcome", |s| {
        s.name == "POST /v1/actions/{key}/complete"
    })
    .await;
    assert_eq!(
        text(&completed, "idem.outcome").as_deref(),
        Some("completed")
    );
    assert_eq!(int(&completed, "idem.fencing_token"), Some(claim_token));
    assert_ne!(
        completed.trace_id, trace,
        "no trace context: a trace of its own"
    );
    assert!(completed.parent_span_id.is_empty());
    wait_for(&got, "the outcome's statement", |s| {
        s.parent_span_id == completed.span_id && s.name == "complete_action"
    })
    .await;

    let replay = wait_for(&got, "span of the redelivery", |s| {
        s.name == "POST /v1/intents" && s.trace_id != trace
    })
    .await;
    assert_eq!(
        text(&replay, "idem.delivery").as_deref(),
        Some("redelivery")
    );
    assert_eq!(text(&replay, "idem.outcome").as_deref(), Some("completed"));
    assert_eq!(flag(&replay, "idem.replayed"), Some(true));
    assert!(
        replay.parent_span_id.is_empty(),
        "a malformed traceparent is no parent"
    );
    assert_eq!(int(&replay, "http.response.status_code"), Some(200));

    // Nothing exported names the secret, the key, the amount or the
    // reference: routes are templates, statements are named, never shown.
    let all = got.lock().unwrap().clone();
    for s in &all {
        let shown = format!("{} {:?}", s.name, s.attributes);
        for secret in [
            "security-test-secret",
            key.as_str(),
            "180.37",
            reference,
            &token,
        ] {
            assert!(!shown.contains(secret), "{secret:?} in {shown}");
        }
    }
    drop(srv);
}

/// Without `--otlp-endpoint` nothing is exported, and a configured SDK
/// variable is named in a warning rather than silently ignored.
#[tokio::test]
async fn traces_are_off_unless_asked_and_the_sdk_variable_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // A data directory under a file cannot be made: the server stops
    // right after its logging starts.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(file.join("data"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
        .env_remove("IDEMPOTENCY_HMAC_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set, but idem exports traces only to --otlp-endpoint"
        ),
        "{err}"
    );
    for (bad, says) in [
        ("127.0.0.1:4318", "not a URL"),
        ("localhost:4318", "OTLP over HTTP"),
        ("http://u:p@h:4318", "OTEL_EXPORTER_OTLP_HEADERS"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(["serve", "--otlp-endpoint", bad, "--data-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--otlp-endpoint") && err.contains(says),
            "{bad}: {err}"
        );
    }
}

/// A collector that is down never stops the server, and is never silent:
/// the export's failure is in the log.
#[tokio::test]
async fn a_collector_that_is_down_is_logged_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let down = format!("http://127.0.0.1:{}", common::free_port());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--otlp-endpoint",
            &down,
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("IDEM_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let t = Instant::now();
    let base = loop {
        if let Some(at) = read().split("listening on ").nth(1) {
            break at.split_whitespace().next().unwrap().to_owned();
        }
        assert!(t.elapsed() < Duration::from_secs(30), "{}", read());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let c = common::http_client();
    // A span to export: a request refused for want of a token.
    let r = c.post(format!("{base}/v1/intents")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    while !read().contains("HTTP export failed") {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no export failure logged: {}",
            read()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = c.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let _ = child.kill();
    let _ = child.wait();
}
