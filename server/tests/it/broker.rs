//! `idem simulate --broker` from the outside: against a real RabbitMQ, with
//! worker processes SIGKILLed mid-flight, the per-attempt strategies charge
//! twice and idem never does, with the built-in worker and with the Python
//! one in `examples/`. The broker runs need IDEM_TEST_AMQP_URL (`.ci/run`
//! sets it) and show as ignored without it; the bad-input tests always run.

use crate::common;

use common::by_strategy;
use serde_json::Value;
use std::process::{Command, Output};

fn idem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(args)
        // common::SECRET, so the monitor started on the run's database afterwards
        // passes its one-secret-per-deployment check.
        .env("IDEMPOTENCY_HMAC_KEY", "test")
        .env_remove("IDEM_SIM_BROKER")
        .output()
        .unwrap()
}

fn amqp_url() -> String {
    std::env::var("IDEM_TEST_AMQP_URL").expect("IDEM_TEST_AMQP_URL is not set")
}

/// A short broker run on SQLite in `dir`: 200 conversations, 2 workers,
/// kills on (the default rate, raised so every kill point is met).
fn short_run(dir: &std::path::Path, extra: &[&str]) -> Value {
    let url = amqp_url();
    let mut args = vec![
        "simulate",
        "--broker",
        &url,
        "--conversations",
        "200",
        "--workers",
        "2",
        "--kill-rate",
        "0.03",
        "--json",
        "--data-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = idem(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What idem's strategy must show on a broker, whoever its worker is.
fn idem_held(s: &Value) {
    assert_eq!(s["conversations"], 200, "{s}");
    assert_eq!(s["charges_executed"], 200, "{s}");
    assert_eq!(s["duplicate_charges"], 0, "{s}");
    assert_eq!(s["divergent_charges"], 0, "{s}");
    assert_eq!(s["conversations_not_charged"], 0, "{s}");
    let b = &s["broker"];
    assert_eq!(b["unacknowledged"], 0, "{s}");
    // The run really was killed and redelivered, or it proves nothing.
    let kills = &b["kills"];
    let total: u64 = [
        "before_intent",
        "after_intent",
        "during_charge",
        "after_charge",
    ]
    .iter()
    .map(|k| kills[k].as_u64().unwrap())
    .sum();
    assert!(total > 0, "no worker was killed: {s}");
    // A redelivery reads the frozen intent instead of calling the model; a
    // model call is wasted only when a kill lands between the call and the
    // intent's write, at most once per message a killed worker held
    // (--prefetch, 4).
    assert!(
        s["wasted_model_calls"].as_u64().unwrap() <= 4 * total,
        "{s}"
    );
    assert!(
        b["workers_started"].as_u64().unwrap() >= 2 + total,
        "every killed worker was replaced: {s}"
    );
    assert!(s["broker_redeliveries"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["broker_redeliveries"], b["broker_redeliveries"]);
    assert!(s["deliveries"].as_u64().unwrap() > 200, "{s}");
}

/// The queue a run used is gone afterwards.
async fn queue_is_gone(name: &str) {
    let conn = lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let passive = lapin::options::QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let found = ch
        .queue_declare(name.into(), passive, lapin::types::FieldTable::default())
        .await;
    assert!(found.is_err(), "queue {name} is still there");
}

#[tokio::test]
#[ignore = "RabbitMQ: needs IDEM_TEST_AMQP_URL and --include-ignored (scripts/test passes both)"]
async fn amqp_run_with_killed_workers_only_idem_never_charges_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let report = tokio::task::spawn_blocking(move || short_run(&path, &[]))
        .await
        .unwrap();
    for name in ["random", "clock", "model-hash"] {
        let s = by_strategy(&report, name);
        assert!(s["duplicate_charges"].as_u64().unwrap() > 0, "{name}: {s}");
        assert!(
            s["conversations_charged_twice"].as_u64().unwrap() > 0,
            "{name}: {s}"
        );
        assert!(s["wasted_model_calls"].as_u64().unwrap() > 0, "{name}: {s}");
        queue_is_gone(s["broker"]["queue"].as_str().unwrap()).await;
    }
    let s = by_strategy(&report, "idem");
    idem_held(&s);
    let random = by_strategy(&report, "random");
    assert!(
        s["wasted_model_calls"].as_u64().unwrap() < random["wasted_model_calls"].as_u64().unwrap(),
        "{s} vs {random}"
    );
    // Killed holders' claims were taken over once their lease ran out.
    assert!(s["broker"]["lease_takeovers"].as_u64().unwrap() > 0, "{s}");
    queue_is_gone(s["broker"]["queue"].as_str().unwrap()).await;

    // The run's traffic is in the intent tables the monitor reads.
    let url = idem_server::config::sqlite_url(dir.path());
    let (base, _state) = common::serve(&url, &common::test_clock()).await;
    let tenant = s["tenant"].as_str().unwrap();
    let live: Value = reqwest::get(format!("{base}/live/data.json?window=1h&tenant={tenant}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(live["totals"]["intents"], 200, "{live}");
    assert!(
        live["totals"]["deliveries"].as_i64().unwrap() >= 200,
        "{live}"
    );
}

#[tokio::test]
#[ignore = "RabbitMQ: needs IDEM_TEST_AMQP_URL, IDEM_TEST_PYTHON (a python with pika) and --include-ignored (scripts/test sets them)"]
async fn amqp_python_reference_worker_never_charges_twice() {
    let python = std::env::var("IDEM_TEST_PYTHON").expect("IDEM_TEST_PYTHON is not set");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/python/idem_worker.py"
    );
    let command = format!("{python} {script}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let report = tokio::task::spawn_blocking(move || {
        short_run(
            &path,
            &["--strategies", "idem", "--worker-command", &command],
        )
    })
    .await
    .unwrap();
    let s = by_strategy(&report, "idem");
    idem_held(&s);
    queue_is_gone(s["broker"]["queue"].as_str().unwrap()).await;
}

/// The new user's fault rates (a kill chance of 0.10 at each point, a lost
/// answer for one charge in four, a model that reads a retried
/// conversation differently half the time), 400 conversations: no stall
/// (a minute without an acknowledgement would stop the run and leave
/// conversations uncharged), no duplicate, nothing lost.
#[tokio::test]
#[ignore = "RabbitMQ: needs IDEM_TEST_AMQP_URL and --include-ignored (scripts/test passes both)"]
async fn amqp_the_new_users_fault_rates_finish_with_nothing_twice_or_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let report = tokio::task::spawn_blocking(move || {
        let url = amqp_url();
        let out = idem(&[
            "simulate",
            "--broker",
            &url,
            "--strategies",
            "idem",
            "--conversations",
            "400",
            "--workers",
            "4",
            "--kill-rate",
            "0.10",
            "--timeout-rate",
            "0.25",
            "--divergence-rate",
            "0.5",
            "--json",
            "--data-dir",
            path.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    })
    .await
    .unwrap();
    let s = by_strategy(&report, "idem");
    assert_eq!(s["charges_executed"], 400, "{s}");
    assert_eq!(s["duplicate_charges"], 0, "{s}");
    assert_eq!(s["conversations_not_charged"], 0, "{s}");
    assert_eq!(s["broker"]["unacknowledged"], 0, "{s}");
    assert!(s["conversations_charged_wrong_value"].is_u64(), "{s}");
}

/// A worker naming a kill point the simulator does not know ends the run
/// with exit 2 naming it, rather than being counted somewhere.
#[tokio::test]
#[ignore = "RabbitMQ: needs IDEM_TEST_AMQP_URL and --include-ignored (scripts/test passes both)"]
async fn amqp_an_unknown_kill_point_is_exit_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let url = amqp_url();
        idem(&[
            "simulate",
            "--broker",
            &url,
            "--strategies",
            "idem",
            "--conversations",
            "5",
            "--workers",
            "1",
            "--worker-command",
            r#"echo '{"ev":"kill","at":"after-coffee"}'; sleep 30"#,
            "--data-dir",
            path.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`after-coffee`"), "{stderr}");
    assert!(stderr.contains("before-intent"), "{stderr}");
}

/// Workers that cannot work stop the run: the report so far is printed
/// (the table on stdout, with the queue's unacknowledged count in JSON),
/// then the reason, and the exit is 2, never a bare error.
#[tokio::test]
#[ignore = "RabbitMQ: needs IDEM_TEST_AMQP_URL and --include-ignored (scripts/test passes both)"]
async fn amqp_a_run_that_stops_reports_what_it_did_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let url = amqp_url();
        idem(&[
            "simulate",
            "--broker",
            &url,
            "--strategies",
            "idem",
            "--conversations",
            "5",
            "--workers",
            "1",
            "--worker-command",
            "exit 0",
            "--json",
            "--data-dir",
            path.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the run stopped before it finished"),
        "{stderr}"
    );
    assert!(stderr.contains("the workers keep exiting"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let idem = &report["strategies"][0];
    assert_eq!(idem["strategy"], "idem", "{report}");
    assert_eq!(idem["broker"]["unacknowledged"], 5, "{report}");
    assert!(
        report["stopped"].as_str().unwrap().starts_with("idem: "),
        "{report}"
    );
}

#[test]
fn an_unreachable_broker_is_exit_2_naming_the_url_without_its_password() {
    let out = idem(&[
        "simulate",
        "--broker",
        "amqp://guest:s3cret@127.0.0.1:1/%2f",
        "--data-dir",
        tempfile::tempdir().unwrap().path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot reach the broker at amqp://guest:***@127.0.0.1:1/"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[test]
fn bad_broker_options_are_exit_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    for (args, says) in [
        (
            vec!["--broker", "amqps://h/%2f"],
            "amqps:// (TLS) is not built in",
        ),
        (vec!["--broker", "http://h/"], "must start with amqp://"),
        (
            vec![
                "--broker",
                "amqp://127.0.0.1:1/%2f",
                "--worker-command",
                "python3 w.py",
            ],
            "--worker-command runs idem's strategy only",
        ),
        (vec!["--worker-command", "python3 w.py"], "--broker"),
        (
            vec!["--broker", "amqp://h/%2f", "--kill-rate", "2"],
            "not between 0 and 1",
        ),
        (
            vec!["--broker", "amqp://h/%2f", "--workers", "0"],
            "--workers",
        ),
    ] {
        let mut all = vec!["simulate", "--data-dir", dir];
        all.extend(args.iter().copied());
        let out = idem(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn the_worker_refuses_to_start_without_the_simulator() {
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("simulate-worker")
        .env_remove("IDEM_SIM_BROKER")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("IDEM_SIM_STRATEGY is not set"), "{stderr}");
    // A rate out of range is refused before anything starts.
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("simulate-worker")
        .envs([
            ("IDEM_SIM_STRATEGY", "idem"),
            ("IDEM_SIM_BROKER", "amqp://127.0.0.1:1/%2f"),
            ("IDEM_SIM_QUEUE", "q"),
            ("IDEM_URL", "http://127.0.0.1:1"),
            ("IDEM_TOKEN", "t"),
            ("IDEM_SIM_KILL_RATE", "2"),
            ("IDEM_SIM_TIMEOUT_RATE", "0"),
            ("IDEM_SIM_DIVERGENCE_RATE", "0"),
            ("IDEM_SIM_PREFETCH", "1"),
            ("IDEM_SIM_LEASE_MS", "1000"),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("IDEM_SIM_KILL_RATE=`2` is not between 0 and 1"),
        "{stderr}"
    );
}

/// The manual shows idem's consumer as the pattern to copy: its chapter
/// includes the simulator's own code by anchor (mdBook's `{{#include}}`),
/// never a copy that can drift, and the anchor encloses the whole method.
#[test]
fn the_manual_includes_the_reference_consumer_the_simulator_runs() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let chapter = std::fs::read_to_string(format!("{root}/docs/book/src/simulate.md")).unwrap();
    assert!(
        chapter.contains("{{#include ../../../server/src/cli/sim_worker.rs:reference-consumer}}"),
        "the simulate chapter no longer includes the reference consumer"
    );
    let source = std::fs::read_to_string(format!("{root}/server/src/cli/sim_worker.rs")).unwrap();
    let from = source
        .find("// ANCHOR: reference-consumer\n")
        .expect("the anchor's start");
    let to = source
        .find("// ANCHOR_END: reference-consumer")
        .expect("the anchor's end");
    let shown = &source[from..to];
    assert!(
        shown.contains("async fn idem("),
        "the anchor no longer holds Worker::idem: {shown}"
    );
    assert_eq!(
        shown.matches('{').count(),
        shown.matches('}').count(),
        "the anchor cuts the method short"
    );
}
