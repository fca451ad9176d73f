//! Actions: the claim, its lease and fencing token, completion and failure, the uncertain state.

use super::*;

idem_testkit::both!(
    a_claim_asked_again_by_its_attempt_gets_the_same_token,
    a_held_claim_is_renewed_and_a_lost_one_is_not,
    an_unknown_outcome_is_uncertain_at_once,
    a_stored_state_no_machine_has_is_corrupt_data,
    action_lifecycle_completed_verbatim,
    final_and_retryable_failures,
    expired_lease_is_uncertain_and_stale_token_refused,
    sweep_marks_expired_leases_uncertain,
    sixty_four_concurrent_begins_make_one_claim,
);

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
            ended: AttemptEnd::Swept,
            error: None,
            replaced_ms: T0 + 11_000,
        }]
    );
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
