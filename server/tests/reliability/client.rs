//! One client process of the reliability suite: several agent workers that
//! record intents and charge through guarded actions until told to stop,
//! retrying through every crash of the server. It writes what the server
//! acknowledged to a journal (JSON lines) that the orchestrator checks
//! against the database once the run is over.

use anyhow::{anyhow, Context};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Concurrent workers in one client process.
const WORKERS: usize = 4;
/// Lease asked for on `begin`: short, so a worker that died mid-action is
/// visibly uncertain within the run.
const LEASE_MS: u64 = 2_000;
/// How long one step may keep failing before the worker reports that it
/// gave up. A request killed with the server holds its Idempotency-Key's
/// lock for a minute (the layer's default), so a charge may wait that long.
const STEP_LIMIT: Duration = Duration::from_secs(150);

/// What the client process was started with.
pub struct Args {
    pub base: String,
    pub tokens: Vec<String>,
    pub id: u32,
    pub journal: PathBuf,
    pub stop: PathBuf,
    pub seed: u64,
}

impl Args {
    /// `client BASE TOKEN,TOKEN ID JOURNAL STOPFILE SEED`
    pub fn parse(a: &[String]) -> anyhow::Result<Self> {
        let [base, tokens, id, journal, stop, seed] = a else {
            return Err(anyhow!(
                "usage: reliability client BASE TOKENS ID JOURNAL STOP SEED"
            ));
        };
        Ok(Self {
            base: base.clone(),
            tokens: tokens.split(',').map(str::to_owned).collect(),
            id: id.parse().context("client id")?,
            journal: journal.into(),
            stop: stop.into(),
            seed: seed.parse().context("seed")?,
        })
    }
}

/// Counts of what the workers met, written as the journal's last line.
#[derive(Default)]
struct Met {
    conversations: AtomicU64,
    connection_errors: AtomicU64,
    unavailable: AtomicU64,
    in_flight: AtomicU64,
    replays: AtomicU64,
    redeliveries: AtomicU64,
    takeovers: AtomicU64,
}

struct Ctx {
    http: reqwest::Client,
    args: Args,
    journal: Mutex<std::fs::File>,
    met: Met,
}

impl Ctx {
    fn write(&self, line: &Value) {
        // The journal is the client's memory of what was acknowledged; a
        // failure to write it would make the final check meaningless.
        let mut f = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = writeln!(f, "{line}") {
            eprintln!("client: cannot write the journal: {e}");
            std::process::exit(3);
        }
    }

    fn violation(&self, what: String) {
        eprintln!("client {}: VIOLATION: {what}", self.args.id);
        self.write(&json!({ "t": "violation", "what": what }));
    }
}

/// An answer: status, headers we look at, and the JSON body (or null).
struct Answer {
    status: u16,
    replayed: bool,
    body: Value,
}

async fn post(
    c: &Ctx,
    token: &str,
    path: &str,
    body: &Value,
    key: Option<&str>,
) -> Result<Answer, ()> {
    let mut req = c
        .http
        .post(format!("{}{path}", c.args.base))
        .bearer_auth(token)
        .json(body);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    answer(c, req).await
}

async fn get(c: &Ctx, token: &str, path: &str) -> Result<Answer, ()> {
    let req = c
        .http
        .get(format!("{}{path}", c.args.base))
        .bearer_auth(token);
    answer(c, req).await
}

/// Sends; a connection error or a 5xx counts as "try again" (`Err`), with
/// a short pause so a restarting server is not hammered.
async fn answer(c: &Ctx, req: reqwest::RequestBuilder) -> Result<Answer, ()> {
    let res = match req.send().await {
        Ok(r) => r,
        Err(_) => {
            c.met.connection_errors.fetch_add(1, Ordering::Relaxed);
            pause().await;
            return Err(());
        }
    };
    let status = res.status().as_u16();
    let replayed = res.headers().get("idempotent-replayed").is_some();
    let body = match res.bytes().await {
        Ok(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
        Err(_) => {
            c.met.connection_errors.fetch_add(1, Ordering::Relaxed);
            pause().await;
            return Err(());
        }
    };
    if status >= 500 {
        c.met.unavailable.fetch_add(1, Ordering::Relaxed);
        pause().await;
        return Err(());
    }
    Ok(Answer {
        status,
        replayed,
        body,
    })
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(40)).await;
}

/// The amount the conversation asks for, in cents.
fn true_amount(reference: &str) -> i64 {
    let h = reference
        .bytes()
        .fold(1_469_598_103_934_665_603u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(1_099_511_628_211)
        });
    1_000 + i64::try_from(h % 400_000).unwrap_or(0)
}

