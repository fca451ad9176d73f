//! The second security probe's findings, each as a regression test through
//! real HTTP: killed clients under load, connections that never end (HTTP/2
//! included), texts without a length, exports without a bound, and the
//! smaller rules (duplicate JSON members, bidi text, the Host forms, proxy
//! headers, the relay's proxy). Tests that touch the database run on SQLite
//! and PostgreSQL.

use crate::common;

use common::{http_client as http, tenant, TestApp as Srv};
use idem_testkit::TestDb as Db;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("probe").await
}

idem_testkit::both!(a_killed_client_never_leaves_a_key_locked_under_load,);

fn intent(n: usize) -> Value {
    json!({
        "action": "pix.cobranca",
        "payload": {"cliente_id": format!("c-{n}"), "valor": "1.00",
                    "chave_pix_destino": "fulano@example.com",
                    "referencia_intencao": format!("LOAD-{n}")}
    })
}

/// Clients that die 0 to 5 ms after sending a guarded charge, while other
/// writers keep the store busy: each key either holds the stored response
/// or is free again by the time the handler would have finished. A retry
/// never meets `409 request-in-progress` past that, and every key is
/// charged exactly once (the demo ledger is the oracle).
async fn a_killed_client_never_leaves_a_key_locked_under_load(db: &Db) {
    use std::io::Write;
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for w in 0..12 {
        let (base, token, stop) = (s.base.clone(), token.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let c = http();
            let mut n = w * 100_000;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let _ = c
                    .post(format!("{base}/v1/intents"))
                    .bearer_auth(&token)
                    .json(&intent(n))
                    .send()
                    .await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let kills = 40;
    let mut killed = Vec::new();
    for i in 0..kills {
        let (addr, token) = (addr.clone(), token.clone());
        killed.push(tokio::task::spawn_blocking(move || {
            let body = r#"{"amount_cents":100,"currency":"BRL","customer":"c"}"#;
            let req = format!(
                "POST /v1/demo/charges HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nIdempotency-Key: killed-{i}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let mut sock = std::net::TcpStream::connect(&addr).unwrap();
            sock.write_all(req.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_micros((i as u64 * 137) % 5_000));
            // Gone, as a killed process's socket is.
            let _ = sock.shutdown(std::net::Shutdown::Both);
        }));
    }
    for k in killed {
        k.await.unwrap();
    }
    // The handler is a single insert: even under this load it is done well
    // within two seconds, against the 60 s lock a lost request would leave.
    let deadline = Instant::now() + Duration::from_secs(2);
    let c = http();
    for i in 0..kills {
        loop {
            let res = c
                .post(s.url("/v1/demo/charges"))
                .bearer_auth(&token)
                .header("idempotency-key", format!("killed-{i}"))
                .json(&json!({"amount_cents": 100, "currency": "BRL", "customer": "c"}))
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            if status == 201 {
                break;
            }
            assert_eq!(status, 409, "killed-{i}");
            assert!(
                Instant::now() < deadline,
                "killed-{i} is still locked after the handler's duration"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }
    let count: Value = c
        .get(s.url("/v1/demo/charges/count"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(count["count"], kills, "each key charged exactly once");
}
