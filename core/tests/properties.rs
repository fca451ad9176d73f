//! Property tests: what must not change a key, and what must.

#![allow(clippy::unwrap_used)] // tests and benches fail loudly by design

use idem_core::pix::{self, AREA_CODES};
use idem_core::{Catalog, KeyDeriver, Payload, RulesVersion, Secret, TenantId};
use proptest::prelude::*;

fn deriver() -> KeyDeriver {
    KeyDeriver::new(&Secret::new(b"property-test-secret".to_vec()).unwrap())
}

fn key(tenant: &str, action: &str, json: &str, v: Option<RulesVersion>) -> String {
    let c = Catalog::builtin();
    let t = TenantId::try_from(tenant).unwrap();
    let p = Payload::from_json(json).unwrap();
    deriver()
        .derive(&c, &t, action, &p, v)
        .unwrap()
        .key
        .to_string()
}

fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A valid CPF from 9 digits (computes both check digits).
fn cpf_from(nine: [u8; 9]) -> String {
    let mut d: Vec<u8> = nine.to_vec();
    for n in [9usize, 10] {
        let s: u32 = (0..n)
            .map(|i| u32::from(d[i]) * (n as u32 + 1 - i as u32))
            .sum();
        let r = (s * 10) % 11;
        d.push(if r == 10 { 0 } else { r as u8 });
    }
    d.iter().map(|x| char::from(b'0' + x)).collect()
}

fn punctuated(cpf: &str) -> String {
    format!("{}.{}.{}-{}", &cpf[..3], &cpf[3..6], &cpf[6..9], &cpf[9..])
}

fn pix(cliente: &str, valor: &str, chave: &str, reference: &str, extra: &str) -> String {
    format!(
        r#"{{"cliente_id":{},"valor":{valor},"chave_pix_destino":{},"referencia_intencao":{}{extra}}}"#,
        js(cliente),
        js(chave),
        js(reference)
    )
}

/// The 14 two-digit numbers without a zero that are not area codes.
const UNUSED_AREA_CODES: [u8; 14] = [23, 25, 26, 29, 36, 39, 52, 56, 57, 58, 59, 72, 76, 78];

/// A subscriber number: a 9-digit mobile starting with 9 or an 8-digit
/// landline starting with 2 to 5.
fn phone_subscriber(mobile: bool, rest: u32) -> String {
    if mobile {
        format!("9{rest:08}")
    } else {
        format!("{}{:07}", 2 + rest % 4, rest % 10_000_000)
    }
}

/// Every spelling people type for one number: E.164 with and without
/// punctuation, national, with the trunk 0, with trunk and carrier code.
fn phone_spellings(ddd: u8, n: &str, carrier: u32) -> Vec<String> {
    let (head, tail) = n.split_at(n.len() - 4);
    vec![
        format!("+55{ddd}{n}"),
        format!("+55 ({ddd}) {head}-{tail}"),
        format!("55{ddd}{n}"),
        format!("({ddd}) {head}-{tail}"),
        format!("{ddd}{n}"),
        format!("({ddd}) {n}"),
        format!("0{ddd}{n}"),
        format!("(0{ddd}) {head}-{tail}"),
        format!("0{ddd} {n}"),
        format!("0 {carrier} {ddd} {head}-{tail}"),
        format!("0{carrier}{ddd}{n}"),
        format!("(0{carrier}{ddd}) {head}.{tail}"),
    ]
}

prop_compose! {
    fn ident()(s in "[A-Za-z0-9_-]{1,24}") -> String { s }
}

