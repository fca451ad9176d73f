//! The trust boundary through real HTTP: what a hostile client, a web page
//! elsewhere or a spreadsheet can do to idem, and what it gets back. Depth
//! bombs against a real `idem serve` child process (which must still be up
//! and serving afterwards), DNS rebinding against the open monitor, forms
//! posted from another site, formulas in the CSV, tokens rotated, disabled
//! and deleted, login sessions, slow clients, anonymous saves, and the
//! smaller rules (NUL bytes, problem documents, request ids, `/metrics`).
//! Tests that touch the database run on SQLite and PostgreSQL.

use crate::common;

use idem_core::TenantId;
use idem_server::config::{AdminToken, Config};
use idem_testkit::TestDb as Db;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN: &str = "an-admin-token-of-at-least-32-characters!";

async fn sqlite() -> Db {
    Db::sqlite()
}

async fn postgres() -> Option<Db> {
    Db::postgres("security").await
}

idem_testkit::both!(
    a_depth_bomb_is_a_422_and_the_server_keeps_serving,
    a_nul_byte_is_a_422_naming_the_field,
    a_rotated_disabled_or_deleted_token_is_refused_within_a_second,
    login_keeps_a_session_never_the_token,
    the_uncertain_csv_reads_as_data_in_a_spreadsheet,
    the_reconcile_form_stores_retryable_false_as_false,
);

use common::{http_client as http, tenant, TestApp as Srv};

async fn serve(db: &Db, f: impl FnOnce(&mut Config)) -> Srv {
    Srv::spawn(&db.url, f).await
}

