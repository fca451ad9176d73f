//! A calculator scenario: the cost model's inputs plus where the prices
//! came from, its canonical query-string form (what a shared link
//! carries), and the derived series the dashboard plots.
//!
//! The query form is versioned, uses short keys, omits every value equal
//! to the reference scenario's, and writes numbers in one
//! locale-independent notation (`0.015`), so a link opened by an
//! English-speaking reader means what the Brazilian who copied it meant.
//!
//! Version 2 (`v=2`, written since prices got their own currency) adds the
//! price and revenue currencies, the exchange rate quoted the Brazilian way
//! (`px=5.33`: one unit of the price currency is worth 5.33 of the revenue
//! currency), cached input, calls per conversation, the duplicates' cache
//! share, and the model a price table filled the prices from. Version 1
//! links still read, into the same numbers they always gave: their display
//! conversion (`cur=USD&fx=0.18`, results × 0.18) becomes revenue in that
//! currency with the prices converted at the same rate, which is the same
//! arithmetic.

use crate::cost::{self, CostInputs, CostOutputs, PriceUnit, RiskInputs};
use crate::locale::Currency;
use crate::Error;
use rust_decimal::{Decimal, RoundingStrategy};
use sha2::{Digest, Sha256};
use std::str::FromStr;

/// The query format's version this build writes, as `v=2`.
pub const VERSION: &str = "2";

/// One numeric input of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Conversations per month.
    Conversations,
    /// Input tokens per call.
    TokensIn,
    /// Percent of input tokens served from the provider's cache.
    CachedShare,
    /// Output tokens per call (reasoning included).
    TokensOut,
    /// Model calls per conversation.
    Calls,
    /// Price of input tokens per unit.
    PriceIn,
    /// Price of cached input tokens per unit.
    PriceCached,
    /// Price of output tokens per unit.
    PriceOut,
    /// Revenue-currency units per unit of the price currency.
    Fx,
    /// Revenue per resolved conversation.
    Ticket,
    /// Percent of conversations that repeat the call.
    DuplicateRate,
    /// Percent of a duplicate's input that hits the provider's cache.
    DupCacheShare,
    /// Percent of duplicated conversations that move money.
    MoneyShare,
    /// Average charge.
    AvgCharge,
    /// Operational cost per duplicated charge.
    OpsCost,
    /// Percent of duplicated charges that become a claim.
    ClaimRate,
}

/// What kind of number a field holds, which decides how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole, non-negative count.
    Count,
    /// A non-negative amount of money (prices included).
    Money,
    /// A percentage from 0 to 100.
    Percent,
    /// A positive exchange rate.
    Rate,
    /// A positive average (calls per conversation).
    Average,
}

impl Kind {
    /// The most decimal places a typed value of this kind may have: the
    /// fields show every one of them, so nothing typed is ever rounded away
    /// (a value with more is refused, not rounded).
    pub fn max_decimals(self) -> u32 {
        match self {
            Kind::Count => 0,
            Kind::Money => 10,
            Kind::Percent => 6,
            Kind::Rate => 8,
            Kind::Average => 4,
        }
    }
}

/// Why a field's value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Below zero.
    Negative,
    /// A count with decimals.
    NotWhole,
    /// A percentage above 100.
    AboveHundred,
    /// A rate or an average of zero.
    Zero,
    /// Not a number in the canonical notation.
    NotANumber,
    /// One of the four risk inputs is given without the others.
    RiskIncomplete,
    /// The scenario's numbers are too large to compute exactly.
    TooLarge,
    /// More decimal places than the field keeps.
    TooPrecise,
    /// The exchange rate is missing while prices and revenue are in
    /// different currencies.
    RateRequired,
    /// A price typed with another currency's symbol than its block's.
    WrongCurrency,
}

