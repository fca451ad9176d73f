//! The corpus of number mistakes (`testkit/corpus/numbers.json`) on the
//! surfaces this binary serves: the calculator page without JavaScript
//! (typed values, `t=1`) in both languages, and `idem cost`. idem's MCP
//! estimate runs the same rows through the official MCP SDK
//! (`mcp/tests/python/test_own_server.py`). Each row has one verdict: read
//! as meant (the scenario link then carries the value) or refused with
//! what the surface says; a refused row that yields its link fails.

use crate::common::{self, TestApp};
use serde_json::Value;
use std::process::Command;

fn corpus() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testkit/corpus/numbers.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether a row runs on `surface`.
fn on(row: &Value, surface: &str) -> bool {
    match row.get("surfaces") {
        Some(list) => list.as_array().unwrap().iter().any(|s| s == surface),
        None => true,
    }
}

/// `query` with `key`'s value replaced by `value` (added when missing).
fn with(query: &str, key: &str, value: &str) -> String {
    let enc: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
    let mut found = false;
    let mut parts: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k == key => {
                found = true;
                format!("{k}={enc}")
            }
            _ => kv.to_owned(),
        })
        .collect();
    if !found {
        parts.push(format!("{key}={enc}"));
    }
    parts.join("&")
}

/// Whether a scenario link (`/?v=2&…`, a query) carries what the row
/// reads: `read_as` under its key, or, when `read_as` is null, no such key.
fn carries(link: &str, key: &str, row: &Value) -> bool {
    let mut pairs = link.split(['?', '&']);
    match row["read_as"].as_str() {
        Some(v) => pairs.any(|kv| kv == format!("{key}={v}")),
        None => !pairs.any(|kv| kv.starts_with(&format!("{key}="))),
    }
}

