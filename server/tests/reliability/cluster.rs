//! The production topology: idem on a replicated PostgreSQL that fails
//! over (`scripts/ha-cluster`: three members under Patroni in strict
//! synchronous mode, etcd, HAProxy routing to the primary), and several
//! idem instances behind a load balancer.
//!
//! The drills run one after another on one cluster, under the suite's
//! usual load (client processes holding agent conversations that charge
//! through the demo provider): the primary crashed and kept down past the
//! leader TTL (a replica is promoted), the primary crashed and restarted
//! within it (it resumes), a planned switchover, the synchronous standby
//! crashed, and etcd stopped (the primary steps down: writes are refused
//! as 503 with Retry-After). A probe writes to the database directly and
//! through idem every 50 ms; each drill prints when the cluster took
//! writes again, how long idem took after that to answer 2xx, and what it
//! refused meanwhile. At the end the database must show 0 duplicate
//! charges and every acknowledged write.
//!
//! Then two `idem serve` on the cluster behind HAProxy in HTTP mode: one is
//! SIGKILLed under load while the other serves, the chores run once
//! (their leases), the relay delivers each charge under one stable
//! `webhook-id`, an alert fires and resolves once, and both instances show
//! the same numbers.
//!
//! Needs root and `IDEM_TEST_HA=1` (`.ci/run` sets both); otherwise the
//! cluster run shows as IGNORED.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The cluster script, from the workspace root.
fn ha(args: &[&str]) -> anyhow::Result<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ha-cluster");
    let out = Command::new(&script)
        .args(args)
        .env("IDEM_HA_DIR", ha_dir())
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    ensure!(
        out.status.success(),
        "scripts/ha-cluster {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

fn ha_dir() -> PathBuf {
    std::env::var_os("IDEM_HA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("idem-ha-{}", std::process::id())))
}

/// Runs `scripts/ha-cluster ARGS` off the runtime's threads.
async fn ha_async(args: &[&str]) -> anyhow::Result<String> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        ha(&refs)
    })
    .await?
}

/// Stops the cluster when the run ends, however it ends.
struct Cluster;

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = ha(&["stop"]) {
            eprintln!("reliability: stopping the cluster: {e:#}");
        }
    }
}

/// Which parts of the cluster run to run (`IDEM_RELIABILITY_RUNS` names
/// them `cluster` and `instances`).
pub(super) struct Parts {
    pub drills: bool,
    pub instances: bool,
}

pub(super) async fn cluster_run(
    s: &Settings,
    dir: &Path,
    with: Parts,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let allowed = std::env::var("IDEM_TEST_HA").as_deref() == Ok("1");
    if !allowed || !is_root() {
        let why = "needs root and IDEM_TEST_HA=1 (.ci/run sets both where scripts/ha-cluster \
                   can install and start a Patroni cluster)";
        if with.drills {
            tally.ignored("cluster", why);
        }
        if with.instances {
            tally.ignored("instances", why);
        }
        return Ok(());
    }
    println!("\n== PostgreSQL cluster (Patroni, etcd, HAProxy): starting");
    let t = Instant::now();
    let url = ha_async(&["start"]).await?;
    let _cluster = Cluster;
    println!(
        "   cluster up in {:.1} s at {url}",
        t.elapsed().as_secs_f64()
    );
    let db = Db::postgres(&url, dir.join("cluster")).await?;
    let result = if with.drills {
        drills(s, &db).await.map(|()| tally.ran("cluster"))
    } else {
        Ok(())
    };
    db.drop_schema().await;
    let result = match result {
        Ok(()) if with.instances => {
            let db = Db::postgres(&url, dir.join("instances")).await?;
            let r = instances(s, &db).await;
            db.drop_schema().await;
            r.map(|()| tally.ran("instances"))
        }
        other => other,
    };
    if result.is_err() {
        keep_cluster_logs(&dir.join("ha-cluster"));
    }
    result
}

/// Keeps the cluster's logs and configuration with the run's files. Not
/// its data directories: the members are still running, and their files
/// come and go under a copy.
fn keep_cluster_logs(to: &Path) {
    let from = ha_dir();
    let mut dirs = vec![from.clone()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "data" && name != "etcd" {
                    dirs.push(p);
                }
            } else if let Ok(rel) = p.strip_prefix(&from) {
                let target = to.join(rel);
                if let Some(parent) = target.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::copy(&p, &target);
            }
        }
    }
}

