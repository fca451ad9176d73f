//! Retention: purges in batches, never an unsettled action, one leader per chore.

use super::*;

idem_testkit::both!(
    retention_never_removes_an_unsettled_action_or_its_intent,
    retention_purges_in_batches_and_keeps_recent_rows,
    one_instance_leads_a_chore_until_its_lease_runs_out,
);

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