#[tokio::test]
async fn every_number_mistake_on_the_page_and_the_command_line() {
    let c = corpus();
    let app = TestApp::sqlite().await;
    let (mut page_rows, mut cli_rows) = (0, 0);
    let mut verdicts = std::collections::BTreeMap::<(String, &str), usize>::new();
    for row in c["rows"].as_array().unwrap() {
        let field = &c["fields"][row["field"].as_str().unwrap()];
        let ctx = &c["contexts"][row["context"].as_str().unwrap_or("bhd")];
        let Some(text) = row["text"].as_str() else {
            continue; // a JSON number: the MCP call's alone
        };
        let locale = row["locale"].as_str();
        let link = field["link"].as_str().unwrap();
        let verdict = row["verdict"].as_str().unwrap();
        let class = row["class"].as_str().unwrap();
        // The page: typed without JavaScript, in the row's language.
        if let (Some(l), true) = (locale, on(row, "page")) {
            let query = with(
                ctx["page"][l].as_str().unwrap(),
                field["page"].as_str().unwrap(),
                text,
            );
            let html = common::page(&format!("{}/?{query}&lang={l}", app.base)).await;
            let html = html.replace("&amp;", "&");
            let links: Vec<&str> = html
                .split("href=\"/?v=2&")
                .skip(1)
                .map(|h| h.split('"').next().unwrap_or(""))
                .collect();
            match verdict {
                "refused" => {
                    let says = row["says"]["page"].as_str().unwrap();
                    assert!(
                        html.contains(says),
                        "page {l} {class} `{text}`: no `{says}`"
                    );
                    if field["blocks"] == false {
                        // The figures stand; the refused value is in none.
                        let key = format!("{link}=");
                        assert!(
                            links
                                .iter()
                                .all(|h| !h.split('&').any(|kv| kv.starts_with(&key))),
                            "page {l} {class} `{text}`: refused, yet a link carries it"
                        );
                    } else {
                        assert!(
                            links.is_empty(),
                            "page {l} {class} `{text}`: refused, yet a scenario link was made"
                        );
                    }
                }
                "warned" => {
                    let warns = row["warns"]["page"].as_str().unwrap();
                    assert!(
                        html.contains(warns),
                        "page {l} {class} `{text}`: a figure with no `{warns}`"
                    );
                    assert!(
                        !links.is_empty()
                            && links
                                .iter()
                                .any(|h| carries(h, link, row) || row["read_as"].is_null()),
                        "page {l} {class} `{text}`: warned, but no figure as typed"
                    );
                }
                _ => assert!(
                    links.iter().any(|h| carries(h, link, row)),
                    "page {l} {class} `{text}`: no link with {link}={}",
                    row["read_as"]
                ),
            }
            *verdicts.entry((class.to_owned(), "page")).or_default() += 1;
            page_rows += 1;
        }
        // The command line, with --locale when the row has one.
        if on(row, "cli") {
            let mut args: Vec<String> = vec!["cost".into()];
            let base: Vec<String> = ctx["cli"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect();
            args.extend(base);
            let flag = field["cli"].as_str().unwrap();
            match args.iter().position(|a| a == flag) {
                Some(at) => args[at + 1] = text.to_owned(),
                None => args.extend([flag.to_owned(), text.to_owned()]),
            }
            if let Some(l) = locale {
                args.extend(["--locale".to_owned(), l.to_owned()]);
            }
            args.push("--json".into());
            let o = Command::new(env!("CARGO_BIN_EXE_idem"))
                .args(&args)
                .env_remove("IDEMPOTENCY_HMAC_KEY")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            if verdict == "refused" {
                let says = row["says"]["cli"].as_str().unwrap();
                assert_eq!(o.status.code(), Some(2), "cli {class} `{text}`: {err}");
                assert!(
                    err.contains(says),
                    "cli {class} `{text}`: no `{says}` in {err}"
                );
                assert!(
                    err.contains(flag),
                    "cli {class} `{text}`: the flag is not named: {err}"
                );
            } else {
                assert!(o.status.success(), "cli {class} `{text}`: {err}");
                let v: Value = serde_json::from_slice(&o.stdout).unwrap();
                let linked = v["link"].as_str().unwrap();
                if verdict == "warned" {
                    let warns = row["warns"]["cli"].as_str().unwrap();
                    assert!(
                        err.contains(warns),
                        "cli {class} `{text}`: a figure with no `{warns}` in {err}"
                    );
                } else {
                    assert!(err.is_empty(), "cli {class} `{text}`: read, yet {err}");
                }
                if verdict == "read" || !row["read_as"].is_null() {
                    assert!(
                        carries(linked, link, row),
                        "cli {class} `{text}`: {linked} has no {link}={}",
                        row["read_as"]
                    );
                }
            }
            *verdicts.entry((class.to_owned(), "cli")).or_default() += 1;
            cli_rows += 1;
        }
    }
    let rows = c["rows"].as_array().unwrap().len();
    assert!(rows >= 80, "{rows} rows");
    assert!(page_rows >= 70 && cli_rows >= 85, "{page_rows} {cli_rows}");
    for ((class, surface), n) in &verdicts {
        eprintln!("{class} · {surface}: {n}");
    }
}

/// Links edited by hand: a key twice is refused with a notice (422) and
/// no figure that key decides, never read as its last value (`&rc=USD`
/// turning dinar amounts into dollars); a link that lost its `v=2` is read
/// as version 2 by its keys, never as a version 1 link in reais.
#[tokio::test]
async fn a_hand_edited_link_is_read_as_meant_or_refused_with_a_notice() {
    let app = TestApp::sqlite().await;
    let base = &app.base;
    let values = |html: &str| -> Vec<String> {
        html.split("class=\"value\">")
            .skip(1)
            .map(|v| v.split('<').next().unwrap_or("").to_owned())
            .collect()
    };
    let res = reqwest::get(format!(
        "{base}/?v=2&pi=3&po=15&u=1m&pc=USD&rc=BHD&px=0.376&tk=37.125&rc=USD&lang=en-US"
    ))
    .await
    .unwrap();
    assert_eq!(res.status(), 422);
    let html = res.text().await.unwrap();
    assert!(
        html.contains("`rc` appears more than once in the link"),
        "no notice"
    );
    let shown = values(&html);
    assert!(
        shown.iter().all(|v| !v.contains('$') && !v.contains("BHD")),
        "a money figure in a currency the link named twice: {shown:?}"
    );
    // The same link without `v=2`: dinars, as its keys say.
    let html = common::page(&format!(
        "{base}/?pi=3&po=15&u=1m&pc=USD&rc=BHD&px=0.376&tk=37.125&lang=en-US"
    ))
    .await;
    let shown = values(&html);
    assert!(
        shown.iter().any(|v| v == "BHD 1,113,750.000"),
        "the revenue in dinars: {shown:?}"
    );
    assert!(!shown.iter().any(|v| v.contains("R$")), "{shown:?}");
}

/// Every money label on every chart of every hand-computed contract, in
/// both languages, is an amount the one writer of money wrote: the
/// currency's symbol, the locale's grouping, and no decimals or exactly the
/// currency's (0 for yen, 3 for dinars, 4 for the UF), never cut by bytes
/// (`¥5,000,` for ¥5,000,000; `BHD 10,000.`) and never negative.
#[tokio::test]
async fn every_chart_axis_writes_money_with_the_one_writer() {
    use idem_core::locale::{format_money, format_money_whole, Currency, Locale};
    let app = TestApp::sqlite().await;
    let label = regex::Regex::new(r"(?s)<text[^>]*>\s*([^<]*?)\s*</text>").unwrap();
    let mut checked = 0;
    let mut currencies = std::collections::BTreeSet::new();
    for c in common::contracts() {
        let name = c["name"].as_str().unwrap();
        let link = c["link"].as_str().unwrap();
        let cur = Currency::from_code(c["currency"].as_str().unwrap()).unwrap();
        for (tag, l) in [("pt-BR", Locale::PtBr), ("en-US", Locale::EnUs)] {
            let symbol = cur.symbol(l);
            let (dec, grp) = match l {
                Locale::PtBr => (',', '.'),
                Locale::EnUs => ('.', ','),
            };
            for chart in app::charts::NAMES {
                let svg = common::page(&format!(
                    "{}/charts/{chart}.svg?{link}&lang={tag}",
                    app.base
                ))
                .await;
                for m in label.captures_iter(&svg) {
                    let text = m[1].replace("&amp;", "&");
                    let Some(number) = text
                        .strip_prefix(symbol)
                        .map(|n| n.trim_start())
                        .filter(|n| n.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-'))
                    else {
                        continue;
                    };
                    let what = format!("{name} {tag} {chart}: `{text}`");
                    assert!(!number.starts_with('-'), "a negative tick: {what}");
                    let plain: String = number
                        .chars()
                        .filter(|ch| *ch != grp)
                        .map(|ch| if ch == dec { '.' } else { ch })
                        .collect();
                    let v: rust_decimal::Decimal = plain
                        .parse()
                        .unwrap_or_else(|_| panic!("not an amount: {what}"));
                    let decimals = plain.split_once('.').map_or(0, |(_, f)| f.len());
                    let rewritten = if decimals == 0 {
                        format_money_whole(v, l, cur)
                    } else {
                        format_money(v, l, cur)
                    };
                    assert_eq!(text, rewritten, "not the one writer's: {what}");
                    checked += 1;
                    currencies.insert(cur.code());
                }
            }
        }
    }
    // The zero-, two-, three- and four-decimal currencies of the corpus.
    for code in ["JPY", "KRW", "BRL", "BHD", "KWD", "CLF"] {
        assert!(
            currencies.contains(code),
            "no {code} label among {currencies:?}"
        );
    }
    assert!(checked > 300, "{checked}");
}
