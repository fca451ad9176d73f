//! Saved scenarios and comparisons: immutable, per tenant.

use super::*;

idem_testkit::both!(
    saved_scenarios_are_immutable_and_per_tenant,
    saved_comparisons_are_immutable_and_apart_from_scenarios,
);

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
