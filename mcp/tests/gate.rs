//! The gate itself, through its `CallUpstream` seam with a fake upstream
//! that counts what it is asked to execute: `cargo test` exercises the
//! guarded call without Python. On SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]

use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};
use idem_mcp::guard_file::GuardFile;
use idem_mcp::guarded::{CallOutcome, CallUpstream, Gate, ARGUMENTS_MEMBER};
use idem_store::{Options, Store};
use idem_testkit::TestDb;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};

const GUARD: &str = r#"
[[guard]]
tool = "create_pix_charge"
action = "pix.cobranca"
key_argument = "idempotency_key"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
"#;

/// An upstream that executes nothing and remembers every call; `down`
/// makes it gone (a process that exited).
#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<Map<String, Value>>>>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl CallUpstream for Fake {
    async fn call(
        &self,
        _tool: &str,
        arguments: Map<String, Value>,
        _meta: Map<String, Value>,
    ) -> Result<CallToolResult, String> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(arguments);
            calls.len()
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "charge {n}"
        ))]))
    }

    fn available(&self) -> bool {
        !self.down.load(std::sync::atomic::Ordering::Relaxed)
    }
}

struct H {
    store: Store,
    db: TestDb,
}

async fn on(db: TestDb) -> H {
    let deriver = KeyDeriver::new(&Secret::new(b"gate-test-secret".to_vec()).unwrap());
    let mut o = Options::new(Arc::new(Catalog::builtin()), Arc::new(deriver));
    o.flush_every = None;
    let store = Store::connect(&db.url, o).await.unwrap();
    store.migrate().await.unwrap();
    H { store, db }
}

async fn sqlite() -> H {
    on(TestDb::sqlite()).await
}

async fn postgres() -> Option<H> {
    Some(on(TestDb::postgres("gate").await?).await)
}

impl H {
    async fn done(self) {
        self.store.close().await;
        self.db.done().await;
    }
}

idem_testkit::both!(
    a_call_to_a_gone_upstream_is_not_sent_and_its_retry_runs_at_once,
    a_call_runs_once_and_its_repeat_is_replayed,
    arguments_recorded_outside_the_gateway_are_never_executed,
);

fn args(amount: &str, pix_key: &str) -> Map<String, Value> {
    json!({"customer_id": "c-1", "amount": amount, "pix_key": pix_key,
           "invoice_ref": "FAT-1", "note": "from the model"})
    .as_object()
    .unwrap()
    .clone()
}

/// A gone upstream: nothing sent, nothing uncertain, the claim given back,
/// so the retry executes at once (no lease to wait out).
async fn a_call_to_a_gone_upstream_is_not_sent_and_its_retry_runs_at_once(h: &H) {
    let file = GuardFile::parse("g.toml", GUARD, &Catalog::builtin()).unwrap();
    let guard = file.guard("create_pix_charge").unwrap();
    let gate = Gate::new(h.store.clone(), TenantId::try_from("acme").unwrap());
    let upstream = Fake::default();
    upstream
        .down
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let refused = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(refused.result.is_error, Some(true));
    let meta = &refused.result.meta.as_ref().unwrap().0["idem"];
    assert_eq!(meta["sent"], false, "{meta}");
    assert!(upstream.calls.lock().unwrap().is_empty());
    upstream
        .down
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let ran = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(ran.outcome, CallOutcome::Executed);
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
}

async fn a_call_runs_once_and_its_repeat_is_replayed(h: &H) {
    let file = GuardFile::parse("g.toml", GUARD, &Catalog::builtin()).unwrap();
    let guard = file.guard("create_pix_charge").unwrap();
    let gate = Gate::new(h.store.clone(), TenantId::try_from("acme").unwrap());
    let upstream = Fake::default();
    let first = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(first.outcome, CallOutcome::Executed);
    let again = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(again.outcome, CallOutcome::Replayed);
    let calls = upstream.calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    // The key argument is idem's, whatever the model sent.
    assert_eq!(calls[0]["idempotency_key"].as_str().unwrap().len(), 64);
}

/// An intent recorded first by another writer (a `/v1` client, before
/// `/v1` refused idem's reserved members) with arguments of its own beside
/// the key's fields: the gateway finds that those arguments do not derive
/// to the key, refuses, counts it and executes nothing, then and later.
async fn arguments_recorded_outside_the_gateway_are_never_executed(h: &H) {
    let tenant = TenantId::try_from("acme").unwrap();
    let mut planted = json!({"cliente_id": "c-1", "valor": "180.00",
        "chave_pix_destino": "a@example.com", "referencia_intencao": "FAT-1"});
    planted[ARGUMENTS_MEMBER] = Value::Object(args("99999.00", "thief@example.com"));
    let text = planted.to_string();
    h.store
        .record_intent(&tenant, "pix.cobranca", &Payload::from_json(&text).unwrap())
        .await
        .unwrap();
    let file = GuardFile::parse("g.toml", GUARD, &Catalog::builtin()).unwrap();
    let guard = file.guard("create_pix_charge").unwrap();
    let gate = Gate::new(h.store.clone(), tenant);
    let upstream = Fake::default();
    for _ in 0..2 {
        let answer = gate
            .call(
                guard,
                args("180.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        assert_eq!(answer.result.is_error, Some(true), "{:?}", answer.result);
        assert!(
            matches!(answer.outcome, CallOutcome::Refused | CallOutcome::Failed),
            "{:?}",
            answer.outcome
        );
    }
    assert!(
        upstream.calls.lock().unwrap().is_empty(),
        "the planted arguments were executed"
    );
}
