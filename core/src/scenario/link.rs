//! A scenario and its link: the canonical query string it writes (v2),
//! the v1 and v2 links it reads, and the ids saved scenarios and
//! comparisons are kept under.

use super::fields::{Field, Problem};
use super::{Scenario, VERSION};
use crate::cost::{CostInputs, CostOutputs, PriceUnit};
use crate::locale::Currency;
use crate::{cost, Error};
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};
use std::str::FromStr;

/// The choices of a scenario that are not numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Choices {
    /// What prices are quoted per.
    pub price_unit: PriceUnit,
    /// The currency of the token prices.
    pub price_currency: Currency,
    /// The currency of revenue and results.
    pub revenue_currency: Currency,
}

impl Default for CostInputs {
    /// The reference scenario, in BRL.
    fn default() -> Self {
        CostInputs::reference()
    }
}

/// A scenario that could not be built: each refused field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<(Field, Problem)>);

impl std::fmt::Display for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (field, p)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {p:?}", field.key())?;
        }
        Ok(())
    }
}

/// Whether a query key belongs to a scenario link (v1 or v2), so a pasted
/// address can be told apart from another site's.
pub fn is_link_key(key: &str) -> bool {
    Field::from_key(key).is_some()
        || matches!(
            key,
            "v" | "t" | "lang" | "u" | "cur" | "fx" | "pc" | "rc" | "pd" | "pxd" | "m" | "md"
        )
}

/// Whether text is a model id the link may carry (`provider/model`, in
/// the characters price tables use, none of which needs escaping): the server then looks it up.
pub fn is_model_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 160
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/@+~-".contains(&b))
}

/// A date as a link may carry it: `YYYY-MM-DD`, or the Brazilian
/// `dd/mm/aaaa` a person types (`1/12/2026` too), read as the ISO date
/// it names; `None` when it names no day.
pub fn read_date(s: &str) -> Option<String> {
    let s = s.trim();
    if is_iso_date(s) {
        return Some(s.to_owned());
    }
    let mut parts = s.split('/');
    let (d, m, y) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |t: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit())
    };
    if parts.next().is_some() || !digits(d, 1..=2) || !digits(m, 1..=2) || !digits(y, 4..=4) {
        return None;
    }
    let iso = format!("{y}-{m:0>2}-{d:0>2}");
    is_iso_date(&iso).then_some(iso)
}

/// A rate a link dropped because the price currency changed under it
/// (`pxd=EUR:6.1`: the rate was for one euro): the currency it was quoted
/// for and the rate, for the page to say what it dropped. Never a figure.
pub fn read_dropped_rate(v: &str) -> Option<(Currency, Decimal)> {
    let (code, rate) = v.split_once(':')?;
    Some((Currency::from_code(code)?, parse_canonical(rate)?))
}

/// Whether text is a calendar date written `YYYY-MM-DD`.
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|t| t.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !b[..4]
        .iter()
        .chain(&b[5..7])
        .chain(&b[8..])
        .all(u8::is_ascii_digit)
    {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1900..=2999).contains(&y) && (1..=days).contains(&d)
}

