//! The outbox relay through real HTTP on both backends: demo charges write
//! `charge.created` to the outbox with their ledger row, the relay inside
//! the server delivers them as Standard Webhooks to receivers running here,
//! which verify every signature themselves (HMAC-SHA256, independently of
//! the relay's code). The server's clock is moved instead of waiting out
//! backoffs and the 24 h give-up time.

use crate::common;

use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use idem_core::TenantId;
use idem_server::relay::RelayConfig;
use idem_store::{Store, WebhookEndpoint};
use idem_testkit::TestDb;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A delivery as it arrived: `webhook-id`, `webhook-timestamp`,
/// `webhook-signature` and the body.
type Raw = (String, String, String, Vec<u8>);

/// A receiver: answers `status` (200 unless told otherwise), verifies each
/// request's signature, and keeps what it got.
#[derive(Clone)]
struct Receiver {
    url: String,
    secret: Vec<u8>,
    status: Arc<AtomicU16>,
    got: Arc<Mutex<Vec<(String, Value)>>>,
    in_flight: Arc<Mutex<BTreeSet<String>>>,
    /// Requests that arrived while another with the same id was in flight.
    overlaps: Arc<AtomicUsize>,
    /// The `user-agent` of each accepted delivery: which relay sent it.
    senders: Arc<Mutex<Vec<String>>>,
    bad_signatures: Arc<AtomicUsize>,
    /// Each accepted delivery as it arrived.
    raw: Arc<Mutex<Vec<Raw>>>,
}

