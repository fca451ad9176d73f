//! The cost and risk calculator: every input of the cost model as a text
//! field a person can type "1.234,56" into, every output with its formula,
//! the three charts, and the ways out of the page (link, save, compare, CSV).
//!
//! A refused field never hides the rest: outputs that do not depend on it
//! are computed with a stand-in value (any valid value gives them the same
//! result) and the ones that do say which field blocks them. Links and
//! exports keep the last valid scenario and say so.

mod form;
mod notices;
mod rows;
mod view;

pub use form::*;
pub use notices::ServerMarkup;
pub use rows::*;
pub use view::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::problem_text;
    use crate::SavedView;
    use idem_core::locale::{Currency, Locale};
    use idem_core::scenario::{Field, Problem, Scenario};
    use leptos::prelude::*;
    use rust_decimal::Decimal;

    #[test]
    fn free_text_travels_in_a_query_value() {
        assert_eq!(
            encode_text("Contrato SP #2 & co+1"),
            "Contrato%20SP%20%232%20%26%20co%2B1"
        );
        assert_eq!(encode_text("São"), "S%C3%A3o");
    }

    #[test]
    fn a_saved_v1_scenario_keeps_its_short_link() {
        let v = SavedView {
            id: "0123456789ab".into(),
            name: "old".into(),
            query: "v=1&d=0.5".into(),
            created_ms: 0,
        };
        let s = Scenario::from_query([("v", "2"), ("d", "0.5")]).unwrap_or_default();
        assert_eq!(scenario_href(&s, Some(&v), Locale::PtBr), "/s/0123456789ab");
    }

    /// Runs `f` under a reactive owner of its own (with its own arena when
    /// the workspace turns leptos' sandboxed arenas on).
    fn reactive(f: impl FnOnce()) {
        Owner::new_root(None).with(f);
    }

    fn query(q: &str) -> Vec<(String, String)> {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn a_rate_belongs_to_its_two_currencies() {
        reactive(|| {
            let l = Locale::PtBr;
            let form = Form::from_query(&query("v=2&c=45000&pc=EUR&px=6.1&pd=2026-12-01"), l);
            assert_eq!(form.text(Field::Fx).get_untracked(), "6,10");
            // Prices now in dollars: the euro's rate is gone, never reused.
            form.set_currency(true, Currency::USD);
            assert_eq!(form.text(Field::Fx).get_untracked(), "");
            assert_eq!(form.fx_date.get_untracked(), "");
            assert_eq!(
                form.read(Field::Fx, l),
                Err(problem_text(Problem::RateRequired, l).to_owned())
            );
            assert!(form.lenient(l).1.contains(&Field::Fx), "every figure waits");
            let d = form.fx_dropped.get_untracked().unwrap();
            assert_eq!(
                (d.from, d.to, d.rate.as_str()),
                (Currency::EUR, Currency::BRL, "6,10")
            );
            // Back to euros: the rate typed for them comes back.
            form.set_currency(true, Currency::EUR);
            assert_eq!(form.text(Field::Fx).get_untracked(), "6,10");
            assert_eq!(form.fx_date.get_untracked(), "01/12/2026");
            assert_eq!(form.fx_date_iso(l).as_deref(), Some("2026-12-01"));
            // Revenue in euros too: no rate is needed; back to reais, the rate returns.
            form.set_currency(false, Currency::EUR);
            assert_eq!(form.text(Field::Fx).get_untracked(), "");
            form.set_currency(false, Currency::BRL);
            assert_eq!(form.text(Field::Fx).get_untracked(), "6,10");
        });
    }

    #[test]
    fn the_model_pickers_dropped_rate_is_said_not_used() {
        reactive(|| {
            let l = Locale::EnUs;
            let form = Form::from_query(
                &query("v=2&c=45000&pc=USD&u=1m&pi=0.15&po=0.6&pxd=EUR:6.1"),
                l,
            );
            assert_eq!(form.text(Field::Fx).get_untracked(), "");
            let d = form.fx_dropped.get_untracked().unwrap();
            assert_eq!(
                (d.from, d.to, d.rate.as_str()),
                (Currency::EUR, Currency::BRL, "6.10")
            );
            assert!(form.lenient(l).1.contains(&Field::Fx));
        });
    }

    #[test]
    fn a_brazilian_date_in_a_link_is_read_and_a_bad_one_blocks_nothing() {
        reactive(|| {
            let l = Locale::PtBr;
            let form = Form::from_query(&query("v=2&pc=USD&px=5.33&pd=01/12/2026"), l);
            assert_eq!(form.fx_date.get_untracked(), "01/12/2026");
            assert_eq!(form.fx_date_iso(l).as_deref(), Some("2026-12-01"));
            assert_eq!(form.date_problem(l), None);
            // The same link in English shows the day unmistakably.
            let en = Form::from_query(&query("v=2&pc=USD&px=5.33&pd=2026-12-01"), Locale::EnUs);
            assert_eq!(en.fx_date.get_untracked(), "1 Dec 2026");
            let form = Form::from_query(&query("v=2&pc=USD&px=5.33&pd=31/02/2026"), l);
            assert!(form.date_problem(l).unwrap().contains("dd/mm/aaaa"));
            assert_eq!(
                form.lenient(l).1,
                Vec::<Field>::new(),
                "no figure waits on a date"
            );
            assert_eq!(form.text(Field::Fx).get_untracked(), "5,33");
        });
    }

    #[test]
    fn a_typed_date_that_reads_two_ways_is_refused_with_both() {
        reactive(|| {
            let en = Locale::EnUs;
            let form = Form::from_query(&query("v=2&t=1&pc=USD&px=5.33&pd=04/12/2026"), en);
            let why = form.date_problem(en).unwrap();
            assert!(why.contains("4 December 2026"), "{why}");
            assert!(why.contains("12 April 2026"), "{why}");
            assert_eq!(form.fx_date_iso(en), None);
            assert_eq!(
                form.lenient(en).1,
                Vec::<Field>::new(),
                "no figure waits on a date"
            );
            // The same text on the Portuguese page is day first, as it says.
            let pt = Locale::PtBr;
            let form = Form::from_query(&query("v=2&t=1&pc=USD&px=5,33&pd=04/12/2026"), pt);
            assert_eq!(form.date_problem(pt), None);
            assert_eq!(form.fx_date_iso(pt).as_deref(), Some("2026-12-04"));
            // Switching the page's language rewrites the date in its form.
            form.relocalize(pt, en);
            assert_eq!(form.fx_date.get_untracked(), "4 Dec 2026");
        });
    }

    #[test]
    fn a_language_switch_rewrites_only_what_the_page_read() {
        reactive(|| {
            let (pt, en) = (Locale::PtBr, Locale::EnUs);
            let form = Form::from_query(&query("v=2&t=1&pc=USD&rc=BHD&px=0,376&u=1m"), pt);
            // Dinars in the English notation on the Portuguese page: refused.
            form.text(Field::Ticket).set("48.240".into());
            assert!(form.read(Field::Ticket, pt).is_err());
            form.text(Field::Conversations).set("12.500".into());
            form.relocalize(pt, en);
            // Kept as typed, never rewritten from a reading the page
            // refused: in English it is what it says, 48.24 dinars.
            assert_eq!(form.text(Field::Ticket).get_untracked(), "48.240");
            assert_eq!(
                form.read(Field::Ticket, en),
                Ok(Some(rust_decimal::Decimal::new(4824, 2)))
            );
            // What the page read is written the new language's way.
            assert_eq!(form.text(Field::Conversations).get_untracked(), "12,500");
            assert_eq!(form.text(Field::Fx).get_untracked(), "0.376");
        });
    }

    #[test]
    fn a_number_in_the_other_pages_notation_is_refused_with_how_to_write_it_here() {
        reactive(|| {
            let en = Locale::EnUs;
            let form = Form::from_query(&query("v=2"), en);
            form.text(Field::Conversations).set("12.500".into());
            assert_eq!(
                form.read(Field::Conversations, en),
                Err("on this page, write 12,500 or 12500".to_owned())
            );
            assert!(form.lenient(en).1.contains(&Field::Conversations));
            let pt = Locale::PtBr;
            let form = Form::from_query(&query("v=2"), pt);
            form.text(Field::Ticket).set("1,234.56".into());
            assert_eq!(
                form.read(Field::Ticket, pt),
                Err("nesta página, escreva 1.234,56 ou 1234,56".to_owned())
            );
            // A number that is wrong in both notations keeps its own reason.
            form.text(Field::DuplicateRate).set("100,5".into());
            assert_eq!(
                form.read(Field::DuplicateRate, pt),
                Err(problem_text(Problem::AboveHundred, pt).to_owned())
            );
        });
    }

    #[test]
    fn a_currency_the_link_named_but_cannot_be_used_blocks_every_money_figure() {
        reactive(|| {
            for l in [Locale::PtBr, Locale::EnUs] {
                let form = Form::from_query(
                    &query("v=2&pc=USD&u=1m&pi=2.5&po=10&rc=XYZ&px=84.37&pd=2026-12-01"),
                    l,
                );
                // Never BRL at the INR rate: the rate is not carried over.
                assert_eq!(form.text(Field::Fx).get_untracked(), "");
                assert_eq!(form.bad_revenue_currency.get_untracked(), "XYZ");
                assert_eq!(form.bad_price_currency.get_untracked(), "");
                let (_, blocked) = form.lenient(l);
                for f in [Field::Ticket, Field::Fx] {
                    assert!(blocked.contains(&f), "{f:?} waits for the currency");
                }
                assert!(!blocked.contains(&Field::Conversations));
                // Picking a currency ends it; the rate is then asked for.
                form.set_currency(false, Currency::from_code("INR").unwrap());
                assert_eq!(form.bad_revenue_currency.get_untracked(), "");
                assert_eq!(form.lenient(l).1, vec![Field::Fx]);
            }
            let form = Form::from_query(&query("v=2&rc=HRK"), Locale::EnUs);
            assert_eq!(form.bad_revenue_currency.get_untracked(), "HRK");
            // The reason, in each language (the server's notice says it).
            assert_eq!(
                crate::i18n::currency_refusal("HRK", Locale::EnUs),
                "HRK is a withdrawn currency: EUR replaced it on 1 Jan 2023"
            );
            assert_eq!(
                crate::i18n::currency_refusal("XYZ", Locale::PtBr),
                "«XYZ» não é um código de moeda ISO 4217"
            );
        });
    }

    #[test]
    fn money_reopens_to_its_currencys_minor_unit() {
        reactive(|| {
            let l = Locale::PtBr;
            let form = Form::from_query(&query("v=2&pc=TND&rc=TND&pi=0.5&tk=2.75"), l);
            assert_eq!(form.text(Field::Ticket).get_untracked(), "2,750");
            let form = Form::from_query(&query("v=2&pc=ISK&rc=ISK&tk=95&pi=2"), l);
            assert_eq!(form.text(Field::Ticket).get_untracked(), "95");
            assert_eq!(form.text(Field::PriceIn).get_untracked(), "2");
            let form = Form::from_query(&query("v=2&pc=USD&px=5.3"), l);
            assert_eq!(form.text(Field::Fx).get_untracked(), "5,30");
            assert_eq!(form.text(Field::Ticket).get_untracked(), "1,20");
        });
    }

    #[test]
    fn a_currency_symbol_in_a_price_is_read_or_refused_naming_the_currency() {
        reactive(|| {
            let l = Locale::PtBr;
            let form = Form::from_query(&query("v=2&pc=GBP&px=7.35&u=1m"), l);
            form.text(Field::PriceIn).set("£2,40".into());
            assert_eq!(form.read(Field::PriceIn, l), Ok(Some(Decimal::new(24, 1))));
            form.text(Field::PriceIn).set("GBP 2,40".into());
            assert_eq!(form.read(Field::PriceIn, l), Ok(Some(Decimal::new(24, 1))));
            form.text(Field::PriceIn).set("US$ 3".into());
            let why = form.read(Field::PriceIn, l).unwrap_err();
            assert!(why.contains("Libra esterlina (GBP)"), "{why}");
            assert!(!why.contains("vírgula"), "{why}");
            // The ticket is in the revenue currency, reais.
            form.text(Field::Ticket).set("€1".into());
            let why = form.read(Field::Ticket, l).unwrap_err();
            assert!(why.contains("Real brasileiro (BRL)"), "{why}");
            form.text(Field::Ticket).set("R$ 1,20".into());
            assert_eq!(form.read(Field::Ticket, l), Ok(Some(Decimal::new(12, 1))));
            let en = Locale::EnUs;
            form.text(Field::PriceIn).set("$3".into());
            let why = form.read(Field::PriceIn, en).unwrap_err();
            assert!(why.contains("British Pound (GBP)"), "{why}");
        });
    }
}
