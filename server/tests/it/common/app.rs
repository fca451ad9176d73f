//! The application under test, as zero-to-production's `TestApp`: a server
//! started through `Application::build` on 127.0.0.1 port 0 with its store
//! and the clock tests move, and the requests and reads the areas repeat,
//! as methods.

use super::{config, spawn_app, test_clock, TestClock};
use idem_core::TenantId;
use idem_server::config::Config;
use idem_server::http::AppState;
use idem_store::Store;
use idem_testkit::TestDb;

/// A running application and what a test reaches it with.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The application's state (its store included).
    pub state: AppState,
    /// Its store, to arrange what a test needs without the API.
    pub store: Store,
    /// Its store's clock: tests move it instead of sleeping.
    pub clock: TestClock,
    /// A client that follows no redirect, so a test reads the 303 itself.
    pub http: reqwest::Client,
    /// Its database's address (the tests' own reads go there).
    pub db_url: String,
    /// The database, when the app made it ([`TestApp::sqlite`]).
    _db: Option<TestDb>,
}

/// A client that follows no redirect.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl TestApp {
    /// Starts the application on the database at `url`, with the test
    /// configuration changed by `configure`.
    pub async fn spawn(url: &str, configure: impl FnOnce(&mut Config)) -> Self {
        let clock = test_clock();
        let mut c = config(url, &clock);
        configure(&mut c);
        let (base, state) = spawn_app(c).await;
        TestApp {
            base,
            store: state.api.store.clone(),
            state,
            clock,
            http: http_client(),
            db_url: url.to_owned(),
            _db: None,
        }
    }

    /// Starts the application on a SQLite file of its own.
    pub async fn sqlite() -> Self {
        Self::sqlite_with(|_| {}).await
    }

    /// Starts the application on a SQLite file of its own, with the test
    /// configuration changed by `configure`.
    pub async fn sqlite_with(configure: impl FnOnce(&mut Config)) -> Self {
        let db = TestDb::sqlite();
        let mut app = Self::spawn(&db.url, configure).await;
        app._db = Some(db);
        app
    }

    /// The address of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Saves a scenario from the calculator's form (`POST /s`) as an
    /// anonymous visitor; the short link it redirects to (`/s/{id}`).
    pub async fn save_scenario(&self, query: &str, name: &str) -> String {
        let res = self
            .http
            .post(self.url("/s"))
            .form(&[("q", query), ("name", name)])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_redirection(), "{}", res.status());
        res.headers()["location"].to_str().unwrap().to_owned()
    }

    /// The first column of `sql`'s rows, as text, read straight from the
    /// database (SQLite or PostgreSQL): what no API shows.
    pub async fn texts(&self, sql: &str) -> Vec<String> {
        use sqlx::{Connection as _, Row as _};
        if self.db_url.starts_with("sqlite:") {
            let mut c = sqlx::SqliteConnection::connect(&self.db_url).await.unwrap();
            let rows = sqlx::query(sql).fetch_all(&mut c).await.unwrap();
            rows.iter().map(|r| r.get(0)).collect()
        } else {
            let mut c = sqlx::PgConnection::connect(&self.db_url).await.unwrap();
            let rows = sqlx::query(sql).fetch_all(&mut c).await.unwrap();
            rows.iter().map(|r| r.get(0)).collect()
        }
    }
}

/// Creates tenant `name` (named as its id) in `store`; its token.
pub async fn tenant(store: &Store, name: &str) -> String {
    tenant_named(store, name, name).await
}

/// Creates tenant `id` under the display name `name` in `store`; its token.
pub async fn tenant_named(store: &Store, id: &str, name: &str) -> String {
    store
        .create_tenant(&TenantId::try_from(id).unwrap(), name)
        .await
        .unwrap()
        .expose()
        .to_owned()
}
