//! Pix destination keys.
//!
//! * Rules v1 reproduce the reference derivation: NFC, trim, lowercase; an
//!   e-mail keeps its punctuation, anything else keeps only letters and
//!   digits. `+5511999999999` and `11999999999` stay two different texts.
//! * Rules v2 write every key in the Pix directory's canonical form: E.164
//!   phone (`+5511999999999`), CPF/CNPJ as digits with verified check digits,
//!   lowercase e-mail, lowercase hyphenated random key (EVP). The key type is
//!   taken from the payload when given and inferred only when unambiguous.

use crate::normalize::{lower, nfc, py_isalnum, py_strip};
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
            let is_phone = national_phone(&bare).is_some();
            match (is_cpf, is_phone) {
                (true, true) => Err(format!(
                    "`{s}` is both a valid CPF and a valid mobile number; give the key type (cpf or phone)"
                )),
                (true, false) => Ok(PixKeyType::Cpf),
                (false, true) => Ok(PixKeyType::Phone),
                (false, false) => Err("11 digits that are neither a valid CPF nor a mobile number".into()),
            }
        }
        14 => Ok(PixKeyType::Cnpj),
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

/// A Brazilian area code: two digits, neither zero.
fn valid_ddd(d: &[u8]) -> bool {
    d.len() == 2 && (b'1'..=b'9').contains(&d[0]) && (b'1'..=b'9').contains(&d[1])
}

/// Digits without the country code -> E.164, when they form a Brazilian
/// number: area code plus a 9-digit mobile (starting 9) or 8-digit landline
/// (starting 2 to 5).
fn national_phone(d: &str) -> Option<String> {
    let b = d.as_bytes();
    let ok = match b.len() {
        11 => valid_ddd(&b[..2]) && b[2] == b'9',
        10 => valid_ddd(&b[..2]) && (b'2'..=b'5').contains(&b[2]),
        _ => false,
    };
    ok.then(|| format!("+55{d}"))
}

fn phone(s: &str) -> Result<String, String> {
    let has_plus = s.starts_with('+');
    let digits = strip_formatting(s.trim_start_matches('+'))?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("a phone key holds only digits".into());
    }
    if has_plus && !digits.starts_with("55") {
        return Err("Pix phone keys are Brazilian numbers (+55)".into());
    }
    if let Some(national) = digits
        .strip_prefix("55")
        .filter(|n| has_plus || n.len() >= 10)
    {
        if let Some(e164) = national_phone(national) {
            return Ok(e164);
        }
        if has_plus || digits.len() > 11 {
            return Err(
                "after +55 a phone key needs a 2-digit area code and an 8- or 9-digit number"
                    .into(),
            );
        }
    }
    national_phone(&digits).ok_or_else(|| {
        "a phone key needs a 2-digit area code and a 9-digit mobile or 8-digit landline number"
            .into()
    })
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
        assert!(v2("+1 415 555 0100").is_err());
    }

    #[test]
    fn v2_cpf_and_cnpj() {
        assert_eq!(v2("529.982.247-25").as_deref(), Ok("52998224725"));
        assert_eq!(v2("12345678909").as_deref(), Ok("12345678909"));
        assert!(v2("52998224725").unwrap_err().contains("give the key type"));
        assert!(v2("529.982.247-26").is_err(), "bad check digit");
        assert_eq!(v2("11.222.333/0001-81").as_deref(), Ok("11222333000181"));
        assert!(v2("11.222.333/0001-82").is_err());
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
        assert!(v2("a@b@c.com").is_err());
        let k = "123e4567-e89b-12d3-a456-426614174000";
        assert_eq!(v2(&k.to_uppercase()).as_deref(), Ok(k));
        assert_eq!(v2(&k.replace('-', "")).as_deref(), Ok(k));
        assert!(normalize_v2(k, Some(PixKeyType::Cpf)).is_err());
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
