//! Statistics: counts, their flush and fold, the rebuild, the MCP call counts.

use super::*;

idem_testkit::both!(
    mcp_calls_are_counted_per_tenant_tool_and_outcome,
    statistics_count_what_happened,
    counts_survive_a_process_that_never_flushed,
    two_processes_fold_each_count_once,
    rebuild_recounts_the_rollups_from_the_tables,
);

/// The gateway's counts: one row per hour, tool and outcome, summed over
/// a range for one tenant, and over every tenant for `/metrics`.
async fn mcp_calls_are_counted_per_tenant_tool_and_outcome(h: &H) {
    let mut s = h.store.session().await.unwrap();
    let other = h.tenant("outra-loja");
    for (outcome, diverged) in [
        (CallCount::Executed, false),
        (CallCount::Replayed, true),
        (CallCount::Replayed, false),
    ] {
        s.count_mcp_call(&h.tenant, "create_pix_charge", outcome, diverged)
            .await
            .unwrap();
    }
    h.clock.advance(Duration::from_secs(3600));
    s.count_mcp_call(&h.tenant, "create_pix_charge", CallCount::Uncertain, false)
        .await
        .unwrap();
    s.count_mcp_call(&other, "refund", CallCount::Executed, false)
        .await
        .unwrap();
    // A lookup is counted under the tool it asked, and is no guarded call.
    s.count_mcp_call(
        &h.tenant,
        "get_checkout",
        CallCount::Lookup(LookupSaid::Executed),
        false,
    )
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
