//! `idem simulate --broker`: the restart test on a real RabbitMQ. The
//! simulator publishes each strategy's conversations to a durable queue of
//! its own (persistent messages, publisher confirms), then keeps W worker
//! **processes** consuming it: the `idem` binary re-executed as
//! `idem simulate-worker` (or `--worker-command`). A worker that reaches a
//! kill point it drew asks to be killed; the simulator SIGKILLs it there and
//! starts another, so the broker's own redelivery drives every retry.
//!
//! The line protocol (worker stdout, one JSON object per line):
//! `{"ev":"delivery","redelivered":B}`, `{"ev":"model"}`,
//! `{"ev":"kill","at":POINT}` (the worker then waits to be killed),
//! `{"ev":"acking","seq":N}` (sent just before the acknowledgement, because
//! a kill at another delivery's point may land right after it),
//! `{"ev":"takeover"}` (an event claim found an expired lease). Anything
//! else is passed on to stderr; with `IDEM_SIM_DEBUG` set, every line is.

use super::sim_model::{truth, Message, Strategy};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

/// How long a run may go without a single acknowledgement before the
/// simulator stops and reports what was left undone.
const STALL: Duration = Duration::from_secs(60);
/// How long a queue without consumers outlives an interrupted run (ms).
const QUEUE_EXPIRES_MS: u32 = 600_000;
/// How long connecting to the broker may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The event lease the idem worker asks for: short, so a message whose
/// worker was killed holding it is taken over within the run.
pub(crate) const LEASE_MS: u64 = 2_000;
/// Workers that exit on their own (not killed) this many times in a row,
/// each within `QUICK_EXIT` of starting, end the run: they cannot work.
const QUICK_EXITS: u32 = 5;
const QUICK_EXIT: Duration = Duration::from_secs(2);

/// Where a worker was killed.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Kills {
    /// Before the intent was recorded (the event claimed, for idem).
    pub before_intent: u64,
    /// After the intent, before the charge.
    pub after_intent: u64,
    /// While the charge request was in flight.
    pub during_charge: u64,
    /// After the charge answered, before the acknowledgement.
    pub after_charge: u64,
}

impl Kills {
    /// Kills at every point.
    pub fn total(&self) -> u64 {
        self.before_intent + self.after_intent + self.during_charge + self.after_charge
    }
}

/// What one strategy's broker run did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct BrokerReport {
    /// The durable queue (deleted at the end of the run).
    pub queue: String,
    /// Messages published: one per conversation plus the producer's copies.
    pub published: u64,
    /// Copies a producer retry published (`--duplicate-rate`).
    pub producer_copies: u64,
    /// Deliveries the broker flagged `redelivered`.
    pub broker_redeliveries: u64,
    /// Worker processes started (the first W and every replacement).
    pub workers_started: u64,
    /// Workers SIGKILLed, by kill point.
    pub kills: Kills,
    /// Event claims that took over a message whose holder's lease ran out
    /// (a killed worker's): idem's strategy only.
    pub lease_takeovers: u64,
    /// Messages still unacknowledged when the run stopped (0 unless it
    /// stopped early).
    pub unacknowledged: u64,
    /// Why the run stopped before every message was acknowledged: no
    /// acknowledgement for a minute, or workers that cannot work. The
    /// figures above are the run so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One strategy's broker run.
pub(crate) struct Run<'a> {
    /// The broker's URL.
    pub url: &'a str,
    /// The in-process server the workers call.
    pub base: &'a str,
    /// The strategy tenant's API token.
    pub token: &'a str,
    /// The strategy.
    pub strategy: Strategy,
    /// The conversations' seed.
    pub seed: u64,
    /// Conversations to publish.
    pub conversations: u32,
    /// Chance of a producer copy of each message.
    pub duplicate_rate: f64,
    /// Worker processes.
    pub workers: u32,
    /// Unacknowledged messages per worker.
    pub prefetch: u16,
    /// Chance of a kill at each kill point.
    pub kill_rate: f64,
    /// Chance that a charge's answer is lost.
    pub timeout_rate: f64,
    /// Chance that a retried extraction differs.
    pub divergence_rate: f64,
    /// A worker command instead of `idem simulate-worker`.
    pub worker_command: Option<&'a str>,
    /// The queue to create, fill and delete.
    pub queue: String,
    /// Progress.
    pub bar: &'a indicatif::ProgressBar,
}

/// The URL with its password hidden, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => url.to_owned(),
    }
}

