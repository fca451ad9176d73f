//! The reliability suite: `idem serve` as a real process, several client
//! processes driving intents and guarded charges, and the server killed
//! with SIGKILL at random moments and restarted. At the end the database is
//! read directly and must show that every acknowledged intent holds its
//! first payload, that no charge executed twice, that every action is
//! completed, failed or visibly uncertain, and that the database passes its
//! own integrity check.
//!
//! Then the faults a disk and a database server add: the SQLite volume full
//! under load (a small tmpfs, so the errors are the kernel's own), then
//! read-only, and PostgreSQL restarted under load. Each must give errors,
//! then recovery, never a duplicate.
//!
//! A test binary without the libtest harness (`harness = false`): it runs
//! itself as the client processes (`reliability client …`).
//!
//! `IDEM_RELIABILITY_SECS` (default 12) is the load time of each run,
//! `IDEM_RELIABILITY_KILLS` (default 5) the kills in it, and
//! `IDEM_RELIABILITY_SEED` the seed of every random choice, and
//! `IDEM_RELIABILITY_RUNS` (default `sqlite,disk,postgres,cluster,instances`)
//! the runs. The last two (the failover drills and several instances on a
//! replicated PostgreSQL, in `cluster.rs`) need root and `IDEM_TEST_HA=1`.
//! `IDEM_RELIABILITY_RESTART_POSTGRES=1` (set by `.ci/run`) restarts the
//! PostgreSQL cluster itself under load; without it the suite only ends
//! every connection to the test database.

mod client;
mod cluster;

