//! One guarded effect's latency against the round-trip floor, for
//! docs/PERFORMANCE.md (`bench/effect.sh` starts the servers).
//!
//! Per round, on one keep-alive connection per server, interleaved so the
//! machine's drift hits every kind alike:
//!
//! - `floor`: two `GET /healthz` round trips (what two requests cost with no
//!   work behind them);
//! - `effect`: the worker's two calls, `POST /v1/intents` with `claim`, then
//!   `complete`, around an effect that does nothing;
//! - `separate`: the three calls a worker made before the combined call
//!   (record, `begin`, `complete`);
//! - `bare` (with `--store URL`): the whole effect's floor, measured rather
//!   than added up: the two `/healthz` round trips, then what the effect's
//!   storage costs at its least through sqlx on the same database engine
//!   and settings (a transaction of two inserts, the record and the claim,
//!   then one autocommit insert, the outcome) on the bench's own connection.
//!
//! Each `--target NAME=URL=TOKEN` is one server (say the build before and
//! the build after); they alternate which goes first each round. Prints
//! p50 and p99 per target and kind, each p50 over its target's floor, and,
//! with `--store`, each p50 over `bare`.
//!
//! ```sh
//! effect_bench --n 2000 [--store sqlite:///tmp/bare.db|postgres://…/db] \
//!   --target a=http://127.0.0.1:8081=TOKEN --target b=...
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use sqlx::{Connection, Executor};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The bench's own connection for `bare`: the store's settings, one
/// connection, a scratch table.
enum Bare {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

macro_rules! bare_storage {
    ($c:expr, $begin:expr, $id:expr) => {{
        let c = $c;
        let mut tx = c.begin_with($begin).await.unwrap();
        for _ in 0..2 {
            *$id += 1;
            sqlx::query("insert into bare (id, v) values ($1, 'x')")
                .bind(*$id)
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        *$id += 1;
        sqlx::query("insert into bare (id, v) values ($1, 'x')")
            .bind(*$id)
            .execute(&mut *c)
            .await
            .unwrap();
    }};
}

impl Bare {
    async fn open(url: &str) -> Bare {
        let create = "create table if not exists bare (id bigint primary key, v text not null)";
        if url.starts_with("sqlite:") {
            // The store's own settings (store/src/sqlite): WAL, synchronous=normal.
            let opts = sqlx::sqlite::SqliteConnectOptions::from_str(url)
                .unwrap()
                .create_if_missing(true)
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sqlx::sqlite::SqliteSynchronous::Normal);
            let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
            c.execute(create).await.unwrap();
            c.execute("delete from bare").await.unwrap();
            Bare::Sqlite(c)
        } else {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            c.execute(create).await.unwrap();
            c.execute("delete from bare").await.unwrap();
            Bare::Postgres(c)
        }
    }

    async fn storage(&mut self, id: &mut i64) {
        match self {
            Bare::Sqlite(c) => bare_storage!(c, "begin immediate", id),
            Bare::Postgres(c) => bare_storage!(c, "begin", id),
        }
    }
}

struct Target {
    name: String,
    base: String,
    token: String,
    client: reqwest::Client,
    times: [Vec<Duration>; 4],
}

const KINDS: [&str; 4] = ["floor", "effect", "separate", "bare"];

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

async fn post(t: &Target, path: &str, body: String) -> serde_json::Value {
    let r = t
        .client
        .post(format!("{}{path}", t.base))
        .bearer_auth(&t.token)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the server answers");
    let status = r.status();
    let v: serde_json::Value = r.json().await.expect("a JSON answer");
    assert!(status.is_success(), "{path}: {status} {v}");
    v
}

fn candidate(reference: &str, claim: bool) -> String {
    let claim = if claim {
        r#","claim":{"lease_ms":30000}"#
    } else {
        ""
    };
    format!(
        r#"{{"action":"pix.cobranca","payload":{{"cliente_id":"c-1","valor":"180.00","chave_pix_destino":"fulano@example.com","referencia_intencao":"{reference}"}}{claim}}}"#
    )
}

async fn complete(t: &Target, key: &str, token: i64) {
    post(
        t,
        &format!("/v1/actions/{key}/complete"),
        format!(r#"{{"token":{token},"response":{{"charge_id":"ch_1"}}}}"#),
    )
    .await;
}

async fn healthz_twice(t: &Target) {
    for _ in 0..2 {
        let r = t
            .client
            .get(format!("{}/healthz", t.base))
            .send()
            .await
            .expect("the server answers");
        assert!(r.status().is_success());
        r.bytes().await.expect("a body");
    }
}

async fn one(t: &Target, kind: usize, reference: &str, bare: &mut Option<(Bare, i64)>) -> Duration {
    let start = Instant::now();
    match kind {
        0 => healthz_twice(t).await,
        3 => {
            let (conn, id) = bare.as_mut().expect("bare runs only with --store");
            healthz_twice(t).await;
            conn.storage(id).await;
        }
        1 => {
            let v = post(t, "/v1/intents", candidate(reference, true)).await;
            assert_eq!(v["claim"]["status"], "claimed", "{v}");
            let key = v["key"].as_str().unwrap();
            complete(t, key, v["claim"]["token"].as_i64().unwrap()).await;
        }
        _ => {
            let v = post(t, "/v1/intents", candidate(reference, false)).await;
            let key = v["key"].as_str().unwrap().to_owned();
            let b = post(
                t,
                &format!("/v1/actions/{key}/begin"),
                r#"{"action":"pix.cobranca","lease_ms":30000}"#.into(),
            )
            .await;
            assert_eq!(b["status"], "claimed", "{b}");
            complete(t, &key, b["token"].as_i64().unwrap()).await;
        }
    }
    start.elapsed()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut n = 1000usize;
    let mut targets = Vec::new();
    let mut store: Option<String> = None;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--n" => n = args[i + 1].parse().expect("--n N"),
            "--store" => store = Some(args[i + 1].clone()),
            "--target" => {
                let mut parts = args[i + 1].splitn(3, '=');
                let (name, base, token) = (
                    parts.next().unwrap().to_owned(),
                    parts.next().expect("NAME=URL=TOKEN").to_owned(),
                    parts.next().expect("NAME=URL=TOKEN").to_owned(),
                );
                let client = reqwest::Client::builder()
                    .pool_max_idle_per_host(1)
                    .no_proxy()
                    .build()
                    .unwrap();
                targets.push(Target {
                    name,
                    base,
                    token,
                    client,
                    times: Default::default(),
                });
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    assert!(!targets.is_empty(), "at least one --target");
    let run = std::process::id();
    let mut bare = match &store {
        Some(url) => Some((Bare::open(url).await, 0i64)),
        None => None,
    };
    let kinds = if bare.is_some() { 4 } else { 3 };
    // Warm each connection and each server's caches before counting.
    for t in &targets {
        for k in 0..kinds {
            for w in 0..50 {
                one(t, k, &format!("warm-{run}-{k}-{w}"), &mut bare).await;
            }
        }
    }
    for round in 0..n {
        let count = targets.len();
        for j in 0..count {
            let t = &mut targets[(round + j) % count];
            for step in 0..kinds {
                // The kinds rotate too, so none always follows another.
                let k = (round + step) % kinds;
                let d = one(t, k, &format!("r-{run}-{round}-{k}"), &mut bare).await;
                t.times[k].push(d);
            }
        }
    }
    println!(
        "{:<8} {:<9} {:>8} {:>8} {:>8} {:>8}",
        "target", "kind", "p50_ms", "p99_ms", "x_floor", "x_bare"
    );
    for t in &mut targets {
        for v in &mut t.times {
            v.sort();
        }
        let floor = percentile(&t.times[0], 0.5);
        let whole = (kinds == 4).then(|| percentile(&t.times[3], 0.5));
        for (k, kind) in KINDS.iter().enumerate().take(kinds) {
            let p50 = percentile(&t.times[k], 0.5);
            let over_bare = whole.map_or_else(|| "-".to_owned(), |w| format!("{:.2}", p50 / w));
            println!(
                "{:<8} {:<9} {:>8.3} {:>8.3} {:>8.2} {:>8}",
                t.name,
                kind,
                p50,
                percentile(&t.times[k], 0.99),
                p50 / floor,
                over_bare
            );
        }
    }
}
