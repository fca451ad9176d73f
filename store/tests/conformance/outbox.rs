//! The outbox: alerts and webhook deliveries, committed with the action.

use super::*;

idem_testkit::both!(
    outbox_commits_with_the_action,
    the_relay_fans_out_and_settles_a_batch_at_a_time,
    an_alert_moves_once_and_announces_to_its_endpoint_only,
);

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
