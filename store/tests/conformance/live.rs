//! What the live monitor reads: actions in flight and uncertain, per tenant.

use super::*;

idem_testkit::both!(
    live_actions_show_in_flight_and_uncertain_per_tenant,
    the_uncertain_list_shows_each_keys_intent,
);

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
