//! The `idem` command line, driven from the outside as a user scripts it.

use crate::common;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const VECTORS: &str = include_str!("../../../core/tests/fixtures/derivation-v1.json");

fn idem(args: &[&str], stdin: &str, secret: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_idem"));
    cmd.args(args)
        .env_remove("IDEMPOTENCY_HMAC_KEY")
        .env_remove("IDEM_CATALOG");
    if let Some(s) = secret {
        cmd.env("IDEMPOTENCY_HMAC_KEY", s);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Feed stdin from another thread: a large input would otherwise fill
    // the output pipe while we are still writing, and both sides would wait.
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        // The child may exit before reading everything (a usage error).
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Registers `name` in `data`'s database (commands that name a tenant
/// refuse one that is not registered).
fn register(data: &str, name: &str) {
    let out = idem(&["tenant", "create", name, "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const REFERENCE: &[&str] = &[
    "cost",
    "--conversations",
    "30000",
    "--tokens-in",
    "8000",
    "--tokens-out",
    "600",
    "--price-in",
    "0,015",
    "--price-out",
    "0.075",
    "--price-unit",
    "1k",
    "--ticket",
    "1,20",
    "--duplicate-rate",
    "3",
];

/// `idem cost` on the reference scenario plus `extra` flags, with `--json`.
fn cost_json(extra: &[&str]) -> serde_json::Value {
    let mut args = REFERENCE.to_vec();
    args.extend(extra);
    args.push("--json");
    let o = idem(&args, "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn cost_json_is_the_reference_scenario_exactly() {
    let v = cost_json(&[]);
    assert_eq!(v["cost_per_call"], "0.165");
    assert_eq!(v["monthly_revenue"], "36000.00");
    assert_eq!(v["duplicated_conversations"], "900");
    assert_eq!(v["monthly_token_waste"], "148.50");
    assert_eq!(v["waste_share_of_revenue_pct"], "0.4125");
    assert_eq!(v["annual_token_waste"], "1782.00");
    assert_eq!(v["break_even_conversations"], "124");
    // On margin each conversation also pays its call: ⌈148,50 / (1,20 −
    // 0,165)⌉ = ⌈143,478…⌉ = 144.
    assert_eq!(v["break_even_conversations_on_margin"], "144");
    assert!(
        v.get("duplicated_charges").is_none(),
        "no risk block without risk inputs"
    );
}

#[test]
fn cost_risk_block_and_table() {
    let v = cost_json(&[
        "--money-share",
        "50",
        "--avg-charge",
        "180",
        "--ops-cost",
        "12,50",
        "--claim-rate",
        "2",
    ]);
    assert_eq!(v["duplicated_charges"], "450");
    assert_eq!(v["monthly_ops_cost"], "5625.00");
    assert_eq!(v["monthly_claim_exposure"], "1620.00");
    assert_eq!(v["monthly_total_risk"], "7245.00");
    assert_eq!(v["annual_total_risk"], "86940.00");

    let o = idem(REFERENCE, "", None);
    let table = stdout(&o);
    for want in [
        "R$ 0,165",
        "R$ 36.000,00",
        "R$ 148,50",
        "0,41%",
        "R$ 1.782,00",
        "124",
    ] {
        assert!(table.contains(want), "{want} missing from:\n{table}");
    }
}

/// The finance lead's contract: US$ 3,00 input / US$ 0,30 cached input /
/// US$ 15,00 output per 1M tokens, US$ 1 = R$ 5,33, revenue R$ 1,20.
const USD_CONTRACT: &[&str] = &[
    "--price-currency",
    "USD",
    "--fx",
    "5,33",
    "--fx-date",
    "2026-11-30",
    "--cached-share",
    "40",
    "--price-cached",
    "0,30",
    "--calls",
    "1.5",
    "--dup-cache-share",
    "80",
];

fn usd_contract_args(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = REFERENCE.iter().map(|s| (*s).to_owned()).collect();
    let set = |args: &mut Vec<String>, flag: &str, v: &str| {
        let i = args.iter().position(|a| a == flag).unwrap() + 1;
        args[i] = v.to_owned();
    };
    set(&mut args, "--price-in", "3");
    set(&mut args, "--price-out", "15");
    set(&mut args, "--price-unit", "1m");
    args.extend(USD_CONTRACT.iter().map(|s| (*s).to_owned()));
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

#[test]
fn cost_takes_a_usd_contract_with_cached_input() {
    let args = usd_contract_args(&["--json"]);
    let o = idem(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        "",
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // By hand: input 8,000 × (60% × 3 + 40% × 0.30) / 1M = US$ 0.01536,
    // output 600 × 15 / 1M = US$ 0.009; (0.01536 + 0.009) × 5.33.
    assert_eq!(v["cost_per_call"], "0.1298388");
    // A duplicate's input hits the cache at 80%: 8,000 × (20% × 3 + 80% ×
    // 0.30) / 1M = 0.00672; (0.00672 + 0.009) × 5.33 = 0.0837876.
    assert_eq!(v["cost_per_duplicate_call"], "0.0837876");
    assert_eq!(v["monthly_token_waste"], "75.40884");
    assert_eq!(v["monthly_useful_spend"], "5842.746");
    assert_eq!(v["break_even_conversations"], "63");
    // On margin: 1,5 calls × R$ 0,1298388 leave R$ 1,0052418 of each
    // R$ 1,20; ⌈75,40884 / 1,0052418⌉ = ⌈75,0156…⌉ = 76.
    assert_eq!(v["break_even_conversations_on_margin"], "76");
    assert_eq!(v["currency"], "BRL");
    assert_eq!(
        v["link"],
        "/?v=2&cs=40&cl=1.5&pi=3&pca=0.3&po=15&px=5.33&dcs=80&u=1m&pc=USD&pd=2026-11-30"
    );
    let args = usd_contract_args(&[]);
    let o = idem(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        "",
        None,
    );
    let table = stdout(&o);
    for want in [
        "US$ 1 = R$ 5,33 em 30/11/2026",
        "R$ 75,41",
        "R$ 0,1298",
        "63",
    ] {
        assert!(table.contains(want), "{want} missing from:\n{table}");
    }
}

#[test]
fn cost_takes_prices_from_the_model_table() {
    let mut args = REFERENCE.to_vec();
    for flag in ["--price-in", "--price-out", "--price-unit"] {
        let i = args.iter().position(|a| *a == flag).unwrap();
        args.drain(i..i + 2);
    }
    args.extend([
        "--model",
        "anthropic/claude-3-5-sonnet",
        "--fx",
        "5.33",
        "--json",
    ]);
    let o = idem(&args, "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // (8,000 × 3 + 600 × 15) / 1M × 5.33
    assert_eq!(v["cost_per_call"], "0.17589");
    assert_eq!(v["model"], "anthropic/claude-3-5-sonnet");
    // The rate is for the pair the command names: the table's dollar
    // against the revenue's real, and the output says so.
    assert_eq!(
        v["exchange"],
        serde_json::json!({ "from": "USD", "to": "BRL", "rate": "5.33", "date": null })
    );
    let table_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let o = idem(&table_args, "", None);
    assert!(stdout(&o).contains("US$ 1 = R$ 5,33"), "{}", stdout(&o));
    // A price currency other than the table's cannot be named with it:
    // a euro rate never prices dollars.
    let mut euro = table_args.clone();
    euro.extend(["--price-currency", "EUR"]);
    let o = idem(&euro, "", None);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("--price-currency"), "{}", stderr(&o));
    // An unknown model names the flag and suggests near ids.
    let bad: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == "anthropic/claude-3-5-sonnet" {
                "anthropic/claude-3-5-sonet"
            } else {
                a
            }
        })
        .collect();
    let o = idem(&bad, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--model"), "{}", stderr(&o));
    // `idem prices` lists the table.
    let o = idem(&["prices", "claude", "3-5", "sonnet", "--json"], "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let first: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["currency"], "USD");
    assert!(first["id"].as_str().unwrap().contains("claude-3-5-sonnet"));
    let o = idem(&["prices", "no-such-model-anywhere"], "", None);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn cost_refuses_contract_mistakes_naming_the_flag() {
    for (extra, flag) in [
        (&["--price-currency", "XYZ"][..], "--price-currency"),
        (&["--price-currency", "XTS"][..], "ISO 4217"),
        (&["--fx", "0"][..], "fx"),
        (&["--fx", "-5"][..], "fx"),
        (&["--cached-share", "120"][..], "cached-share"),
        (
            &["--fx-date", "04/12/2026"][..],
            "4 December 2026 or 12 April 2026",
        ),
        (&["--fx-date", "31/02/2026"][..], "no such day"),
        (&["--calls", "0"][..], "calls"),
        (&["--price-cached", "€ 0,30"][..], "US Dollar (USD)"),
        (&["--ticket", "US$ 1,20"][..], "Brazilian Real (BRL)"),
        (&["--tokens-in", "R$ 8000"][..], "not an amount of money"),
    ] {
        let mut args = usd_contract_args(&[]);
        for pair in extra.chunks(2) {
            let i = args.iter().position(|a| a == pair[0]).unwrap() + 1;
            args[i] = pair[1].to_owned();
        }
        let o = idem(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            "",
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(flag), "{extra:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("NaN") && !stderr(&o).contains("panicked"));
    }
    // Prices in dollars without a rate; a rate with one currency.
    let mut args = REFERENCE.to_vec();
    args.extend(["--price-currency", "USD"]);
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--fx: required"), "{}", stderr(&o));
    let mut args = REFERENCE.to_vec();
    args.extend(["--fx", "5,33"]);
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--fx"), "{}", stderr(&o));
    // A `$3` typed where reais are meant is an error, not R$ 3.
    let mut args = REFERENCE.to_vec();
    let i = args.iter().position(|a| *a == "--price-in").unwrap() + 1;
    args[i] = "$3";
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--price-in"), "{}", stderr(&o));
}

#[test]
fn cost_refuses_bad_input_with_the_flag_named() {
    let mut args = REFERENCE.to_vec();
    let rate = args.iter().position(|a| *a == "--duplicate-rate").unwrap() + 1;
    args[rate] = "101";
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("duplicate-rate"), "{}", stderr(&o));

    args[rate] = "abc";
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--duplicate-rate"), "{}", stderr(&o));

    let mut args = REFERENCE.to_vec();
    let ticket = args.iter().position(|a| *a == "--ticket").unwrap() + 1;
    args[ticket] = "0";
    let o = idem(&args, "", None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("break-even"), "{}", stderr(&o));
}

#[derive(serde::Deserialize)]
struct Doc {
    secret: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    tenant: String,
    action: String,
    payload: Box<serde_json::value::RawValue>,
    expected_key: String,
}

/// `idem key derive` for tenant `t` with a catalog file and the secret `s`.
fn derive_with_catalog(catalog: &std::path::Path, action: &str, payload: &str) -> Output {
    let catalog = catalog.to_str().unwrap();
    idem(
        &[
            "key",
            "derive",
            "--tenant",
            "t",
            "--action",
            action,
            "--catalog",
            catalog,
        ],
        payload,
        Some("s"),
    )
}

/// One `--batch` input line for a reference case.
fn batch_line(c: &Case) -> String {
    serde_json::json!({"tenant": c.tenant, "action": c.action, "payload": c.payload}).to_string()
}

#[test]
fn key_derive_single_payload() {
    let doc: Doc = serde_json::from_str(VECTORS).unwrap();
    let c = &doc.cases[0];
    let o = idem(
        &[
            "key", "derive", "--tenant", &c.tenant, "--action", &c.action,
        ],
        c.payload.get(),
        Some(&doc.secret),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), c.expected_key);

    // Without the secret: a clear refusal, not a key under some default.
    let o = idem(
        &[
            "key", "derive", "--tenant", &c.tenant, "--action", &c.action,
        ],
        c.payload.get(),
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("IDEMPOTENCY_HMAC_KEY is not set"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn batch_prints_one_line_per_input_line_in_order() {
    let doc: Doc = serde_json::from_str(VECTORS).unwrap();
    let mut input = String::new();
    let mut want = Vec::new();
    for (i, c) in doc.cases.iter().enumerate() {
        let line = batch_line(c);
        input.push_str(&line);
        input.push('\n');
        want.push(c.expected_key.clone());
        if i == 10 {
            input.push_str("{not json\n");
            want.push("error:".into());
            input.push_str(r#"{"tenant":"t","action":"pix.cobranca","payload":{"cliente_id":"c","valor":"-1","chave_pix_destino":"x","referencia_intencao":"r"}}"#);
            input.push('\n');
            want.push("error: action `pix.cobranca`: field `valor`".into());
        }
    }
    let o = idem(&["key", "derive", "--batch"], &input, Some(&doc.secret));
    assert_eq!(
        o.status.code(),
        Some(1),
        "a bad line makes the exit status 1"
    );
    let out = stdout(&o);
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!(g.starts_with(w.as_str()), "got {g}, want {w}");
    }

    // Every line good: exit 0.
    let good: String = input
        .lines()
        .filter(|l| l.starts_with("{\"action\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let o = idem(&["key", "derive", "--batch"], &good, Some(&doc.secret));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 60);
}

#[test]
fn catalog_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(
        &path,
        "[actions.\"a.b\"]\nreference = \"x\"\nfields = [{ name = \"x\", rule = \"uppercase\" }]\n",
    )
    .unwrap();
    let o = derive_with_catalog(&path, "a.b", "{}");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown rule `uppercase`"),
        "{}",
        stderr(&o)
    );

    // A custom catalog with rules v2 for a new action.
    std::fs::write(
        &path,
        "[actions.\"pix.estorno\"]\nrules_version = 2\nreference = \"ref\"\nfields = [{ name = \"ref\", rule = \"trim\" }, { name = \"chave\", rule = \"pix_key\" }]\n",
    )
    .unwrap();
    let run = |chave: &str| {
        let o = derive_with_catalog(
            &path,
            "pix.estorno",
            &format!(r#"{{"ref":"r1","chave":"{chave}"}}"#),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(run("+55 (11) 99999-9999"), run("5511999999999"));
}

#[test]
fn batch_keeps_order_across_chunks_and_without_a_final_newline() {
    let doc: Doc = serde_json::from_str(VECTORS).unwrap();
    let mut input = String::new();
    let mut want = Vec::new();
    // About 5 MB: several chunks, so several worker threads.
    for round in 0..400 {
        for c in &doc.cases {
            let line = batch_line(c);
            input.push_str(&line);
            input.push('\n');
            want.push(c.expected_key.as_str());
        }
        if round % 97 == 0 {
            input.push_str("not json\n");
            want.push("error:");
        }
    }
    input.pop(); // no newline after the last line
    let o = idem(&["key", "derive", "--batch"], &input, Some(&doc.secret));
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g.starts_with(w), "line {i}: got {g}, want {w}");
    }
}

#[test]
fn batch_reports_a_non_utf8_line_and_keeps_going() {
    let doc: Doc = serde_json::from_str(VECTORS).unwrap();
    let c = &doc.cases[1];
    let good = batch_line(c);
    let mut input = format!("{good}\n").into_bytes();
    input.extend_from_slice(b"\xff\xfe\n");
    input.extend_from_slice(format!("{good}\r\n").as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(["key", "derive", "--batch"])
        .env("IDEMPOTENCY_HMAC_KEY", &doc.secret)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            c.expected_key.as_str(),
            "error: the line is not valid UTF-8",
            c.expected_key.as_str()
        ]
    );
}

/// `idem migrate`, `idem retention` and `idem purge` on a SQLite data directory.
#[tokio::test(flavor = "multi_thread")]
async fn retention_and_purge_from_the_command_line() {
    use idem_store::{ManualClock, Options, Store};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let out = idem(&["migrate", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    // A tenant that is not registered is refused, naming it.
    let unknown = idem(&["retention", "acme", "--data-dir", data], "", None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no tenant \"acme\""),
        "{}",
        stderr(&unknown)
    );
    register(data, "acme");

    // Defaults, then a change, as one JSON object each.
    let out = idem(&["retention", "acme", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["intents_ms"], 7 * 86_400_000i64);
    assert_eq!(shown["http_keys_ms"], 86_400_000);
    let out = idem(
        &["retention", "acme", "--intents", "3d", "--data-dir", data],
        "",
        None,
    );
    let shown: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["intents_ms"], 3 * 86_400_000i64);
    assert_eq!(
        shown["actions_ms"],
        7 * 86_400_000i64,
        "untouched settings stay"
    );
    let bad = idem(
        &[
            "retention",
            "acme",
            "--intents",
            "3 weeks",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unit"), "{}", stderr(&bad));

    // Intents recorded four days ago by a store whose clock says so.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let clock = ManualClock::new(now - 4 * 86_400_000);
    let deriver = idem_core::KeyDeriver::new(&idem_core::Secret::new(b"s".to_vec()).unwrap());
    let mut options = Options::new(
        std::sync::Arc::new(idem_core::Catalog::builtin()),
        std::sync::Arc::new(deriver),
    );
    options.clock = std::sync::Arc::new(clock);
    let url = format!("sqlite://{}/idem.db", data);
    let store = Store::connect(&url, options).await.unwrap();
    for (tenant, n) in [("acme", 5), ("other", 2)] {
        let tenant = idem_core::TenantId::try_from(tenant).unwrap();
        for i in 0..n {
            record_pix(&store, &tenant, &format!("F-{i}")).await;
        }
    }
    store.close().await;

    let out = idem(&["purge", "--batch", "2", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // acme keeps 3 days: its 5 go; other keeps the default 7 days.
    assert_eq!(report["intents"], 5, "{report}");
    assert_eq!(report["tenants"], 2, "{report}");
    assert!(report["batches"].as_u64().unwrap() >= 3, "{report}");
    let bad = idem(&["purge", "--batch", "0", "--data-dir", data], "", None);
    assert_eq!(bad.status.code(), Some(2));
}

/// Records a one-real Pix charge intent with `reference` straight in the
/// store (what the commands under test then find).
async fn record_pix(store: &idem_store::Store, tenant: &idem_core::TenantId, reference: &str) {
    let json = format!(
        r#"{{"cliente_id":"c","valor":"1.00","chave_pix_destino":"a@b.co","referencia_intencao":"{reference}"}}"#
    );
    let p = idem_core::Payload::from_json(&json).unwrap();
    store
        .record_intent(tenant, "pix.cobranca", &p)
        .await
        .unwrap();
}

/// `idem stats rebuild` recounts lost rollups from the tables, per tenant
/// or for all, and refuses a malformed day or tenant with exit 2.
#[tokio::test]
async fn stats_rebuild_from_the_command_line() {
    use idem_store::{Options, Store};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let deriver = idem_core::KeyDeriver::new(&idem_core::Secret::new(b"s".to_vec()).unwrap());
    let options = Options::new(
        std::sync::Arc::new(idem_core::Catalog::builtin()),
        std::sync::Arc::new(deriver),
    );
    let url = format!("sqlite://{}/idem.db", data);
    let store = Store::connect(&url, options.clone()).await.unwrap();
    store.migrate().await.unwrap();
    let acme = idem_core::TenantId::try_from("acme").unwrap();
    for i in [0, 1, 2, 0] {
        record_pix(&store, &acme, &format!("R-{i}")).await;
    }
    store.close().await;
    // Counts lost, as they were before they were committed with the writes.
    {
        use sqlx::Connection as _;
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::raw_sql("delete from stats_rollup; delete from stats_journal")
            .execute(&mut c)
            .await
            .unwrap();
    }
    let totals = |store: Store| async move {
        let now = store.now_ms();
        let r = store
            .stats(
                &acme_id(),
                idem_store::stats::Granularity::Day,
                now - 86_400_000,
                now + 1,
            )
            .await
            .unwrap();
        store.close().await;
        (
            r.totals.intents,
            r.totals.deliveries,
            r.totals.redelivered_intents,
        )
    };
    let store = Store::connect(&url, options.clone()).await.unwrap();
    assert_eq!(totals(store).await, (0, 0, 0));
    register(data, "acme");

    let out = idem(
        &["stats", "rebuild", "--tenant", "acme", "--data-dir", data],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (report["tenants"].as_u64(), report["since_ms"].as_i64()),
        (Some(1), Some(0)),
        "{report}"
    );
    let store = Store::connect(&url, options.clone()).await.unwrap();
    assert_eq!(totals(store).await, (3, 4, 1));
    // Every tenant, from a day on; twice is once.
    let out = idem(
        &[
            "stats",
            "rebuild",
            "--since",
            "2026-01-01",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["since_ms"], 1_767_225_600_000_i64, "{report}");
    let store = Store::connect(&url, options).await.unwrap();
    assert_eq!(totals(store).await, (3, 4, 1));

    for (flag, value, named) in [
        ("--since", "2026-13-01", "YYYY-MM-DD"),
        ("--since", "yesterday", "YYYY-MM-DD"),
        ("--tenant", "", "tenant"),
    ] {
        let bad = idem(
            &["stats", "rebuild", flag, value, "--data-dir", data],
            "",
            None,
        );
        assert_eq!(bad.status.code(), Some(2), "{flag} {value:?}");
        assert!(stderr(&bad).contains(named), "{}", stderr(&bad));
    }
}

/// `idem webhook add|list|remove`: the secret is printed once (as
/// `whsec_` + base64 of 24 bytes) and never listed; bad input exits 2 naming
/// what is wrong and writes nothing.
#[test]
fn webhook_endpoints_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    register(data, "acme");
    register(data, "globex");
    let out = idem(
        &[
            "webhook",
            "add",
            "acme",
            "https://hooks.example.com/idem",
            "--events",
            "charge.created, refund.created",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let added: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = added["endpoint_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("ep_") && id.len() == 19, "{added}");
    assert_eq!(added["events"], "charge.created,refund.created");
    let secret = added["secret"].as_str().unwrap();
    let raw = secret.strip_prefix("whsec_").unwrap();
    assert_eq!(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, raw)
            .unwrap()
            .len(),
        24
    );
    assert!(stderr(&out).contains("shown once"));

    let list = idem(&["webhook", "list", "acme", "--data-dir", data], "", None);
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains(&id) && text.contains("https://hooks.example.com/idem"));
    assert!(!text.contains(raw), "the secret is never listed");
    let other = idem(&["webhook", "list", "globex", "--data-dir", data], "", None);
    assert_eq!(stdout(&other), "", "per tenant");

    for (args, named) in [
        (vec!["add", "acme", "ftp://x.example/h"], "http or https"),
        (vec!["add", "acme", "not a url"], "not valid"),
        (
            vec!["add", "acme", "http://user:pw@x.example/h"],
            "credentials",
        ),
        (
            vec![
                "add",
                "acme",
                "http://x.example/h",
                "--events",
                "Charge Created",
            ],
            "--events",
        ),
        (vec!["add", "", "http://x.example/h"], "tenant"),
        (vec!["remove", "acme", "ep_0000000000000000"], "no endpoint"),
        (vec!["remove", "globex", &id], "no endpoint"),
        (
            vec!["add", "nobody", "https://x.example/h"],
            "no tenant \"nobody\"",
        ),
        (vec!["list", "nobody"], "no tenant \"nobody\""),
        // Where a webhook would reach inside: loopback, the metadata
        // service, a private network, IPv4 inside IPv6.
        (
            vec!["add", "acme", "http://127.0.0.1:9/h"],
            "public addresses only",
        ),
        (
            vec!["add", "acme", "http://169.254.169.254/latest"],
            "public addresses only",
        ),
        (
            vec!["add", "acme", "http://10.1.2.3/h"],
            "public addresses only",
        ),
        (
            vec!["add", "acme", "http://[::ffff:127.0.0.1]/h"],
            "public addresses only",
        ),
        (
            vec!["add", "acme", "http://localhost:9/h"],
            "public addresses only",
        ),
    ] {
        let mut a = vec!["webhook"];
        a.extend(args.iter());
        a.extend(["--data-dir", data]);
        let bad = idem(&a, "", None);
        assert_eq!(bad.status.code(), Some(2), "{args:?}: {}", stderr(&bad));
        assert!(stderr(&bad).contains(named), "{args:?}: {}", stderr(&bad));
    }
    let list = idem(&["webhook", "list", "acme", "--data-dir", data], "", None);
    assert_eq!(
        stdout(&list).lines().count(),
        1,
        "nothing written by bad input"
    );

    let rm = idem(
        &["webhook", "remove", "acme", &id, "--data-dir", data],
        "",
        None,
    );
    assert!(rm.status.success(), "{}", stderr(&rm));
    let list = idem(&["webhook", "list", "acme", "--data-dir", data], "", None);
    assert_eq!(stdout(&list), "");
}

/// `idem alert add|list|remove`, as an operator writes it: the alert names
/// one of the tenant's endpoints; bad input exits 2 naming the option and
/// writes nothing.
#[test]
fn alerts_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    register(data, "acme");
    let out = idem(
        &[
            "webhook",
            "add",
            "acme",
            "http://127.0.0.1:9/hook",
            "--allow-private-webhooks",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ep: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ep = ep["endpoint_id"].as_str().unwrap().to_owned();
    let out = idem(
        &[
            "alert",
            "add",
            "acme",
            "--metric",
            "uncertain_now",
            "--above",
            "0",
            "--for",
            "5m",
            "--webhook",
            &ep,
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let added: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = added["alert_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("al_") && id.len() == 19, "{added}");
    assert_eq!(
        (
            &added["metric"],
            &added["above"],
            &added["for_ms"],
            &added["state"]
        ),
        (
            &serde_json::json!("uncertain_now"),
            &serde_json::json!("0"),
            &serde_json::json!(300_000),
            &serde_json::json!("ok")
        )
    );
    for (args, named) in [
        (vec!["--metric", "latency", "--above", "1"], "--metric"),
        (
            vec!["--metric", "duplicate_rate_pct", "--above", "-1"],
            "--above",
        ),
        (
            vec!["--metric", "duplicate_rate_pct", "--above", "2,5"],
            "--above",
        ),
        (
            vec!["--metric", "divergences", "--above", "0", "--window", "60d"],
            "--window",
        ),
    ] {
        let mut a = vec!["alert", "add", "acme", "--webhook", &ep];
        a.extend(args.iter());
        a.extend(["--data-dir", data]);
        let bad = idem(&a, "", None);
        assert_eq!(bad.status.code(), Some(2), "{args:?}: {}", stderr(&bad));
        assert!(stderr(&bad).contains(named), "{args:?}: {}", stderr(&bad));
    }
    let bad = idem(
        &[
            "alert",
            "add",
            "acme",
            "--metric",
            "uncertain_now",
            "--above",
            "0",
            "--webhook",
            "ep_0000000000000000",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("no such endpoint"),
        "{}",
        stderr(&bad)
    );
    let list = idem(&["alert", "list", "acme", "--data-dir", data], "", None);
    assert_eq!(
        stdout(&list).lines().count(),
        1,
        "nothing written by bad input"
    );
    assert!(stdout(&list).contains(&id));
    let rm = idem(
        &["alert", "remove", "acme", &id, "--data-dir", data],
        "",
        None,
    );
    assert!(rm.status.success(), "{}", stderr(&rm));
    let again = idem(
        &["alert", "remove", "acme", &id, "--data-dir", data],
        "",
        None,
    );
    assert_eq!(again.status.code(), Some(2));
    let list = idem(&["alert", "list", "acme", "--data-dir", data], "", None);
    assert_eq!(stdout(&list), "");
}

fn acme_id() -> idem_core::TenantId {
    idem_core::TenantId::try_from("acme").unwrap()
}

/// `idem tenant create` prints a token once; the store knows only its hash.
#[tokio::test(flavor = "multi_thread")]
async fn tenant_create_prints_a_token_that_authenticates() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let out = idem(&["tenant", "create", "acme", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out).trim().to_owned();
    assert!(token.starts_with("idem_"), "{token}");
    assert_eq!(stdout(&out).lines().count(), 1, "the token alone on stdout");
    let again = idem(&["tenant", "create", "acme", "--data-dir", data], "", None);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    let db = std::fs::read(dir.path().join("idem.db")).unwrap();
    let needle = token.rsplit('_').next().unwrap().as_bytes();
    assert!(
        !db.windows(needle.len()).any(|w| w == needle),
        "the token itself is never stored"
    );
    let url = format!("sqlite://{data}/idem.db");
    let store = idem_store::Store::connect(&url, idem_store::Options::admin())
        .await
        .unwrap();
    assert_eq!(store.authenticate(&token).await.unwrap().as_str(), "acme");
    store.close().await;
}

/// On PostgreSQL every instance of a deployment shares one database, so
/// `idem serve` refuses to start with a secret of its own making: it says
/// why before it connects anywhere.
#[test]
fn serve_on_postgres_without_a_shared_secret_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let unreachable = "postgres://nobody@127.0.0.1:1/none";
    let o = idem(
        &[
            "serve",
            "--data-dir",
            data,
            "--database-url",
            unreachable,
            "--addr",
            "127.0.0.1:0",
        ],
        "",
        None,
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("without a shared HMAC secret"), "{err}");
    assert!(
        err.contains("IDEMPOTENCY_HMAC_KEY") && err.contains("--hmac-key-file"),
        "{err}"
    );
    assert!(
        !dir.path().join("hmac.key").exists(),
        "no secret was generated"
    );
    // A secret file that is empty is refused by name.
    let empty = dir.path().join("empty.key");
    std::fs::write(&empty, "\n").unwrap();
    let o = idem(
        &[
            "serve",
            "--data-dir",
            data,
            "--database-url",
            unreachable,
            "--hmac-key-file",
            empty.to_str().unwrap(),
        ],
        "",
        None,
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("empty.key"), "{}", stderr(&o));
}

/// `idem tenant rotate-token|disable|enable|list`, as an operator runs
/// them: the new token alone on stdout, the old one refused after the
/// grace, a disabled tenant's token refused with the problem type that
/// says so, the list never showing a token, an unknown tenant exit 2.
#[tokio::test(flavor = "multi_thread")]
async fn tenant_tokens_have_a_lifecycle_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let out = idem(&["tenant", "create", "acme", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = stdout(&out).trim().to_owned();
    let out = idem(
        &[
            "tenant",
            "rotate-token",
            "acme",
            "--grace",
            "10m",
            "--data-dir",
            data,
        ],
        "",
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let second = stdout(&out);
    assert_eq!(second.lines().count(), 1, "the token alone on stdout");
    let second = second.trim().to_owned();
    assert!(second.starts_with("idem_") && second != first);
    assert!(stderr(&out).contains("600s"), "{}", stderr(&out));

    let url = format!("sqlite://{data}/idem.db");
    let store = idem_store::Store::connect(&url, idem_store::Options::admin())
        .await
        .unwrap();
    assert!(store.authenticate(&first).await.is_ok(), "within the grace");
    assert!(store.authenticate(&second).await.is_ok());

    let list = idem(&["tenant", "list", "--json", "--data-dir", data], "", None);
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(
        !text.contains(&first[20..]) && !text.contains(&second[20..]),
        "never a token"
    );
    let row: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(row["tenant"], "acme");
    assert_eq!(row["tokens"], 2, "{row}");
    assert_eq!(row["disabled"], false);
    assert!(row["created_utc"].as_str().unwrap().ends_with('Z'));

    let out = idem(
        &["tenant", "rotate-token", "acme", "--data-dir", data],
        "",
        None,
    );
    assert!(out.status.success());
    let third = stdout(&out).trim().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    for old in [&first, &second] {
        assert!(
            matches!(
                store.authenticate(old).await,
                Err(idem_store::Error::NotFound)
            ),
            "a rotation without grace ends every other token"
        );
    }
    assert!(store.authenticate(&third).await.is_ok());

    let out = idem(&["tenant", "disable", "acme", "--data-dir", data], "", None);
    assert!(out.status.success(), "{}", stderr(&out));
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert!(matches!(
        store.authenticate(&third).await,
        Err(idem_store::Error::TenantDisabled(_))
    ));
    let list = idem(&["tenant", "list", "--data-dir", data], "", None);
    assert!(stdout(&list).contains("DISABLED"), "{}", stdout(&list));
    let out = idem(&["tenant", "enable", "acme", "--data-dir", data], "", None);
    assert!(out.status.success());
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert!(store.authenticate(&third).await.is_ok());
    store.close().await;

    for args in [
        vec!["tenant", "rotate-token", "nobody"],
        vec!["tenant", "disable", "nobody"],
        vec!["tenant", "enable", "nobody"],
        vec!["tenant", "create", "_dashboard"],
        vec!["tenant", "rotate-token", "acme", "--grace", "106751991167d"],
    ] {
        let mut a = args.clone();
        a.extend(["--data-dir", data]);
        let bad = idem(&a, "", None);
        assert_eq!(bad.status.code(), Some(2), "{args:?}: {}", stderr(&bad));
    }
}

/// The database timeouts are flags of every command that opens the
/// database: `0` turns the statement timeout off (a long purge or rebuild),
/// and a timeout without a unit is refused, exit 2, naming the flag.
#[test]
fn database_timeouts_are_flags_of_every_database_command() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let ok = idem(
        &[
            "purge",
            "--data-dir",
            data,
            "--db-acquire-timeout",
            "2s",
            "--db-statement-timeout",
            "0",
        ],
        "",
        None,
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    let purged: serde_json::Value = serde_json::from_str(&stdout(&ok)).unwrap();
    assert_eq!(purged["tenants"], 0, "{purged}");
    let bad = idem(
        &["purge", "--data-dir", data, "--db-statement-timeout", "15"],
        "",
        None,
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("--db-statement-timeout")
            && stderr(&bad).contains("the unit must be s, m, h or d"),
        "{}",
        stderr(&bad)
    );
    let help = idem(&["serve", "--help"], "", None);
    for flag in [
        "--request-timeout",
        "--db-acquire-timeout",
        "--db-statement-timeout",
    ] {
        assert!(stdout(&help).contains(flag), "serve --help lacks {flag}");
    }
}

/// `45.000` is 45000 to a Brazilian and 45 to an English reader: without
/// `--locale` the CLI refuses it, exit 2, naming the flag and both readings;
/// with `--locale` it reads it that way and prints the table in that
/// locale. Forms only one reading fits (`0,015`, `2,40`) need no locale.
#[test]
fn cost_refuses_a_number_two_locales_read_apart_unless_told_the_locale() {
    // By hand: 12 × 0,015 + 0,6 × 0,075 = R$ 0,225 per call; 2,5% of
    // 45.000 conversations = 1.125 duplicates × 0,225 = R$ 253,125 wasted
    // per month; ⌈253,125 / 2,40⌉ = ⌈105,47⌉ = 106 to break even.
    let contract = |conversations: &str, tokens_in: &str, extra: &[&str]| {
        let mut args = vec![
            "cost",
            "--conversations",
            conversations,
            "--tokens-in",
            tokens_in,
            "--tokens-out",
            "600",
            "--price-in",
            "0,015",
            "--price-out",
            "0,075",
            "--ticket",
            "2,40",
            "--duplicate-rate",
            "2,5",
        ];
        args.extend_from_slice(extra);
        idem(&args, "", None)
    };
    let o = contract("45.000", "12000", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert_eq!(
        stderr(&o).trim(),
        "error: --conversations: `45.000` reads 45000 in pt-BR but 45 in en-US: say which with --locale pt-BR or --locale en"
    );
    let o = contract("45000", "12.000", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--tokens-in: `12.000` reads 12000 in pt-BR but 12 in en-US"),
        "{}",
        stderr(&o)
    );
    let o = contract("1.234.567", "12000", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("reads 1234567 in pt-BR but no number in en-US"),
        "{}",
        stderr(&o)
    );

    let o = contract("45.000", "12.000", &["--locale", "pt-BR", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["cost_per_call"], "0.225");
    assert_eq!(v["duplicated_conversations"], "1125");
    assert_eq!(v["monthly_token_waste"], "253.125");
    assert_eq!(v["break_even_conversations"], "106");
    // The same contract without any ambiguous form needs no locale.
    let plain = contract("45000", "12000", &["--json"]);
    assert_eq!(stdout(&plain), stdout(&o));

    // In English, 45,000 is forty-five thousand and the table is English.
    let o = idem(
        &[
            "cost",
            "--locale",
            "en",
            "--conversations",
            "45,000",
            "--tokens-in",
            "12,000",
            "--tokens-out",
            "600",
            "--price-in",
            "0.015",
            "--price-out",
            "0.075",
            "--ticket",
            "2.40",
            "--duplicate-rate",
            "2.5",
        ],
        "",
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table.lines().any(
            |l| l.starts_with("Tokens burnt per month ") && l.trim_end().ends_with(" R$253.13")
        ),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Duplicated conversations per month ")
                && l.trim_end().ends_with(" 1,125")),
        "{table}"
    );
    let o = contract("45000", "12000", &["--locale", "xx"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--locale"), "{}", stderr(&o));
}

/// Every command that opens the embedded database says which file it
/// opened, and one that has just created it says so: the same command run
/// in another directory opens another database, whose tokens the running
/// server has never seen.
#[test]
fn commands_on_the_embedded_database_say_which_file_they_opened() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let db = std::fs::canonicalize(dir.path())
        .unwrap()
        .join("data/idem.db");
    let created = idem(&["tenant", "create", "acme", "--data-dir", data], "", None);
    assert!(created.status.success(), "{}", stderr(&created));
    assert!(
        stderr(&created).contains(&format!("idem: created a new database at {}", db.display())),
        "{}",
        stderr(&created)
    );
    let listed = idem(&["tenant", "list", "--data-dir", data], "", None);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stderr(&listed).contains(&format!("idem: database {}", db.display()))
            && !stderr(&listed).contains("created"),
        "{}",
        stderr(&listed)
    );
    assert!(stdout(&listed).starts_with("acme\t"), "{}", stdout(&listed));
}

/// A calculator link's values as `idem cost` flags, numbers written the
/// way `locale` writes them (`45.000`, `0,015` in pt-BR).
fn contract_flags(link: &str, pt_br: bool) -> Vec<String> {
    let mut args = vec!["cost".to_owned()];
    for (key, value) in link.split('&').filter_map(|kv| kv.split_once('=')) {
        let flag = match key {
            "v" => continue,
            "c" => "conversations",
            "ti" => "tokens-in",
            "cs" => "cached-share",
            "to" => "tokens-out",
            "cl" => "calls",
            "pi" => "price-in",
            "pca" => "price-cached",
            "po" => "price-out",
            "px" => "fx",
            "tk" => "ticket",
            "d" => "duplicate-rate",
            "dcs" => "dup-cache-share",
            "ms" => "money-share",
            "ac" => "avg-charge",
            "oc" => "ops-cost",
            "cr" => "claim-rate",
            "u" => "price-unit",
            "pc" => "price-currency",
            "rc" => "revenue-currency",
            "pd" => "fx-date",
            other => panic!("no flag for link key {other}"),
        };
        let numeric = !matches!(key, "u" | "pc" | "rc" | "pd");
        let value = if numeric && pt_br {
            let (int, frac) = value.split_once('.').unwrap_or((value, ""));
            let mut grouped = String::new();
            for (i, ch) in int.chars().enumerate() {
                if i > 0 && (int.len() - i) % 3 == 0 {
                    grouped.push('.');
                }
                grouped.push(ch);
            }
            if frac.is_empty() {
                grouped
            } else {
                format!("{grouped},{frac}")
            }
        } else {
            value.to_owned()
        };
        args.push(format!("--{flag}"));
        args.push(value);
    }
    args.push("--locale".into());
    args.push(if pt_br { "pt-BR" } else { "en" }.into());
    args
}

/// Two exact decimals are the same number (compared at ten places, where
/// the corpus rounds a share that does not terminate).
fn same_number(got: &str, want: &str) -> bool {
    let p = |s: &str| {
        s.parse::<rust_decimal::Decimal>()
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .round_dp(10)
    };
    p(got) == p(want)
}

#[test]
fn every_contract_of_the_corpus_comes_out_exact_in_json_and_in_the_table() {
    let corpus = common::contracts();
    assert!(corpus.len() >= 10, "the corpus has at least ten contracts");
    for c in &corpus {
        let name = c["name"].as_str().unwrap();
        let link = c["link"].as_str().unwrap();
        for pt_br in [false, true] {
            let mut args = contract_flags(link, pt_br);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let table = idem(&refs, "", None);
            assert!(table.status.success(), "{name}: {}", stderr(&table));
            let table = stdout(&table);
            args.push("--json".into());
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = idem(&refs, "", None);
            assert!(o.status.success(), "{name} {args:?}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(v["currency"], c["currency"], "{name}");
            for (key, want) in c["exact"].as_object().unwrap() {
                match want.as_str() {
                    None => assert!(v[key].is_null(), "{name}: {key} is {}", v[key]),
                    Some(want) => {
                        let got = v[key]
                            .as_str()
                            .unwrap_or_else(|| panic!("{name}: no {key} in {v}"));
                        assert!(same_number(got, want), "{name}: {key} {got} ≠ {want}");
                    }
                }
            }
            // The table, in the locale asked for, shows the page's figures.
            let shown = c["shown_pt_BR"].as_object().unwrap();
            for key in [
                "monthly_token_waste",
                "annual_token_waste",
                "monthly_revenue",
            ] {
                let pt = shown[key].as_str().unwrap();
                let want = if pt_br {
                    pt.to_owned()
                } else {
                    common::shown_in_english(c, key, pt)
                };
                assert!(table.contains(&want), "{name}: {want} in\n{table}");
            }
        }
    }
}

/// The CLI under a finance lead's mistakes: per-1M prices under per-1k
/// are warned of (stderr, exit 0, figures unchanged); `%` is a percentage's
/// only; a withdrawn currency names its successor; a date refusal echoes
/// what was typed; the table carries the monthly total cost and the exact
/// expected count; the JSON dates the rate.
#[test]
fn cost_under_a_finance_leads_mistakes() {
    let base = [
        "cost",
        "--conversations",
        "12500",
        "--tokens-in",
        "8000",
        "--tokens-out",
        "600",
        "--price-currency",
        "USD",
        "--price-in",
        "2.5",
        "--price-out",
        "10",
        "--revenue-currency",
        "INR",
        "--fx",
        "84.37",
        "--fx-date",
        "2026-12-01",
        "--ticket",
        "95",
        "--duplicate-rate",
        "2.5%",
        "--locale",
        "en",
    ];
    let o = idem(&base, "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let warning = stderr(&o);
    assert!(
        warning.starts_with(
            "warning: Prices are entered per 1k tokens, but in US dollars per 1M tokens a price is above every one in the model price table (input up to $150.00, output up to $600.00)"
        ) && warning.contains("check whether they are per 1M tokens"),
        "{warning}"
    );
    let table = stdout(&o);
    // 12,500 × 2.5% = 312.5 duplicated conversations: shown whole, exact beside.
    assert!(table.contains("313 (expected value 312.5)"), "{table}");
    assert!(table.contains("Exchange rate"), "{table}");
    assert!(table.contains("on 1 Dec 2026"), "{table}");
    // The same figures as JSON, the rate with its date.
    let mut json = base.to_vec();
    json.push("--json");
    let o = idem(&json, "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["exchange"]["date"], "2026-12-01");
    assert_eq!(v["duplicated_conversations"], "312.5");
    // The risk block: monthly and annual risk, and the monthly total cost.
    let mut risk = base.to_vec();
    risk.extend([
        "--money-share",
        "40",
        "--avg-charge",
        "950",
        "--ops-cost",
        "120",
        "--claim-rate",
        "5",
    ]);
    let o = idem(&risk, "", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    for label in [
        "Financial risk per month",
        "Financial risk per year",
        "Total cost of duplicates per month",
        "Total cost of duplicates per year",
        "Claims exposure per month (estimate)",
    ] {
        assert!(table.contains(label), "{label}: {table}");
    }
    assert!(
        !table.contains("CDC"),
        "the Brazilian law is for reais: {table}"
    );
    // Refusals, exit 2, each naming what was typed.
    let refused = |swap: (&str, &str), want: &str| {
        let mut args = base.to_vec();
        let at = args.iter().position(|a| *a == swap.0).unwrap();
        args[at + 1] = swap.1;
        let o = idem(&args, "", None);
        assert_eq!(o.status.code(), Some(2), "{swap:?}");
        let e = stderr(&o);
        assert!(e.contains(want), "{swap:?}: {e}");
    };
    refused(
        ("--conversations", "12500%"),
        "--conversations: `12500%` ends in %",
    );
    refused(
        ("--revenue-currency", "HRK"),
        "--revenue-currency: `HRK` is a withdrawn currency: EUR replaced it on 2023-01-01",
    );
    refused(("--fx-date", "2026-31-12"), "--fx-date: `2026-31-12`");
    let mut pt = base.to_vec();
    let at = pt.iter().position(|a| *a == "--locale").unwrap();
    pt.remove(at);
    pt.remove(at);
    let at = pt.iter().position(|a| *a == "--fx-date").unwrap();
    pt[at + 1] = "04/12/2026";
    let o = idem(&pt, "", None);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("write 2026-12-04 or 2026-04-12"), "{e}");
}
