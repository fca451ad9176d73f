//! The gate itself, through its `CallUpstream` seam with a fake upstream
//! that counts what it is asked to execute: `cargo test` exercises the
//! guarded call without Python. On SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]

use idem_core::IdempotencyKey;
use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};
use idem_mcp::bind::BoundGuard;
use idem_mcp::guard_file::GuardFile;

/// `tool`'s guard as the gateway runs it, for an upstream that declares no
/// `outputSchema`.
fn bound(file: &GuardFile, tool: &str) -> BoundGuard {
    BoundGuard {
        guard: file.guard(tool).expect("guarded").clone(),
        output_schema: None,
    }
}
use idem_mcp::guarded::{CallOutcome, CallUpstream, GuardedCalls, Unanswered, ARGUMENTS_MEMBER};
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
/// `lose` makes the guarded tool's answers get lost (the outcome
/// unknown); `lookup` is what any other tool (a lookup) answers.
#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<Map<String, Value>>>>,
    metas: Arc<Mutex<Vec<Map<String, Value>>>>,
    down: Arc<std::sync::atomic::AtomicBool>,
    lose: Arc<std::sync::atomic::AtomicBool>,
    lookup: Arc<Mutex<Option<CallToolResult>>>,
    lookups: Arc<std::sync::atomic::AtomicUsize>,
    /// The connection is refused: the request never leaves.
    refuse: Arc<std::sync::atomic::AtomicBool>,
    /// The guarded tool answers isError (a facilitator refusing a
    /// replayed payment); its calls are still counted.
    err: Arc<std::sync::atomic::AtomicBool>,
}

impl CallUpstream for Fake {
    async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
    ) -> Result<CallToolResult, Unanswered> {
        if tool != "create_pix_charge" {
            self.lookups
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return self
                .lookup
                .lock()
                .unwrap()
                .clone()
                .ok_or_else(|| Unanswered::Lost("no lookup answer".to_owned()));
        }
        if self.refuse.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Unanswered::NotSent("connection refused".into()));
        }
        self.metas.lock().unwrap().push(meta);
        let n = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(arguments);
            calls.len()
        };
        if self.lose.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("the answer was lost".to_owned().into());
        }
        if self.err.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "invalid_exact_evm_nonce_already_used",
            )]));
        }
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
    a_key_read_from_meta_pays_once_whatever_a_retry_signs,
    frozen_meta_that_is_too_big_deep_or_holds_nul_is_refused_unrecorded,
    a_lookup_that_errs_or_answers_no_json_says_nothing,
    a_refused_connection_is_not_sent_and_its_retry_runs_at_once,
    a_resend_answered_with_an_error_is_never_the_reconciled_result,
    a_looked_up_record_of_another_intent_is_never_settled_as_this_one,
    a_divergent_call_supersedes_a_failed_intent_only_where_the_guard_opts_in,
);

const ON: std::sync::atomic::Ordering = std::sync::atomic::Ordering::Relaxed;

fn idem_of(result: &CallToolResult) -> Value {
    result.meta.as_ref().unwrap().0["idem"].clone()
}

async fn action_of(h: &H, tenant: &TenantId, key: &Value) -> idem_store::Action {
    let key = IdempotencyKey::try_from(key.as_str().unwrap()).unwrap();
    h.store
        .session()
        .await
        .unwrap()
        .action(tenant, &key)
        .await
        .unwrap()
}

