//! `idem simulate`: the restart test at scale. N conversations go through a
//! simulated agent worker and a queue that redelivers on timeout or crash;
//! the worker extracts a charge with a model stub whose output varies
//! between attempts, then charges through the demo payment provider with an
//! Idempotency-Key made by one of four strategies. The provider's ledger
//! says what really happened.
//!
//! With `--broker` the queue is a real RabbitMQ and the workers are
//! processes that get SIGKILLed ([`super::broker`]).
//!
//! Everything goes through the real store and the real HTTP API (a server
//! on 127.0.0.1, port 0, in this process), so a dashboard on the same
//! database shows the traffic. Each conversation draws its faults from its
//! own generator seeded by `--seed`, so a run is reproducible whatever the
//! concurrency, and every strategy meets the same faults.

use super::options::DbArgs;
use crate::config::Config;
use crate::startup::Application;
use idem_core::cost::{self, CostInputs};
use idem_core::TenantId;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub use super::sim_model::Strategy;
use super::sim_model::{extract, truth, Extraction, Truth};

/// `idem simulate` options.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// Conversations to run per strategy.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub conversations: u32,
    /// Seed of every random choice: the same seed gives the same report.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Strategies to compare, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "random,clock,model-hash,idem"
    )]
    pub strategies: Vec<Strategy>,
    /// Rate of provider timeouts after executing (the charge happens, the
    /// answer is lost, the queue redelivers).
    #[arg(long, default_value_t = 0.05, value_parser = rate)]
    pub timeout_rate: f64,
    /// Rate of worker crashes before recording the intent (in-process
    /// queue; on a broker, --kill-rate).
    #[arg(long, default_value_t = 0.02, value_parser = rate)]
    pub crash_before_rate: f64,
    /// Rate of worker crashes after recording the intent, before charging
    /// (in-process queue; on a broker, --kill-rate).
    #[arg(long, default_value_t = 0.02, value_parser = rate)]
    pub crash_after_rate: f64,
    /// Rate of duplicate deliveries of an acknowledged message (on a
    /// broker: copies the producer publishes).
    #[arg(long, default_value_t = 0.03, value_parser = rate)]
    pub duplicate_rate: f64,
    /// Rate of a redelivery to a second worker while the first still runs
    /// (in-process queue; on a broker, kills make it happen).
    #[arg(long, default_value_t = 0.01, value_parser = rate)]
    pub concurrent_rate: f64,
    /// Rate at which a retried extraction changes the amount or destination.
    #[arg(long, default_value_t = 0.1, value_parser = rate)]
    pub divergence_rate: f64,
    /// Conversations in flight at once (in-process queue; on a broker,
    /// --workers × --prefetch).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=512))]
    pub concurrency: u32,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run through a real RabbitMQ broker (`amqp://user:pass@host:port/vhost`)
    /// with worker processes that are SIGKILLed mid-flight, instead of the
    /// in-process queue. See the manual's "Simulate and the broker".
    #[arg(long, value_name = "AMQP_URL")]
    pub broker: Option<String>,
    /// With --broker: worker processes consuming each strategy's queue.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// With --broker: the chance, at each of the four kill points of a
    /// delivery (before the intent, after it, during the charge, after the
    /// charge and before the ack), that the worker is SIGKILLed there.
    #[arg(long, default_value_t = 0.02, value_parser = rate)]
    pub kill_rate: f64,
    /// With --broker: unacknowledged deliveries a worker holds at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub prefetch: u16,
    /// With --broker and `--strategies idem`: run this shell command as the
    /// worker instead of the built-in one (it reads the IDEM_SIM_* variables
    /// and speaks the line protocol in the manual's "Simulate and the
    /// broker", section "The worker interface"),
    /// e.g. `python3 examples/python/idem_worker.py`.
    #[arg(long, value_name = "COMMAND", requires = "broker")]
    pub worker_command: Option<String>,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
}

fn rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number between 0 and 1"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` is not between 0 and 1"))
    }
}

/// Attempts per message before the queue dead-letters it.
const MAX_DELIVERIES: u32 = 12;