impl Scenario {
    /// Builds a scenario from each field's value (`None`: left empty, which
    /// only the optional fields may be) and the choices. Every refused
    /// field is reported, not just the first. `typed` also refuses values
    /// with more decimals than a field keeps (what a person types, and v2
    /// links); version 1 links are read as they always were.
    pub fn from_values(
        value: impl Fn(Field) -> Option<Decimal>,
        choices: Choices,
        typed: bool,
    ) -> Result<Scenario, Problems> {
        let mut problems = Vec::new();
        let needs_rate = choices.price_currency != choices.revenue_currency;
        let mut get = |f: Field| -> Option<Decimal> {
            match value(f) {
                None => {
                    if f == Field::Fx && needs_rate {
                        problems.push((f, Problem::RateRequired));
                    } else if !f.optional() {
                        problems.push((f, Problem::NotANumber));
                    }
                    None
                }
                Some(v) => {
                    let checked = if typed { f.check_typed(v) } else { f.check(v) };
                    match checked {
                        Ok(v) => Some(v),
                        Err(p) => {
                            problems.push((f, p));
                            None
                        }
                    }
                }
            }
        };
        let vals: Vec<Option<Decimal>> = Field::ALL.into_iter().map(&mut get).collect();
        let risk_given: Vec<Field> = Field::RISK
            .into_iter()
            .filter(|f| value(*f).is_some())
            .collect();
        if !risk_given.is_empty() && risk_given.len() < Field::RISK.len() {
            for f in Field::RISK {
                if value(f).is_none() {
                    problems.push((f, Problem::RiskIncomplete));
                }
            }
        }
        if !problems.is_empty() {
            return Err(Problems(problems));
        }
        let mut inputs = CostInputs {
            price_unit: choices.price_unit,
            price_currency: choices.price_currency,
            revenue_currency: choices.revenue_currency,
            ..CostInputs::reference()
        };
        // Each value by its field's own place in the table: no field can
        // take another's value.
        Field::write_inputs(|f| vals[f.index()], &mut inputs);
        // A rate between a currency and itself means nothing; it is
        // dropped so the link does not carry it.
        if !needs_rate {
            inputs.fx = None;
        }
        Ok(Scenario {
            inputs,
            model: None,
            model_date: None,
            fx_date: None,
        })
    }

    /// The choices this scenario was built with.
    pub fn choices(&self) -> Choices {
        Choices {
            price_unit: self.inputs.price_unit,
            price_currency: self.inputs.price_currency,
            revenue_currency: self.inputs.revenue_currency,
        }
    }

    /// Reads a scenario from query pairs written in canonical notation
    /// (`0.015`). A key that is absent takes the reference value; unknown
    /// keys (such as `lang`) are ignored; versions 1 and 2 are read (no
    /// `v` reads as version 1, as links before versions did); any other is
    /// refused.
    pub fn from_query<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Scenario, QueryError> {
        Self::from_query_with(pairs, |s| parse_canonical(s).ok_or(Problem::NotANumber))
    }

    /// [`from_query`](Self::from_query) for what only shows figures (an
    /// export, a chart): a rate date that names no day leaves the rate
    /// undated instead of refusing the link, since a date only labels the
    /// rate and blocks no figure.
    pub fn from_query_for_figures<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Scenario, QueryError> {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        match Self::from_query(pairs.iter().copied()) {
            Err(QueryError::Date(_)) => {
                Self::from_query(pairs.iter().copied().filter(|(k, _)| *k != "pd"))
            }
            other => other,
        }
    }