/// Connects to the broker, or says why not with the URL (exit 2).
pub(crate) async fn connect(url: &str) -> anyhow::Result<Connection> {
    let shown = redacted(url);
    if !url.starts_with("amqp://") {
        let why = if url.starts_with("amqps://") {
            "amqps:// (TLS) is not built in; use an amqp:// URL"
        } else {
            "the URL must start with amqp://, e.g. amqp://guest:guest@127.0.0.1:5672/%2f"
        };
        return Err(super::Usage(format!("--broker {shown}: {why}")).into());
    }
    let connecting = Connection::connect(url, ConnectionProperties::default());
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(super::Usage(format!("cannot reach the broker at {shown}: {e}")).into()),
        Err(_) => Err(super::Usage(format!(
            "cannot reach the broker at {shown}: no answer in {} s",
            CONNECT_TIMEOUT.as_secs()
        ))
        .into()),
    }
}

/// Checks that the broker answers before the run starts anything.
pub(crate) async fn check(url: &str) -> anyhow::Result<()> {
    let conn = connect(url).await?;
    let _ = conn.close(200, "checked".into()).await;
    Ok(())
}

/// The publishing order: every conversation once, and each producer copy a
/// few messages after its original (a retry soon after a lost confirm), so
/// a copy may meet its original still in flight.
fn schedule(args: &Run<'_>) -> Vec<(u32, bool)> {
    let mut rng = StdRng::seed_from_u64(args.seed ^ 0x00b1_0ce1);
    let mut order: Vec<(u64, u32, bool)> = Vec::new();
    for i in 0..args.conversations {
        order.push((u64::from(i) * 2, i, false));
        if rng.gen_bool(args.duplicate_rate) {
            let lag: u64 = rng.gen_range(1..=20);
            order.push(((u64::from(i) + lag) * 2 + 1, i, true));
        }
    }
    order.sort_unstable();
    order.into_iter().map(|(_, i, c)| (i, c)).collect()
}

/// Publishes the run's messages (persistent, confirmed by the broker).
async fn publish(conn: &Connection, run: &Run<'_>) -> anyhow::Result<(u64, u64)> {
    let ch = conn.create_channel().await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    // Deleted at the end of the run; `x-expires` also removes a queue an
    // interrupted run left, once it has had no consumer for ten minutes.
    let mut queue_args = FieldTable::default();
    queue_args.insert("x-expires".into(), AMQPValue::LongUInt(QUEUE_EXPIRES_MS));
    ch.queue_declare(
        run.queue.as_str().into(),
        QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        },
        queue_args,
    )
    .await?;
    let mut confirms = Vec::new();
    let (mut published, mut copies) = (0u64, 0u64);
    for (seq, (i, retry)) in (0u64..).zip(schedule(run)) {
        let t = truth(run.seed, i);
        let body = serde_json::to_vec(&Message {
            seq,
            conversation: i,
            reference: t.reference.clone(),
            amount_cents: t.amount_cents,
            destination: t.destination,
            retry,
        })?;
        let props = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_message_id(t.reference.as_str().into());
        let confirm = ch
            .basic_publish(
                "".into(),
                run.queue.as_str().into(),
                BasicPublishOptions::default(),
                &body,
                props,
            )
            .await?;
        confirms.push(confirm);
        published += 1;
        copies += u64::from(retry);
    }
    for c in confirms {
        let confirmation = c.await?;
        anyhow::ensure!(
            !confirmation.is_nack(),
            "the broker refused a message of {}",
            run.queue
        );
    }
    let _ = ch.close(200, "published".into()).await;
    Ok((published, copies))
}

/// What the workers reported, all of them together.
#[derive(Default)]
struct Tally {
    deliveries: u64,
    redeliveries: u64,
    model_calls: u64,
    kills: Kills,
    takeovers: u64,
    started: u64,
}

