//! Whether a scenario's prices look quoted per the other unit: a per-1M
//! price typed under "per 1k tokens" makes every cost a thousand times too
//! large, a per-1k price under "per 1M" a thousand times too small, and
//! both still compute. The check only warns; it never blocks.
//!
//! Prices are compared, in US dollars per 1M tokens, with the bundled
//! price table's smallest and largest (input with input, output with
//! output). A price in dollars is compared as it is; one in another
//! currency is converted at the typed rate when the other side of the pair
//! is the dollar, else at the reference rates below. Those only place a
//! price within the table's range, which spans five orders of magnitude:
//! no figure is ever computed with them.

use super::Scenario;
use crate::cost::{CostOutputs, PriceUnit};
use crate::lang::Locale;
use crate::locale::{format_price, format_unit_cost, Currency};
use rust_decimal::Decimal;

/// The bundled price table's bounds, in US dollars per 1M tokens. The
/// server's test of the table checks them, so an update of the table that
/// moves one fails there.
pub const TABLE_INPUT: (Decimal, Decimal) = (
    Decimal::from_parts(3, 0, 0, false, 3),
    Decimal::from_parts(150, 0, 0, false, 0),
);
/// The same for output tokens.
pub const TABLE_OUTPUT: (Decimal, Decimal) = (
    Decimal::from_parts(1, 0, 0, false, 2),
    Decimal::from_parts(600, 0, 0, false, 0),
);

/// The ECB's euro reference rates of 2024-06-28, in units per euro:
/// enough to place a price in another currency within the table's range.
/// Codes three letters each; rates in hundred-thousandths, in the same
/// order.
const REFERENCE_DATE: &str = "2024-06-28";
const PER_EURO_CODES: &str =
    "AUDBRLCADCHFCNYCZKDKKEURGBPHKDHUFIDRILSINRISKJPYKRWMXNMYRNOKNZDPHPPLNRONSEKSGDTHBTRYUSDZAR";
const PER_EURO: [u32; 30] = [
    160790, 589150, 146700, 96340, 777480, 2502500, 745750, 100000, 84638, 835940, 39510000,
    1748721000, 402000, 8924950, 14890000, 17194000, 147486000, 1956540, 505010, 1139650, 176010,
    6256000, 430900, 497730, 1135950, 145130, 3931900, 3518680, 107050, 1949700,
];

/// [`REFERENCE_DATE`] as each page language writes a date (a test in
/// `date` checks it against `format_date`, a module above this one).
pub fn reference_date_shown(l: Locale) -> &'static str {
    pick(l, "28/06/2024", "28 Jun 2024")
}

/// The day of the reference rates the check falls back on.
pub fn reference_date() -> &'static str {
    REFERENCE_DATE
}

fn per_euro(c: Currency) -> Option<Decimal> {
    let at =
        (0..PER_EURO.len()).find(|i| PER_EURO_CODES.get(3 * i..3 * i + 3) == Some(c.code()))?;
    Some(Decimal::new(i64::from(PER_EURO[at]), 5))
}

/// How many US dollars one unit of the price currency is worth, as far as
/// the check can tell: the typed rate when the revenue is in dollars, else
/// the reference rates (`None` for a currency they do not carry).
fn usd_per_unit(s: &Scenario) -> Option<Decimal> {
    let i = &s.inputs;
    if i.price_currency == Currency::USD {
        return Some(Decimal::ONE);
    }
    if i.revenue_currency == Currency::USD {
        if let Some(fx) = i.fx.filter(|f| !f.is_zero()) {
            return Some(fx);
        }
    }
    per_euro(Currency::USD)?.checked_div(per_euro(i.price_currency)?)
}

/// Whether the typed rate looks the wrong way round: within a factor of
/// three of the inverse of the reference cross rate and not of the rate
/// itself (`BD 1 = US$ 2,66` typed as US$ 1 = BD 2,66). Only pairs of
/// currencies the reference rates carry are checked, and pairs near parity
/// never are (both ways read alike).
pub fn rate_inverted(s: &Scenario) -> bool {
    let i = &s.inputs;
    let (Some(fx), Some(from), Some(to)) = (
        i.fx.filter(|_| i.price_currency != i.revenue_currency),
        per_euro(i.price_currency),
        per_euro(i.revenue_currency),
    ) else {
        return false;
    };
    // The reference: units of the revenue currency per unit of the price
    // currency. The typed rate over it is near 1 when right, near
    // 1 / reference² when inverted.
    let Some(reference) = to.checked_div(from) else {
        return false;
    };
    let (Some(ratio), Some(inverse_ratio)) = (
        fx.checked_div(reference),
        Decimal::ONE
            .checked_div(reference)
            .and_then(|inverse| fx.checked_div(inverse)),
    ) else {
        return false;
    };
    let three = Decimal::from(3);
    let near = |x: Decimal| x > Decimal::ONE / three && x < three;
    !near(ratio) && near(inverse_ratio)
}

