//! Event claims: consume once, with a lease.

use super::*;

idem_testkit::both!(
    consume_once_follows_the_transaction,
    events_are_claimed_with_a_lease,
);

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
