//! The live monitor through real HTTP, on SQLite and PostgreSQL: counts
//! that follow the intent tables, uncertain actions with their keys, the
//! feed's events within two seconds of a write, two instances on one
//! database agreeing, and who may see what.

use crate::common;

use idem_core::TenantId;
use idem_server::config::AdminToken;
use idem_server::http::state::LiveAccess;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

use idem_testkit::TestDb as Db;

/// One `idem serve` instance: its own store (own statistics counters and
/// flusher), like a second process on the same database.
type Instance = common::TestApp;

/// An instance on 127.0.0.1: open to all without an admin token, closed
/// (tokens decide) with one.
async fn instance(db: &Db, admin: Option<AdminToken>) -> Instance {
    Instance::spawn(&db.url, |c| c.admin_token = admin).await
}

/// The open monitor: loopback, no admin token.
fn open() -> Option<AdminToken> {
    None
}

use common::tenant;

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

async fn intent(base: &str, token: &str, reference: &str, valor: &str) -> u16 {
    http()
        .post(format!("{base}/v1/intents"))
        .bearer_auth(token)
        .json(&json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": "c1", "valor": valor,
            "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": reference,
        }}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn data(base: &str, token: Option<&str>, query: &str) -> (u16, Value) {
    let mut req = http().get(format!("{base}/live/data.json?{query}"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Polls `/live/data.json` until `ok` holds, for at most `within`.
async fn until(
    base: &str,
    token: Option<&str>,
    query: &str,
    within: Duration,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let t = Instant::now();
    loop {
        let (status, v) = data(base, token, query).await;
        assert_eq!(status, 200, "{v}");
        if ok(&v) {
            return v;
        }
        assert!(t.elapsed() < within, "not within {within:?}: {v:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("live").await
}

idem_testkit::both!(
    counts_follow_the_intent_tables_and_uncertain_actions_are_listed,
    card_table_and_list_agree_on_uncertain_now,
    two_instances_show_the_same_numbers,
    the_feed_pushes_a_write_within_two_seconds,
    tokens_decide_what_the_monitor_shows,
    the_work_queue_shows_the_intent_and_reconciles_from_the_page,
    the_work_queue_keeps_to_the_monitors_access_rules,
    a_failed_intent_is_superseded_from_its_page_and_through_v1_never_a_running_one,
    the_work_queue_exports_end_whole_under_every_encoding,
);

/// Intents, redeliveries, a divergence and an expired lease, read back
/// from `/live/data.json`, with the rate's denominator and the link.
async fn counts_follow_the_intent_tables_and_uncertain_actions_are_listed(db: &Db) {
    let a = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    for n in 0..4 {
        assert_eq!(
            intent(&a.base, &token, &format!("r{n}"), "10.00").await,
            201
        );
    }
    assert_eq!(intent(&a.base, &token, "r0", "10.00").await, 200);
    assert_eq!(
        intent(&a.base, &token, "r1", "99.00").await,
        200,
        "divergent redelivery"
    );
    // A claim whose lease runs out: uncertain at once, before any sweep.
    let key = "ab".repeat(32);
    let begin = http()
        .post(format!("{}/v1/actions/{key}/begin", a.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca", "lease_ms": 200 }))
        .send()
        .await
        .unwrap();
    assert_eq!(begin.status().as_u16(), 201);
    a.clock.advance(Duration::from_millis(300));
    let v = until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["totals"]["deliveries"] == 6 && v["uncertain"] == 1
    })
    .await;
    let t = &v["totals"];
    assert_eq!(
        (t["intents"].as_i64(), t["redeliveries"].as_i64()),
        (Some(4), Some(2))
    );
    assert_eq!(t["redelivered_intents"], 2);
    assert_eq!(t["divergences"], 1);
    assert_eq!(v["duplicate_rate_pct"], "50");
    assert_eq!(v["in_flight"], 0);
    assert_eq!(v["uncertain_keys"][0]["key"], key.as_str());
    assert_eq!(v["uncertain_keys"][0]["tenant"], "acme");
    assert_eq!(v["rows"][0]["action"], "pix.cobranca");
    // An hour scaled to a month is a guess: no "use these numbers" link.
    assert_eq!(v["use_numbers"], serde_json::Value::Null);
    // 4 intents in 24 hours: 120 a month, 50% of them redelivered; the link
    // says where the numbers came from.
    let day = until(&a.base, None, "window=24h", Duration::from_secs(5), |v| {
        v["totals"]["deliveries"] == 6
    })
    .await;
    assert_eq!(
        day["use_numbers"],
        "/?v=2&c=120&d=50&src=live&lw=24h&li=4&lt=acme"
    );
    assert_eq!(
        v["series"].as_array().unwrap().len(),
        60,
        "one point a minute"
    );
    // The page shows the same, with the denominator and the key.
    let page = common::page(&format!("{}/live?window=1h&lang=en-US", a.base)).await;
    assert!(page.contains("50.00% (2 of 4 intents)"), "{page}");
    assert!(page.contains(&key), "the uncertain key is listed");
    assert!(
        page.contains("pick the 24 h window or longer"),
        "an hour is not scaled to a month"
    );
    let page = common::page(&format!("{}/live?window=24h&lang=en-US", a.base)).await;
    assert!(
        page.contains("/?v=2&amp;c=120&amp;d=50&amp;src=live&amp;lw=24h&amp;li=4&amp;lt=acme\""),
        "use these numbers"
    );
    // Each business action's row has its own link, scoped to it.
    assert!(page.contains("lt=acme&amp;la=pix.cobranca"), "per-row link");
    // The calculator's panel, too.
    let calc = common::page(&format!("{}/?lang=en-US", a.base)).await;
    assert!(calc.contains("id=\"live-panel\""), "{calc}");
    assert!(calc.contains("data-feed=\"/live/events?window=24h&amp;lang=en-US&amp;view=panel\""));
    // A retention under twice the longest redelivery delay is flagged.
    assert_eq!(v["horizon"]["warning"], false, "{}", v["horizon"]);
    a.clock.advance(Duration::from_millis(120));
    assert_eq!(intent(&a.base, &token, "r3", "10.00").await, 200);
    let mut s = a.store.session().await.unwrap();
    let acme = TenantId::try_from("acme").unwrap();
    let mut r = s.retention(&acme).await.unwrap();
    r.intent_ms = 150;
    s.set_retention(&acme, &r).await.unwrap();
    drop(s);
    let v = until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["horizon"]["warning"] == true
    })
    .await;
    assert!(
        v["horizon"]["max_ms"].as_i64().unwrap() >= 120,
        "{}",
        v["horizon"]
    );
    assert_eq!(v["horizon"]["retention_ms"], 150);
    let page = common::page(&format!("{}/live?window=1h&lang=en-US", a.base)).await;
    assert!(
        page.contains("Retention is under twice the longest delay observed"),
        "{page}"
    );
    // Bad input: a clear 422, never a 500.
    let (status, v) = data(&a.base, None, "window=2h").await;
    assert_eq!(status, 422);
    assert!(
        v["detail"].as_str().unwrap().contains("1h, 24h, 7d or 30d"),
        "{v}"
    );
    // The page too: a 422 that says why, not another window's numbers.
    let res = http()
        .get(format!("{}/live?window=2h", a.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 422);
    let html = res.text().await.unwrap();
    assert!(html.contains("id=\"live-refused\""), "{html}");
    assert!(html.contains("1h, 24h, 7d or 30d"), "{html}");
    assert!(
        !html.contains("id=\"live-intents\""),
        "no numbers for a window nobody asked for"
    );
    a.store.close().await;
}

/// "Uncertain now" has one definition: the card is the sum of the table's
/// column and the list names the same actions, before and after the
/// sweep, each under its own action type (never a catch-all `*`).
async fn card_table_and_list_agree_on_uncertain_now(db: &Db) {
    let a = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    let begin = |key: String, action: &'static str| {
        let base = a.base.clone();
        let token = token.clone();
        async move {
            let res = http()
                .post(format!("{base}/v1/actions/{key}/begin"))
                .bearer_auth(&token)
                .json(&json!({ "action": action, "lease_ms": 200 }))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status().as_u16(), 201);
        }
    };
    begin("a1".repeat(32), "pix.cobranca").await;
    begin("a2".repeat(32), "pix.cobranca").await;
    begin("b1".repeat(32), "email.cobranca").await;
    a.clock.advance(Duration::from_millis(300));
    let agree = |v: &Value| {
        let rows = v["rows"].as_array().unwrap();
        let per: Vec<(String, i64)> = rows
            .iter()
            .filter(|r| r["uncertain_now"].as_i64().unwrap() > 0)
            .map(|r| {
                (
                    r["action"].as_str().unwrap().to_owned(),
                    r["uncertain_now"].as_i64().unwrap(),
                )
            })
            .collect();
        let sum: i64 = per.iter().map(|(_, n)| n).sum();
        assert_eq!(v["uncertain"].as_i64(), Some(sum), "card = table: {v:#}");
        assert_eq!(
            v["uncertain_keys"].as_array().unwrap().len() as i64,
            sum,
            "list = card"
        );
        per
    };
    let v = until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["uncertain"] == 3
    })
    .await;
    assert_eq!(
        agree(&v),
        [
            ("email.cobranca".to_owned(), 1),
            ("pix.cobranca".to_owned(), 2)
        ],
        "before the sweep"
    );
    // The sweep marks them; they keep their action type on every view.
    let report = a.store.purge(100).await.unwrap();
    assert_eq!(report.leases_expired, 3);
    let v = until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["actions_uncertain"] == 2)
    })
    .await;
    assert_eq!(
        agree(&v),
        [
            ("email.cobranca".to_owned(), 1),
            ("pix.cobranca".to_owned(), 2)
        ],
        "after the sweep"
    );
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["action"] != "*"),
        "{v:#}"
    );
    let page = common::page(&format!("{}/live?window=1h&lang=en-US", a.base)).await;
    assert!(
        page.contains("<th scope=\"col\">Uncertain now</th>"),
        "{page}"
    );
    // Filtered to one tenant, the select still offers the others.
    tenant(&a.store, "beta").await;
    let page = common::page(&format!("{}/live?window=1h&tenant=acme", a.base)).await;
    assert!(
        page.contains("<option value=\"beta\">beta</option>"),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"acme\" selected>acme</option>"),
        "{page}"
    );
    a.store.close().await;
}

