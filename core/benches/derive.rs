//! Key derivation throughput on the reference payloads.
//!
//! `cargo bench -p idem-core --bench derive`; criterion reports elements/s,
//! which here are keys/s on one core.

#![allow(clippy::unwrap_used)] // tests and benches fail loudly by design
#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idem_core::{Catalog, KeyDeriver, Payload, Secret, TenantId};
use std::hint::black_box;

#[derive(serde::Deserialize)]
struct Doc {
    secret: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    tenant: String,
    action: String,
    payload: Box<serde_json::value::RawValue>,
}

fn bench(c: &mut Criterion) {
    let doc: Doc =
        serde_json::from_str(include_str!("../tests/fixtures/derivation-v1.json")).unwrap();
    let deriver = KeyDeriver::new(&Secret::new(doc.secret.into_bytes()).unwrap());
    let catalog = Catalog::builtin();
    let cases: Vec<(TenantId, String, Box<serde_json::value::RawValue>)> = doc
        .cases
        .into_iter()
        .map(|c| (TenantId::try_from(c.tenant).unwrap(), c.action, c.payload))
        .collect();
    let n = cases.len() as u64;

    let mut g = c.benchmark_group("derive");
    g.throughput(Throughput::Elements(n));
    // Parse the payload JSON, normalize every field, HMAC the canonical form.
    g.bench_function("from_json_text", |b| {
        b.iter(|| {
            for (t, a, p) in &cases {
                let payload = Payload::from_json(p.get()).unwrap();
                black_box(deriver.derive(&catalog, t, a, &payload, None).unwrap());
            }
        })
    });
    // Normalize and HMAC a payload already parsed (what the store does with
    // a request body it has parsed once).
    let parsed: Vec<_> = cases
        .iter()
        .map(|(t, a, p)| (t, a, Payload::from_json(p.get()).unwrap()))
        .collect();
    g.bench_function("from_parsed_payload", |b| {
        b.iter(|| {
            for (t, a, p) in &parsed {
                black_box(deriver.derive(&catalog, t, a, p, None).unwrap());
            }
        })
    });
    // The same, when only the key is wanted (the batch CLI's path).
    g.bench_function("key_only_from_parsed_payload", |b| {
        b.iter(|| {
            for (t, a, p) in &parsed {
                black_box(deriver.derive_key(&catalog, t, a, p, None).unwrap());
            }
        })
    });
    // HMAC of already-normalized fields only: the floor of the above.
    let normalized: Vec<_> = cases
        .iter()
        .map(|(t, a, p)| {
            let payload = Payload::from_json(p.get()).unwrap();
            (
                t,
                a,
                deriver.derive(&catalog, t, a, &payload, None).unwrap(),
            )
        })
        .collect();
    g.bench_function("hmac_only", |b| {
        b.iter(|| {
            for (t, a, d) in &normalized {
                black_box(deriver.key(t, a, d.rules_version, &d.normalized));
            }
        })
    });
    // The floor: a bare HMAC-SHA256 of the same number of bytes as the
    // average canonical form, with the keyed state prepared once.
    let avg = normalized
        .iter()
        .map(|(t, a, d)| {
            idem_core::derive::canonical_json(t, a, d.rules_version, &d.normalized).len()
        })
        .sum::<usize>()
        / normalized.len();
    let bytes = vec![b'x'; avg];
    let mac =
        <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(b"vetor-publico-nao-e-segredo")
            .unwrap();
    g.bench_function(format!("bare_hmac_sha256_{avg}_bytes"), |b| {
        b.iter(|| {
            for _ in 0..n {
                let mut m = mac.clone();
                hmac::Mac::update(&mut m, black_box(&bytes));
                black_box(hmac::Mac::finalize(m).into_bytes());
            }
        })
    });
    g.finish();

    // The nesting bound every client JSON passes before it is parsed: on
    // the reference payloads (what a request carries), and on a body at the
    // API's 64 KiB limit, to set beside a request's cost.
    let mut g = c.benchmark_group("json_depth");
    g.throughput(Throughput::Elements(n));
    g.bench_function("reference_payloads", |b| {
        b.iter(|| {
            for (_, _, p) in &cases {
                black_box(idem_core::json::check_depth(black_box(p.get().as_bytes()), 64).is_ok());
            }
        })
    });
    let big = format!(
        "[{}]",
        vec![r#"{"referencia_intencao":"FAT-1","valor":"42321.83"}"#; 1300].join(",")
    );
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("a_64_kib_body", |b| {
        b.iter(|| black_box(idem_core::json::check_depth(black_box(big.as_bytes()), 64).is_ok()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