/// Why the prices look quoted per the other unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitWarning {
    /// A price above any of its kind in the price table (in dollars per
    /// 1M tokens): per 1M typed as per 1k, when the unit is per 1k.
    AboveTable,
    /// A price below any of its kind in the price table: per 1k typed as
    /// per 1M, when the unit is per 1M.
    BelowTable,
    /// One call costs more than a conversation brings in.
    CallAboveTicket,
}

impl UnitWarning {
    /// The name `--json` and the MCP estimate give it.
    pub fn code(self) -> &'static str {
        match self {
            UnitWarning::AboveTable => "above_price_table",
            UnitWarning::BelowTable => "below_price_table",
            UnitWarning::CallAboveTicket => "call_above_ticket",
        }
    }
}

/// Where the typed prices fall against the table, `usd` being what a unit
/// of their currency is worth in dollars (`None`: within it, or too large
/// a number to tell).
fn table_warning(s: &Scenario, usd: Decimal) -> Option<UnitWarning> {
    let i = &s.inputs;
    // The table's bounds in the typed prices' currency and unit, by
    // division only: the browser's build carries no decimal multiplication
    // for this.
    let bound = |d: Decimal| {
        let d = d.checked_div(usd)?;
        match i.price_unit {
            PriceUnit::PerThousand => d.checked_div(Decimal::ONE_THOUSAND),
            PriceUnit::PerMillion => Some(d),
        }
    };
    let (in_lo, in_hi) = (bound(TABLE_INPUT.0)?, bound(TABLE_INPUT.1)?);
    let (out_lo, out_hi) = (bound(TABLE_OUTPUT.0)?, bound(TABLE_OUTPUT.1)?);
    // A zero price (a free tier, a cache given away) says nothing about the
    // unit; a cache price far under the table's input is normal, so only
    // the input and output prices count below it.
    let positive = |p: Decimal| p > Decimal::ZERO;
    if i.price_in > in_hi || i.price_cached > in_hi || i.price_out > out_hi {
        return Some(UnitWarning::AboveTable);
    }
    let below = (positive(i.price_in) && i.price_in < in_lo)
        || (positive(i.price_out) && i.price_out < out_lo);
    below.then_some(UnitWarning::BelowTable)
}

/// The warning a scenario deserves, if any: the price table first,
/// whatever the ticket (a large B2B ticket hides no unit mistake).
pub fn unit_warning(s: &Scenario, o: &CostOutputs) -> Option<UnitWarning> {
    let i = &s.inputs;
    if let Some(w) = usd_per_unit(s).and_then(|usd| table_warning(s, usd)) {
        return Some(w);
    }
    (i.ticket > Decimal::ZERO && o.cost_per_call > i.ticket).then_some(UnitWarning::CallAboveTicket)
}

/// What the CLI and the MCP estimate say of a rate that looks the wrong
/// way round: the rate as typed and the reference's.
pub fn rate_warning_text(s: &Scenario, l: Locale) -> String {
    let i = &s.inputs;
    let (from, to) = (i.price_currency, i.revenue_currency);
    let reference = per_euro(to)
        .zip(per_euro(from))
        .and_then(|(t, f)| t.checked_div(f))
        .unwrap_or_default();
    let one = |c: Currency| crate::locale::with_symbol("1".to_owned(), l, c);
    let amount = |d: Decimal, places: u32, c: Currency| {
        crate::locale::with_symbol(crate::locale::format_decimal(d, l, 0, places), l, c)
    };
    format!(
        "{} {} = {} {} {} {} {} {} = {}: {}.",
        pick(l, "O câmbio", "The rate"),
        one(from),
        amount(i.fx.unwrap_or_default(), 10, to),
        pick(l, "parece invertido:", "looks the wrong way round:"),
        pick(
            l,
            "as taxas de referência do BCE de",
            "the ECB's reference rates of"
        ),
        reference_date_shown(l),
        pick(l, "dão cerca de", "give about"),
        one(from),
        amount(reference, 2, to),
        pick(l, "confira o sentido", "check its direction"),
    )
}

