//! Pix destination keys.
//!
//! * Rules v1 reproduce the reference derivation: NFC, trim, lowercase; an
//!   e-mail keeps its punctuation, anything else keeps only letters and
//!   digits. `+5511999999999` and `11999999999` stay two different texts.
//! * Rules v2 write every key in the Pix directory's canonical form: E.164
//!   phone (`+5511999999999`), CPF/CNPJ as digits with verified check digits,
//!   lowercase e-mail, lowercase hyphenated random key (EVP). The key type is
//!   taken from the payload when given and inferred only when unambiguous.

use crate::text::{lower, nfc, py_isalnum, py_strip};
use std::fmt;
use std::str::FromStr;

/// The five kinds of Pix key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixKeyType {
    /// Brazilian individual taxpayer number, 11 digits.
    Cpf,
    /// Brazilian company number, 14 characters (digits, or the alphanumeric
    /// format introduced in 2026).
    Cnpj,
    /// A Brazilian phone number in E.164.
    Phone,
    /// An e-mail address.
    Email,
    /// A random key (UUID).
    Evp,
}

impl fmt::Display for PixKeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PixKeyType::Cpf => "cpf",
            PixKeyType::Cnpj => "cnpj",
            PixKeyType::Phone => "phone",
            PixKeyType::Email => "email",
            PixKeyType::Evp => "evp",
        })
    }
}

impl FromStr for PixKeyType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_lowercase().as_str() {
            "cpf" => Ok(PixKeyType::Cpf),
            "cnpj" => Ok(PixKeyType::Cnpj),
            "phone" | "telefone" | "celular" => Ok(PixKeyType::Phone),
            "email" | "e-mail" => Ok(PixKeyType::Email),
            "evp" | "aleatoria" | "aleatória" | "random" | "chave_aleatoria" => {
                Ok(PixKeyType::Evp)
            }
            other => Err(format!(
                "unknown Pix key type `{other}` (expected cpf, cnpj, phone, email or evp)"
            )),
        }
    }
}

/// The v1 rule: the reference derivation, byte for byte.
pub fn normalize_v1(input: &str) -> String {
    let composed = nfc(input);
    let text = lower(py_strip(&composed));
    if text.contains('@') {
        return text.into_owned();
    }
    if text.is_ascii() {
        // The common case, without a Unicode table lookup per character.
        return text.chars().filter(char::is_ascii_alphanumeric).collect();
    }
    text.chars().filter(|&c| py_isalnum(c)).collect()
}

/// The v2 rule: the canonical Pix directory form, with the key type given
/// or inferred. Returns the type and the canonical text.
pub fn normalize_v2(
    input: &str,
    declared: Option<PixKeyType>,
) -> Result<(PixKeyType, String), String> {
    let composed = nfc(input);
    let s = py_strip(&composed);
    if s.is_empty() {
        return Err("it is empty".into());
    }
    let kind = match declared {
        Some(k) => k,
        None => infer(s)?,
    };
    let canonical = match kind {
        PixKeyType::Email => email(s)?,
        PixKeyType::Evp => evp(s)?,
        PixKeyType::Phone => phone(s)?,
        PixKeyType::Cpf => cpf(s)?,
        PixKeyType::Cnpj => cnpj(s)?,
    };
    Ok((kind, canonical))
}

/// Punctuation people put in documents and phone numbers.
fn is_formatting(c: char) -> bool {
    matches!(c, ' ' | '.' | '-' | '/' | '(' | ')')
}

fn strip_formatting(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_formatting(c) {
            continue;
        }
        if !c.is_ascii_alphanumeric() {
            return Err(format!("it contains `{c}`, which no Pix key type allows"));
        }
        out.push(c.to_ascii_uppercase());
    }
    Ok(out)
}

fn looks_like_cpf_mask(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 14
        && b.iter().enumerate().all(|(i, &c)| match i {
            3 | 7 => c == b'.',
            11 => c == b'-',
            _ => c.is_ascii_digit(),
        })
}

