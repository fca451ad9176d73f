//! Intents: first write wins, redeliveries, divergence, corrections, supersession, the frozen candidate.

use super::*;

idem_testkit::both!(
    the_candidate_is_frozen_as_its_first_delivery_sent_it,
    concurrent_records_freeze_one_candidate_as_sent,
    first_write_wins_and_redeliveries_are_counted,
    the_key_is_the_core_derivation,
    divergent_redelivery_never_overwrites,
    correction_replaces_and_keeps_history,
    a_failed_intent_is_superseded_under_a_key_of_its_own_and_nothing_else_is,
    every_replaced_attempt_is_kept_and_the_intent_found_by_key,
    sixty_four_concurrent_records_make_one_row,
    concurrent_divergent_candidates_keep_the_first,
    empty_reference_and_unknown_action_are_refused,
    record_and_claim_is_one_write_of_both,
    a_guarded_effect_is_two_commits_and_every_statement_is_timed,
);

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

/// The worker's first call records the delivery and claims the frozen
/// intent's action together: the first gets the claim, a redelivery (even
/// a divergent one) is told the claim is in flight, a delivery after the
/// outcome gets it back, and sixteen at once make one intent and one claim
/// with every delivery counted.
async fn record_and_claim_is_one_write_of_both(h: &H) {
    let lease = Duration::from_secs(30);
    let (first, other) = (pix("FAT-RC", "180.00"), pix("FAT-RC", "18000"));
    let (first, other) = (
        Payload::from_json(&first).unwrap(),
        Payload::from_json(&other).unwrap(),
    );
    let (r, b) = h
        .store
        .record_and_claim(&h.tenant, &pix_action(), &first, lease, Some("w1"))
        .await
        .unwrap();
    assert!(r.inserted && !r.diverged);
    let Begin::Claimed { token, attempt, .. } = b else {
        panic!("the first delivery claims: {b:?}");
    };
    assert_eq!((token, attempt), (1, 1));
    // The same attempt asking again (its answer was lost) gets its claim.
    let (r, b) = h
        .store
        .record_and_claim(&h.tenant, &pix_action(), &first, lease, Some("w1"))
        .await
        .unwrap();
    assert_eq!(r.deliveries, 2);
    assert!(matches!(b, Begin::Claimed { token: 1, .. }), "{b:?}");
    // Another worker with different values: the frozen intent, in flight.
    let (r, b) = h
        .store
        .record_and_claim(&h.tenant, &pix_action(), &other, lease, Some("w2"))
        .await
        .unwrap();
    assert!(r.diverged && !r.inserted);
    assert!(matches!(b, Begin::InFlight { .. }), "{b:?}");
    let mut tx = h.store.transaction().await.unwrap();
    tx.complete(&h.tenant, &r.key, 1, r#"{"id":"ch_1"}"#)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let (_, b) = h
        .store
        .record_and_claim(&h.tenant, &pix_action(), &first, lease, None)
        .await
        .unwrap();
    assert!(
        matches!(&b, Begin::Completed { response, .. } if response == r#"{"id":"ch_1"}"#),
        "{b:?}"
    );

    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = h.store.clone();
            let tenant = h.tenant.clone();
            tokio::spawn(async move {
                let json = pix("FAT-RC16", "180.00");
                let p = Payload::from_json(&json).unwrap();
                store
                    .record_and_claim(&tenant, &pix_action(), &p, lease, Some(&format!("w{i}")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = 0;
    let mut inserted = 0;
    for t in tasks {
        let (r, b) = t.await.unwrap();
        inserted += usize::from(r.inserted);
        match b {
            Begin::Claimed { token: 1, .. } => claimed += 1,
            Begin::InFlight { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((inserted, claimed), (1, 1));
    let i = h
        .store
        .session()
        .await
        .unwrap()
        .intent(&h.tenant, "pix.cobranca", "FAT-RC16")
        .await
        .unwrap();
    assert_eq!(i.deliveries, 16);
}

#[derive(Debug, Default)]
struct Ops(std::sync::Mutex<Vec<(&'static str, Backend)>>);

impl Observer for Ops {
    fn took(&self, op: &'static str, backend: Backend, _took: Duration) {
        self.0.lock().unwrap().push((op, backend));
    }
}

impl Ops {
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .into_iter()
            .map(|(op, _)| op)
            .collect()
    }
}

/// The worker's path is two commits: record and claim in one, the outcome
/// in the other (one autocommit statement). The observer hears
/// every statement by its query's name, each transaction's opening and
/// commit, on the store's own backend.
async fn a_guarded_effect_is_two_commits_and_every_statement_is_timed(h: &H) {
    let ops = Arc::new(Ops::default());
    let mut o = options(&h.clock);
    o.observer = Some(ops.clone());
    let store = Store::connect(&h.db.url, o).await.unwrap();
    let json = pix("FAT-OBS", "180.00");
    let p = Payload::from_json(&json).unwrap();
    let (r, b) = store
        .record_and_claim(&h.tenant, &pix_action(), &p, Duration::from_secs(30), None)
        .await
        .unwrap();
    let Begin::Claimed { token, .. } = b else {
        panic!("{b:?}")
    };
    let first = ops.take();
    let commits = |ops: &[&str]| ops.iter().filter(|o| **o == "transaction_commit").count();
    assert_eq!(commits(&first), 1, "{first:?}");
    for op in ["transaction_open", "record_intent", "begin_action"] {
        assert!(first.contains(&op), "{op} not timed: {first:?}");
    }
    store
        .session()
        .await
        .unwrap()
        .complete(&h.tenant, &r.key, token, "{}")
        .await
        .unwrap();
    // The outcome journals its own count (SQLite: a trigger; PostgreSQL:
    // a CTE) and returns the row: one autocommit statement, nothing else.
    assert_eq!(ops.take(), ["connection_acquire", "complete_action"]);
    if store.backend() == Backend::Sqlite {
        // The claim's count too (a trigger).
        assert!(!first.contains(&"append_journal"), "{first:?}");
    }
    assert!(ops
        .0
        .lock()
        .unwrap()
        .iter()
        .all(|(_, b)| *b == store.backend()));
    store.close().await;
}