impl Field {
    /// Every field, in display order.
    pub const ALL: [Field; 16] = [
        Field::Conversations,
        Field::TokensIn,
        Field::CachedShare,
        Field::TokensOut,
        Field::Calls,
        Field::PriceIn,
        Field::PriceCached,
        Field::PriceOut,
        Field::Fx,
        Field::Ticket,
        Field::DuplicateRate,
        Field::DupCacheShare,
        Field::MoneyShare,
        Field::AvgCharge,
        Field::OpsCost,
        Field::ClaimRate,
    ];

    /// The four financial-risk inputs, all given or none.
    pub const RISK: [Field; 4] = [
        Field::MoneyShare,
        Field::AvgCharge,
        Field::OpsCost,
        Field::ClaimRate,
    ];

    /// The three token prices, which are in the price currency.
    pub const PRICES: [Field; 3] = [Field::PriceIn, Field::PriceCached, Field::PriceOut];

    /// The short query key.
    pub fn key(self) -> &'static str {
        match self {
            Field::Conversations => "c",
            Field::TokensIn => "ti",
            Field::CachedShare => "cs",
            Field::TokensOut => "to",
            Field::Calls => "cl",
            Field::PriceIn => "pi",
            Field::PriceCached => "pca",
            Field::PriceOut => "po",
            Field::Fx => "px",
            Field::Ticket => "tk",
            Field::DuplicateRate => "d",
            Field::DupCacheShare => "dcs",
            Field::MoneyShare => "ms",
            Field::AvgCharge => "ac",
            Field::OpsCost => "oc",
            Field::ClaimRate => "cr",
        }
    }

    /// The field a query key names.
    pub fn from_key(key: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.key() == key)
    }

    /// What kind of number the field holds.
    pub fn kind(self) -> Kind {
        match self {
            Field::Conversations | Field::TokensIn | Field::TokensOut => Kind::Count,
            Field::PriceIn
            | Field::PriceCached
            | Field::PriceOut
            | Field::Ticket
            | Field::AvgCharge
            | Field::OpsCost => Kind::Money,
            Field::DuplicateRate
            | Field::CachedShare
            | Field::DupCacheShare
            | Field::MoneyShare
            | Field::ClaimRate => Kind::Percent,
            Field::Fx => Kind::Rate,
            Field::Calls => Kind::Average,
        }
    }

    /// Whether the field may be left empty (the risk block, and the rate
    /// while prices and revenue share a currency).
    pub fn optional(self) -> bool {
        Field::RISK.contains(&self) || self == Field::Fx
    }

    /// Checks one value against the field's kind: the same rules as
    /// [`cost::validate`], as a value a screen can translate.
    pub fn check(self, v: Decimal) -> Result<Decimal, Problem> {
        if v.is_sign_negative() && !v.is_zero() {
            return Err(Problem::Negative);
        }
        match self.kind() {
            Kind::Count if !v.fract().is_zero() => Err(Problem::NotWhole),
            Kind::Percent if v > Decimal::ONE_HUNDRED => Err(Problem::AboveHundred),
            Kind::Rate | Kind::Average if v.is_zero() => Err(Problem::Zero),
            _ => Ok(v),
        }
    }

    /// [`check`](Self::check), and refuses more decimal places than the
    /// field keeps: what a person types and what a v2 link carries.
    pub fn check_typed(self, v: Decimal) -> Result<Decimal, Problem> {
        let v = self.check(v)?;
        if v.normalize().scale() > self.kind().max_decimals() {
            return Err(if self.kind() == Kind::Count {
                Problem::NotWhole
            } else {
                Problem::TooPrecise
            });
        }
        Ok(v)
    }

    /// The field's value in a scenario (`None` for an absent optional one).
    pub fn get(self, s: &Scenario) -> Option<Decimal> {
        let i = &s.inputs;
        let r = i.risk.as_ref();
        match self {
            Field::Conversations => Some(i.conversations),
            Field::TokensIn => Some(i.tokens_in),
            Field::CachedShare => Some(i.cached_share_pct),
            Field::TokensOut => Some(i.tokens_out),
            Field::Calls => Some(i.calls_per_conversation),
            Field::PriceIn => Some(i.price_in),
            Field::PriceCached => Some(i.price_cached),
            Field::PriceOut => Some(i.price_out),
            Field::Fx => i.fx,
            Field::Ticket => Some(i.ticket),
            Field::DuplicateRate => Some(i.duplicate_rate_pct),
            Field::DupCacheShare => Some(i.dup_cache_share_pct),
            Field::MoneyShare => r.map(|r| r.money_share_pct),
            Field::AvgCharge => r.map(|r| r.avg_charge),
            Field::OpsCost => r.map(|r| r.ops_cost),
            Field::ClaimRate => r.map(|r| r.claim_rate_pct),
        }
    }

    /// The reference scenario's value.
    pub fn default_value(self) -> Option<Decimal> {
        self.get(&Scenario::default())
    }

    /// Whether the field is in the price currency (else money is in the
    /// revenue currency).
    pub fn in_price_currency(self) -> bool {
        Field::PRICES.contains(&self)
    }
}

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

