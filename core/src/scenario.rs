//! A calculator scenario: the cost model's inputs plus the display currency,
//! its canonical query-string form (what a shared link carries), and the
//! derived series the dashboard plots.
//!
//! The query form is versioned (`v=1`), uses short keys, omits every value
//! equal to the reference scenario's, and writes numbers in one
//! locale-independent notation (`0.015`), so a link opened by an
//! English-speaking reader means what the Brazilian who copied it meant.

use crate::cost::{self, CostInputs, CostOutputs, PriceUnit, RiskInputs};
use crate::locale::Currency;
use crate::Error;
use rust_decimal::{Decimal, RoundingStrategy};
use sha2::{Digest, Sha256};
use std::str::FromStr;

/// The query format's version, written as `v=1`.
pub const VERSION: &str = "1";

/// One numeric input of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Conversations per month.
    Conversations,
    /// Input tokens per call.
    TokensIn,
    /// Output tokens per call.
    TokensOut,
    /// Price of input tokens per unit.
    PriceIn,
    /// Price of output tokens per unit.
    PriceOut,
    /// Revenue per resolved conversation.
    Ticket,
    /// Percent of conversations that repeat the call.
    DuplicateRate,
    /// Percent of duplicated conversations that move money.
    MoneyShare,
    /// Average charge.
    AvgCharge,
    /// Operational cost per duplicated charge.
    OpsCost,
    /// Percent of duplicated charges that become a claim.
    ClaimRate,
    /// Display-currency units per unit of the prices' currency.
    Rate,
}

/// What kind of number a field holds, which decides how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole, non-negative count.
    Count,
    /// A non-negative amount of money.
    Money,
    /// A percentage from 0 to 100.
    Percent,
    /// A positive exchange rate.
    Rate,
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
    /// A rate of zero.
    Zero,
    /// Not a number in the canonical notation.
    NotANumber,
    /// One of the four risk inputs is given without the others.
    RiskIncomplete,
    /// The scenario's numbers are too large to compute exactly.
    TooLarge,
}

impl Field {
    /// Every field, in display order.
    pub const ALL: [Field; 12] = [
        Field::Conversations,
        Field::TokensIn,
        Field::TokensOut,
        Field::PriceIn,
        Field::PriceOut,
        Field::Ticket,
        Field::DuplicateRate,
        Field::MoneyShare,
        Field::AvgCharge,
        Field::OpsCost,
        Field::ClaimRate,
        Field::Rate,
    ];

    /// The four financial-risk inputs, all given or none.
    pub const RISK: [Field; 4] = [
        Field::MoneyShare,
        Field::AvgCharge,
        Field::OpsCost,
        Field::ClaimRate,
    ];

    /// The short query key.
    pub fn key(self) -> &'static str {
        match self {
            Field::Conversations => "c",
            Field::TokensIn => "ti",
            Field::TokensOut => "to",
            Field::PriceIn => "pi",
            Field::PriceOut => "po",
            Field::Ticket => "tk",
            Field::DuplicateRate => "d",
            Field::MoneyShare => "ms",
            Field::AvgCharge => "ac",
            Field::OpsCost => "oc",
            Field::ClaimRate => "cr",
            Field::Rate => "fx",
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
            | Field::PriceOut
            | Field::Ticket
            | Field::AvgCharge
            | Field::OpsCost => Kind::Money,
            Field::DuplicateRate | Field::MoneyShare | Field::ClaimRate => Kind::Percent,
            Field::Rate => Kind::Rate,
        }
    }

    /// Whether the field may be left empty (the risk block and the rate).
    pub fn optional(self) -> bool {
        Field::RISK.contains(&self) || self == Field::Rate
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
            Kind::Rate if v.is_zero() => Err(Problem::Zero),
            _ => Ok(v),
        }
    }

    /// The field's value in a scenario (`None` for an absent optional one).
    pub fn get(self, s: &Scenario) -> Option<Decimal> {
        let i = &s.inputs;
        let r = i.risk.as_ref();
        match self {
            Field::Conversations => Some(i.conversations),
            Field::TokensIn => Some(i.tokens_in),
            Field::TokensOut => Some(i.tokens_out),
            Field::PriceIn => Some(i.price_in),
            Field::PriceOut => Some(i.price_out),
            Field::Ticket => Some(i.ticket),
            Field::DuplicateRate => Some(i.duplicate_rate_pct),
            Field::MoneyShare => r.map(|r| r.money_share_pct),
            Field::AvgCharge => r.map(|r| r.avg_charge),
            Field::OpsCost => r.map(|r| r.ops_cost),
            Field::ClaimRate => r.map(|r| r.claim_rate_pct),
            Field::Rate => s.rate,
        }
    }

    /// The reference scenario's value.
    pub fn default_value(self) -> Option<Decimal> {
        self.get(&Scenario::default())
    }
}

/// The cost model's inputs plus how money is labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// The model's inputs, in the prices' currency.
    pub inputs: CostInputs,
    /// The currency money is shown in.
    pub currency: Currency,
    /// When set, results are converted: one unit of the prices' currency
    /// (BRL) is worth `rate` units of `currency`. When `None` the currency
    /// is only a label.
    pub rate: Option<Decimal>,
}