/// One sample of the probe: did a direct write to the cluster succeed, and
/// what did idem answer to a fresh intent.
#[derive(Clone)]
struct Sample {
    at: Instant,
    db_ok: bool,
    /// idem's status, its problem type and whether it said Retry-After;
    /// `None`: no answer at all.
    idem: Option<(u16, String, bool)>,
}

struct Prober {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Prober {
    fn start(db_url: String, base: String, token: String) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (out, halt) = (samples.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(40))
                .build()
                .unwrap_or_default();
            let mut n = 0u64;
            while !halt.load(Ordering::Relaxed) {
                n += 1;
                let next = Instant::now() + Duration::from_millis(50);
                let (db_ok, idem) =
                    tokio::join!(db_write(&db_url), idem_write(&http, &base, &token, n));
                out.lock().unwrap_or_else(|p| p.into_inner()).push(Sample {
                    at: Instant::now(),
                    db_ok,
                    idem,
                });
                tokio::time::sleep_until(next.into()).await;
            }
        });
        Self {
            samples,
            stop,
            task,
        }
    }

    fn since(&self, t: Instant) -> Vec<Sample> {
        self.samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|s| s.at >= t)
            .cloned()
            .collect()
    }

    /// Waits until both probes have succeeded for a second on end.
    async fn until_settled(&self, from: Instant, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let recent = self.since(Instant::now() - Duration::from_secs(1));
            let good = |s: &Sample| s.db_ok && matches!(s.idem, Some((200 | 201, _, _)));
            if recent.len() >= 5 && recent.iter().all(good) && recent[0].at > from {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the cluster and idem did not both take writes within {within:?} of the fault")
    }

    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
    }
}

/// A write the cluster can only take on its primary: a transaction id.
async fn db_write(url: &str) -> bool {
    use sqlx::Connection as _;
    let attempt = async {
        let mut c = sqlx::PgConnection::connect(url).await?;
        sqlx::query("select txid_current()").execute(&mut c).await?;
        c.close().await
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), attempt).await,
        Ok(Ok(()))
    )
}

async fn idem_write(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    n: u64,
) -> Option<(u16, String, bool)> {
    let reference = format!("ha-probe-{}-{n}", std::process::id());
    let r = http
        .post(format!("{base}/v1/intents"))
        .bearer_auth(token)
        .json(&serde_json::json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": reference, "valor": "1.00",
            "chave_pix_destino": "probe@example.com", "referencia_intencao": reference,
        }}))
        .send()
        .await
        .ok()?;
    let status = r.status().as_u16();
    let retry_after = r.headers().contains_key("retry-after");
    let body: Value = r.json().await.unwrap_or(Value::Null);
    Some((
        status,
        body["type"].as_str().unwrap_or("").to_owned(),
        retry_after,
    ))
}

/// What one drill measured.
struct Measured {
    /// From the fault to the cluster's first write after its last refused one.
    cluster_back: Option<Duration>,
    /// From then to idem's first 2xx.
    idem_lag: Option<Duration>,
    /// idem's refusals in the window, by status and problem type.
    refused: BTreeMap<String, u64>,
    /// What idem answered between the cluster's return and its first 2xx.
    lagging: Vec<String>,
}