/// A URL upstream refusing the connection: the request never left, so the
/// claim is given back as a dead stdio upstream's is (not uncertain), and
/// the retry executes at once.
async fn a_refused_connection_is_not_sent_and_its_retry_runs_at_once(h: &H) {
    let file = GuardFile::parse("g.toml", GUARD, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let tenant = TenantId::try_from("acme").unwrap();
    let gate = GuardedCalls::new(h.store.clone(), tenant.clone());
    let upstream = Fake::default();
    upstream.refuse.store(true, ON);
    let refused = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(refused.result.is_error, Some(true));
    assert_eq!(refused.outcome, CallOutcome::Failed);
    let idem = idem_of(&refused.result);
    assert_eq!(idem["sent"], false, "{idem}");
    assert_eq!(idem["upstream"], "unreachable", "{idem}");
    let action = action_of(h, &tenant, &idem["key"]).await;
    assert_eq!(action.state, idem_store::ActionState::Failed, "{action:?}");
    assert_eq!(action.retryable, Some(true));
    upstream.refuse.store(false, ON);
    let ran = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(ran.outcome, CallOutcome::Executed, "{:?}", ran.result);
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
}

/// `on_uncertain = "resend"` against a provider that refuses a replayed
/// payment: its error says nothing of the first send, so the action stays
/// uncertain with that error as the reason, never "reconciled".
async fn a_resend_answered_with_an_error_is_never_the_reconciled_result(h: &H) {
    let text = GUARD.replace("key_argument", "on_uncertain = \"resend\"\nkey_argument");
    let file = GuardFile::parse("g.toml", &text, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let tenant = TenantId::try_from("acme").unwrap();
    let gate = GuardedCalls::new(h.store.clone(), tenant.clone());
    let upstream = Fake::default();
    upstream.lose.store(true, ON);
    let lost = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(lost.outcome, CallOutcome::Uncertain);
    upstream.lose.store(false, ON);
    upstream.err.store(true, ON);
    for _ in 0..2 {
        let resent = gate
            .call(
                guard,
                args("180.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        assert_eq!(resent.result.is_error, Some(true));
        assert_eq!(
            resent.outcome,
            CallOutcome::Uncertain,
            "{:?}",
            resent.result
        );
        let idem = idem_of(&resent.result);
        assert_eq!(idem["reconciled"], false, "{idem}");
        assert_eq!(idem["source"], "upstream", "{idem}");
        let said = format!("{:?}", resent.result.content);
        assert!(said.contains("nonce_already_used"), "{said}");
        assert!(said.contains("work queue"), "{said}");
        let action = action_of(h, &tenant, &idem["key"]).await;
        assert_eq!(
            action.state,
            idem_store::ActionState::Uncertain,
            "{action:?}"
        );
        assert!(!action.reconciled);
        assert!(
            action
                .error
                .as_deref()
                .unwrap_or("")
                .contains("nonce_already_used"),
            "{action:?}"
        );
    }
}

/// A lookup by reference that finds a record of another intent (another
/// tenant's charge with the same reference, through one upstream; another
/// amount) never settles this action: `matches` checks the record's fields
/// against the frozen ones, normalized as the key is.
async fn a_looked_up_record_of_another_intent_is_never_settled_as_this_one(h: &H) {
    let text = format!(
        "{}
[guard.lookup]
tool = \"get_charge\"
arguments = {{ ref = \"invoice_ref\" }}
executed = {{ pointer = \"/status\", in = [\"paid\"] }}
not_executed = {{ pointer = \"/status\", in = [\"none\"] }}
matches = {{ valor = \"/amount\", cliente_id = \"/customer\" }}
",
        GUARD.replace("key_argument", "on_uncertain = \"lookup\"\nkey_argument")
    );
    let file = GuardFile::parse("g.toml", &text, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let tenant = TenantId::try_from("beta").unwrap();
    let gate = GuardedCalls::new(h.store.clone(), tenant.clone());
    let upstream = Fake::default();
    upstream.lose.store(true, ON);
    let record = |customer: &str, amount: &str| {
        CallToolResult::success(vec![ContentBlock::text(
            json!({"status": "paid", "customer": customer, "amount": amount, "pix_key": "alpha@example.com"})
                .to_string(),
        )])
    };
    // Another customer's charge under the same reference.
    *upstream.lookup.lock().unwrap() = Some(record("alpha-customer", "180.00"));
    let crossed = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(crossed.result.is_error, Some(true), "{:?}", crossed.result);
    let idem = idem_of(&crossed.result);
    assert_eq!(idem["lookup"], "unknown", "{idem}");
    let said = format!("{:?}", crossed.result.content);
    assert!(said.contains("not this action's"), "{said}");
    assert!(
        !said.contains("alpha"),
        "the agent was shown another record's data: {said}"
    );
    // The person settling it sees both values.
    let action = action_of(h, &tenant, &idem["key"]).await;
    let why = action.error.unwrap_or_default();
    assert!(
        why.contains("alpha-customer") && why.contains("c-1"),
        "{why}"
    );
    // Another amount.
    *upstream.lookup.lock().unwrap() = Some(record("c-1", "99.00"));
    let other = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    assert_eq!(idem_of(&other.result)["lookup"], "unknown");
    let action = action_of(h, &tenant, &idem["key"]).await;
    assert_eq!(action.state, idem_store::ActionState::Uncertain);
    // Its own record, written another way (180 for 180.00): settled.
    *upstream.lookup.lock().unwrap() = Some(record("c-1", "180"));
    let settled = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    let idem = idem_of(&settled.result);
    assert_eq!(idem["lookup"], "executed", "{:?}", settled.result);
    assert_eq!(idem["reconciled"], true);
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
}

const META_GUARD: &str = r#"
[[guard]]
tool = "create_pix_charge"
action = "pix.cobranca"
freeze_meta = ["x402/payment"]
on_uncertain = "resend"
[guard.fields]
cliente_id = "meta:/x402~1payment/payload/from"
valor = "meta:/x402~1payment/payload/value"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
"#;

fn payment(from: &str, value: &str, nonce: &str) -> Map<String, Value> {
    json!({"x402/payment": {"payload": {"from": from, "value": value, "nonce": nonce}}, "trace": nonce})
        .as_object()
        .unwrap()
        .clone()
}

/// Keyed on values in `_meta`: a retry that signs anew (a new nonce) is the
/// same intent, replayed; the upstream only ever got the first payment.
/// Another payer is another key for the same reference: diverged.
async fn a_key_read_from_meta_pays_once_whatever_a_retry_signs(h: &H) {
    let file = GuardFile::parse("g.toml", META_GUARD, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), TenantId::try_from("acme").unwrap());
    let upstream = Fake::default();
    let a = args("1", "a@example.com");
    let first = gate
        .call(guard, a.clone(), payment("0xA", "180.00", "n1"), &upstream)
        .await;
    assert_eq!(first.outcome, CallOutcome::Executed, "{:?}", first.result);
    let again = gate
        .call(guard, a.clone(), payment("0xA", "180.00", "n2"), &upstream)
        .await;
    assert_eq!(again.outcome, CallOutcome::Replayed);
    let idem = &again.result.meta.as_ref().unwrap().0["idem"];
    assert_eq!(idem["diverged_meta"], json!(["x402/payment"]), "{idem}");
    assert_eq!(
        idem["key"],
        first.result.meta.as_ref().unwrap().0["idem"]["key"]
    );
    let other = gate
        .call(guard, a.clone(), payment("0xB", "180.00", "n3"), &upstream)
        .await;
    assert!(other.diverged, "{:?}", other.result);
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
    let sent = upstream.metas.lock().unwrap()[0].clone();
    assert_eq!(sent["x402/payment"]["payload"]["nonce"], "n1");
    assert_eq!(sent["trace"], "n1", "entries not frozen pass as sent");
    // A call without the entry its key reads is refused, nothing recorded.
    let bare = gate.call(guard, a, Map::new(), &upstream).await;
    assert_eq!(bare.result.is_error, Some(true));
    assert!(
        format!("{:?}", bare.result.content).contains("missing _meta entry"),
        "{:?}",
        bare.result.content
    );
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
}

async fn frozen_meta_that_is_too_big_deep_or_holds_nul_is_refused_unrecorded(h: &H) {
    let file = GuardFile::parse("g.toml", META_GUARD, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), TenantId::try_from("acme").unwrap());
    let upstream = Fake::default();
    let mut deep = json!("x");
    for _ in 0..80 {
        deep = json!([deep]);
    }
    let cases = [
        (json!("x".repeat(70_000)), "bytes"),
        (deep, "nest too deep"),
        (json!("a\u{0}b"), "NUL"),
    ];
    for (extra, says) in cases {
        let mut meta = payment("0xA", "180.00", "n1");
        meta["x402/payment"]["extra"] = extra;
        let refused = gate
            .call(guard, args("1", "a@example.com"), meta, &upstream)
            .await;
        assert_eq!(refused.result.is_error, Some(true), "{says}");
        let text = format!("{:?}", refused.result.content);
        assert!(text.contains(says), "{says}: {text}");
        assert_eq!(
            refused.result.meta.as_ref().unwrap().0["idem"]["key"],
            Value::Null
        );
    }
    assert!(upstream.calls.lock().unwrap().is_empty());
    // Nothing was recorded: a good call afterwards is a first call.
    let ok = gate
        .call(
            guard,
            args("1", "a@example.com"),
            payment("0xA", "180.00", "n1"),
            &upstream,
        )
        .await;
    assert_eq!(ok.outcome, CallOutcome::Executed, "{:?}", ok.result);
}

/// A lookup answering isError, or text that is not JSON, says nothing:
/// the action stays uncertain, refused, and is asked again next time.
async fn a_lookup_that_errs_or_answers_no_json_says_nothing(h: &H) {
    let text = format!(
        "{}
[guard.lookup]
tool = \"get_charge\"
arguments = {{ ref = \"invoice_ref\" }}
executed = {{ pointer = \"/status\", in = [\"paid\"] }}
not_executed = {{ pointer = \"/status\", in = [\"none\"] }}
",
        GUARD.replace("key_argument", "on_uncertain = \"lookup\"\nkey_argument")
    );
    let file = GuardFile::parse("g.toml", &text, &Catalog::builtin()).unwrap();
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), TenantId::try_from("acme").unwrap());
    let upstream = Fake::default();
    upstream
        .lose
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let answers = [
        CallToolResult::error(vec![ContentBlock::text("{\"status\": \"paid\"}")]),
        CallToolResult::success(vec![ContentBlock::text("paid, I think")]),
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        *upstream.lookup.lock().unwrap() = Some(answer);
        let out = gate
            .call(
                guard,
                args("180.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        assert_eq!(out.result.is_error, Some(true), "{:?}", out.result);
        let idem = &out.result.meta.as_ref().unwrap().0["idem"];
        assert_eq!(idem["lookup"], "unknown", "{idem}");
        assert_eq!(idem["reconciled"], false);
        assert_eq!(
            upstream.lookups.load(std::sync::atomic::Ordering::Relaxed),
            i + 1,
            "asked once per call"
        );
    }
    assert_eq!(upstream.calls.lock().unwrap().len(), 1, "never sent again");
    // Once the provider says it was paid, it is settled from its answer.
    *upstream.lookup.lock().unwrap() = Some(CallToolResult::success(vec![ContentBlock::text(
        "{\"status\": \"paid\", \"id\": \"ch_1\"}",
    )]));
    let settled = gate
        .call(
            guard,
            args("180.00", "a@example.com"),
            Map::new(),
            &upstream,
        )
        .await;
    let idem = &settled.result.meta.as_ref().unwrap().0["idem"];
    assert_eq!(idem["lookup"], "executed", "{idem}");
    assert_eq!(idem["reconciled"], true);
    assert_eq!(upstream.calls.lock().unwrap().len(), 1);
}

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
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), TenantId::try_from("acme").unwrap());
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
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), TenantId::try_from("acme").unwrap());
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
    let guard = &bound(&file, "create_pix_charge");
    let gate = GuardedCalls::new(h.store.clone(), tenant);
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

/// A first call the provider refused (a wrong total): without the opt-in,
/// every corrected retry meets the frozen wrong intent; with
/// `supersede_failed = true`, the corrected call supersedes it and runs
/// once, under a key of its own, and a call matching the old values is then
/// the divergent one.
async fn a_divergent_call_supersedes_a_failed_intent_only_where_the_guard_opts_in(h: &H) {
    // (`errors = "final"` records the provider's error as the outcome, to
    // replay: a known outcome, never superseded.)
    for (opt_in, errors) in [(false, "retryable"), (true, "retryable")] {
        let text = GUARD.replace(
            "key_argument",
            &format!("errors = \"{errors}\"\nsupersede_failed = {opt_in}\nkey_argument"),
        );
        let file = GuardFile::parse("g.toml", &text, &Catalog::builtin()).unwrap();
        let guard = &bound(&file, "create_pix_charge");
        let tenant = TenantId::try_from(format!("sup-{opt_in}-{errors}").as_str()).unwrap();
        let gate = GuardedCalls::new(h.store.clone(), tenant.clone());
        let upstream = Fake::default();
        upstream.err.store(true, ON);
        let wrong = gate
            .call(
                guard,
                args("180.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        assert_eq!(wrong.result.is_error, Some(true));
        let old_key = idem_of(&wrong.result)["key"].clone();
        upstream.err.store(false, ON);
        let fixed = gate
            .call(
                guard,
                args("190.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        let idem = idem_of(&fixed.result);
        let sent: Vec<String> = upstream
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| c["amount"].as_str().unwrap().to_owned())
            .collect();
        if !opt_in {
            // The frozen wrong intent runs again, and is refused again.
            assert!(fixed.diverged);
            assert_eq!(sent, ["180.00", "180.00"], "{errors}");
            continue;
        }
        assert_eq!(
            fixed.outcome,
            CallOutcome::Executed,
            "{errors}: {:?}",
            fixed.result
        );
        assert_eq!(idem["superseded"], old_key, "{idem}");
        assert_ne!(idem["key"], old_key);
        assert_eq!(
            idem["diverged"], false,
            "the new values are the intent's now"
        );
        assert_eq!(sent, ["180.00", "190.00"], "{errors}");
        let key_sent = upstream.calls.lock().unwrap()[1]["idempotency_key"].clone();
        assert_eq!(key_sent, idem["key"], "the provider sees the new key");
        // The old values again: the completed new intent answers, diverged.
        let old = gate
            .call(
                guard,
                args("180.00", "a@example.com"),
                Map::new(),
                &upstream,
            )
            .await;
        assert_eq!(old.outcome, CallOutcome::Replayed);
        assert!(old.diverged);
        assert_eq!(upstream.calls.lock().unwrap().len(), 2);
        let history = h
            .store
            .session()
            .await
            .unwrap()
            .intent_history(&tenant, "pix.cobranca", "FAT-1")
            .await
            .unwrap();
        assert!(
            history[0].reason.contains("guard of create_pix_charge"),
            "{history:?}"
        );
        assert!(
            history[0].reason.contains("amount 190.00 (was 180.00)"),
            "{history:?}"
        );
    }
}
