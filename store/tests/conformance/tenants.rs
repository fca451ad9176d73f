//! Tenants and their tokens: nothing crosses between tenants.

use super::*;

idem_testkit::both!(
    tenants_never_see_each_other,
    tokens_authenticate_only_their_own_tenant,
);

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
