//! `idem simulate-worker` (hidden): one worker process of `idem simulate
//! --broker`. It consumes conversation messages from RabbitMQ with manual
//! acknowledgement and a small prefetch, calls the model stub, charges the
//! demo provider through the public HTTP API with its strategy's key, and
//! acknowledges. At each of four kill points it may ask the simulator to
//! SIGKILL it (see [`super::broker`] for the line protocol).
//!
//! Idem's strategy ([`Worker::idem`]) is the reference consumer the manual
//! shows (its "Simulate and the broker" chapter includes this code): claim the message as an event, record the intent (or read the
//! frozen one), charge with the intent's key, complete the event, ack.
//! `examples/python/idem_worker.py` is the same consumer in Python.

use super::sim_model::{extract, Extraction, Message, Strategy, Truth};
use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

/// What the simulator passes in `IDEM_SIM_*` (and `IDEM_URL`, `IDEM_TOKEN`).
struct Settings {
    broker: String,
    queue: String,
    base: String,
    token: String,
    strategy: Strategy,
    kill_rate: f64,
    timeout_rate: f64,
    divergence_rate: f64,
    prefetch: u16,
    lease_ms: u64,
}

fn var(name: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| {
        anyhow::anyhow!("{name} is not set (this command is started by `idem simulate --broker`)")
    })
}

fn parsed<T: std::str::FromStr>(name: &str) -> anyhow::Result<T> {
    let v = var(name)?;
    v.parse()
        .map_err(|_| anyhow::anyhow!("{name}=`{v}` is not valid"))
}

/// A probability (`gen_bool` would panic outside 0–1).
fn rate(name: &str) -> anyhow::Result<f64> {
    let v: f64 = parsed(name)?;
    anyhow::ensure!(
        (0.0..=1.0).contains(&v),
        "{name}=`{v}` is not between 0 and 1"
    );
    Ok(v)
}

impl Settings {
    fn from_env() -> anyhow::Result<Self> {
        let strategy = var("IDEM_SIM_STRATEGY")?;
        Ok(Self {
            broker: var("IDEM_SIM_BROKER")?,
            queue: var("IDEM_SIM_QUEUE")?,
            base: var("IDEM_URL")?,
            token: var("IDEM_TOKEN")?,
            strategy: <Strategy as clap::ValueEnum>::from_str(&strategy, false)
                .map_err(|_| anyhow::anyhow!("IDEM_SIM_STRATEGY=`{strategy}` is not a strategy"))?,
            kill_rate: rate("IDEM_SIM_KILL_RATE")?,
            timeout_rate: rate("IDEM_SIM_TIMEOUT_RATE")?,
            divergence_rate: rate("IDEM_SIM_DIVERGENCE_RATE")?,
            prefetch: parsed("IDEM_SIM_PREFETCH")?,
            lease_ms: parsed("IDEM_SIM_LEASE_MS")?,
        })
    }
}

/// What to do with a delivery once handled.
enum Step {
    /// Done (or nothing left to do): acknowledge.
    Ack,
    /// Not done: give it back to the broker, which redelivers it.
    Requeue,
}

/// How a charge request ended.
enum Charge {
    /// The provider answered with the charge.
    Done,
    /// Another request with this key is still running (409).
    Busy,
    /// No answer (timeout, cut connection, 5xx): it may have executed.
    Unknown,
    /// Refused for good (4xx other than 409).
    Refused,
}

struct Worker {
    http: reqwest::Client,
    s: Settings,
    rng: Mutex<StdRng>,
}