/// Writes through one instance show on another's monitor: both read the
/// rollups each instance flushes twice a second.
async fn two_instances_show_the_same_numbers(db: &Db) {
    let a = instance(db, open()).await;
    let b = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    for n in 0..3 {
        assert_eq!(intent(&a.base, &token, &format!("x{n}"), "1.00").await, 201);
    }
    assert_eq!(intent(&a.base, &token, "x0", "1.00").await, 200);
    let started = Instant::now();
    let on_b = until(&b.base, None, "window=1h", Duration::from_secs(2), |v| {
        v["totals"]["deliveries"] == 4
    })
    .await;
    eprintln!(
        "instance B saw instance A's writes after {:?}",
        started.elapsed()
    );
    let on_a = until(&a.base, None, "window=1h", Duration::from_secs(2), |v| {
        v["totals"]["deliveries"] == 4
    })
    .await;
    assert_eq!(on_a["totals"], on_b["totals"]);
    assert_eq!(on_a["rows"], on_b["rows"]);
    // The counters are the statistics' own, under /v1/stats' names.
    for key in [
        "corrections",
        "delay_max_ms",
        "redelivered_intents",
        "http_422",
    ] {
        assert!(on_a["totals"][key].is_i64(), "{key}: {on_a}");
        assert!(on_a["rows"][0][key].is_i64(), "{key}: {on_a}");
    }
    a.store.close().await;
    b.store.close().await;
}