use anyhow::{anyhow, bail, ensure, Context};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const CLIENTS: u32 = 3;
const TENANTS: [&str; 2] = ["rel-a", "rel-b"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("client") {
        return match client::Args::parse(&args[1..]).and_then(client::run) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("client: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    // cargo and nextest ask a test binary for its list; this one is one test.
    if args.iter().any(|a| a == "--list") {
        println!("reliability: test");
        return ExitCode::SUCCESS;
    }
    // `cargo test NAME` passes NAME on: run only when it names this suite.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "reliability".contains(f.as_str())) {
        return ExitCode::SUCCESS;
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("reliability: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(suite()) {
        Ok(()) => {
            println!("reliability: all runs held");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("reliability: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn env_num(name: &str, default: u64) -> anyhow::Result<u64> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .with_context(|| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}

struct Settings {
    secs: u64,
    kills: u32,
    seed: u64,
}

async fn suite() -> anyhow::Result<()> {
    let s = Settings {
        secs: env_num("IDEM_RELIABILITY_SECS", 12)?,
        kills: u32::try_from(env_num("IDEM_RELIABILITY_KILLS", 5)?)?,
        seed: env_num("IDEM_RELIABILITY_SEED", rand::random::<u16>().into())?,
    };
    println!(
        "reliability: seed {} (IDEM_RELIABILITY_SEED), {} s of load and {} kills per run",
        s.seed, s.secs, s.kills
    );
    let runs = std::env::var("IDEM_RELIABILITY_RUNS")
        .unwrap_or_else(|_| "sqlite,disk,postgres,cluster,instances".into());
    let runs: Vec<&str> = runs.split(',').collect();
    let dir = tempfile::tempdir()?;
    let result = runs_in(&s, &runs, dir.path()).await;
    if result.is_err() {
        // Kept for a post-mortem: the logs, the journals, the databases.
        println!(
            "reliability: the run's files are kept in {}",
            dir.keep().display()
        );
    }
    result
}

/// What each run came to, printed at the end in the test harness's words,
/// so a run that could not run here shows as ignored, never as passed.
#[derive(Default)]
struct Tally(Vec<(&'static str, Option<String>)>);

impl Tally {
    fn ran(&mut self, name: &'static str) {
        self.0.push((name, None));
    }

    fn ignored(&mut self, name: &'static str, why: &str) {
        println!("!! the {name} run is IGNORED: {why}");
        self.0.push((name, Some(why.to_owned())));
    }

    fn print(&self, started: Instant) {
        println!();
        for (name, why) in &self.0 {
            match why {
                None => println!("test reliability::{name} ... ok"),
                Some(why) => println!("test reliability::{name} ... ignored, {why}"),
            }
        }
        let ignored = self.0.iter().filter(|(_, w)| w.is_some()).count();
        println!(
            "\ntest result: ok. {} passed; 0 failed; {ignored} ignored; 0 measured; 0 filtered out; finished in {:.2}s\n",
            self.0.len() - ignored,
            started.elapsed().as_secs_f64()
        );
    }
}

async fn runs_in(s: &Settings, runs: &[&str], dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut tally = Tally::default();
    if runs.contains(&"sqlite") {
        drift_run(Db::sqlite(dir.join("drift"))?).await?;
        relay_run(s, Db::sqlite(dir.join("relay"))?).await?;
        kill_run(s, Db::sqlite(dir.join("kill"))?).await?;
        tally.ran("sqlite");
    }
    if !runs.contains(&"disk") {
    } else if is_root() {
        disk_run(s, dir).await?;
        tally.ran("disk");
    } else {
        tally.ignored(
            "disk",
            "not root: the SQLite disk-full and read-only run mounts a tmpfs",
        );
    }
    match std::env::var("IDEM_TEST_POSTGRES_URL") {
        _ if !runs.contains(&"postgres") => {}
        Ok(url) => {
            let db = Db::postgres(&url, dir.join("pg-drift")).await?;
            let result = drift_run(db.clone()).await;
            db.drop_schema().await;
            result?;
            let db = Db::postgres(&url, dir.join("pg-relay")).await?;
            let result = relay_run(s, db.clone()).await;
            db.drop_schema().await;
            result?;
            let db = Db::postgres(&url, dir.join("pg")).await?;
            let result = kill_run(s, db.clone()).await;
            db.drop_schema().await;
            result?;
            tally.ran("postgres");
        }
        Err(_) => tally.ignored(
            "postgres",
            "IDEM_TEST_POSTGRES_URL is not set (.ci/run sets it)",
        ),
    }
    let parts = cluster::Parts {
        drills: runs.contains(&"cluster"),
        instances: runs.contains(&"instances"),
    };
    if parts.drills || parts.instances {
        cluster::cluster_run(s, dir, parts, &mut tally).await?;
    }
    tally.print(started);
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

/// The database of one run: where `idem serve` keeps its data, and how the
/// checks reach it.
#[derive(Clone)]
struct Db {
    data_dir: PathBuf,
    url: String,
    /// The PostgreSQL admin URL and the run's schema, dropped at the end.
    pg: Option<(String, String)>,
}

impl Db {
    fn sqlite(data_dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&data_dir)?;
        let url = format!("sqlite://{}", data_dir.join("idem.db").display());
        Ok(Self {
            data_dir,
            url,
            pg: None,
        })
    }

    async fn postgres(admin: &str, data_dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&data_dir)?;
        let schema = format!("rel_{}_{}", std::process::id(), rand::random::<u32>());
        let pool = sqlx::PgPool::connect(admin).await?;
        sqlx::query(&format!("create schema {schema}"))
            .execute(&pool)
            .await?;
        // amcheck verifies the B-tree indexes at the end of the run.
        sqlx::query("create extension if not exists amcheck")
            .execute(&pool)
            .await?;
        pool.close().await;
        let sep = if admin.contains('?') { '&' } else { '?' };
        let url = format!("{admin}{sep}options=-c%20search_path%3D{schema}");
        Ok(Self {
            data_dir,
            url,
            pg: Some((admin.to_owned(), schema)),
        })
    }

    fn backend(&self) -> &'static str {
        if self.pg.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
    }

    async fn drop_schema(&self) {
        if let Some((admin, schema)) = &self.pg {
            if let Ok(pool) = sqlx::PgPool::connect(admin).await {
                let _ = sqlx::query(&format!("drop schema {schema} cascade"))
                    .execute(&pool)
                    .await;
                pool.close().await;
            }
        }
    }
}

/// The statistics' drift under SIGKILL: 200 intents, each delivered twice,
/// the server SIGKILLed right after the last answer and restarted. The
/// statistics must then say what the intent tables say: 200 intents, 400
/// deliveries, 100% redelivered (counts committed with their writes; they
/// used to wait in memory for a flush, and a crash lost them for good).
async fn drift_run(db: Db) -> anyhow::Result<()> {
    let token = tenants(&db)?.remove(0);
    let mut server = Server::new(db.clone())?;
    server.start().await?;
    let http = reqwest::Client::new();
    let base = server.base();
    let deliveries: Vec<_> = (0..200)
        .map(|i| {
            let (http, base, token) = (http.clone(), base.clone(), token.clone());
            tokio::spawn(async move {
                let body = serde_json::json!({
                    "action": "pix.cobranca",
                    "payload": {
                        "cliente_id": "cli-1",
                        "valor": "10.00",
                        "chave_pix_destino": "+55 11 98888-7777",
                        "referencia_intencao": format!("DRIFT-{i}"),
                    },
                });
                let mut statuses = Vec::new();
                for _ in 0..2 {
                    let r = http
                        .post(format!("{base}/v1/intents"))
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await?;
                    statuses.push(r.status().as_u16());
                }
                anyhow::Ok(statuses)
            })
        })
        .collect();
    for d in deliveries {
        let statuses = d.await??;
        ensure!(
            statuses == [201, 200],
            "drift: deliveries answered {statuses:?}"
        );
    }
    server.kill9()?;
    server.start().await?;
    let stats: Value = http
        .get(format!("{base}/v1/stats?granularity=day"))
        .bearer_auth(&token)
        .send()
        .await?
        .json()
        .await?;
    let t = &stats["totals"];
    ensure!(
        (
            t["intents"].as_i64(),
            t["deliveries"].as_i64(),
            t["redelivered_intents"].as_i64()
        ) == (Some(200), Some(400), Some(200))
            && stats["duplicate_rate_pct"].as_f64() == Some(100.0),
        "drift ({}): /v1/stats after SIGKILL and restart: {stats}",
        db.backend()
    );
    let live: Value = http
        .get(format!("{base}/live/data.json?window=1h"))
        .bearer_auth(&token)
        .send()
        .await?
        .json()
        .await?;
    let t = &live["totals"];
    ensure!(
        (t["intents"].as_i64(), t["deliveries"].as_i64()) == (Some(200), Some(400))
            && live["duplicate_rate_pct"] == "100",
        "drift ({}): /live/data.json after SIGKILL and restart: {live}",
        db.backend()
    );
    let page = http
        .get(format!("{base}/live?window=1h&lang=pt-BR"))
        .bearer_auth(&token)
        .send()
        .await?
        .text()
        .await?;
    ensure!(
        page.contains("100,00%"),
        "drift ({}): the /live page does not show 100,00%",
        db.backend()
    );
    server.stop()?;
    println!(
        "reliability: drift ({}): 200 intents delivered twice, SIGKILL, restart: 200 / 400 / 100,00%",
        db.backend()
    );
    Ok(())
}

/// What a test receiver saw.
#[derive(Default)]
struct Received {
    /// The signing secret, once `idem webhook add` printed it.
    secret: Vec<u8>,
    /// (webhook-id, type, data) of every verified delivery, duplicates kept.
    got: Vec<(String, String, Value)>,
    bad_signatures: usize,
}

type Seen = std::sync::Arc<std::sync::Mutex<Received>>;

fn seen(s: &Seen) -> std::sync::MutexGuard<'_, Received> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// A Standard Webhooks receiver on 127.0.0.1: verifies each signature with
/// the secret (HMAC-SHA256 of `id.timestamp.body`, computed here, not by
/// idem's code) and keeps every verified delivery.
async fn receiver() -> anyhow::Result<(String, Seen)> {
    let out: Seen = Seen::default();
    let state = out.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    let h = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned()
                    };
                    let (id, ts) = (h("webhook-id"), h("webhook-timestamp"));
                    let mut r = seen(&state);
                    let want = idem_testkit::webhook_signature(&r.secret, &id, &ts, &body);
                    if h("webhook-signature") != want {
                        r.bad_signatures += 1;
                        return axum::http::StatusCode::UNAUTHORIZED;
                    }
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let kind = v["type"].as_str().unwrap_or("").to_owned();
                    r.got.push((id, kind, v["data"].clone()));
                    axum::http::StatusCode::NO_CONTENT
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, out))
}

/// The signing secret of `idem webhook add`'s output (`whsec_<base64>`).
fn whsec(added: &Value) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    let s = added["secret"].as_str().unwrap_or("");
    Ok(base64::engine::general_purpose::STANDARD.decode(
        s.strip_prefix("whsec_")
            .context("the secret starts with whsec_")?,
    )?)
}

/// `idem relay` on the run's database, logging beside the server.
fn spawn_relay(db: &Db) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(db.data_dir.join("relay.log"))?;
    Ok(idem()
        .args([
            "relay",
            // The test receiver listens on 127.0.0.1.
            "--allow-private-webhooks",
            "--relay-lease-ms",
            "1500",
            "--relay-timeout-ms",
            "1000",
            "--relay-retry-base-ms",
            "200",
            "--data-dir",
        ])
        .arg(&db.data_dir)
        .args(["--database-url", &db.url])
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?)
}

/// The relay under SIGKILL: `idem serve --demo --no-relay` takes
/// 500 charges while `idem relay`, beside it, is SIGKILLed three times at
/// random moments and restarted. A receiver verifying every signature must
/// then have every `charge.created` at least once: exactly 500 distinct
/// `webhook-id`s, for 500 distinct charges, as many as the ledger holds.
async fn relay_run(s: &Settings, db: Db) -> anyhow::Result<()> {
    const CHARGES: usize = 500;
    const KILLS: usize = 3;
    let mut rng = StdRng::seed_from_u64(s.seed ^ 0x7e1a);
    let token = tenants(&db)?.remove(0);
    let (url, got) = receiver().await?;
    let added: Value = serde_json::from_str(&cli(
        &db,
        &[
            "webhook",
            "add",
            TENANTS[0],
            &url,
            "--events",
            "charge.created",
            // The test receiver listens on 127.0.0.1.
            "--allow-private-webhooks",
        ],
    )?)?;
    seen(&got).secret = whsec(&added)?;
    let mut server = Server::new(db.clone())?;
    server.extra = vec!["--no-relay"];
    server.start().await?;
    let mut relay = spawn_relay(&db)?;
    let http = reqwest::Client::new();
    let acked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let load: Vec<_> = (0..8)
        .map(|w| {
            let (http, base, token, acked) =
                (http.clone(), server.base(), token.clone(), acked.clone());
            tokio::spawn(async move {
                for i in (w..CHARGES).step_by(8) {
                    let r = http
                        .post(format!("{base}/v1/demo/charges"))
                        .bearer_auth(&token)
                        .header("idempotency-key", format!("relay-run-{i}"))
                        .json(&serde_json::json!({
                            "amount_cents": 1000 + i, "currency": "BRL", "customer": "cli-1"
                        }))
                        .send()
                        .await?;
                    ensure!(r.status() == 201, "charge {i}: {}", r.status());
                    acked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                anyhow::Ok(())
            })
        })
        .collect();
    // Kill points spread over the load, each at a random moment in its slice.
    let mut kills = 0;
    for k in 0..KILLS {
        let at = CHARGES * (k + 1) / (KILLS + 1) + rng.gen_range(0..CHARGES / 10);
        let t = Instant::now();
        while acked.load(std::sync::atomic::Ordering::SeqCst) < at
            && t.elapsed() < Duration::from_secs(60)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        relay.kill()?;
        relay.wait()?;
        kills += 1;
        relay = spawn_relay(&db)?;
    }
    for l in load {
        l.await??;
    }
    let t = Instant::now();
    let distinct = |g: &Received| {
        g.got
            .iter()
            .map(|(id, _, _)| id.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    while distinct(&seen(&got)) < CHARGES && t.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relay.kill()?;
    relay.wait()?;
    let ledger: Value = http
        .get(format!("{}/v1/demo/charges/count", server.base()))
        .bearer_auth(&token)
        .send()
        .await?
        .json()
        .await?;
    server.stop()?;
    let g = seen(&got);
    let ids = distinct(&g);
    let charges: std::collections::BTreeSet<&str> = g
        .got
        .iter()
        .map(|(_, _, data)| data["charge_id"].as_str().unwrap_or(""))
        .collect();
    ensure!(
        g.got.iter().all(|(_, kind, _)| kind == "charge.created"),
        "the relay sent a topic the endpoint did not ask for"
    );
    println!(
        "reliability: relay ({}): {CHARGES} charges, relay SIGKILLed {kills} times: {} deliveries, {ids} distinct webhook-ids, {} redelivered after a kill, {} bad signatures",
        db.backend(),
        g.got.len(),
        g.got.len() - ids,
        g.bad_signatures
    );
    ensure!(
        g.bad_signatures == 0,
        "relay: {} deliveries failed verification",
        g.bad_signatures
    );
    ensure!(
        ids == CHARGES && charges.len() == CHARGES && ledger["count"] == CHARGES,
        "relay ({}): {ids} distinct webhook-ids and {} distinct charges for a ledger of {}; expected {CHARGES}",
        db.backend(),
        charges.len(),
        ledger["count"]
    );
    Ok(())
}

fn idem() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_idem"));
    // Every instance of a deployment shares one secret (on PostgreSQL it
    // is required), as every restart here must derive the same keys.
    c.env_remove("DATABASE_URL")
        .env("RUST_LOG", "warn")
        .env("IDEMPOTENCY_HMAC_KEY", "reliability-suite-secret");
    c
}

/// Runs `idem ARGS` on the run's database; its standard output.
fn cli(db: &Db, args: &[&str]) -> anyhow::Result<String> {
    let out = idem()
        .args(args)
        .arg("--data-dir")
        .arg(&db.data_dir)
        .args(["--database-url", &db.url])
        .output()?;
    ensure!(
        out.status.success(),
        "idem {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// Creates the run's tenants with the CLI; returns their tokens.
fn tenants(db: &Db) -> anyhow::Result<Vec<String>> {
    TENANTS
        .iter()
        .map(|name| Ok(cli(db, &["tenant", "create", name])?.trim().to_owned()))
        .collect()
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `idem serve` as a child process, restartable on the same port.
struct Server {
    db: Db,
    /// `idem serve` options beyond the suite's own.
    extra: Vec<&'static str>,
    addr: String,
    log: PathBuf,
    child: Option<Child>,
    starts: u32,
    kills: u32,
}

impl Server {
    fn new(db: Db) -> anyhow::Result<Self> {
        let log = db.data_dir.join("server.log");
        Ok(Self {
            addr: format!("127.0.0.1:{}", free_port()?),
            extra: Vec::new(),
            db,
            log,
            child: None,
            starts: 0,
            kills: 0,
        })
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn start(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = idem()
            .args([
                "serve",
                "--demo",
                "--addr",
                &self.addr,
                "--purge-every",
                "1s",
                "--data-dir",
            ])
            .arg(&self.db.data_dir)
            .args(["--database-url", &self.db.url])
            .args(&self.extra)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        self.starts += 1;
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut() {
                if let Some(status) = c.try_wait()? {
                    bail!(
                        "idem serve exited with {status}; see {}",
                        self.log.display()
                    );
                }
            }
            if let Ok(r) = http.get(format!("{}/readyz", self.base())).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!(
            "idem serve was not ready in 30 s; see {}",
            self.log.display()
        )
    }

    /// Starts the server where it cannot run: it must exit non-zero within
    /// 15 s and name the problem. Returns the reason it logged.
    async fn start_refused(&mut self) -> anyhow::Result<String> {
        let before = std::fs::read_to_string(&self.log).unwrap_or_default().len();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut child = idem()
            .args(["serve", "--addr", &self.addr, "--data-dir"])
            .arg(&self.db.data_dir)
            .args(["--database-url", &self.db.url])
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                child.kill()?;
                child.wait()?;
                bail!("idem serve kept running on a volume it cannot write");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        ensure!(
            !status.success(),
            "idem serve exited 0 on a volume it cannot write"
        );
        let text = std::fs::read_to_string(&self.log)?;
        let said = text.get(before..).unwrap_or("").trim().to_owned();
        ensure!(
            said.to_lowercase().contains("read-only"),
            "idem serve exited with {status} but did not say the database is read-only: {said}"
        );
        Ok(said.lines().last().unwrap_or("").to_owned())
    }

    /// SIGKILL: no shutdown, no flush, no goodbye.
    fn kill9(&mut self) -> anyhow::Result<()> {
        if let Some(mut c) = self.child.take() {
            c.kill()?;
            c.wait()?;
            self.kills += 1;
        }
        Ok(())
    }

    /// SIGTERM, then wait for the graceful exit.
    fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(mut c) = self.child.take() {
            Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status()?;
            let deadline = Instant::now() + Duration::from_secs(15);
            while c.try_wait()?.is_none() {
                if Instant::now() > deadline {
                    c.kill()?;
                    c.wait()?;
                    bail!("idem serve ignored SIGTERM for 15 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The client processes of one run.
struct Clients {
    children: Vec<Child>,
    journals: Vec<PathBuf>,
    stop: PathBuf,
}

impl Clients {
    fn spawn(dir: &Path, base: &str, tokens: &[String], n: u32, seed: u64) -> anyhow::Result<Self> {
        let stop = dir.join("stop");
        let _ = std::fs::remove_file(&stop);
        let exe = std::env::current_exe()?;
        let mut children = Vec::new();
        let mut journals = Vec::new();
        for id in 0..n {
            let journal = dir.join(format!("client-{id}.jsonl"));
            let _ = std::fs::remove_file(&journal);
            children.push(
                Command::new(&exe)
                    .arg("client")
                    .arg(base)
                    .arg(tokens.join(","))
                    .arg(id.to_string())
                    .arg(&journal)
                    .arg(&stop)
                    .arg(seed.to_string())
                    .stdin(Stdio::null())
                    .spawn()?,
            );
            journals.push(journal);
        }
        Ok(Self {
            children,
            journals,
            stop,
        })
    }

    /// Tells the clients to finish their conversations, and waits.
    fn finish(mut self) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::write(&self.stop, b"")?;
        // A charge cut by a kill waits out its key's one-minute lock.
        let deadline = Instant::now() + Duration::from_secs(200);
        for c in &mut self.children {
            loop {
                if let Some(status) = c.try_wait()? {
                    ensure!(status.success(), "a client process exited with {status}");
                    break;
                }
                if Instant::now() > deadline {
                    bail!("the clients did not finish within 200 s of the stop signal");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.children.clear();
        Ok(std::mem::take(&mut self.journals))
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Adds the end of the server's log to a failure.
fn with_log<T>(r: anyhow::Result<T>, log: &Path) -> anyhow::Result<T> {
    r.map_err(|e| {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        e.context(format!("the server's log ends with:\n{}", tail.join("\n")))
    })
}

/// Kills and restarts `idem serve` under load, then checks the database.
async fn kill_run(s: &Settings, db: Db) -> anyhow::Result<()> {
    let log = db.data_dir.join("server.log");
    with_log(kill_run_inner(s, db).await, &log)
}

async fn kill_run_inner(s: &Settings, db: Db) -> anyhow::Result<()> {
    let backend = db.backend();
    println!(
        "\n== {backend}: {} clients, kill -9 {} times",
        CLIENTS, s.kills
    );
    let tokens = tenants(&db)?;
    let mut server = Server::new(db.clone())?;
    server.start().await?;
    let clients = Clients::spawn(&db.data_dir, &server.base(), &tokens, CLIENTS, s.seed)?;
    let mut rng = StdRng::seed_from_u64(s.seed);
    let started = Instant::now();
    let slice = Duration::from_millis(s.secs * 1000 / (u64::from(s.kills) + 1));
    for k in 0..s.kills {
        // A random moment inside each slice of the run.
        let wait = slice.mul_f64(rng.gen_range(0.5..1.5));
        tokio::time::sleep(wait).await;
        server.kill9()?;
        // Sometimes the restart is immediate, sometimes the clients meet a
        // refused connection for a while.
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..400))).await;
        server.start().await?;
        println!(
            "   kill {} at {:.1} s, restarted",
            k + 1,
            started.elapsed().as_secs_f64()
        );
    }
    if db.pg.is_some() {
        tokio::time::sleep(slice).await;
        let how = restart_postgres().await?;
        println!("   PostgreSQL under load: {how}");
        server.wait_ready().await?;
    }
    let rest = Duration::from_secs(s.secs).saturating_sub(started.elapsed());
    tokio::time::sleep(rest.max(Duration::from_secs(1))).await;
    let journals = clients.finish()?;
    let report = settle_and_check(&mut server, &db, &journals).await?;
    println!(
        "   {backend}: {} conversations, {} intents acknowledged, {} redeliveries, {} charges, \
         {} completed, {} failed, {} uncertain; {} kills, {} starts; clients met {} connection \
         errors, {} 5xx, {} 409s, {} replays, {} takeovers; duplicates 0, lost 0, integrity ok",
        report.conversations,
        report.intents,
        report.redeliveries,
        report.charges,
        report.completed,
        report.failed,
        report.uncertain,
        server.kills,
        server.starts,
        report.connection_errors,
        report.unavailable,
        report.in_flight,
        report.replays,
        report.takeovers,
    );
    Ok(())
}

/// Restarts the PostgreSQL cluster when `IDEM_RELIABILITY_RESTART_POSTGRES=1`
/// (`.ci/run` sets it; root and Debian's pg_ctlcluster needed). Otherwise
/// it ends every connection to the test database, which is what a restart
/// looks like to idem, without bouncing a developer's own server.
async fn restart_postgres() -> anyhow::Result<String> {
    let version = std::fs::read_dir("/etc/postgresql").ok().and_then(|d| {
        d.filter_map(|e| e.ok()?.file_name().into_string().ok())
            .max_by_key(|v| v.parse::<u32>().unwrap_or(0))
    });
    let allowed = std::env::var("IDEM_RELIABILITY_RESTART_POSTGRES").as_deref() == Ok("1");
    if let Some(v) = version.filter(|_| allowed && is_root()) {
        let ok = Command::new("pg_ctlcluster")
            .args([
                "--skip-systemctl-redirect",
                &v,
                "main",
                "restart",
                "-m",
                "fast",
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return Ok(format!(
                "restarted (pg_ctlcluster {v} main restart -m fast)"
            ));
        }
    }
    let admin = std::env::var("IDEM_TEST_POSTGRES_URL")?;
    let pool = sqlx::PgPool::connect(&admin).await?;
    sqlx::query(
        "select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()",
    )
    .execute(&pool)
    .await?;
    pool.close().await;
    Ok("every connection to the test database terminated; IDEM_RELIABILITY_RESTART_POSTGRES=1 restarts the cluster".into())
}

/// The SQLite volume fills up under load: the API answers 503 and recovers
/// once the space is back, without a restart. Then the volume turns
/// read-only: the server refuses to start on it, and starts once it is
/// writable again.
async fn disk_run(s: &Settings, dir: &Path) -> anyhow::Result<()> {
    // The log lives off the small volume, and outlives its unmounting.
    let log = dir.join("disk-server.log");
    with_log(disk_run_inner(s, dir, &log).await, &log)
}

async fn disk_run_inner(s: &Settings, dir: &Path, log: &Path) -> anyhow::Result<()> {
    println!("\n== sqlite on a 64 MB tmpfs: disk full, then read-only, under load");
    let mnt = dir.join("tmpfs");
    std::fs::create_dir_all(&mnt)?;
    let mount = |opts: &str| -> anyhow::Result<()> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(&mnt)
            .status()?
            .success();
        ensure!(ok, "mount -o {opts} failed");
        Ok(())
    };
    let remount = |opts: &str| -> anyhow::Result<()> {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&mnt)
            .status()?
            .success();
        ensure!(ok, "mount -o remount,{opts} failed");
        Ok(())
    };
    mount("size=64m")?;
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let db = Db::sqlite(mnt.join("data"))?;
    let tokens = tenants(&db)?;
    let mut server = Server::new(db.clone())?;
    server.log = log.to_owned();
    server.start().await?;
    // The journals live off the small volume so filling it spares them.
    let journal_dir = dir.join("disk-journals");
    std::fs::create_dir_all(&journal_dir)?;
    let clients = Clients::spawn(&journal_dir, &server.base(), &tokens, 2, s.seed ^ 1)?;
    let probe = Probe::new(&server.base(), &tokens[0]);
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Disk full: a filler file takes every free block.
    let filler = mnt.join("filler");
    fill(&filler)?;
    let refused = probe
        .until_refused(Duration::from_secs(10))
        .await
        .context("disk full")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    std::fs::remove_file(&filler)?;
    let back = probe
        .until_accepted(Duration::from_secs(20))
        .await
        .context("after freeing the disk")?;
    println!("   disk full: {refused}; space freed: {back}");
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Read-only. Linux refuses to remount a volume read-only while a
    // process holds a file on it open for writing, so the server stops
    // (the clients meet refused connections), the volume turns read-only,
    // and a server started on it must refuse to run and say why. Then the
    // volume is writable again and a restart serves everything it had.
    server.stop()?;
    remount("ro")?;
    let why = server.start_refused().await?;
    remount("rw")?;
    server.start().await?;
    let back = probe
        .until_accepted(Duration::from_secs(20))
        .await
        .context("after remounting read-write")?;
    println!("   read-only volume: idem serve refused to start ({why}); read-write again: {back}");
    tokio::time::sleep(Duration::from_secs(2)).await;

    let journals = clients.finish()?;
    let report = settle_and_check(&mut server, &db, &journals).await?;
    println!(
        "   sqlite disk faults: {} conversations, {} intents acknowledged, {} charges, {} 5xx met \
         by clients; duplicates 0, lost 0, integrity ok",
        report.conversations, report.intents, report.charges, report.unavailable
    );
    Ok(())
}

/// Writes until the volume is full.
fn fill(path: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    let block = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = f.write_all(&block) {
            ensure!(
                e.raw_os_error() == Some(28),
                "filling the volume failed with {e}, not ENOSPC"
            );
            // The last partial block: one byte at a time to the very end.
            while f.write_all(&[0]).is_ok() {}
            return Ok(());
        }
    }
}

/// Records fresh intents to learn whether the server accepts writes.
struct Probe {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Probe {
    fn new(base: &str, token: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: base.to_owned(),
            token: token.to_owned(),
        }
    }

    async fn write(&self) -> anyhow::Result<(u16, Value)> {
        let reference = format!("probe-{}", rand::random::<u64>());
        let r = self
            .http
            .post(format!("{}/v1/intents", self.base))
            .bearer_auth(&self.token)
            .json(&serde_json::json!({ "action": "pix.cobranca", "payload": {
                "cliente_id": reference, "valor": "1.00",
                "chave_pix_destino": "probe@example.com", "referencia_intencao": reference,
            }}))
            .send()
            .await?;
        let status = r.status().as_u16();
        let ctype = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        if status >= 400 {
            ensure!(
                ctype == "application/problem+json",
                "a {status} came as {ctype:?}: {body}"
            );
            let text = body.to_string();
            ensure!(
                !text.to_lowercase().contains("sqlite") && !text.contains("insert into"),
                "an error leaked internals: {text}"
            );
        }
        Ok((status, body))
    }

    /// Waits for the server to refuse a write with 503 (it must not crash).
    async fn until_refused(&self, within: Duration) -> anyhow::Result<String> {
        let t = Instant::now();
        while t.elapsed() < within {
            let (status, body) = self.write().await?;
            match status {
                201 => tokio::time::sleep(Duration::from_millis(50)).await,
                503 => {
                    return Ok(format!(
                        "503 after {} ms ({})",
                        t.elapsed().as_millis(),
                        body["title"].as_str().unwrap_or("")
                    ))
                }
                other => bail!("a write answered {other} {body}, expected 201 or 503"),
            }
        }
        bail!("writes were still accepted after {within:?}")
    }

    /// Waits for the server to accept writes again, without a restart.
    async fn until_accepted(&self, within: Duration) -> anyhow::Result<String> {
        let t = Instant::now();
        while t.elapsed() < within {
            let (status, body) = self.write().await?;
            match status {
                201 => {
                    return Ok(format!(
                        "writes accepted again after {} ms",
                        t.elapsed().as_millis()
                    ))
                }
                503 => tokio::time::sleep(Duration::from_millis(100)).await,
                other => bail!("a write answered {other} {body}, expected 201 or 503"),
            }
        }
        let (status, body) = self.write().await?;
        bail!("writes were still refused {within:?} after the fault was removed: {status} {body}")
    }
}

#[derive(Default)]
struct Report {
    conversations: u64,
    intents: usize,
    redeliveries: u64,
    charges: usize,
    completed: usize,
    failed: usize,
    uncertain: usize,
    connection_errors: u64,
    unavailable: u64,
    in_flight: u64,
    replays: u64,
    takeovers: u64,
}

/// What the clients were told, read back from their journals.
#[derive(Default)]
struct Told {
    intents: BTreeMap<(usize, String), (String, Value)>,
    actions: BTreeMap<(usize, String), String>,
    violations: Vec<String>,
    summaries: Vec<Value>,
}

fn read_journals(paths: &[PathBuf]) -> anyhow::Result<Told> {
    let mut told = Told::default();
    for p in paths {
        let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
        for line in text.lines() {
            let v: Value =
                serde_json::from_str(line).with_context(|| format!("journal line {line}"))?;
            let reference = v["ref"].as_str().unwrap_or("").to_owned();
            match v["t"].as_str() {
                Some("intent") => {
                    let tenant = v["tenant"].as_u64().unwrap_or(0) as usize;
                    let key = v["key"].as_str().unwrap_or("").to_owned();
                    told.intents
                        .insert((tenant, reference), (key, v["frozen"].clone()));
                }
                Some("action") => {
                    let key = v["key"].as_str().unwrap_or("").to_owned();
                    let tenant = told
                        .intents
                        .iter()
                        .find(|((_, r), (k, _))| *r == reference && *k == key)
                        .map(|((t, _), _)| *t)
                        .ok_or_else(|| anyhow!("an action for {reference} without its intent"))?;
                    told.actions.insert(
                        (tenant, key),
                        v["outcome"].as_str().unwrap_or("").to_owned(),
                    );
                }
                Some("violation") => told.violations.push(v["what"].to_string()),
                Some("summary") => told.summaries.push(v),
                _ => bail!("unknown journal line {line}"),
            }
        }
    }
    ensure!(
        told.summaries.len() == paths.len(),
        "{} of {} clients wrote their summary",
        told.summaries.len(),
        paths.len()
    );
    Ok(told)
}

/// Waits for abandoned claims to turn uncertain, stops the server, and
/// checks the database against the journals.
async fn settle_and_check(
    server: &mut Server,
    db: &Db,
    journals: &[PathBuf],
) -> anyhow::Result<Report> {
    let told = read_journals(journals)?;
    ensure!(
        told.violations.is_empty(),
        "the clients saw: {}",
        told.violations.join("; ")
    );
    // Leases are 2 s; the sweep runs every second.
    let rows = async {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let rows = read_db(db).await?;
            if rows.actions.values().all(|a| a != "started") || Instant::now() > deadline {
                return anyhow::Ok(rows);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    .await?;
    server.stop()?;
    let tenant_of = |t: &str| TENANTS.iter().position(|n| *n == t);

    // Every acknowledged intent, with the payload it was acknowledged with.
    for ((t, reference), (key, frozen)) in &told.intents {
        let Some((k, payload)) = rows.intents.get(&(*t, reference.clone())) else {
            bail!(
                "acknowledged intent {reference} (tenant {}) is missing",
                TENANTS[*t]
            );
        };
        ensure!(k == key, "intent {reference}: key {k}, acknowledged {key}");
        ensure!(
            payload == frozen,
            "intent {reference}: stored {payload}, acknowledged {frozen}"
        );
    }
    // No charge executed twice: one ledger row per conversation at most.
    let mut per_customer: HashMap<(usize, &str), usize> = HashMap::new();
    for (t, customer) in &rows.charges {
        let t = tenant_of(t).ok_or_else(|| anyhow!("a charge for an unknown tenant {t}"))?;
        *per_customer.entry((t, customer.as_str())).or_default() += 1;
    }
    let twice: Vec<_> = per_customer.iter().filter(|(_, n)| **n > 1).collect();
    ensure!(
        twice.is_empty(),
        "charges executed more than once: {twice:?}"
    );
    // Every action is completed, failed or uncertain, as its client left it.
    let (mut completed, mut failed, mut uncertain) = (0, 0, 0);
    for ((t, key), state) in &rows.actions_by_tenant {
        match state.as_str() {
            "completed" => completed += 1,
            "failed" => failed += 1,
            "uncertain" => uncertain += 1,
            other => bail!(
                "action {key} of {} is {other}: neither finished nor uncertain",
                TENANTS[*t]
            ),
        }
    }
    for ((t, key), outcome) in &told.actions {
        let Some(state) = rows.actions_by_tenant.get(&(*t, key.clone())) else {
            bail!("action {key} ({outcome}) was lost");
        };
        let want = if outcome == "abandoned" {
            "uncertain"
        } else {
            outcome.as_str()
        };
        ensure!(
            state == want,
            "action {key}: the client saw {outcome}, the database says {state}"
        );
        if outcome == "completed" {
            let reference = &told
                .intents
                .iter()
                .find(|((tt, _), (k, _))| tt == t && k == key)
                .map(|((_, r), _)| r.clone())
                .unwrap_or_default();
            ensure!(
                per_customer.get(&(*t, reference.as_str())) == Some(&1),
                "completed action {key} has no charge"
            );
        }
    }
    integrity(db).await?;
    let sum = |k: &str| {
        told.summaries
            .iter()
            .map(|s| s[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    Ok(Report {
        conversations: sum("conversations"),
        intents: told.intents.len(),
        redeliveries: sum("redeliveries"),
        charges: rows.charges.len(),
        completed,
        failed,
        uncertain,
        connection_errors: sum("connection_errors"),
        unavailable: sum("unavailable"),
        in_flight: sum("in_flight"),
        replays: sum("replays"),
        takeovers: sum("takeovers"),
    })
}

struct Rows {
    intents: HashMap<(usize, String), (String, Value)>,
    actions: HashMap<String, String>,
    actions_by_tenant: HashMap<(usize, String), String>,
    charges: Vec<(String, String)>,
}

type Row3 = (String, String, String);
/// Intents (tenant, reference, key, payload), actions (tenant, key, state)
/// and charges (tenant, customer), as read at the end of a run.
type Tables = (
    Vec<(String, String, String, String)>,
    Vec<Row3>,
    Vec<(String, String)>,
);

/// The three tables the end checks read, from either backend's pool.
macro_rules! tables {
    ($pool:expr) => {
        (
            sqlx::query_as("select tenant_id, reference, idem_key, payload from intents")
                .fetch_all(&$pool)
                .await?,
            sqlx::query_as("select tenant_id, idem_key, state from actions")
                .fetch_all(&$pool)
                .await?,
            sqlx::query_as("select tenant_id, customer from demo_charges")
                .fetch_all(&$pool)
                .await?,
        )
    };
}

async fn read_db(db: &Db) -> anyhow::Result<Rows> {
    let (intents, actions, charges): Tables = if db.pg.is_some() {
        let pool = sqlx::PgPool::connect(&db.url).await?;
        let r = tables!(pool);
        pool.close().await;
        r
    } else {
        let pool = sqlx::SqlitePool::connect(&format!("{}?mode=ro", db.url)).await?;
        let r = tables!(pool);
        pool.close().await;
        r
    };
    let tenant_of = |t: &str| TENANTS.iter().position(|n| *n == t);
    let mut rows = Rows {
        intents: HashMap::new(),
        actions: HashMap::new(),
        actions_by_tenant: HashMap::new(),
        charges,
    };
    for (t, reference, key, payload) in intents {
        let Some(t) = tenant_of(&t) else { continue };
        let payload: Value = serde_json::from_str(&payload)?;
        rows.intents.insert((t, reference), (key, payload));
    }
    for (t, key, state) in actions {
        let Some(t) = tenant_of(&t) else { continue };
        rows.actions.insert(format!("{t}/{key}"), state.clone());
        rows.actions_by_tenant.insert((t, key), state);
    }
    Ok(rows)
}

/// The database's own integrity check: SQLite's `integrity_check` and
/// `foreign_key_check`; on PostgreSQL, amcheck over every index of the run.
async fn integrity(db: &Db) -> anyhow::Result<()> {
    if let Some((_, schema)) = &db.pg {
        let pool = sqlx::PgPool::connect(&db.url).await?;
        let indexes: Vec<(String,)> = sqlx::query_as(
            "select c.relname from pg_index i
             join pg_class c on c.oid = i.indexrelid
             join pg_namespace n on n.oid = c.relnamespace
             join pg_am a on a.oid = c.relam
             where n.nspname = $1 and a.amname = 'btree'",
        )
        .bind(schema)
        .fetch_all(&pool)
        .await?;
        ensure!(!indexes.is_empty(), "no index found in {schema}");
        for (index,) in &indexes {
            sqlx::query("select public.bt_index_check(($1 || '.' || $2)::regclass, true)")
                .bind(schema)
                .bind(index)
                .execute(&pool)
                .await
                .with_context(|| format!("amcheck on {index}"))?;
        }
        pool.close().await;
    } else {
        let pool = sqlx::SqlitePool::connect(&db.url).await?;
        let (verdict,): (String,) = sqlx::query_as("pragma integrity_check")
            .fetch_one(&pool)
            .await?;
        ensure!(verdict == "ok", "pragma integrity_check: {verdict}");
        let broken: Vec<(String,)> = sqlx::query_as("pragma foreign_key_check")
            .fetch_all(&pool)
            .await
            .unwrap_or_default();
        ensure!(
            broken.is_empty(),
            "pragma foreign_key_check found {} rows",
            broken.len()
        );
        pool.close().await;
    }
    Ok(())
}
