//! Every case of the reference vectors (rules v1), byte for byte.

#![allow(clippy::unwrap_used)] // tests and benches fail loudly by design

use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};

#[test]
fn every_reference_vector_matches() {
    let text = include_str!("fixtures/derivation-v1.json");
    // Payloads stay raw JSON so numbers keep their source text.
    let raw_cases: RawDoc = serde_json::from_str(text).unwrap();
    assert_eq!(raw_cases.rules_version, 1);
    assert_eq!(raw_cases.cases.len(), 60, "the fixture holds 60 cases");
    let deriver = KeyDeriver::new(&Secret::new(raw_cases.secret.into_bytes()).unwrap());
    let catalog = Catalog::builtin();
    let mut checked = 0;
    for (i, case) in raw_cases.cases.iter().enumerate() {
        let tenant = TenantId::try_from(case.tenant.as_str()).unwrap();
        let payload = Payload::from_raw(&case.payload).unwrap();
        let derived = deriver
            .derive(&catalog, &tenant, &case.action, &payload, None)
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(
            derived.key.as_str(),
            case.expected_key,
            "case {i}: {}",
            case.payload.get()
        );
        checked += 1;
    }
    assert_eq!(checked, 60);
}

#[derive(serde::Deserialize)]
struct RawDoc {
    secret: String,
    rules_version: u32,
    cases: Vec<RawCase>,
}

#[derive(serde::Deserialize)]
struct RawCase {
    tenant: String,
    action: String,
    payload: Box<serde_json::value::RawValue>,
    expected_key: String,
}
