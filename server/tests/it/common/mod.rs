//! What the test areas share: the state around a store, a server on
//! 127.0.0.1 port 0 ([`TestApp`]), in process or as a child `idem serve`.

mod app;

pub use app::{http_client, tenant, tenant_named, TestApp};

use idem_core::{Catalog, KeyDeriver, Secret};
use idem_server::config::{Config, SecretSource};
use idem_server::http::AppState;
use idem_server::startup::Application;
use idem_store::{Clock, SystemClock};
use idem_store::{Options, Store};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The secret every HTTP test derives with.
pub const SECRET: &[u8] = b"test";

/// Opens and migrates the store at `url` with the built-in catalog.
pub async fn store(url: &str) -> Store {
    let catalog = Arc::new(Catalog::builtin());
    let deriver = Arc::new(KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap()));
    let store = Store::connect(url, Options::new(catalog, deriver))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
}

/// The system clock plus an offset that tests move forward (lease expiry,
/// redelivery delays) instead of sleeping. Time still flows, so the live
/// feed, which refreshes when its read time changes, keeps working.
#[derive(Debug, Clone, Default)]
pub struct TestClock(Arc<AtomicI64>);

impl TestClock {
    /// Moves time forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.0
            .fetch_add(i64::try_from(by.as_millis()).unwrap(), Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.0.load(Ordering::SeqCst)
    }
}

/// A fresh [`TestClock`] at the system's now.
pub fn test_clock() -> TestClock {
    TestClock::default()
}

/// The configuration every HTTP test starts from: `url`, 127.0.0.1 port 0
/// (so the live monitor is open unless an admin token is given), the
/// built-in catalog, the test secret, the demo provider mounted.
/// Its store runs on `clock`, which the test may move forward.
pub fn config(url: &str, clock: &TestClock) -> Config {
    Config {
        database_url: url.to_owned(),
        secret: SecretSource::Given(Secret::new(SECRET.to_vec()).unwrap()),
        demo: true,
        clock: Arc::new(clock.clone()),
        ..Config::embedded(std::env::temp_dir())
    }
}

/// Starts the application exactly as `idem serve` does, through
/// [`Application::build`], and serves it in the background; returns the
/// base URL and the state (its store included).
pub async fn spawn_app(config: Config) -> (String, AppState) {
    let app = Application::build(config).await.unwrap();
    let base = app.base_url();
    let state = app.state().clone();
    tokio::spawn(app.run_until_stopped());
    (base, state)
}

/// [`spawn_app`] on `url` with the default test configuration.
pub async fn serve(url: &str, clock: &TestClock) -> (String, AppState) {
    spawn_app(config(url, clock)).await
}

/// The body of `GET url`, as text (a page, for tests that read markup).
pub async fn page(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// One strategy's entry in an `idem simulate --json` report.
pub fn by_strategy(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["strategy"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
        .clone()
}

/// Sends `req`, checks it succeeded and reads its JSON body (the repeated
/// send-unwrap-json-unwrap of a test that only wants the document).
pub async fn get_json(req: reqwest::RequestBuilder) -> serde_json::Value {
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `idem serve` as a child process, so a stack overflow (which aborts the
/// whole process) shows as a dead child rather than a failed test thread.
pub struct ChildServer {
    child: Child,
    /// The server's base URL.
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ChildServer {
    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `idem serve` as a child process on `url`, with `extra` flags and `env`
/// (set for the child alone: the tests of this binary share one
/// environment), once it answers `/healthz`.
pub async fn child_serve(url: &str, extra: &[&str], env: &[(&str, &str)]) -> ChildServer {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_idem"));
    cmd.args(["serve", "--addr", &addr, "--data-dir"])
        .arg(dir.path())
        .args(["--database-url", url])
        .envs(env.iter().copied())
        .args(extra)
        .env("IDEMPOTENCY_HMAC_KEY", "security-test-secret")
        .env_remove("IDEM_ADMIN_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut c = ChildServer {
        child: cmd.spawn().unwrap(),
        base: format!("http://{addr}"),
        _dir: dir,
    };
    let t = Instant::now();
    loop {
        assert!(c.alive(), "idem serve exited before it was ready");
        if let Ok(r) = reqwest::get(format!("{}/healthz", c.base)).await {
            if r.status() == 200 {
                break;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "idem serve never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c
}

/// The corpus of hand-computed contracts (`testkit/fixtures/contracts.json`).
pub fn contracts() -> Vec<serde_json::Value> {
    let doc: serde_json::Value = serde_json::from_str(idem_testkit::CONTRACTS).unwrap();
    doc["contracts"].as_array().unwrap().clone()
}

/// A pt-BR figure as the English page, table and CSV write it: separators
/// swapped, the symbol against the number ("R$ 1.782,00" → "R$1,782.00",
/// "US$ 0,02" → "$0.02").
/// What the English page shows for an output of a corpus contract: its
/// `shown_en_US` where the contract gives one (symbols that differ by
/// language, JP¥ and ¥), else [`in_english`] of the pt-BR figure.
pub fn shown_in_english(contract: &serde_json::Value, key: &str, pt: &str) -> String {
    contract["shown_en_US"][key]
        .as_str()
        .map_or_else(|| in_english(pt), str::to_owned)
}

pub fn in_english(pt: &str) -> String {
    let swapped: String = pt
        .chars()
        .map(|ch| match ch {
            '.' => ',',
            ',' => '.',
            other => other,
        })
        .collect();
    match swapped.split_once(' ') {
        Some(("US$", n)) => format!("${n}"),
        Some((sym, n)) => format!("{sym}{n}"),
        None => swapped,
    }
}

/// Reads from `sock` until the server closes it; how long that took.
pub fn closed_after(mut sock: std::net::TcpStream, within: Duration) -> Duration {
    use std::io::Read;
    sock.set_read_timeout(Some(within + Duration::from_secs(3)))
        .unwrap();
    let t = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => continue,
        }
    }
    let took = t.elapsed();
    assert!(took < within + Duration::from_secs(2), "open for {took:?}");
    took
}
