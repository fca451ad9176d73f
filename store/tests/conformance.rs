//! The store's conformance suite: every test runs on SQLite and on
//! PostgreSQL (when `IDEM_TEST_POSTGRES_URL` is set; otherwise the Postgres
//! half says SKIPPED loudly). Each Postgres test gets its own schema, so the
//! tests run in parallel without seeing each other.
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

idem_testkit::both!(
    first_write_wins_and_redeliveries_are_counted,
    the_key_is_the_core_derivation,
    divergent_redelivery_never_overwrites,
    correction_replaces_and_keeps_history,
    a_failed_intent_is_superseded_under_a_key_of_its_own_and_nothing_else_is,
    tenants_never_see_each_other,
    action_lifecycle_completed_verbatim,
    final_and_retryable_failures,
    expired_lease_is_uncertain_and_stale_token_refused,
    sweep_marks_expired_leases_uncertain,
    every_replaced_attempt_is_kept_and_the_intent_found_by_key,
    an_alert_moves_once_and_announces_to_its_endpoint_only,
    the_relay_fans_out_and_settles_a_batch_at_a_time,
    http_keys_replay_conflict_and_mismatch,
    consume_once_follows_the_transaction,
    outbox_commits_with_the_action,
    rolled_back_transaction_leaves_no_trace,
    retention_purges_in_batches_and_keeps_recent_rows,
    retention_never_removes_an_unsettled_action_or_its_intent,
    events_are_claimed_with_a_lease,
    statistics_count_what_happened,
    counts_survive_a_process_that_never_flushed,
    two_processes_fold_each_count_once,
    one_instance_leads_a_chore_until_its_lease_runs_out,
    rebuild_recounts_the_rollups_from_the_tables,
    sixty_four_concurrent_records_make_one_row,
    a_caller_that_goes_away_never_fails_the_others,
    sixty_four_concurrent_begins_make_one_claim,
    concurrent_divergent_candidates_keep_the_first,
    closed_store_gives_errors_not_answers,
    empty_reference_and_unknown_action_are_refused,
    tokens_authenticate_only_their_own_tenant,
    saved_scenarios_are_immutable_and_per_tenant,
    saved_comparisons_are_immutable_and_apart_from_scenarios,
    live_actions_show_in_flight_and_uncertain_per_tenant,
    the_uncertain_list_shows_each_keys_intent,
    demo_ledger_follows_the_transaction_and_the_tenant,
    a_stored_state_no_machine_has_is_corrupt_data,
    the_candidate_is_frozen_as_its_first_delivery_sent_it,
    concurrent_records_freeze_one_candidate_as_sent,
    a_claim_asked_again_by_its_attempt_gets_the_same_token,
    a_held_claim_is_renewed_and_a_lost_one_is_not,
    an_unknown_outcome_is_uncertain_at_once,
    mcp_calls_are_counted_per_tenant_tool_and_outcome,
    writes_cut_at_any_await_never_hold_the_store,
    a_transaction_held_past_its_bound_is_rolled_back,
    the_store_says_whether_it_can_write,
);

