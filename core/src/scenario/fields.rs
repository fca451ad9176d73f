//! The scenario's numeric inputs (`Field`): their link keys, what kind of
//! number each holds, how a typed value is checked, and which outputs
//! wait on which field.

use super::Scenario;
use rust_decimal::Decimal;

crate::scenario_fields! {
    /// Conversations per month.
    Conversations: "c", "conversations", Count, input conversations;
    /// Input tokens per call.
    TokensIn: "ti", "tokens-in", Count, input tokens_in;
    /// Percent of input tokens served from the provider's cache.
    CachedShare: "cs", "cached-share", Percent, input cached_share_pct;
    /// Output tokens per call (reasoning included).
    TokensOut: "to", "tokens-out", Count, input tokens_out;
    /// Model calls per conversation.
    Calls: "cl", "calls", Average, input calls_per_conversation;
    /// Price of input tokens per unit.
    PriceIn: "pi", "price-in", Money, input price_in;
    /// Price of cached input tokens per unit.
    PriceCached: "pca", "price-cached", Money, input price_cached;
    /// Price of output tokens per unit.
    PriceOut: "po", "price-out", Money, input price_out;
    /// Revenue-currency units per unit of the price currency.
    Fx: "px", "fx", Rate, rate fx;
    /// Revenue per resolved conversation.
    Ticket: "tk", "ticket", Money, input ticket;
    /// Percent of conversations that repeat the call.
    DuplicateRate: "d", "duplicate-rate", Percent, input duplicate_rate_pct;
    /// Percent of a duplicate's input that hits the provider's cache.
    DupCacheShare: "dcs", "dup-cache-share", Percent, input dup_cache_share_pct;
    /// Percent of duplicated conversations that move money.
    MoneyShare: "ms", "money-share", Percent, risk money_share_pct;
    /// Average charge.
    AvgCharge: "ac", "avg-charge", Money, risk avg_charge;
    /// Operational cost per duplicated charge.
    OpsCost: "oc", "ops-cost", Money, risk ops_cost;
    /// Percent of duplicated charges that become a claim.
    ClaimRate: "cr", "claim-rate", Percent, risk claim_rate_pct;
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
    /// A currency sign typed in a field that is no amount of money (a
    /// share, a rate, an average).
    WrongCurrency,
}

impl Field {
    /// The four financial-risk inputs, all given or none.
    pub const RISK: [Field; 4] = [
        Field::MoneyShare,
        Field::AvgCharge,
        Field::OpsCost,
        Field::ClaimRate,
    ];

    /// The three token prices, which are in the price currency.
    pub const PRICES: [Field; 3] = [Field::PriceIn, Field::PriceCached, Field::PriceOut];

    /// The field a query key names.
    pub fn from_key(key: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.key() == key)
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
        self.get_in(&s.inputs)
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