impl Default for Scenario {
    /// The reference scenario, in BRL.
    fn default() -> Self {
        Self {
            inputs: CostInputs::reference(),
            currency: Currency::Brl,
            rate: None,
        }
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

impl Scenario {
    /// Builds a scenario from each field's value (`None`: left empty, which
    /// only the optional fields may be), the price unit and the currency.
    /// Every refused field is reported, not just the first.
    pub fn from_values(
        value: impl Fn(Field) -> Option<Decimal>,
        price_unit: PriceUnit,
        currency: Currency,
    ) -> Result<Scenario, Problems> {
        let mut problems = Vec::new();
        let mut get = |f: Field| -> Option<Decimal> {
            match value(f) {
                None => {
                    if !f.optional() {
                        problems.push((f, Problem::NotANumber));
                    }
                    None
                }
                Some(v) => match f.check(v) {
                    Ok(v) => Some(v),
                    Err(p) => {
                        problems.push((f, p));
                        None
                    }
                },
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
                price_unit,
                ticket: at(Field::Ticket).unwrap_or(z),
                duplicate_rate_pct: at(Field::DuplicateRate).unwrap_or(z),
                risk,
            },
            currency,
            rate: at(Field::Rate),
        })
    }

    /// Reads a scenario from query pairs written in canonical notation
    /// (`0.015`). A key that is absent takes the reference value; unknown
    /// keys (such as `lang`) are ignored; a version other than
    /// [`VERSION`] is refused.
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
        let mut values: Vec<(Field, Option<Decimal>)> = Field::ALL
            .into_iter()
            .map(|f| (f, f.default_value()))
            .collect();
        let mut unit = PriceUnit::PerThousand;
        let mut currency = Currency::Brl;
        let mut problems = Vec::new();
        for (k, v) in pairs {
            match k {
                "v" if v != VERSION => return Err(QueryError::Version(v.to_owned())),
                "u" => unit = PriceUnit::from_str(v).map_err(|_| QueryError::Unit(v.to_owned()))?,
                "cur" => {
                    currency =
                        Currency::from_code(v).ok_or_else(|| QueryError::Currency(v.to_owned()))?
                }
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
        let built = Scenario::from_values(lookup, unit, currency);
        match built {
            Ok(s) if problems.is_empty() => Ok(s),
            Ok(_) => Err(QueryError::Fields(Problems(problems))),
            Err(Problems(more)) => {
                problems.extend(more);
                Err(QueryError::Fields(Problems(problems)))
            }
        }
    }

    /// The canonical query string: `v=1`, then every value that differs
    /// from the reference scenario, in a fixed order. Values need no
    /// percent-encoding (digits, `.` and `-` only).
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
        if self.inputs.price_unit == PriceUnit::PerMillion {
            out.push_str("&u=1m");
        }
        if self.currency != Currency::Brl {
            out.push_str("&cur=");
            out.push_str(self.currency.code());
        }
        out
    }

    /// Runs the cost model.
    pub fn compute(&self) -> Result<CostOutputs, Error> {
        cost::compute(&self.inputs)
    }

    /// An amount in the prices' currency as shown: converted when a rate is
    /// set, unchanged otherwise.
    pub fn shown(&self, amount: Decimal) -> Decimal {
        match self.rate {
            Some(r) => amount.checked_mul(r).unwrap_or(amount),
            None => amount,
        }
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
    #[error("scenario link version `{0}` is not supported (this build reads version {VERSION})")]
    Version(String),
    /// `u` is neither `1k` nor `1m`.
    #[error("price unit `{0}` is not 1k or 1m")]
    Unit(String),
    /// `cur` is not BRL, USD or EUR.
    #[error("currency `{0}` is not BRL, USD or EUR")]
    Currency(String),
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
        Field::Rate => {}
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
        assert_eq!(Scenario::default().to_query(), "v=1");
        assert_eq!(q("v=1").unwrap(), Scenario::default());
        assert_eq!(q("").unwrap(), Scenario::default());
    }

    #[test]
    fn changed_values_are_written_canonically_and_read_back() {
        let mut s = Scenario::default();
        s.inputs.duplicate_rate_pct = d("0.50");
        s.inputs.price_in = d("15");
        s.inputs.price_out = d("75");
        s.inputs.price_unit = PriceUnit::PerMillion;
        s.currency = Currency::Usd;
        s.rate = Some(d("0.18"));
        let text = s.to_query();
        assert_eq!(text, "v=1&pi=15&po=75&d=0.5&fx=0.18&u=1m&cur=USD");
        let back = q(&text).unwrap();
        assert_eq!(back.to_query(), text);
        assert_eq!(back.compute().unwrap(), s.compute().unwrap());
    }

    #[test]
    fn bad_links_say_what_is_wrong() {
        assert!(matches!(q("v=9"), Err(QueryError::Version(_))));
        assert!(matches!(q("u=2k"), Err(QueryError::Unit(_))));
        assert!(matches!(q("cur=JPY"), Err(QueryError::Currency(_))));
        let Err(QueryError::Fields(p)) = q("d=120&c=1.5&ti=x") else {
            panic!("expected field problems")
        };
        assert!(p.0.contains(&(Field::DuplicateRate, Problem::AboveHundred)));
        assert!(p.0.contains(&(Field::Conversations, Problem::NotWhole)));
        assert!(p.0.contains(&(Field::TokensIn, Problem::NotANumber)));
        // Half of the risk block is refused, naming the missing half.
        let Err(QueryError::Fields(p)) = q("ms=50&ac=180") else {
            panic!("expected risk problems")
        };
        assert_eq!(
            p.0,
            vec![
                (Field::OpsCost, Problem::RiskIncomplete),
                (Field::ClaimRate, Problem::RiskIncomplete)
            ]
        );
        assert!(matches!(q("fx=0"), Err(QueryError::Fields(_))));
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
    }
}