/// Callers cut at any await point (a client that times out after a few
/// milliseconds drops its handler, and the store calls in it): record,
/// claim, complete and explicit transactions, cut after a random 0 to 3 ms,
/// from 16 tasks for two seconds. Afterwards the store takes plain writes
/// and transactions at once, and readiness says so.
async fn writes_cut_at_any_await_never_hold_the_store(h: &H) {
    let stop = std::time::Instant::now() + Duration::from_secs(2);
    let workers: Vec<_> = (0..16u64)
        .map(|w| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            tokio::spawn(async move {
                let mut seed = w.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut n = 0u64;
                while std::time::Instant::now() < stop {
                    n += 1;
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let cut = Duration::from_micros(seed % 3_000);
                    let reference = format!("CUT-{w}-{n}");
                    let store = store.clone();
                    let tenant = tenant.clone();
                    let _ = tokio::time::timeout(cut, async move {
                        let json_1 = pix(&reference, "180.00");
                        let p = Payload::from_json(&json_1).unwrap();
                        let intent = store.record_intent(&tenant, "pix.cobranca", &p).await?;
                        if let Begin::Claimed { token, .. } = store
                            .begin_action(
                                &tenant,
                                &pix_action(),
                                &intent.key,
                                Duration::from_secs(30),
                            )
                            .await?
                        {
                            let mut tx = store.transaction().await?;
                            tx.complete(&tenant, &intent.key, token, "{}").await?;
                            tx.commit().await?;
                        }
                        Ok::<_, Error>(())
                    })
                    .await;
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    for i in 0..5 {
        let json_2 = pix(&format!("AFTER-{i}"), "180.00");
        let p = Payload::from_json(&json_2).unwrap();
        let recorded = tokio::time::timeout(
            Duration::from_secs(2),
            h.store.record_intent(&h.tenant, "pix.cobranca", &p),
        )
        .await
        .expect("a plain write after the cut callers took over 2 s");
        let intent = recorded.unwrap();
        let claim = tokio::time::timeout(
            Duration::from_secs(2),
            h.store.begin_action(
                &h.tenant,
                &pix_action(),
                &intent.key,
                Duration::from_secs(30),
            ),
        )
        .await
        .expect("a claim after the cut callers took over 2 s");
        assert!(matches!(claim.unwrap(), Begin::Claimed { .. }));
    }
    assert_eq!(h.store.writable(Duration::from_secs(5)).await, Ok(()));
}

/// A transaction that stalls while holding SQLite's write lock (its
/// holder parked on something else) is rolled back by the watchdog after
/// the bound, so the next writer goes on; its holder's commit is refused
/// and nothing of it was kept. PostgreSQL has no such lock: the stalled
/// transaction blocks no other row.
async fn a_transaction_held_past_its_bound_is_rolled_back(h: &H) {
    let json_3 = pix("STALLED", "180.00");
    let p = Payload::from_json(&json_3).unwrap();
    let mut stalled = h.store.transaction().await.unwrap();
    stalled
        .record_intent(&h.tenant, "pix.cobranca", &p)
        .await
        .unwrap();
    // Parked past the bound (5 s) while another writer waits.
    let json_4 = pix("WAITING", "180.00");
    let other = Payload::from_json(&json_4).unwrap();
    let started = std::time::Instant::now();
    let waited = tokio::time::timeout(Duration::from_secs(12), async {
        let mut tx = h.store.transaction().await?;
        tx.record_intent(&h.tenant, "pix.cobranca", &other).await?;
        tx.commit().await
    })
    .await
    .expect("the waiting writer never got in");
    match h.store.backend() {
        Backend::Sqlite => {
            // It waited for its turn (5 s) and got an error, or got in once
            // the stalled one was rolled back; either way, by now the
            // stalled one is gone and a write goes through.
            assert!(started.elapsed() < Duration::from_secs(12));
            let _ = waited;
            tokio::time::sleep(Duration::from_millis(600)).await;
            let refused = stalled.commit().await;
            assert!(matches!(refused, Err(Error::Unavailable(_))), "{refused:?}");
            let mut s = h.store.session().await.unwrap();
            assert!(s
                .intent(&h.tenant, "pix.cobranca", "STALLED")
                .await
                .is_err());
            drop(s);
            let json_5 = pix("AFTER-STALL", "180.00");
            let again = Payload::from_json(&json_5).unwrap();
            tokio::time::timeout(
                Duration::from_secs(2),
                h.store.record_intent(&h.tenant, "pix.cobranca", &again),
            )
            .await
            .expect("a write after the rollback took over 2 s")
            .unwrap();
        }
        Backend::Postgres => {
            waited.unwrap();
            stalled.commit().await.unwrap();
        }
    }
}

/// Readiness writes: it says yes on a healthy store, and no, with the
/// reason, while another connection holds SQLite's write lock (another
/// process, say), then yes again once it lets go.
async fn the_store_says_whether_it_can_write(h: &H) {
    assert_eq!(h.store.writable(Duration::from_secs(5)).await, Ok(()));
    if h.store.backend() != Backend::Sqlite {
        return;
    }
    use sqlx::{ConnectOptions, Connection};
    let opts: sqlx::sqlite::SqliteConnectOptions = h.db.url.parse().unwrap();
    let mut other = opts.connect().await.unwrap();
    sqlx::query("begin immediate")
        .execute(&mut other)
        .await
        .unwrap();
    // Past the last probe's cached second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let started = std::time::Instant::now();
    let answer = h.store.writable(Duration::from_secs(7)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let why = answer.unwrap_err();
    assert!(why.contains("locked"), "{why}");
    sqlx::query("rollback").execute(&mut other).await.unwrap();
    other.close().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(h.store.writable(Duration::from_secs(5)).await, Ok(()));
}

/// The gateway's counts: one row per hour, tool and outcome, summed over
/// a range for one tenant, and over every tenant for `/metrics`.
async fn mcp_calls_are_counted_per_tenant_tool_and_outcome(h: &H) {
    let mut s = h.store.session().await.unwrap();
    let other = h.tenant("outra-loja");
    for (outcome, diverged) in [("executed", false), ("replayed", true), ("replayed", false)] {
        s.count_mcp_call(&h.tenant, "create_pix_charge", outcome, diverged)
            .await
            .unwrap();
    }
    h.clock.advance(Duration::from_secs(3600));
    s.count_mcp_call(&h.tenant, "create_pix_charge", "uncertain", false)
        .await
        .unwrap();
    s.count_mcp_call(&other, "refund", "executed", false)
        .await
        .unwrap();
    // A lookup is counted under the tool it asked, and is no guarded call.
    s.count_mcp_call(&h.tenant, "get_checkout", "lookup:executed", false)
        .await
        .unwrap();
    let counts = s.mcp_calls(&h.tenant, T0, T0 + 7_200_000).await.unwrap();
    assert_eq!(
        counts,
        vec![McpToolCounts {
            tool: "create_pix_charge".into(),
            calls: 4,
            executions: 1,
            replays: 2,
            divergences: 1,
            uncertain: 1,
            ..McpToolCounts::default()
        }]
    );
    // The range is whole hours: the first hour alone.
    let first = s.mcp_calls(&h.tenant, T0, T0 + 1).await.unwrap();
    assert_eq!(first[0].calls, 3);
    let all = h.store.admin_mcp_calls().await.unwrap();
    assert!(all.contains(&("refund".into(), "executed".into(), 1)));
    assert!(all.contains(&("create_pix_charge".into(), "replayed".into(), 2)));
    assert!(all.contains(&("get_checkout".into(), "lookup:executed".into(), 1)));
}

/// The first delivery's candidate is kept as it was sent, byte for byte
/// (the worker's names and formats: `"180.00"`, not the key's cents); a
/// redelivery, identical or divergent, never replaces it; a correction does.
async fn the_candidate_is_frozen_as_its_first_delivery_sent_it(h: &H) {
    let first = r#"{"cliente_id": "cli-1",  "valor": "180.00", "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": "FAT-C", "nota": [1, 2]}"#;
    let r1 = record(h, &h.tenant, first).await;
    assert!(r1.inserted);
    assert_eq!(r1.candidate.as_deref(), Some(first));
    assert!(r1.payload.to_json().contains("\"18000\""));
    // The same intent written another way, then a divergent one.
    let same = r#"{"cliente_id":"cli-1","valor":"180.0","chave_pix_destino":"+5511988887777","referencia_intencao":"FAT-C"}"#;
    let r2 = record(h, &h.tenant, same).await;
    assert!(!r2.inserted && !r2.diverged);
    assert_eq!(r2.candidate.as_deref(), Some(first));
    let r3 = record(h, &h.tenant, &pix("FAT-C", "1800.00")).await;
    assert!(r3.diverged);
    assert_eq!(r3.candidate.as_deref(), Some(first));
    let read = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-C")
        .await
        .unwrap();
    assert_eq!(read.candidate.as_deref(), Some(first));
    // A correction is a person's new candidate: it is frozen instead.
    let fixed = pix("FAT-C", "181.00");
    let c = h
        .store
        .session()
        .await
        .unwrap()
        .correct_intent(
            &h.tenant,
            "pix.cobranca",
            &Payload::from_json(&fixed).unwrap(),
            "amount",
        )
        .await
        .unwrap();
    assert!(c.changed);
    assert_eq!(c.intent.candidate.as_deref(), Some(fixed.as_str()));
    let (_, _, by_key) = h
        .store
        .session()
        .await
        .unwrap()
        .intent_by_key(&h.tenant, &c.intent.key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_key.candidate.as_deref(), Some(fixed.as_str()));
}

/// Concurrent first deliveries (coalesced into one statement on
/// PostgreSQL) freeze exactly one of the candidates as sent, and every
/// caller is told the same one.
async fn concurrent_records_freeze_one_candidate_as_sent(h: &H) {
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            // Two spellings of one amount: one normalized payload, one key.
            let valor = if i % 2 == 0 { "180.00" } else { "180.0" };
            let json = pix("FAT-CC", valor);
            tokio::spawn(async move {
                let p = Payload::from_json(&json).unwrap();
                store
                    .record_intent(&tenant, "pix.cobranca", &p)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut frozen = Vec::new();
    for t in tasks {
        frozen.push(t.await.unwrap().candidate.unwrap());
    }
    assert!(
        frozen.iter().all(|c| c == &frozen[0]),
        "one frozen candidate"
    );
    assert!(frozen[0] == pix("FAT-CC", "180.00") || frozen[0] == pix("FAT-CC", "180.0"));
}

/// A claimer whose answer was lost asks again with the same attempt id and
/// gets its own claim back, token and all; another attempt is in flight;
/// once the lease ran out, the same id is a new claim like any other.
async fn a_claim_asked_again_by_its_attempt_gets_the_same_token(h: &H) {
    let lease = Duration::from_secs(30);
    let (t, a) = (&h.tenant, pix_action());
    let first = h
        .store
        .begin_attempt(t, &a, &k(41), lease, Some("w-1"))
        .await
        .unwrap();
    let again = h
        .store
        .begin_attempt(t, &a, &k(41), lease, Some("w-1"))
        .await
        .unwrap();
    assert_eq!(first, again);
    assert!(matches!(
        first,
        Begin::Claimed {
            token: 1,
            attempt: 1,
            ..
        }
    ));
    assert!(matches!(
        h.store
            .begin_attempt(t, &a, &k(41), lease, Some("w-2"))
            .await
            .unwrap(),
        Begin::InFlight { .. }
    ));
    assert!(matches!(
        h.store.begin_action(t, &a, &k(41), lease).await.unwrap(),
        Begin::InFlight { .. }
    ));
    // A renewal proves the holder has its token: the id is spent, and
    // whoever asks with it now is another holder.
    let mut s = h.store.session().await.unwrap();
    s.renew(t, &k(41), 1, lease).await.unwrap();
    drop(s);
    assert!(matches!(
        h.store
            .begin_attempt(t, &a, &k(41), lease, Some("w-1"))
            .await
            .unwrap(),
        Begin::InFlight { .. }
    ));
    // Another tenant's attempt of the same name holds nothing here.
    let other = h.tenant("outra-loja");
    assert!(matches!(
        h.store
            .begin_attempt(&other, &a, &k(41), lease, Some("w-1"))
            .await
            .unwrap(),
        Begin::Claimed { token: 1, .. }
    ));
    // An uncertain takeover asked again is the same takeover.
    h.clock.advance(Duration::from_secs(31));
    let took = h
        .store
        .begin_attempt(t, &a, &k(41), lease, Some("w-2"))
        .await
        .unwrap();
    assert!(matches!(
        took,
        Begin::Uncertain {
            token: 2,
            attempt: 2,
            ..
        }
    ));
    assert_eq!(
        h.store
            .begin_attempt(t, &a, &k(41), lease, Some("w-2"))
            .await
            .unwrap(),
        took
    );
    let mut s = h.store.session().await.unwrap();
    s.complete(t, &k(41), 2, "{}").await.unwrap();
    assert!(matches!(
        h.store
            .begin_attempt(t, &a, &k(41), lease, Some("w-2"))
            .await
            .unwrap(),
        Begin::Completed {
            attempts: 2,
            reconciled: false,
            ..
        }
    ));
}

/// Renewing extends the holder's lease from now; a token whose lease ran
/// out, or that a newer claim replaced, is refused and changes nothing.
async fn a_held_claim_is_renewed_and_a_lost_one_is_not(h: &H) {
    let lease = Duration::from_secs(10);
    let (t, a) = (&h.tenant, pix_action());
    h.store.begin_action(t, &a, &k(42), lease).await.unwrap();
    let mut s = h.store.session().await.unwrap();
    h.clock.advance(Duration::from_secs(8));
    let until = s.renew(t, &k(42), 1, lease).await.unwrap();
    assert_eq!(until, T0 + 18_000);
    // Past the first lease, within the renewed one: still held.
    h.clock.advance(Duration::from_secs(5));
    assert!(matches!(
        h.store.begin_action(t, &a, &k(42), lease).await.unwrap(),
        Begin::InFlight { lease_until_ms } if lease_until_ms == T0 + 18_000
    ));
    assert!(matches!(
        s.renew(t, &k(42), 2, lease).await,
        Err(Error::StaleToken {
            token: 2,
            current: 1,
            ..
        })
    ));
    // The renewed lease runs out: renewing is too late.
    h.clock.advance(Duration::from_secs(6));
    assert!(matches!(
        s.renew(t, &k(42), 1, lease).await,
        Err(Error::LeaseLost { token: 1 })
    ));
    assert!(matches!(
        h.store.begin_action(t, &a, &k(42), lease).await.unwrap(),
        Begin::Uncertain { token: 2, .. }
    ));
    assert!(matches!(
        s.renew(t, &k(42), 1, lease).await,
        Err(Error::StaleToken {
            token: 1,
            current: 2,
            ..
        })
    ));
    assert!(matches!(
        s.renew(t, &k(99), 1, lease).await,
        Err(Error::NotFound)
    ));
}

/// An effect that raised leaves its outcome unknown: marked so, the next
/// claim is uncertain at once (no waiting for the lease), it is counted
/// once, and a stale token cannot mark anything.
async fn an_unknown_outcome_is_uncertain_at_once(h: &H) {
    let lease = Duration::from_secs(600);
    let (t, a) = (&h.tenant, pix_action());
    h.store.begin_action(t, &a, &k(43), lease).await.unwrap();
    let mut s = h.store.session().await.unwrap();
    s.mark_uncertain(t, &k(43), 1, "read timeout")
        .await
        .unwrap();
    // Said twice (a retried request): not a conflict.
    s.mark_uncertain(t, &k(43), 1, "read timeout")
        .await
        .unwrap();
    let stored = s.action(t, &k(43)).await.unwrap();
    assert_eq!(stored.state, ActionState::Uncertain);
    assert_eq!(stored.error.as_deref(), Some("read timeout"));
    let next = h.store.begin_action(t, &a, &k(43), lease).await.unwrap();
    assert!(
        matches!(next, Begin::Uncertain { token: 2, attempt: 2, ref previous, .. } if previous.token == 1),
        "{next:?}"
    );
    assert!(matches!(
        s.mark_uncertain(t, &k(43), 1, "late").await,
        Err(Error::StaleToken {
            token: 1,
            current: 2,
            ..
        })
    ));
    h.store.flush_stats().await.unwrap();
    let report = hour(h, t).await;
    assert_eq!(report.totals.actions_uncertain, 1, "counted once");
}

/// A row whose state no state machine has (written past the schema's
/// check, as only a broken tool could) is reported as corrupt data, the
/// server's 500, never as an unreachable database or as another state.
async fn a_stored_state_no_machine_has_is_corrupt_data(h: &H) {
    let lease = Duration::from_secs(30);
    h.store
        .begin_action(&h.tenant, &pix_action(), &k(1), lease)
        .await
        .unwrap();
    let corrupt = "update actions set state = 'half-done'";
    match h.db.postgres_schema() {
        Some(_) => {
            h.db.execute(&format!(
                "alter table actions drop constraint actions_state_check; {corrupt}"
            ))
            .await
        }
        None => {
            h.db.execute(&format!("pragma ignore_check_constraints = on; {corrupt}"))
                .await
        }
    }
    let mut s = h.store.session().await.unwrap();
    let read = s.action(&h.tenant, &k(1)).await;
    assert!(
        matches!(&read, Err(Error::Corrupt(why)) if why.contains("half-done")),
        "{read:?}"
    );
    // A claim reads the same row to explain itself: corrupt too.
    let claim = h
        .store
        .begin_action(&h.tenant, &pix_action(), &k(1), lease)
        .await;
    assert!(matches!(claim, Err(Error::Corrupt(_))), "{claim:?}");
}

/// The demo provider's ledger: a charge written in a transaction that rolls
/// back leaves nothing; committed ones are counted and listed oldest first,
/// for their own tenant only.
async fn demo_ledger_follows_the_transaction_and_the_tenant(h: &H) {
    let charge = |id: &str, created_ms: i64| idem_store::DemoCharge {
        id: id.into(),
        amount_cents: 1_800,
        currency: "BRL".into(),
        customer: "cli-1".into(),
        created_ms,
    };
    let mut tx = h.store.transaction().await.unwrap();
    tx.demo_charge(&h.tenant, &charge("ch_rolled_back", 1))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let mut tx = h.store.transaction().await.unwrap();
    tx.demo_charge(&h.tenant, &charge("ch_b", 20))
        .await
        .unwrap();
    tx.demo_charge(&h.tenant, &charge("ch_a", 10))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut s = h.store.session().await.unwrap();
    assert_eq!(s.demo_charge_count(&h.tenant).await.unwrap(), 2);
    let listed = s.demo_charges(&h.tenant).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["ch_a", "ch_b"], "oldest first");
    assert_eq!(listed[0], charge("ch_a", 10));
    let other = h.tenant("someone-else");
    assert_eq!(s.demo_charge_count(&other).await.unwrap(), 0);
    assert!(s.demo_charges(&other).await.unwrap().is_empty());
}

/// The live monitor's view of actions: a running lease is in flight; one
/// that ran out is uncertain at once (before any sweep), and stays so after
/// the sweep; finished actions are neither; another tenant sees none of it.
async fn live_actions_show_in_flight_and_uncertain_per_tenant(h: &H) {
    let lease = Duration::from_secs(10);
    for n in 20..24 {
        h.store
            .begin_action(&h.tenant, &pix_action(), &k(n), lease)
            .await
            .unwrap();
    }
    let mut s = h.store.session().await.unwrap();
    let now = h.store.now_ms();
    let live = s.live_actions(&h.tenant, now, 10).await.unwrap();
    assert_eq!((live.in_flight, live.uncertain), (4, 0), "{live:?}");
    assert!(live.uncertain_keys.is_empty());
    // One completes; the other three run out of lease.
    s.complete(&h.tenant, &k(20), 1, "{}").await.unwrap();
    h.clock.advance(Duration::from_secs(11));
    let now = h.store.now_ms();
    let live = s.live_actions(&h.tenant, now, 2).await.unwrap();
    assert_eq!((live.in_flight, live.uncertain), (0, 3), "{live:?}");
    assert_eq!(live.uncertain_keys.len(), 2, "the limit holds");
    assert!(live.uncertain_keys.iter().all(|u| u.lease_expired_unswept));
    assert!(live
        .uncertain_keys
        .iter()
        .all(|u| u.key != k(20).to_string()));
    drop(s);
    // After the sweep: the same three, now marked.
    h.store.purge(100).await.unwrap();
    let live = live_now(h, &h.tenant).await;
    assert_eq!((live.in_flight, live.uncertain), (0, 3), "{live:?}");
    let mut keys: Vec<String> = live.uncertain_keys.iter().map(|u| u.key.clone()).collect();
    keys.sort();
    let mut want: Vec<String> = (21..24).map(|n| k(n).to_string()).collect();
    want.sort();
    assert_eq!(keys, want);
    assert!(live.uncertain_keys.iter().all(|u| !u.lease_expired_unswept));
    // Another tenant sees nothing of it.
    let other = TenantId::try_from(format!("{}-other", h.tenant.as_str()).as_str()).unwrap();
    assert_eq!(
        live_now(h, &other).await,
        idem_store::LiveActions::default()
    );
}

/// Each listed uncertain key carries its intent's reference and frozen
/// payload, found by the key among the tenant's other intents (no index on
/// SQLite: one read for the list); a key no intent was recorded for lists
/// without them; the list reads the same after the sweep (from what the
/// monitor kept) and another tenant's intents never lend their facts.
async fn the_uncertain_list_shows_each_keys_intent(h: &H) {
    let other = h.tenant("someone-else");
    for n in 0..40 {
        record(h, &h.tenant, &pix(&format!("OTHER-{n}"), "1.00")).await;
    }
    let a = record(h, &h.tenant, &pix("FAT-A", "10.00")).await;
    let b = record(h, &h.tenant, &pix("FAT-B", "20.00")).await;
    // The same business reference under another tenant has its own key.
    record(h, &other, &pix("FAT-A", "10.00")).await;
    let lease = Duration::from_secs(10);
    for key in [&a.key, &b.key, &k(30)] {
        h.store
            .begin_action(&h.tenant, &pix_action(), key, lease)
            .await
            .unwrap();
    }
    h.clock.advance(Duration::from_secs(11));
    let facts = |live: &idem_store::LiveActions| {
        let mut seen: Vec<(String, Option<String>, Option<String>)> = live
            .uncertain_keys
            .iter()
            .map(|u| (u.key.clone(), u.reference.clone(), u.payload.clone()))
            .collect();
        seen.sort();
        seen
    };
    let mut want = vec![
        (
            a.key.to_string(),
            Some("FAT-A".to_owned()),
            Some(a.payload.to_json()),
        ),
        (
            b.key.to_string(),
            Some("FAT-B".to_owned()),
            Some(b.payload.to_json()),
        ),
        (k(30).to_string(), None, None),
    ];
    want.sort();
    assert_eq!(
        facts(&live_now(h, &h.tenant).await),
        want,
        "before the sweep"
    );
    h.store.purge(100).await.unwrap();
    let live = live_now(h, &h.tenant).await;
    assert!(live.uncertain_keys.iter().all(|u| !u.lease_expired_unswept));
    assert_eq!(facts(&live), want, "after the sweep");
}

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

async fn first_write_wins_and_redeliveries_are_counted(h: &H) {
    let a = record(h, &h.tenant, &pix("FAT-1", "180.00")).await;
    assert!(a.inserted);
    assert!(!a.diverged);
    assert_eq!(
        (a.deliveries, a.revision, a.reference.as_str()),
        (1, 1, "FAT-1")
    );
    h.clock.advance(Duration::from_secs(90));
    // The same intent, re-extracted with other irrelevant text and spacing.
    let again = pix(" FAT-1 ", "180.0").replace("irrelevant", "different");
    let b = record(h, &h.tenant, &again).await;
    assert!(!b.inserted);
    assert!(!b.diverged, "normalization makes these identical");
    assert_eq!(b.key, a.key);
    assert_eq!(b.payload, a.payload);
    assert_eq!(b.deliveries, 2);
    assert_eq!(b.first_seen_ms, T0);
    assert_eq!(b.last_seen_ms, T0 + 90_000);
    let stored = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-1")
        .await
        .unwrap();
    assert_eq!((stored.deliveries, stored.divergences), (2, 0));
    assert_eq!(stored.key, a.key);
}

async fn the_key_is_the_core_derivation(h: &H) {
    let json = pix("FAT-K", "99.90");
    let r = record(h, &h.tenant, &json).await;
    assert_eq!(r.key, key(h, &json));
    assert_eq!(r.candidate_key, r.key);
    assert_eq!(r.payload.get("valor"), Some("9990"));
}

async fn divergent_redelivery_never_overwrites(h: &H) {
    let first = record(h, &h.tenant, &pix("FAT-2", "180.00")).await;
    // The model re-extracted R$ 1.800 on the redelivery.
    let second = record(h, &h.tenant, &pix("FAT-2", "1800.00")).await;
    assert!(second.diverged);
    assert_eq!(second.key, first.key, "the frozen key is returned");
    assert_ne!(second.candidate_key, first.key);
    assert_eq!(second.payload.get("valor"), Some("18000"));
    assert_eq!(second.divergences, 1);
    let stored = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-2")
        .await
        .unwrap();
    assert_eq!(stored.payload.get("valor"), Some("18000"));
    assert_eq!((stored.deliveries, stored.divergences), (2, 1));
}

async fn correction_replaces_and_keeps_history(h: &H) {
    let first = record(h, &h.tenant, &pix("FAT-3", "180.00")).await;
    let mut s = h.store.session().await.unwrap();
    let fixed_json = pix("FAT-3", "1800");
    let fixed = Payload::from_json(&fixed_json).unwrap();
    h.clock.advance(Duration::from_secs(5));
    let c = s
        .correct_intent(&h.tenant, "pix.cobranca", &fixed, "amount was R$ 1.800")
        .await
        .unwrap();
    assert!(c.changed);
    assert_eq!(c.intent.revision, 2);
    assert_ne!(c.intent.key, first.key, "the provider sees a new action");
    assert_eq!(c.intent.payload.get("valor"), Some("180000"));
    let hist = s
        .intent_history(&h.tenant, "pix.cobranca", "FAT-3")
        .await
        .unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!((hist[0].revision, &hist[0].key), (1, &first.key));
    assert_eq!(hist[0].reason, "amount was R$ 1.800");
    assert_eq!(hist[0].replaced_ms, T0 + 5_000);
    // A late redelivery of the old extraction cannot undo the correction.
    let late = record(h, &h.tenant, &pix("FAT-3", "180.00")).await;
    assert!(late.diverged);
    assert_eq!(late.key, c.intent.key);
    // Correcting to the same payload changes nothing.
    let same = s
        .correct_intent(&h.tenant, "pix.cobranca", &fixed, "again")
        .await
        .unwrap();
    assert!(!same.changed);
    assert_eq!(same.intent.revision, 2);
    assert_eq!(
        s.intent_history(&h.tenant, "pix.cobranca", "FAT-3")
            .await
            .unwrap()
            .len(),
        1
    );
    // There is nothing to correct for an unknown intent.
    let absent_json = pix("FAT-404", "1.00");
    let absent = Payload::from_json(&absent_json).unwrap();
    assert!(matches!(
        s.correct_intent(&h.tenant, "pix.cobranca", &absent, "x")
            .await,
        Err(Error::NotFound)
    ));
}

/// A wrong first attempt (refused by the provider, nothing executed) is
/// superseded: the failed action sealed, the version filed with who and
/// why, the intent under a key of its own; never an action that may have
/// run or did.
async fn a_failed_intent_is_superseded_under_a_key_of_its_own_and_nothing_else_is(h: &H) {
    let pix_action = ActionType::try_from("pix.cobranca").unwrap();
    let lease = Duration::from_secs(30);
    let first = record(h, &h.tenant, &pix("SUP-1", "180.00")).await;
    // Not started: nothing failed, nothing to supersede.
    let refused = h
        .store
        .supersede_intent(&h.tenant, "pix.cobranca", "SUP-1", None, "ops", "why")
        .await;
    assert!(
        matches!(&refused, Err(Error::NotSupersedable(s)) if s == "not started"),
        "{refused:?}"
    );
    let Begin::Claimed { token, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action, &first.key, lease)
        .await
        .unwrap()
    else {
        panic!("not claimed")
    };
    // Started (the effect may be running), then uncertain: refused.
    for state in ["started", "uncertain"] {
        if state == "uncertain" {
            let mut s = h.store.session().await.unwrap();
            s.mark_uncertain(&h.tenant, &first.key, token, "lost")
                .await
                .unwrap();
        }
        let r = h
            .store
            .supersede_intent(&h.tenant, "pix.cobranca", "SUP-1", None, "ops", "why")
            .await;
        assert!(
            matches!(&r, Err(Error::NotSupersedable(s)) if s == state),
            "{state}: {r:?}"
        );
    }
    let Begin::Uncertain { token, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action, &first.key, lease)
        .await
        .unwrap()
    else {
        panic!("not uncertain")
    };
    let mut s = h.store.session().await.unwrap();
    s.reconcile(
        &h.tenant,
        &first.key,
        token,
        &Outcome::Failed {
            error: "amount refused".into(),
            retryable: true,
        },
    )
    .await
    .unwrap();
    drop(s);
    h.clock.advance(Duration::from_secs(5));
    let fixed = pix("SUP-1", "190.00");
    let done = h
        .store
        .supersede_intent(
            &h.tenant,
            "pix.cobranca",
            "SUP-1",
            Some(&Payload::from_json(&fixed).unwrap()),
            "ops@acme",
            "the merchant refused the total",
        )
        .await
        .unwrap();
    assert_eq!(done.previous_key, first.key);
    assert!(!done.released);
    assert_eq!(done.intent.revision, 2);
    assert_eq!(done.intent.payload.get("valor"), Some("19000"));
    let plain = key(h, &fixed);
    assert_ne!(done.intent.key, first.key);
    assert_ne!(
        done.intent.key, plain,
        "its own key, not the plain derivation of the new values"
    );
    // The failed action is sealed: no claim takes it over again.
    assert!(matches!(
        h.store
            .begin_action(&h.tenant, &pix_action, &first.key, lease)
            .await
            .unwrap(),
        Begin::Failed { .. }
    ));
    // A redelivery gets the new key; the new action runs.
    let again = record(h, &h.tenant, &fixed).await;
    assert_eq!(again.key, done.intent.key);
    assert!(!again.diverged);
    let Begin::Claimed { token, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action, &again.key, lease)
        .await
        .unwrap()
    else {
        panic!("the superseding intent's action does not run")
    };
    let mut s = h.store.session().await.unwrap();
    let hist = s
        .intent_history(&h.tenant, "pix.cobranca", "SUP-1")
        .await
        .unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!((hist[0].revision, &hist[0].key), (1, &first.key));
    assert_eq!(hist[0].payload.get("valor"), Some("18000"));
    assert_eq!(
        hist[0].reason,
        "superseded by ops@acme: the merchant refused the total"
    );
    assert_eq!(hist[0].replaced_ms, T0 + 5_000);
    let filed = s.filed_by_key(&h.tenant, &first.key).await.unwrap();
    assert_eq!(
        (filed[0].reference.as_str(), filed[0].revision),
        ("SUP-1", 1)
    );
    // Completed: refused.
    s.complete(&h.tenant, &again.key, token, "{}")
        .await
        .unwrap();
    drop(s);
    let r = h
        .store
        .supersede_intent(&h.tenant, "pix.cobranca", "SUP-1", None, "ops", "why")
        .await;
    assert!(
        matches!(&r, Err(Error::NotSupersedable(s)) if s == "completed"),
        "{r:?}"
    );

    // Released (no candidate given): the payload stays, the key is new,
    // and the next delivery's candidate is frozen (a payment signed anew).
    let other = record(h, &h.tenant, &pix("SUP-2", "50.00")).await;
    let Begin::Claimed { token, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action, &other.key, lease)
        .await
        .unwrap()
    else {
        panic!("not claimed")
    };
    let mut s = h.store.session().await.unwrap();
    s.fail(&h.tenant, &other.key, token, "authorization expired", false)
        .await
        .unwrap();
    drop(s);
    let released = h
        .store
        .supersede_intent(&h.tenant, "pix.cobranca", "SUP-2", None, "ops", "expired")
        .await
        .unwrap();
    assert!(released.released && released.intent.candidate.is_none());
    assert_ne!(released.intent.key, other.key);
    let signed_anew = pix("SUP-2", "50").replace("irrelevant", "signed anew");
    let next = record(h, &h.tenant, &signed_anew).await;
    assert_eq!(next.key, released.intent.key);
    assert!(next.candidate.as_deref().unwrap().contains("signed anew"));
    let later = record(h, &h.tenant, &pix("SUP-2", "50.00")).await;
    assert!(
        later.candidate.as_deref().unwrap().contains("signed anew"),
        "first write wins again"
    );
    // Bounded who and why; another reference in the candidate is refused.
    for (actor, why) in [("", "x"), ("ops", ""), ("ops", &"x".repeat(1001))] {
        let r = h
            .store
            .supersede_intent(&h.tenant, "pix.cobranca", "SUP-2", None, actor, why)
            .await;
        assert!(matches!(r, Err(Error::Invalid(_))), "{r:?}");
    }
}

async fn tenants_never_see_each_other(h: &H) {
    let other = h.tenant("outra-loja");
    let a = record(h, &h.tenant, &pix("FAT-T", "10.00")).await;
    let mut s = h.store.session().await.unwrap();
    assert!(matches!(
        s.intent(&other, "pix.cobranca", "FAT-T").await,
        Err(Error::NotFound)
    ));
    let b = record(h, &other, &pix("FAT-T", "10.00")).await;
    assert!(b.inserted, "same reference, other tenant: its own row");
    assert_ne!(a.key, b.key, "the tenant is part of the key");
    let pt = ActionType::try_from("pix.cobranca").unwrap();
    let lease = Duration::from_secs(30);
    assert!(matches!(
        h.store
            .begin_action(&h.tenant, &pt, &a.key, lease)
            .await
            .unwrap(),
        Begin::Claimed { .. }
    ));
    assert!(matches!(
        s.action(&other, &a.key).await,
        Err(Error::NotFound)
    ));
    // Another tenant cannot complete this tenant's action even with its token.
    assert!(matches!(
        s.complete(&other, &a.key, 1, "{}").await,
        Err(Error::NotFound)
    ));
    assert_eq!(
        s.action(&h.tenant, &a.key).await.unwrap().state,
        ActionState::Started
    );
}

fn k(n: u8) -> IdempotencyKey {
    IdempotencyKey::try_from(format!("{:064x}", u128::from(n) + 1_000).as_str()).unwrap()
}

fn pix_action() -> ActionType {
    ActionType::try_from("pix.cobranca").unwrap()
}

async fn action_lifecycle_completed_verbatim(h: &H) {
    let lease = Duration::from_secs(30);
    let first = h
        .store
        .begin_action(&h.tenant, &pix_action(), &k(1), lease)
        .await
        .unwrap();
    assert_eq!(
        first,
        Begin::Claimed {
            token: 1,
            attempt: 1,
            lease_until_ms: T0 + 30_000,
            previous_error: None
        }
    );
    assert_eq!(
        h.store
            .begin_action(&h.tenant, &pix_action(), &k(1), lease)
            .await
            .unwrap(),
        Begin::InFlight {
            lease_until_ms: T0 + 30_000
        }
    );
    let response = "{\"id\": \"pay_1\",  \"valor\": \"R$ 180,00\", \"nota\": \"ação\"}\n";
    let mut s = h.store.session().await.unwrap();
    s.complete(&h.tenant, &k(1), 1, response).await.unwrap();
    // Saying it again with the same token is accepted, not a conflict.
    s.complete(&h.tenant, &k(1), 1, response).await.unwrap();
    h.clock.advance(Duration::from_secs(3600));
    assert_eq!(
        h.store
            .begin_action(&h.tenant, &pix_action(), &k(1), lease)
            .await
            .unwrap(),
        Begin::Completed {
            response: response.to_owned(),
            attempts: 1,
            reconciled: false,
        }
    );
    let a = s.action(&h.tenant, &k(1)).await.unwrap();
    assert_eq!(
        (a.state, a.token, a.attempts, a.lease_until_ms),
        (ActionState::Completed, 1, 1, None)
    );
    // A different response under the same token is a conflict.
    assert!(matches!(
        s.complete(&h.tenant, &k(1), 1, "other").await,
        Err(Error::StaleToken { .. })
    ));
}

async fn final_and_retryable_failures(h: &H) {
    let lease = Duration::from_secs(30);
    let mut s = h.store.session().await.unwrap();
    let Begin::Claimed { token, .. } = s
        .begin_action(&h.tenant, &pix_action(), &k(2), lease)
        .await
        .unwrap()
    else {
        panic!("first begin claims")
    };
    s.fail(&h.tenant, &k(2), token, "provider 503", true)
        .await
        .unwrap();
    match s
        .begin_action(&h.tenant, &pix_action(), &k(2), lease)
        .await
        .unwrap()
    {
        Begin::Claimed {
            token: t2,
            attempt,
            previous_error,
            ..
        } => {
            assert_eq!((t2, attempt), (token + 1, 2));
            assert_eq!(previous_error.as_deref(), Some("provider 503"));
            s.fail(&h.tenant, &k(2), t2, "card declined", false)
                .await
                .unwrap();
        }
        other => panic!("a retryable failure is claimed again, got {other:?}"),
    }
    assert_eq!(
        s.begin_action(&h.tenant, &pix_action(), &k(2), lease)
            .await
            .unwrap(),
        Begin::Failed {
            error: "card declined".into()
        }
    );
}

async fn expired_lease_is_uncertain_and_stale_token_refused(h: &H) {
    let lease = Duration::from_secs(30);
    let mut s = h.store.session().await.unwrap();
    let Begin::Claimed { token: stale, .. } = s
        .begin_action(&h.tenant, &pix_action(), &k(3), lease)
        .await
        .unwrap()
    else {
        panic!()
    };
    // The worker stalls past its lease (the provider timed out).
    h.clock.advance(Duration::from_secs(31));
    let Begin::Uncertain {
        token,
        attempt,
        previous,
        lease_until_ms,
    } = s
        .begin_action(&h.tenant, &pix_action(), &k(3), lease)
        .await
        .unwrap()
    else {
        panic!("an expired lease is uncertain, never completed")
    };
    assert_eq!((token, attempt), (stale + 1, 2));
    assert_eq!(
        previous,
        PreviousAttempt {
            token: stale,
            started_ms: T0,
            lease_until_ms: Some(T0 + 30_000)
        }
    );
    assert_eq!(lease_until_ms, T0 + 61_000);
    // The stale holder wakes up and reports success: refused, nothing changes.
    let refused = s.complete(&h.tenant, &k(3), stale, "{\"late\":true}").await;
    assert!(
        matches!(refused, Err(Error::StaleToken { .. })),
        "{refused:?}"
    );
    let a = s.action(&h.tenant, &k(3)).await.unwrap();
    assert_eq!(
        (a.state, a.token, a.response),
        (ActionState::Uncertain, token, None)
    );
    // While the new holder's lease runs, others are told to wait.
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &k(3), lease)
            .await
            .unwrap(),
        Begin::InFlight { .. }
    ));
    // The new holder asks the provider and records what it learned.
    s.reconcile(
        &h.tenant,
        &k(3),
        token,
        &Outcome::Completed("{\"id\":\"pay_3\"}".into()),
    )
    .await
    .unwrap();
    let a = s.action(&h.tenant, &k(3)).await.unwrap();
    assert_eq!((a.state, a.reconciled), (ActionState::Completed, true));
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &k(3), lease)
            .await
            .unwrap(),
        Begin::Completed { .. }
    ));
}

