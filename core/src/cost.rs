//! The cost and risk model of duplicated model calls and charges.
//!
//! Everything is `rust_decimal` arithmetic with checked operations: no float
//! ever touches money, and an overflow is an error, not a panic.

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
        match s.trim().to_ascii_lowercase().as_str() {
            "1k" | "k" | "1000" => Ok(PriceUnit::PerThousand),
            "1m" | "m" | "1000000" => Ok(PriceUnit::PerMillion),
            _ => Err(Error::CostInput {
                field: "price-unit",
                reason: format!("`{s}` is not 1k or 1m"),
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostInputs {
    /// Conversations per month.
    pub conversations: Decimal,
    /// Input tokens per model call.
    pub tokens_in: Decimal,
    /// Output tokens per model call.
    pub tokens_out: Decimal,
    /// Price of input tokens per `price_unit`.
    pub price_in: Decimal,
    /// Price of output tokens per `price_unit`.
    pub price_out: Decimal,
    /// What the prices are quoted per.
    pub price_unit: PriceUnit,
    /// Revenue per resolved conversation.
    pub ticket: Decimal,
    /// Share of conversations that repeat the call, in percent (3 = 3%).
    pub duplicate_rate_pct: Decimal,
    /// The financial-risk inputs, when known.
    pub risk: Option<RiskInputs>,
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

/// The model's outputs, exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CostOutputs {
    /// Cost of one model call.
    pub cost_per_call: Decimal,
    /// Useful model spend per month (one call per conversation).
    pub monthly_useful_spend: Decimal,
    /// Conversations times ticket.
    pub monthly_revenue: Decimal,
    /// Conversations that repeated the call.
    pub duplicated_conversations: Decimal,
    /// Duplicated calls times cost per call.
    pub monthly_token_waste: Decimal,
    /// Waste over revenue, in percent; `None` when there is no revenue.
    pub waste_share_of_revenue_pct: Option<Decimal>,
    /// Twelve months of waste.
    pub annual_token_waste: Decimal,
    /// The fewest whole conversations whose revenue covers the monthly waste;
    /// `None` when the ticket is zero and there is waste to cover.
    pub break_even_conversations: Option<Decimal>,
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
    if let Some(r) = &i.risk {
        percent(r.money_share_pct, "money-share")?;
        non_negative(r.avg_charge, "avg-charge")?;
        non_negative(r.ops_cost, "ops-cost")?;
        percent(r.claim_rate_pct, "claim-rate")?;
    }
    Ok(())
}

/// Drops trailing zeros, but keeps money at least at cents ("148.50").
fn money(d: Decimal) -> Decimal {
    let mut n = d.normalize();
    if n.scale() < 2 {
        n.rescale(2);
    }
    n
}

/// Runs the model. Fails on invalid input or arithmetic overflow; never
/// panics, never produces NaN or infinity.
pub fn compute(i: &CostInputs) -> Result<CostOutputs, Error> {
    validate(i)?;
    let unit = i.price_unit.tokens();
    let hundred = Decimal::ONE_HUNDRED;
    let twelve = Decimal::from(12);
    // Multiply before dividing so the result stays exact.
    let cost_in = div(mul(i.tokens_in, i.price_in, "price-in")?, unit, "price-in")?;
    let cost_out = div(
        mul(i.tokens_out, i.price_out, "price-out")?,
        unit,
        "price-out",
    )?;
    let cost_per_call = add(cost_in, cost_out, "cost-per-call")?;
    let monthly_useful_spend = mul(i.conversations, cost_per_call, "conversations")?;
    let monthly_revenue = mul(i.conversations, i.ticket, "ticket")?;
    let duplicated = div(
        mul(i.conversations, i.duplicate_rate_pct, "duplicate-rate")?,
        hundred,
        "duplicate-rate",
    )?;
    let waste = mul(duplicated, cost_per_call, "monthly-token-waste")?;
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
        monthly_useful_spend: money(monthly_useful_spend),
        monthly_revenue: money(monthly_revenue),
        duplicated_conversations: duplicated.normalize(),
        monthly_token_waste: money(waste),
        waste_share_of_revenue_pct: share.map(|s| s.normalize()),
        annual_token_waste: money(annual),
        break_even_conversations: break_even.map(|b| b.normalize()),
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
        assert_eq!(o.monthly_revenue.to_string(), "36000.00");
        assert_eq!(o.duplicated_conversations.to_string(), "900");
        assert_eq!(o.monthly_token_waste.to_string(), "148.50");
        assert_eq!(o.waste_share_of_revenue_pct.unwrap().to_string(), "0.4125");
        assert_eq!(o.annual_token_waste.to_string(), "1782.00");
        assert_eq!(o.break_even_conversations.unwrap().to_string(), "124");
        assert_eq!(o.monthly_useful_spend.to_string(), "4950.00");
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
}