struct Shared {
    tally: Mutex<Tally>,
    /// Messages in the queue: a `seq` at or past it is not one of ours.
    published: u64,
    /// Messages acknowledged (or about to be): a set, because a worker
    /// killed between saying so and acknowledging gets the message again.
    acked: watch::Sender<std::collections::HashSet<u64>>,
}

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut Tally) -> R) -> R {
        f(&mut self.tally.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What the workers of one strategy did.
pub(crate) struct Traffic {
    /// Deliveries of conversation messages.
    pub deliveries: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// The broker run's own figures.
    pub report: BrokerReport,
}

/// Runs one strategy's traffic through the broker and returns it.
pub(crate) async fn run_strategy(run: &Run<'_>) -> anyhow::Result<Traffic> {
    let conn = connect(run.url).await?;
    let (published, copies) = publish(&conn, run).await?;
    run.bar.inc_length(copies);
    let (acked_tx, mut acked_rx) = watch::channel(std::collections::HashSet::new());
    let shared = Arc::new(Shared {
        tally: Mutex::new(Tally::default()),
        published,
        acked: acked_tx,
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut workers = tokio::task::JoinSet::new();
    for n in 0..run.workers {
        workers.spawn(supervise(
            worker_command(run, n)?,
            shared.clone(),
            stop_rx.clone(),
        ));
    }
    // Until every message is acknowledged, or nothing moved for a while, or
    // the workers cannot work at all.
    let mut stopped = None;
    let mut shown = 0u64;
    loop {
        let acked = acked_rx.borrow_and_update().len() as u64;
        run.bar.inc(acked - shown);
        shown = acked;
        if acked >= published {
            break;
        }
        tokio::select! {
            changed = tokio::time::timeout(STALL, acked_rx.changed()) => {
                if !matches!(changed, Ok(Ok(()))) {
                    stopped = Some(format!(
                        "no message was acknowledged for {} s (is the server answering? see the workers' messages above)",
                        STALL.as_secs()
                    ));
                    break;
                }
            }
            Some(done) = workers.join_next() => {
                if let Ok(Err(e)) = done {
                    stopped = Some(format!("{e:#}"));
                    break;
                }
            }
        }
    }
    let _ = stop_tx.send(true);
    while workers.join_next().await.is_some() {}
    let acked = shared.acked.borrow().len() as u64;
    // The queue lives for the run only.
    if let Ok(ch) = conn.create_channel().await {
        let _ = ch
            .queue_delete(run.queue.as_str().into(), QueueDeleteOptions::default())
            .await;
        let _ = ch.close(200, "deleted".into()).await;
    }
    let _ = conn.close(200, "done".into()).await;
    let t = std::mem::take(&mut *shared.tally.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Traffic {
        deliveries: t.deliveries,
        model_calls: t.model_calls,
        report: BrokerReport {
            queue: run.queue.clone(),
            published,
            producer_copies: copies,
            broker_redeliveries: t.redeliveries,
            workers_started: t.started,
            kills: t.kills,
            lease_takeovers: t.takeovers,
            unacknowledged: published.saturating_sub(acked),
            stopped,
        },
    })
}

/// How to start one worker process, with its settings in `IDEM_SIM_*`
/// (and the token in the environment, never on a command line).
fn worker_command(run: &Run<'_>, n: u32) -> anyhow::Result<tokio::process::Command> {
    let mut cmd = match run.worker_command {
        Some(shell) => {
            // `exec`, so the SIGKILL reaches the worker, not a shell that
            // would leave it running.
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(format!("exec {shell}"));
            c
        }
        None => {
            let exe = std::env::current_exe().map_err(|e| {
                anyhow::anyhow!("cannot find the idem binary to start workers: {e}")
            })?;
            let mut c = tokio::process::Command::new(exe);
            c.arg("simulate-worker");
            c
        }
    };
    let a = run;
    cmd.env("IDEM_SIM_BROKER", run.url)
        .env("IDEM_SIM_QUEUE", &run.queue)
        .env("IDEM_URL", run.base)
        .env("IDEM_TOKEN", run.token)
        .env("IDEM_SIM_STRATEGY", run.strategy.name())
        .env("IDEM_SIM_KILL_RATE", a.kill_rate.to_string())
        .env("IDEM_SIM_TIMEOUT_RATE", a.timeout_rate.to_string())
        .env("IDEM_SIM_DIVERGENCE_RATE", a.divergence_rate.to_string())
        .env("IDEM_SIM_PREFETCH", a.prefetch.to_string())
        .env("IDEM_SIM_LEASE_MS", LEASE_MS.to_string())
        .env("IDEM_SIM_WORKER", n.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    Ok(cmd)
}

/// Keeps one worker slot busy: starts a worker, reads its lines, SIGKILLs
/// it where it asks, starts the next, until told to stop.
async fn supervise(
    mut cmd: tokio::process::Command,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut quick_exits = 0u32;
    while !*stop.borrow() {
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start a worker: {e}"))?;
        shared.with(|t| t.started += 1);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("a worker has no stdout"))?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let killed = loop {
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => {
                        if let Some(at) = read_line(&shared, &line) {
                            // A real SIGKILL, at the point the worker drew.
                            let _ = child.start_kill();
                            let known = shared.with(|t| {
                                let slot = match at.as_str() {
                                    "before-intent" => &mut t.kills.before_intent,
                                    "after-intent" => &mut t.kills.after_intent,
                                    "during-charge" => &mut t.kills.during_charge,
                                    "after-charge" => &mut t.kills.after_charge,
                                    _ => return false,
                                };
                                *slot += 1;
                                true
                            });
                            if !known {
                                let _ = child.wait().await;
                                return Err(super::Usage(format!(
                                    "a worker asked to be killed at `{at}`, which is no kill point: \
                                     use before-intent, after-intent, during-charge or after-charge"
                                ))
                                .into());
                            }
                            break true;
                        }
                    }
                    // The worker ended on its own (or closed its stdout).
                    Ok(None) | Err(_) => break false,
                },
                _ = stop.changed() => {
                    let _ = child.start_kill();
                    break true;
                }
            }
        };
        // What the worker wrote before the kill landed still counts: another
        // delivery may have been acknowledged in that instant.
        if killed {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = read_line(&shared, &line);
            }
        }
        let status = child.wait().await;
        if !killed {
            quick_exits = if started.elapsed() < QUICK_EXIT {
                quick_exits + 1
            } else {
                0
            };
            anyhow::ensure!(
                quick_exits < QUICK_EXITS,
                "the workers keep exiting ({}): see their messages above",
                status.map_or_else(|e| e.to_string(), |s| s.to_string())
            );
        }
    }
    Ok(())
}

/// Counts one protocol line; returns the kill point when the worker asks
/// to be killed.
fn read_line(shared: &Shared, line: &str) -> Option<String> {
    if std::env::var_os("IDEM_SIM_DEBUG").is_some() {
        eprintln!("{line}");
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        eprintln!("{line}");
        return None;
    };
    match v["ev"].as_str() {
        Some("delivery") => shared.with(|t| {
            t.deliveries += 1;
            t.redeliveries += u64::from(v["redelivered"].as_bool() == Some(true));
        }),
        Some("model") => shared.with(|t| t.model_calls += 1),
        Some("takeover") => shared.with(|t| t.takeovers += 1),
        Some("acking") => match v["seq"].as_u64() {
            Some(seq) if seq < shared.published => {
                shared.acked.send_if_modified(|set| set.insert(seq));
            }
            _ => eprintln!("{line}"),
        },
        Some("kill") => return Some(v["at"].as_str().unwrap_or("after-charge").to_owned()),
        _ => eprintln!("{line}"),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(duplicate_rate: f64) -> Vec<(u32, bool)> {
        let bar = indicatif::ProgressBar::hidden();
        schedule(&Run {
            url: "amqp://h/%2f",
            base: "http://127.0.0.1:1",
            token: "t",
            strategy: Strategy::Idem,
            seed: 1,
            conversations: 100,
            duplicate_rate,
            workers: 1,
            prefetch: 1,
            kill_rate: 0.0,
            timeout_rate: 0.0,
            divergence_rate: 0.0,
            worker_command: None,
            queue: "q".into(),
            bar: &bar,
        })
    }

    #[test]
    fn every_conversation_is_published_once_and_a_copy_comes_after_its_original() {
        let none = run(0.0);
        assert_eq!(none, (0..100).map(|i| (i, false)).collect::<Vec<_>>());
        let all = run(1.0);
        assert_eq!(all.len(), 200);
        for i in 0..100 {
            let original = all
                .iter()
                .position(|m| *m == (i, false))
                .unwrap_or(usize::MAX);
            let copy = all.iter().position(|m| *m == (i, true)).unwrap_or(0);
            assert!(original < copy, "conversation {i}: {all:?}");
            // Soon after (at most 20 conversations later), so a copy can
            // meet its original in flight.
            let between = all[original..copy].iter().filter(|m| !m.1).count();
            assert!(between <= 21, "conversation {i}: {all:?}");
        }
        let some = run(0.3);
        let copies = some.iter().filter(|m| m.1).count();
        assert!((10..=60).contains(&copies), "{copies} copies at 30%");
    }

    #[test]
    fn a_password_never_shows_in_a_message() {
        let shown = redacted("amqp://guest:s3cret@127.0.0.1:5672/%2f");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("guest:***@127.0.0.1:5672"), "{shown}");
    }
}