/// One model extraction: a retried one sometimes reads a different amount.
fn extraction(reference: &str, attempt: u32, rng: &mut StdRng) -> Value {
    let mut cents = true_amount(reference);
    if attempt > 1 && rng.gen_bool(0.3) {
        cents += 100 * rng.gen_range(1..40);
    }
    json!({
        "cliente_id": reference,
        "valor": format!("{}.{:02}", cents / 100, cents % 100),
        "chave_pix_destino": format!("{reference}@example.com"),
        "referencia_intencao": reference,
    })
}

fn cents_of(payload: &Value) -> Option<i64> {
    let v = payload["valor"].as_str()?;
    if let Some((units, frac)) = v.split_once('.') {
        Some(units.parse::<i64>().ok()? * 100 + frac.parse::<i64>().ok()?)
    } else {
        v.parse().ok()
    }
}

/// One conversation: record the intent (through crashes), sometimes
/// redeliver it on purpose, then act on the frozen payload.
async fn conversation(c: &Ctx, reference: String, token: &str, tenant: usize, rng: &mut StdRng) {
    c.met.conversations.fetch_add(1, Ordering::Relaxed);
    let mut sent = Vec::new();
    let mut tries = 0u32;
    let until = Instant::now() + STEP_LIMIT;
    let intent = loop {
        tries += 1;
        if Instant::now() > until {
            return c.violation(format!("{reference}: the intent was never acknowledged"));
        }
        let payload = extraction(&reference, tries, rng);
        sent.push(payload.clone());
        let body = json!({ "action": "pix.cobranca", "payload": payload });
        match post(c, token, "/v1/intents", &body, None).await {
            Ok(a) if a.status == 201 || a.status == 200 => break a.body,
            Ok(a) => {
                return c.violation(format!(
                    "{reference}: POST /v1/intents answered {} {}",
                    a.status, a.body
                ))
            }
            Err(()) => continue,
        }
    };
    let (Some(key), frozen) = (
        intent["key"].as_str().map(str::to_owned),
        &intent["payload"],
    ) else {
        return c.violation(format!(
            "{reference}: an intent answer without a key: {intent}"
        ));
    };
    let frozen_cents = cents_of(frozen);
    if !sent.iter().any(|p| cents_of(p) == frozen_cents) {
        c.violation(format!(
            "{reference}: frozen amount {frozen_cents:?} was never sent ({sent:?})"
        ));
    }
    c.write(&json!({
        "t": "intent", "ref": reference, "tenant": tenant, "key": key,
        "frozen": frozen, "sent": sent.len(),
    }));

    // A redelivery after the acknowledgement, with a fresh (often
    // different) extraction: it must land on the frozen intent.
    if rng.gen_bool(0.25) {
        c.met.redeliveries.fetch_add(1, Ordering::Relaxed);
        let body =
            json!({ "action": "pix.cobranca", "payload": extraction(&reference, 2 + tries, rng) });
        loop {
            match post(c, token, "/v1/intents", &body, None).await {
                Ok(a) if a.status == 200 => {
                    if a.body["key"] != intent["key"] || a.body["payload"] != *frozen {
                        c.violation(format!(
                            "{reference}: a redelivery changed the intent: {} vs {intent}",
                            a.body
                        ));
                    }
                    break;
                }
                Ok(a) => {
                    return c.violation(format!(
                        "{reference}: a redelivery answered {} {}",
                        a.status, a.body
                    ))
                }
                Err(()) => continue,
            }
        }
    }
    act(c, &reference, &key, token, frozen_cents.unwrap_or(0), rng).await;
}