/// What one strategy did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StrategyReport {
    /// The strategy.
    pub strategy: Strategy,
    /// The tenant its traffic went to.
    pub tenant: String,
    /// Conversations run.
    pub conversations: u64,
    /// Deliveries of their messages (first deliveries included).
    pub deliveries: u64,
    /// With --broker: deliveries the broker flagged `redelivered` (a worker
    /// died or gave the message back before acknowledging it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_redeliveries: Option<u64>,
    /// With --broker: what the broker run did (messages, kills, workers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker: Option<super::broker::BrokerReport>,
    /// Model calls (one per delivery that reached the model).
    pub model_calls: u64,
    /// Model calls beyond one per conversation.
    pub wasted_model_calls: u64,
    /// Cost of the wasted calls at the reference scenario's prices.
    pub wasted_model_cost: String,
    /// Charges the provider executed (its ledger).
    pub charges_executed: u64,
    /// Charges beyond one per conversation.
    pub duplicate_charges: u64,
    /// Conversations charged more than once.
    pub conversations_charged_twice: u64,
    /// Money taken beyond the smallest charge of each conversation charged
    /// more than once, in BRL.
    pub duplicated_amount: String,
    /// Different charges (amount or destination) beyond the first that one
    /// conversation produced: a retried extraction that changed, charged.
    pub divergent_charges: u64,
    /// Conversations never charged (dead-lettered).
    pub conversations_not_charged: u64,
    /// Conversations charged exactly once, but with an amount or a
    /// destination that differs from what the customer agreed to: the
    /// model's extraction on the delivery that first recorded the intent
    /// was wrong, and it is what was frozen. Not a duplicate, and no
    /// idempotency key can catch it; anchoring such fields in the system
    /// (the invoice's amount, not the model's reading) does.
    pub conversations_charged_wrong_value: u64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// One entry per strategy, in the order asked (those run so far when
    /// the run stopped early).
    pub strategies: Vec<StrategyReport>,
    /// Why the run stopped before it finished (the figures are the run so
    /// far); absent when it finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The worker's view of one attempt.
