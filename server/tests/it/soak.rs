//! The cancellation soak: clients that give up at any moment, on every
//! write route, must never leave the store unable to write, readiness
//! lying, or a row in a state the model does not have. On SQLite and
//! PostgreSQL.
//!
//! Sixteen clients drive every write route (record with and without a
//! claim, begin, complete, renew, uncertain, fail, the event claim and its
//! completion, the Idempotency-Key layer's demo charge) with a time-out
//! drawn from 1 ms to 1 s (log-uniform, so half are under 32 ms), and
//! `curl` processes are SIGKILLed mid-request, while another tenant
//! stalls tokenless uploads, floods HTTP/2 streams and drops claims that
//! wait. Then plain writes must
//! answer 2xx within 2 s each, `/readyz` 200, and every action and event
//! claim a state its machine allows.

use crate::common;

use common::{tenant, TestApp as Srv};
use idem_testkit::TestDb as Db;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("soak").await
}

idem_testkit::both!(clients_that_give_up_anywhere_never_wedge_the_store);

/// A small xorshift: the test needs spread, not quality, and no new
/// dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// From 1 ms to 1 s, log-uniform.
    fn cut(&mut self) -> Duration {
        let unit = (self.next() % 10_000) as f64 / 10_000.0;
        Duration::from_micros((1_000.0 * 1_000f64.powf(unit)) as u64)
    }
}

fn intent(reference: &str) -> Value {
    json!({"cliente_id": "c-1", "valor": "180.00",
           "chave_pix_destino": "fulano@example.com",
           "referencia_intencao": reference})
}

/// One request, given up after `cut`: its answer's status and body, or
/// `None` when the client gave up first.
async fn send(req: reqwest::RequestBuilder, cut: Duration) -> Option<(u16, Value)> {
    let res = req.timeout(cut).send().await.ok()?;
    let status = res.status().as_u16();
    let body = res.json::<Value>().await.unwrap_or(Value::Null);
    Some((status, body))
}

