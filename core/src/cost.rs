//! The cost and risk model of duplicated model calls and charges.
//!
//! Everything is `rust_decimal` arithmetic with checked operations: no float
//! ever touches money, and an overflow is an error, not a panic.

use crate::locale::Currency;
use crate::Error;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

/// The unit prices are quoted per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PriceUnit {
    /// Per 1,000 tokens.
    #[default]
    #[serde(rename = "1k")]
    PerThousand,
    /// Per 1,000,000 tokens.
    #[serde(rename = "1m")]
    PerMillion,
}

impl PriceUnit {
    /// Tokens per price unit.
    pub fn tokens(self) -> Decimal {
        match self {
            PriceUnit::PerThousand => Decimal::from(1_000),
            PriceUnit::PerMillion => Decimal::from(1_000_000),
        }
    }

    /// The same price expressed in the other unit; `None` when it does not
    /// fit a decimal (a typed price of absurd size), never a panic.
    pub fn convert(self, price: Decimal) -> Option<Decimal> {
        match self {
            PriceUnit::PerThousand => price.checked_mul(Decimal::from(1_000)),
            PriceUnit::PerMillion => price.checked_div(Decimal::from(1_000)),
        }
    }

    /// The other unit.
    pub fn other(self) -> Self {
        match self {
            PriceUnit::PerThousand => PriceUnit::PerMillion,
            PriceUnit::PerMillion => PriceUnit::PerThousand,
        }
    }
}

impl std::str::FromStr for PriceUnit {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        // How price lists write the unit: "per 1M tokens", "/1M", "$/MTok",
        // "1,000,000"; the words and marks around the size say nothing.
        let letters: String = s
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        match letters.as_str() {
            "1k" | "k" | "1000" | "per1k" | "per1000" | "1ktokens" | "per1ktokens"
            | "per1000tokens" | "1000tokens" | "ktok" | "1ktok" => Ok(PriceUnit::PerThousand),
            "1m" | "m" | "1000000" | "per1m" | "per1000000" | "1mtokens" | "per1mtokens"
            | "per1000000tokens" | "1000000tokens" | "mtok" | "1mtok" => Ok(PriceUnit::PerMillion),
            _ => Err(Error::CostInput {
                field: "price-unit",
                reason: format!(
                    "`{}` is not 1k or 1m (per 1k or per 1M tokens)",
                    s.chars().take(16).collect::<String>()
                ),
            }),
        }
    }
}

/// Optional inputs for the financial side: duplicated charges, not tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RiskInputs {
    /// Share of duplicated conversations that move money, in percent.
    pub money_share_pct: Decimal,
    /// Average charge amount.
    pub avg_charge: Decimal,
    /// Operational cost of each duplicated charge (support, reconciliation, refund).
    pub ops_cost: Decimal,
    /// Share of duplicated charges that become a consumer claim, in percent.
    pub claim_rate_pct: Decimal,
}

/// The model's inputs.
///
/// Token prices are in `price_currency`; revenue, the risk block and every
/// result are in `revenue_currency`. When the two differ, `fx` says how
/// many units of the revenue currency one unit of the price currency buys,
/// the way a Brazilian quotes it (`US$ 1 = R$ 5,33` is `fx = 5.33`).
///
/// The fields after `risk` came with scenario links v2; their defaults
/// (one currency, no cache, one call per conversation) reproduce every
/// figure the model gave before they existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostInputs {
    /// Conversations per month.
    pub conversations: Decimal,
    /// Input tokens per model call (cached ones included).
    pub tokens_in: Decimal,
    /// Output tokens per model call (reasoning included).
    pub tokens_out: Decimal,
    /// Price of input tokens per `price_unit`, in `price_currency`.
    pub price_in: Decimal,
    /// Price of output tokens per `price_unit`, in `price_currency`.
    pub price_out: Decimal,
    /// What the prices are quoted per.
    pub price_unit: PriceUnit,
    /// Revenue per resolved conversation, in `revenue_currency`.
    pub ticket: Decimal,
    /// Share of conversations that repeat the call, in percent (3 = 3%).
    pub duplicate_rate_pct: Decimal,
    /// The financial-risk inputs, when known (amounts in `revenue_currency`).
    pub risk: Option<RiskInputs>,
    /// The currency token prices are quoted in.
    #[serde(default)]
    pub price_currency: Currency,
    /// The currency of revenue, the risk block and every result.
    #[serde(default)]
    pub revenue_currency: Currency,
    /// Units of `revenue_currency` per unit of `price_currency`; required
    /// when the two differ, ignored when they are the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fx: Option<Decimal>,
    /// Share of each call's input tokens served from the provider's prompt
    /// cache, in percent.
    #[serde(default)]
    pub cached_share_pct: Decimal,
    /// Price of cached input tokens per `price_unit`, in `price_currency`.
    #[serde(default)]
    pub price_cached: Decimal,
    /// Model calls per conversation (an average, so it may have decimals).
    #[serde(default = "one")]
    pub calls_per_conversation: Decimal,
    /// Share of a duplicated call's input that hits the provider's prompt
    /// cache (a redelivery minutes later often does), in percent.
    #[serde(default)]
    pub dup_cache_share_pct: Decimal,
}