/// A demo charge of R$ 1,00 under `key`; its status.
async fn charge(base: &str, token: &str, key: &str) -> u16 {
    http()
        .post(format!("{base}/v1/demo/charges"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(&json!({"amount_cents": 100, "currency": "BRL", "customer": "c"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

async fn problem(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    assert_eq!(ct, "application/problem+json", "status {status}");
    (status, res.json().await.unwrap())
}

/// `idem serve` as a child process, so a stack overflow (which aborts the
/// whole process) shows as a dead child rather than a failed test thread.
async fn child_serve(db: &Db, extra: &[&str]) -> common::ChildServer {
    common::child_serve(&db.url, extra, &[]).await
}

/// 8,000 levels of JSON fit in 16 KB, and a recursive walk of them (the
/// fingerprint's canonical form, behind a guarded route or the
/// unauthenticated conformance fixture) overflows a worker's stack, which
/// aborts the process for every tenant. Each such body must be a 422 that
/// names the limit, with nothing stored, and the same process must answer
/// the next request.
async fn a_depth_bomb_is_a_422_and_the_server_keeps_serving(db: &Db) {
    let mut srv = child_serve(db, &["--demo", "--conformance-fixture"]).await;
    let store = common::store(&db.url).await;
    let token = tenant(&store, "acme").await;
    let c = http();
    let bomb = format!(
        r#"{{"amount_cents": 100, "currency": "BRL", "customer": "c", "x": {}}}"#,
        nested(8_000)
    );
    assert!(bomb.len() < 64 * 1024);
    for (path, auth, key) in [
        ("/v1/demo/charges", true, "deep-1"),
        ("/echo", false, "deep-2"),
        ("/v1/intents", true, "-"),
        ("/v1/keys", true, "-"),
    ] {
        for depth in [65, 5_000, 8_000, 30_000] {
            let body = format!(r#"{{"a": {}}}"#, nested(depth));
            let mut req = c
                .post(format!("{}{path}", srv.base))
                .header("content-type", "application/json")
                .header("idempotency-key", key)
                .body(if depth == 8_000 { bomb.clone() } else { body });
            if auth {
                req = req.bearer_auth(&token);
            }
            let (status, p) = problem(req.send().await.unwrap()).await;
            assert_eq!(status, 422, "{path} at depth {depth}: {p}");
            assert_eq!(p["type"], "urn:idem:problem:too-deep", "{path}: {p}");
            assert_eq!(p["max_depth"], 64, "{p}");
            assert!(p["detail"].as_str().unwrap().contains("64 levels"), "{p}");
            assert!(srv.alive(), "{path} at depth {depth} killed the server");
        }
    }
    // Depth 64 is within the limit: the layer reads it (the charge itself
    // is refused for its unknown field or shape, never for its depth).
    let ok = format!(
        r#"{{"amount_cents": 100, "currency": "BRL", "customer": "c", "x": {}}}"#,
        nested(62)
    );
    let res = c
        .post(format!("{}/v1/demo/charges", srv.base))
        .bearer_auth(&token)
        .header("idempotency-key", "deep-3")
        .header("content-type", "application/json")
        .body(ok)
        .send()
        .await
        .unwrap();
    assert_ne!(res.status().as_u16(), 500);
    // Nothing was charged by the refused bodies, and the server serves.
    let n = c
        .get(format!("{}/v1/demo/charges/count", srv.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert!(n["count"].as_i64().unwrap() <= 1, "{n}");
    assert_eq!(charge(&srv.base, &token, "after-the-bombs").await, 201);
    assert!(srv.alive());
    store.close().await;
}

/// PostgreSQL's text holds no NUL. Answered as "unavailable" (503 with
/// `Retry-After: 1`), a client would retry for ever: it must be a 422
/// naming the field, on both backends, with nothing recorded.
async fn a_nul_byte_is_a_422_naming_the_field(db: &Db) {
    let s = serve(db, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let res = http()
        .post(format!("{}/v1/intents", s.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": "c1", "valor": "10.00",
            "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": "FAT\u{0}1",
        }}))
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("retry-after").is_none());
    let (status, p) = problem(res).await;
    assert_eq!(status, 422, "{p}");
    assert_eq!(p["type"], "urn:idem:problem:unstorable-text");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("`payload.referencia_intencao`"),
        "{p}"
    );
    let stats = common::get_json(
        http()
            .get(format!("{}/v1/stats", s.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(stats["totals"]["intents"], 0, "nothing recorded: {stats}");
}

async fn status_with(base: &str, token: &str) -> (u16, Value) {
    let res = http()
        .get(format!("{base}/v1/stats"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Polls until `want` answers, for at most `within`; returns how long it
/// took.
async fn until_status(base: &str, token: &str, want: u16, within: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let (got, body) = status_with(base, token).await;
        if got == want {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < within,
            "still {got} after {within:?}, want {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The bound the README states: a rotated, expired, disabled or deleted
/// token is refused within one second on every instance. Two instances on
/// one database, each with its own cache, must both refuse it.
async fn a_rotated_disabled_or_deleted_token_is_refused_within_a_second(db: &Db) {
    let a = serve(db, |_| {}).await;
    let b = serve(db, |_| {}).await;
    let t = TenantId::try_from("acme").unwrap();
    let old = tenant(&a.store, "acme").await;
    // Warm both caches.
    for s in [&a, &b] {
        assert_eq!(status_with(&s.base, &old).await.0, 200);
    }
    let bound = Duration::from_millis(1_500);

    // Rotation with a grace: the old token works until the grace ends
    // (the stores' clocks are moved, not waited for), then stops.
    let new = a
        .store
        .rotate_token(&t, Duration::from_secs(600))
        .await
        .unwrap();
    let new = new.expose().to_owned();
    for s in [&a, &b] {
        assert_eq!(status_with(&s.base, &old).await.0, 200, "within the grace");
        assert_eq!(status_with(&s.base, &new).await.0, 200);
    }
    a.clock.advance(Duration::from_secs(601));
    b.clock.advance(Duration::from_secs(601));
    for s in [&a, &b] {
        until_status(&s.base, &old, 401, bound).await;
        assert_eq!(status_with(&s.base, &new).await.0, 200);
    }

    // Disabled: every token of the tenant gets 401 saying so; enabled again,
    // the live one works.
    a.store.set_tenant_disabled(&t, true).await.unwrap();
    for s in [&a, &b] {
        until_status(&s.base, &new, 401, bound).await;
        let (_, p) = status_with(&s.base, &new).await;
        assert_eq!(p["type"], "urn:idem:problem:tenant-disabled", "{p}");
    }
    a.store.set_tenant_disabled(&t, false).await.unwrap();
    for s in [&a, &b] {
        until_status(&s.base, &new, 200, bound).await;
    }

    // Rotation without grace: at once (within the cache's second).
    let newer = a.store.rotate_token(&t, Duration::ZERO).await.unwrap();
    for s in [&a, &b] {
        until_status(&s.base, &new, 401, bound).await;
        assert_eq!(status_with(&s.base, newer.expose()).await.0, 200);
    }

    // A token deleted by hand stops working within the same bound.
    db.execute("delete from api_tokens").await;
    for s in [&a, &b] {
        until_status(&s.base, newer.expose(), 401, bound).await;
    }
}

fn set_cookie(res: &reqwest::Response) -> String {
    res.headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

/// The monitor's cookie is a session id (only its hash stored), never the
/// token; logout ends it for every copy; rotating the token ends it; the
/// cookie is Secure when the visitor came over https; refused sign-ins
/// are limited per address.
async fn login_keeps_a_session_never_the_token(db: &Db) {
    let s = serve(db, |c| c.admin_token = AdminToken::new(ADMIN)).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let login = |tok: &str, proto: Option<&str>| {
        let mut r = c
            .post(format!("{}/live/login", s.base))
            .form(&[("token", tok), ("lang", "en-US")]);
        if let Some(p) = proto {
            r = r.header("x-forwarded-proto", p);
        }
        r.send()
    };
    let res = login(&token, None).await.unwrap();
    assert_eq!(res.status().as_u16(), 303);
    let sc = set_cookie(&res);
    assert!(sc.starts_with("idem_live="), "{sc}");
    assert!(
        !sc.contains(&token) && !sc.contains(&token[token.len() - 64..]),
        "the token is not in the cookie: {sc}"
    );
    assert!(
        sc.contains("HttpOnly") && sc.contains("SameSite=Strict"),
        "{sc}"
    );
    assert!(!sc.contains("Secure"), "plain http: {sc}");
    let cookie = cookie_pair(&sc);
    let data = |cookie: String| {
        c.get(format!("{}/live/data.json", s.base))
            .header("cookie", cookie)
            .send()
    };
    assert_eq!(data(cookie.clone()).await.unwrap().status().as_u16(), 200);
    // Only the session id's hash is stored.
    let id = cookie.trim_start_matches("idem_live=").to_owned();
    let stored = s.texts("select session_hash from live_sessions").await;
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(id.as_bytes()));
    assert!(stored.contains(&digest), "{stored:?}");
    assert!(!stored.iter().any(|h| h == &id));

    // Over https (a proxy says so) the cookie is Secure.
    let sc2 = set_cookie(&login(&token, Some("https")).await.unwrap());
    assert!(sc2.contains("Secure"), "{sc2}");

    // Logout ends the session in the database: the copied cookie is dead.
    let page = c
        .get(format!("{}/live?lang=en-US", s.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("a signed-in page has a sign-out form with its form token"))
        .to_owned();
    let forged = c
        .post(format!("{}/live/logout", s.base))
        .header("cookie", &cookie)
        .form(&[("csrf", "0".repeat(32))])
        .send()
        .await
        .unwrap();
    assert_eq!(
        forged.status().as_u16(),
        403,
        "a wrong form token is refused"
    );
    assert_eq!(data(cookie.clone()).await.unwrap().status().as_u16(), 200);
    let out = c
        .post(format!("{}/live/logout", s.base))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status().as_u16(), 303);
    assert!(set_cookie(&out).contains("Max-Age=0"));
    assert_eq!(data(cookie).await.unwrap().status().as_u16(), 401);

    // A session lives only while its token does.
    let sc = set_cookie(&login(&token, None).await.unwrap());
    let cookie = cookie_pair(&sc);
    assert_eq!(data(cookie.clone()).await.unwrap().status().as_u16(), 200);
    s.store
        .rotate_token(&TenantId::try_from("acme").unwrap(), Duration::ZERO)
        .await
        .unwrap();
    let t = Instant::now();
    while data(cookie.clone()).await.unwrap().status().as_u16() != 401 {
        assert!(
            t.elapsed() < Duration::from_millis(1_500),
            "the session outlived its token"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The admin's session; then a login from another site is refused.
    let sc = set_cookie(&login(ADMIN, None).await.unwrap());
    assert!(!sc.contains(ADMIN));
    assert_eq!(data(cookie_pair(&sc)).await.unwrap().status().as_u16(), 200);
    let cross = c
        .post(format!("{}/live/login", s.base))
        .header("origin", "https://evil.example")
        .form(&[("token", ADMIN)])
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    assert_eq!(set_cookie(&cross), "");

    // Ten refused sign-ins, then 429 with Retry-After, even for the right
    // token (the address is what is limited).
    for _ in 0..idem_server::http::live::state::LOGIN_FAILURES {
        let r = login("idem_wrong", None).await.unwrap();
        assert_eq!(r.status().as_u16(), 303);
        assert!(r.headers()["location"]
            .to_str()
            .unwrap()
            .contains("login=failed"));
    }
    let limited = login(ADMIN, None).await.unwrap();
    assert_eq!(limited.status().as_u16(), 429);
    let wait: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&wait), "{wait}");
    let _ = s.clock;
}

/// An uncertain action whose reference, customer and tenant start like
/// formulas, exported and read back as a spreadsheet reads CSV: every such
/// cell is text (a leading `'`), and the amount is still a number.
async fn the_uncertain_csv_reads_as_data_in_a_spreadsheet(db: &Db) {
    let s = serve(db, |_| {}).await;
    let token = tenant(&s.store, "+acme").await;
    let c = http();
    let res = c
        .post(format!("{}/v1/intents", s.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": "@SUM(A1:A9)", "valor": "6577.89",
            "chave_pix_destino": "+55 11 98888-7777",
            "referencia_intencao": "=HYPERLINK(\"http://evil.example\",\"x\")",
        }}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let key = res.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = c
        .post(format!("{}/v1/actions/{key}/begin", s.base))
        .bearer_auth(&token)
        .json(&json!({ "action": "pix.cobranca", "lease_ms": 200 }))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    s.clock.advance(Duration::from_millis(300));
    for (lang, delim) in [("pt-BR", b';'), ("en-US", b',')] {
        let body = c
            .get(format!("{}/live/uncertain.csv?lang={lang}", s.base))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        let mut r = csv::ReaderBuilder::new()
            .delimiter(delim)
            .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
        let head = r.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1, "{text}");
        let get = |k: &str| {
            rows[0]
                .get(head.iter().position(|h| h == k).unwrap())
                .unwrap()
                .to_owned()
        };
        // A spreadsheet evaluates a cell that starts with = + - @ tab CR.
        for (i, cell) in rows[0].iter().enumerate() {
            let first = cell.chars().next();
            let number = cell
                .trim_start_matches('-')
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == ',');
            assert!(
                !matches!(first, Some('=' | '+' | '-' | '@' | '\t' | '\r')) || number,
                "column {} would run as a formula: {cell:?}",
                &head[i]
            );
        }
        assert_eq!(
            get("reference"),
            "'=HYPERLINK(\"http://evil.example\",\"x\")"
        );
        assert_eq!(get("customer"), "'@SUM(A1:A9)");
        assert_eq!(get("tenant"), "'+acme");
        // A number stays a number, in the form the dialect's sheet reads.
        let amount = if lang == "pt-BR" {
            "6577,89"
        } else {
            "6577.89"
        };
        assert_eq!(get("amount"), amount, "the number stays a number");
    }
}

/// The reconcile form's checkbox posts `retryable=false` from a script:
/// that is stored false, and a value that is neither
/// is refused, not read as a yes.
async fn the_reconcile_form_stores_retryable_false_as_false(db: &Db) {
    let s = serve(db, |_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let mut keys = Vec::new();
    for r in ["R-1", "R-2"] {
        let res = c
            .post(format!("{}/v1/intents", s.base))
            .bearer_auth(&token)
            .json(&json!({ "action": "pix.cobranca", "payload": {
                "cliente_id": "c", "valor": "1.00",
                "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": r,
            }}))
            .send()
            .await
            .unwrap();
        let key = res.json::<Value>().await.unwrap()["key"]
            .as_str()
            .unwrap()
            .to_owned();
        let begun: Value = c
            .post(format!("{}/v1/actions/{key}/begin", s.base))
            .bearer_auth(&token)
            .json(&json!({ "action": "pix.cobranca", "lease_ms": 200 }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        keys.push((key, begun["token"].as_i64().unwrap()));
    }
    s.clock.advance(Duration::from_millis(300));
    let post = |key: &str, token: i64, retryable: &str| {
        c.post(format!("{}/live/actions/{key}/reconcile", s.base))
            .form(&[
                ("token", token.to_string().as_str()),
                ("outcome", "failed"),
                ("error", "declined"),
                ("retryable", retryable),
                ("tenant", "acme"),
            ])
            .send()
    };
    let (k, t) = &keys[0];
    // A browser that carries the visit's cookie must send its form token.
    let forged = c
        .post(format!("{}/live/actions/{k}/reconcile", s.base))
        .header("cookie", format!("idem_form={}", "ab".repeat(16)))
        .form(&[
            ("token", t.to_string().as_str()),
            ("outcome", "failed"),
            ("error", "x"),
            ("tenant", "acme"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 403);
    let res = post(k, *t, "maybe").await.unwrap();
    assert!(res.headers()["location"]
        .to_str()
        .unwrap()
        .contains("error=retryable"));
    let res = post(k, *t, "false").await.unwrap();
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("done=reconciled"),
        "{:?}",
        res.headers()
    );
    let a = common::get_json(
        c.get(format!("{}/v1/actions/{k}", s.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(a["state"], "failed", "{a}");
    assert_eq!(a["retryable"], false, "{a}");
    let (k, t) = &keys[1];
    post(k, *t, "true").await.unwrap();
    let a = common::get_json(
        c.get(format!("{}/v1/actions/{k}", s.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(a["retryable"], true, "{a}");
}

// ---- No database involved beyond the default SQLite ----

async fn sqlite_srv(f: impl FnOnce(&mut Config)) -> (Srv, Db) {
    let db = Db::sqlite();
    let s = serve(&db, f).await;
    (s, db)
}

/// DNS rebinding: a page on evil.example re-points its name at 127.0.0.1
/// and reads the open monitor with the visitor's browser. The browser
/// sends `Host: evil.example`: refused with 421 and a sentence, on every
/// route but the probes; `--allowed-host` adds names. A request a proxy
/// forwarded is no loopback visitor: the open monitor refuses it (403).
#[tokio::test]
async fn an_open_monitor_answers_loopback_names_only() {
    let (s, _db) = sqlite_srv(|_| {}).await;
    let c = http();
    for path in [
        "/live",
        "/live/data.json",
        "/live/uncertain.csv",
        "/",
        "/v1/stats",
    ] {
        let res = c
            .get(format!("{}{path}", s.base))
            .header("host", "evil.example:3000")
            .send()
            .await
            .unwrap();
        let (status, p) = problem(res).await;
        assert_eq!(status, 421, "{path}");
        assert!(
            p["detail"].as_str().unwrap().contains("evil.example"),
            "{p}"
        );
    }
    for host in ["localhost:1", "127.0.0.1", "[::1]:80"] {
        let res = c
            .get(format!("{}/live/data.json", s.base))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{host}");
    }
    let res = c
        .get(format!("{}/healthz", s.base))
        .header("host", "10.0.0.7")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "probes answer by address");
    for h in ["x-forwarded-for", "forwarded"] {
        let res = c
            .get(format!("{}/live/data.json", s.base))
            .header(h, "for=203.0.113.9")
            .send()
            .await
            .unwrap();
        let (status, p) = problem(res).await;
        assert_eq!(status, 403, "{h}");
        assert!(p["detail"].as_str().unwrap().contains("admin token"), "{p}");
    }
    let (s, _db) = sqlite_srv(|c| c.allowed_hosts = vec!["idem.example.com".into()]).await;
    let res = c
        .get(format!("{}/live/data.json", s.base))
        .header("host", "IDEM.example.com:8443")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let res = c
        .get(format!("{}/", s.base))
        .header("host", "other.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 421);
}

/// Every page sends a Content-Security-Policy whose nonce is the one its
/// inline scripts carry, no framing, nosniff and same-origin referrers.
#[tokio::test]
async fn pages_carry_a_content_security_policy_with_their_nonce() {
    let (s, _db) = sqlite_srv(|_| {}).await;
    for path in ["/", "/live", "/prices", "/compare", "/?n=1"] {
        let res = reqwest::get(format!("{}{path}", s.base)).await.unwrap();
        let h = res.headers().clone();
        let csp = h["content-security-policy"].to_str().unwrap().to_owned();
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["referrer-policy"], "same-origin");
        assert_eq!(h["x-frame-options"], "DENY");
        let html = res.text().await.unwrap();
        let nonce = csp
            .split("'nonce-")
            .nth(1)
            .and_then(|r| r.split('\'').next())
            .unwrap()
            .to_owned();
        // Every inline script carries the nonce; scripts from files do not
        // need it.
        for tag in html.split("<script").skip(1) {
            let open = tag.split('>').next().unwrap();
            if !open.contains("src=") {
                assert!(
                    open.contains(&format!("nonce=\"{nonce}\"")),
                    "{path}: <script{open}>"
                );
            }
        }
    }
    let a = reqwest::get(format!("{}/", s.base)).await.unwrap();
    let b = reqwest::get(format!("{}/", s.base)).await.unwrap();
    assert_ne!(
        a.headers()["content-security-policy"],
        b.headers()["content-security-policy"],
        "a fresh nonce per response"
    );
}

/// Forms posted from another site are refused (403) and write nothing:
/// the save forms, the login, the reconcile form.
#[tokio::test]
async fn forms_from_another_site_are_refused() {
    let (s, _db) = sqlite_srv(|_| {}).await;
    let c = http();
    for (path, form) in [
        ("/s", vec![("q", "n=30000"), ("name", "x")]),
        ("/c", vec![("s", "/?n=1"), ("s", "/?n=2")]),
        ("/live/login", vec![("token", "t")]),
        ("/live/logout", vec![]),
    ] {
        for (h, v) in [
            ("origin", "https://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ] {
            let res = c
                .post(format!("{}{path}", s.base))
                .header(h, v)
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status().as_u16(), 403, "{path} {h}");
        }
    }
    let res = c
        .post(format!("{}/s", s.base))
        .header("origin", s.base.as_str())
        .header("sec-fetch-site", "same-origin")
        .form(&[("q", "n=30000"), ("name", "ok")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status().as_u16(),
        303,
        "the site's own form still saves"
    );
}

/// `POST /s` and `POST /c` without a token: per address, then per day; a
/// saved link stays.
#[tokio::test]
async fn anonymous_saves_are_bounded_per_address_and_per_day() {
    let (s, _db) = sqlite_srv(|c| {
        c.saves_per_address = 3;
        c.saves_per_day = 1_000;
    })
    .await;
    let c = http();
    let save = |i: usize| {
        c.post(format!("{}/s", s.base))
            .form(&[("q", format!("n={}", 1000 + i)), ("name", format!("s{i}"))])
            .send()
    };
    let mut links = Vec::new();
    for i in 0..3 {
        let r = save(i).await.unwrap();
        assert_eq!(r.status().as_u16(), 303);
        links.push(r.headers()["location"].to_str().unwrap().to_owned());
    }
    let r = save(9).await.unwrap();
    let (status, p) = {
        let wait: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=600).contains(&wait), "{wait}");
        problem(r).await
    };
    assert_eq!(status, 429, "{p}");
    let r = c
        .post(format!("{}/c", s.base))
        .form(&[("s", "/?n=1"), ("s", "/?n=2")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429, "comparisons share the bound");
    for l in links {
        let r = reqwest::get(format!("{}{l}", s.base)).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{l} still there");
    }
    let (s, _db) = sqlite_srv(|c| {
        c.saves_per_address = 0;
        c.saves_per_day = 2;
    })
    .await;
    for i in 0..2 {
        let r = c
            .post(format!("{}/s", s.base))
            .form(&[("q", format!("n={}", 1000 + i))])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 303);
    }
    let r = c
        .post(format!("{}/s", s.base))
        .form(&[("q", "n=5000")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().contains_key("retry-after"));
}

/// A client that sends its headers a byte at a time, or stops sending a
/// body, or keeps an idle connection, loses the socket at the timeouts.
#[tokio::test]
async fn slow_clients_lose_their_sockets_at_the_timeouts() {
    use std::io::Write;
    let (s, _db) = sqlite_srv(|c| {
        c.limits.header_timeout = Duration::from_millis(800);
        c.limits.idle_timeout = Duration::from_millis(1_500);
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let a = addr.clone();
    let slow = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        sock.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .unwrap();
        common::closed_after(sock, Duration::from_millis(800))
    });
    let a = addr.clone();
    let body = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        sock.write_all(b"POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nq=").unwrap();
        common::closed_after(sock, Duration::from_millis(1_500))
    });
    let a = addr.clone();
    let idle = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        sock.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        common::closed_after(sock, Duration::from_millis(800))
    });
    slow.await.unwrap();
    body.await.unwrap();
    idle.await.unwrap();
    assert_eq!(
        reqwest::get(format!("{}/healthz", s.base))
            .await
            .unwrap()
            .status(),
        200
    );
}

/// Every `/v1` error is a problem document, the framework's too: no
/// route, wrong method, body too large or not JSON, too many headers.
#[tokio::test]
async fn every_v1_error_is_a_problem_document() {
    let (s, _db) = sqlite_srv(|_| {}).await;
    let token = tenant(&s.store, "acme").await;
    let c = http();
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (
            c.get(format!("{}/v1/nope", s.base)),
            404,
            "urn:idem:problem:no-route",
        ),
        (
            c.delete(format!("{}/v1/intents", s.base))
                .bearer_auth(&token),
            405,
            "urn:idem:problem:method-not-allowed",
        ),
        (
            c.post(format!("{}/v1/intents", s.base))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(vec![b' '; 70 * 1024]),
            413,
            "urn:idem:problem:body-too-large",
        ),
        (
            c.post(format!("{}/v1/intents", s.base))
                .bearer_auth(&token)
                .header("content-type", "text/plain")
                .body("{}"),
            415,
            "urn:idem:problem:bad-body",
        ),
        (
            (0..80).fold(
                c.get(format!("{}/v1/stats", s.base)).bearer_auth(&token),
                |r, i| r.header(format!("x-h{i}"), "1"),
            ),
            431,
            "urn:idem:problem:headers-too-large",
        ),
        (
            c.get(format!("{}/v1/stats", s.base))
                .header("authorization", format!("Bearer {token}"))
                .header("authorization", "Bearer other"),
            400,
            "urn:idem:problem:bad-request",
        ),
    ];
    for (req, want, kind) in cases {
        let (status, p) = problem(req.send().await.unwrap()).await;
        assert_eq!(status, want, "{p}");
        assert_eq!(p["type"], kind, "{p}");
    }
}

/// `x-request-id`: a client's 1-64 visible characters are echoed; anything
/// else is replaced by a minted id, never echoed.
#[tokio::test]
async fn a_request_id_outside_the_rule_is_replaced() {
    let (s, _db) = sqlite_srv(|_| {}).await;
    let c = http();
    let id_for = |sent: String| {
        let c = c.clone();
        let url = format!("{}/healthz", s.base);
        async move {
            let res = c
                .get(url)
                .header("x-request-id", sent)
                .send()
                .await
                .unwrap();
            let ids: Vec<String> = res
                .headers()
                .get_all("x-request-id")
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect();
            assert_eq!(ids.len(), 1, "{ids:?}");
            ids[0].clone()
        }
    };
    assert_eq!(id_for("trace-1".into()).await, "trace-1");
    assert_eq!(id_for("a".repeat(64)).await, "a".repeat(64));
    for bad in ["a".repeat(65), "has space".into(), "é".into()] {
        let got = id_for(bad.clone()).await;
        assert_ne!(got, bad);
        assert_eq!(got.len(), 16, "a minted id: {got}");
    }
}

/// `/metrics` names every tenant: with an admin token set it needs that
/// token, unless `--metrics-open`.
#[tokio::test]
async fn metrics_need_the_admin_token_when_one_is_set() {
    let (s, _db) = sqlite_srv(|c| c.admin_token = AdminToken::new(ADMIN)).await;
    let c = http();
    let tok = tenant(&s.store, "acme").await;
    for t in [None, Some("wrong"), Some(tok.as_str())] {
        let mut r = c.get(format!("{}/metrics", s.base));
        if let Some(t) = t {
            r = r.bearer_auth(t);
        }
        assert_eq!(r.send().await.unwrap().status().as_u16(), 401, "{t:?}");
    }
    let ok = c
        .get(format!("{}/metrics", s.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let (s, _db) = sqlite_srv(|c| {
        c.admin_token = AdminToken::new(ADMIN);
        c.metrics_open = true;
    })
    .await;
    assert_eq!(
        reqwest::get(format!("{}/metrics", s.base))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let (s, _db) = sqlite_srv(|_| {}).await;
    assert_eq!(
        reqwest::get(format!("{}/metrics", s.base))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200,
        "no admin token: open"
    );
}

/// The relay checks the address again at delivery: an endpoint on
/// 127.0.0.1 (registered with the test flag) is never posted to by a relay
/// without it, and the failure says why.
#[tokio::test]
async fn the_relay_refuses_a_private_address_at_delivery() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let hits = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
        }
    });
    let (s, _db) = sqlite_srv(|c| {
        c.relay = Some(idem_server::config::RelayConfig {
            idle: Duration::from_millis(20),
            allow_private: false,
            ..Default::default()
        });
    })
    .await;
    let t = TenantId::try_from("acme").unwrap();
    let token = tenant(&s.store, "acme").await;
    let mut sess = s.store.session().await.unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://localhost:{port}/hook"),
    ] {
        sess.add_webhook_endpoint(
            &t,
            &idem_store::WebhookEndpoint {
                endpoint_id: format!("ep_{}", hex::encode(rand::random::<[u8; 8]>())),
                url,
                events: "*".into(),
                secret: "c2VjcmV0c2VjcmV0c2VjcmV0".into(),
                created_ms: s.store.now_ms(),
            },
        )
        .await
        .unwrap();
    }
    drop(sess);
    // A charge through the demo provider writes an outbox message.
    assert_eq!(charge(&s.base, &token, "k1").await, 201);
    let t0 = Instant::now();
    loop {
        let m = reqwest::get(format!("{}/metrics", s.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let retrying = m
            .lines()
            .find(|l| l.starts_with("idem_webhook_deliveries{state=\"retrying\"}"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if retrying >= 2.0 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the deliveries never failed: {m}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing reached the private address"
    );
}

/// `idem serve` refuses an admin token shorter than 32 characters, naming
/// the rule; the data directory it creates is private.
#[test]
fn a_short_admin_token_is_refused_and_the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("IDEM_ADMIN_TOKEN", "x")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 32 characters"), "{err}");
    assert!(!err.contains("IDEM_ADMIN_TOKEN=x"));
    // Blank (spaces) is refused too: it would mean an open monitor.
    for blank in ["", "   "] {
        let out = Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .env("IDEM_ADMIN_TOKEN", blank)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{blank:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is blank"), "{err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(["tenant", "create", "acme", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("idem.db")), 0o600);
    for f in std::fs::read_dir(&data).unwrap() {
        let p = f.unwrap().path();
        assert_eq!(mode(&p) & 0o077, 0, "{} is readable by others", p.display());
    }
}

/// Bodies of any shape, depth and validity, up to the 64 KiB limit.
fn hostile_body() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just("null".to_owned()),
        "-?[0-9]{1,40}(\\.[0-9]{0,40})?([eE][-+]?[0-9]{1,8})?",
        "\"([^\"\\\\]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[\\[\\]{}])*\"",
    ];
    let json = leaf.prop_recursive(48, 512, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..6).prop_map(|v| {
                let members: Vec<String> = v.iter().map(|(k, x)| format!("\"{k}\":{x}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    });
    prop_oneof![
        json,
        (1usize..32_000, any::<bool>()).prop_map(|(n, obj)| {
            let (o, c) = if obj { ("{\"a\":", "}") } else { ("[", "]") };
            format!("{}1{}", o.repeat(n), c.repeat(n))
        }),
        "[\\[\\]{}\",:0-9a-z\\\\ ]{0,300}",
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The Idempotency-Key layer's fingerprint (its canonical JSON walk)
    /// takes any body a client can send, any depth, and returns a digest:
    /// no panic, no stack overflow (which would abort this test process).
    #[test]
    fn the_fingerprint_survives_any_body(body in hostile_body()) {
        let f = idem_api::idempotency::fingerprint("POST", "/v1/demo/charges", body.as_bytes());
        proptest::prop_assert_eq!(f.len(), 64);
    }
}

/// Every JSON and catalog the CLI reads is bounded too: a deep payload on
/// `key derive`, a deep `--batch` line (the other lines still answer), a
/// deep catalog. Each is refused with a message, never a crash.
#[test]
fn the_cli_refuses_deep_input_and_keeps_going() {
    use std::io::Write;
    let run = |args: &[&str], stdin: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_idem"))
            .args(args)
            .env("IDEMPOTENCY_HMAC_KEY", "cli-secret")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    };
    let deep = format!(r#"{{"referencia_intencao": {}}}"#, nested(50_000));
    let out = run(
        &[
            "key",
            "derive",
            "--tenant",
            "acme",
            "--action",
            "pix.cobranca",
        ],
        &deep,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("64 levels"),
        "{out:?}"
    );
    let good = r#"{"tenant":"acme","action":"pix.cobranca","payload":{"cliente_id":"c","valor":"1.00","chave_pix_destino":"a@b.com","referencia_intencao":"R"}}"#;
    let batch = format!(
        "{good}\n{{\"tenant\":\"acme\",\"action\":\"pix.cobranca\",\"payload\":{deep}}}\n{good}\n"
    );
    let out = run(&["key", "derive", "--batch"], &batch);
    assert_eq!(out.status.code(), Some(1), "one line failed");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0].len(), 64);
    assert!(
        lines[1].starts_with("error:") && lines[1].contains("64 levels"),
        "{lines:?}"
    );
    assert_eq!(lines[2], lines[0]);
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("deep.toml");
    std::fs::write(
        &catalog,
        format!("[actions.\"a.b\"]\nx = {}\n", nested(20_000)),
    )
    .unwrap();
    let out = run(
        &[
            "key",
            "derive",
            "--tenant",
            "acme",
            "--action",
            "a.b",
            "--catalog",
            catalog.to_str().unwrap(),
        ],
        "{}",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("catalog rejected"),
        "{out:?}"
    );
}