impl Receiver {
    async fn start(secret: &[u8]) -> Self {
        let r = Receiver {
            url: String::new(),
            secret: secret.to_vec(),
            status: Arc::new(AtomicU16::new(200)),
            got: Arc::default(),
            in_flight: Arc::default(),
            overlaps: Arc::default(),
            senders: Arc::default(),
            bad_signatures: Arc::default(),
            raw: Arc::default(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let state = r.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let r = state.clone();
                async move { r.receive(&headers, &body).await }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, ..r }
    }

    async fn receive(&self, headers: &HeaderMap, body: &[u8]) -> StatusCode {
        let h = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let (id, ts, sig) = (
            h("webhook-id"),
            h("webhook-timestamp"),
            h("webhook-signature"),
        );
        let want = idem_testkit::webhook_signature(&self.secret, &id, &ts, body);
        if sig != want || id.is_empty() || ts.parse::<i64>().is_err() {
            self.bad_signatures.fetch_add(1, Ordering::SeqCst);
            return StatusCode::UNAUTHORIZED;
        }
        if !self.in_flight.lock().unwrap().insert(id.clone()) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        // Long enough for a second relay to try the same message meanwhile.
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.in_flight.lock().unwrap().remove(&id);
        let status = StatusCode::from_u16(self.status.load(Ordering::SeqCst)).unwrap();
        if status.is_success() {
            let v: Value = serde_json::from_slice(body).unwrap();
            self.got.lock().unwrap().push((id.clone(), v));
            self.senders.lock().unwrap().push(h("user-agent"));
            self.raw.lock().unwrap().push((id, ts, sig, body.to_vec()));
        }
        status
    }

    fn distinct(&self) -> BTreeMap<String, Value> {
        self.got.lock().unwrap().iter().cloned().collect()
    }

    async fn until_distinct(&self, n: usize) -> BTreeMap<String, Value> {
        let t = Instant::now();
        while self.distinct().len() < n {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "only {} of {n} messages arrived",
                self.distinct().len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.distinct()
    }
}

struct Srv {
    base: String,
    clock: common::TestClock,
    store: Store,
    token: String,
    tenant: TenantId,
    http: reqwest::Client,
    db: TestDb,
}

fn relay_config() -> RelayConfig {
    RelayConfig {
        lease: Duration::from_secs(3),
        timeout: Duration::from_millis(1_000),
        retry_base: Duration::from_secs(1),
        idle: Duration::from_millis(20),
        // The test receivers listen on 127.0.0.1.
        allow_private: true,
        ..RelayConfig::default()
    }
}

async fn on(db: TestDb) -> Srv {
    let app = common::TestApp::spawn(&db.url, |c| {
        c.relay = Some(relay_config());
        // Alerts are evaluated often, so a test waits for the clock it
        // moves, not for the evaluator's period.
        c.alert_every = Duration::from_millis(50);
    })
    .await;
    let tenant = TenantId::try_from("acme").unwrap();
    let token = app.store.create_tenant(&tenant, "ACME").await.unwrap();
    Srv {
        base: app.base,
        clock: app.clock,
        store: app.store,
        token: token.expose().to_owned(),
        tenant,
        http: reqwest::Client::new(),
        db,
    }
}

async fn sqlite() -> Srv {
    on(TestDb::sqlite()).await
}

async fn postgres() -> Option<Srv> {
    Some(on(TestDb::postgres("hooks").await?).await)
}

impl Srv {
    async fn done(self) {
        self.store.close().await;
        self.db.done().await;
    }

    async fn endpoint(&self, url: &str, events: &str, secret: &[u8]) -> String {
        let id = format!("ep_{}", hex::encode(rand::random::<[u8; 8]>()));
        let e = WebhookEndpoint {
            endpoint_id: id.clone(),
            url: url.to_owned(),
            events: events.to_owned(),
            secret: base64::engine::general_purpose::STANDARD.encode(secret),
            created_ms: self.store.now_ms(),
        };
        self.store
            .session()
            .await
            .unwrap()
            .add_webhook_endpoint(&self.tenant, &e)
            .await
            .unwrap();
        id
    }

    /// `n` demo charges with new keys; returns the keys.
    async fn charges(&self, n: usize) -> Vec<String> {
        let mut keys = Vec::new();
        for i in 0..n {
            let key = format!("k-{}-{i}", rand::random::<u32>());
            let res = self
                .http
                .post(format!("{}/v1/demo/charges", self.base))
                .bearer_auth(&self.token)
                .header("idempotency-key", &key)
                .json(&json!({"amount_cents": 1800 + i, "currency": "BRL", "customer": "cli-1"}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
            keys.push(key);
        }
        keys
    }

    async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    async fn counts(&self) -> idem_store::WebhookCounts {
        self.store
            .session()
            .await
            .unwrap()
            .webhook_counts(&self.tenant)
            .await
            .unwrap()
    }

    async fn until_counts(
        &self,
        ok: impl Fn(&idem_store::WebhookCounts) -> bool,
    ) -> idem_store::WebhookCounts {
        let t = Instant::now();
        loop {
            let c = self.counts().await;
            if ok(&c) {
                return c;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "deliveries stuck at {c:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

idem_testkit::both!(
    charges_reach_a_verifying_receiver_once_each,
    a_failing_receiver_gets_the_backlog_after_it_recovers,
    a_dead_endpoint_dead_letters_without_blocking_others,
    two_relays_never_deliver_one_message_at_once,
    an_alert_fires_and_resolves_through_the_relay,
);

/// Every demo charge arrives once, signed, as `charge.created` with its
/// charge id, amount and Idempotency-Key; `/metrics` and `/live` count them.
async fn charges_reach_a_verifying_receiver_once_each(s: &Srv) {
    let secret = rand::random::<[u8; 24]>();
    let r = Receiver::start(&secret).await;
    s.endpoint(&r.url, "charge.created", &secret).await;
    // Another topic's endpoint gets nothing.
    let other = Receiver::start(&secret).await;
    s.endpoint(&other.url, "refund.created", &secret).await;
    let keys = s.charges(20).await;
    let got = r.until_distinct(20).await;
    let c = s.until_counts(|c| c.delivered == 20).await;
    assert_eq!((c.pending, c.retrying, c.dead_lettered), (0, 0, 0));
    assert_eq!(r.bad_signatures.load(Ordering::SeqCst), 0);
    assert_eq!(r.got.lock().unwrap().len(), 20, "once each");
    let mut seen_keys: Vec<String> = got
        .values()
        .map(|v| {
            assert_eq!(v["type"], "charge.created");
            assert!(v["data"]["charge_id"].as_str().unwrap().starts_with("ch_"));
            assert!(v["data"]["amount_cents"].as_i64().unwrap() >= 1800);
            v["data"]["idempotency_key"].as_str().unwrap().to_owned()
        })
        .collect();
    seen_keys.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(seen_keys, keys);
    assert!(other.got.lock().unwrap().is_empty());
    book_verifier_accepts_it_and_refuses_a_changed_body(&secret, &r.raw.lock().unwrap()[0]);
    let m = s.metrics().await;
    assert!(
        m.contains("idem_webhook_deliveries{state=\"delivered\"} 20"),
        "{m}"
    );
    assert!(
        m.contains("idem_webhook_oldest_pending_age_seconds 0"),
        "{m}"
    );
    let live: Value =
        common::get_json(s.http.get(format!("{}/live/data.json?window=1h", s.base))).await;
    assert_eq!(live["webhooks"]["delivered"], 20, "{live}");
    let page = common::page(&format!("{}/live?window=1h&lang=en-US", s.base)).await;
    assert!(page.contains("id=\"live-webhooks\""), "{page}");
}

/// The book's verifier (`examples/python/verify_webhook.py`, included by
/// the webhooks chapter) on a delivery as the relay sent it.
fn book_verifier_accepts_it_and_refuses_a_changed_body(secret: &[u8], (id, ts, sig, body): &Raw) {
    use base64::Engine;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/python/verify_webhook.py"
    );
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(secret)
    );
    let body = String::from_utf8(body.clone()).unwrap();
    for (body, want) in [
        (body.clone(), "valid"),
        (body.replacen("ch_", "ch_X", 1), "invalid"),
    ] {
        let input = serde_json::json!({"secret": secret, "id": id, "timestamp": ts, "signature": sig, "body": body});
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            input.to_string().as_bytes(),
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want);
    }
}

/// A receiver answering 500 sees each message again after the backoff,
/// under the same `webhook-id`; once it recovers it gets the whole backlog.
async fn a_failing_receiver_gets_the_backlog_after_it_recovers(s: &Srv) {
    let secret = rand::random::<[u8; 24]>();
    let r = Receiver::start(&secret).await;
    r.status.store(500, Ordering::SeqCst);
    s.endpoint(&r.url, "*", &secret).await;
    s.charges(5).await;
    let c = s.until_counts(|c| c.retrying == 5).await;
    assert!(c.oldest_waiting_ms.is_some());
    let m = s.metrics().await;
    assert!(
        m.contains("idem_webhook_deliveries{state=\"retrying\"} 5"),
        "{m}"
    );
    assert!(r.got.lock().unwrap().is_empty());
    r.status.store(200, Ordering::SeqCst);
    // Past any first backoff (1 s base, jitter at most 1.2 s).
    s.clock.advance(Duration::from_secs(2));
    r.until_distinct(5).await;
    s.until_counts(|c| c.delivered == 5 && c.retrying == 0)
        .await;
    assert_eq!(r.bad_signatures.load(Ordering::SeqCst), 0);
}

/// An endpoint that refuses connections and one that never answers retry
/// on their own slots while a healthy one gets every message; after 24 h of
/// failures their deliveries are dead-lettered.
async fn a_dead_endpoint_dead_letters_without_blocking_others(s: &Srv) {
    let secret = rand::random::<[u8; 24]>();
    let ok = Receiver::start(&secret).await;
    s.endpoint(&ok.url, "*", &secret).await;
    // Nothing listens on a port just released.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", l.local_addr().unwrap())
    };
    s.endpoint(&closed, "*", &secret).await;
    // Accepts the connection and never answers.
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_url = format!("http://{}/hook", hang.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((c, _)) = hang.accept().await {
            held.push(c);
        }
    });
    s.endpoint(&hang_url, "*", &secret).await;
    s.charges(12).await;
    ok.until_distinct(12).await;
    s.until_counts(|c| c.delivered == 12 && c.retrying == 24)
        .await;
    // A day later, the next failure of each dead-letters it.
    s.clock.advance(Duration::from_secs(24 * 3600 + 60));
    let c = s.until_counts(|c| c.dead_lettered == 24).await;
    assert_eq!((c.pending, c.retrying, c.delivered), (0, 0, 12));
    let m = s.metrics().await;
    assert!(
        m.contains("idem_webhook_deliveries{state=\"dead_lettered\"} 24"),
        "{m}"
    );
}

/// Two servers (two relays) on one database: every message arrives, no two
/// attempts at one message overlap, and none is delivered twice.
async fn two_relays_never_deliver_one_message_at_once(s: &Srv) {
    let config = idem_server::config::Config {
        relay: Some(relay_config()),
        ..common::config(&s.db.url, &s.clock)
    };
    let (_second, state) = common::spawn_app(config).await;
    let secret = rand::random::<[u8; 24]>();
    let r = Receiver::start(&secret).await;
    s.endpoint(&r.url, "*", &secret).await;
    s.charges(40).await;
    r.until_distinct(40).await;
    s.until_counts(|c| c.delivered == 40).await;
    assert_eq!(r.overlaps.load(Ordering::SeqCst), 0);
    assert_eq!(r.got.lock().unwrap().len(), 40, "each once");
    // Both relays delivered: the test proves nothing about two relays when
    // one of them sent everything. Each has its own tag.
    let senders: BTreeSet<String> = r.senders.lock().unwrap().iter().cloned().collect();
    assert_eq!(senders.len(), 2, "{senders:?}");
    assert!(
        senders.iter().all(|s| s.starts_with("idem-relay/")),
        "{senders:?}"
    );
    state.api.store.close().await;
}

/// An alert on "uncertain now" above 0 held for 1 s: an action whose lease
/// runs out makes it pending, then firing once the hold has passed
/// (`alert.firing`, signed, to its endpoint; `/live` shows it); the action
/// reconciled, it resolves (`alert.resolved`) and `/live` drops it.
async fn an_alert_fires_and_resolves_through_the_relay(s: &Srv) {
    let r = Receiver::start(b"alert-secret").await;
    let ep = s.endpoint(&r.url, "charge.created", b"alert-secret").await;
    let alert = idem_store::Alert {
        alert_id: "al_0123456789abcdef".into(),
        metric: "uncertain_now".into(),
        above: "0".into(),
        for_ms: 1_000,
        window_ms: 3_600_000,
        endpoint_id: ep.clone(),
        state: idem_store::AlertState::Ok,
        since_ms: None,
        last_value: None,
        evaluated_ms: None,
        created_ms: s.store.now_ms(),
    };
    let mut session = s.store.session().await.unwrap();
    // An endpoint the tenant does not have is refused.
    let stray = idem_store::Alert {
        endpoint_id: "ep_nope".into(),
        ..alert.clone()
    };
    assert!(matches!(
        session.add_alert(&s.tenant, &stray).await,
        Err(idem_store::Error::NotFound)
    ));
    session.add_alert(&s.tenant, &alert).await.unwrap();
    let state = |want: &'static str| async move {
        let t = Instant::now();
        loop {
            let a = s
                .store
                .session()
                .await
                .unwrap()
                .alerts(&s.tenant)
                .await
                .unwrap();
            if a[0].state.as_str() == want {
                return a[0].clone();
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "alert stuck at {:?}",
                a[0]
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let key = "ab".repeat(32);
    let res = s
        .http
        .post(format!("{}/v1/actions/{key}/begin", s.base))
        .bearer_auth(&s.token)
        .json(&json!({"action": "pix.cobranca", "lease_ms": 200}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    s.clock.advance(Duration::from_millis(300));
    let pending = state("pending").await;
    assert_eq!(pending.last_value.as_deref(), Some("1"));
    assert!(r.distinct().is_empty(), "pending is not firing");
    s.clock.advance(Duration::from_millis(1_000));
    state("firing").await;
    let got = r.until_distinct(1).await;
    let (_, firing) = got.iter().next().unwrap();
    assert_eq!(firing["type"], "alert.firing", "{firing}");
    assert_eq!(firing["data"]["alert_id"], "al_0123456789abcdef");
    assert_eq!(firing["data"]["metric"], "uncertain_now");
    assert_eq!(firing["data"]["value"], "1");
    assert_eq!(firing["data"]["tenant"], "acme");
    let live: Value =
        common::get_json(s.http.get(format!("{}/live/data.json?tenant=acme", s.base))).await;
    assert_eq!(
        live["alerts_firing"][0]["alert_id"], "al_0123456789abcdef",
        "{live}"
    );
    let page = common::page(&format!("{}/live?tenant=acme&lang=en-US", s.base)).await;
    assert!(page.contains("id=\"live-alerts\""), "{page}");
    assert!(page.contains("Alerts firing (1)"));
    // Settled: the number is back at 0 and the alert resolves.
    let res = s
        .http
        .post(format!("{}/v1/actions/{key}/reconcile", s.base))
        .bearer_auth(&s.token)
        .json(&json!({"token": 1, "outcome": "failed", "error": "the provider never got it"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    state("ok").await;
    let got = r.until_distinct(2).await;
    let resolved = got
        .values()
        .find(|v| v["type"] == "alert.resolved")
        .unwrap_or_else(|| panic!("{got:?}"));
    assert_eq!(resolved["data"]["value"], "0");
    assert_eq!(r.bad_signatures.load(Ordering::SeqCst), 0);
    // The monitor shares a read for half a second: the next one drops it.
    let t = Instant::now();
    while common::page(&format!("{}/live?tenant=acme&lang=en-US", s.base))
        .await
        .contains("id=\"live-alerts\"")
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "still shown as firing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