async fn sweep_marks_expired_leases_uncertain(h: &H) {
    let lease = Duration::from_secs(10);
    for n in 10..15 {
        h.store
            .begin_action(&h.tenant, &pix_action(), &k(n), lease)
            .await
            .unwrap();
    }
    h.clock.advance(Duration::from_secs(11));
    let report = h.store.purge(2).await.unwrap();
    assert_eq!(report.leases_expired, 5);
    assert!(report.batches >= 3, "bounded batches of 2: {report:?}");
    // Each swept claim counts under its own action type, not a catch-all.
    let stats = h
        .store
        .stats(&h.tenant, Granularity::Day, T0, T0 + 86_400_000)
        .await
        .unwrap();
    let uncertain: Vec<(&str, i64)> = stats
        .buckets
        .iter()
        .filter(|b| b.counts.actions_uncertain > 0)
        .map(|b| (b.action.as_str(), b.counts.actions_uncertain))
        .collect();
    assert_eq!(uncertain, [("pix.cobranca", 5)]);
    let mut s = h.store.session().await.unwrap();
    let a = s.action(&h.tenant, &k(10)).await.unwrap();
    // The lease end stays (it is what one asks the provider about); the
    // sweep's mark says when it was marked.
    assert_eq!(
        (a.state, a.lease_until_ms, a.swept_ms),
        (ActionState::Uncertain, Some(T0 + 10_000), Some(T0 + 11_000))
    );
    match s
        .begin_action(&h.tenant, &pix_action(), &k(10), lease)
        .await
        .unwrap()
    {
        Begin::Uncertain {
            token, previous, ..
        } => {
            assert_eq!(
                (token, previous.token, previous.lease_until_ms),
                (2, 1, Some(T0 + 10_000))
            );
        }
        other => panic!("{other:?}"),
    }
    // The takeover clears the mark and does not count the swept attempt a
    // second time.
    let a = s.action(&h.tenant, &k(10)).await.unwrap();
    assert_eq!(a.swept_ms, None);
    let stats = h
        .store
        .stats(&h.tenant, Granularity::Day, T0, T0 + 86_400_000)
        .await
        .unwrap();
    let uncertain: i64 = stats
        .buckets
        .iter()
        .map(|b| b.counts.actions_uncertain)
        .sum();
    assert_eq!(uncertain, 5, "counted once, when swept");
    let replaced = s.replaced_attempts(&h.tenant, &k(10)).await.unwrap();
    assert_eq!(
        replaced,
        [ReplacedAttempt {
            attempt: 1,
            token: 1,
            started_ms: T0,
            lease_until_ms: Some(T0 + 10_000),
            ended: "swept".into(),
            error: None,
            replaced_ms: T0 + 11_000,
        }]
    );
}

