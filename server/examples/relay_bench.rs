//! The outbox relay's benchmarks, for docs/PERFORMANCE.md.
//!
//! Throughput: N outbox messages queued for one tenant with one endpoint, a
//! receiver in this process that answers 204 at once, and the relay started
//! on them; prints deliveries per second until every one is delivered.
//!
//! ```sh
//! cargo run --release -p idem-server --example relay_bench -- throughput \
//!     --url sqlite:///tmp/relay.db --messages 20000 [--per-endpoint 32]
//! ```
//!
//! Receiver: `relay_bench receive --addr 127.0.0.1:PORT` answers 204 to every
//! POST on /hook and prints how many it got when stopped (bench/relay-load.sh
//! runs it beside `idem serve` to load the API with the relay delivering).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use base64::Engine as _;
use idem_core::TenantId;
use idem_server::relay::{Relay, RelayConfig};
use idem_store::{Options, Store, WebhookEndpoint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

async fn receiver(addr: &str) -> (String, Arc<AtomicU64>) {
    let got = Arc::new(AtomicU64::new(0));
    let counter = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let c = counter.clone();
            async move {
                c.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("receive") => {
            let addr = arg(&args, "--addr").unwrap_or_else(|| "127.0.0.1:0".into());
            let (url, got) = receiver(&addr).await;
            eprintln!("receiving on {url}");
            tokio::signal::ctrl_c().await.unwrap();
            println!("{{\"received\":{}}}", got.load(Ordering::Relaxed));
        }
        Some("throughput") => throughput(&args).await,
        _ => {
            eprintln!("usage: relay_bench throughput --url URL [--messages N] [--per-endpoint N] | receive --addr ADDR");
            std::process::exit(2);
        }
    }
}

async fn throughput(args: &[String]) {
    let url = arg(args, "--url").expect("--url sqlite://... or postgres://...");
    let n: usize = arg(args, "--messages").map_or(20_000, |v| v.parse().unwrap());
    let per_endpoint: u32 = arg(args, "--per-endpoint").map_or(32, |v| v.parse().unwrap());
    let store = Store::connect(&url, Options::admin()).await.unwrap();
    store.migrate().await.unwrap();
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let tenant = TenantId::try_from(format!("relay-{run}")).unwrap();
    let (hook, got) = receiver("127.0.0.1:0").await;
    let mut s = store.session().await.unwrap();
    s.add_webhook_endpoint(
        &tenant,
        &WebhookEndpoint {
            endpoint_id: "ep_bench".into(),
            url: hook,
            events: "*".into(),
            secret: base64::engine::general_purpose::STANDARD.encode([7u8; 24]),
            created_ms: store.now_ms(),
        },
    )
    .await
    .unwrap();
    drop(s);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut tx = store.transaction().await.unwrap();
        for i in chunk {
            let payload = format!(r#"{{"charge_id":"ch_{i}","amount_cents":1800}}"#);
            tx.outbox_enqueue(&tenant, "charge.created", &payload)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }
    let cfg = RelayConfig {
        per_endpoint,
        concurrency: usize::try_from(per_endpoint).unwrap(),
        ..RelayConfig::default()
    };
    let relay_store = idem_server::relay::store(
        &url,
        Arc::new(idem_store::SystemClock),
        &cfg,
        Default::default(),
    )
    .await
    .unwrap();
    let relay = Relay::new(relay_store, cfg).unwrap();
    let started = Instant::now();
    let task = tokio::spawn(relay.run(std::future::pending()));
    let target = u64::try_from(n).unwrap();
    while got.load(Ordering::Relaxed) < target {
        assert!(started.elapsed() < Duration::from_secs(600), "stalled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    task.abort();
    println!(
        "{{\"backend\":\"{:?}\",\"messages\":{n},\"per_endpoint\":{per_endpoint},\"seconds\":{secs:.3},\"deliveries_per_s\":{:.0}}}",
        store.backend(),
        n as f64 / secs
    );
    store.close().await;
}
