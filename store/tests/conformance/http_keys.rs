//! HTTP Idempotency-Key records and the demo provider's ledger.

use super::*;

idem_testkit::both!(
    demo_ledger_follows_the_transaction_and_the_tenant,
    http_keys_replay_conflict_and_mismatch,
);

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