/// Every attempt a claim replaced is kept with how it ended (a retryable
/// failure and its error, a lease that ran out), the action's intent is
/// found by its key, and retention removes the attempts with their action.
async fn every_replaced_attempt_is_kept_and_the_intent_found_by_key(h: &H) {
    let json = pix("FAT-77", "6577.89");
    let recorded = record(h, &h.tenant, &json).await;
    let key = recorded.key.clone();
    let lease = Duration::from_secs(10);
    let mut s = h.store.session().await.unwrap();
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &key, lease)
            .await
            .unwrap(),
        Begin::Claimed { token: 1, .. }
    ));
    s.fail(&h.tenant, &key, 1, "provider timeout", true)
        .await
        .unwrap();
    h.clock.advance(Duration::from_secs(1));
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &key, lease)
            .await
            .unwrap(),
        Begin::Claimed { token: 2, .. }
    ));
    h.clock.advance(Duration::from_secs(11));
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &key, lease)
            .await
            .unwrap(),
        Begin::Uncertain { token: 3, .. }
    ));
    let replaced = s.replaced_attempts(&h.tenant, &key).await.unwrap();
    let seen: Vec<(i32, i64, &str, Option<&str>)> = replaced
        .iter()
        .map(|a| (a.attempt, a.token, a.ended.as_str(), a.error.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, 1, "failed", Some("provider timeout")),
            // The failure before it is attempt 1's, never read as 2's.
            (2, 2, "expired", None)
        ]
    );
    assert_eq!(replaced[1].lease_until_ms, Some(T0 + 11_000));
    // A new attempt starts with no error of its own.
    assert_eq!(s.action(&h.tenant, &key).await.unwrap().error, None);
    // Attempt 3 is marked uncertain with what its worker saw; attempt 4
    // takes over and is marked with another reason: the first evidence
    // stays in the history beside the later one.
    s.mark_uncertain(
        &h.tenant,
        &key,
        3,
        "the provider acted; its answer was 2000000 bytes",
    )
    .await
    .unwrap();
    assert!(matches!(
        s.begin_action(&h.tenant, &pix_action(), &key, lease)
            .await
            .unwrap(),
        Begin::Uncertain { token: 4, .. }
    ));
    s.mark_uncertain(
        &h.tenant,
        &key,
        4,
        "uncertain: the client has no reconcile function",
    )
    .await
    .unwrap();
    let replaced = s.replaced_attempts(&h.tenant, &key).await.unwrap();
    assert_eq!(
        replaced[2].error.as_deref(),
        Some("the provider acted; its answer was 2000000 bytes")
    );
    assert_eq!(
        s.action(&h.tenant, &key).await.unwrap().error.as_deref(),
        Some("uncertain: the client has no reconcile function")
    );
    // Another tenant sees none of it.
    let other = h.tenant("someone-else");
    assert!(s.replaced_attempts(&other, &key).await.unwrap().is_empty());
    assert!(s.intent_by_key(&other, &key).await.unwrap().is_none());
    let (reference, action, intent) = s.intent_by_key(&h.tenant, &key).await.unwrap().unwrap();
    assert_eq!(
        (reference.as_str(), action.as_str()),
        ("FAT-77", "pix.cobranca")
    );
    assert_eq!(intent.payload, recorded.payload);
    assert!(s.intent_by_key(&h.tenant, &k(99)).await.unwrap().is_none());
    // Settled, then past retention: the attempts go with the action.
    s.complete(&h.tenant, &key, 4, "{}").await.unwrap();
    drop(s);
    h.clock.advance(Duration::from_secs(8 * 86_400));
    let report = h.store.purge(100).await.unwrap();
    assert_eq!(
        (report.actions, report.action_attempts),
        (1, 3),
        "{report:?}"
    );
    let mut s = h.store.session().await.unwrap();
    assert!(s
        .replaced_attempts(&h.tenant, &key)
        .await
        .unwrap()
        .is_empty());
}

