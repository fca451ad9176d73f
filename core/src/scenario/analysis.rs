//! What the charts plot from a scenario: the annual loss, its curve over
//! the duplicate rate, and each input's ±swing (the tornado).

use super::fields::{Field, Kind};
use super::Scenario;
use crate::cost::{CostInputs, CostOutputs};
use crate::{cost, Error};
use rust_decimal::{Decimal, RoundingStrategy};

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

pub(crate) fn set(i: &mut CostInputs, f: Field, v: Decimal) {
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