fn pick(l: Locale, pt: &'static str, en: &'static str) -> &'static str {
    match l {
        Locale::PtBr => pt,
        Locale::EnUs => en,
    }
}

/// What the CLI and the MCP estimate say when the prices look quoted per
/// the other unit: the unit they are entered in, why they look wrong, and
/// which unit to check. It never blocks a figure. (The page says the same
/// in fixed sentences: the wasm carries no formatting for it.)
pub fn unit_warning_text(w: UnitWarning, s: &Scenario, o: &CostOutputs, l: Locale) -> String {
    let i = &s.inputs;
    let (unit, other) = match i.price_unit {
        PriceUnit::PerThousand => (
            pick(l, "por 1k tokens", "per 1k tokens"),
            pick(l, "por 1M tokens", "per 1M tokens"),
        ),
        PriceUnit::PerMillion => (
            pick(l, "por 1M tokens", "per 1M tokens"),
            pick(l, "por 1k tokens", "per 1k tokens"),
        ),
    };
    // Only the unit that would explain the figure is suggested: prices
    // above the table under per 1M are not a unit mistake, nor prices
    // below it under per 1k.
    let unit_fits = matches!(
        (w, i.price_unit),
        (UnitWarning::AboveTable, PriceUnit::PerThousand)
            | (UnitWarning::BelowTable, PriceUnit::PerMillion)
            | (UnitWarning::CallAboveTicket, PriceUnit::PerThousand)
    );
    let check = if unit_fits {
        format!(
            "{} {other}",
            pick(l, "confira se não são", "check whether they are")
        )
    } else {
        pick(l, "confira os preços", "check the prices").to_owned()
    };
    let usd = |d: Decimal| format_price(d, l, Currency::USD);
    let per_1m = pick(l, "por 1M tokens", "per 1M tokens");
    match w {
        UnitWarning::AboveTable | UnitWarning::BelowTable => {
            let above = w == UnitWarning::AboveTable;
            let (which, input, output, bound) = if above {
                (
                    pick(
                        l,
                        "um preço passa de todos os da tabela de preços dos modelos",
                        "a price is above every one in the model price table",
                    ),
                    pick(l, "entrada até", "input up to"),
                    pick(l, "saída até", "output up to"),
                    (TABLE_INPUT.1, TABLE_OUTPUT.1),
                )
            } else {
                (
                    pick(
                        l,
                        "um preço fica abaixo de todos os da tabela de preços dos modelos",
                        "a price is below every one in the model price table",
                    ),
                    pick(l, "entrada a partir de", "input from"),
                    pick(l, "saída a partir de", "output from"),
                    (TABLE_INPUT.0, TABLE_OUTPUT.0),
                )
            };
            format!(
                "{} {unit}, {} {per_1m} {which} ({input} {}, {output} {}): {check}.",
                pick(l, "Os preços estão", "Prices are entered"),
                pick(l, "mas, em dólares", "but in US dollars"),
                usd(bound.0),
                usd(bound.1),
            )
        }
        UnitWarning::CallAboveTicket => format!(
            "{} {unit}, {} {}, {} {} {}: {check}.",
            pick(l, "Os preços estão", "Prices are entered"),
            pick(l, "e uma chamada custa", "and one call costs"),
            format_unit_cost(o.cost_per_call, l, i.revenue_currency),
            pick(l, "mais do que os", "more than the"),
            format_price(i.ticket, l, i.revenue_currency),
            pick(l, "que uma conversa traz", "a conversation brings"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(q: &str) -> (Scenario, CostOutputs) {
        let s = Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).unwrap();
        let o = s.compute().unwrap();
        (s, o)
    }

    fn warned(q: &str) -> Option<UnitWarning> {
        let (s, o) = scenario(q);
        unit_warning(&s, &o)
    }

    #[test]
    fn prices_per_the_other_unit_are_warned_of_both_ways_in_any_currency() {
        use UnitWarning::*;
        let rows: [(&str, Option<UnitWarning>); 16] = [
            // USD per 1M typed as per 1k, revenue in INR: above the table.
            (
                "v=2&pc=USD&pi=2.5&po=10&rc=INR&px=84.37&tk=95",
                Some(AboveTable),
            ),
            // The same prices per 1M: nothing to say.
            ("v=2&pc=USD&u=1m&pi=2.5&po=10&rc=INR&px=84.37&tk=95", None),
            // Reais per 1k, the reference: nothing to say.
            ("v=2", None),
            // The reference's prices under per 1M: below the table.
            ("v=2&u=1m", Some(BelowTable)),
            // A B2B ticket hides no unit mistake.
            ("v=2&pc=USD&pi=2.5&po=10&rc=USD&tk=50000", Some(AboveTable)),
            (
                "v=2&pc=USD&u=1m&pi=0.0025&po=0.01&rc=USD&tk=50000",
                Some(BelowTable),
            ),
            // Euros per 1M typed as per 1k, revenue in yen (the reference
            // rates place the euro).
            (
                "v=2&pc=EUR&pi=2.2&po=9&rc=JPY&px=162&tk=180",
                Some(AboveTable),
            ),
            ("v=2&pc=EUR&u=1m&pi=2.2&po=9&rc=JPY&px=162&tk=180", None),
            // Dinars priced, dollars earned: the typed rate converts.
            ("v=2&pc=BHD&u=1m&pi=0.94&po=3.76&rc=USD&px=2.66&tk=5", None),
            (
                "v=2&pc=BHD&pi=0.94&po=3.76&rc=USD&px=2.66&tk=5",
                Some(AboveTable),
            ),
            // A currency the reference rates lack, with no dollar side:
            // only the ticket can speak.
            (
                "v=2&pc=BHD&pi=0.94&po=3.76&rc=KWD&px=0.815&tk=2",
                Some(CallAboveTicket),
            ),
            ("v=2&pc=BHD&pi=0.94&po=3.76&rc=KWD&px=0.815&tk=0", None),
            // A call above the ticket, whatever the currency, when the
            // table has nothing to say.
            (
                "v=2&pc=BHD&u=1m&pi=0.94&po=3.76&rc=KWD&px=0.815&tk=0.0001",
                Some(CallAboveTicket),
            ),
            // Free prices say nothing; a free input with a per-1M output
            // under per 1k is still above.
            ("v=2&pi=0&pc=USD&po=0&rc=USD", None),
            ("v=2&pi=0&pc=USD&po=10&rc=USD&tk=0", Some(AboveTable)),
            // Yen per 1k in a plausible range.
            ("v=2&pc=JPY&pi=0.4&po=1.6&rc=JPY&tk=180", None),
        ];
        for (q, want) in rows {
            assert_eq!(warned(q), want, "{q}");
        }
    }

    #[test]
    fn a_rate_the_wrong_way_round_is_told_apart() {
        let inverted = |q: &str| {
            let (s, _) = scenario(q);
            rate_inverted(&s)
        };
        // R$ per euro: about 6 is right, about 0,17 the wrong way round.
        assert!(!inverted("v=2&pc=EUR&px=6.10"));
        assert!(inverted("v=2&pc=EUR&px=0.164"));
        // Yen per euro: 162 right, 0.00616 inverted.
        assert!(!inverted("v=2&pc=EUR&rc=JPY&px=162.35"));
        assert!(inverted("v=2&pc=EUR&rc=JPY&px=0.00616"));
        // Near parity both ways read alike: never said.
        assert!(!inverted("v=2&pc=EUR&rc=USD&px=0.93"));
        // A pair the reference does not carry is not checked.
        assert!(!inverted("v=2&pc=USD&rc=BHD&px=2.66"));
        // Far from both: not this warning's business.
        assert!(!inverted("v=2&pc=EUR&px=600"));
    }

    #[test]
    fn the_text_suggests_only_the_unit_that_explains_it() {
        let (s, o) = scenario("v=2&u=1m");
        let t = unit_warning_text(UnitWarning::BelowTable, &s, &o, Locale::EnUs);
        assert!(t.contains("check whether they are per 1k tokens"), "{t}");
        assert!(t.contains("US$ 0.003") || t.contains("$0.003"), "{t}");
        let (s, o) = scenario("v=2&u=1m&pc=USD&pi=900&po=900&rc=USD");
        let t = unit_warning_text(UnitWarning::AboveTable, &s, &o, Locale::PtBr);
        assert!(t.contains("confira os preços"), "{t}");
    }
}