fn one() -> Decimal {
    Decimal::ONE
}

impl CostInputs {
    /// The reference scenario of the source article.
    pub fn reference() -> Self {
        Self {
            conversations: Decimal::from(30_000),
            tokens_in: Decimal::from(8_000),
            tokens_out: Decimal::from(600),
            price_in: Decimal::new(15, 3),
            price_out: Decimal::new(75, 3),
            price_unit: PriceUnit::PerThousand,
            ticket: Decimal::new(120, 2),
            duplicate_rate_pct: Decimal::from(3),
            risk: None,
            price_currency: Currency::BRL,
            revenue_currency: Currency::BRL,
            fx: None,
            cached_share_pct: Decimal::ZERO,
            price_cached: Decimal::ZERO,
            calls_per_conversation: Decimal::ONE,
            dup_cache_share_pct: Decimal::ZERO,
        }
    }

    /// What one unit of the price currency is worth in the revenue
    /// currency: 1 when they are the same, else `fx`.
    pub fn conversion(&self) -> Result<Decimal, Error> {
        if self.price_currency == self.revenue_currency {
            return Ok(Decimal::ONE);
        }
        match self.fx {
            Some(fx) if fx > Decimal::ZERO => Ok(fx),
            Some(_) => Err(Error::CostInput {
                field: "fx",
                reason: "must be above zero".into(),
            }),
            None => Err(Error::CostInput {
                field: "fx",
                reason: format!(
                    "is required: prices are in {} and revenue in {}",
                    self.price_currency.code(),
                    self.revenue_currency.code()
                ),
            }),
        }
    }
}

/// The financial-risk outputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RiskOutputs {
    /// Duplicated conversations that charged the customer again.
    pub duplicated_charges: Decimal,
    /// Money charged twice per month (returned by refund, but out meanwhile).
    pub monthly_duplicated_amount: Decimal,
    /// Operational cost of handling them per month.
    pub monthly_ops_cost: Decimal,
    /// Expected loss to consumer claims per month: under CDC art. 42 the
    /// overcharge is refunded in double, so the extra 1x is the loss.
    pub monthly_claim_exposure: Decimal,
    /// Operational cost plus claim exposure, per month.
    pub monthly_total_risk: Decimal,
    /// Twelve months of `monthly_total_risk`.
    pub annual_total_risk: Decimal,
    /// Token waste plus total risk: everything duplicates cost, per month.
    pub monthly_total_cost: Decimal,
    /// Twelve months of `monthly_total_cost`.
    pub annual_total_cost: Decimal,
}

/// The model's outputs, exact, in the revenue currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CostOutputs {
    /// Cost of one model call, cached input priced as cached.
    pub cost_per_call: Decimal,
    /// Cost of the call a duplicate repeats: its input hits the cache at
    /// `dup_cache_share_pct` instead of `cached_share_pct`.
    pub cost_per_duplicate_call: Decimal,
    /// Useful model spend per month (every call of every conversation).
    pub monthly_useful_spend: Decimal,
    /// Conversations times ticket.
    pub monthly_revenue: Decimal,
    /// Conversations that repeated the call: an expected value, exact
    /// (30,001 × 3% is 900.03); screens show it rounded to a whole number,
    /// money is computed from the exact value.
    pub duplicated_conversations: Decimal,
    /// Duplicated calls times the cost of a duplicate call. A duplicate
    /// repeats the one call whose delivery was repeated, not the whole
    /// conversation.
    pub monthly_token_waste: Decimal,
    /// Waste over revenue, in percent; `None` when there is no revenue.
    pub waste_share_of_revenue_pct: Option<Decimal>,
    /// Twelve months of waste.
    pub annual_token_waste: Decimal,
    /// The fewest whole conversations whose revenue covers the monthly waste;
    /// `None` when the ticket is zero and there is waste to cover.
    pub break_even_conversations: Option<Decimal>,
    /// The fewest whole conversations whose margin covers the monthly
    /// waste: each extra conversation brings its ticket but also costs its
    /// own model calls (`calls × cost_per_call`), so it covers
    /// `ticket − calls × cost_per_call`. `None` when that margin is zero or
    /// less and there is waste to cover.
    pub break_even_conversations_on_margin: Option<Decimal>,
    /// The financial block, when risk inputs were given. Serialized flat
    /// beside the other outputs (what `idem cost --json` prints), and
    /// absent without risk inputs.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub risk: Option<RiskOutputs>,
}

