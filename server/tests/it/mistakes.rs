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

#[tokio::test]
async fn every_number_mistake_on_the_page_and_the_command_line() {
    let c = corpus();
    let app = TestApp::sqlite().await;
    let (mut page_rows, mut cli_rows) = (0, 0);
    for row in c["rows"].as_array().unwrap() {
        let field = &c["fields"][row["field"].as_str().unwrap()];
        let ctx = &c["contexts"]["bhd"];
        let Some(text) = row["text"].as_str() else {
            continue; // a JSON number: the MCP call's alone
        };
        let locale = row["locale"].as_str();
        let link = field["link"].as_str().unwrap();
        let refused = row["verdict"] == "refused";
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
            if refused {
                let says = row["says"]["page"].as_str().unwrap();
                assert!(
                    html.contains(says),
                    "page {l} {class} `{text}`: no `{says}`"
                );
                assert!(
                    !html.contains("href=\"/?v=2&"),
                    "page {l} {class} `{text}`: refused, yet a scenario link was made"
                );
            } else {
                let want = format!("{link}={}", row["read_as"].as_str().unwrap());
                let linked = html.split("href=\"/?v=2&").skip(1).any(|h| {
                    h.split('"')
                        .next()
                        .unwrap_or("")
                        .split('&')
                        .any(|kv| kv == want)
                });
                assert!(linked, "page {l} {class} `{text}`: no link with {want}");
            }
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
            let at = args.iter().position(|a| a == flag).unwrap();
            args[at + 1] = text.to_owned();
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
            if refused {
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
                let want = format!("{link}={}", row["read_as"].as_str().unwrap());
                let linked = v["link"]
                    .as_str()
                    .unwrap()
                    .split(['?', '&'])
                    .any(|kv| kv == want);
                assert!(linked, "cli {class} `{text}`: {} has no {want}", v["link"]);
            }
            cli_rows += 1;
        }
    }
    assert!(page_rows >= 18 && cli_rows >= 20, "{page_rows} {cli_rows}");
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