/// The cost model's inputs plus where the prices came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scenario {
    /// The model's inputs.
    pub inputs: CostInputs,
    /// The price table entry (`provider/model`) the prices were filled
    /// from, if any. The link keeps the prices too, so it keeps its
    /// numbers when the table changes.
    pub model: Option<String>,
    /// The date of the price table `model` was taken from (`YYYY-MM-DD`).
    pub model_date: Option<String>,
    /// The day the exchange rate was quoted (`YYYY-MM-DD`), if given.
    pub fx_date: Option<String>,
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
        let at = |f: Field| vals[Field::ALL.iter().position(|x| *x == f).unwrap_or(0)];
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
        let z = Decimal::ZERO;
        let risk = match (
            at(Field::MoneyShare),
            at(Field::AvgCharge),
            at(Field::OpsCost),
            at(Field::ClaimRate),
        ) {
            (Some(money_share_pct), Some(avg_charge), Some(ops_cost), Some(claim_rate_pct)) => {
                Some(RiskInputs {
                    money_share_pct,
                    avg_charge,
                    ops_cost,
                    claim_rate_pct,
                })
            }
            _ => None,
        };
        Ok(Scenario {
            inputs: CostInputs {
                conversations: at(Field::Conversations).unwrap_or(z),
                tokens_in: at(Field::TokensIn).unwrap_or(z),
                tokens_out: at(Field::TokensOut).unwrap_or(z),
                price_in: at(Field::PriceIn).unwrap_or(z),
                price_out: at(Field::PriceOut).unwrap_or(z),
                price_unit: choices.price_unit,
                ticket: at(Field::Ticket).unwrap_or(z),
                duplicate_rate_pct: at(Field::DuplicateRate).unwrap_or(z),
                risk,
                price_currency: choices.price_currency,
                revenue_currency: choices.revenue_currency,
                // A rate between a currency and itself means nothing; it is
                // dropped so the link does not carry it.
                fx: if needs_rate { at(Field::Fx) } else { None },
                cached_share_pct: at(Field::CachedShare).unwrap_or(z),
                price_cached: at(Field::PriceCached).unwrap_or(z),
                calls_per_conversation: at(Field::Calls).unwrap_or(Decimal::ONE),
                dup_cache_share_pct: at(Field::DupCacheShare).unwrap_or(z),
            },
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

    /// [`from_query`](Self::from_query) with the caller's number reader (the
    /// dashboard reads a form submitted without JavaScript in the page's
    /// locale).
    pub fn from_query_with<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        parse: impl Fn(&str) -> Result<Decimal, Problem>,
    ) -> Result<Scenario, QueryError> {
        let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        let version = pairs
            .iter()
            .rev()
            .find(|(k, _)| *k == "v")
            .map_or("1", |(_, v)| *v);
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
        if i.price_currency != Currency::Brl {
            out.push_str("&pc=");
            out.push_str(i.price_currency.code());
        }
        if i.revenue_currency != Currency::Brl {
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
mod v1 {
    use super::*;

    /// v1's fields, in its order, by the keys it used.
    const KEYS: [(&str, Field); 11] = [
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
        let mut currency = Currency::Brl;
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
        let same = currency == Currency::Brl;
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
                Currency::Brl
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

/// The inputs an output depends on (by its key, as in `idem cost --json`):
/// with one of them refused, the screen says which field blocks the output
/// instead of hiding every result.
pub fn depends_on(output: &str) -> Vec<Field> {
    use Field::*;
    let call = [
        TokensIn,
        CachedShare,
        TokensOut,
        PriceIn,
        PriceCached,
        PriceOut,
        Fx,
    ];
    let dup_call = [
        TokensIn,
        DupCacheShare,
        TokensOut,
        PriceIn,
        PriceCached,
        PriceOut,
        Fx,
    ];
    let dups = [Conversations, DuplicateRate];
    let parts: &[&[Field]] = match output {
        "cost_per_call" => &[&call],
        "cost_per_duplicate_call" => &[&dup_call],
        "monthly_revenue" => &[&[Conversations, Ticket]],
        "monthly_useful_spend" => &[&call, &[Conversations, Calls]],
        "duplicated_conversations" => &[&dups],
        "monthly_token_waste" | "annual_token_waste" => &[&dup_call, &dups],
        "waste_share_of_revenue_pct" | "break_even_conversations" => &[&dup_call, &dups, &[Ticket]],
        "break_even_conversations_on_margin" => &[&dup_call, &call, &dups, &[Ticket, Calls]],
        "duplicated_charges" => &[&dups, &[MoneyShare]],
        "monthly_duplicated_amount" => &[&dups, &[MoneyShare, AvgCharge]],
        "monthly_ops_cost" => &[&dups, &[MoneyShare, OpsCost]],
        "monthly_claim_exposure" => &[&dups, &[MoneyShare, AvgCharge, ClaimRate]],
        "monthly_total_risk" | "annual_total_risk" => &[&dups, &Field::RISK],
        "monthly_total_cost" | "annual_total_cost" => &[&dup_call, &dups, &Field::RISK],
        _ => &[&Field::ALL],
    };
    let mut out: Vec<Field> = Vec::new();
    for f in parts.iter().flat_map(|p| p.iter()) {
        if !out.contains(f) {
            out.push(*f);
        }
    }
    out
}

impl Field {
    /// A valid value to compute with in place of a refused one, for the
    /// outputs that do not depend on it (any valid value gives them the
    /// same result): the reference value, or one.
    pub fn stand_in(self) -> Decimal {
        self.default_value().unwrap_or(Decimal::ONE)
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
    /// `cur`, `pc` or `rc` is not BRL, USD or EUR.
    #[error("currency `{0}` is not BRL, USD or EUR")]
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
    Decimal::from_str(s).ok()
}

/// Writes the canonical notation: no trailing zeros, no exponent.
pub fn canonical(d: Decimal) -> String {
    d.normalize().to_string()
}

/// The figure the charts call "annual loss": token waste plus, when the
/// financial inputs are given, operational cost and claim exposure.
pub fn annual_loss(o: &CostOutputs) -> Decimal {
    o.risk
        .as_ref()
        .map_or(o.annual_token_waste, |r| r.annual_total_cost)
}

/// Annual loss at duplicate rates from 0% to 10% in steps of 0.5 points.
pub fn loss_curve(inputs: &CostInputs) -> Result<Vec<(Decimal, Decimal)>, Error> {
    (0..=20)
        .map(|step| {
            let rate = Decimal::new(step * 5, 1);
            let mut i = inputs.clone();
            i.duplicate_rate_pct = rate;
            Ok((rate, annual_loss(&cost::compute(&i)?)))
        })
        .collect()
}

/// One bar of the sensitivity chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swing {
    /// The input that moved.
    pub field: Field,
    /// Annual loss with the input 20% lower.
    pub low: Decimal,
    /// Annual loss with the input 20% higher.
    pub high: Decimal,
}

impl Swing {
    /// The width of the bar.
    pub fn width(&self) -> Decimal {
        (self.high - self.low).abs()
    }
}

/// Annual loss when each input that affects it moves by `pct` percent down
/// and up, sorted by swing, widest first. Counts stay whole (rounded) and
/// percentages stay at most 100, so every moved scenario is valid.
pub fn sensitivity(inputs: &CostInputs, pct: Decimal) -> Result<Vec<Swing>, Error> {
    let hundred = Decimal::ONE_HUNDRED;
    let factor = |sign: Decimal| hundred.checked_add(sign * pct).map(|x| x / hundred);
    let mut fields = vec![
        Field::Conversations,
        Field::TokensIn,
        Field::TokensOut,
        Field::PriceIn,
        Field::PriceOut,
        Field::DuplicateRate,
    ];
    // The inputs of a real contract, where they are in play: the exchange
    // rate, and the cached share and price when any input is cached.
    if inputs.price_currency != inputs.revenue_currency {
        fields.push(Field::Fx);
    }
    if !inputs.dup_cache_share_pct.is_zero() {
        fields.extend([Field::DupCacheShare, Field::PriceCached]);
    }
    if inputs.risk.is_some() {
        fields.extend(Field::RISK);
    }
    let base = Scenario {
        inputs: inputs.clone(),
        ..Scenario::default()
    };
    let mut swings = Vec::with_capacity(fields.len());
    for f in fields {
        let Some(v) = f.get(&base) else { continue };
        let at = |sign: Decimal| -> Result<Decimal, Error> {
            let k = factor(sign).ok_or(Error::CostInput {
                field: "sensitivity",
                reason: "the step is too large".into(),
            })?;
            let mut moved = v.checked_mul(k).ok_or(Error::CostInput {
                field: "sensitivity",
                reason: "the result is too large to compute exactly".into(),
            })?;
            match f.kind() {
                Kind::Count => {
                    moved = moved.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
                }
                Kind::Percent => moved = moved.min(hundred),
                _ => {}
            }
            let mut i = inputs.clone();
            set(&mut i, f, moved);
            Ok(annual_loss(&cost::compute(&i)?))
        };
        let low = at(-Decimal::ONE)?;
        let high = at(Decimal::ONE)?;
        swings.push(Swing {
            field: f,
            low,
            high,
        });
    }
    swings.sort_by_key(|s| std::cmp::Reverse(s.width()));
    Ok(swings)
}

fn set(i: &mut CostInputs, f: Field, v: Decimal) {
    match f {
        Field::Conversations => i.conversations = v,
        Field::TokensIn => i.tokens_in = v,
        Field::TokensOut => i.tokens_out = v,
        Field::PriceIn => i.price_in = v,
        Field::PriceOut => i.price_out = v,
        Field::Ticket => i.ticket = v,
        Field::DuplicateRate => i.duplicate_rate_pct = v,
        Field::Fx => i.fx = Some(v),
        Field::CachedShare => i.cached_share_pct = v,
        Field::PriceCached => i.price_cached = v,
        Field::Calls => i.calls_per_conversation = v,
        Field::DupCacheShare => i.dup_cache_share_pct = v,
        Field::MoneyShare | Field::AvgCharge | Field::OpsCost | Field::ClaimRate => {
            if let Some(r) = i.risk.as_mut() {
                match f {
                    Field::MoneyShare => r.money_share_pct = v,
                    Field::AvgCharge => r.avg_charge = v,
                    Field::OpsCost => r.ops_cost = v,
                    _ => r.claim_rate_pct = v,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn q(s: &str) -> Result<Scenario, QueryError> {
        Scenario::from_query(s.split('&').filter_map(|kv| kv.split_once('=')))
    }

    #[test]
    fn the_reference_scenario_is_just_the_version() {
        assert_eq!(Scenario::default().to_query(), "v=2");
        assert_eq!(q("v=2").unwrap(), Scenario::default());
        assert_eq!(q("v=1").unwrap(), Scenario::default());
        assert_eq!(q("").unwrap(), Scenario::default());
    }

    #[test]
    fn changed_values_are_written_canonically_and_read_back() {
        let mut s = Scenario::default();
        s.inputs.duplicate_rate_pct = d("0.50");
        s.inputs.price_in = d("3");
        s.inputs.price_cached = d("0.30");
        s.inputs.price_out = d("15");
        s.inputs.price_unit = PriceUnit::PerMillion;
        s.inputs.price_currency = Currency::Usd;
        s.inputs.fx = Some(d("5.33"));
        s.inputs.cached_share_pct = d("40");
        s.inputs.calls_per_conversation = d("1.5");
        s.inputs.dup_cache_share_pct = d("80");
        s.fx_date = Some("2026-11-30".into());
        s.model = Some("anthropic/claude-sonnet-4-5".into());
        s.model_date = Some("2026-12-01".into());
        let text = s.to_query();
        assert_eq!(
            text,
            "v=2&cs=40&cl=1.5&pi=3&pca=0.3&po=15&px=5.33&d=0.5&dcs=80&u=1m&pc=USD&pd=2026-11-30&m=anthropic/claude-sonnet-4-5&md=2026-12-01"
        );
        let back = q(&text).unwrap();
        assert_eq!(back.to_query(), text);
        assert_eq!(back.compute().unwrap(), s.compute().unwrap());
    }

    #[test]
    fn a_v1_display_conversion_becomes_revenue_in_that_currency() {
        let s = q("v=1&cur=USD&fx=0.18").unwrap();
        assert_eq!(s.inputs.revenue_currency, Currency::Usd);
        assert_eq!(s.inputs.price_currency, Currency::Brl);
        assert_eq!(s.inputs.fx, Some(d("0.18")));
        assert_eq!(s.inputs.ticket, d("0.216"));
        let o = s.compute().unwrap();
        assert_eq!(o.monthly_token_waste.normalize(), d("26.73"));
        assert_eq!(o.break_even_conversations, Some(d("124")));
        assert_eq!(s.to_query(), "v=2&px=0.18&tk=0.216&rc=USD");
        // A label only: everything in that currency.
        let s = q("v=1&cur=EUR").unwrap();
        assert_eq!(s.choices().price_currency, Currency::Eur);
        assert_eq!(s.inputs.fx, None);
    }

    #[test]
    fn comparison_ids_are_short_stable_and_follow_the_content() {
        let id = comparison_id("s=a&s=b", "x");
        assert!(is_saved_id(&id), "{id}");
        assert_eq!(id, comparison_id("s=a&s=b", "x"));
        assert_ne!(id, comparison_id("s=b&s=a", "x"), "column order matters");
        assert_ne!(id, comparison_id("s=a&s=b", "y"));
    }

    #[test]
    fn every_key_a_link_carries_is_a_link_key() {
        let s = q("v=2&c=1000&cs=50&pca=0.3&pc=USD&px=5.4&pd=2026-11-30&m=openai/gpt-4o&md=2026-11-01&dcs=90&u=1m&ms=40&ac=90&oc=15&cr=5&cl=3").unwrap();
        let query = s.to_query();
        for (k, _) in query.split('&').filter_map(|kv| kv.split_once('=')) {
            assert!(is_link_key(k), "{k} in {query}");
        }
        for k in ["cur", "fx", "lang", "t"] {
            assert!(is_link_key(k));
        }
        for k in ["q", "utm_source", "s", "", "id"] {
            assert!(!is_link_key(k), "{k}");
        }
    }

    #[test]
    fn bad_links_say_what_is_wrong() {
        assert!(matches!(q("v=9"), Err(QueryError::Version(_))));
        assert!(matches!(q("v=2&u=2k"), Err(QueryError::Unit(_))));
        assert!(matches!(q("v=2&pc=JPY"), Err(QueryError::Currency(_))));
        assert!(matches!(q("v=1&cur=JPY"), Err(QueryError::Currency(_))));
        assert!(matches!(q("v=2&m=a%20b"), Err(QueryError::Model(_))));
        assert!(matches!(
            q("v=2&pc=USD&px=5.33&pd=2026-02-30"),
            Err(QueryError::Date(_))
        ));
        // A rate's date without a rate labels nothing, so it is no error.
        assert!(q("v=2&pd=2026-02-30").is_ok());
        let Err(QueryError::Fields(p)) = q("v=2&d=120&c=1.5&ti=x&cl=0&pi=0.00000000001") else {
            panic!("expected field problems")
        };
        assert!(p.0.contains(&(Field::DuplicateRate, Problem::AboveHundred)));
        assert!(p.0.contains(&(Field::Conversations, Problem::NotWhole)));
        assert!(p.0.contains(&(Field::TokensIn, Problem::NotANumber)));
        assert!(p.0.contains(&(Field::Calls, Problem::Zero)));
        assert!(p.0.contains(&(Field::PriceIn, Problem::TooPrecise)));
        // Half of the risk block is refused, naming the missing half.
        let Err(QueryError::Fields(p)) = q("v=2&ms=50&ac=180") else {
            panic!("expected risk problems")
        };
        assert_eq!(
            p.0,
            vec![
                (Field::OpsCost, Problem::RiskIncomplete),
                (Field::ClaimRate, Problem::RiskIncomplete)
            ]
        );
        // Prices in dollars, revenue in reais, and no rate.
        let Err(QueryError::Fields(p)) = q("v=2&pc=USD") else {
            panic!("expected a missing rate")
        };
        assert_eq!(p.0, vec![(Field::Fx, Problem::RateRequired)]);
        assert!(matches!(q("v=2&pc=USD&px=0"), Err(QueryError::Fields(_))));
        assert!(matches!(q("v=1&cur=USD&fx=0"), Err(QueryError::Fields(_))));
    }

    #[test]
    fn a_refused_field_blocks_only_what_depends_on_it() {
        // The ticket does not go into the waste; the duplicate rate does.
        assert!(!depends_on("monthly_token_waste").contains(&Field::Ticket));
        assert!(depends_on("monthly_token_waste").contains(&Field::DuplicateRate));
        assert!(depends_on("break_even_conversations").contains(&Field::Ticket));
        assert!(!depends_on("monthly_revenue").contains(&Field::PriceIn));
        // Any stand-in gives the independent outputs their true values.
        let mut s = Scenario::default();
        s.inputs.ticket = Field::Ticket.stand_in() + Decimal::from(7);
        let (a, b) = (s.compute().unwrap(), Scenario::default().compute().unwrap());
        assert_eq!(a.monthly_token_waste, b.monthly_token_waste);
        assert_eq!(a.cost_per_call, b.cost_per_call);
    }

    #[test]
    fn dates_and_model_ids() {
        assert!(is_iso_date("2026-11-30"));
        assert!(is_iso_date("2024-02-29"));
        for bad in [
            "2026-2-3",
            "2025-02-29",
            "2026-13-01",
            "20261130",
            "2026-11-3x",
            "",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
        // The Brazilian form a person types reads as the day it names;
        // the American order and impossible days do not.
        assert_eq!(read_date("01/12/2026").as_deref(), Some("2026-12-01"));
        assert_eq!(read_date("1/2/2024").as_deref(), Some("2024-02-01"));
        assert_eq!(read_date("29/02/2024").as_deref(), Some("2024-02-29"));
        assert_eq!(read_date("2026-11-30").as_deref(), Some("2026-11-30"));
        for bad in [
            "12/31/2026",
            "29/02/2025",
            "01/12/26",
            "1/12/2026/1",
            "01-12-2026",
            "",
        ] {
            assert_eq!(read_date(bad), None, "{bad}");
        }
        let pairs = [
            ("v", "2"),
            ("pc", "USD"),
            ("px", "5.33"),
            ("pd", "30/11/2026"),
        ];
        let s = Scenario::from_query(pairs).unwrap();
        assert_eq!(s.fx_date.as_deref(), Some("2026-11-30"));
        assert!(
            s.to_query().contains("pd=2026-11-30"),
            "a link writes the ISO form"
        );
        assert_eq!(
            read_dropped_rate("EUR:6.1"),
            Some((Currency::Eur, d("6.1")))
        );
        assert_eq!(read_dropped_rate("XYZ:6.1"), None);
        assert_eq!(read_dropped_rate("EUR:6,1"), None);
        assert!(is_model_id("openai/gpt-4.1-mini"));
        assert!(is_model_id("aws/amazon.nova-pro-v1:0"));
        assert!(!is_model_id("a b"));
        assert!(!is_model_id(""));
    }

    #[test]
    fn canonical_notation_is_strict() {
        assert_eq!(parse_canonical("0.015"), Some(d("0.015")));
        assert_eq!(parse_canonical("-2"), Some(d("-2")));
        for bad in ["", "1,5", "1e3", "1.2.3", ".", "-", " 1", "NaN", "inf"] {
            assert_eq!(parse_canonical(bad), None, "{bad:?}");
        }
        assert_eq!(canonical(d("148.500")), "148.5");
    }

    #[test]
    fn saved_ids_are_stable_and_depend_on_name_and_content() {
        let s = Scenario::default();
        let a = s.saved_id("hoje");
        assert!(is_saved_id(&a), "{a}");
        assert_eq!(a, s.saved_id("hoje"));
        assert_ne!(a, s.saved_id("amanhã"));
        let mut t = s.clone();
        t.inputs.duplicate_rate_pct = d("0.5");
        assert_ne!(a, t.saved_id("hoje"));
        assert!(!is_saved_id("v=1&d=0.5"));
    }

    #[test]
    fn the_loss_curve_passes_through_the_scenario() {
        let curve = loss_curve(&CostInputs::reference()).unwrap();
        assert_eq!(curve.len(), 21);
        assert_eq!(curve[0], (Decimal::ZERO, d("0")));
        assert_eq!(curve[6], (d("3"), d("1782")));
        assert_eq!(curve[20], (d("10"), d("5940")));
    }

    #[test]
    fn sensitivity_moves_each_input_and_sorts_by_swing() {
        let swings = sensitivity(&CostInputs::reference(), d("20")).unwrap();
        // Conversations and the duplicate rate scale the loss linearly:
        // 1782 × 0.8 and × 1.2.
        let conv = swings
            .iter()
            .find(|s| s.field == Field::Conversations)
            .unwrap();
        assert_eq!((conv.low, conv.high), (d("1425.6"), d("2138.4")));
        assert!(swings.windows(2).all(|w| w[0].width() >= w[1].width()));
        assert_eq!(swings[0].width(), d("712.8"));
        // Input tokens are most of the call's cost, so they swing more than
        // output tokens.
        let pos = |f| swings.iter().position(|s| s.field == f).unwrap();
        assert!(pos(Field::TokensIn) < pos(Field::TokensOut));
        assert!(
            swings.iter().all(|s| s.field != Field::Fx),
            "one currency: no rate"
        );
        // A dollar contract moves with the rate, exactly as with the prices.
        let mut usd = CostInputs::reference();
        usd.price_currency = Currency::Usd;
        usd.fx = Some(d("5.33"));
        let swings = sensitivity(&usd, d("20")).unwrap();
        let fx = swings.iter().find(|s| s.field == Field::Fx).unwrap();
        let both = swings
            .iter()
            .find(|s| s.field == Field::Conversations)
            .unwrap();
        assert_eq!(fx.width(), both.width());
    }
}
