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
            form.set_currency(true, Currency::Usd);
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
                (Currency::Eur, Currency::Brl, "6,10")
            );
            // Back to euros: the rate typed for them comes back.
            form.set_currency(true, Currency::Eur);
            assert_eq!(form.text(Field::Fx).get_untracked(), "6,10");
            assert_eq!(form.fx_date.get_untracked(), "2026-12-01");
            // Revenue in euros too: no rate is needed; back to reais, the rate returns.
            form.set_currency(false, Currency::Eur);
            assert_eq!(form.text(Field::Fx).get_untracked(), "");
            form.set_currency(false, Currency::Brl);
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
                (Currency::Eur, Currency::Brl, "6.10")
            );
            assert!(form.lenient(l).1.contains(&Field::Fx));
        });
    }

    #[test]
    fn a_brazilian_date_in_a_link_is_read_and_a_bad_one_blocks_nothing() {
        reactive(|| {
            let l = Locale::PtBr;
            let form = Form::from_query(&query("v=2&pc=USD&px=5.33&pd=01/12/2026"), l);
            assert_eq!(form.fx_date.get_untracked(), "2026-12-01");
            assert_eq!(form.date_problem(l), None);
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
}