/// `idem simulate-worker`: consume until killed; exit 2 on bad settings or
/// a broker that cannot be reached, 3 when the connection is lost.
pub fn run() -> ExitCode {
    let Some(rt) = super::runtime() else {
        return ExitCode::from(2);
    };
    match rt.block_on(work()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("idem simulate-worker: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn work() -> anyhow::Result<()> {
    let s = Settings::from_env()?;
    let conn = Connection::connect(&s.broker, ConnectionProperties::default())
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot reach the broker at {}: {e}",
                super::broker::redacted(&s.broker)
            )
        })?;
    let ch = conn.create_channel().await?;
    ch.basic_qos(s.prefetch, BasicQosOptions::default()).await?;
    let consumer = ch
        .basic_consume(
            s.queue.as_str().into(),
            format!("idem-sim-{}", std::process::id()).into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let prefetch = usize::from(s.prefetch);
    let seed = u64::from(std::process::id()) ^ now_ms().rotate_left(17);
    let worker = Worker {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        s,
        rng: Mutex::new(StdRng::seed_from_u64(seed)),
    };
    let w = &worker;
    consumer
        .for_each_concurrent(prefetch, |d| async move {
            match d {
                Ok(d) => w.handle(d).await,
                Err(e) => {
                    // The broker is gone: it redelivers what we held.
                    eprintln!("idem simulate-worker: {e}");
                    std::process::exit(3);
                }
            }
        })
        .await;
    Ok(())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Worker {
    /// One protocol line to the simulator. Without a simulator to read it
    /// the worker has no reason to live.
    fn emit(&self, v: &Value) {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{v}").and_then(|()| out.flush()).is_err() {
            std::process::exit(3);
        }
    }

    fn draw(&self, p: f64) -> bool {
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .gen_bool(p)
    }

    /// A kill point: with chance `--kill-rate`, ask to be SIGKILLed here and
    /// wait for it.
    async fn point(&self, at: &str) {
        if self.draw(self.s.kill_rate) {
            self.die(at).await;
        }
    }

    async fn die(&self, at: &str) {
        self.emit(&json!({"ev": "kill", "at": at}));
        // The simulator kills at once; this only ends an orphan.
        tokio::time::sleep(Duration::from_secs(30)).await;
        std::process::exit(3);
    }

    async fn handle(&self, d: Delivery) {
        let msg = serde_json::from_slice::<Message>(&d.data);
        let seq = msg.as_ref().ok().map(|m| m.seq);
        self.emit(&json!({"ev": "delivery", "redelivered": d.redelivered, "seq": seq}));
        let (step, seq) = match msg {
            Ok(m) if self.s.strategy == Strategy::Idem => {
                (self.idem(&m, d.redelivered).await, Some(m.seq))
            }
            Ok(m) => (self.naive(&m, d.redelivered).await, Some(m.seq)),
            // Not a conversation: nothing to retry.
            Err(_) => (Step::Ack, None),
        };
        let settled = match step {
            Step::Ack => {
                self.emit(&json!({"ev": "acking", "seq": seq}));
                d.ack(BasicAckOptions::default()).await
            }
            Step::Requeue => {
                d.nack(BasicNackOptions {
                    requeue: true,
                    ..BasicNackOptions::default()
                })
                .await
            }
        };
        if settled.is_err() {
            // The channel is gone: the broker redelivers what we held.
            std::process::exit(3);
        }
    }

    // ANCHOR: reference-consumer
    /// idem's consumer: claim the message, record the intent (or read the
    /// frozen one), charge with the intent's key, complete, acknowledge.
    async fn idem(&self, m: &Message, redelivered: bool) -> Step {
        // 1. Claim the message. A copy or a redelivery of a handled message
        //    is a duplicate: acknowledge it without calling the model.
        let path = format!("/v1/events/rabbitmq/{}", m.reference);
        let token = match self.post(&path, json!({"lease_ms": self.s.lease_ms})).await {
            Some((201, v)) => {
                if v["previous"] == "expired" {
                    self.emit(&json!({"ev": "takeover"}));
                }
                v["token"].as_i64().unwrap_or_default()
            }
            Some((200, _)) => return Step::Ack,
            // Another worker holds it: give it back when its lease ends.
            Some((409, v)) => return self.after(&v).await,
            // idem did not answer: later.
            _ => return self.later().await,
        };
        self.point("before-intent").await;
        // 2. The intent: the payload frozen by the first delivery, or this
        //    delivery's extraction recorded first (first write wins).
        let Some((key, amount, dest)) = self.intent(m, redelivered).await else {
            self.settle(&path, "fail", json!({"token": token, "retryable": true}))
                .await;
            return self.later().await;
        };
        self.point("after-intent").await;
        // 3. Charge with the intent's key: a retry replays, never repeats.
        match self.charge(&key, amount, &m.reference, &dest).await {
            Charge::Done => {
                self.point("after-charge").await;
                self.settle(&path, "complete", json!({"token": token}))
                    .await;
                Step::Ack
            }
            Charge::Busy | Charge::Unknown => {
                self.settle(&path, "fail", json!({"token": token, "retryable": true}))
                    .await;
                self.later().await
            }
            Charge::Refused => {
                self.settle(&path, "fail", json!({"token": token, "retryable": false}))
                    .await;
                Step::Ack
            }
        }
    }
    // ANCHOR_END: reference-consumer

    /// The intent's key and frozen amount and destination: read it, or
    /// call the model and record it.
    async fn intent(&self, m: &Message, redelivered: bool) -> Option<(String, i64, String)> {
        let url = format!("{}/v1/intents/pix.cobranca/{}", self.s.base, m.reference);
        let res = self
            .http
            .get(url)
            .bearer_auth(&self.s.token)
            .send()
            .await
            .ok()?;
        let v: Value = match res.status().as_u16() {
            200 => res.json().await.ok()?,
            404 => {
                let x = self.model(m, redelivered);
                let body = json!({
                    "action": "pix.cobranca",
                    "payload": {
                        "cliente_id": m.reference,
                        "valor": format!("{}.{:02}", x.amount_cents / 100, x.amount_cents % 100),
                        "chave_pix_destino": x.destination,
                        "referencia_intencao": m.reference,
                    }
                });
                match self.post("/v1/intents", body).await? {
                    (200 | 201, v) => v,
                    _ => return None,
                }
            }
            _ => return None,
        };
        // The amount rule freezes money as whole cents ("18000").
        let frozen = &v["payload"];
        Some((
            v["key"].as_str()?.to_owned(),
            frozen["valor"].as_str()?.parse().ok()?,
            frozen["chave_pix_destino"].as_str()?.to_owned(),
        ))
    }

    /// The three per-attempt strategies: call the model on every delivery
    /// and charge with a key made from the attempt.
    async fn naive(&self, m: &Message, redelivered: bool) -> Step {
        self.point("before-intent").await;
        let x = self.model(m, redelivered);
        let key = match self.s.strategy {
            Strategy::Clock => format!("{}-{}", m.reference, now_ms()),
            Strategy::ModelHash => hex::encode(Sha256::digest(x.text.as_bytes())),
            _ => {
                let r: u128 = self.rng.lock().unwrap_or_else(|e| e.into_inner()).gen();
                format!("{r:032x}")
            }
        };
        self.point("after-intent").await;
        match self
            .charge(&key, x.amount_cents, &m.reference, &x.destination)
            .await
        {
            Charge::Done => {
                self.point("after-charge").await;
                Step::Ack
            }
            Charge::Busy | Charge::Unknown => Step::Requeue,
            Charge::Refused => Step::Ack,
        }
    }

    /// The model stub: right on a message's first delivery; on a
    /// redelivery or a producer's copy its words vary and, with chance
    /// `--divergence-rate`, so does what it extracts.
    fn model(&self, m: &Message, redelivered: bool) -> Extraction {
        self.emit(&json!({"ev": "model"}));
        let t = Truth {
            reference: m.reference.clone(),
            amount_cents: m.amount_cents,
            destination: m.destination.clone(),
        };
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let attempt = if redelivered || m.retry {
            rng.gen_range(2..=5)
        } else {
            1
        };
        extract(&t, attempt, &mut rng, self.s.divergence_rate)
    }

    /// Charges through the demo provider. With chance `--timeout-rate` the
    /// answer is lost after the charge executed; with chance `--kill-rate`
    /// the worker is killed while the request is in flight.
    async fn charge(&self, key: &str, amount: i64, reference: &str, dest: &str) -> Charge {
        let mut req = self
            .http
            .post(format!("{}/v1/demo/charges", self.s.base))
            .bearer_auth(&self.s.token)
            .header("Idempotency-Key", key)
            .json(&json!({
                "amount_cents": amount,
                "currency": "BRL",
                "customer": format!("{reference}|{dest}"),
            }));
        if self.draw(self.s.timeout_rate) {
            req = req.header("Idem-Demo-Fault", "drop");
        }
        let sending = tokio::spawn(req.send());
        if self.draw(self.s.kill_rate) {
            // Let the request leave, so the kill lands while it runs.
            tokio::time::sleep(Duration::from_millis(1)).await;
            self.die("during-charge").await;
        }
        match sending.await {
            Ok(Ok(res)) => match res.status().as_u16() {
                200..=299 => match res.bytes().await {
                    Ok(_) => Charge::Done,
                    Err(_) => Charge::Unknown,
                },
                409 => Charge::Busy,
                500..=599 => Charge::Unknown,
                _ => Charge::Refused,
            },
            _ => Charge::Unknown,
        }
    }

    /// POSTs JSON to idem; the status and body, or None without an answer.
    async fn post(&self, path: &str, body: Value) -> Option<(u16, Value)> {
        let res = self
            .http
            .post(format!("{}{path}", self.s.base))
            .bearer_auth(&self.s.token)
            .json(&body)
            .send()
            .await
            .ok()?;
        let status = res.status().as_u16();
        Some((status, res.json().await.unwrap_or(Value::Null)))
    }

    /// Completes or fails a claimed event. A refusal (409: the lease ran
    /// out and another worker holds it) leaves the message to that worker.
    async fn settle(&self, path: &str, verb: &str, body: Value) {
        let _ = self.post(&format!("{path}/{verb}"), body).await;
    }

    /// Gives the message back when the lease another worker holds ends (the
    /// 409's `lease_until_ms`), so it is not spun on meanwhile.
    async fn after(&self, problem: &Value) -> Step {
        let until = problem["lease_until_ms"].as_u64().unwrap_or_default();
        let wait = until.saturating_sub(now_ms()).min(self.s.lease_ms);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        Step::Requeue
    }

    /// Gives the message back after a short pause.
    async fn later(&self) -> Step {
        tokio::time::sleep(Duration::from_millis(200)).await;
        Step::Requeue
    }
}
