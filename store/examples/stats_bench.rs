//! Statistics reads as the intent tables grow, for docs/PERFORMANCE.md.
//!
//! cargo run --release -p idem-store --example stats_bench -- \
//!     --url postgres://postgres@127.0.0.1/idem_stats_bench --intents 1000000 --reads 400
//!
//! Fills `intents` up to --intents rows (50 tenants, 3 actions, 7 days; SQL
//! `generate_series`, so filling is fast and repeatable) plus the rollup rows
//! those intents would have produced, then times `Store::stats` for random
//! tenants: the last 24 h by hour and the last hour by minute. Prints
//! p50/p95/max in ms. Re-running with a larger --intents adds rows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use idem_core::TenantId;
use idem_store::stats::Granularity;
use idem_store::{Options, Store};
use std::time::Instant;

const TENANTS: i64 = 50;
const NOW: i64 = 1_790_000_000_000;
const DAY: i64 = 86_400_000;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = arg(&args, "--url").expect("--url postgres://...");
    let target: i64 = arg(&args, "--intents").map_or(1_000_000, |v| v.parse().unwrap());
    let reads: usize = arg(&args, "--reads").map_or(400, |v| v.parse().unwrap());
    let mut options = Options::admin();
    options.clock = std::sync::Arc::new(idem_store::ManualClock::new(NOW));
    let store = Store::connect(&url, options).await.unwrap();
    store.migrate().await.unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    fill(&pool, target).await;
    let mut by_hour = Vec::new();
    let mut by_minute = Vec::new();
    for i in 0..reads {
        let tenant = TenantId::try_from(format!("tenant-{}", (i as i64 * 7) % TENANTS)).unwrap();
        let t = Instant::now();
        let r = store
            .stats(&tenant, Granularity::Hour, NOW - DAY, NOW)
            .await
            .unwrap();
        by_hour.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(!r.buckets.is_empty());
        let t = Instant::now();
        let r = store
            .stats(&tenant, Granularity::Minute, NOW - 3_600_000, NOW)
            .await
            .unwrap();
        by_minute.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(!r.buckets.is_empty());
    }
    let count: i64 = sqlx::query_scalar("select count(*) from intents")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!(
        "{{\"intents\":{count},\"reads\":{reads},\"hour_24h\":{},\"minute_60m\":{}}}",
        summary(&mut by_hour),
        summary(&mut by_minute)
    );
}

fn summary(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let p = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "{{\"p50_ms\":{:.2},\"p95_ms\":{:.2},\"max_ms\":{:.2}}}",
        p(0.5),
        p(0.95),
        v[v.len() - 1]
    )
}

async fn fill(pool: &sqlx::PgPool, target: i64) {
    let have: i64 = sqlx::query_scalar("select count(*) from intents")
        .fetch_one(pool)
        .await
        .unwrap();
    let mut from = have;
    while from < target {
        let to = (from + 1_000_000).min(target);
        let t = Instant::now();
        // Spread over 7 days; every 33rd intent redelivered once.
        sqlx::query(
            "insert into intents (tenant_id, reference, action, rules_version, idem_key, payload,
                deliveries, divergences, first_seen_ms, last_seen_ms)
             select 'tenant-' || (g % $3), 'ref-' || g,
                (array['pix.cobranca', 'email.cobranca', 'pix.estorno'])[1 + g % 3], 1,
                md5(g::text) || md5((g + 1)::text),
                '{\"valor\":\"18000\",\"referencia_intencao\":\"ref-' || g || '\"}',
                1 + (g % 33 = 0)::int, 0, $4 - (g * 7919) % (7 * $5), $4 - (g * 7919) % (7 * $5)
             from generate_series($1::bigint, $2::bigint - 1) g
             on conflict do nothing",
        )
        .bind(from)
        .bind(to)
        .bind(TENANTS)
        .bind(NOW)
        .bind(DAY)
        .execute(pool)
        .await
        .unwrap();
        eprintln!(
            "filled intents {from}..{to} in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        from = to;
    }
    sqlx::query("analyze intents").execute(pool).await.unwrap();
    // The rollups those intents would have produced, scaled to the table.
    let per_minute = (target / (TENANTS * 3 * 7 * 1440)).max(1);
    sqlx::query("delete from stats_rollup")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("delete from stats_delay")
        .execute(pool)
        .await
        .unwrap();
    for (g, width, buckets) in [
        ("minute", 60_000i64, 2 * 1440i64),
        ("hour", 3_600_000, 7 * 24),
        ("day", DAY, 7),
    ] {
        let n = per_minute * width / 60_000;
        sqlx::query(
            "insert into stats_rollup (tenant_id, granularity, bucket_start_ms, action, intents,
                deliveries, redeliveries, redelivered_intents, divergences, actions_started,
                actions_completed, delay_max_ms)
             select 'tenant-' || t, $1, $2 - $2 % $3 - b * $3, a, $5, $5 + $5 / 33, $5 / 33,
                $5 / 33, 0, $5, $5, 90000
             from generate_series(0, $6 - 1) t, generate_series(0, $4 - 1) b,
                unnest(array['pix.cobranca', 'email.cobranca', 'pix.estorno']) a",
        )
        .bind(g)
        .bind(NOW)
        .bind(width)
        .bind(buckets)
        .bind(n)
        .bind(TENANTS)
        .execute(pool)
        .await
        .unwrap();
        sqlx::query(
            "insert into stats_delay (tenant_id, granularity, bucket_start_ms, action, le_ms, count)
             select tenant_id, granularity, bucket_start_ms, action, le, redeliveries / 3 + 1
             from stats_rollup, unnest(array[1000, 30000, 120000]::bigint[]) le
             where granularity = $1",
        )
        .bind(g)
        .execute(pool)
        .await
        .unwrap();
    }
    sqlx::query("analyze stats_rollup")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("analyze stats_delay")
        .execute(pool)
        .await
        .unwrap();
}