fn infer(s: &str) -> Result<PixKeyType, String> {
    if s.contains('@') {
        return Ok(PixKeyType::Email);
    }
    if s.starts_with('+') {
        return Ok(PixKeyType::Phone);
    }
    if evp(s).is_ok() {
        return Ok(PixKeyType::Evp);
    }
    let bare = strip_formatting(s)?;
    if bare.bytes().any(|b| b.is_ascii_alphabetic()) {
        return if bare.len() == 14 {
            Ok(PixKeyType::Cnpj)
        } else {
            Err("it mixes letters and digits but is neither a CNPJ nor a random key".into())
        };
    }
    match bare.len() {
        11 => {
            if looks_like_cpf_mask(s) {
                return Ok(PixKeyType::Cpf);
            }
            if s.contains('(') {
                return Ok(PixKeyType::Phone);
            }
            let is_cpf = cpf_check(&bare);
            let as_phone = phone_digits(&bare);
            match (is_cpf, as_phone.is_ok()) {
                (true, true) => Err(format!(
                    "`{s}` is both a valid CPF and a valid mobile number; give the key type (cpf or phone)"
                )),
                (true, false) => Ok(PixKeyType::Cpf),
                (false, true) => Ok(PixKeyType::Phone),
                (false, false) => Err(format!(
                    "11 digits that are neither a valid CPF (its check digits do not match) nor a phone number ({})",
                    as_phone.err().unwrap_or_default()
                )),
            }
        }
        14 => {
            // A CNPJ, or a phone dialled with trunk and carrier code
            // (`0 21 74 91610-2296`). Only a number that could be both needs
            // its type, unless the CNPJ mask or a parenthesis says which.
            let is_cnpj = cnpj_check(&bare);
            let is_phone = bare.starts_with('0') && phone_digits(&bare).is_ok();
            match (is_cnpj, is_phone) {
                (true, true) if s.contains('/') => Ok(PixKeyType::Cnpj),
                (true, true) if s.contains('(') => Ok(PixKeyType::Phone),
                (true, true) => Err(format!(
                    "`{s}` is both a valid CNPJ and a valid phone number; give the key type (cnpj or phone)"
                )),
                (false, true) => Ok(PixKeyType::Phone),
                _ => Ok(PixKeyType::Cnpj),
            }
        }
        10 | 12 | 13 => Ok(PixKeyType::Phone),
        n => Err(format!("{n} digits match no Pix key type")),
    }
}

fn email(s: &str) -> Result<String, String> {
    let lower = s.to_lowercase();
    let mut parts = lower.split('@');
    let (local, domain) = match (parts.next(), parts.next(), parts.next()) {
        (Some(l), Some(d), None) => (l, d),
        _ => return Err("an e-mail key has exactly one `@`".into()),
    };
    if local.is_empty()
        || domain.len() < 3
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err("an e-mail key needs a local part and a domain with a dot".into());
    }
    if lower.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("an e-mail key cannot contain whitespace".into());
    }
    if lower.chars().count() > 77 {
        return Err("an e-mail key has at most 77 characters".into());
    }
    Ok(lower)
}

fn evp(s: &str) -> Result<String, String> {
    let hex: String = s.chars().filter(|&c| c != '-').collect();
    let hyphens_ok = !s.contains('-') || {
        let b = s.as_bytes();
        b.len() == 36
            && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
            && s.matches('-').count() == 4
    };
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) || !hyphens_ok {
        return Err(
            "a random key is 32 hexadecimal digits, optionally hyphenated 8-4-4-4-12".into(),
        );
    }
    let h = hex.to_ascii_lowercase();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// The Brazilian area codes (DDD) in use: 67 of the 81 two-digit numbers
/// without a zero. Source: Anatel's national numbering plan (Regulamento de
/// Numeração do STFC, "Códigos Nacionais" by state), as published on
/// 2026-12-01; it has not changed since the 1999 plan. The 14 gaps (23 25
/// 26 29 36 39 52 56 57 58 59 72 76 78) were never assigned, so no Pix phone
/// key can hold them.
pub const AREA_CODES: [u8; 67] = [
    11, 12, 13, 14, 15, 16, 17, 18, 19, // SP
    21, 22, 24, // RJ
    27, 28, // ES
    31, 32, 33, 34, 35, 37, 38, // MG
    41, 42, 43, 44, 45, 46, // PR
    47, 48, 49, // SC
    51, 53, 54, 55, // RS
    61, // DF
    62, 64, // GO
    63, // TO
    65, 66, // MT
    67, // MS
    68, // AC
    69, // RO
    71, 73, 74, 75, 77, // BA
    79, // SE
    81, 87, // PE
    82, // AL
    83, // PB
    84, // RN
    85, 88, // CE
    86, 89, // PI
    91, 93, 94, // PA
    92, 97, // AM
    95, // RR
    96, // AP
    98, 99, // MA
];

