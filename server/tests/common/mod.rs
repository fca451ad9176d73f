//! What the HTTP test binaries share: the state around a store, and a
//! server on 127.0.0.1 port 0.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use idem_core::{Catalog, KeyDeriver, Secret};
use idem_server::config::{Config, SecretSource};
use idem_server::http::AppState;
use idem_server::startup::Application;
use idem_store::{Clock, SystemClock};
use idem_store::{Options, Store};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