enum Outcome {
    /// The charge answered: acknowledge the message.
    Acked,
    /// Crash, timeout or in-flight: the queue redelivers.
    Redeliver,
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

#[derive(Default)]
struct Counts {
    deliveries: u64,
    model_calls: u64,
}

/// One delivery of a conversation's message.
async fn attempt(
    c: &Client,
    strategy: Strategy,
    t: &Truth,
    n: u32,
    rng: &mut StdRng,
    args: &SimulateArgs,
    counts: &mut Counts,
) -> Outcome {
    counts.deliveries += 1;
    if rng.gen_bool(args.crash_before_rate) {
        return Outcome::Redeliver;
    }
    // The stub draws its randomness on every attempt, called or not, so
    // every strategy meets the same faults in the same order.
    let x = extract(t, n, rng, args.divergence_rate);
    // Decided now so every strategy meets the same faults.
    let crash_after = rng.gen_bool(args.crash_after_rate);
    let timeout = rng.gen_bool(args.timeout_rate);
    let random_key: u128 = rng.gen();
    let (key, amount, dest) = match strategy {
        Strategy::Random => {
            counts.model_calls += 1;
            (format!("{random_key:032x}"), x.amount_cents, x.destination)
        }
        // Simulated time: a redelivery comes one 30 s visibility timeout later.
        Strategy::Clock => {
            counts.model_calls += 1;
            (
                format!(
                    "{}-{}",
                    t.reference,
                    1_700_000_000_000u64 + u64::from(n) * 30_000
                ),
                x.amount_cents,
                x.destination,
            )
        }
        Strategy::ModelHash => {
            counts.model_calls += 1;
            (
                hex::encode(Sha256::digest(x.text.as_bytes())),
                x.amount_cents,
                x.destination,
            )
        }
        Strategy::Idem => {
            // A redelivery reads the frozen intent and skips the model.
            let recorded = c
                .http
                .get(format!(
                    "{}/v1/intents/pix.cobranca/{}",
                    c.base, t.reference
                ))
                .bearer_auth(&c.token)
                .send()
                .await;
            let found = match recorded {
                Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => None,
                Ok(r) if r.status().is_success() => match r.json::<serde_json::Value>().await {
                    Ok(v) => Some(v),
                    Err(_) => return Outcome::Redeliver,
                },
                _ => return Outcome::Redeliver,
            };
            let v = match found {
                Some(v) => v,
                None => match record(c, t, &x, counts).await {
                    Some(v) => v,
                    None => return Outcome::Redeliver,
                },
            };
            // The frozen payload, not this attempt's extraction.
            let frozen = &v["payload"];
            // The amount rule freezes money as whole cents ("18000").
            let amount = frozen["valor"].as_str().and_then(|s| s.parse::<i64>().ok());
            let dest = frozen["chave_pix_destino"].as_str().map(str::to_owned);
            match (v["key"].as_str(), amount, dest) {
                (Some(k), Some(a), Some(d)) => (k.to_owned(), a, d),
                _ => return Outcome::Redeliver,
            }
        }
    };
    if crash_after {
        return Outcome::Redeliver;
    }
    charge(c, &key, amount, &t.reference, &dest, timeout).await
}

/// The first delivery that reaches the model: extract, then record the
/// intent (first write wins; a concurrent worker may have won).
async fn record(
    c: &Client,
    t: &Truth,
    x: &Extraction,
    counts: &mut Counts,
) -> Option<serde_json::Value> {
    counts.model_calls += 1;
    let body = serde_json::json!({
        "action": "pix.cobranca",
        "payload": {
            "cliente_id": t.reference,
            "valor": format!("{}.{:02}", x.amount_cents / 100, x.amount_cents % 100),
            "chave_pix_destino": x.destination,
            "referencia_intencao": t.reference,
        }
    });
    c.http
        .post(format!("{}/v1/intents", c.base))
        .bearer_auth(&c.token)
        .json(&body)
        .send()
        .await
        .ok()?
        .json::<serde_json::Value>()
        .await
        .ok()
}

/// Charges through the demo provider; `timeout` loses the answer after the
/// charge executed.
async fn charge(
    c: &Client,
    key: &str,
    amount: i64,
    reference: &str,
    dest: &str,
    timeout: bool,
) -> Outcome {
    let mut req = c
        .http
        .post(format!("{}/v1/demo/charges", c.base))
        .bearer_auth(&c.token)
        .header("Idempotency-Key", key)
        .json(&serde_json::json!({
            "amount_cents": amount,
            "currency": "BRL",
            "customer": format!("{reference}|{dest}"),
        }));
    if timeout {
        req = req.header("Idem-Demo-Fault", "drop");
    }
    match req.send().await {
        Ok(res) if res.status().is_success() => match res.bytes().await {
            Ok(_) => Outcome::Acked,
            Err(_) => Outcome::Redeliver,
        },
        // 409: the first request still runs; the answer comes on redelivery.
        Ok(res) if res.status() == reqwest::StatusCode::CONFLICT => Outcome::Redeliver,
        Ok(res) if res.status().is_server_error() => Outcome::Redeliver,
        // Any other refusal is final: the worker acknowledges and gives up.
        Ok(_) => Outcome::Acked,
        Err(_) => Outcome::Redeliver,
    }
}

/// One conversation, from first delivery to its last (acknowledged or
/// dead-lettered).
async fn conversation(c: &Client, strategy: Strategy, i: u32, args: &SimulateArgs) -> Counts {
    let t = truth(args.seed, i);
    let mut rng =
        StdRng::seed_from_u64(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(i));
    let mut counts = Counts::default();
    let mut pending = 1u32;
    let mut n = 0u32;
    let mut duplicated = false;
    while pending > 0 && n < MAX_DELIVERIES {
        pending -= 1;
        n += 1;
        if rng.gen_bool(args.concurrent_rate) && n < MAX_DELIVERIES {
            // The visibility timeout ran out while the first worker still
            // worked: a second worker gets the same message at once.
            let mut r1 = StdRng::seed_from_u64(rng.gen());
            let mut r2 = StdRng::seed_from_u64(rng.gen());
            let (mut c1, mut c2) = (Counts::default(), Counts::default());
            let (a, b) = tokio::join!(
                attempt(c, strategy, &t, n, &mut r1, args, &mut c1),
                attempt(c, strategy, &t, n + 1, &mut r2, args, &mut c2)
            );
            n += 1;
            counts.deliveries += c1.deliveries + c2.deliveries;
            counts.model_calls += c1.model_calls + c2.model_calls;
            if matches!((a, b), (Outcome::Redeliver, Outcome::Redeliver)) {
                pending += 1;
            }
            continue;
        }
        match attempt(c, strategy, &t, n, &mut rng, args, &mut counts).await {
            Outcome::Redeliver => pending += 1,
            Outcome::Acked => {
                // At-least-once: an acknowledged message comes back once more.
                if !duplicated && rng.gen_bool(args.duplicate_rate) {
                    duplicated = true;
                    pending += 1;
                }
            }
        }
    }
    counts
}

/// What the traffic of one strategy amounted to, as its workers saw it.
#[derive(Default)]
pub(crate) struct Traffic {
    /// Deliveries of conversation messages.
    pub deliveries: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// With --broker: the broker run's own figures.
    pub broker: Option<super::broker::BrokerReport>,
}

async fn run_strategy(
    state: &crate::http::AppState,
    base: &str,
    strategy: Strategy,
    args: &SimulateArgs,
    run_id: &str,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<StrategyReport> {
    let name = format!("sim-{run_id}-{}", strategy.name());
    let tenant = TenantId::try_from(name.as_str())?;
    let token = state.api.store.create_tenant(&tenant, &name).await?;
    bar.set_message(strategy.name());
    let traffic = match &args.broker {
        Some(url) => {
            let run = super::broker::Run {
                url,
                base,
                token: token.expose(),
                strategy,
                seed: args.seed,
                conversations: args.conversations,
                duplicate_rate: args.duplicate_rate,
                workers: args.workers,
                prefetch: args.prefetch,
                kill_rate: args.kill_rate,
                timeout_rate: args.timeout_rate,
                divergence_rate: args.divergence_rate,
                worker_command: args.worker_command.as_deref(),
                queue: format!("idem-{name}"),
                bar,
            };
            let t = super::broker::run_strategy(&run).await?;
            Traffic {
                deliveries: t.deliveries,
                model_calls: t.model_calls,
                broker: Some(t.report),
            }
        }
        None => in_process(base, token.expose(), strategy, args, bar).await?,
    };
    tally(state, &tenant, name, strategy, args, traffic).await
}

/// The in-process queue: each conversation's deliveries run in this process.
async fn in_process(
    base: &str,
    token: &str,
    strategy: Strategy,
    args: &SimulateArgs,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Traffic> {
    use futures_util::StreamExt;
    let client = Arc::new(Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        base: base.to_owned(),
        token: token.to_owned(),
    });
    let totals: Vec<Counts> = futures_util::stream::iter(0..args.conversations)
        .map(|i| {
            let client = client.clone();
            async move {
                let c = conversation(&client, strategy, i, args).await;
                bar.inc(1);
                c
            }
        })
        .buffer_unordered(args.concurrency as usize)
        .collect()
        .await;
    Ok(Traffic {
        deliveries: totals.iter().map(|c| c.deliveries).sum(),
        model_calls: totals.iter().map(|c| c.model_calls).sum(),
        broker: None,
    })
}

/// The report of one strategy: what the provider's ledger says happened,
/// beside the traffic that produced it.
async fn tally(
    state: &crate::http::AppState,
    tenant: &TenantId,
    name: String,
    strategy: Strategy,
    args: &SimulateArgs,
    traffic: Traffic,
) -> anyhow::Result<StrategyReport> {
    let Traffic {
        deliveries,
        model_calls,
        broker,
    } = traffic;
    let charges = state
        .api
        .store
        .session()
        .await?
        .demo_charges(tenant)
        .await?;
    let mut per_conv: HashMap<&str, Vec<&idem_store::DemoCharge>> = HashMap::new();
    for ch in &charges {
        let conv = ch.customer.split('|').next().unwrap_or_default();
        per_conv.entry(conv).or_default().push(ch);
    }
    let mut divergent = 0u64;
    let mut duplicated_cents = 0i64;
    let mut twice = 0u64;
    let mut wrong_value = 0u64;
    for i in 0..args.conversations {
        let t = truth(args.seed, i);
        let list = per_conv
            .get(t.reference.as_str())
            .cloned()
            .unwrap_or_default();
        if let [only] = list.as_slice() {
            let destination = only.customer.split('|').nth(1).unwrap_or_default();
            if only.amount_cents != t.amount_cents || destination != t.destination {
                wrong_value += 1;
            }
        }
        if list.len() > 1 {
            twice += 1;
            // Order-free, so a run reproduces whatever the timing: what was
            // taken beyond the smallest charge, and how many different
            // charges one request produced beyond the first.
            let total: i64 = list.iter().map(|c| c.amount_cents).sum();
            let least = list.iter().map(|c| c.amount_cents).min().unwrap_or(0);
            duplicated_cents += total - least;
            let mut kinds: Vec<(i64, &str)> = list
                .iter()
                .map(|c| (c.amount_cents, c.customer.as_str()))
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            divergent += kinds.len() as u64 - 1;
        }
    }
    let conversations = u64::from(args.conversations);
    let charged = per_conv.len() as u64;
    let wasted = model_calls.saturating_sub(conversations);
    let per_call = cost::compute(&CostInputs::reference())?.cost_per_call;
    let wasted_cost = per_call * rust_decimal::Decimal::from(wasted);
    Ok(StrategyReport {
        strategy,
        tenant: name,
        conversations,
        deliveries,
        broker_redeliveries: broker.as_ref().map(|b| b.broker_redeliveries),
        broker,
        model_calls,
        wasted_model_calls: wasted,
        wasted_model_cost: idem_core::locale::format_money(
            wasted_cost,
            idem_core::locale::Locale::PtBr,
            idem_core::locale::Currency::BRL,
        ),
        charges_executed: charges.len() as u64,
        duplicate_charges: (charges.len() as u64).saturating_sub(charged),
        conversations_charged_twice: twice,
        duplicated_amount: idem_core::locale::format_money(
            rust_decimal::Decimal::new(duplicated_cents, 2),
            idem_core::locale::Locale::PtBr,
            idem_core::locale::Currency::BRL,
        ),
        divergent_charges: divergent,
        conversations_not_charged: conversations.saturating_sub(charged),
        conversations_charged_wrong_value: wrong_value,
    })
}

/// Runs the simulation and returns its report.
pub async fn simulate(args: &SimulateArgs) -> anyhow::Result<Report> {
    if let Some(url) = &args.broker {
        if args.worker_command.is_some() && args.strategies != [Strategy::Idem] {
            return Err(super::Usage(
                "--worker-command runs idem's strategy only: add --strategies idem".into(),
            )
            .into());
        }
        // Before anything else, so a wrong URL costs nothing.
        super::broker::check(url).await?;
    }
    // The same application `idem serve --demo` runs, on a port of its own.
    let config = Config {
        demo: true,
        database_url: args.db.url()?,
        ..Config::embedded(&args.db.data_dir)
    };
    let app = Application::build(config).await?;
    let state = app.state().clone();
    let base = app.base_url();
    let mut server = tokio::spawn(app.run_until_stopped());
    let run_id = format!("{}-{}", args.seed, state.api.store.now_ms());
    let bar = if args.json || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(u64::from(args.conversations) * args.strategies.len() as u64)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg:10} [{bar:40}] {pos}/{len} conversations ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let run = async {
        let mut strategies = Vec::new();
        let mut stopped = None;
        for s in &args.strategies {
            let report = run_strategy(&state, &base, *s, args, &run_id, &bar).await?;
            stopped = report
                .broker
                .as_ref()
                .and_then(|b| b.stopped.clone())
                .map(|why| format!("{}: {why}", s.name()));
            strategies.push(report);
            if stopped.is_some() {
                break;
            }
        }
        anyhow::Ok((strategies, stopped))
    };
    // Ctrl-C or SIGTERM stops the in-process server: the run stops with it
    // (dropping it SIGKILLs any worker processes) instead of going on
    // against a server that is gone.
    let (strategies, stopped) = tokio::select! {
        r = run => r?,
        _ = &mut server => {
            bar.finish_and_clear();
            state.api.store.close().await;
            anyhow::bail!("interrupted: the run stopped before it finished");
        }
    };
    bar.finish_and_clear();
    // Counts reach the statistics tables before the process ends.
    state.api.store.flush_stats().await?;
    server.abort();
    state.api.store.close().await;
    Ok(Report {
        seed: args.seed,
        strategies,
        stopped,
    })
}

fn table(r: &Report) -> String {
    use std::fmt::Write;
    let broker = r.strategies.iter().any(|s| s.broker.is_some());
    let mut out = format!(
        "{:<11} {:>9} {:>10} {:>8} {:>7} {:>9} {:>10} {:>9} {:>16} {:>9} {:>11} {:>14}",
        "strategy",
        "charges",
        "duplicates",
        "charged2x",
        "diverg",
        "wrong val",
        "deliveries",
        "model",
        "wasted model",
        "not paid",
        "dup amount",
        "wasted cost"
    );
    if broker {
        let _ = write!(out, " {:>9} {:>6}", "redeliv", "kills");
    }
    out.push('\n');
    for s in &r.strategies {
        let _ = write!(
            out,
            "{:<11} {:>9} {:>10} {:>8} {:>7} {:>9} {:>10} {:>9} {:>16} {:>9} {:>11} {:>14}",
            s.strategy.name(),
            s.charges_executed,
            s.duplicate_charges,
            s.conversations_charged_twice,
            s.divergent_charges,
            s.conversations_charged_wrong_value,
            s.deliveries,
            s.model_calls,
            s.wasted_model_calls,
            s.conversations_not_charged,
            s.duplicated_amount,
            s.wasted_model_cost,
        );
        if let Some(b) = &s.broker {
            let _ = write!(out, " {:>9} {:>6}", b.broker_redeliveries, b.kills.total());
        }
        out.push('\n');
    }
    if r.strategies
        .iter()
        .any(|s| s.conversations_charged_wrong_value > 0)
    {
        out.push_str(
            "\nwrong val: conversations charged once, but not with what the customer agreed to. \
             The model extracts the amount and the destination; the first delivery that records \
             the intent freezes that reading, right or wrong, and every retry then charges it \
             once. No key can catch this: anchor such fields in the system (the invoice's \
             amount, the customer's registered key), not in the model's output.\n",
        );
    }
    out
}

/// `idem simulate`: prints the report; exit 1 when idem's strategy charged
/// anything twice (it never should), 0 otherwise.
pub fn run(args: &SimulateArgs) -> ExitCode {
    let Some(rt) = super::runtime() else {
        return ExitCode::from(2);
    };
    let report = match rt.block_on(simulate(args)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    // The workers are gone; the runtime must not wait on anything left.
    rt.shutdown_timeout(Duration::from_secs(1));
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", table(&report));
    }
    if let Some(why) = &report.stopped {
        eprintln!("idem simulate: the run stopped before it finished, so the figures above are the run so far: {why}");
        return ExitCode::from(2);
    }
    // On a broker nothing is dead-lettered: every message is retried until
    // it is acknowledged, so a conversation left uncharged is a failure too.
    let idem_failed = report.strategies.iter().any(|s| {
        s.strategy == Strategy::Idem
            && (s.duplicate_charges > 0
                || s.divergent_charges > 0
                || (s.broker.is_some() && s.conversations_not_charged > 0))
    });
    if idem_failed {
        eprintln!("idem simulate: idem's strategy charged twice, charged a divergent amount or (on a broker) left a conversation uncharged: this is a bug");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_names_are_the_flag_and_report_names() {
        for s in [
            Strategy::Random,
            Strategy::Clock,
            Strategy::ModelHash,
            Strategy::Idem,
        ] {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::json!(s.name()))
            );
            assert_eq!(
                clap::ValueEnum::to_possible_value(&s).map(|v| v.get_name().to_owned()),
                Some(s.name().to_owned())
            );
        }
    }
}