fn measure(samples: &[Sample], fault: Instant) -> anyhow::Result<Measured> {
    let ok = |s: &Sample| matches!(s.idem, Some((200 | 201, _, _)));
    let mut refused = BTreeMap::new();
    for s in samples {
        match &s.idem {
            Some((200 | 201, _, _)) => {}
            Some((status, kind, retry_after)) => {
                // Refused, never wrong: a 503 problem with Retry-After.
                ensure!(
                    *status == 503 && *retry_after && kind.starts_with("urn:idem:problem:"),
                    "idem answered {status} {kind:?} (Retry-After: {retry_after}) during a failover"
                );
                *refused.entry(format!("{status} {kind}")).or_default() += 1;
            }
            None => bail!("idem did not answer during a failover (it must answer, 2xx or 503)"),
        }
    }
    let last_db_fail = samples.iter().rposition(|s| !s.db_ok);
    let Some(i) = last_db_fail else {
        return Ok(Measured {
            cluster_back: None,
            idem_lag: None,
            refused,
            lagging: Vec::new(),
        });
    };
    let back = samples[i + 1..]
        .iter()
        .find(|s| s.db_ok)
        .ok_or_else(|| anyhow!("the cluster never took writes again"))?;
    let first_ok = samples
        .iter()
        .filter(|s| s.at >= back.at)
        .find(|s| ok(s))
        .ok_or_else(|| anyhow!("idem never answered 2xx after the cluster was back"))?;
    let lagging = samples
        .iter()
        .filter(|s| s.at >= back.at && s.at < first_ok.at)
        .map(|s| match &s.idem {
            Some((status, kind, _)) => format!(
                "+{:.2} s {status} {kind}",
                s.at.duration_since(back.at).as_secs_f64()
            ),
            None => "no answer".to_owned(),
        })
        .collect();
    Ok(Measured {
        cluster_back: Some(back.at.duration_since(fault)),
        idem_lag: Some(first_ok.at.saturating_duration_since(back.at)),
        refused,
        lagging,
    })
}

/// The drills, one after another, on one server under load.
async fn drills(s: &Settings, db: &Db) -> anyhow::Result<()> {
    let log = db.data_dir.join("server.log");
    with_log(drills_inner(s, db).await, &log)
}