async fn clients_that_give_up_anywhere_never_wedge_the_store(db: &Db) {
    let s = Srv::spawn(&db.url, |c| c.demo = true).await;
    let token = tenant(&s.store, "acme").await;
    let stop = Instant::now() + Duration::from_secs(8);
    let mut clients = Vec::new();
    for w in 0..16u64 {
        let (base, token) = (s.base.clone(), token.clone());
        clients.push(tokio::spawn(async move {
            let c = reqwest::Client::new();
            let mut rng = Rng(w.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut n = 0u64;
            while Instant::now() < stop {
                n += 1;
                let reference = format!("SOAK-{w}-{n}");
                let post = |path: String| c.post(format!("{base}{path}")).bearer_auth(&token);
                match rng.next() % 6 {
                    0 => {
                        let body = json!({"action": "pix.cobranca", "payload": intent(&reference)});
                        send(post("/v1/intents".into()).json(&body), rng.cut()).await;
                    }
                    1 => {
                        let path = format!("/v1/events/soak/{reference}");
                        if let Some((201, claim)) =
                            send(post(path.clone()).json(&json!({})), rng.cut()).await
                        {
                            let done = json!({"token": claim["token"]});
                            send(post(format!("{path}/complete")).json(&done), rng.cut()).await;
                        }
                    }
                    2 => {
                        let body =
                            json!({"amount_cents": 100, "currency": "BRL", "customer": reference});
                        let req = post("/v1/demo/charges".into())
                            .header("idempotency-key", &reference)
                            .json(&body);
                        send(req, rng.cut()).await;
                    }
                    step => {
                        let body = json!({"action": "pix.cobranca", "payload": intent(&reference),
                                          "claim": {"lease_ms": 30000, "attempt_id": reference}});
                        let Some((201 | 200, res)) =
                            send(post("/v1/intents".into()).json(&body), rng.cut()).await
                        else {
                            continue;
                        };
                        let key = res["key"].as_str().unwrap_or_default().to_owned();
                        let claim = &res["claim"];
                        let token_n = claim["token"].clone();
                        let path = |what: &str| format!("/v1/actions/{key}/{what}");
                        let (what, body) = match step {
                            3 => (
                                "complete",
                                json!({"token": token_n, "response": {"charge": n}}),
                            ),
                            4 => ("renew", json!({"token": token_n, "lease_ms": 30000})),
                            _ if n.is_multiple_of(2) => {
                                ("uncertain", json!({"token": token_n, "error": "timeout"}))
                            }
                            _ => (
                                "fail",
                                json!({"token": token_n, "error": "declined", "retryable": true}),
                            ),
                        };
                        send(post(path(what)).json(&body), rng.cut()).await;
                        let again = json!({"action": "pix.cobranca", "lease_ms": 30000});
                        send(post(path("begin")).json(&again), rng.cut()).await;
                    }
                }
            }
        }));
    }
    // Clients killed outright, as a pod is: curl sends a claim and dies
    // 0 to 50 ms later, without closing anything itself.
    let killer = {
        let (base, token) = (s.base.clone(), token.clone());
        tokio::spawn(async move {
            let mut rng = Rng(0xDEAD_BEEF);
            let mut killed = 0;
            while Instant::now() < stop {
                let body = json!({"action": "pix.cobranca", "payload": intent(&format!("KILLED-{killed}")),
                                  "claim": {"lease_ms": 30000}})
                .to_string();
                let mut child = tokio::process::Command::new("curl")
                    .args([
                        "-s",
                        "-o",
                        "/dev/null",
                        "-X",
                        "POST",
                        "-H",
                        "content-type: application/json",
                    ])
                    .arg("-H")
                    .arg(format!("authorization: Bearer {token}"))
                    .arg("--data")
                    .arg(&body)
                    .arg(format!("{base}/v1/intents"))
                    .kill_on_drop(true)
                    .spawn()
                    .expect("curl runs the killed clients");
                tokio::time::sleep(Duration::from_micros(rng.next() % 50_000)).await;
                // SIGKILL: the socket closes as the process dies.
                let _ = child.start_kill();
                let _ = child.wait().await;
                killed += 1;
            }
            killed
        })
    };
    // Meanwhile another tenant takes every way there was to take the
    // server from everyone: stalled uploads with no token, HTTP/2 streams
    // by the dozen, and claims that wait (`wait_ms`) and are dropped.
    let noisy = tenant(&s.store, "noisy").await;
    let attacker = {
        let (base, noisy) = (s.base.clone(), noisy.clone());
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let addr = base.trim_start_matches("http://").to_owned();
            let mut stalled = Vec::new();
            for i in 0..64 {
                let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
                let head = format!(
                    "POST /s HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nname=stalled-{i}&"
                );
                sock.write_all(head.as_bytes()).await.unwrap();
                stalled.push(sock);
            }
            let h2 = reqwest::Client::builder()
                .http2_prior_knowledge()
                .build()
                .unwrap();
            let body = json!({"action": "pix.cobranca", "payload": intent("NOISY-HELD"),
                              "claim": {"lease_ms": 60000}});
            let held: Value = h2
                .post(format!("{base}/v1/intents"))
                .bearer_auth(&noisy)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let key = held["key"].as_str().unwrap_or_default().to_owned();
            let mut rng = Rng(0xFEED_F00D);
            let mut dropped = 0u64;
            while Instant::now() < stop {
                let waits: Vec<_> = (0..48)
                    .map(|_| {
                        let req = h2
                            .post(format!("{base}/v1/actions/{key}/begin"))
                            .bearer_auth(&noisy)
                            .json(&json!({"action": "pix.cobranca", "wait_ms": 20000}))
                            .timeout(rng.cut());
                        tokio::spawn(async move { req.send().await.is_err() })
                    })
                    .collect();
                for w in waits {
                    dropped += u64::from(w.await.unwrap_or(false));
                }
            }
            drop(stalled);
            dropped
        })
    };
    for c in clients {
        c.await.unwrap();
    }
    let dropped = attacker.await.unwrap();
    assert!(dropped > 100, "only {dropped} waits were dropped");
    let killed = killer.await.unwrap();
    assert!(killed > 10, "only {killed} clients were killed");
    // What the clients left running ends within a second or so.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let c = reqwest::Client::new();
    for i in 0..5 {
        let started = Instant::now();
        let res = c
            .post(s.url("/v1/intents"))
            .bearer_auth(&token)
            .json(&json!({"action": "pix.cobranca", "payload": intent(&format!("AFTER-{i}"))}))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap_or_else(|e| panic!("plain write {i} after the soak: {e}"));
        let took = started.elapsed();
        assert_eq!(
            res.status(),
            201,
            "plain write {i}: {}",
            res.text().await.unwrap()
        );
        assert!(
            took < Duration::from_secs(2),
            "plain write {i} took {took:?}"
        );
    }
    let ready = c.get(s.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());
    // Nothing the clients or the attacker left holds a write turn.
    assert_eq!(s.state.hosts.turns.in_use(), 0, "write turns still held");
    // Every row is in a state its machine has.
    let bad_actions = s
        .texts(
            "select idem_key from actions where tenant_id = 'acme' and not (
                (state = 'started' and lease_until_ms is not null)
             or (state = 'completed' and response is not null)
             or (state = 'failed' and error is not null and retryable is not null)
             or (state = 'uncertain'))",
        )
        .await;
    assert!(
        bad_actions.is_empty(),
        "actions in no state of the model: {bad_actions:?}"
    );
    let orphans = s
        .texts(
            "select a.idem_key from actions a where a.tenant_id = 'acme' and not exists
               (select 1 from intents i where i.tenant_id = a.tenant_id and i.idem_key = a.idem_key)",
        )
        .await;
    assert!(orphans.is_empty(), "actions with no intent: {orphans:?}");
}

/// `/readyz` writes: 503 naming the reason while another process holds
/// SQLite's write lock (here another connection to the file), within 10 s
/// of it taking the lock, and 200 again within 10 s of it letting go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_says_503_while_the_store_cannot_write() {
    use sqlx::{ConnectOptions, Connection};
    let s = Srv::sqlite().await;
    let c = reqwest::Client::new();
    let ready = || async {
        let res = c.get(s.url("/readyz")).send().await.unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    };
    assert_eq!(ready().await.0, 200);
    let opts: sqlx::sqlite::SqliteConnectOptions = s.db_url.parse().unwrap();
    let mut other = opts.connect().await.unwrap();
    sqlx::query("begin immediate")
        .execute(&mut other)
        .await
        .unwrap();
    let started = Instant::now();
    let (status, why) = loop {
        let (status, why) = ready().await;
        if status != 200 || started.elapsed() > Duration::from_secs(10) {
            break (status, why);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        status,
        503,
        "still ready {:?} after another writer took the lock",
        started.elapsed()
    );
    assert!(why.contains("locked"), "{why}");
    sqlx::query("rollback").execute(&mut other).await.unwrap();
    other.close().await.unwrap();
    let released = Instant::now();
    loop {
        let (status, why) = ready().await;
        if status == 200 {
            break;
        }
        assert!(
            released.elapsed() < Duration::from_secs(10),
            "still {status} {why}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
