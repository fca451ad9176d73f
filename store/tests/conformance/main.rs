//! The store's conformance suite: every test runs on SQLite and on
//! PostgreSQL (when `IDEM_TEST_POSTGRES_URL` is set; otherwise the Postgres
//! half says SKIPPED loudly). Each Postgres test gets its own schema, so the
//! tests run in parallel without seeing each other. One module per concern,
//! as a driver suite is split; this file holds the harness they share.
#![allow(clippy::unwrap_used)]

use idem_core::{ActionType, Catalog, IdempotencyKey, KeyDeriver, Payload, Secret, TenantId};
use idem_store::stats::Granularity;
use idem_store::*;
use idem_testkit::TestDb;
use std::sync::Arc;
use std::time::Duration;

const T0: Millis = 1_790_000_000_000;
const SECRET: &[u8] = b"conformance-suite-secret";

struct H {
    store: Store,
    clock: ManualClock,
    tenant: TenantId,
    db: TestDb,
}

fn options(clock: &ManualClock) -> Options {
    let deriver = KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap());
    let mut o = Options::new(Arc::new(Catalog::builtin()), Arc::new(deriver));
    o.clock = Arc::new(clock.clone());
    o.flush_every = None; // tests flush explicitly
    o
}

async fn on(db: TestDb) -> H {
    let clock = ManualClock::new(T0);
    let store = Store::connect(&db.url, options(&clock)).await.unwrap();
    store.migrate().await.unwrap();
    H {
        store,
        clock,
        tenant: TenantId::try_from("loja-do-zé").unwrap(),
        db,
    }
}

async fn sqlite() -> H {
    on(TestDb::sqlite()).await
}

/// A fresh schema in the test database, or None when Postgres is not configured.
async fn postgres() -> Option<H> {
    Some(on(TestDb::postgres("t").await?).await)
}

impl H {
    async fn done(self) {
        self.store.close().await;
        self.db.done().await;
    }
    fn tenant(&self, name: &str) -> TenantId {
        TenantId::try_from(name).unwrap()
    }
}

mod actions;
mod events;
mod faults;
mod http_keys;
mod intents;
mod live;
mod outbox;
mod retention;
mod saved;
mod statistics;
mod tenants;

/// The tenant's actions as the monitor lists them now (up to 10 keys).
async fn live_now(h: &H, tenant: &TenantId) -> idem_store::LiveActions {
    let mut s = h.store.session().await.unwrap();
    s.live_actions(tenant, h.store.now_ms(), 10).await.unwrap()
}

fn pix(reference: &str, valor: &str) -> String {
    serde_json::json!({
        "cliente_id": "cli-1",
        "valor": valor,
        "chave_pix_destino": "+55 11 98888-7777",
        "referencia_intencao": reference,
        "texto_do_modelo": "irrelevant: never enters the key",
    })
    .to_string()
}

async fn record(h: &H, tenant: &TenantId, json: &str) -> RecordedIntent {
    let p = Payload::from_json(json).unwrap();
    h.store
        .record_intent(tenant, "pix.cobranca", &p)
        .await
        .unwrap()
}

fn key(h: &H, json: &str) -> IdempotencyKey {
    let deriver = KeyDeriver::new(&Secret::new(SECRET.to_vec()).unwrap());
    deriver
        .derive(
            h.store.catalog(),
            &h.tenant,
            "pix.cobranca",
            &Payload::from_json(json).unwrap(),
            None,
        )
        .unwrap()
        .key
}

fn k(n: u8) -> IdempotencyKey {
    IdempotencyKey::try_from(format!("{:064x}", u128::from(n) + 1_000).as_str()).unwrap()
}

fn pix_action() -> ActionType {
    ActionType::try_from("pix.cobranca").unwrap()
}

/// Records each of `refs` `times` times, all at once (the intent writer
/// batches them), through `store`.
async fn record_all(store: &Store, t: &TenantId, refs: std::ops::Range<u32>, times: u32) {
    let tasks: Vec<_> = refs
        .flat_map(|i| (0..times).map(move |_| i))
        .map(|i| {
            let store = store.clone();
            let t = t.clone();
            tokio::spawn(async move {
                let json = pix(&format!("J-{i}"), "10.00");
                let p = Payload::from_json(&json).unwrap();
                store.record_intent(&t, "pix.cobranca", &p).await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

async fn hour(h: &H, t: &TenantId) -> stats::Report {
    h.store
        .stats(t, Granularity::Hour, T0 - 3_600_000, T0 + 3_600_000)
        .await
        .unwrap()
}
