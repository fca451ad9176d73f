//! Property tests: what must not change a key, and what must.

#![allow(clippy::unwrap_used)] // tests and benches fail loudly by design

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
    fn v2_phone_spellings_agree(ddd in 11u32..99, rest in 0u32..100_000_000) {
        prop_assume!(ddd % 10 != 0);
        let n = format!("9{rest:08}");
        let plain = format!("55{ddd}{n}");
        let pretty = format!("+55 ({ddd}) {}-{}", &n[..5], &n[5..]);
        let extra = r#","tipo_chave_pix":"phone""#;
        let a = key("t", "pix.cobranca", &pix("c", "1", &plain, "r", extra), Some(RulesVersion::V2));
        let b = key("t", "pix.cobranca", &pix("c", "1", &pretty, "r", ""), Some(RulesVersion::V2));
        prop_assert_eq!(a, b);
    }
}