async fn drills_inner(s: &Settings, db: &Db) -> anyhow::Result<()> {
    let tokens = tenants(db)?;
    let mut server = Server::new(db.clone())?;
    server.start().await?;
    let clients = Clients::spawn(
        &db.data_dir,
        &server.base(),
        &tokens,
        CLIENTS,
        s.seed ^ 0x4a,
    )?;
    let probe = Prober::start(db.url.clone(), server.base(), tokens[0].clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let drills: [(&str, &[&str]); 5] = [
        (
            "primary crashed, kept down past the TTL (promotion)",
            &["kill-primary", "--keep-down", "25"],
        ),
        (
            "primary crashed, restarted within the TTL (resumes)",
            &["kill-primary", "--keep-down", "2"],
        ),
        ("planned switchover", &["switchover"]),
        (
            "synchronous standby crashed",
            &["kill-sync", "--keep-down", "8"],
        ),
        ("etcd stopped for 15 s", &["stop-etcd"]),
    ];
    for (name, args) in drills {
        let fault = Instant::now();
        let member = ha_async(args).await?;
        if args[0] == "stop-etcd" {
            // Past retry_timeout the primary cannot renew its leader key
            // and steps down: no member takes writes until etcd is back.
            tokio::time::sleep(Duration::from_secs(15)).await;
            ha_async(&["start-etcd"]).await?;
        }
        probe
            .until_settled(fault, Duration::from_secs(120))
            .await
            .with_context(|| format!("drill: {name}"))?;
        let m = measure(&probe.since(fault), fault).with_context(|| format!("drill: {name}"))?;
        let secs = |d: Option<Duration>| {
            d.map_or("—".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()))
        };
        let refused: Vec<String> = m
            .refused
            .iter()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect();
        println!(
            "   {name}{}: cluster took writes {} after the fault; idem's first 2xx {} after that; \
             refused meanwhile: {}",
            if member.is_empty() {
                String::new()
            } else {
                format!(" ({member})")
            },
            secs(m.cluster_back),
            secs(m.idem_lag),
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            }
        );
        // Checked at once, so the server log printed on failure ends where
        // the slow recovery happened, with what idem answered meanwhile.
        let lag = m.idem_lag.unwrap_or_default();
        ensure!(
            lag <= Duration::from_secs(2),
            "drill {name:?}: idem took {:.2} s to answer 2xx after the cluster took writes again \
             (goal: 2 s); idem answered in that time: {}",
            lag.as_secs_f64(),
            m.lagging.join(", ")
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    probe.stop().await;
    let journals = clients.finish()?;
    let report = settle_and_check(&mut server, db, &journals).await?;
    println!(
        "   cluster drills: {} conversations, {} intents acknowledged, {} charges, {} completed, \
         {} failed, {} uncertain; clients met {} connection errors and {} 5xx, {} takeovers; \
         duplicates 0, lost 0, integrity ok",
        report.conversations,
        report.intents,
        report.charges,
        report.completed,
        report.failed,
        report.uncertain,
        report.connection_errors,
        report.unavailable,
        report.takeovers,
    );
    Ok(())
}

/// HAProxy in HTTP mode in front of the instances, health-checked on
/// `/readyz`. A connection refused by a dead instance is retried on the
/// other (the request never reached it); nothing else is retried.
struct Balancer {
    child: Child,
    addr: String,
}

impl Balancer {
    fn start(dir: &Path, backends: &[String]) -> anyhow::Result<Self> {
        let addr = format!("127.0.0.1:{}", free_port()?);
        let mut cfg = format!(
            "defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n  \
             retries 3\n  retry-on conn-failure\n  option redispatch\n\
             frontend idem\n  bind {addr}\n  default_backend instances\n\
             backend instances\n  balance roundrobin\n  option httpchk GET /readyz\n  \
             http-check expect status 200\n  default-server inter 300ms fall 1 rise 2\n"
        );
        for (i, b) in backends.iter().enumerate() {
            cfg.push_str(&format!("  server i{i} {b} check\n"));
        }
        let path = dir.join("balancer.cfg");
        std::fs::write(&path, cfg)?;
        let log = std::fs::File::create(dir.join("balancer.log"))?;
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting haproxy")?;
        Ok(Self { child, addr })
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        for _ in 0..100 {
            if let Ok(r) = http.get(format!("{}/readyz", self.base())).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the balancer did not answer /readyz")
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads one counter of an instance's `/metrics`.
async fn metric(base: &str, series: &str) -> anyhow::Result<f64> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .ok_or_else(|| anyhow!("{series} is not in {base}/metrics"))
}

/// Two instances on the cluster behind the balancer.
async fn instances(s: &Settings, db: &Db) -> anyhow::Result<()> {
    let log = db.data_dir.join("server.log");
    with_log(instances_inner(s, db).await, &log)
}

async fn instances_inner(s: &Settings, db: &Db) -> anyhow::Result<()> {
    println!("\n== two instances on the cluster behind HAProxy (HTTP), one SIGKILLed under load");
    let tokens = tenants(db)?;
    let (url, hooks) = receiver().await?;
    let added = cli(
        db,
        &[
            "webhook",
            "add",
            TENANTS[0],
            &url,
            "--events",
            "charge.created",
            "--allow-private-webhooks",
        ],
    )?;
    seen(&hooks).secret = whsec(&serde_json::from_str(&added)?)?;
    // The alert: on a tenant of its own, where nothing but the drill's one
    // action is ever uncertain (the clients abandon some of theirs), with
    // an endpoint and a receiver of its own.
    const ALERTS: &str = "rel-alerts";
    let alert_token = cli(db, &["tenant", "create", ALERTS])?.trim().to_owned();
    let (alert_url, alert_hooks) = receiver().await?;
    let added = cli(
        db,
        &[
            "webhook",
            "add",
            ALERTS,
            &alert_url,
            "--events",
            "alert.firing,alert.resolved",
            "--allow-private-webhooks",
        ],
    )?;
    seen(&alert_hooks).secret = whsec(&serde_json::from_str(&added)?)?;
    let endpoint = serde_json::from_str::<Value>(&added)?["endpoint_id"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    cli(
        db,
        &[
            "alert",
            "add",
            ALERTS,
            "--metric",
            "uncertain_now",
            "--above",
            "0",
            "--webhook",
            &endpoint,
        ],
    )?;

    let mut a = Server::new(db.clone())?;
    let mut b = Server::new(db.clone())?;
    b.log = db.data_dir.join("server-b.log");
    for srv in [&mut a, &mut b] {
        srv.extra = vec![
            "--alert-every",
            "1s",
            "--allow-private-webhooks",
            "--relay-lease-ms",
            "3000",
            "--relay-timeout-ms",
            "1000",
            "--relay-retry-base-ms",
            "200",
        ];
        srv.start().await?;
    }
    let balancer = Balancer::start(&db.data_dir, &[a.addr.clone(), b.addr.clone()])?;
    balancer.wait_ready().await?;
    let clients = Clients::spawn(
        &db.data_dir,
        &balancer.base(),
        &tokens,
        CLIENTS,
        s.seed ^ 0x1b,
    )?;

    // The chores, both instances up: over six purge periods (1 s) the
    // purge and the alerts run about six times in all, not twelve: one
    // instance leads, the other skips. (A run slower than its lease may
    // hand the lease over; it is still one run per period.)
    let led = |chore: &str, outcome: &str| {
        format!("idem_chore_runs_total{{chore=\"{chore}\",outcome=\"{outcome}\"}}")
    };
    let runs = |a: &Server, b: &Server, chore: &'static str| {
        let (a, b) = (a.base(), b.base());
        async move {
            let mut n = [0.0; 4];
            for (i, (base, outcome)) in [(&a, "led"), (&b, "led"), (&a, "skipped"), (&b, "skipped")]
                .into_iter()
                .enumerate()
            {
                n[i] = metric(base, &led(chore, outcome)).await?;
            }
            anyhow::Ok(n)
        }
    };
    let before = [runs(&a, &b, "purge").await?, runs(&a, &b, "alerts").await?];
    let t = Instant::now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    for (chore, before) in ["purge", "alerts"].into_iter().zip(before) {
        let after = runs(&a, &b, chore).await?;
        let d: Vec<f64> = after.iter().zip(before).map(|(x, y)| x - y).collect();
        let periods = t.elapsed().as_secs_f64();
        ensure!(
            d[0] + d[1] <= periods + 2.0 && d[2] + d[3] >= periods - 3.0,
            "chore {chore} in {periods:.1} s: led {} and {} times, skipped {} and {}: the work \
             must be done once per period, not once per instance",
            d[0],
            d[1],
            d[2],
            d[3]
        );
        println!(
            "   {chore} in {periods:.1} s: led {} / {} times, skipped {} / {} (instance a / b)",
            d[0], d[1], d[2], d[3]
        );
    }

    // An uncertain action on the alerts' tenant: begun, its lease left to
    // run out. The alert fires; reconciling it resolves the alert.
    let http = reqwest::Client::new();
    let base = balancer.base();
    let intent: Value = http
        .post(format!("{base}/v1/intents"))
        .bearer_auth(&alert_token)
        .json(&serde_json::json!({ "action": "pix.cobranca", "payload": {
            "cliente_id": "alert", "valor": "1.00",
            "chave_pix_destino": "alert@example.com", "referencia_intencao": "ALERT-1",
        }}))
        .send()
        .await?
        .json()
        .await?;
    let key = intent["key"]
        .as_str()
        .context("the intent's key")?
        .to_owned();
    let begun = http
        .post(format!("{base}/v1/actions/{key}/begin"))
        .bearer_auth(&alert_token)
        .json(&serde_json::json!({ "action": "pix.cobranca", "lease_ms": 500 }))
        .send()
        .await?;
    ensure!(begun.status() == 201, "begin: {}", begun.status());

    // Instance a dies under load; b serves alone, then a comes back.
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.kill9()?;
    println!("   instance a SIGKILLed under load");
    let before = metric(&b.base(), &led("purge", "led")).await?;
    tokio::time::sleep(Duration::from_secs(6)).await;
    // a's leases run out (two periods and a second) and b takes the chores.
    let after = metric(&b.base(), &led("purge", "led")).await?;
    ensure!(
        after > before,
        "instance b did not take the purge over from the dead instance ({before} → {after} runs)"
    );
    println!(
        "   instance b took the purge over ({} runs in 6 s)",
        after - before
    );
    let fired = |h: &Received, kind: &str| {
        h.got
            .iter()
            .filter(|(_, k, _)| k == kind)
            .map(|(id, _, _)| id.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while fired(&seen(&alert_hooks), "alert.firing") == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The on-call engineer takes the uncertain action over and records
    // what the provider said.
    let taken = http
        .post(format!("{base}/v1/actions/{key}/begin"))
        .bearer_auth(&alert_token)
        .json(&serde_json::json!({ "action": "pix.cobranca" }))
        .send()
        .await?;
    ensure!(taken.status() == 202, "the takeover: {}", taken.status());
    let taken: Value = taken.json().await?;
    let settled = http
        .post(format!("{base}/v1/actions/{key}/reconcile"))
        .bearer_auth(&alert_token)
        .json(&serde_json::json!({
            "token": taken["token"], "outcome": "failed", "error": "drill: never charged"
        }))
        .send()
        .await?;
    ensure!(
        settled.status().is_success(),
        "reconcile: {} {}",
        settled.status(),
        settled.text().await.unwrap_or_default()
    );
    a.start().await?;
    println!("   instance a restarted");
    let deadline = Instant::now() + Duration::from_secs(20);
    while fired(&seen(&alert_hooks), "alert.resolved") == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    {
        let h = seen(&alert_hooks);
        let (f, r) = (fired(&h, "alert.firing"), fired(&h, "alert.resolved"));
        ensure!(
            (f, r, h.bad_signatures) == (1, 1, 0),
            "the alert fired {f} times and resolved {r} times ({} unverified deliveries); once each",
            h.bad_signatures
        );
    }
    println!("   the alert fired once and resolved once");

    let journals = clients.finish()?;
    // Every instance shows the same numbers.
    for path in ["/v1/stats?granularity=day", "/live/data.json?window=1h"] {
        let mut seen = Vec::new();
        for srv in [&a, &b] {
            let v: Value = http
                .get(format!("{}{path}", srv.base()))
                .bearer_auth(&tokens[0])
                .send()
                .await?
                .json()
                .await?;
            seen.push(v["totals"].clone());
        }
        ensure!(
            seen[0] == seen[1],
            "{path}: instance a shows {}, instance b {}",
            seen[0],
            seen[1]
        );
    }
    println!("   /v1/stats and /live/data.json: the same totals from both instances");

    // Every charge of the first tenant reaches its endpoint, each under
    // one webhook-id, whichever relay sent it.
    let ledger: Value = http
        .get(format!("{}/v1/demo/charges/count", b.base()))
        .bearer_auth(&tokens[0])
        .send()
        .await?
        .json()
        .await?;
    let charges = ledger["count"].as_u64().context("the ledger's count")? as usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    let by_id = |h: &Received| {
        let mut m: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        for (id, kind, data) in &h.got {
            if kind == "charge.created" {
                m.entry(id.clone())
                    .or_default()
                    .insert(data["charge_id"].as_str().unwrap_or("").to_owned());
            }
        }
        m
    };
    while by_id(&seen(&hooks)).len() < charges && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    {
        let h = seen(&hooks);
        let ids = by_id(&h);
        let deliveries = h
            .got
            .iter()
            .filter(|(_, k, _)| k == "charge.created")
            .count();
        ensure!(
            h.bad_signatures == 0,
            "{} deliveries failed verification",
            h.bad_signatures
        );
        ensure!(
            ids.len() == charges,
            "{} distinct webhook-ids for {charges} charges",
            ids.len()
        );
        ensure!(
            ids.values().all(|c| c.len() == 1),
            "a webhook-id was sent for two different charges"
        );
        let charge_ids: std::collections::BTreeSet<&String> = ids.values().flatten().collect();
        ensure!(
            charge_ids.len() == charges,
            "{} distinct charges delivered of {charges}",
            charge_ids.len()
        );
        println!(
            "   relays: {charges} charges, {charges} webhook-ids, {deliveries} deliveries ({} sent \
             again after the kill, same id)",
            deliveries - charges
        );
    }
    b.stop()?;
    let report = settle_and_check(&mut a, db, &journals).await?;
    println!(
        "   two instances: {} conversations, {} intents acknowledged, {} charges; clients met {} \
         connection errors and {} 5xx, {} takeovers; duplicates 0, lost 0, integrity ok",
        report.conversations,
        report.intents,
        report.charges,
        report.connection_errors,
        report.unavailable,
        report.takeovers,
    );
    drop(balancer);
    Ok(())
}