/// Whether two ASCII digits form an area code in use.
fn is_area_code(d: &[u8]) -> bool {
    d.len() == 2
        && d.iter().all(u8::is_ascii_digit)
        && AREA_CODES.contains(&((d[0] - b'0') * 10 + (d[1] - b'0')))
}

/// Area code plus subscriber number (10 or 11 digits, no country code, no
/// trunk prefix) -> E.164: a 9-digit mobile starting with 9, or an 8-digit
/// landline starting with 2 to 5, after an area code in use.
fn national(d: &str) -> Result<String, String> {
    let b = d.as_bytes();
    let shape = match b.len() {
        11 => b[2] == b'9',
        10 => (b'2'..=b'5').contains(&b[2]),
        _ => false,
    };
    if !shape {
        return Err(
            "a phone key needs a 2-digit area code and a 9-digit mobile (starting with 9) or an 8-digit landline (starting with 2 to 5)"
                .into(),
        );
    }
    if !is_area_code(&b[..2]) {
        return Err(format!(
            "area code {} is not in use in Brazil, so no phone key can hold it",
            &d[..2]
        ));
    }
    Ok(format!("+55{d}"))
}

/// Digits as dialled inside Brazil: a trunk `0`, optionally followed by a
/// two-digit carrier code (CSP, never starting with 0), before the area
/// code. Returns what follows the prefix, or `None` when there is none.
/// The lengths tell the two apart: `0` + 10/11 digits, or `0` + CSP +
/// 10/11 digits.
fn without_trunk_prefix(d: &str) -> Option<&str> {
    let rest = d.strip_prefix('0')?;
    match rest.len() {
        10 | 11 => Some(rest),
        12 | 13 if !rest.starts_with('0') => Some(&rest[2..]),
        _ => None,
    }
}

/// A phone number written without `+`: national, with the trunk prefix
/// (and carrier code), or with the country code 55 in front.
fn phone_digits(digits: &str) -> Result<String, String> {
    if digits.starts_with('0') {
        return match without_trunk_prefix(digits) {
            Some(n) => national(n),
            None => Err(
                "after the trunk 0 (and an optional 2-digit carrier code) a phone key needs a 2-digit area code and an 8- or 9-digit number"
                    .into(),
            ),
        };
    }
    if let Some(n) = digits.strip_prefix("55").filter(|n| n.len() >= 10) {
        let after_country = national(n);
        // 10 or 11 digits starting 55 may also be area code 55 (RS) itself.
        if after_country.is_ok() || digits.len() > 11 {
            return after_country;
        }
    }
    national(digits)
}

fn phone(s: &str) -> Result<String, String> {
    let has_plus = s.starts_with('+');
    let digits = strip_formatting(s.trim_start_matches('+'))?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a phone key holds only digits".into());
    }
    if !has_plus {
        return phone_digits(&digits);
    }
    match digits.strip_prefix("55") {
        Some(n) => national(n).map_err(|e| {
            if n.len() == 10 || n.len() == 11 {
                e
            } else {
                "after +55 a phone key needs a 2-digit area code and an 8- or 9-digit number".into()
            }
        }),
        None => Err("Pix phone keys are Brazilian numbers (+55)".into()),
    }
}

fn cpf_check(d: &str) -> bool {
    let b = d.as_bytes();
    if b.len() != 11 || !b.iter().all(u8::is_ascii_digit) || b.iter().all(|&c| c == b[0]) {
        return false;
    }
    let digit = |n: usize| -> u8 {
        let sum: u32 = (0..n)
            .map(|i| u32::from(b[i] - b'0') * (n as u32 + 1 - i as u32))
            .sum();
        let r = (sum * 10) % 11;
        if r == 10 {
            0
        } else {
            r as u8
        }
    };
    digit(9) == b[9] - b'0' && digit(10) == b[10] - b'0'
}

fn cpf(s: &str) -> Result<String, String> {
    let d = strip_formatting(s)?;
    if d.len() != 11 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a CPF has 11 digits".into());
    }
    if !cpf_check(&d) {
        return Err("the CPF's check digits do not match".into());
    }
    Ok(d)
}

