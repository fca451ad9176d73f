//! What one statement and one commit cost through sqlx on this machine, the
//! floor under every store operation (docs/PERFORMANCE.md, "One guarded
//! effect"). On the store's own settings (SQLite: WAL, synchronous=normal;
//! PostgreSQL: the server's defaults), one connection, p50 and p99 of:
//!
//! - `select`: `select 1` (a round trip and nothing else);
//! - `insert`: one autocommit insert (a write and its commit);
//! - `tx2`: a transaction of two inserts (`begin`, two statements, `commit`):
//!   the shape of a record and claim written together.
//!
//! ```sh
//! cargo run --release -p idem-store --example hop_bench -- --url sqlite:///tmp/hop.db [--n 5000]
//! cargo run --release -p idem-store --example hop_bench -- --url postgres://postgres@127.0.0.1/idem_hop
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use sqlx::{Connection, Executor};
use std::str::FromStr;
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn report(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6;
    println!(
        "{name:<8} p50_us {:>8.1}  p99_us {:>8.1}",
        at(0.5),
        at(0.99)
    );
}

macro_rules! run {
    ($conn:expr, $n:expr, $begin:expr) => {{
        let c = $conn;
        c.execute("create table if not exists hop (id integer primary key, v text not null)")
            .await
            .unwrap();
        c.execute("delete from hop").await.unwrap();
        let (mut sel, mut ins, mut tx2) = (Vec::new(), Vec::new(), Vec::new());
        let mut id = 0i64;
        // Warm the statement cache first; then interleave the three kinds.
        for round in 0..($n + 200) {
            let t = Instant::now();
            sqlx::query("select 1").execute(&mut *c).await.unwrap();
            let s = t.elapsed();
            id += 1;
            let t = Instant::now();
            sqlx::query("insert into hop (id, v) values ($1, 'x')")
                .bind(id)
                .execute(&mut *c)
                .await
                .unwrap();
            let i = t.elapsed();
            let t = Instant::now();
            let mut tx = c.begin_with($begin).await.unwrap();
            for _ in 0..2 {
                id += 1;
                sqlx::query("insert into hop (id, v) values ($1, 'x')")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
            tx.commit().await.unwrap();
            let x = t.elapsed();
            if round >= 200 {
                sel.push(s);
                ins.push(i);
                tx2.push(x);
            }
        }
        report("select", sel);
        report("insert", ins);
        report("tx2", tx2);
        c.execute("drop table hop").await.unwrap();
    }};
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = arg(&args, "--url").expect("--url sqlite://… or postgres://…");
    let n: usize = arg(&args, "--n").map_or(5000, |v| v.parse().unwrap());
    if url.starts_with("sqlite:") {
        let opts = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
            .unwrap()
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .synchronous(sqlx::sqlite::SqliteSynchronous::Normal);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        println!("sqlite (WAL, synchronous=normal), one connection, {n} rounds");
        run!(&mut c, n, "begin immediate");
    } else {
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        println!("postgres, one connection, {n} rounds");
        run!(&mut c, n, "begin");
    }
}
