//! Hostile and broken clients against the server's bounds, through real
//! HTTP: killed clients under load, connections that never end (HTTP/2
//! included), texts without a length, exports without a bound, and the
//! smaller rules (duplicate JSON members, bidi text, the Host forms, proxy
//! headers, the relay's proxy). Tests that touch the database run on SQLite
//! and PostgreSQL.

use crate::common;

use common::{http_client as http, tenant, TestApp as Srv};
use futures_util::StreamExt;
use idem_testkit::TestDb as Db;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("hostile").await
}

idem_testkit::both!(
    a_killed_client_never_leaves_a_key_locked_under_load,
    six_exports_at_once_stream_within_a_bound,
    long_texts_are_refused_naming_the_field_and_the_limit,
    bidi_controls_are_written_out_where_people_read,
    begin_checks_the_action_and_reconcile_needs_an_uncertain_claim,
    outcomes_up_to_the_limit_are_kept_and_past_it_the_action_is_uncertain,
    payload_members_idem_reserves_are_refused,
);

/// `/v1` cannot write the member the MCP gateway freezes a call's
/// arguments under (nor any `_idem…` name): 422 naming it, nothing stored.
async fn payload_members_idem_reserves_are_refused(db: &Db) {
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let res = http()
        .post(s.url("/v1/intents"))
        .bearer_auth(&token)
        .json(&json!({"action": "pix.cobranca", "payload": {
            "cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "a@example.com",
            "referencia_intencao": "PLANTED",
            "_idem_mcp_arguments": {"amount": "99999.00", "pix_key": "thief@example.com"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    let p: Value = res.json().await.unwrap();
    assert_eq!(p["type"], "urn:idem:problem:reserved-member");
    assert_eq!(p["member"], "_idem_mcp_arguments");
    let found = http()
        .get(s.url("/v1/intents/pix.cobranca/PLANTED"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(found.status(), 404, "nothing was stored");
}

/// `GET /v1/actions/{key}`'s answer.
async fn get_action(c: &reqwest::Client, base: &str, token: &str, key: &str) -> Value {
    c.get(format!("{base}/v1/actions/{key}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Outcomes up to `--max-outcome-bytes` (1 MiB by default) are kept byte
/// for byte; past it the answer is `413 outcome-too-large` and the action
/// is uncertain before the answer is out: never a 422, never a `started`
/// row waiting for its lease. A body too large to read the token from says
/// so, and `uncertain` then takes an error of any size (kept cut).
async fn outcomes_up_to_the_limit_are_kept_and_past_it_the_action_is_uncertain(db: &Db) {
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let limit = 1 << 20;
    let complete = |key: &str, claim: &Value, response: &Value| {
        c.post(s.url(&format!("/v1/actions/{key}/complete")))
            .bearer_auth(&token)
            .json(&json!({"token": claim["token"], "response": response}))
    };
    // 900 KiB: over the old 32 KiB and 64 KiB bounds, under the limit.
    let big = json!({"receipt": "r".repeat(900 * 1024)});
    let res = record_and_claim(&c, &s.base, &token, "c-1", "BIG-OK").await;
    let key = res["key"].as_str().unwrap();
    let kept = complete(key, &res["claim"], &big).send().await.unwrap();
    assert_eq!(kept.status(), 200, "{}", kept.text().await.unwrap());
    let action = get_action(&c, &s.base, &token, key).await;
    assert_eq!(action["state"], "completed");
    assert_eq!(action["response"], big);

    // Just over the limit: 413, and uncertain already.
    let over = json!({"receipt": "r".repeat(limit)});
    let res = record_and_claim(&c, &s.base, &token, "c-1", "BIG-OVER").await;
    let key = res["key"].as_str().unwrap();
    let refused = complete(key, &res["claim"], &over).send().await.unwrap();
    assert_eq!(refused.status(), 413);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["type"], "urn:idem:problem:outcome-too-large");
    assert_eq!(problem["limit"], limit);
    assert_eq!(problem["size"], limit + 14); // {"receipt":"…"}
    assert_eq!(problem["marked_uncertain"], true);
    let action = get_action(&c, &s.base, &token, key).await;
    assert_eq!(action["state"], "uncertain", "{action}");
    // The next claim is told at once.
    let again: Value = record_and_claim(&c, &s.base, &token, "c-1", "BIG-OVER").await;
    assert_eq!(again["claim"]["status"], "uncertain", "{again}");

    // Far over, the token after the outcome (serde_json writes members in
    // order: `response` before `token`): read on to the token without
    // keeping the body, marked uncertain before the 413.
    let res = record_and_claim(&c, &s.base, &token, "c-1", "BIG-FAR").await;
    let key = res["key"].as_str().unwrap();
    let far = json!({"receipt": "r".repeat(limit + 128 * 1024)});
    let body = json!({"token": res["claim"]["token"], "response": far}).to_string();
    assert!(
        body.find("\"token\"").unwrap() > limit,
        "the token is at the end"
    );
    let refused = c
        .post(s.url(&format!("/v1/actions/{key}/complete")))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 413);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["type"], "urn:idem:problem:outcome-too-large");
    assert_eq!(problem["marked_uncertain"], true, "{problem}");
    assert_eq!(problem["size"], body.len());
    let action = get_action(&c, &s.base, &token, key).await;
    assert_eq!(action["state"], "uncertain", "{action}");
    assert!(
        action["error"].as_str().unwrap().contains("it acted"),
        "{action}"
    );

    // A body with no top-level token cannot be marked: it says so.
    let res = record_and_claim(&c, &s.base, &token, "c-1", "BIG-NOTOKEN").await;
    let key = res["key"].as_str().unwrap();
    let refused = c
        .post(s.url(&format!("/v1/actions/{key}/complete")))
        .bearer_auth(&token)
        .json(&json!({"response": {"token": res["claim"]["token"], "receipt": "r".repeat(limit + 128 * 1024)}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 413);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["marked_uncertain"], false, "{problem}");
    assert_eq!(
        get_action(&c, &s.base, &token, key).await["state"],
        "started"
    );

    // `uncertain` takes an error of any size, kept cut and saying how long
    // it was: over the limit, and far over it.
    for (n, size) in [(0, limit + 1000), (1, limit + 256 * 1024)] {
        let res = record_and_claim(&c, &s.base, &token, "c-1", &format!("BIG-ERR-{n}")).await;
        let key = res["key"].as_str().unwrap();
        let marked = c
            .post(s.url(&format!("/v1/actions/{key}/uncertain")))
            .bearer_auth(&token)
            .json(&json!({"token": res["claim"]["token"], "error": "e".repeat(size)}))
            .send()
            .await
            .unwrap();
        assert_eq!(marked.status(), 200, "{}", marked.text().await.unwrap());
        let action: Value = marked.json().await.unwrap();
        assert_eq!(action["state"], "uncertain");
        let error = action["error"].as_str().unwrap();
        assert!(
            error.len() <= limit && error.ends_with(&format!("(cut: {size} bytes in all)")),
            "{}: {}",
            error.len(),
            &error[error.len().saturating_sub(60)..]
        );
    }
}

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

/// Records an intent for `customer` and `reference` and claims it; the
/// answer (`key`, `claim.token`, ...).
async fn record_and_claim(
    c: &reqwest::Client,
    base: &str,
    token: &str,
    customer: &str,
    reference: &str,
) -> Value {
    c.post(format!("{base}/v1/intents"))
        .bearer_auth(token)
        .json(&json!({"action": "pix.cobranca",
            "payload": {"cliente_id": customer, "valor": "1.00",
                        "chave_pix_destino": "a@example.com", "referencia_intencao": reference},
            "claim": {"lease_ms": 60000}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// An uncertain action for `customer` and `reference`, as a worker whose
/// effect raised leaves it; its key.
async fn uncertain_action(
    c: &reqwest::Client,
    base: &str,
    token: &str,
    customer: &str,
    reference: &str,
) -> String {
    let res = record_and_claim(c, base, token, customer, reference).await;
    let key = res["key"].as_str().unwrap().to_owned();
    let marked = c
        .post(format!("{base}/v1/actions/{key}/uncertain"))
        .bearer_auth(token)
        .json(&json!({"token": res["claim"]["token"], "error": "timeout"}))
        .send()
        .await
        .unwrap();
    let status = marked.status();
    assert_eq!(status, 200, "{}", marked.text().await.unwrap());
    key
}

/// An HTTP/2 frame on stream 0 (the connection's).
fn h2_frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
    h2_frame_on(kind, flags, 0, payload)
}

/// An HTTP/2 frame: length, type, flags, stream, payload.
fn h2_frame_on(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A connection that only pings (HTTP/2 in cleartext), one that sends the
/// preface and nothing, and one that sends nothing at all: each is closed
/// at the header timeout, and a new client is served meanwhile.
#[tokio::test]
async fn connections_without_a_request_close_at_the_header_timeout() {
    use std::io::Write;
    let s = Srv::sqlite_with(|c| {
        c.limits.header_timeout = Duration::from_millis(800);
        c.limits.idle_timeout = Duration::from_secs(30);
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let a = addr.clone();
    let pinger = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        sock.write_all(PREFACE).unwrap();
        sock.write_all(&h2_frame(0x4, 0, &[])).unwrap();
        let reader = sock.try_clone().unwrap();
        let pings = std::thread::spawn(move || {
            // A PING every 100 ms: "activity" the old idle timer counted.
            for i in 0..60u8 {
                if sock.write_all(&h2_frame(0x6, 0, &[i; 8])).is_err() {
                    return i;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            60
        });
        let took = common::closed_after(reader, Duration::from_millis(800));
        let sent = pings.join().unwrap();
        assert!(sent < 40, "the pinger kept its connection for {sent} pings");
        took
    });
    let a = addr.clone();
    let preface_only = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        sock.write_all(PREFACE).unwrap();
        sock.write_all(&h2_frame(0x4, 0, &[])).unwrap();
        common::closed_after(sock, Duration::from_millis(800))
    });
    let a = addr.clone();
    let silent = tokio::task::spawn_blocking(move || {
        let sock = std::net::TcpStream::connect(&a).unwrap();
        common::closed_after(sock, Duration::from_millis(800))
    });
    assert_eq!(reqwest::get(s.url("/healthz")).await.unwrap().status(), 200);
    pinger.await.unwrap();
    preface_only.await.unwrap();
    silent.await.unwrap();
}

/// HTTP/2 requests are served, and a request in flight keeps its
/// connection past the header timeout.
#[tokio::test]
async fn http2_in_cleartext_is_served_within_the_same_bounds() {
    let s = Srv::sqlite_with(|c| {
        c.limits.header_timeout = Duration::from_millis(800);
    })
    .await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let res = h2.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.status(), 200);
    let token = tenant(&s.store, "acme").await;
    // 1.5 s of handler time on one HTTP/2 stream: longer than the header
    // timeout, which does not apply while a request runs.
    let res = h2
        .post(s.url("/v1/demo/charges"))
        .bearer_auth(&token)
        .header("idempotency-key", "h2-slow")
        .header("idem-demo-fault", "delay=1500")
        .json(&json!({"amount_cents": 100, "currency": "BRL", "customer": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
}

/// A client that asks for a response and never opens its HTTP/2
/// flow-control window (initial window 0), pinging every 100 ms so bytes
/// keep moving: the response cannot send a byte, and once the request
/// timeout passes the connection is closed whatever the PINGs say.
#[tokio::test]
async fn a_response_the_client_never_takes_ends_at_the_request_timeout() {
    use std::io::{Read, Write};
    let s = Srv::sqlite_with(|c| {
        c.limits.request_timeout = Duration::from_secs(1);
        c.limits.idle_timeout = Duration::from_secs(60);
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let frame = h2_frame_on;
    // Blocking socket work off the test's runtime, which serves the app.
    let closed = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&addr).unwrap();
        sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        // SETTINGS_INITIAL_WINDOW_SIZE = 0: no stream may send data.
        sock.write_all(&frame(4, 0, 0, &[0, 4, 0, 0, 0, 0]))
            .unwrap();
        sock.write_all(&frame(4, 1, 0, &[])).unwrap();
        // GET /v1/openapi.json (HPACK: indexed :method GET and :scheme http,
        // literal :path and :authority), END_STREAM | END_HEADERS.
        let mut block = vec![0x82, 0x86, 0x04, 16];
        block.extend_from_slice(b"/v1/openapi.json");
        block.extend_from_slice(&[0x01, 9]);
        block.extend_from_slice(b"127.0.0.1");
        sock.write_all(&frame(1, 0x5, 1, &block)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 16 * 1024];
        loop {
            if started.elapsed() > Duration::from_secs(6) {
                break None;
            }
            if sock.write_all(&frame(6, 0, 0, &[0; 8])).is_err() {
                break Some(started.elapsed());
            }
            match sock.read(&mut buf) {
                Ok(0) => break Some(started.elapsed()),
                Err(e)
                    if e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::TimedOut =>
                {
                    break Some(started.elapsed())
                }
                _ => {}
            }
        }
    })
    .await
    .unwrap();
    let took = closed.expect("the stalled connection was still open after 6 s of PINGs");
    assert!(
        took >= Duration::from_millis(900),
        "closed too early: {took:?}"
    );
    // The server serves others meanwhile and after.
    assert_eq!(
        http().get(s.url("/healthz")).send().await.unwrap().status(),
        200
    );
}

/// One address holds at most its share of the connections (here 2 of
/// 8); the next from it is closed at once, while another address is
/// served.
#[tokio::test]
async fn one_address_holds_at_most_its_share_of_the_connections() {
    let s = Srv::sqlite_with(|c| {
        c.limits.max_connections = 8;
        c.limits.max_per_address = 2;
        c.limits.header_timeout = Duration::from_secs(5);
    })
    .await;
    let addr: std::net::SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    let from = |ip: [u8; 4]| async move {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(std::net::SocketAddr::from((ip, 0))).unwrap();
        let stream = sock.connect(addr).await.unwrap().into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        stream
    };
    let held = vec![from([127, 0, 0, 1]).await, from([127, 0, 0, 1]).await];
    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = from([127, 0, 0, 1]).await;
    let other = from([127, 0, 0, 2]).await;
    let results = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut third = third;
        third
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        let _ = third.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let mut buf = [0u8; 256];
        let third_read = third.read(&mut buf);
        let mut other = other;
        other
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        other
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = other.read_to_string(&mut answer);
        drop(held);
        (third_read.map(|n| n == 0).unwrap_or(true), answer)
    })
    .await
    .unwrap();
    assert!(
        results.0,
        "the third connection from one address was served"
    );
    assert!(results.1.starts_with("HTTP/1.1 200"), "{}", results.1);
}

/// Live-feed streams have slots of their own (a quarter of the
/// connections) and an age: the next stream past the cap is a 503 with
/// Retry-After while ordinary requests are still served, and a stream
/// ends by itself at its age, freeing its slot.
#[tokio::test]
async fn live_feeds_have_a_cap_and_an_age_and_leave_slots_to_requests() {
    let s = Srv::sqlite_with(|c| {
        c.limits.max_connections = 20;
        // All from 127.0.0.1: this test is about the feeds' share.
        c.limits.max_per_address = 20;
        c.limits.feed_max_age = Duration::from_secs(2);
    })
    .await;
    let feed = || async {
        // A client of its own per stream: one connection each.
        http().get(s.url("/live/events")).send().await.unwrap()
    };
    let mut open = Vec::new();
    for _ in 0..5 {
        let res = feed().await;
        assert_eq!(res.status(), 200);
        open.push(res);
    }
    let refused = feed().await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let p: Value = refused.json().await.unwrap();
    assert_eq!(p["type"], "urn:idem:problem:feeds-full");
    // Fifteen ordinary requests at once still find connections.
    let mut asks = Vec::new();
    for _ in 0..15 {
        let url = s.url("/healthz");
        asks.push(tokio::spawn(async move {
            http().get(url).send().await.unwrap().status()
        }));
    }
    for a in asks {
        assert_eq!(a.await.unwrap(), 200);
    }
    // Each open stream ends by itself at its age.
    let t = Instant::now();
    for res in open {
        let body = tokio::time::timeout(Duration::from_secs(6), res.text())
            .await
            .expect("the stream ended at its age")
            .unwrap();
        assert!(body.contains("event:"), "{body}");
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(feed().await.status(), 200, "a slot is free again");
}

/// The resident memory of process `pid`, in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// 1,500 uncertain actions with the longest references and customers the
/// API takes; six exports asked at once. Two run (the rest are a 503 with
/// Retry-After), each streams every row, the monitor answers meanwhile,
/// and the server's resident memory grows by less than 128 MiB (about
/// 40-60 MiB measured, most of it the database driver's buffers).
async fn six_exports_at_once_stream_within_a_bound(db: &Db) {
    // Two viewers, since each holds one export at a time: the tenant and
    // the admin (whose export covers every tenant: acme's rows).
    let admin = "an-admin-token-of-thirty-two-characters-at-least";
    let mut srv = common::child_serve(&db.url, &["--admin-token", admin], &[]).await;
    let store = common::store(&db.url).await;
    let token = tenant(&store, "acme").await;
    let c = http();
    let n = 1_500;
    let mut jobs = futures_util::stream::iter(0..n)
        .map(|i| {
            let (c, base, token) = (c.clone(), srv.base.clone(), token.clone());
            async move {
                let reference = format!("{i:05}-{}", "r".repeat(249));
                let customer = format!("{i:05}-{}", "ç".repeat(249));
                uncertain_action(&c, &base, &token, &customer, &reference).await;
            }
        })
        .buffer_unordered(16);
    while jobs.next().await.is_some() {}
    drop(jobs);
    let pid = srv.pid();
    let before = rss_kib(pid);
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let watching = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib(pid), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut exports = Vec::new();
    for i in 0..6 {
        let path = if i % 2 == 0 {
            "/live/uncertain.csv?lang=en"
        } else {
            "/live/uncertain.json"
        };
        let viewer = if i < 3 {
            token.clone()
        } else {
            admin.to_owned()
        };
        let (url, token) = (format!("{}{path}", srv.base), viewer);
        exports.push(tokio::spawn(async move {
            let res = http().get(url).bearer_auth(&token).send().await.unwrap();
            let status = res.status().as_u16();
            let retry = res.headers().contains_key("retry-after");
            (status, retry, res.bytes().await.unwrap())
        }));
    }
    let live = c
        .get(format!("{}/live", srv.base))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200, "the monitor answers while exports run");
    let mut served = 0;
    for e in exports {
        let (status, retry, body) = e.await.unwrap();
        if status == 503 {
            assert!(retry, "a busy export says when to come back");
            continue;
        }
        assert_eq!(status, 200);
        served += 1;
        let text = String::from_utf8(body.to_vec()).unwrap();
        let rows = if text.starts_with('[') {
            serde_json::from_str::<Vec<Value>>(&text).unwrap().len()
        } else {
            text.lines().count() - 1
        };
        assert_eq!(rows, n, "every uncertain action, once");
    }
    assert!(served >= 2, "{served} exports served");
    watching.abort();
    let grew = peak
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(before);
    eprintln!("six exports: {served} served, RSS {before} KiB then peak +{grew} KiB");
    assert!(grew < 128 * 1024, "RSS grew by {grew} KiB");
    assert!(srv.alive());
    store.close().await;
}

/// Sends `raw` (one HTTP/1.1 request) and reads the status code back.
async fn raw_status(addr: &str, raw: &str) -> u16 {
    let (addr, raw) = (addr.to_owned(), raw.to_owned());
    tokio::task::spawn_blocking(move || raw_status_blocking(&addr, &raw))
        .await
        .unwrap()
}

fn raw_status_blocking(addr: &str, raw: &str) -> u16 {
    use std::io::{Read, Write};
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(raw.as_bytes()).unwrap();
    let mut buf = [0u8; 64];
    let n = sock.read(&mut buf).unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    head.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The Host rule reads every name a request carries: a second Host header
/// and an absolute-form target naming another host are 400, and an HTTP/2
/// request whose `:authority` names another host is refused like a Host
/// header would be (421 on an open monitor).
#[tokio::test]
async fn every_form_of_the_target_meets_the_host_rule() {
    let s = Srv::sqlite().await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let two = raw_status(
        &addr,
        "GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(two, 400, "two Host headers");
    let absolute = raw_status(
        &addr,
        "GET http://evil.example/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(absolute, 400, "an absolute-form target naming another host");
    let same = raw_status(
        &addr,
        &format!("GET http://{addr}/healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(same, 200, "an absolute-form target naming the same host");
    // HTTP/2: the authority is the URL's host; reqwest sends no Host.
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .resolve("evil.example", addr.parse().unwrap())
        .build()
        .unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let res = h2
        .get(format!("http://evil.example:{port}/live/data.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.status(), 421, ":authority naming another host");
    let res = h2
        .get(format!("http://evil.example:{port}/live/data.json"))
        .header("host", format!("127.0.0.1:{port}"))
        .send()
        .await
        .unwrap();
    assert!(
        matches!(res.status().as_u16(), 400 | 421),
        ":authority and Host disagreeing: {}",
        res.status()
    );
    assert_eq!(
        h2.get(s.url("/live/data.json"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

/// An open monitor (loopback, no admin token) refuses a request that any
/// common proxy header says was forwarded, and every cookie-authenticated
/// answer under /live says `Cache-Control: no-store`.
#[tokio::test]
async fn proxy_headers_close_an_open_monitor_and_live_answers_are_not_cached() {
    let s = Srv::sqlite().await;
    let c = http();
    for h in [
        "x-real-ip",
        "via",
        "x-forwarded-host",
        "x-forwarded-proto",
        "true-client-ip",
        "cf-connecting-ip",
    ] {
        let res = c
            .get(s.url("/live/data.json"))
            .header(h, "203.0.113.9")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{h}");
    }
    for path in [
        "/live",
        "/live/data.json",
        "/live/fragment",
        "/live/uncertain.csv",
        "/live/uncertain.json",
    ] {
        let res = c.get(s.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.headers()["cache-control"], "no-store", "{path}");
    }
}

/// A body naming a member twice is a 422 naming it, on a guarded route (in
/// the layer, before anything is stored: a clean retry with the same key
/// then runs) and on a plain one.
#[tokio::test]
async fn duplicate_members_are_refused_before_anything_is_stored() {
    let s = Srv::sqlite().await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let res = c
        .post(s.url("/v1/demo/charges"))
        .bearer_auth(&token)
        .header("idempotency-key", "dup-1")
        .header("content-type", "application/json")
        .body(r#"{"amount_cents":100,"amount_cents":5,"currency":"BRL","customer":"c"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    let p: Value = res.json().await.unwrap();
    assert_eq!(p["type"], "urn:idem:problem:duplicate-member");
    assert_eq!(p["member"], "amount_cents");
    let clean = c
        .post(s.url("/v1/demo/charges"))
        .bearer_auth(&token)
        .header("idempotency-key", "dup-1")
        .json(&json!({"amount_cents": 5, "currency": "BRL", "customer": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(clean.status(), 201, "the clean retry runs");
    assert!(!clean.headers().contains_key("idempotent-replayed"));
    let res = c
        .post(s.url("/v1/intents"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(r#"{"action":"pix.cobranca","payload":{"cliente_id":"c","valor":"1.00","valor":"9.00","chave_pix_destino":"a@b.c","referencia_intencao":"D-1"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    let p: Value = res.json().await.unwrap();
    assert_eq!(p["member"], "valor");
    assert_eq!(p["at"], "$.payload");
}

/// Text past its documented length is a 422 naming the field and the
/// limit: a customer, a 3,000-character reference (which PostgreSQL's index
/// could not hold), a tenant's name.
async fn long_texts_are_refused_naming_the_field_and_the_limit(db: &Db) {
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    for (customer, reference, field) in [
        ("c".repeat(256), "R-1".to_owned(), "cliente_id"),
        ("c".to_owned(), "r".repeat(3_000), "referencia_intencao"),
    ] {
        let res = c
            .post(s.url("/v1/intents"))
            .bearer_auth(&token)
            .json(&json!({"action": "pix.cobranca",
                "payload": {"cliente_id": customer, "valor": "1.00",
                            "chave_pix_destino": "a@b.c", "referencia_intencao": reference}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{field}");
        let p: Value = res.json().await.unwrap();
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains(field) && detail.contains("at most 255"),
            "{detail}"
        );
    }
    let e = s
        .store
        .create_tenant(
            &idem_core::TenantId::try_from("longname").unwrap(),
            &"n".repeat(201),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("at most 200"), "{e}");
}

/// Direction overrides in what a client sent are written out wherever the
/// monitor shows it to a person: its page, its copy buttons, its CSV.
async fn bidi_controls_are_written_out_where_people_read(db: &Db) {
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let key = uncertain_action(&c, &s.base, &token, "cli\u{202E}ente", "FAT-1\u{202E}2-TAF").await;
    for path in [
        "/live?lang=en".to_owned(),
        format!("/live/actions/{key}?lang=en"),
        "/live/uncertain.csv?lang=en".to_owned(),
    ] {
        let text = c
            .get(s.url(&path))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!text.contains('\u{202E}'), "{path} shows the override raw");
        assert!(
            text.contains("FAT-1&lt;U+202E&gt;2-TAF") || text.contains("FAT-1<U+202E>2-TAF"),
            "{path}"
        );
    }
}

/// With HTTP_PROXY and HTTPS_PROXY set, the relay still connects by itself
/// (so the address rule checks the address it reaches): the proxy is never
/// asked.
#[tokio::test]
async fn the_relay_ignores_a_proxy_from_the_environment() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = proxy.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
        }
    });
    let db = Db::sqlite();
    let srv = common::child_serve(
        &db.url,
        &["--demo"],
        &[
            ("HTTP_PROXY", proxy_url.as_str()),
            ("HTTPS_PROXY", proxy_url.as_str()),
            ("ALL_PROXY", proxy_url.as_str()),
            ("http_proxy", proxy_url.as_str()),
        ],
    )
    .await;
    let store = common::store(&db.url).await;
    let token = tenant(&store, "acme").await;
    let t = idem_core::TenantId::try_from("acme").unwrap();
    store
        .session()
        .await
        .unwrap()
        .add_webhook_endpoint(
            &t,
            &idem_store::WebhookEndpoint {
                endpoint_id: "ep_proxy".into(),
                url: "http://hooks.internal.example/h".into(),
                events: "*".into(),
                secret: "c2VjcmV0c2VjcmV0c2VjcmV0".into(),
                created_ms: store.now_ms(),
            },
        )
        .await
        .unwrap();
    let charged = http()
        .post(format!("{}/v1/demo/charges", srv.base))
        .bearer_auth(&token)
        .header("idempotency-key", "proxy-1")
        .json(&json!({"amount_cents": 100, "currency": "BRL", "customer": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(charged.status(), 201);
    // Wait for the relay's first attempt to fail on its own.
    let t0 = Instant::now();
    loop {
        let attempts = common::store(&db.url)
            .await
            .admin_webhook_counts()
            .await
            .unwrap();
        if attempts.retrying + attempts.dead_lettered >= 1 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the relay never tried"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the proxy was asked");
    store.close().await;
}

/// `begin` checks its `action` against the key's (a key names one action),
/// and `reconcile` is for an action whose outcome is unknown: a claim that
/// started fresh and still runs is completed or failed by its holder.
async fn begin_checks_the_action_and_reconcile_needs_an_uncertain_claim(db: &Db) {
    let s = Srv::spawn(&db.url, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let res = record_and_claim(&c, &s.base, &token, "c", "R-7").await;
    let key = res["key"].as_str().unwrap();
    let claim = res["claim"]["token"].clone();
    let reconcile = c
        .post(s.url(&format!("/v1/actions/{key}/reconcile")))
        .bearer_auth(&token)
        .json(&json!({"token": claim, "outcome": "completed", "response": "{}"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reconcile.status(), 422);
    let p: Value = reconcile.json().await.unwrap();
    assert!(
        p["detail"].as_str().unwrap().contains("not uncertain"),
        "{p}"
    );
    let done = c
        .post(s.url(&format!("/v1/actions/{key}/complete")))
        .bearer_auth(&token)
        .json(&json!({"token": claim, "response": "{}"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let other = c
        .post(s.url(&format!("/v1/actions/{key}/begin")))
        .bearer_auth(&token)
        .json(&json!({"action": "email.cobranca"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 422);
    let p: Value = other.json().await.unwrap();
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("belongs to action `pix.cobranca`"),
        "{p}"
    );
    let same = c
        .post(s.url(&format!("/v1/actions/{key}/begin")))
        .bearer_auth(&token)
        .json(&json!({"action": "pix.cobranca"}))
        .send()
        .await
        .unwrap();
    assert_eq!(same.status(), 200, "completed");
}

/// A server told to stop ends its live feeds first: a page's stream ends
/// well within 2 s of SIGTERM (the page then says it lost the feed),
/// rather than showing "live" through the shutdown's grace. Between them,
/// the stream sends something at least every second.
#[tokio::test]
async fn a_stopping_server_ends_its_live_feeds_at_once() {
    let db = Db::sqlite();
    let mut srv = common::child_serve(&db.url, &[], &[]).await;
    let mut res = http()
        .get(format!("{}/live/events", srv.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // The first event, then silence never longer than the heartbeat.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(3_500) {
        let chunk = tokio::time::timeout(Duration::from_millis(1_600), res.chunk())
            .await
            .expect("a feed is never silent for 1.6 s")
            .unwrap();
        assert!(chunk.is_some(), "the feed ended by itself");
    }
    let stop = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &srv.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    loop {
        match tokio::time::timeout(Duration::from_secs(2), res.chunk()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None) | Err(_)) => break,
            Err(_) => panic!("the feed still ran 2 s after SIGTERM"),
        }
    }
    let ended = stop.elapsed();
    assert!(ended < Duration::from_secs(2), "{ended:?}");
    // And the server goes: nothing else held it.
    let t = Instant::now();
    while srv.alive() && t.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!srv.alive(), "the server is still up 5 s after SIGTERM");
}