    /// [`from_query`](Self::from_query) with the caller's number reader (the
    /// dashboard reads a form submitted without JavaScript in the page's
    /// locale).
    pub fn from_query_with<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        parse: impl Fn(&str) -> Result<Decimal, Problem>,
    ) -> Result<Scenario, QueryError> {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        // A key twice is two values for one thing (`&rc=USD` pasted after
        // `rc=BHD` would turn dinar amounts into dollars): refused, as the
        // API refuses a JSON member twice, never read as the last one.
        for (i, (k, _)) in pairs.iter().enumerate() {
            if is_link_key(k)
                && !matches!(*k, "lang" | "t")
                && pairs[..i].iter().any(|(j, _)| j == k)
            {
                return Err(QueryError::Duplicate((*k).to_owned()));
            }
        }
        // No `v` reads as version 1, as links before versions did; but a
        // link carrying keys only version 2 has lost its `v=2` on the way
        // (cut by hand, a chat client's preview): read as what it is, never
        // as a version 1 link in reais.
        let v2_only = |k: &str| {
            matches!(k, "pc" | "rc" | "pd" | "m" | "md")
                || (Field::from_key(k).is_some() && !v1::KEYS.iter().any(|(key, _)| *key == k))
        };
        let version = pairs
            .iter()
            .rev()
            .find(|(k, _)| *k == "v")
            .map(|(_, v)| *v)
            .unwrap_or_else(|| {
                if pairs.iter().any(|(k, _)| v2_only(k)) {
                    VERSION
                } else {
                    "1"
                }
            });
        match version {
            "1" => v1::read(&pairs, parse),
            VERSION => Self::read_v2(&pairs, parse),
            other => Err(QueryError::Version(other.to_owned())),
        }
    }

    fn read_v2(
        pairs: &[(&str, &str)],
        parse: impl Fn(&str) -> Result<Decimal, Problem>,
    ) -> Result<Scenario, QueryError> {
        let mut values: Vec<(Field, Option<Decimal>)> = Field::ALL
            .into_iter()
            .map(|f| (f, f.default_value()))
            .collect();
        let mut choices = Choices::default();
        let mut model = None;
        let mut model_date = None;
        let mut fx_date = None;
        let mut problems = Vec::new();
        let currency =
            |v: &str| Currency::from_code(v).ok_or_else(|| QueryError::Currency(v.to_owned()));
        for (k, v) in pairs.iter().copied() {
            match k {
                "v" => {}
                "u" => {
                    choices.price_unit =
                        PriceUnit::from_str(v).map_err(|_| QueryError::Unit(v.to_owned()))?
                }
                "pc" => choices.price_currency = currency(v)?,
                "rc" => choices.revenue_currency = currency(v)?,
                "m" if v.is_empty() => model = None,
                "m" if is_model_id(v) => model = Some(v.to_owned()),
                "m" => return Err(QueryError::Model(v.to_owned())),
                "md" if v.is_empty() => model_date = None,
                "md" => {
                    model_date = Some(read_date(v).ok_or_else(|| QueryError::Date(v.to_owned()))?)
                }
                "pd" if v.is_empty() => fx_date = None,
                // Said only when a rate applies: a rate's date without a
                // rate labels nothing.
                "pd" => fx_date = Some(read_date(v).ok_or_else(|| v.to_owned())),
                _ => {
                    if let Some(f) = Field::from_key(k) {
                        let slot = values.iter_mut().find(|(g, _)| *g == f);
                        let parsed = if v.trim().is_empty() && f.optional() {
                            Ok(None)
                        } else {
                            parse(v).map(Some)
                        };
                        match (slot, parsed) {
                            (Some(slot), Ok(d)) => slot.1 = d,
                            (_, Err(p)) => problems.push((f, p)),
                            (None, _) => {}
                        }
                    }
                }
            }
        }
        let lookup = |f: Field| values.iter().find(|(g, _)| *g == f).and_then(|(_, v)| *v);
        let built = Scenario::from_values(lookup, choices, true);
        match built {
            Ok(mut s) if problems.is_empty() => {
                s.model_date = model_date.filter(|_| model.is_some());
                s.model = model;
                s.fx_date = match fx_date.filter(|_| s.inputs.fx.is_some()) {
                    Some(Err(bad)) => return Err(QueryError::Date(bad)),
                    date => date.and_then(Result::ok),
                };
                Ok(s)
            }
            Ok(_) => Err(QueryError::Fields(Problems(problems))),
            Err(Problems(more)) => {
                problems.extend(more);
                Err(QueryError::Fields(Problems(problems)))
            }
        }
    }

    /// The canonical query string: `v=2`, then every value that differs
    /// from the reference scenario, in a fixed order. Values need no
    /// percent-encoding (digits, `.`, `-`, and model ids' `/:@+_~`).
    pub fn to_query(&self) -> String {
        let reference = Scenario::default();
        let mut out = format!("v={VERSION}");
        for f in Field::ALL {
            // Absent keys read back as the reference's values, whatever the
            // price unit, so equal values are omitted in either unit.
            let v = f.get(self);
            if v.map(|d| d.normalize()) == f.get(&reference).map(|d| d.normalize()) {
                continue;
            }
            if let Some(v) = v {
                out.push('&');
                out.push_str(f.key());
                out.push('=');
                out.push_str(&canonical(v));
            }
        }
        let i = &self.inputs;
        if i.price_unit == PriceUnit::PerMillion {
            out.push_str("&u=1m");
        }
        if i.price_currency != Currency::BRL {
            out.push_str("&pc=");
            out.push_str(i.price_currency.code());
        }
        if i.revenue_currency != Currency::BRL {
            out.push_str("&rc=");
            out.push_str(i.revenue_currency.code());
        }
        if let Some(d) = self.fx_date.as_deref().filter(|_| i.fx.is_some()) {
            out.push_str("&pd=");
            out.push_str(d);
        }
        if let Some(m) = &self.model {
            out.push_str("&m=");
            out.push_str(m);
            if let Some(d) = &self.model_date {
                out.push_str("&md=");
                out.push_str(d);
            }
        }
        out
    }

    /// Runs the cost model.
    pub fn compute(&self) -> Result<CostOutputs, Error> {
        cost::compute(&self.inputs)
    }

    /// The currency results are in.
    pub fn currency(&self) -> Currency {
        self.inputs.revenue_currency
    }

    /// A short, stable id for a saved scenario: the first 12 hex digits of
    /// SHA-256 over the canonical query and the name. Saving the same
    /// scenario under the same name twice gives the same link (the save is
    /// idempotent), and a saved scenario can never change under its link.
    pub fn saved_id(&self, name: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.to_query().as_bytes());
        h.update([0]);
        h.update(name.as_bytes());
        crate::derive::to_hex(&h.finalize()[..6])
    }
}