proptest! {
    #[test]
    fn cpf_punctuation_does_not_change_the_key(nine in prop::array::uniform9(0u8..10), r in ident(), v2 in any::<bool>()) {
        let cpf = cpf_from(nine);
        prop_assume!(!cpf.bytes().all(|b| b == cpf.as_bytes()[0]), "repeated digits are never a CPF");
        // Under v2 a bare 11-digit key can also be a mobile number; the
        // punctuated spelling says CPF, and a declared type settles it.
        let version = if v2 { Some(RulesVersion::V2) } else { None };
        let extra = r#","tipo_chave_pix":"cpf""#;
        let a = key("t", "pix.cobranca", &pix("c", "\"10.00\"", &cpf, &r, extra), version);
        let b = key("t", "pix.cobranca", &pix("c", "\"10.00\"", &punctuated(&cpf), &r, extra), version);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn amount_spelling_does_not_change_the_key(units in 0u32..10_000_000, cents in 0u32..100, r in ident()) {
        let spellings = [
            format!("\"{units}.{cents:02}\""),
            format!("{units}.{cents:02}"),
            format!("{units}.{cents:02}0"),
            format!("\"{units}.{cents:02}000\""),
            format!("{}e-2", u64::from(units) * 100 + u64::from(cents)),
        ];
        let keys: Vec<String> = spellings.iter().map(|v| key("t", "pix.cobranca", &pix("c", v, "a@b.com", &r, ""), None)).collect();
        for k in &keys { prop_assert_eq!(k, &keys[0]); }
        if cents == 0 {
            for v in [format!("{units}"), format!("\"{units}\""), format!("{units}.0")] {
                prop_assert_eq!(key("t", "pix.cobranca", &pix("c", &v, "a@b.com", &r, ""), None), keys[0].clone());
            }
        }
    }

    #[test]
    fn field_order_and_extra_fields_do_not_change_the_key(r in ident(), noise in ".{0,40}", attempt in 0u32..50) {
        let a = key("t", "pix.cobranca", &pix("c", "10", "x@y.com", &r, ""), None);
        let reordered = format!(
            r#"{{"texto_gerado":{},"referencia_intencao":{},"attempt":{attempt},"chave_pix_destino":"x@y.com","timestamp":"2026-11-29T10:00:00Z","valor":10,"cliente_id":"c","message_id":{}}}"#,
            js(&noise), js(&r), js(&noise)
        );
        prop_assert_eq!(a, key("t", "pix.cobranca", &reordered, None));
    }

    #[test]
    fn email_case_and_trimmed_whitespace_do_not_change_the_key(
        user in "[a-z0-9]{1,12}", upper in any::<bool>(), pad in "[ \t\u{a0}]{0,3}", r in ident(), v2 in any::<bool>()
    ) {
        let version = if v2 { Some(RulesVersion::V2) } else { None };
        let email = format!("{user}@example.com");
        let shown = if upper { email.to_uppercase() } else { email.clone() };
        let a = key("t", "pix.cobranca", &pix("c", "1", &email, &r, ""), version);
        let b = key("t", "pix.cobranca", &pix("c", "1", &format!("{pad}{shown}{pad}"), &format!("{pad}{r}{pad}"), ""), version);
        prop_assert_eq!(a, b);
        let t1 = key("t", "email.cobranca", &format!(r#"{{"cliente_id":"c","referencia_intencao":{},"template":"Lembrete"}}"#, js(&r)), version);
        let t2 = key("t", "email.cobranca", &format!(r#"{{"cliente_id":"c","referencia_intencao":{},"template":{}}}"#, js(&format!("{pad}{r}")), js(&format!("{pad}LEMBRETE{pad}"))), version);
        prop_assert_eq!(t1, t2);
    }

    #[test]
    fn identity_fields_change_the_key(
        t1 in ident(), t2 in ident(), r1 in ident(), r2 in ident(),
        a1 in 0u32..1_000_000, a2 in 0u32..1_000_000, u1 in "[a-z]{1,8}", u2 in "[a-z]{1,8}"
    ) {
        let base = key(&t1, "pix.cobranca", &pix("c", &a1.to_string(), &format!("{u1}@x.com"), &r1, ""), None);
        if t1 != t2 {
            prop_assert_ne!(&base, &key(&t2, "pix.cobranca", &pix("c", &a1.to_string(), &format!("{u1}@x.com"), &r1, ""), None));
        }
        if r1 != r2 {
            prop_assert_ne!(&base, &key(&t1, "pix.cobranca", &pix("c", &a1.to_string(), &format!("{u1}@x.com"), &r2, ""), None));
        }
        if a1 != a2 {
            prop_assert_ne!(&base, &key(&t1, "pix.cobranca", &pix("c", &a2.to_string(), &format!("{u1}@x.com"), &r1, ""), None));
        }
        if u1 != u2 {
            prop_assert_ne!(&base, &key(&t1, "pix.cobranca", &pix("c", &a1.to_string(), &format!("{u2}@x.com"), &r1, ""), None));
        }
        prop_assert_ne!(&base, &key(&t1, "pix.cobranca", &pix("c", &a1.to_string(), &format!("{u1}@x.com"), &r1, ""), Some(RulesVersion::V2)));
        // Same fields under another action type: the action is in the hash.
        let email_a = key(&t1, "email.cobranca", &format!(r#"{{"cliente_id":"c","referencia_intencao":{},"template":"x"}}"#, js(&r1)), None);
        prop_assert_ne!(&base, &email_a);
    }

    #[test]
    fn v2_phone_spellings_agree(
        ddd in prop::sample::select(AREA_CODES.to_vec()),
        mobile in any::<bool>(),
        rest in 0u32..100_000_000,
        carrier in 10u32..100,
        typed in any::<bool>(),
    ) {
        let n = phone_subscriber(mobile, rest);
        let expected = format!("+55{ddd}{n}");
        let extra = r#","tipo_chave_pix":"phone""#;
        let keys: Vec<String> = phone_spellings(ddd, &n, carrier)
            .iter()
            .map(|s| {
                // Untyped spellings are inferred; an 11-digit one may also be
                // a valid CPF (then the type is asked for), so those are typed.
                let ambiguous = pix::normalize_v2(s, None).is_err();
                let extra = if typed || ambiguous { extra } else { "" };
                key("t", "pix.cobranca", &pix("c", "1", s, "r", extra), Some(RulesVersion::V2))
            })
            .collect();
        let canonical = key("t", "pix.cobranca", &pix("c", "1", &expected, "r", extra), Some(RulesVersion::V2));
        for (s, k) in phone_spellings(ddd, &n, carrier).iter().zip(&keys) {
            prop_assert_eq!(k, &canonical, "{}", s);
            prop_assert_eq!(pix::normalize_v2(s, Some(pix::PixKeyType::Phone)).map(|(_, c)| c), Ok(expected.clone()), "{}", s);
        }
    }

    #[test]
    fn v2_unused_area_codes_are_refused_in_every_spelling(
        ddd in prop::sample::select(UNUSED_AREA_CODES.to_vec()),
        mobile in any::<bool>(),
        rest in 0u32..100_000_000,
        carrier in 10u32..100,
    ) {
        let n = phone_subscriber(mobile, rest);
        for s in phone_spellings(ddd, &n, carrier) {
            let err = pix::normalize_v2(&s, Some(pix::PixKeyType::Phone)).unwrap_err();
            prop_assert!(err.contains(&format!("area code {ddd}")), "{}: {}", s, err);
        }
    }
}

/// JSON of any shape and depth, as a hostile client sends it: nested arrays
/// and objects whose fields may be the payload's own, strings with escapes
/// and brackets, numbers of any spelling, and text that is not JSON at all.
fn hostile_json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        "-?[0-9]{1,30}(\\.[0-9]{0,30})?([eE][-+]?[0-9]{1,6})?",
        "\"([^\"\\\\]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[\\[\\]{}])*\"",
    ];
    let json = leaf.prop_recursive(48, 512, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("referencia_intencao".to_owned()),
                        Just("valor".to_owned()),
                        Just("cliente_id".to_owned()),
                        Just("chave_pix_destino".to_owned()),
                        "[a-z]{1,8}",
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|v| format!(
                "{{{}}}",
                v.iter()
                    .map(|(k, x)| format!("\"{k}\":{x}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        ]
    });
    prop_oneof![
        json,
        // Past any recursion limit, well inside the 64 KiB body limit.
        (1usize..30_000, any::<bool>()).prop_map(|(n, obj)| {
            let (o, c) = if obj { ("{\"a\":", "}") } else { ("[", "]") };
            format!(
                "{{\"referencia_intencao\":{}1{}}}",
                o.repeat(n),
                c.repeat(n)
            )
        }),
        // Unbalanced and not JSON.
        "[\\[\\]{}\",:0-9a-z\\\\ ]{0,300}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The payload parser and the normaliser (every rule of every action,
    /// both rules versions) and the canonical writer return a value or an
    /// error on any JSON, never panic or overflow the stack; past the depth
    /// bound the error says so.
    #[test]
    fn the_normaliser_survives_any_json(text in hostile_json()) {
        let catalog = Catalog::builtin();
        let t = TenantId::try_from("acme").unwrap();
        let d = deriver();
        let deep = idem_core::json::check_depth(text.as_bytes(), idem_core::json::MAX_DEPTH).is_err();
        let parsed = Payload::from_json(&text);
        if deep {
            prop_assert!(matches!(parsed, Err(idem_core::Error::TooDeep(_))), "{parsed:?}");
        }
        if let Ok(p) = parsed {
            {
                for spec in catalog.actions() {
                    for v in [Some(RulesVersion::V1), Some(RulesVersion::V2), None] {
                        if let Ok(derived) = d.derive(&catalog, &t, spec.action.as_str(), &p, v) {
                            let canon = idem_core::derive::canonical_json(&t, spec.action.as_str(), derived.rules_version, &derived.normalized);
                            prop_assert!(serde_json::from_str::<serde_json::Value>(&canon).is_ok());
                        }
                    }
                }
            }
        }
    }
}
