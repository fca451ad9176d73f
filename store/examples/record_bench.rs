//! Throughput of `record_intent` with N concurrent callers, for
//! docs/PERFORMANCE.md. Every call is a new intent (a real first write), as
//! in the pgbench and bare-loop baselines it is compared with.
//!
//! cargo run --release -p idem-store --example record_bench -- \
//!     --url postgres://postgres@127.0.0.1/idem_bench --callers 32 --ops 40000
//!
//! Options: --url URL, --callers N, --ops N (total), --tenant T,
//! --no-coalesce, --no-stats, --redeliver (every call repeats one intent per
//! caller instead of writing new ones), --charges (instead of intents, what
//! the Idempotency-Key layer does for one guarded demo charge, called
//! directly: `http_begin`, then one transaction holding the ledger row and
//! `http_complete`; the baseline of the HTTP load benchmark).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};
use idem_store::{Options, Store};
use std::sync::Arc;
use std::time::Instant;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = arg(&args, "--url").expect("--url sqlite://... or postgres://...");
    let callers: usize = arg(&args, "--callers").map_or(1, |v| v.parse().unwrap());
    let ops: usize = arg(&args, "--ops").map_or(20_000, |v| v.parse().unwrap());
    let tenant =
        TenantId::try_from(arg(&args, "--tenant").unwrap_or_else(|| "bench".into())).unwrap();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let deriver = KeyDeriver::new(&Secret::new(b"bench-secret".to_vec()).unwrap());
    let mut options = Options::new(Arc::new(Catalog::builtin()), Arc::new(deriver));
    options.coalesce = !flag("--no-coalesce");
    options.stats = !flag("--no-stats");
    // Intents: one pooled connection per caller (the writer has its own).
    // Charges: the server's default pool, as the HTTP run has it: a charge
    // takes two connections in turn, and a pool of one would make each
    // wait for the previous one's return.
    if !flag("--charges") {
        options.max_connections = u32::try_from(callers.max(1)).unwrap();
    }
    let store = Store::connect(&url, options).await.unwrap();
    store.migrate().await.unwrap();
    // A run id keeps references new across runs on the same database.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let redeliver = flag("--redeliver");
    if flag("--raw-sqlx") {
        return raw_sqlx(&url, ops, run).await;
    }
    let charges = flag("--charges");
    let per = ops / callers;
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let store = store.clone();
            let tenant = tenant.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    if charges {
                        guarded_charge(&store, &tenant, &format!("k{run}-{c}-{i}")).await;
                        continue;
                    }
                    let reference = if redeliver {
                        format!("r{run}-{c}")
                    } else {
                        format!("r{run}-{c}-{i}")
                    };
                    let json = format!(
                        r#"{{"cliente_id":"cli-{c}","valor":"180.00","chave_pix_destino":"+55 11 98888-7777","referencia_intencao":"{reference}"}}"#
                    );
                    let p = Payload::from_json(&json).unwrap();
                    store.record_intent(&tenant, "pix.cobranca", &p).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let done = per * callers;
    store.close().await;
    println!(
        "{{\"backend\":\"{:?}\",\"callers\":{callers},\"ops\":{done},\"seconds\":{secs:.3},\"ops_per_s\":{:.0}}}",
        store.backend(),
        done as f64 / secs
    );
}

/// One demo charge as the Idempotency-Key layer runs it, without HTTP.
async fn guarded_charge(store: &Store, tenant: &TenantId, key: &str) {
    use idem_store::{DemoCharge, HttpBegin, HttpRequestKey, StoredResponse};
    let body = r#"{"amount_cents":18000,"currency":"BRL","customer":"cliente-42"}"#;
    let fp = format!("{:x}", key.len()); // the layer hashes; the store only compares
    let rk = HttpRequestKey {
        client_key: key,
        fingerprint: &fp,
        method: "POST",
        path: "/v1/demo/charges",
    };
    let begin = store
        .session()
        .await
        .unwrap()
        .http_begin(tenant, &rk, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(begin, HttpBegin::Proceed);
    let mut tx = store.transaction().await.unwrap();
    let charge = DemoCharge {
        id: format!("ch_{key}"),
        amount_cents: 18000,
        currency: "BRL".into(),
        customer: "cliente-42".into(),
        created_ms: store.now_ms(),
    };
    tx.demo_charge(tenant, &charge).await.unwrap();
    let stored = StoredResponse {
        status: 201,
        headers: r#"[["content-type","application/json"]]"#.into(),
        body: body.as_bytes().to_vec(),
    };
    tx.http_complete(tenant, &rk, &stored).await.unwrap();
    tx.commit().await.unwrap();
}

/// The floor: sqlx alone, one connection, the same upsert, no idem code.
async fn raw_sqlx(url: &str, ops: usize, run: u128) {
    use sqlx::Connection;
    let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
    sqlx::query("pragma synchronous=normal")
        .execute(&mut c)
        .await
        .unwrap();
    let key = "6a1f0c1d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29";
    let payload = r#"{"chave_pix_destino":"+5511988887777","cliente_id":"cli-1","referencia_intencao":"x","valor":"18000"}"#;
    let started = Instant::now();
    for n in 0..ops {
        sqlx::query(idem_store::sql::intents::RECORD_INTENT)
            .bind("raw")
            .bind(format!("r{run}-{n}"))
            .bind("pix.cobranca")
            .bind(1i32)
            .bind(key)
            .bind(payload)
            .bind(1i64)
            .bind(1_790_000_000_000i64)
            .fetch_one(&mut c)
            .await
            .unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{{\"raw_sqlx_ops_per_s\":{:.0}}}", ops as f64 / secs);
}