/// Claims the action and carries it to an outcome; some workers die after
/// the claim (abandon) and some fail for good, on purpose.
async fn act(c: &Ctx, reference: &str, key: &str, token: &str, cents: i64, rng: &mut StdRng) {
    let roll = rng.gen_range(0..100);
    let plan = match roll {
        0..=7 => "abandoned",
        8..=12 => "failed",
        _ => "completed",
    };
    let path = format!("/v1/actions/{key}");
    let begin = json!({ "action": "pix.cobranca", "lease_ms": LEASE_MS });
    let until = Instant::now() + STEP_LIMIT;
    let fencing = loop {
        if Instant::now() > until {
            return c.violation(format!("{reference}: begin never answered"));
        }
        match post(c, token, &format!("{path}/begin"), &begin, None).await {
            Ok(a) if a.status == 201 || a.status == 202 => {
                if a.status == 202 {
                    c.met.takeovers.fetch_add(1, Ordering::Relaxed);
                }
                match a.body["token"].as_i64() {
                    Some(t) => break t,
                    None => return c.violation(format!("{reference}: a claim without a token")),
                }
            }
            // Our own earlier begin committed before the server died: the
            // action is finished, which happens only after our own calls.
            Ok(a) if a.status == 200 => {
                let state = a.body["status"].as_str().unwrap_or("?").to_owned();
                return c.write(
                    &json!({ "t": "action", "ref": reference, "key": key, "outcome": state }),
                );
            }
            // Our own claim from before a crash still holds the lease.
            Ok(a) if a.status == 409 => {
                c.met.in_flight.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(a) => {
                return c.violation(format!(
                    "{reference}: begin answered {} {}",
                    a.status, a.body
                ))
            }
            Err(()) => {}
        }
    };
    match plan {
        "abandoned" => {
            c.write(
                &json!({ "t": "action", "ref": reference, "key": key, "outcome": "abandoned" }),
            );
        }
        "failed" => {
            let body =
                json!({ "token": fencing, "error": "recusado pelo emissor", "retryable": false });
            finish(
                c,
                reference,
                key,
                token,
                &format!("{path}/fail"),
                &body,
                "failed",
            )
            .await;
        }
        _ => {
            let charge = json!({ "amount_cents": cents, "currency": "BRL", "customer": reference });
            let until = Instant::now() + STEP_LIMIT;
            let response = loop {
                if Instant::now() > until {
                    return c.violation(format!("{reference}: the charge never answered"));
                }
                match post(c, token, "/v1/demo/charges", &charge, Some(key)).await {
                    Ok(a) if a.status == 201 => {
                        if a.replayed {
                            c.met.replays.fetch_add(1, Ordering::Relaxed);
                        }
                        break a.body;
                    }
                    Ok(a) if a.status == 409 => {
                        c.met.in_flight.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    Ok(a) => {
                        return c.violation(format!(
                            "{reference}: the charge answered {} {}",
                            a.status, a.body
                        ))
                    }
                    Err(()) => {}
                }
            };
            let body = json!({ "token": fencing, "response": response });
            finish(
                c,
                reference,
                key,
                token,
                &format!("{path}/complete"),
                &body,
                "completed",
            )
            .await;
        }
    }
}

/// Sends complete or fail until the server answers. A 409 after a lost
/// answer means our own call committed: the action's state says so.
async fn finish(
    c: &Ctx,
    reference: &str,
    key: &str,
    token: &str,
    path: &str,
    body: &Value,
    outcome: &str,
) {
    let until = Instant::now() + STEP_LIMIT;
    while Instant::now() < until {
        match post(c, token, path, body, None).await {
            Ok(a) if a.status == 200 => {
                return c.write(
                    &json!({ "t": "action", "ref": reference, "key": key, "outcome": outcome }),
                );
            }
            Ok(a) if a.status == 409 => {
                let state = loop {
                    if let Ok(s) = get(c, token, &format!("/v1/actions/{key}")).await {
                        break s.body;
                    }
                };
                if state["state"] == outcome {
                    return c.write(
                        &json!({ "t": "action", "ref": reference, "key": key, "outcome": outcome }),
                    );
                }
                return c.violation(format!(
                    "{reference}: {path} answered 409 and the action is {state}"
                ));
            }
            Ok(a) => {
                return c.violation(format!(
                    "{reference}: {path} answered {} {}",
                    a.status, a.body
                ))
            }
            Err(()) => {}
        }
    }
    c.violation(format!("{reference}: {path} never answered"));
}

async fn worker(c: Arc<Ctx>, n: usize) {
    let mut rng = StdRng::seed_from_u64(c.args.seed ^ (u64::from(c.args.id) << 32) ^ n as u64);
    let mut seq = 0u64;
    while !Path::new(&c.args.stop).exists() {
        seq += 1;
        let reference = format!("rel-c{}-w{n}-{seq}", c.args.id);
        let tenant = (seq as usize) % c.args.tokens.len();
        let token = c.args.tokens[tenant].clone();
        conversation(&c, reference, &token, tenant, &mut rng).await;
    }
}

/// Runs the workers until the stop file appears, then writes the summary.
pub fn run(args: Args) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let journal = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.journal)
        .with_context(|| format!("opening {}", args.journal.display()))?;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_millis(500))
        .timeout(Duration::from_secs(10))
        .build()?;
    let c = Arc::new(Ctx {
        http,
        args,
        journal: Mutex::new(journal),
        met: Met::default(),
    });
    rt.block_on(async {
        let tasks: Vec<_> = (0..WORKERS)
            .map(|n| tokio::spawn(worker(c.clone(), n)))
            .collect();
        for t in tasks {
            t.await?;
        }
        anyhow::Ok(())
    })?;
    let m = &c.met;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    c.write(&json!({
        "t": "summary",
        "conversations": load(&m.conversations),
        "connection_errors": load(&m.connection_errors),
        "unavailable": load(&m.unavailable),
        "in_flight": load(&m.in_flight),
        "replays": load(&m.replays),
        "redeliveries": load(&m.redeliveries),
        "takeovers": load(&m.takeovers),
    }));
    Ok(())
}