/// A short, stable id for a saved comparison (`/c/{id}`): as
/// [`Scenario::saved_id`], over the comparison's query (`s=…&s=…`, its
/// columns in order) and its name, with a label of its own so a comparison
/// and a scenario never share an id by construction.
pub fn comparison_id(query: &str, name: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"idem comparison\0");
    h.update(query.as_bytes());
    h.update([0]);
    h.update(name.as_bytes());
    crate::derive::to_hex(&h.finalize()[..6])
}

/// Version 1 links, read into the version 2 model with the same numbers.
pub(crate) mod v1 {
    use super::*;

    /// v1's fields, in its order, by the keys it used.
    pub(super) const KEYS: [(&str, Field); 11] = [
        ("c", Field::Conversations),
        ("ti", Field::TokensIn),
        ("to", Field::TokensOut),
        ("pi", Field::PriceIn),
        ("po", Field::PriceOut),
        ("tk", Field::Ticket),
        ("d", Field::DuplicateRate),
        ("ms", Field::MoneyShare),
        ("ac", Field::AvgCharge),
        ("oc", Field::OpsCost),
        ("cr", Field::ClaimRate),
    ];

    /// Reads a v1 link. v1 had one currency for everything, a label unless
    /// `fx` converted results at "1 R$ = fx units of `cur`". Both read as
    /// revenue in `cur`: a label means prices in `cur` too; a conversion
    /// means prices in BRL at `fx`, and the revenue-side amounts (ticket,
    /// average charge, operational cost) multiplied by `fx`, which is what
    /// v1 did to every result. Only multiplications, so the numbers are
    /// exactly v1's.
    pub(super) fn read(
        pairs: &[(&str, &str)],
        parse: impl Fn(&str) -> Result<Decimal, Problem>,
    ) -> Result<Scenario, QueryError> {
        let mut values: Vec<(Field, Option<Decimal>)> =
            KEYS.iter().map(|(_, f)| (*f, f.default_value())).collect();
        let mut unit = PriceUnit::PerThousand;
        let mut currency = Currency::BRL;
        let mut rate: Option<Decimal> = None;
        let mut problems = Vec::new();
        for (k, v) in pairs.iter().copied() {
            match k {
                "u" => unit = PriceUnit::from_str(v).map_err(|_| QueryError::Unit(v.to_owned()))?,
                "cur" => {
                    currency =
                        Currency::from_code(v).ok_or_else(|| QueryError::Currency(v.to_owned()))?
                }
                "fx" if v.trim().is_empty() => rate = None,
                "fx" => match parse(v).and_then(|r| Field::Fx.check(r)) {
                    Ok(r) => rate = Some(r),
                    Err(p) => problems.push((Field::Fx, p)),
                },
                _ => {
                    if let Some((_, f)) = KEYS.iter().find(|(key, _)| *key == k) {
                        let parsed = if v.trim().is_empty() && f.optional() {
                            Ok(None)
                        } else {
                            parse(v).map(Some)
                        };
                        match parsed {
                            Ok(d) => {
                                if let Some(slot) = values.iter_mut().find(|(g, _)| g == f) {
                                    slot.1 = d;
                                }
                            }
                            Err(p) => problems.push((*f, p)),
                        }
                    }
                }
            }
        }
        // A rate with BRL (which the page never wrote: choosing BRL cleared
        // it, but a hand-edited link can carry it) still multiplied every
        // result. There is no exchange rate from BRL to itself, so the
        // prices are multiplied too: the same numbers.
        let same = currency == Currency::BRL;
        let scaled =
            |v: Option<Decimal>, r: Decimal| v.map(|v| v.checked_mul(r).unwrap_or(Decimal::MAX));
        let lookup = |f: Field| -> Option<Decimal> {
            let v = values.iter().find(|(g, _)| *g == f).and_then(|(_, v)| *v);
            match (f, rate) {
                (Field::Fx, r) if !same => r,
                (Field::Fx, _) => None,
                (Field::Ticket | Field::AvgCharge | Field::OpsCost, Some(r)) => scaled(v, r),
                (Field::PriceIn | Field::PriceOut, Some(r)) if same => scaled(v, r),
                (f, _) if KEYS.iter().any(|(_, g)| *g == f) => v,
                (f, _) => f.default_value(),
            }
        };
        let choices = Choices {
            price_unit: unit,
            price_currency: if rate.is_some() && !same {
                Currency::BRL
            } else {
                currency
            },
            revenue_currency: currency,
        };
        let built = Scenario::from_values(lookup, choices, false);
        match built {
            Ok(s) if problems.is_empty() => Ok(s),
            Ok(_) => Err(QueryError::Fields(Problems(problems))),
            Err(Problems(more)) => {
                problems.extend(more);
                Err(QueryError::Fields(Problems(problems)))
            }
        }
    }
}

