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

use crate::cost::CostInputs;

mod analysis;
mod estimate;
mod fields;
mod link;
mod plausible;
mod table;

pub use analysis::*;
pub use estimate::*;
pub use fields::*;
pub use link::*;
pub use plausible::{
    rate_inverted, rate_warning_text, reference_date, reference_date_shown, unit_warning,
    unit_warning_text, UnitWarning, TABLE_INPUT, TABLE_OUTPUT,
};

/// The query format's version this build writes, as `v=2`.
pub const VERSION: &str = "2";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::PriceUnit;
    use crate::locale::Currency;
    use rust_decimal::Decimal;
    use std::str::FromStr;

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
    fn a_key_twice_is_refused_never_read_as_its_last_value() {
        for link in [
            "v=2&tk=37.125&rc=BHD&pc=BHD&rc=USD",
            "v=2&tk=1&tk=2",
            "v=2&v=2",
            "c=100&c=200",
        ] {
            let e = q(link).unwrap_err();
            assert!(matches!(e, QueryError::Duplicate(_)), "{link}: {e}");
            assert!(e.to_string().contains("more than once"), "{link}");
        }
        // The page's own keys may repeat without changing a figure.
        assert!(q("v=2&lang=pt-BR&lang=en-US").is_ok());
    }

    #[test]
    fn a_link_that_lost_its_version_is_read_as_the_version_its_keys_are() {
        // Version 2's keys without `v=2`: read as version 2, in its
        // currencies, never as a version 1 link in reais.
        let s = q("tk=37.125&pc=USD&rc=BHD&px=0.376&pi=3&po=15&u=1m").unwrap();
        assert_eq!(
            s.inputs.revenue_currency,
            Currency::from_code("BHD").unwrap()
        );
        assert_eq!(s.inputs.ticket, d("37.125"));
        assert_eq!(
            s,
            q("v=2&tk=37.125&pc=USD&rc=BHD&px=0.376&pi=3&po=15&u=1m").unwrap()
        );
        assert_eq!(q("cs=40").unwrap(), q("v=2&cs=40").unwrap());
        // Keys both versions have: version 1, as links before versions.
        assert_eq!(q("tk=2&d=1").unwrap(), q("v=1&tk=2&d=1").unwrap());
        assert_eq!(q("cur=USD&tk=2").unwrap(), q("v=1&cur=USD&tk=2").unwrap());
    }

    #[test]
    fn changed_values_are_written_canonically_and_read_back() {
        let mut s = Scenario::default();
        s.inputs.duplicate_rate_pct = d("0.50");
        s.inputs.price_in = d("3");
        s.inputs.price_cached = d("0.30");
        s.inputs.price_out = d("15");
        s.inputs.price_unit = PriceUnit::PerMillion;
        s.inputs.price_currency = Currency::USD;
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
        assert_eq!(s.inputs.revenue_currency, Currency::USD);
        assert_eq!(s.inputs.price_currency, Currency::BRL);
        assert_eq!(s.inputs.fx, Some(d("0.18")));
        assert_eq!(s.inputs.ticket, d("0.216"));
        let o = s.compute().unwrap();
        assert_eq!(o.monthly_token_waste.normalize(), d("26.73"));
        assert_eq!(o.break_even_conversations, Some(d("124")));
        assert_eq!(s.to_query(), "v=2&px=0.18&tk=0.216&rc=USD");
        // A label only: everything in that currency.
        let s = q("v=1&cur=EUR").unwrap();
        assert_eq!(s.choices().price_currency, Currency::EUR);
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
        assert!(matches!(q("v=2&pc=XYZ"), Err(QueryError::Currency(_))));
        assert!(matches!(q("v=2&rc=XTS"), Err(QueryError::Currency(_))));
        assert!(q("v=2&pc=JPY&px=0.036").is_ok());
        assert!(matches!(q("v=1&cur=XYZ"), Err(QueryError::Currency(_))));
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
            Some((Currency::EUR, d("6.1")))
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
        usd.price_currency = Currency::USD;
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
