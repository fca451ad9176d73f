//! Whether a scenario's prices look quoted per the other unit: a per-1M
//! price typed under "per 1k tokens" makes every cost a thousand times too
//! large, and still computes. The check only warns; it never blocks.

use super::Scenario;
use crate::cost::{CostOutputs, PriceUnit};
use crate::locale::Currency;
use rust_decimal::Decimal;

/// The largest price per 1k tokens in the bundled price table, in US
/// dollars (o1-pro's output, US$ 600 per 1M). The server's test of the
/// table checks it, so an update of the table that changes it fails there.
pub const LARGEST_USD_PER_1K: Decimal = Decimal::from_parts(60, 0, 0, false, 2);

/// Why the prices look quoted per the other unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitWarning {
    /// A price per 1k tokens above any in the price table: likely per 1M.
    AboveTable,
    /// One call costs more than a conversation brings in.
    CallAboveTicket,
}

/// The warning a scenario deserves, if any.
pub fn unit_warning(s: &Scenario, o: &CostOutputs) -> Option<UnitWarning> {
    let i = &s.inputs;
    let highest = i.price_in.max(i.price_cached).max(i.price_out);
    if i.price_unit == PriceUnit::PerThousand
        && i.price_currency == Currency::USD
        && highest > LARGEST_USD_PER_1K
    {
        return Some(UnitWarning::AboveTable);
    }
    (i.ticket > Decimal::ZERO && o.cost_per_call > i.ticket).then_some(UnitWarning::CallAboveTicket)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(q: &str) -> (Scenario, CostOutputs) {
        let s = Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).unwrap();
        let o = s.compute().unwrap();
        (s, o)
    }

    #[test]
    fn per_1m_prices_under_per_1k_are_warned_of() {
        // USD per 1M typed as per 1k, revenue in INR: above the table.
        let (s, o) = scenario("v=2&pc=USD&pi=2.5&po=10&rc=INR&px=84.37&tk=95");
        assert_eq!(unit_warning(&s, &o), Some(UnitWarning::AboveTable));
        // The same prices per 1M: nothing to say.
        let (s, o) = scenario("v=2&pc=USD&u=1m&pi=2.5&po=10&rc=INR&px=84.37&tk=95");
        assert_eq!(unit_warning(&s, &o), None);
        // Reais per 1k, the reference: nothing to say.
        let (s, o) = scenario("v=2");
        assert_eq!(unit_warning(&s, &o), None);
        // A call above the ticket, whatever the currency.
        let (s, o) = scenario("v=2&pi=15&po=75");
        assert_eq!(unit_warning(&s, &o), Some(UnitWarning::CallAboveTicket));
        // No revenue per conversation: nothing to compare a call with.
        let (s, o) = scenario("v=2&pi=15&po=75&tk=0");
        assert_eq!(unit_warning(&s, &o), None);
        assert_eq!(LARGEST_USD_PER_1K.to_string(), "0.60");
    }
}
