//! Every case of the reference vectors (rules v1), byte for byte, and of
//! the enclosed-letter vectors written by the documented Python rule
//! (`scripts/derivation_v1.py`, which `scripts/test` checks against both
//! files too).

#![allow(clippy::unwrap_used)] // tests and benches fail loudly by design

use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};

#[test]
fn every_reference_vector_matches() {
    check(include_str!("fixtures/derivation-v1.json"), 60);
}

#[test]
fn enclosed_latin_letters_derive_as_the_python_rule_does() {
    check(include_str!("fixtures/derivation-v1-symbols.json"), 131);
}

fn check(text: &str, cases: usize) {
    // Payloads stay raw JSON so numbers keep their source text.
    let raw_cases: RawDoc = serde_json::from_str(text).unwrap();
    assert_eq!(raw_cases.rules_version, 1);
    assert_eq!(
        raw_cases.cases.len(),
        cases,
        "the fixture holds {cases} cases"
    );
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
    assert_eq!(checked, cases);
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