/// Reads server-sent events until one carries `needle`.
async fn event_with(res: &mut reqwest::Response, needle: &str, within: Duration) -> String {
    let t = Instant::now();
    let mut buf = String::new();
    while t.elapsed() < within {
        match tokio::time::timeout(within.saturating_sub(t.elapsed()), res.chunk()).await {
            Ok(Ok(Some(c))) => buf.push_str(&String::from_utf8_lossy(&c)),
            _ => break,
        }
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if event.contains(needle) {
                return event;
            }
        }
    }
    panic!("no event with {needle:?} within {within:?}; pending: {buf}");
}

/// The feed sends the first numbers at once, then new numbers within two
/// seconds of a write to another instance, then heartbeats.
async fn the_feed_pushes_a_write_within_two_seconds(db: &Db) {
    let a = instance(db, open()).await;
    let b = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    let mut feed = http()
        .get(format!("{}/live/events?window=1h&lang=en-US", b.base))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status().as_u16(), 200);
    assert_eq!(feed.headers()["content-type"], "text/event-stream");
    event_with(&mut feed, "event: snapshot", Duration::from_secs(2)).await;
    assert_eq!(intent(&a.base, &token, "f1", "3.00").await, 201);
    let written = Instant::now();
    let e = event_with(
        &mut feed,
        "<output class=\"value\">1</output>",
        Duration::from_secs(2),
    )
    .await;
    assert!(e.starts_with("event: snapshot"), "{e}");
    eprintln!("the feed carried the write after {:?}", written.elapsed());
    // A heartbeat comes at least every 2 s; the slack is for a loaded
    // machine's timers, not for the promise.
    event_with(&mut feed, "event: heartbeat", Duration::from_secs(5)).await;
    a.store.close().await;
    b.store.close().await;
}