/// Whether text looks like a saved scenario's id.
pub fn is_saved_id(s: &str) -> bool {
    s.len() == 12
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why a query string is not a scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// `v` names a format this build does not know.
    #[error(
        "scenario link version `{0}` is not supported (this build reads versions 1 and {VERSION})"
    )]
    Version(String),
    /// `u` is neither `1k` nor `1m`.
    #[error("price unit `{0}` is not 1k or 1m")]
    Unit(String),
    /// `cur`, `pc` or `rc` is not an ISO 4217 currency code with minor units.
    #[error("{}", crate::currency::not_a_currency(.0))]
    Currency(String),
    /// `m` is not a model id.
    #[error("model `{0}` is not a model id of the price table")]
    Model(String),
    /// `pd` or `md` is not a `YYYY-MM-DD` date.
    #[error("exchange-rate date `{0}` is not a date written YYYY-MM-DD")]
    Date(String),
    /// Some fields were refused.
    #[error("{0}")]
    Fields(Problems),
    /// A key appears more than once.
    #[error("`{0}` appears more than once in the link: say it once")]
    Duplicate(String),
}

/// Reads the canonical notation: an optional `-`, digits, an optional `.`
/// and digits. No grouping, no exponent, no locale.
pub fn parse_canonical(s: &str) -> Option<Decimal> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let ok = !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && body.bytes().filter(|b| *b == b'.').count() <= 1
        && body.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    Decimal::from_str_exact(s).ok()
}

/// Writes the canonical notation: no trailing zeros, no exponent.
pub fn canonical(d: Decimal) -> String {
    d.normalize().to_string()
}