fn cnpj_check(d: &str) -> bool {
    let b = d.as_bytes();
    if b.len() != 14
        || !b[12..].iter().all(u8::is_ascii_digit)
        || !b[..12].iter().all(u8::is_ascii_alphanumeric)
    {
        return false;
    }
    if b.iter().all(|&c| c == b[0]) {
        return false;
    }
    // The 2026 alphanumeric CNPJ keeps the same weights; each character
    // counts as its ASCII code minus 48, so digits keep their value.
    let value = |c: u8| u32::from(c) - 48;
    let digit = |n: usize| -> u32 {
        let sum: u32 = (0..n)
            .map(|i| {
                let w = (n - 1 - i) % 8 + 2;
                value(b[i]) * w as u32
            })
            .sum();
        let r = sum % 11;
        if r < 2 {
            0
        } else {
            11 - r
        }
    };
    digit(12) == value(b[12]) && digit(13) == value(b[13])
}

fn cnpj(s: &str) -> Result<String, String> {
    let d = strip_formatting(s)?;
    if d.len() != 14 {
        return Err("a CNPJ has 14 characters".into());
    }
    if !cnpj_check(&d) {
        return Err("the CNPJ's check digits do not match".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(s: &str) -> Result<String, String> {
        normalize_v2(s, None).map(|(_, c)| c)
    }

    #[test]
    fn v2_phone_spellings_agree() {
        for s in [
            "+55 (11) 99999-9999",
            "5511999999999",
            "+5511999999999",
            "(11) 99999-9999",
        ] {
            assert_eq!(v2(s).as_deref(), Ok("+5511999999999"), "{s}");
        }
        assert_eq!(v2("+55 11 3333-4444").as_deref(), Ok("+551133334444"));
        assert!(v2("+1 415 555 0100")
            .unwrap_err()
            .contains("Brazilian numbers (+55)"));
    }

    #[test]
    fn v2_cpf_and_cnpj() {
        assert_eq!(v2("529.982.247-25").as_deref(), Ok("52998224725"));
        assert_eq!(v2("12345678909").as_deref(), Ok("12345678909"));
        // 52 is not an area code in use, so these digits dial no phone.
        assert_eq!(v2("52998224725").as_deref(), Ok("52998224725"));
        assert!(v2("529.982.247-26").unwrap_err().contains("check digits"));
        assert_eq!(v2("11.222.333/0001-81").as_deref(), Ok("11222333000181"));
        assert!(v2("11.222.333/0001-82")
            .unwrap_err()
            .contains("CNPJ's check digits"));
        // The alphanumeric CNPJ example published by the Receita Federal.
        assert_eq!(v2("12.ABC.345/01DE-35").as_deref(), Ok("12ABC34501DE35"));
    }

    #[test]
    fn v2_ambiguity_is_an_error_unless_typed() {
        // 11 digits that pass the CPF check and also form a mobile number.
        let both = (0..100_000_000u64)
            .map(|n| format!("119{n:08}"))
            .find(|d| cpf_check(d))
            .unwrap();
        assert!(v2(&both).unwrap_err().contains("give the key type"));
        assert_eq!(normalize_v2(&both, Some(PixKeyType::Cpf)).unwrap().1, both);
        assert_eq!(
            normalize_v2(&both, Some(PixKeyType::Phone)).unwrap().1,
            format!("+55{both}")
        );
    }

    #[test]
    fn v2_email_and_evp() {
        assert_eq!(
            v2(" Fulano@Example.COM ").as_deref(),
            Ok("fulano@example.com")
        );
        assert!(v2("a@b@c.com").unwrap_err().contains("exactly one `@`"));
        let k = "123e4567-e89b-12d3-a456-426614174000";
        assert_eq!(v2(&k.to_uppercase()).as_deref(), Ok(k));
        assert_eq!(v2(&k.replace('-', "")).as_deref(), Ok(k));
        assert!(normalize_v2(k, Some(PixKeyType::Cpf))
            .unwrap_err()
            .contains("CPF has 11 digits"));
    }

    #[test]
    fn area_codes_are_the_67_in_use() {
        assert_eq!(AREA_CODES.len(), 67);
        let mut sorted = AREA_CODES;
        sorted.sort_unstable();
        assert!(sorted.windows(2).all(|w| w[0] < w[1]), "no code twice");
        let unused: Vec<u8> = (11..100)
            .filter(|n| n % 10 != 0 && !AREA_CODES.contains(n))
            .collect();
        assert_eq!(
            unused,
            [23, 25, 26, 29, 36, 39, 52, 56, 57, 58, 59, 72, 76, 78]
        );
    }

    #[test]
    fn unused_area_codes_are_refused_by_name() {
        let typed = normalize_v2("+55 57 93703-5398", Some(PixKeyType::Phone)).unwrap_err();
        assert!(typed.contains("area code 57"), "{typed}");
        let untyped = v2("+55 57 93703-5398").unwrap_err();
        assert!(untyped.contains("area code 57"), "{untyped}");
        let landline = v2("(23) 3333-4444").unwrap_err();
        assert!(landline.contains("area code 23"), "{landline}");
        let trunk = v2("(078) 91610-2296").unwrap_err();
        assert!(trunk.contains("area code 78"), "{trunk}");
    }

    #[test]
    fn a_cpf_whose_digits_start_with_an_unused_area_code_is_only_a_cpf() {
        assert!(cpf_check("23994718570"));
        assert_eq!(
            normalize_v2("23994718570", None),
            Ok((PixKeyType::Cpf, "23994718570".to_string()))
        );
        // With area code 24 (in use) the same shape stays ambiguous.
        let both = (0..100_000_000u64)
            .map(|n| format!("249{n:08}"))
            .find(|d| cpf_check(d))
            .unwrap();
        assert!(v2(&both).unwrap_err().contains("give the key type"));
    }

    #[test]
    fn trunk_prefix_and_carrier_code_spellings() {
        for s in [
            "(074) 91610-2296",
            "074 916102296",
            "0 21 74 91610-2296",
            "074916102296",
            "(0 21 74) 91610-2296",
            "02174916102296",
            "+55 74 91610-2296",
        ] {
            assert_eq!(v2(s).as_deref(), Ok("+5574916102296"), "{s}");
            assert_eq!(
                normalize_v2(s, Some(PixKeyType::Phone)).map(|(_, c)| c),
                Ok("+5574916102296".to_string()),
                "{s} typed"
            );
        }
        // A landline with the trunk prefix, typed (11 digits like a CPF).
        assert_eq!(
            normalize_v2("(011) 3333-4444", None).map(|(_, c)| c),
            Ok("+551133334444".to_string())
        );
        assert_eq!(
            normalize_v2("0 15 11 3333-4444", Some(PixKeyType::Phone)).map(|(_, c)| c),
            Ok("+551133334444".to_string())
        );
        // A carrier code never starts with 0, and the trunk 0 is not E.164.
        assert!(normalize_v2("0 01 74 91610-2296", Some(PixKeyType::Phone))
            .unwrap_err()
            .contains("after the trunk 0"));
        assert!(normalize_v2("+55 074 91610-2296", Some(PixKeyType::Phone))
            .unwrap_err()
            .contains("after +55"));
        assert!(normalize_v2("0 74 1610-2296", Some(PixKeyType::Phone))
            .unwrap_err()
            .contains("landline (starting with 2 to 5)"));
    }

    #[test]
    fn a_masked_cnpj_is_a_cnpj_even_when_its_digits_dial_a_phone() {
        // CNPJs start with 0 too; with the mask, the type is the CNPJ.
        let cnpj = (0..10_000_000u64)
            .map(|n| format!("0217491{n:07}"))
            .find(|d| cnpj_check(d) && phone_digits(d).is_ok())
            .unwrap();
        let masked = format!(
            "{}.{}.{}/{}-{}",
            &cnpj[..2],
            &cnpj[2..5],
            &cnpj[5..8],
            &cnpj[8..12],
            &cnpj[12..]
        );
        assert_eq!(normalize_v2(&masked, None).unwrap().0, PixKeyType::Cnpj);
        assert!(v2(&cnpj).unwrap_err().contains("give the key type"));
    }

    #[test]
    fn v1_matches_reference_rule() {
        assert_eq!(normalize_v1(" 131.144.024-26 "), "13114402426");
        assert_eq!(normalize_v1("+55 11 90259-9058"), "5511902599058");
        assert_eq!(
            normalize_v1(" THsDDDX@Example.com\t"),
            "thsdddx@example.com"
        );
    }
}