async fn http_keys_replay_conflict_and_mismatch(h: &H) {
    let req = HttpRequestKey {
        client_key: "ck-1",
        fingerprint: "fp-a",
        method: "POST",
        path: "/v1/intents",
    };
    let lock = Duration::from_secs(60);
    let mut s = h.store.session().await.unwrap();
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::InProgress
    );
    let other = HttpRequestKey {
        fingerprint: "fp-b",
        ..req.clone()
    };
    assert_eq!(
        s.http_begin(&h.tenant, &other, lock).await.unwrap(),
        HttpBegin::Mismatch
    );
    let stored = StoredResponse {
        status: 201,
        headers: "[[\"content-type\",\"application/json\"]]".into(),
        body: b"{\"id\": 1,\n \"\xc3\xa7\": true}\x00".to_vec(),
    };
    s.http_complete(&h.tenant, &req, &stored).await.unwrap();
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::Replay(stored.clone())
    );
    assert_eq!(
        s.http_begin(&h.tenant, &other, lock).await.unwrap(),
        HttpBegin::Mismatch
    );
    // Completing twice is refused: the record is no longer in progress.
    assert!(matches!(
        s.http_complete(&h.tenant, &req, &stored).await,
        Err(Error::HttpKeyNotHeld)
    ));
    // After the default 24 h the key is free again.
    h.clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(
        s.http_begin(&h.tenant, &other, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    // A failed request releases its key so the retry runs.
    s.http_release(&h.tenant, &other).await.unwrap();
    assert_eq!(
        s.http_begin(&h.tenant, &other, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    // A request that died holding the lock frees it after the lock, for the same request only.
    h.clock.advance(Duration::from_secs(61));
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::Mismatch
    );
    assert_eq!(
        s.http_begin(&h.tenant, &other, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    // Per-tenant retention shortens the record's life.
    let short = h.tenant("curto");
    let mut r = s.retention(&short).await.unwrap();
    assert_eq!(r, Retention::default());
    r.http_ms = 1_000;
    s.set_retention(&short, &r).await.unwrap();
    assert_eq!(
        s.http_begin(&short, &req, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    s.http_complete(&short, &req, &stored).await.unwrap();
    h.clock.advance(Duration::from_millis(1_001));
    assert_eq!(
        s.http_begin(&short, &req, lock).await.unwrap(),
        HttpBegin::Proceed
    );
}

async fn consume_once_follows_the_transaction(h: &H) {
    assert_eq!(
        h.store
            .consume_once(&h.tenant, "whatsapp", "wamid.1")
            .await
            .unwrap(),
        Consumed::First
    );
    assert_eq!(
        h.store
            .consume_once(&h.tenant, "whatsapp", "wamid.1")
            .await
            .unwrap(),
        Consumed::Duplicate
    );
    assert_eq!(
        h.store
            .consume_once(&h.tenant, "stripe", "wamid.1")
            .await
            .unwrap(),
        Consumed::First
    );
    // Consumed inside a transaction that rolls back: not consumed.
    let mut tx = h.store.transaction().await.unwrap();
    assert_eq!(
        tx.consume_once(&h.tenant, "whatsapp", "wamid.2")
            .await
            .unwrap(),
        Consumed::First
    );
    tx.rollback().await.unwrap();
    let mut tx = h.store.transaction().await.unwrap();
    assert_eq!(
        tx.consume_once(&h.tenant, "whatsapp", "wamid.2")
            .await
            .unwrap(),
        Consumed::First
    );
    tx.commit().await.unwrap();
    assert_eq!(
        h.store
            .consume_once(&h.tenant, "whatsapp", "wamid.2")
            .await
            .unwrap(),
        Consumed::Duplicate
    );
}

async fn outbox_commits_with_the_action(h: &H) {
    let lease = Duration::from_secs(30);
    let mut tx = h.store.transaction().await.unwrap();
    let Begin::Claimed { token, .. } = tx
        .begin_action(&h.tenant, &pix_action(), &k(20), lease)
        .await
        .unwrap()
    else {
        panic!()
    };
    tx.complete(&h.tenant, &k(20), token, "{\"ok\":true}")
        .await
        .unwrap();
    let id1 = tx
        .outbox_enqueue(&h.tenant, "payments", "{\"paid\":\"FAT-20\"}")
        .await
        .unwrap();
    let id2 = tx
        .outbox_enqueue(&h.tenant, "payments", "{\"paid\":\"FAT-21\"}")
        .await
        .unwrap();
    assert!(id2 > id1);
    tx.commit().await.unwrap();
    let mut relay = h.store.transaction().await.unwrap();
    let pending = relay.outbox_fetch(&h.tenant, 10).await.unwrap();
    assert_eq!(
        pending.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![id1, id2]
    );
    assert_eq!(pending[0].payload, "{\"paid\":\"FAT-20\"}");
    assert_eq!(relay.outbox_mark_sent(&h.tenant, &[id1]).await.unwrap(), 1);
    relay.commit().await.unwrap();
    let mut s = h.store.session().await.unwrap();
    let left = s.outbox_fetch(&h.tenant, 10).await.unwrap();
    assert_eq!(left.iter().map(|m| m.id).collect::<Vec<_>>(), vec![id2]);
    assert_eq!(
        s.outbox_mark_sent(&h.tenant, &[id1, id2]).await.unwrap(),
        1,
        "id1 was already sent"
    );
    assert!(s.outbox_fetch(&h.tenant, 10).await.unwrap().is_empty());
    if h.store.backend() == Backend::Postgres {
        // Two relays at once take disjoint messages (SKIP LOCKED).
        let mut w = h.store.session().await.unwrap();
        for i in 0..4 {
            w.outbox_enqueue(&h.tenant, "t", &i.to_string())
                .await
                .unwrap();
        }
        let mut r1 = h.store.transaction().await.unwrap();
        let mut r2 = h.store.transaction().await.unwrap();
        let a = r1.outbox_fetch(&h.tenant, 2).await.unwrap();
        let b = r2.outbox_fetch(&h.tenant, 10).await.unwrap();
        assert_eq!((a.len(), b.len()), (2, 2));
        assert!(a.iter().all(|m| b.iter().all(|n| n.id != m.id)));
    }
}

async fn rolled_back_transaction_leaves_no_trace(h: &H) {
    let mut tx = h.store.transaction().await.unwrap();
    let p_json = pix("FAT-RB", "50.00");
    let p = Payload::from_json(&p_json).unwrap();
    let r = tx
        .record_intent(&h.tenant, "pix.cobranca", &p)
        .await
        .unwrap();
    tx.begin_action(&h.tenant, &pix_action(), &r.key, Duration::from_secs(30))
        .await
        .unwrap();
    tx.outbox_enqueue(&h.tenant, "payments", "x").await.unwrap();
    tx.consume_once(&h.tenant, "q", "e-rb").await.unwrap();
    drop(tx); // the worker dies mid-way: nothing was committed
    let mut s = h.store.session().await.unwrap();
    assert!(matches!(
        s.intent(&h.tenant, "pix.cobranca", "FAT-RB").await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        s.action(&h.tenant, &r.key).await,
        Err(Error::NotFound)
    ));
    assert!(s.outbox_fetch(&h.tenant, 10).await.unwrap().is_empty());
    assert_eq!(
        s.consume_once(&h.tenant, "q", "e-rb").await.unwrap(),
        Consumed::First
    );
    // Nor did its statistics count.
    let report = h
        .store
        .stats(&h.tenant, Granularity::Day, T0, T0 + 1)
        .await
        .unwrap();
    assert_eq!(
        (report.totals.intents, report.totals.actions_started),
        (0, 0)
    );
}

/// The reproduction: action retention 1 s, a claim with a 1 s lease, 2 s
/// later a purge. The action must survive as uncertain (with its intent),
/// and the next `begin` must say so instead of claiming afresh. Settled
/// actions (completed, failed for good, reconciled) still go.
async fn retention_never_removes_an_unsettled_action_or_its_intent(h: &H) {
    let mut s = h.store.session().await.unwrap();
    s.set_retention(
        &h.tenant,
        &Retention {
            intent_ms: 1_000,
            action_ms: 1_000,
            http_ms: 1_000,
        },
    )
    .await
    .unwrap();
    let lease = Duration::from_secs(1);
    let unknown = record(h, &h.tenant, &pix("UNKNOWN", "1.00")).await;
    h.store
        .begin_action(&h.tenant, &pix_action(), &unknown.key, lease)
        .await
        .unwrap();
    // A retryable failure is not settled either: a retry may still come.
    let retry = record(h, &h.tenant, &pix("RETRY", "2.00")).await;
    let Begin::Claimed { token, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action(), &retry.key, lease)
        .await
        .unwrap()
    else {
        panic!()
    };
    s.fail(&h.tenant, &retry.key, token, "timeout", true)
        .await
        .unwrap();
    // Settled: completed, failed for good.
    let done = record(h, &h.tenant, &pix("DONE", "3.00")).await;
    let refused = record(h, &h.tenant, &pix("REFUSED", "4.00")).await;
    for (key, ok) in [(&done.key, true), (&refused.key, false)] {
        let Begin::Claimed { token, .. } = h
            .store
            .begin_action(&h.tenant, &pix_action(), key, lease)
            .await
            .unwrap()
        else {
            panic!()
        };
        if ok {
            s.complete(&h.tenant, key, token, "{}").await.unwrap();
        } else {
            s.fail(&h.tenant, key, token, "card refused", false)
                .await
                .unwrap();
        }
    }
    h.clock.advance(Duration::from_secs(2));
    let report = h.store.purge(100).await.unwrap();
    assert_eq!(report.leases_expired, 1, "{report:?}");
    assert_eq!(report.actions, 2, "only the settled two: {report:?}");
    assert_eq!(
        report.intents, 2,
        "only the settled two's intents: {report:?}"
    );
    assert_eq!(report.unresolved_kept, 2, "{report:?}");
    let a = s.action(&h.tenant, &unknown.key).await.unwrap();
    assert_eq!(a.state, ActionState::Uncertain);
    assert!(s.intent(&h.tenant, "pix.cobranca", "UNKNOWN").await.is_ok());
    assert!(s.intent(&h.tenant, "pix.cobranca", "RETRY").await.is_ok());
    assert!(matches!(
        s.action(&h.tenant, &done.key).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        s.intent(&h.tenant, "pix.cobranca", "DONE").await,
        Err(Error::NotFound)
    ));
    // The next claim learns that an attempt's outcome is unknown.
    let Begin::Uncertain { token, attempt, .. } = h
        .store
        .begin_action(&h.tenant, &pix_action(), &unknown.key, lease)
        .await
        .unwrap()
    else {
        panic!("expected uncertain")
    };
    assert_eq!(attempt, 2);
    // Once reconciled it is settled, and the next purge past retention
    // removes it and its intent; the retryable failure still waits.
    s.reconcile(
        &h.tenant,
        &unknown.key,
        token,
        &Outcome::Completed("{}".into()),
    )
    .await
    .unwrap();
    h.clock.advance(Duration::from_secs(2));
    let report = h.store.purge(100).await.unwrap();
    assert_eq!((report.actions, report.intents), (1, 1), "{report:?}");
    assert_eq!(report.unresolved_kept, 1, "RETRY waits: {report:?}");
    assert!(matches!(
        s.intent(&h.tenant, "pix.cobranca", "UNKNOWN").await,
        Err(Error::NotFound)
    ));
}

/// A consumer that dies between its claim and its effect does not lose the
/// event: after the lease the next delivery claims it (attempt 2, previous
/// `expired`). A stale holder cannot settle it; a completed event is a
/// duplicate; a retryable failure releases it; marks written by
/// `consume_once` are completed events.
async fn events_are_claimed_with_a_lease(h: &H) {
    let mut s = h.store.session().await.unwrap();
    let lease = Duration::from_secs(30);
    let t = &h.tenant;
    let EventClaim::Claimed {
        token: first,
        attempt: 1,
        previous: None,
        ..
    } = s.claim_event(t, "q", "e1", lease).await.unwrap()
    else {
        panic!("first claim")
    };
    assert!(matches!(
        s.claim_event(t, "q", "e1", lease).await.unwrap(),
        EventClaim::InFlight { lease_until_ms } if lease_until_ms == T0 + 30_000
    ));
    // The holder dies; the lease runs out; the next delivery claims it.
    h.clock.advance(Duration::from_secs(31));
    let EventClaim::Claimed {
        token: second,
        attempt: 2,
        previous: Some(previous),
        ..
    } = s.claim_event(t, "q", "e1", lease).await.unwrap()
    else {
        panic!("claim after the lease")
    };
    assert_eq!(previous, "expired");
    assert!(second > first);
    // The first holder wakes up: refused, nothing changes.
    assert!(matches!(
        s.settle_event(t, "q", "e1", first, EventOutcome::Completed)
            .await,
        Err(Error::StaleToken { .. })
    ));
    s.settle_event(t, "q", "e1", second, EventOutcome::Completed)
        .await
        .unwrap();
    // Saying it twice is fine; then every delivery is a duplicate.
    s.settle_event(t, "q", "e1", second, EventOutcome::Completed)
        .await
        .unwrap();
    h.clock.advance(Duration::from_secs(3600));
    assert_eq!(
        s.claim_event(t, "q", "e1", lease).await.unwrap(),
        EventClaim::Completed
    );
    // Retryable failure: released, claimed again; final failure: dropped.
    let EventClaim::Claimed { token, .. } = s.claim_event(t, "q", "e2", lease).await.unwrap()
    else {
        panic!()
    };
    s.settle_event(t, "q", "e2", token, EventOutcome::Released)
        .await
        .unwrap();
    let EventClaim::Claimed {
        token,
        attempt: 2,
        previous: Some(previous),
        ..
    } = s.claim_event(t, "q", "e2", lease).await.unwrap()
    else {
        panic!("claim after release")
    };
    assert_eq!(previous, "released");
    s.settle_event(t, "q", "e2", token, EventOutcome::Failed)
        .await
        .unwrap();
    assert_eq!(
        s.claim_event(t, "q", "e2", lease).await.unwrap(),
        EventClaim::Failed
    );
    // Unknown events: nothing to settle.
    assert!(matches!(
        s.settle_event(t, "q", "nope", 1, EventOutcome::Completed)
            .await,
        Err(Error::NotFound)
    ));
    // The library's same-transaction mark is a completed event.
    assert_eq!(s.consume_once(t, "q", "e3").await.unwrap(), Consumed::First);
    assert_eq!(
        s.claim_event(t, "q", "e3", lease).await.unwrap(),
        EventClaim::Completed
    );
    // Tenants never see each other's events.
    assert!(matches!(
        s.claim_event(&h.tenant("outro"), "q", "e1", lease)
            .await
            .unwrap(),
        EventClaim::Claimed { attempt: 1, .. }
    ));
}

async fn retention_purges_in_batches_and_keeps_recent_rows(h: &H) {
    let day = Duration::from_secs(24 * 3600);
    for i in 0..7 {
        record(h, &h.tenant, &pix(&format!("OLD-{i}"), "1.00")).await;
    }
    let mut s = h.store.session().await.unwrap();
    s.consume_once(&h.tenant, "q", "old").await.unwrap();
    let sent = s.outbox_enqueue(&h.tenant, "t", "sent").await.unwrap();
    s.outbox_enqueue(&h.tenant, "t", "pending").await.unwrap();
    s.outbox_mark_sent(&h.tenant, &[sent]).await.unwrap();
    let Begin::Claimed { token, .. } = s
        .begin_action(&h.tenant, &pix_action(), &k(30), Duration::from_secs(5))
        .await
        .unwrap()
    else {
        panic!()
    };
    s.complete(&h.tenant, &k(30), token, "{}").await.unwrap();
    // A tenant with a longer retention keeps its rows.
    let long = h.tenant("guarda-tudo");
    s.set_retention(
        &long,
        &Retention {
            intent_ms: 30 * 86_400_000,
            action_ms: 30 * 86_400_000,
            http_ms: 86_400_000,
        },
    )
    .await
    .unwrap();
    record(h, &long, &pix("LONG", "1.00")).await;
    h.clock.advance(day * 6);
    // One intent is redelivered on day 6: its last delivery keeps it.
    record(h, &h.tenant, &pix("OLD-0", "1.00")).await;
    record(h, &h.tenant, &pix("NEW", "1.00")).await;
    h.clock.advance(day * 2);
    let report = h.store.purge(3).await.unwrap();
    assert_eq!(report.intents, 6, "{report:?}");
    assert_eq!(
        (report.consumed_events, report.outbox, report.actions),
        (1, 1, 1),
        "{report:?}"
    );
    assert!(
        report.batches > 9,
        "6 intents in batches of 3 and every table: {report:?}"
    );
    assert!(s.intent(&h.tenant, "pix.cobranca", "OLD-0").await.is_ok());
    assert!(s.intent(&h.tenant, "pix.cobranca", "NEW").await.is_ok());
    assert!(matches!(
        s.intent(&h.tenant, "pix.cobranca", "OLD-1").await,
        Err(Error::NotFound)
    ));
    assert!(s.intent(&long, "pix.cobranca", "LONG").await.is_ok());
    assert_eq!(
        s.outbox_fetch(&h.tenant, 10).await.unwrap().len(),
        1,
        "pending messages are never purged"
    );
    // Purging again finds nothing more.
    let again = h.store.purge(3).await.unwrap();
    assert_eq!(
        again.intents + again.actions + again.outbox + again.consumed_events,
        0
    );
}

async fn statistics_count_what_happened(h: &H) {
    let t = &h.tenant;
    record(h, t, &pix("S-1", "10.00")).await;
    record(h, t, &pix("S-2", "10.00")).await;
    record(h, t, &pix("S-3", "10.00")).await;
    record(h, t, &pix("S-4", "10.00")).await;
    h.clock.advance(Duration::from_millis(1_500));
    record(h, t, &pix("S-1", "10.00")).await; // redelivery after 1.5 s
    h.clock.advance(Duration::from_secs(60));
    record(h, t, &pix("S-1", "11.00")).await; // divergent, 61.5 s after the first
    let lease = Duration::from_secs(1);
    let mut s = h.store.session().await.unwrap();
    let Begin::Claimed { token, .. } = s
        .begin_action(t, &pix_action(), &k(40), lease)
        .await
        .unwrap()
    else {
        panic!()
    };
    s.complete(t, &k(40), token, "{}").await.unwrap();
    s.begin_action(t, &pix_action(), &k(41), lease)
        .await
        .unwrap();
    h.clock.advance(Duration::from_secs(2));
    s.begin_action(t, &pix_action(), &k(41), lease)
        .await
        .unwrap(); // takeover: uncertain
    let req = HttpRequestKey {
        client_key: "c",
        fingerprint: "f",
        method: "POST",
        path: "/",
    };
    s.http_begin(t, &req, lease).await.unwrap();
    h.clock.advance(Duration::from_secs(2));
    // The first request died holding the lock; the retry takes it over.
    assert_eq!(
        s.http_begin(t, &req, Duration::from_secs(60))
            .await
            .unwrap(),
        HttpBegin::Proceed
    );
    s.http_begin(t, &req, lease).await.unwrap(); // 409
    s.http_begin(
        t,
        &HttpRequestKey {
            fingerprint: "g",
            ..req.clone()
        },
        lease,
    )
    .await
    .unwrap(); // 422
    let r = h
        .store
        .stats(t, Granularity::Hour, T0, T0 + 3_600_000)
        .await
        .unwrap();
    let n = &r.totals;
    assert_eq!(
        (
            n.intents,
            n.deliveries,
            n.redeliveries,
            n.redelivered_intents,
            n.divergences
        ),
        (4, 6, 2, 1, 1)
    );
    assert_eq!(
        (n.actions_started, n.actions_completed, n.actions_uncertain),
        (3, 1, 1)
    );
    assert_eq!((n.http_409, n.http_422, n.http_replays), (1, 1, 0));
    assert_eq!(r.duplicate_rate_pct, Some(25.0));
    assert_eq!(r.delay.count, 2);
    assert_eq!(r.delay.max_ms, Some(61_500));
    assert_eq!(r.delay.p50_ms, Some(2_000), "1.5 s falls in the 2 s bucket");
    // Minute buckets split the same counts by minute.
    let m = h
        .store
        .stats(t, Granularity::Minute, T0, T0 + 3_600_000)
        .await
        .unwrap();
    let pix_minutes: Vec<_> = m
        .buckets
        .iter()
        .filter(|b| b.action == "pix.cobranca")
        .collect();
    assert!(pix_minutes.len() >= 2);
    assert_eq!(
        pix_minutes.iter().map(|b| b.counts.deliveries).sum::<i64>(),
        6
    );
    // Other tenants see nothing of it; the admin view sees it by tenant.
    let other = h
        .store
        .stats(&h.tenant("outra"), Granularity::Hour, T0, T0 + 3_600_000)
        .await
        .unwrap();
    assert!(other.buckets.is_empty());
    assert_eq!(other.duplicate_rate_pct, None);
    let admin = h
        .store
        .admin_totals(Granularity::Day, T0, T0 + 86_400_000)
        .await
        .unwrap();
    let mine = admin.iter().find(|x| x.tenant == t.as_str()).unwrap();
    assert_eq!((mine.intents, mine.redelivered_intents), (4, 1));
    // A second flush adds to the same rows rather than replacing them.
    record(h, t, &pix("S-5", "10.00")).await;
    let r2 = h
        .store
        .stats(t, Granularity::Hour, T0, T0 + 3_600_000)
        .await
        .unwrap();
    assert_eq!(r2.totals.intents, 5);
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

/// Counts are journaled with the writes they count: a process that dies
/// without ever flushing (a store dropped without `close`, no flusher: what
/// a SIGKILL leaves) loses none of them, and another process reads them all.
/// A rolled-back transaction counts nothing.
async fn counts_survive_a_process_that_never_flushed(h: &H) {
    let t = &h.tenant;
    let crashed = Store::connect(&h.db.url, options(&h.clock)).await.unwrap();
    record_all(&crashed, t, 0..200, 2).await;
    let mut s = crashed.session().await.unwrap();
    let lease = Duration::from_secs(30);
    let Begin::Claimed { token, .. } = s
        .begin_action(t, &pix_action(), &k(7), lease)
        .await
        .unwrap()
    else {
        panic!("a first claim")
    };
    s.complete(t, &k(7), token, "{}").await.unwrap();
    let mut tx = crashed.transaction().await.unwrap();
    tx.begin_action(t, &pix_action(), &k(8), lease)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let mut tx = crashed.transaction().await.unwrap();
    tx.begin_action(t, &pix_action(), &k(9), lease)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    drop(s);
    drop(crashed);
    let r = hour(h, t).await;
    let n = &r.totals;
    assert_eq!(
        (
            n.intents,
            n.deliveries,
            n.redeliveries,
            n.redelivered_intents
        ),
        (200, 400, 200, 200)
    );
    assert_eq!(r.duplicate_rate_pct, Some(100.0));
    assert_eq!(
        (n.actions_started, n.actions_completed),
        (2, 1),
        "k(8) rolled back"
    );
    assert_eq!(r.delay.count, 200);
}

/// Two processes fold the same journal at once: each row is counted once.
async fn two_processes_fold_each_count_once(h: &H) {
    let t = &h.tenant;
    let other = Store::connect(&h.db.url, options(&h.clock)).await.unwrap();
    let (a, b) = tokio::join!(
        record_all(&h.store, t, 0..150, 1),
        record_all(&other, t, 100..250, 1)
    );
    let ((), ()) = (a, b);
    let (x, y) = tokio::join!(h.store.flush_stats(), other.flush_stats());
    x.unwrap();
    y.unwrap();
    let n = hour(h, t).await.totals;
    assert_eq!(
        (n.intents, n.deliveries, n.redelivered_intents),
        (250, 300, 50)
    );
    other.close().await;
}

/// Of several instances on one database, one holds a chore's lease at a
/// time: it renews it (same fence), the others are refused while it runs,
/// and once it runs out exactly one of many racing instances takes it over,
/// with the next fence. Chores are leased apart from one another.
async fn one_instance_leads_a_chore_until_its_lease_runs_out(h: &H) {
    let mut others = Vec::new();
    for _ in 0..4 {
        others.push(Store::connect(&h.db.url, options(&h.clock)).await.unwrap());
    }
    assert_ne!(h.store.instance(), others[0].instance());
    assert_eq!(h.store.lead(Chore::Purge, 3_000).await.unwrap(), Some(1));
    for o in &others {
        assert_eq!(o.lead(Chore::Purge, 3_000).await.unwrap(), None);
    }
    h.clock.advance(Duration::from_millis(2_000));
    // A renewal keeps the fence and pushes the lease on.
    assert_eq!(h.store.lead(Chore::Purge, 3_000).await.unwrap(), Some(1));
    h.clock.advance(Duration::from_millis(2_000));
    assert_eq!(others[0].lead(Chore::Purge, 3_000).await.unwrap(), None);
    // Another chore is its own lease.
    assert_eq!(others[1].lead(Chore::Alerts, 3_000).await.unwrap(), Some(1));
    // The holder stops renewing; when its lease has run out, four
    // instances race for it and one wins.
    h.clock.advance(Duration::from_millis(1_000));
    let racers: Vec<_> = others
        .iter()
        .map(|o| {
            let o = o.clone();
            tokio::spawn(async move { o.lead(Chore::Purge, 3_000).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for r in racers {
        won.extend(r.await.unwrap());
    }
    assert_eq!(won, [2], "one taker, with the next fence");
    assert_eq!(h.store.lead(Chore::Purge, 3_000).await.unwrap(), None);
    for o in others {
        o.close().await;
    }
}

/// `idem stats rebuild` recounts what the tables can tell (here after the
/// rollups and journal were lost, as counts were before they were journaled),
/// keeps what they cannot (HTTP counters), and is idempotent.
async fn rebuild_recounts_the_rollups_from_the_tables(h: &H) {
    let t = &h.tenant;
    record_all(&h.store, t, 0..10, 1).await;
    record_all(&h.store, t, 0..4, 1).await;
    let mut s = h.store.session().await.unwrap();
    s.correct_intent(
        t,
        "pix.cobranca",
        &Payload::from_json(&pix("J-0", "12.00")).unwrap(),
        "typo",
    )
    .await
    .unwrap();
    let lease = Duration::from_secs(30);
    let Begin::Claimed { token, .. } = s
        .begin_action(t, &pix_action(), &k(1), lease)
        .await
        .unwrap()
    else {
        panic!("a first claim")
    };
    s.complete(t, &k(1), token, "{}").await.unwrap();
    s.begin_action(t, &pix_action(), &k(2), lease)
        .await
        .unwrap();
    let req = HttpRequestKey {
        client_key: "c",
        fingerprint: "f",
        method: "POST",
        path: "/",
    };
    s.http_begin(t, &req, lease).await.unwrap();
    s.http_begin(t, &req, lease).await.unwrap(); // 409
    drop(s);
    let live = hour(h, t).await.totals;
    assert_eq!(
        (
            live.intents,
            live.deliveries,
            live.redelivered_intents,
            live.corrections
        ),
        (10, 14, 4, 1)
    );
    // Recounting live data changes nothing the tables can tell.
    let rebuilt = h.store.rebuild_stats(Some(t), 0).await.unwrap();
    assert_eq!(rebuilt.tenants, 1);
    let again = hour(h, t).await.totals;
    assert_eq!(again, live);
    // Counts lost (the rollups and the journal emptied): recounted, except
    // the HTTP counter, which no row records.
    h.db.execute("delete from stats_rollup; delete from stats_delay; delete from stats_journal")
        .await;
    assert_eq!(hour(h, t).await.totals.intents, 0);
    let all = h.store.rebuild_stats(None, T0 - 86_400_000).await.unwrap();
    assert_eq!(all.tenants, 1);
    let n = hour(h, t).await.totals;
    assert_eq!(
        (
            n.intents,
            n.deliveries,
            n.redeliveries,
            n.redelivered_intents,
            n.corrections
        ),
        (10, 14, 4, 4, 1)
    );
    assert_eq!(
        (n.actions_started, n.actions_completed, n.http_409),
        (2, 1, 0)
    );
    // Twice is once.
    h.store.rebuild_stats(Some(t), 0).await.unwrap();
    assert_eq!(hour(h, t).await.totals, n);
    // Buckets before `since` are left alone.
    h.db.execute("delete from stats_rollup").await;
    h.store
        .rebuild_stats(Some(t), T0 + 86_400_000)
        .await
        .unwrap();
    assert_eq!(hour(h, t).await.totals.intents, 0);
}

async fn sixty_four_concurrent_records_make_one_row(h: &H) {
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            tokio::spawn(async move {
                let json = pix("FAT-64", "180.00");
                let p = Payload::from_json(&json).unwrap();
                store
                    .record_intent(&tenant, "pix.cobranca", &p)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    assert_eq!(
        results.iter().filter(|r| r.inserted).count(),
        1,
        "exactly one first write"
    );
    assert!(results.iter().all(|r| r.key == results[0].key));
    let mut counts: Vec<i64> = results.iter().map(|r| r.deliveries).collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        (1..=64).collect::<Vec<_>>(),
        "each delivery has its own number"
    );
    let stored = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-64")
        .await
        .unwrap();
    assert_eq!((stored.deliveries, stored.divergences), (64, 0));
}

/// Concurrent records share one write (flat combining). Callers that go
/// away mid-write (an HTTP client that disconnects drops its handler) must
/// not take the others' answers with them: every caller that stays gets its
/// intent. Found by `idem simulate --broker`, whose killed workers made
/// other workers' `POST /v1/intents` fail with 503.
async fn a_caller_that_goes_away_never_fails_the_others(h: &H) {
    for round in 0..20u32 {
        let tasks: Vec<_> = (0..32u32)
            .map(|i| {
                let store = h.store.clone();
                let tenant = h.tenant.clone();
                tokio::spawn(async move {
                    let json = pix(&format!("GONE-{round}-{i}"), "180.00");
                    let p = Payload::from_json(&json).unwrap();
                    store.record_intent(&tenant, "pix.cobranca", &p).await
                })
            })
            .collect();
        // Somewhere inside the writes, by round.
        tokio::time::sleep(Duration::from_micros(u64::from(round) * 100)).await;
        let mut kept = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            if i % 2 == 1 {
                t.abort();
            } else {
                kept.push(t);
            }
        }
        for t in kept {
            let recorded = t.await.unwrap();
            assert!(recorded.is_ok(), "round {round}: {recorded:?}");
        }
    }
}

async fn sixty_four_concurrent_begins_make_one_claim(h: &H) {
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            tokio::spawn(async move {
                store
                    .begin_action(&tenant, &pix_action(), &k(64), Duration::from_secs(30))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Begin::Claimed { token: 1, .. } => claimed += 1,
            Begin::InFlight { lease_until_ms } => assert_eq!(lease_until_ms, T0 + 30_000),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, 1);
    let a = h
        .store
        .session()
        .await
        .unwrap()
        .action(&h.tenant, &k(64))
        .await
        .unwrap();
    assert_eq!((a.token, a.attempts), (1, 1));
}

async fn concurrent_divergent_candidates_keep_the_first(h: &H) {
    let tasks: Vec<_> = (0..48)
        .map(|i| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            tokio::spawn(async move {
                let valor = if i % 3 == 0 { "999.00" } else { "180.00" };
                let json = pix("FAT-DIV", valor);
                let p = Payload::from_json(&json).unwrap();
                store
                    .record_intent(&tenant, "pix.cobranca", &p)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    let frozen = results.iter().find(|r| r.inserted).unwrap();
    assert!(results
        .iter()
        .all(|r| r.key == frozen.key && r.payload == frozen.payload));
    let diverged = results.iter().filter(|r| r.diverged).count();
    let losers = results
        .iter()
        .filter(|r| r.candidate_key != frozen.key)
        .count();
    assert_eq!(diverged, losers);
    assert!(
        diverged == 16 || diverged == 32,
        "one of the two payloads lost: {diverged}"
    );
    let stored = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-DIV")
        .await
        .unwrap();
    assert_eq!(stored.deliveries, 48);
    assert_eq!(stored.divergences, i64::try_from(diverged).unwrap());
}

async fn closed_store_gives_errors_not_answers(h: &H) {
    // A second handle on the same database, closed while work is running.
    let store = h.store.clone();
    let tenant = h.tenant.clone();
    let worker = tokio::spawn(async move {
        let mut ok = 0u32;
        let mut failed = 0u32;
        // Runs until the close has surfaced several times, however fast the machine.
        for i in 0..1_000_000 {
            if failed >= 10 {
                break;
            }
            let json = pix(&format!("KILL-{i}"), "1.00");
            let p = Payload::from_json(&json).unwrap();
            match store.record_intent(&tenant, "pix.cobranca", &p).await {
                Ok(r) => {
                    assert!(
                        r.inserted,
                        "every reference is new: a success is a real first write"
                    );
                    ok += 1;
                }
                Err(e) => {
                    assert!(
                        matches!(
                            e,
                            Error::Database(_) | Error::Shared(_) | Error::Unavailable(_)
                        ),
                        "{e:?}"
                    );
                    failed += 1;
                }
            }
        }
        (ok, failed)
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    h.store.close().await;
    let (ok, failed) = worker.await.unwrap();
    assert!(
        failed > 0,
        "closing mid-run must surface as errors (ok={ok})"
    );
    assert!(h.store.ping().await.is_err());
    assert!(h
        .store
        .begin_action(&h.tenant, &pix_action(), &k(99), Duration::from_secs(1))
        .await
        .is_err());
}

async fn empty_reference_and_unknown_action_are_refused(h: &H) {
    let p_json = pix("   ", "1.00");
    let p = Payload::from_json(&p_json).unwrap();
    assert!(matches!(
        h.store.record_intent(&h.tenant, "pix.cobranca", &p).await,
        Err(Error::Invalid(_))
    ));
    let p_json = pix("FAT-X", "1.00");
    let p = Payload::from_json(&p_json).unwrap();
    let e = h
        .store
        .record_intent(&h.tenant, "pix.estorno", &p)
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Invalid(ref m) if m.contains("pix.estorno")),
        "{e:?}"
    );
    let p_json = pix("FAT-X", "um real");
    let p = Payload::from_json(&p_json).unwrap();
    assert!(matches!(
        h.store.record_intent(&h.tenant, "pix.cobranca", &p).await,
        Err(Error::Invalid(_))
    ));
    // A reference has a length, the same on both backends, far below what
    // PostgreSQL's index holds: over it is the caller's error, never an outage.
    let longest = "R".repeat(MAX_REFERENCE_CHARS);
    let p_json = pix(&longest, "1.00");
    let p = Payload::from_json(&p_json).unwrap();
    h.store
        .record_intent(&h.tenant, "pix.cobranca", &p)
        .await
        .unwrap();
    for too_long in ["R".repeat(MAX_REFERENCE_CHARS + 1), "é".repeat(3000)] {
        let p_json = pix(&too_long, "1.00");
        let p = Payload::from_json(&p_json).unwrap();
        let e = h
            .store
            .record_intent(&h.tenant, "pix.cobranca", &p)
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Invalid(ref m) if m.contains("at most 255") && m.contains("referencia_intencao")),
            "{e:?}"
        );
    }
}

/// Fault injection on Postgres: every backend connection of the store is
/// terminated mid-run. Calls fail or succeed; none lies. A success is a real
/// row; a failure may have committed before the reply was lost, and
/// recording it again then finds that row instead of making a second one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "PostgreSQL: needs IDEM_TEST_POSTGRES_URL and --include-ignored (scripts/test passes both)"]
async fn postgres_backends_killed_mid_run() {
    let h = postgres().await.expect("IDEM_TEST_POSTGRES_URL is not set");
    let (admin, schema) = h.db.postgres_schema().unwrap();
    let store = h.store.clone();
    let tenant = h.tenant.clone();
    let worker = tokio::spawn(async move {
        let mut outcomes = Vec::new();
        for i in 0..600 {
            let json = pix(&format!("PG-KILL-{i}"), "1.00");
            let p = Payload::from_json(&json).unwrap();
            outcomes.push(
                store
                    .record_intent(&tenant, "pix.cobranca", &p)
                    .await
                    .map(|r| r.inserted),
            );
        }
        outcomes
    });
    let mut killed = 0i64;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(40)).await;
        // This store's connections only: parallel tests keep theirs.
        let n: i64 = sqlx::query_scalar(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity
             where application_name = $1",
        )
        .bind(&schema)
        .fetch_one(&admin)
        .await
        .unwrap();
        killed += n;
    }
    let outcomes = worker.await.unwrap();
    assert!(killed > 0, "the test must actually kill connections");
    let errors = outcomes.iter().filter(|o| o.is_err()).count();
    for (i, o) in outcomes.iter().enumerate() {
        let json = pix(&format!("PG-KILL-{i}"), "1.00");
        let p = Payload::from_json(&json).unwrap();
        let again = h
            .store
            .record_intent(&h.tenant, "pix.cobranca", &p)
            .await
            .unwrap();
        match o {
            Ok(inserted) => {
                assert!(inserted, "each reference is new");
                assert!(
                    !again.inserted && again.deliveries == 2,
                    "a reported success is a stored row"
                );
            }
            Err(_) => assert!(again.deliveries <= 2, "never a second row"),
        }
    }
    eprintln!("killed {killed} connections; {errors} of 600 calls failed, none wrongly");
    h.done().await;
}

/// Waits until one of this store's connections waits on a row lock: the
/// chore under test has read its candidates and now stands behind the
/// test's open transaction.
async fn until_blocked(h: &H) {
    let (admin, schema) = h.db.postgres_schema().unwrap();
    for _ in 0..400 {
        let waiting: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity
             where application_name = $1 and wait_event_type = 'Lock'",
        )
        .bind(&schema)
        .fetch_one(&admin)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the chore never waited on the open transaction's row");
}

/// The sweep picks expired claims in a subquery and updates them in the
/// outer statement. On PostgreSQL a row another transaction changes in
/// between is re-checked against the outer statement's conditions only:
/// an outcome committed while the sweep ran must survive it, never turn
/// uncertain behind the back of a client that was told "completed".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "PostgreSQL: needs IDEM_TEST_POSTGRES_URL and --include-ignored (scripts/test passes both)"]
async fn postgres_an_outcome_committed_while_the_sweep_runs_survives_it() {
    let h = postgres().await.expect("IDEM_TEST_POSTGRES_URL is not set");
    let lease = Duration::from_secs(2);
    let token = match h
        .store
        .begin_action(&h.tenant, &pix_action(), &k(1), lease)
        .await
        .unwrap()
    {
        Begin::Claimed { token, .. } => token,
        other => panic!("{other:?}"),
    };
    // The charge took longer than the lease; its worker completes now,
    // its transaction still open when the sweep reads the expired claim.
    h.clock.advance(Duration::from_secs(3));
    let mut tx = h.store.transaction().await.unwrap();
    tx.complete(&h.tenant, &k(1), token, "{\"ok\":true}")
        .await
        .unwrap();
    let store = h.store.clone();
    let sweep = tokio::spawn(async move { store.purge(100).await });
    until_blocked(&h).await;
    tx.commit().await.unwrap();
    let report = sweep.await.unwrap().unwrap();
    let mut s = h.store.session().await.unwrap();
    let a = s.action(&h.tenant, &k(1)).await.unwrap();
    assert_eq!(
        (a.state, a.swept_ms, report.leases_expired),
        (ActionState::Completed, None, 0),
        "the completed outcome stays completed and is not counted uncertain"
    );
    drop(s);
    h.done().await;
}

/// The same for the purge of HTTP key records: a record that expired and
/// is taken again by a new request while the purge runs is that request's
/// lock, and deleting it would let a retry of the request run a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "PostgreSQL: needs IDEM_TEST_POSTGRES_URL and --include-ignored (scripts/test passes both)"]
async fn postgres_a_key_record_taken_again_while_the_purge_runs_survives_it() {
    let h = postgres().await.expect("IDEM_TEST_POSTGRES_URL is not set");
    let req = HttpRequestKey {
        client_key: "ck-purge",
        fingerprint: "fp-a",
        method: "POST",
        path: "/v1/intents",
    };
    let lock = Duration::from_secs(60);
    let mut s = h.store.session().await.unwrap();
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::Proceed
    );
    let stored = StoredResponse {
        status: 201,
        headers: "[]".into(),
        body: b"{}".to_vec(),
    };
    s.http_complete(&h.tenant, &req, &stored).await.unwrap();
    drop(s);
    h.clock.advance(Duration::from_millis(
        Retention::default().http_ms as u64 + 1_000,
    ));
    let mut tx = h.store.transaction().await.unwrap();
    assert_eq!(
        tx.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::Proceed,
        "an expired record is taken afresh"
    );
    let store = h.store.clone();
    let purge = tokio::spawn(async move { store.purge(100).await });
    until_blocked(&h).await;
    tx.commit().await.unwrap();
    let report = purge.await.unwrap().unwrap();
    assert_eq!(report.http_keys, 0, "{report:?}");
    let mut s = h.store.session().await.unwrap();
    assert_eq!(
        s.http_begin(&h.tenant, &req, lock).await.unwrap(),
        HttpBegin::InProgress,
        "the new request still holds its key"
    );
    drop(s);
    h.done().await;
}

async fn tokens_authenticate_only_their_own_tenant(h: &H) {
    let a = h.tenant("acme");
    let b = h.tenant("loja-do-zé");
    let ta = h.store.create_tenant(&a, "ACME Ltda").await.unwrap();
    let tb = h.store.create_tenant(&b, "Loja do Zé").await.unwrap();
    assert_eq!(h.store.tenants().await.unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(h.store.authenticate(ta.expose()).await.unwrap(), a);
    assert_eq!(h.store.authenticate(tb.expose()).await.unwrap(), b);
    assert!(
        !format!("{ta:?}").contains(ta.expose()),
        "Debug never shows a token"
    );
    // A second tenant of the same name is refused.
    assert!(matches!(
        h.store.create_tenant(&a, "again").await,
        Err(Error::TenantExists(_))
    ));
    // B's secret under A's name, a changed character, or noise: not a token.
    let (a_prefix, _) = ta.expose().rsplit_once('_').unwrap();
    let (_, b_secret) = tb.expose().rsplit_once('_').unwrap();
    let forged = format!("{a_prefix}_{b_secret}");
    let mut flipped = ta.expose().to_owned();
    let last = if flipped.ends_with('0') { "1" } else { "0" };
    flipped.replace_range(flipped.len() - 1.., last);
    for bad in [forged.as_str(), flipped.as_str(), "", "Bearer x", "idem_"] {
        assert!(
            matches!(h.store.authenticate(bad).await, Err(Error::NotFound)),
            "{bad:?}"
        );
    }
}

async fn saved_scenarios_are_immutable_and_per_tenant(h: &H) {
    let a = h.tenant("acme");
    let b = h.tenant("other");
    let first = SavedScenario {
        id: "0123456789ab".into(),
        name: "contrato atual".into(),
        query: "v=1&d=0.5".into(),
        created_ms: 1_000,
    };
    let mut s = h.store.session().await.unwrap();
    assert_eq!(s.save_scenario(&a, &first).await.unwrap(), first);
    // Saving it again is idempotent: the first row, with its first time.
    let again = SavedScenario {
        created_ms: 2_000,
        ..first.clone()
    };
    assert_eq!(s.save_scenario(&a, &again).await.unwrap(), first);
    // The id cannot be reused for other content, and the row is unchanged.
    let other = SavedScenario {
        query: "v=1&d=9".into(),
        ..first.clone()
    };
    assert!(matches!(
        s.save_scenario(&a, &other).await,
        Err(Error::ScenarioIdTaken(_))
    ));
    assert_eq!(
        s.scenario(&a, &first.id).await.unwrap(),
        Some(first.clone())
    );
    // Another tenant sees nothing under that id, and may save its own.
    assert_eq!(s.scenario(&b, &first.id).await.unwrap(), None);
    assert_eq!(s.save_scenario(&b, &other).await.unwrap(), other);
    assert_eq!(s.scenario(&a, &first.id).await.unwrap(), Some(first));
}

async fn saved_comparisons_are_immutable_and_apart_from_scenarios(h: &H) {
    let a = h.tenant("acme");
    let first = SavedComparison {
        id: "0123456789ab".into(),
        name: "antes e depois".into(),
        query: "s=v%3D2%26d%3D3&s=v%3D2%26d%3D0".into(),
        created_ms: 1_000,
    };
    let mut s = h.store.session().await.unwrap();
    assert_eq!(s.save_comparison(&a, &first).await.unwrap(), first);
    let again = SavedComparison {
        created_ms: 2_000,
        ..first.clone()
    };
    assert_eq!(s.save_comparison(&a, &again).await.unwrap(), first);
    let other = SavedComparison {
        name: "outro".into(),
        ..first.clone()
    };
    assert!(matches!(
        s.save_comparison(&a, &other).await,
        Err(Error::ScenarioIdTaken(_))
    ));
    assert_eq!(
        s.comparison(&a, &first.id).await.unwrap(),
        Some(first.clone())
    );
    // A comparison is not a scenario: the same id names nothing there.
    assert_eq!(s.scenario(&a, &first.id).await.unwrap(), None);
    assert_eq!(
        s.comparison(&h.tenant("other"), &first.id).await.unwrap(),
        None
    );
}

/// The relay's batch statements: a fan-out takes at most its limit of the
/// oldest pending messages, makes one delivery per endpoint whose topics
/// match (topic and payload copied), and marks exactly those sent; a
/// batch of 2xx outcomes is written under each claim's attempt, and an
/// outcome whose attempt no longer holds its delivery changes nothing.
async fn the_relay_fans_out_and_settles_a_batch_at_a_time(h: &H) {
    let endpoint = |id: &str, events: &str| WebhookEndpoint {
        endpoint_id: id.into(),
        url: "http://127.0.0.1:9/hook".into(),
        events: events.into(),
        secret: "c2VjcmV0".into(),
        created_ms: T0,
    };
    let endpoints = [
        endpoint("ep_all", "*"),
        endpoint("ep_charges", "charge.created"),
    ];
    let mut s = h.store.session().await.unwrap();
    for e in &endpoints {
        s.add_webhook_endpoint(&h.tenant, e).await.unwrap();
    }
    let other = h.tenant("someone-else");
    s.outbox_enqueue(&other, "charge.created", "{\"theirs\":1}")
        .await
        .unwrap();
    let mut ids = Vec::new();
    for (topic, payload) in [
        ("charge.created", "{\"n\":1}"),
        ("alert.firing", "{\"n\":2}"),
        ("charge.created", "{\"n\":3}"),
    ] {
        ids.push(s.outbox_enqueue(&h.tenant, topic, payload).await.unwrap());
    }
    let mut tx = h.store.transaction().await.unwrap();
    assert_eq!(
        tx.webhook_fan_out(&h.tenant, &endpoints, 2).await.unwrap(),
        2
    );
    tx.commit().await.unwrap();
    let left = s.outbox_fetch(&h.tenant, 10).await.unwrap();
    assert_eq!(
        left.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ids[2]],
        "the two oldest were marked sent, the third was not"
    );
    let lease = Duration::from_secs(5);
    let all = s
        .webhook_claim(&h.tenant, "ep_all", lease, 10)
        .await
        .unwrap();
    assert_eq!(
        all.iter()
            .map(|d| (
                d.outbox_id,
                d.topic.as_str(),
                d.payload.as_str(),
                d.attempts
            ))
            .collect::<Vec<_>>(),
        [
            (ids[0], "charge.created", "{\"n\":1}", 1),
            (ids[1], "alert.firing", "{\"n\":2}", 1)
        ]
    );
    let charges = s
        .webhook_claim(&h.tenant, "ep_charges", lease, 10)
        .await
        .unwrap();
    assert_eq!(
        charges.iter().map(|d| d.outbox_id).collect::<Vec<_>>(),
        [ids[0]],
        "not the topic it did not ask for"
    );
    // The rest, and nothing of another tenant's.
    let mut tx = h.store.transaction().await.unwrap();
    assert_eq!(
        tx.webhook_fan_out(&h.tenant, &endpoints, 2).await.unwrap(),
        1
    );
    tx.commit().await.unwrap();
    assert_eq!(s.outbox_fetch(&other, 10).await.unwrap().len(), 1);
    // Two outcomes under their claims, one under an attempt that is gone.
    let mut stale = all[1].clone();
    stale.attempts += 1;
    let n = s
        .webhook_delivered_many(
            &h.tenant,
            &[
                ("ep_all", &all[0], 200),
                ("ep_charges", &charges[0], 204),
                ("ep_all", &stale, 200),
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 2, "the stale attempt held nothing");
    let counts = s.webhook_counts(&h.tenant).await.unwrap();
    assert_eq!(
        (counts.pending, counts.delivered),
        (3, 2),
        "ids[1] to ep_all still in its attempt; ids[2] to both, unclaimed"
    );
    assert_eq!(
        s.webhook_delivered_many(&h.tenant, &[]).await.unwrap(),
        0,
        "an empty batch writes nothing"
    );
    // Written for its own tenant only.
    assert_eq!(
        s.webhook_delivered_many(&other, &[("ep_all", &all[1], 200)])
            .await
            .unwrap(),
        0
    );
}

/// An alert names one of its tenant's endpoints; an evaluation is written
/// only from the state it read (a second evaluator's matches nothing and
/// queues nothing); the announcement is one delivery, to that endpoint
/// alone, whatever topics the other endpoints list.
async fn an_alert_moves_once_and_announces_to_its_endpoint_only(h: &H) {
    let endpoint = |id: &str| WebhookEndpoint {
        endpoint_id: id.into(),
        url: "http://127.0.0.1:9/hook".into(),
        events: "*".into(),
        secret: "c2VjcmV0".into(),
        created_ms: T0,
    };
    let mut s = h.store.session().await.unwrap();
    s.add_webhook_endpoint(&h.tenant, &endpoint("ep_a"))
        .await
        .unwrap();
    s.add_webhook_endpoint(&h.tenant, &endpoint("ep_b"))
        .await
        .unwrap();
    let alert = Alert {
        alert_id: "al_1".into(),
        metric: "uncertain_now".into(),
        above: "0".into(),
        for_ms: 0,
        window_ms: 3_600_000,
        endpoint_id: "ep_a".into(),
        state: idem_store::AlertState::Ok,
        since_ms: None,
        last_value: None,
        evaluated_ms: None,
        created_ms: T0,
    };
    let other = h.tenant("someone-else");
    assert!(
        matches!(s.add_alert(&other, &alert).await, Err(Error::NotFound)),
        "not its endpoint"
    );
    s.add_alert(&h.tenant, &alert).await.unwrap();
    assert_eq!(
        h.store.alert_tenants().await.unwrap(),
        std::slice::from_ref(&h.tenant)
    );
    let firing = AlertEvaluation {
        state: AlertState::Firing,
        since_ms: Some(T0),
        value: Some("2"),
    };
    let mut tx = h.store.transaction().await.unwrap();
    assert!(tx
        .record_alert(
            &h.tenant,
            &alert,
            &firing,
            Some(("alert.firing", "{\"n\":1}"))
        )
        .await
        .unwrap());
    tx.commit().await.unwrap();
    // A second evaluator that read the same "ok" moves nothing.
    let mut tx = h.store.transaction().await.unwrap();
    assert!(!tx
        .record_alert(
            &h.tenant,
            &alert,
            &firing,
            Some(("alert.firing", "{\"n\":2}"))
        )
        .await
        .unwrap());
    tx.commit().await.unwrap();
    let stored = s.alerts(&h.tenant).await.unwrap();
    assert_eq!(
        (
            stored[0].state.as_str(),
            stored[0].since_ms,
            stored[0].last_value.as_deref()
        ),
        ("firing", Some(T0), Some("2"))
    );
    let a = s
        .webhook_claim(&h.tenant, "ep_a", Duration::from_secs(5), 10)
        .await
        .unwrap();
    let b = s
        .webhook_claim(&h.tenant, "ep_b", Duration::from_secs(5), 10)
        .await
        .unwrap();
    assert_eq!(a.len(), 1, "one announcement");
    assert_eq!(
        (a[0].topic.as_str(), a[0].payload.as_str()),
        ("alert.firing", "{\"n\":1}")
    );
    assert!(b.is_empty(), "to its endpoint alone");
    assert!(
        s.outbox_fetch(&h.tenant, 10).await.unwrap().is_empty(),
        "not fanned out again"
    );
    s.remove_alert(&h.tenant, "al_1").await.unwrap();
    assert!(matches!(
        s.remove_alert(&h.tenant, "al_1").await,
        Err(Error::NotFound)
    ));
}

/// SQLite only: this process's writers take the one write lock in the order
/// they asked for it (the store's write gate), not in whatever order
/// SQLite's busy handler happens to wake them. Five transactions queue
/// behind one held open, 20 ms apart; each numbers its charge when it gets
/// in. Without the gate the busy handler's growing sleeps let late arrivals
/// in first.
#[tokio::test]
async fn sqlite_writers_are_served_in_arrival_order() {
    let h = sqlite().await;
    let charge = |id: String, created_ms: i64| idem_store::DemoCharge {
        id,
        amount_cents: 100,
        currency: "BRL".into(),
        customer: "c".into(),
        created_ms,
    };
    let mut held = h.store.transaction().await.unwrap();
    held.demo_charge(&h.tenant, &charge("ch_0".into(), 0))
        .await
        .unwrap();
    let seq = Arc::new(std::sync::atomic::AtomicI64::new(1));
    let mut waiting = Vec::new();
    for i in 1..=5 {
        let (store, tenant, seq) = (h.store.clone(), h.tenant.clone(), seq.clone());
        waiting.push(tokio::spawn(async move {
            let mut tx = store.transaction().await.unwrap();
            let n = seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tx.demo_charge(&tenant, &charge(format!("ch_{i}"), n))
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held.commit().await.unwrap();
    for w in waiting {
        w.await.unwrap();
    }
    let listed = h
        .store
        .session()
        .await
        .unwrap()
        .demo_charges(&h.tenant)
        .await
        .unwrap();
    let ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["ch_0", "ch_1", "ch_2", "ch_3", "ch_4", "ch_5"]);
    h.done().await;
}