impl CostOutputs {
    /// The break-even figure, or the reason there is none.
    pub fn break_even(&self) -> Result<Decimal, Error> {
        self.break_even_conversations.ok_or(Error::CostInput {
            field: "ticket",
            reason:
                "is zero, so no number of conversations covers the waste (break-even is undefined)"
                    .into(),
        })
    }
}

fn overflow(field: &'static str) -> Error {
    Error::CostInput {
        field,
        reason: "the result is too large to compute exactly".into(),
    }
}

fn mul(a: Decimal, b: Decimal, field: &'static str) -> Result<Decimal, Error> {
    a.checked_mul(b).ok_or_else(|| overflow(field))
}

fn add(a: Decimal, b: Decimal, field: &'static str) -> Result<Decimal, Error> {
    a.checked_add(b).ok_or_else(|| overflow(field))
}

fn div(a: Decimal, b: Decimal, field: &'static str) -> Result<Decimal, Error> {
    a.checked_div(b).ok_or_else(|| overflow(field))
}

fn non_negative(v: Decimal, field: &'static str) -> Result<(), Error> {
    if v.is_sign_negative() && !v.is_zero() {
        return Err(Error::CostInput {
            field,
            reason: "must not be negative".into(),
        });
    }
    Ok(())
}

fn whole(v: Decimal, field: &'static str) -> Result<(), Error> {
    non_negative(v, field)?;
    if !v.fract().is_zero() {
        return Err(Error::CostInput {
            field,
            reason: "must be a whole number".into(),
        });
    }
    Ok(())
}

fn percent(v: Decimal, field: &'static str) -> Result<(), Error> {
    non_negative(v, field)?;
    if v > Decimal::ONE_HUNDRED {
        return Err(Error::CostInput {
            field,
            reason: "is a percentage and cannot be above 100".into(),
        });
    }
    Ok(())
}

/// Checks every input, returning the first problem.
pub fn validate(i: &CostInputs) -> Result<(), Error> {
    whole(i.conversations, "conversations")?;
    whole(i.tokens_in, "tokens-in")?;
    whole(i.tokens_out, "tokens-out")?;
    non_negative(i.price_in, "price-in")?;
    non_negative(i.price_out, "price-out")?;
    non_negative(i.ticket, "ticket")?;
    percent(i.duplicate_rate_pct, "duplicate-rate")?;
    percent(i.cached_share_pct, "cached-share")?;
    non_negative(i.price_cached, "price-cached")?;
    percent(i.dup_cache_share_pct, "dup-cache-share")?;
    non_negative(i.calls_per_conversation, "calls")?;
    if i.calls_per_conversation.is_zero() {
        return Err(Error::CostInput {
            field: "calls",
            reason: "must be above zero: every conversation makes at least one call".into(),
        });
    }
    i.conversion()?;
    if let Some(r) = &i.risk {
        percent(r.money_share_pct, "money-share")?;
        non_negative(r.avg_charge, "avg-charge")?;
        non_negative(r.ops_cost, "ops-cost")?;
        percent(r.claim_rate_pct, "claim-rate")?;
    }
    Ok(())
}

/// Drops trailing zeros, but keeps money at least at the currency's minor
/// unit ("148.50" in reais, "1782" in yen, "1.250" in dinars).
fn money_in(d: Decimal, minor: u32) -> Decimal {
    let mut n = d.normalize();
    if n.scale() < minor {
        n.rescale(minor);
    }
    n
}

