//! `idem simulate` end to end: through the real store and API, the three
//! per-attempt key strategies charge twice and idem never does; a seed
//! reproduces a run. On SQLite, and on PostgreSQL when it is configured.

use crate::common;

use common::by_strategy;
use serde_json::Value;
use std::process::Command;

fn simulate(db: &[&str], seed: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "simulate",
        "--conversations",
        "150",
        // Many retried extractions change, so divergent charges show up
        // in a run this small.
        "--divergence-rate",
        "0.5",
        "--seed",
        seed,
        "--json",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(db);
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(&args)
        .env("IDEMPOTENCY_HMAC_KEY", "simulate-test-secret")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check(report: &Value) {
    for name in ["random", "clock", "model-hash"] {
        let s = by_strategy(report, name);
        assert!(s["duplicate_charges"].as_u64().unwrap() > 0, "{name}: {s}");
        assert!(
            s["conversations_charged_twice"].as_u64().unwrap() > 0,
            "{name}"
        );
    }
    // A changed extraction on a retry becomes a second, different charge
    // for the strategies that re-extract.
    assert!(
        by_strategy(report, "random")["divergent_charges"]
            .as_u64()
            .unwrap()
            > 0
    );
    let idem = by_strategy(report, "idem");
    assert_eq!(idem["conversations"], 150);
    assert_eq!(idem["charges_executed"], 150, "{idem}");
    assert_eq!(idem["duplicate_charges"], 0, "{idem}");
    assert_eq!(idem["divergent_charges"], 0, "{idem}");
    assert_eq!(idem["conversations_not_charged"], 0, "{idem}");
    // Redeliveries happened to idem too: they were absorbed, not avoided,
    // and a redelivery read the frozen intent instead of calling the model.
    assert!(idem["deliveries"].as_u64().unwrap() > 150);
    let random = by_strategy(report, "random");
    assert!(
        idem["wasted_model_calls"].as_u64().unwrap()
            < random["wasted_model_calls"].as_u64().unwrap(),
        "{idem} vs {random}"
    );
}

/// The report without what legitimately depends on timing: tenant names,
/// and idem's delivery and model-call counts (when two workers get one
/// message at once, whether the second finds the intent already recorded
/// and skips the model, or meets the first charge in flight, is a race).
fn reproducible(mut v: Value) -> Value {
    for s in v["strategies"].as_array_mut().unwrap() {
        let o = s.as_object_mut().unwrap();
        o.remove("tenant");
        if o["strategy"] == "idem" {
            for k in [
                "deliveries",
                "model_calls",
                "wasted_model_calls",
                "wasted_model_cost",
                // Which delivery records the intent first (and so whose
                // extraction is frozen) depends on the workers' timing.
                "conversations_charged_wrong_value",
            ] {
                o.remove(k);
            }
        }
    }
    v
}

#[test]
fn on_sqlite_only_idem_never_charges_twice_and_a_seed_reproduces_the_run() {
    let a = simulate(&[], "7");
    check(&a);
    let b = simulate(&[], "7");
    assert_eq!(reproducible(a.clone()), reproducible(b));
    let c = simulate(&[], "8");
    check(&c);
    assert_ne!(
        reproducible(a),
        reproducible(c),
        "another seed, another run"
    );
}

#[test]
#[ignore = "PostgreSQL: needs IDEM_TEST_POSTGRES_URL and --include-ignored (scripts/test passes both)"]
fn on_postgres_only_idem_never_charges_twice() {
    let url = std::env::var("IDEM_TEST_POSTGRES_URL").expect("IDEM_TEST_POSTGRES_URL is not set");
    let report = simulate(&["--database-url", &url], "11");
    check(&report);
}
