//! Normalization rules: how each kind of field is written before it enters
//! a key. Rules are named kinds, not field names, so a catalog can reuse them.

use crate::catalog::{ActionSpec, FieldSpec, Rule, RulesVersion};
use crate::payload::{FieldValue, Payload};
use crate::pix::{self, PixKeyType};
use crate::{Cents, Error};
use std::borrow::Cow;

// The text primitives live in their own leaf, which `pix` uses too; they
// stay reachable here, where the library's users found them.
pub use crate::text::{lower, nfc, py_isalnum, py_isspace, py_strip};

/// Python's `strip()` of a possibly borrowed text, borrowing when it can.
fn trimmed(s: Cow<'_, str>) -> Cow<'_, str> {
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(py_strip(b)),
        Cow::Owned(o) => Cow::Owned(py_strip(&o).to_owned()),
    }
}

/// Text of a field whose rule takes text: a string, or an integer written
/// as its digits (what `str()` of a JSON integer gives). Anything else is
/// refused rather than stringified in a way another language would not.
fn text<'a>(
    spec: &ActionSpec,
    field: &FieldSpec,
    v: FieldValue<'a>,
) -> Result<Cow<'a, str>, Error> {
    match v {
        FieldValue::Str(s) => Ok(s),
        FieldValue::Num(n) if is_json_integer(n) => Ok(Cow::Owned(canonical_integer(n))),
        other => Err(Error::FieldType {
            action: spec.action.to_string(),
            field: field.name.to_string(),
            expected: "a string or an integer",
            got: if matches!(other, FieldValue::Num(_)) {
                "a non-integer number"
            } else {
                other.type_name()
            },
        }),
    }
}

fn is_json_integer(n: &str) -> bool {
    let d = n.strip_prefix('-').unwrap_or(n);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

/// `-0` is `0` once parsed by any JSON reader.
fn canonical_integer(n: &str) -> String {
    if n.trim_start_matches('-').bytes().all(|b| b == b'0') {
        "0".into()
    } else {
        n.to_owned()
    }
}

/// Applies one field's rule to its value.
///
/// The result borrows from the payload when the rule leaves the text as it
/// is (ids, already-trimmed references): most fields cost no allocation.
pub fn apply<'a>(
    spec: &ActionSpec,
    version: RulesVersion,
    field: &FieldSpec,
    value: FieldValue<'a>,
    payload: &Payload<'_>,
) -> Result<Cow<'a, str>, Error> {
    match field.rule {
        Rule::RawText => text(spec, field, value),
        Rule::Trim => text(spec, field, value).map(trimmed),
        Rule::TrimLower => text(spec, field, value).map(|s| match trimmed(s) {
            Cow::Borrowed(b) => lower(b),
            Cow::Owned(o) => Cow::Owned(lower(&o).into_owned()),
        }),
        Rule::Digits => text(spec, field, value)
            .map(|s| Cow::Owned(s.chars().filter(char::is_ascii_digit).collect())),
        Rule::MoneyCents => {
            let t = amount_text(spec, field, &value)?;
            Cents::parse(t)
                .map(|c| Cow::Owned(c.to_string()))
                .map_err(|reason| Error::BadAmount {
                    action: spec.action.to_string(),
                    field: field.name.to_string(),
                    reason,
                })
        }
        Rule::MoneyMinor => {
            let t = amount_text(spec, field, &value)?;
            let currency = amount_currency(spec, payload)?;
            crate::money::parse_minor(t, currency.minor_units())
                .map(|n| Cow::Owned(n.to_string()))
                .map_err(|reason| Error::BadAmount {
                    action: spec.action.to_string(),
                    field: field.name.to_string(),
                    reason: match reason {
                        crate::error::AmountError::BelowCent => {
                            crate::error::AmountError::BelowMinorUnit {
                                currency: currency.code().to_owned(),
                                digits: currency.minor_units(),
                            }
                        }
                        other => other,
                    },
                })
        }
        Rule::PixKey => {
            let s = text(spec, field, value)?;
            match version {
                RulesVersion::V1 => Ok(Cow::Owned(pix::normalize_v1(&s))),
                RulesVersion::V2 => {
                    let declared = declared_pix_type(spec, field, payload)?;
                    pix::normalize_v2(&s, declared)
                        .map(|(_, c)| Cow::Owned(c))
                        .map_err(|reason| Error::BadPixKey {
                            action: spec.action.to_string(),
                            field: field.name.to_string(),
                            reason,
                        })
                }
            }
        }
    }
}

/// An amount's text: a JSON number's, or a string's (read by the money
/// rules, which refuse anything else).
fn amount_text<'v>(
    spec: &ActionSpec,
    field: &FieldSpec,
    value: &'v FieldValue<'_>,
) -> Result<&'v str, Error> {
    match value {
        FieldValue::Str(s) => Ok(s.as_ref()),
        FieldValue::Num(n) => Ok(n),
        other => Err(Error::FieldType {
            action: spec.action.to_string(),
            field: field.name.to_string(),
            expected: "an amount (a JSON number or a decimal string)",
            got: other.type_name(),
        }),
    }
}

/// The currency of an action's `money_minor` fields: the catalog's, or the
/// one the payload's currency field names.
fn amount_currency(
    spec: &ActionSpec,
    payload: &Payload<'_>,
) -> Result<crate::currency::Currency, Error> {
    if let Some(c) = spec.currency {
        return Ok(c);
    }
    let field = spec.currency_field.as_deref().unwrap_or("currency");
    let bad = |got: &'static str| Error::FieldType {
        action: spec.action.to_string(),
        field: field.to_owned(),
        expected: "an ISO 4217 currency code (BHD, BRL, JPY, …)",
        got,
    };
    match payload.get(field) {
        Some(FieldValue::Str(s)) => {
            crate::currency::Currency::from_code(py_strip(&s)).ok_or_else(|| Error::BadCurrency {
                action: spec.action.to_string(),
                field: field.to_owned(),
                reason: crate::currency::not_a_currency(py_strip(&s)),
            })
        }
        None | Some(FieldValue::Null) => Err(bad("nothing")),
        Some(other) => Err(bad(other.type_name())),
    }
}

fn declared_pix_type(
    spec: &ActionSpec,
    field: &FieldSpec,
    payload: &Payload<'_>,
) -> Result<Option<PixKeyType>, Error> {
    let Some(type_field) = spec.pix_type_field.as_deref() else {
        return Ok(None);
    };
    match payload.get(type_field) {
        None | Some(FieldValue::Null) => Ok(None),
        Some(FieldValue::Str(s)) if py_strip(&s).is_empty() => Ok(None),
        Some(FieldValue::Str(s)) => s.parse().map(Some).map_err(|reason| Error::BadPixKey {
            action: spec.action.to_string(),
            field: field.name.to_string(),
            reason: format!("`{type_field}`: {reason}"),
        }),
        Some(other) => Err(Error::FieldType {
            action: spec.action.to_string(),
            field: type_field.to_owned(),
            expected: "a Pix key type (cpf, cnpj, phone, email or evp)",
            got: other.type_name(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace() {
        assert_eq!(py_strip("\u{a0} x \u{1f}\t"), "x");
        assert!(py_isalnum('é') && py_isalnum('7') && !py_isalnum('\u{301}') && !py_isalnum('-'));
    }
}