/// The cost of one call in the revenue currency, with `cached_pct` percent
/// of its input priced as cached, multiplied out before any division so the
/// result stays exact:
///
/// `(tokens_in × ((100 − cached) × price_in + cached × price_cached) / 100 +
/// tokens_out × price_out) / unit × fx`
fn call_cost(i: &CostInputs, cached_pct: Decimal, fx: Decimal) -> Result<Decimal, Error> {
    let hundred = Decimal::ONE_HUNDRED;
    let full = mul(hundred - cached_pct, i.price_in, "price-in")?;
    let cached = mul(cached_pct, i.price_cached, "price-cached")?;
    let input = mul(i.tokens_in, add(full, cached, "price-in")?, "tokens-in")?;
    let output = mul(
        mul(i.tokens_out, i.price_out, "price-out")?,
        hundred,
        "price-out",
    )?;
    let per_unit = add(input, output, "cost-per-call")?;
    let converted = mul(per_unit, fx, "fx")?;
    div(
        converted,
        mul(i.price_unit.tokens(), hundred, "price-unit")?,
        "cost-per-call",
    )
}

/// Runs the model. Fails on invalid input or arithmetic overflow; never
/// panics, never produces NaN or infinity.
pub fn compute(i: &CostInputs) -> Result<CostOutputs, Error> {
    let money = |d: Decimal| money_in(d, i.revenue_currency.minor_units());
    validate(i)?;
    let hundred = Decimal::ONE_HUNDRED;
    let twelve = Decimal::from(12);
    let fx = i.conversion()?;
    let cost_per_call = call_cost(i, i.cached_share_pct, fx)?;
    let cost_per_duplicate_call = call_cost(i, i.dup_cache_share_pct, fx)?;
    let monthly_useful_spend = mul(
        mul(i.conversations, i.calls_per_conversation, "calls")?,
        cost_per_call,
        "conversations",
    )?;
    let monthly_revenue = mul(i.conversations, i.ticket, "ticket")?;
    let duplicated = div(
        mul(i.conversations, i.duplicate_rate_pct, "duplicate-rate")?,
        hundred,
        "duplicate-rate",
    )?;
    let waste = mul(duplicated, cost_per_duplicate_call, "monthly-token-waste")?;
    let share = if monthly_revenue.is_zero() {
        None
    } else {
        Some(div(
            mul(waste, hundred, "waste-share")?,
            monthly_revenue,
            "waste-share",
        )?)
    };
    let annual = mul(waste, twelve, "annual-token-waste")?;
    let break_even = if waste.is_zero() {
        Some(Decimal::ZERO)
    } else if i.ticket.is_zero() {
        None
    } else {
        Some(
            div(waste, i.ticket, "break-even")?
                .round_dp_with_strategy(0, RoundingStrategy::ToPositiveInfinity),
        )
    };
    let own_calls = mul(
        i.calls_per_conversation,
        cost_per_call,
        "calls-per-conversation",
    )?;
    let margin = i
        .ticket
        .checked_sub(own_calls)
        .ok_or_else(|| overflow("ticket"))?;
    let break_even_on_margin = if waste.is_zero() {
        Some(Decimal::ZERO)
    } else if margin <= Decimal::ZERO {
        None
    } else {
        Some(
            div(waste, margin, "break-even")?
                .round_dp_with_strategy(0, RoundingStrategy::ToPositiveInfinity),
        )
    };
    let risk = match &i.risk {
        None => None,
        Some(r) => {
            let charges = div(
                mul(duplicated, r.money_share_pct, "money-share")?,
                hundred,
                "money-share",
            )?;
            let amount = mul(charges, r.avg_charge, "avg-charge")?;
            let ops = mul(charges, r.ops_cost, "ops-cost")?;
            let claims = div(
                mul(amount, r.claim_rate_pct, "claim-rate")?,
                hundred,
                "claim-rate",
            )?;
            let total = add(ops, claims, "monthly-total-risk")?;
            let all = add(total, waste, "monthly-total-cost")?;
            Some(RiskOutputs {
                duplicated_charges: charges.normalize(),
                monthly_duplicated_amount: money(amount),
                monthly_ops_cost: money(ops),
                monthly_claim_exposure: money(claims),
                monthly_total_risk: money(total),
                annual_total_risk: money(mul(total, twelve, "annual-total-risk")?),
                monthly_total_cost: money(all),
                annual_total_cost: money(mul(all, twelve, "annual-total-cost")?),
            })
        }
    };
    Ok(CostOutputs {
        cost_per_call: money(cost_per_call),
        cost_per_duplicate_call: money(cost_per_duplicate_call),
        monthly_useful_spend: money(monthly_useful_spend),
        monthly_revenue: money(monthly_revenue),
        duplicated_conversations: duplicated.normalize(),
        monthly_token_waste: money(waste),
        waste_share_of_revenue_pct: share.map(|s| s.normalize()),
        annual_token_waste: money(annual),
        break_even_conversations: break_even.map(|b| b.normalize()),
        break_even_conversations_on_margin: break_even_on_margin.map(|b| b.normalize()),
        risk,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn reference_scenario_is_exact() {
        let o = compute(&CostInputs::reference()).unwrap();
        assert_eq!(o.cost_per_call.to_string(), "0.165");
        assert_eq!(o.cost_per_duplicate_call.to_string(), "0.165");
        assert_eq!(o.monthly_revenue.to_string(), "36000.00");
        assert_eq!(o.duplicated_conversations.to_string(), "900");
        assert_eq!(o.monthly_token_waste.to_string(), "148.50");
        assert_eq!(o.waste_share_of_revenue_pct.unwrap().to_string(), "0.4125");
        assert_eq!(o.annual_token_waste.to_string(), "1782.00");
        assert_eq!(o.break_even_conversations.unwrap().to_string(), "124");
        // On margin: each conversation brings R$ 1,20 and costs its call,
        // R$ 0,165: ⌈148,50 / 1,035⌉ = ⌈143,478…⌉ = 144.
        assert_eq!(o.break_even_conversations_on_margin, Some(d("144")));
        assert_eq!(o.monthly_useful_spend.to_string(), "4950.00");
    }

    /// The finance lead's contract: US$ 3,00 input, US$ 0,30 cached input,
    /// US$ 15,00 output per 1M tokens, US$ 1 = R$ 5,33, revenue R$ 1,20.
    fn usd_contract() -> CostInputs {
        let mut i = CostInputs::reference();
        i.price_unit = PriceUnit::PerMillion;
        i.price_currency = Currency::USD;
        i.fx = Some(d("5.33"));
        i.price_in = d("3");
        i.price_cached = d("0.30");
        i.price_out = d("15");
        i
    }

    #[test]
    fn a_usd_contract_against_revenue_in_reais() {
        // By hand: (8,000 × 3 + 600 × 15) / 1M = US$ 0.033 per call,
        // × 5.33 = R$ 0.17589; 900 duplicates × 0.17589 = R$ 158.301.
        let o = compute(&usd_contract()).unwrap();
        assert_eq!(o.cost_per_call, d("0.17589"));
        assert_eq!(o.monthly_token_waste, d("158.301"));
        assert_eq!(o.annual_token_waste, d("1899.612"));
        assert_eq!(o.waste_share_of_revenue_pct, Some(d("0.439725")));
        // ⌈158.301 / 1.20⌉ = ⌈131.9175⌉
        assert_eq!(o.break_even_conversations, Some(d("132")));
    }

    #[test]
    fn cached_input_calls_per_conversation_and_cached_duplicates() {
        let mut i = usd_contract();
        i.cached_share_pct = d("40");
        i.calls_per_conversation = d("1.5");
        i.dup_cache_share_pct = d("80");
        let o = compute(&i).unwrap();
        // Input: 8,000 × (60% × 3 + 40% × 0.30) / 1M = US$ 0.01536;
        // output US$ 0.009; × 5.33 = R$ 0.1298388.
        assert_eq!(o.cost_per_call, d("0.1298388"));
        // A duplicate's input hits the cache at 80%:
        // 8,000 × (20% × 3 + 80% × 0.30) / 1M = 0.00672; + 0.009 = 0.01572
        // × 5.33 = R$ 0.0837876.
        assert_eq!(o.cost_per_duplicate_call, d("0.0837876"));
        // Useful spend counts every call: 30,000 × 1.5 × 0.1298388.
        assert_eq!(o.monthly_useful_spend, d("5842.746"));
        // A duplicate repeats one call: 900 × 0.0837876.
        assert_eq!(o.monthly_token_waste, d("75.40884"));
        assert_eq!(o.break_even_conversations, Some(d("63")));
    }

    #[test]
    fn currencies_need_a_rate_only_when_they_differ() {
        let mut i = usd_contract();
        i.fx = None;
        let e = compute(&i).unwrap_err().to_string();
        assert!(
            e.contains("fx") && e.contains("USD") && e.contains("BRL"),
            "{e}"
        );
        i.fx = Some(Decimal::ZERO);
        assert!(compute(&i).unwrap_err().to_string().contains("above zero"));
        // Same currency: the rate is not used.
        let mut i = CostInputs::reference();
        i.fx = Some(d("7"));
        assert_eq!(
            compute(&i).unwrap(),
            compute(&CostInputs::reference()).unwrap()
        );
        let mut i = CostInputs::reference();
        i.calls_per_conversation = Decimal::ZERO;
        assert!(compute(&i).unwrap_err().to_string().contains("calls"));
        let mut i = CostInputs::reference();
        i.cached_share_pct = d("101");
        assert!(compute(&i)
            .unwrap_err()
            .to_string()
            .contains("cached-share"));
    }

    #[test]
    fn inputs_from_before_v2_read_with_the_neutral_defaults() {
        let old = r#"{"conversations":"30000","tokens_in":"8000","tokens_out":"600",
            "price_in":"0.015","price_out":"0.075","price_unit":"1k","ticket":"1.20",
            "duplicate_rate_pct":"3","risk":null}"#;
        let i: CostInputs = serde_json::from_str(old).unwrap();
        assert_eq!(i, CostInputs::reference());
    }

    #[test]
    fn per_million_prices_agree_with_per_thousand() {
        let mut i = CostInputs::reference();
        i.price_in = d("15");
        i.price_out = d("75");
        i.price_unit = PriceUnit::PerMillion;
        assert_eq!(
            compute(&i).unwrap(),
            compute(&CostInputs::reference()).unwrap()
        );
        assert_eq!(PriceUnit::PerThousand.convert(d("0.015")), Some(d("15")));
        assert_eq!(PriceUnit::PerMillion.convert(d("15")), Some(d("0.015")));
        assert_eq!(PriceUnit::PerThousand.convert(Decimal::MAX), None);
    }

    #[test]
    fn financial_block() {
        let mut i = CostInputs::reference();
        i.risk = Some(RiskInputs {
            money_share_pct: d("50"),
            avg_charge: d("180"),
            ops_cost: d("12.5"),
            claim_rate_pct: d("2"),
        });
        let r = compute(&i).unwrap().risk.unwrap();
        assert_eq!(r.duplicated_charges, d("450"));
        assert_eq!(r.monthly_duplicated_amount, d("81000"));
        assert_eq!(r.monthly_ops_cost, d("5625"));
        assert_eq!(r.monthly_claim_exposure, d("1620"));
        assert_eq!(r.monthly_total_risk, d("7245"));
        assert_eq!(r.annual_total_risk, d("86940"));
        assert_eq!(r.monthly_total_cost, d("7393.5"));
    }

    #[test]
    fn invalid_inputs_are_errors_not_panics() {
        let mut i = CostInputs::reference();
        i.duplicate_rate_pct = d("100.01");
        assert!(compute(&i).unwrap_err().to_string().contains("above 100"));
        let mut i = CostInputs::reference();
        i.conversations = d("-1");
        assert!(compute(&i).unwrap_err().to_string().contains("negative"));
        let mut i = CostInputs::reference();
        i.tokens_in = d("1.5");
        assert!(compute(&i).is_err());
        let mut i = CostInputs::reference();
        i.ticket = Decimal::ZERO;
        let o = compute(&i).unwrap();
        assert_eq!(o.waste_share_of_revenue_pct, None);
        assert!(o.break_even().unwrap_err().to_string().contains("ticket"));
        let mut i = CostInputs::reference();
        i.conversations = Decimal::MAX;
        i.tokens_in = Decimal::from(1_000_000_000u64);
        assert!(compute(&i).is_err());
    }

    #[test]
    fn break_even_on_margin_counts_each_conversations_own_calls() {
        // Two calls a conversation at R$ 0,165: R$ 1,20 − R$ 0,33 = R$ 0,87
        // of margin; the waste doubles nothing (one repeated call each):
        // ⌈148,50 / 0,87⌉ = ⌈170,68…⌉ = 171.
        let mut i = CostInputs::reference();
        i.calls_per_conversation = d("2");
        let o = compute(&i).unwrap();
        assert_eq!(o.monthly_token_waste, d("148.50"));
        assert_eq!(o.break_even_conversations_on_margin, Some(d("171")));
        // A conversation that costs more in calls than it brings never
        // breaks even on margin, though it does on revenue.
        i.calls_per_conversation = d("8");
        let o = compute(&i).unwrap();
        assert_eq!(o.break_even_conversations, Some(d("124")));
        assert_eq!(o.break_even_conversations_on_margin, None);
    }
}