/// Off loopback: no token, 401; a bad token, 401; the admin token sees
/// every tenant; a tenant token sees its own only, in the JSON, the page
/// and the feed, and asking for another tenant is refused. The sign-in
/// form keeps the token in an HttpOnly cookie.
async fn tokens_decide_what_the_monitor_shows(db: &Db) {
    let s = instance(db, AdminToken::new("admin-secret")).await;
    let ta = tenant(&s.store, "acme").await;
    let tb = tenant(&s.store, "globex").await;
    assert_eq!(intent(&s.base, &ta, "a1", "1.00").await, 201);
    for n in 0..3 {
        assert_eq!(intent(&s.base, &tb, &format!("b{n}"), "1.00").await, 201);
    }
    let (status, v) = data(&s.base, None, "window=1h").await;
    assert_eq!(status, 401, "{v}");
    let (status, _) = data(&s.base, Some("idem_nope"), "window=1h").await;
    assert_eq!(status, 401);
    let page = http().get(format!("{}/live", s.base)).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 401);
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("action=\"/live/login\""));
    let feed = http()
        .get(format!("{}/live/events", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status().as_u16(), 401);

    let all = until(
        &s.base,
        Some("admin-secret"),
        "window=1h",
        Duration::from_secs(5),
        |v| v["totals"]["intents"] == 4,
    )
    .await;
    assert_eq!(all["tenants"], json!(["acme", "globex"]));
    assert_eq!(all["admin"], true);

    let own = until(
        &s.base,
        Some(&ta),
        "window=1h",
        Duration::from_secs(5),
        |v| v["totals"]["intents"] == 1,
    )
    .await;
    assert_eq!(own["tenants"], json!(["acme"]));
    assert_eq!(own["admin"], false);
    assert!(!own.to_string().contains("globex"), "{own}");
    let (status, v) = data(&s.base, Some(&ta), "window=1h&tenant=globex").await;
    assert_eq!(status, 403, "{v}");

    // The feed under a tenant token: its own numbers, nothing of globex.
    let mut feed = http()
        .get(format!("{}/live/events?window=1h&lang=en-US", s.base))
        .bearer_auth(&ta)
        .send()
        .await
        .unwrap();
    let e = event_with(&mut feed, "event: snapshot", Duration::from_secs(2)).await;
    assert!(e.contains("tenant acme"), "{e}");
    assert!(!e.contains("globex"), "{e}");
    let other = http()
        .get(format!("{}/live/events?tenant=globex", s.base))
        .bearer_auth(&ta)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 403);
    // Typed as what it is: another tenant's numbers, not a bad body.
    let p: serde_json::Value = other.json().await.unwrap();
    assert_eq!(p["type"], "urn:idem:problem:other-tenant", "{p}");

    // Sign in with the form: an HttpOnly cookie, then the page shows acme.
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = no_redirect
        .post(format!("{}/live/login", s.base))
        .form(&[("token", ta.as_str()), ("lang", "en-US")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = http()
        .get(format!("{}/live?lang=en-US", s.base))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    // A signed-in page is never kept by a cache.
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    assert!(html.contains("tenant acme") && !html.contains("globex"));

    // The monitor's charts are images with their own address and the
    // page's access rules; the page shows them as images.
    assert!(
        html.contains("<img src=\"/live/charts/deliveries.svg?window=24h&amp;lang=en-US&amp;v="),
        "{html}"
    );
    let chart = |path: &str, token: Option<&str>| {
        let mut req = http().get(format!("{}{path}", s.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    assert_eq!(
        chart("/live/charts/deliveries.svg?window=1h", None)
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    let res = chart(
        "/live/charts/deliveries.svg?window=1h&lang=en-US",
        Some(&ta),
    )
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "image/svg+xml; charset=utf-8"
    );
    assert_eq!(res.headers()["cache-control"], "private, max-age=5");
    let svg = res.text().await.unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect();
    assert!(
        texts.contains(&"deliveries".to_owned()) && texts.contains(&"redeliveries".to_owned()),
        "{texts:?}"
    );
    let res = chart(
        "/live/charts/rate.svg?window=1h&format=png&width=640",
        Some(&ta),
    )
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(
        chart("/live/charts/rate.svg?tenant=globex", Some(&ta))
            .await
            .unwrap()
            .status()
            .as_u16(),
        403
    );
    assert_eq!(
        chart("/live/charts/rate.svg?window=2h", Some(&ta))
            .await
            .unwrap()
            .status()
            .as_u16(),
        422
    );
    assert_eq!(
        chart("/live/charts/pie.svg", Some(&ta))
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    let res = no_redirect
        .post(format!("{}/live/login", s.base))
        .form(&[("token", "idem_wrong"), ("lang", "en-US")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/live?lang=en-US&login=failed");
    assert!(res.headers().get("set-cookie").is_none());
    s.store.close().await;
}

/// The rule `idem serve` applies: open on loopback without an admin token.
#[test]
fn loopback_without_a_token_is_open_and_nothing_else_is() {
    let lo: std::net::SocketAddr = "127.0.0.1:3000".parse().unwrap();
    let any: std::net::SocketAddr = "0.0.0.0:3000".parse().unwrap();
    assert!(LiveAccess::for_addr(lo, None).open);
    assert!(!LiveAccess::for_addr(lo, AdminToken::new("t")).open);
    assert!(!LiveAccess::for_addr(any, None).open);
    assert!(AdminToken::new("  ").is_none());
    assert_eq!(
        format!("{:?}", AdminToken::new("secret").unwrap()),
        "AdminToken(<redacted>)"
    );
}

/// Records an intent and claims its action for 200 ms; returns the key.
async fn uncertain_charge(a: &Instance, token: &str, reference: &str, valor: &str) -> String {
    let res = http()
        .post(format!("{}/v1/intents", a.base))
        .bearer_auth(token)
        .json(&json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": "cli-7", "valor": valor,
            "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": reference,
        }}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let key = res.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = http()
        .post(format!("{}/v1/actions/{key}/begin", a.base))
        .bearer_auth(token)
        .json(&json!({ "action": "pix.cobranca", "lease_ms": 200 }))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    key
}

/// A way out of a wrong first attempt: a failed action's page offers to
/// supersede its intent (refusing bad input with why), the new key runs,
/// the old page says where the intent went; `/v1`'s route refuses an
/// action that is running.
async fn a_failed_intent_is_superseded_from_its_page_and_through_v1_never_a_running_one(db: &Db) {
    let a = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    let key = uncertain_charge(&a, &token, "SUP-9", "170.00").await;
    let supersede_v1 = |reference: &'static str, body: Value| {
        let url = format!("{}/v1/intents/pix.cobranca/{reference}/supersede", a.base);
        let token = token.clone();
        async move {
            http()
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    // Running (its claim's lease has not run out): refused, nothing changed.
    let res = supersede_v1("SUP-9", json!({"reason": "wrong total"})).await;
    assert_eq!(res.status().as_u16(), 409);
    assert!(res.json::<Value>().await.unwrap()["detail"]
        .as_str()
        .unwrap()
        .contains("started"));
    let res = supersede_v1("SUP-404", json!({"reason": "x"})).await;
    assert_eq!(res.status().as_u16(), 404);
    let res = supersede_v1("SUP-9", json!({"reason": "x", "extra": 1})).await;
    assert_eq!(res.status().as_u16(), 422);
    // The provider refuses the total: failed, nothing executed.
    let res = http()
        .post(format!("{}/v1/actions/{key}/fail", a.base))
        .bearer_auth(&token)
        .json(&json!({ "token": 1, "error": "the total is not the items'", "retryable": false }))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let url = format!("{}/live/actions/{key}?lang=en-US", a.base);
    let page = common::page(&url).await;
    assert!(page.contains("id=\"supersede-form\""), "{page}");
    let post = |form: Vec<(&'static str, String)>| {
        let url = format!("{}/live/actions/{key}/supersede", a.base);
        async move { no_redirects().post(url).form(&form).send().await.unwrap() }
    };
    let form = |reason: &str, candidate: &str| {
        vec![
            ("reason", reason.to_owned()),
            ("candidate", candidate.to_owned()),
            ("tenant", "acme".to_owned()),
            ("lang", "en-US".to_owned()),
        ]
    };
    let location = |res: &reqwest::Response| res.headers()["location"].to_str().unwrap().to_owned();
    let fixed = r#"{"cliente_id": "cli-7", "valor": "180.00", "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": "SUP-9"}"#;
    for (reason, candidate, says) in [
        ("", fixed, "&error=reason"),
        ("wrong total", "{not json", "&error=candidate"),
        (
            "wrong total",
            &fixed.replace("SUP-9", "SUP-10"),
            "&error=candidate",
        ),
        (
            "wrong total",
            &fixed.replace("cliente_id", "_idem_x"),
            "&error=candidate",
        ),
    ] {
        let res = post(form(reason, candidate)).await;
        assert!(location(&res).ends_with(says), "{says}: {}", location(&res));
    }
    let res = post(form("the merchant refused the total", fixed)).await;
    assert!(
        location(&res).ends_with("&done=superseded"),
        "{}",
        location(&res)
    );
    let intent: Value = common::get_json(
        http()
            .get(format!("{}/v1/intents/pix.cobranca/SUP-9", a.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(intent["revision"], 2, "{intent}");
    assert_eq!(intent["payload"]["valor"], "18000");
    let new_key = intent["key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    let page = common::page(&format!("{}{}", a.base, location(&res))).await;
    assert!(page.contains("Intent superseded"), "{page}");
    assert!(
        page.contains("id=\"action-superseded\"") && page.contains(&new_key),
        "{page}"
    );
    assert!(
        page.contains("superseded by the admin (/live): the merchant refused the total"),
        "{page}"
    );
    assert!(
        !page.contains("id=\"supersede-form\""),
        "superseded: no form"
    );
    // The new key's action runs.
    let res = http()
        .post(format!("{}/v1/actions/{new_key}/begin", a.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201, "{}", res.text().await.unwrap());
    // The old key's page again: nothing more to supersede there.
    let res = post(form("again", "")).await;
    assert!(
        location(&res).ends_with("&error=not_failed"),
        "{}",
        location(&res)
    );
}

/// The exports stream; compressed, the stream is polled once more after
/// its end (the encoder's trailer), which an unfused stream answered with a
/// panic mid-body (a browser's download ended "canceled"). Empty and not.
async fn the_work_queue_exports_end_whole_under_every_encoding(db: &Db) {
    use std::io::Read;
    let a = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    for round in 0..2 {
        if round == 1 {
            uncertain_charge(&a, &token, "ENC-1", "12.34").await;
            a.clock.advance(Duration::from_millis(300));
            a.store.purge(100).await.unwrap();
        }
        for path in [
            "/live/uncertain.csv?tenant=acme&lang=en-US",
            "/live/uncertain.json?tenant=acme",
        ] {
            for encoding in [
                "gzip",
                "br",
                "deflate",
                "zstd",
                "identity",
                "gzip, deflate, br, zstd",
            ] {
                let res = http()
                    .get(format!("{}{path}", a.base))
                    .header("accept-encoding", encoding)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status().as_u16(), 200, "{path} {encoding}");
                let said = res
                    .headers()
                    .get("content-encoding")
                    .map(|v| v.to_str().unwrap().to_owned());
                let raw = res
                    .bytes()
                    .await
                    .unwrap_or_else(|e| panic!("{path} {encoding}: the body broke: {e}"));
                let mut text = String::new();
                match said.as_deref() {
                    Some("gzip") => {
                        flate2::read::GzDecoder::new(&raw[..])
                            .read_to_string(&mut text)
                            .unwrap();
                    }
                    Some("br") => {
                        brotli::Decompressor::new(&raw[..], 4096)
                            .read_to_string(&mut text)
                            .unwrap();
                    }
                    Some("deflate") => {
                        flate2::read::ZlibDecoder::new(&raw[..])
                            .read_to_string(&mut text)
                            .unwrap();
                    }
                    None => text = String::from_utf8(raw.to_vec()).unwrap(),
                    Some(other) => panic!("{other}"),
                }
                // zstd is not offered (no C library in the build for it):
                // a client asking only for it gets the body whole.
                let expect = match encoding {
                    "identity" | "zstd" => None,
                    "gzip, deflate, br, zstd" => Some("br"),
                    e => Some(e),
                };
                assert_eq!(said.as_deref(), expect, "{path} {encoding}");
                let rows = if path.contains("csv") {
                    text.lines().count() - 1
                } else {
                    serde_json::from_str::<Value>(&text)
                        .unwrap()
                        .as_array()
                        .unwrap()
                        .len()
                };
                assert_eq!(rows, round, "{path} {encoding}: {text}");
            }
            // curl, asking for whatever it can decode, ends without error
            // (it reports a stream cut short as exit 18 or 23).
            let out = tokio::process::Command::new("curl")
                .args(["-sS", "--fail", "--compressed"])
                .arg(format!("{}{path}", a.base))
                .output()
                .await
                .expect("curl is installed");
            assert!(
                out.status.success(),
                "{path}: curl --compressed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The on-call engineer's path: the list shows each uncertain key's
/// reference, amount and customer (the sweep keeps its lease end), the
/// exports carry every row, the action's page shows the frozen payload
/// and every attempt, and its form records the outcome under the fencing
/// rule of `POST /v1/actions/{key}/reconcile`.
async fn the_work_queue_shows_the_intent_and_reconciles_from_the_page(db: &Db) {
    let a = instance(db, open()).await;
    let token = tenant(&a.store, "acme").await;
    let key = uncertain_charge(&a, &token, "FAT-9; \"q\"", "6577.89").await;
    a.clock.advance(Duration::from_millis(300));
    let report = a.store.purge(100).await.unwrap();
    assert_eq!(report.leases_expired, 1);
    let v = until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["uncertain"] == 1
    })
    .await;
    let u = &v["uncertain_keys"][0];
    assert_eq!(u["key"], key.as_str());
    assert_eq!(u["reference"], "FAT-9; \"q\"");
    assert_eq!(u["amount"], "6577.89");
    assert_eq!(u["customer"], "cli-7");
    assert!(
        u["lease_until_ms"].is_i64(),
        "the sweep keeps the lease end: {u}"
    );
    assert!(u["age_ms"].as_i64().unwrap() >= 300, "{u}");
    let page = common::page(&format!("{}/live?window=1h&lang=en-US", a.base)).await;
    for needle in [
        format!("href=\"/live/actions/{key}?tenant=acme&amp;lang=en-US\""),
        format!("data-copy-text=\"{key}\""),
        "FAT-9; &quot;q&quot;".into(),
        "6,577.89".into(),
        "cli-7".into(),
        "href=\"/live/uncertain.csv?lang=en-US\"".into(),
    ] {
        assert!(page.contains(&needle), "{needle} in {page}");
    }

    // A second attempt takes over and its lease runs out too.
    let res = http()
        .post(format!("{}/v1/actions/{key}/begin", a.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca", "lease_ms": 200 }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    a.clock.advance(Duration::from_millis(300));

    // The exports: every uncertain row, in the locale's dialect.
    let csv = http()
        .get(format!("{}/live/uncertain.csv?lang=pt-BR", a.base))
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status().as_u16(), 200);
    assert!(csv.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("idem-uncertain-"));
    let text = csv.text().await.unwrap();
    assert!(text.starts_with('\u{feff}'), "BOM");
    let mut r = csv::ReaderBuilder::new()
        .delimiter(b';')
        .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let head = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let col = |k: &str| {
        rows[0]
            .get(head.iter().position(|h| h == k).unwrap())
            .unwrap()
            .to_owned()
    };
    assert_eq!(col("key"), key);
    assert_eq!(col("reference"), "FAT-9; \"q\"");
    assert_eq!(col("amount"), "6577,89");
    assert_eq!(col("amount_formatted"), "6.577,89");
    assert_eq!(col("attempts"), "2");
    let json: Value =
        common::get_json(http().get(format!("{}/live/uncertain.json?tenant=acme", a.base))).await;
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!(json[0]["customer"], "cli-7");

    // The action's page: the intent, the payload, both attempts, the form.
    let url = format!("{}/live/actions/{key}?lang=en-US", a.base);
    let res = http().get(&url).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let page = res.text().await.unwrap();
    for needle in [
        "id=\"intent-reference\">FAT-9; &quot;q&quot;",
        "id=\"intent-amount\">6,577.89",
        "&quot;cliente_id&quot;: &quot;cli-7&quot;",
        "<tr data-ended=\"swept\">",
        "<tr data-ended=\"current\" class=\"current\">",
        "uncertain: outcome unknown",
        "id=\"reconcile-form\"",
        "name=\"token\" value=\"2\"",
    ] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    let post = |form: Vec<(&'static str, String)>, origin: Option<&'static str>| {
        let url = format!("{}/live/actions/{key}/reconcile", a.base);
        async move {
            let mut req = no_redirects().post(url).form(&form);
            if let Some(o) = origin {
                req = req.header("origin", o);
            }
            req.send().await.unwrap()
        }
    };
    let form = |token: &str, outcome: &str, response: &str| {
        vec![
            ("token", token.to_owned()),
            ("outcome", outcome.to_owned()),
            ("response", response.to_owned()),
            ("error", String::new()),
            ("tenant", "acme".to_owned()),
            ("lang", "en-US".to_owned()),
        ]
    };
    let location = |res: &reqwest::Response| res.headers()["location"].to_str().unwrap().to_owned();
    // Another site's page may not post it.
    let res = post(form("2", "completed", "{}"), Some("https://evil.example")).await;
    assert_eq!(res.status().as_u16(), 403);
    // Bad input and a stale token record nothing and say why.
    let res = post(form("2", "completed", "{not json"), None).await;
    assert_eq!(res.status().as_u16(), 303);
    assert!(
        location(&res).ends_with("&error=response"),
        "{}",
        location(&res)
    );
    let res = post(form("1", "completed", "{\"charge_id\":\"ch_1\"}"), None).await;
    assert!(
        location(&res).ends_with("&error=stale"),
        "{}",
        location(&res)
    );
    let stale_page = common::page(&format!("{}{}", a.base, location(&res))).await;
    assert!(stale_page.contains("Nothing was recorded: another attempt"));
    // The current token records it, as the API's reconcile would.
    let res = post(form("2", "completed", "{\"charge_id\":\"ch_1\"}"), None).await;
    assert_eq!(res.status().as_u16(), 303);
    assert!(
        location(&res).ends_with("&done=reconciled"),
        "{}",
        location(&res)
    );
    let action: Value = common::get_json(
        http()
            .get(format!("{}/v1/actions/{key}", a.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(action["state"], "completed", "{action}");
    assert_eq!(action["reconciled"], true);
    let page = common::page(&format!("{}{}", a.base, location(&res))).await;
    assert!(page.contains("Outcome recorded"), "{page}");
    assert!(!page.contains("id=\"reconcile-form\""), "settled: no form");
    until(&a.base, None, "window=1h", Duration::from_secs(5), |v| {
        v["uncertain"] == 0
    })
    .await;
    // An unknown key is a 404 page, not an error.
    let res = http()
        .get(format!("{}/live/actions/{}", a.base, "f".repeat(64)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404);
    a.store.close().await;
}

/// The action's page, its form and the exports follow `/live`'s access
/// rules: no token, no look; a tenant's token sees its own tenant only.
async fn the_work_queue_keeps_to_the_monitors_access_rules(db: &Db) {
    let a = instance(db, AdminToken::new("admin-secret")).await;
    let ta = tenant(&a.store, "acme").await;
    let tb = tenant(&a.store, "globex").await;
    let key = uncertain_charge(&a, &ta, "A-1", "1.00").await;
    a.clock.advance(Duration::from_millis(300));
    let get = |path: String, token: Option<&str>| {
        let mut req = http().get(format!("{}{path}", a.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };
    let detail = format!("/live/actions/{key}");
    assert_eq!(get(detail.clone(), None).await, 401);
    assert_eq!(get("/live/uncertain.csv".into(), None).await, 401);
    assert_eq!(get("/live/uncertain.json".into(), None).await, 401);
    assert_eq!(get(detail.clone(), Some(&ta)).await, 200);
    assert_eq!(get(detail.clone(), Some("admin-secret")).await, 200);
    // Another tenant's token neither sees nor finds it.
    assert_eq!(get(detail.clone(), Some(&tb)).await, 404);
    assert_eq!(get(format!("{detail}?tenant=acme"), Some(&tb)).await, 403);
    assert_eq!(
        get("/live/uncertain.json?tenant=acme".into(), Some(&tb)).await,
        403
    );
    let own: Value = common::get_json(
        http()
            .get(format!("{}/live/uncertain.json", a.base))
            .bearer_auth(&tb),
    )
    .await;
    assert_eq!(own, json!([]), "globex has nothing uncertain");
    let res = no_redirects()
        .post(format!("{}/live/actions/{key}/reconcile", a.base))
        .form(&[("token", "1"), ("outcome", "failed"), ("error", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let res = no_redirects()
        .post(format!("{}/live/actions/{key}/reconcile", a.base))
        .bearer_auth(&tb)
        .form(&[("token", "1"), ("outcome", "failed"), ("error", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status().as_u16(),
        404,
        "another tenant cannot settle it"
    );
    a.store.close().await;
}
