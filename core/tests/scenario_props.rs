//! Property tests of scenario links (what a link writes, it reads back),
//! of prices in their own currency (typing them in another currency at a
//! consistent rate changes no result), and the corpus of version 1 links
//! (each still gives exactly the numbers it gave before v2).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use idem_core::cost::{CostOutputs, PriceUnit};
use idem_core::locale::Currency;
use idem_core::scenario::{canonical, Choices, Field, Kind, Scenario};
use proptest::prelude::*;
use rust_decimal::Decimal;

fn value(f: Field) -> impl Strategy<Value = Option<Decimal>> {
    let strategy: BoxedStrategy<Decimal> = match f.kind() {
        Kind::Count => (0u64..10_000_000).prop_map(Decimal::from).boxed(),
        Kind::Percent => (0i64..=10_000).prop_map(|c| Decimal::new(c, 2)).boxed(),
        Kind::Money => (0u64..10_000_000, 0u32..7)
            .prop_map(|(m, s)| Decimal::new(m as i64, s))
            .boxed(),
        Kind::Rate => (1u64..10_000_000, 0u32..7)
            .prop_map(|(m, s)| Decimal::new(m as i64, s))
            .boxed(),
        Kind::Average => (1i64..100_000).prop_map(|m| Decimal::new(m, 4)).boxed(),
    };
    if f.optional() {
        proptest::option::of(strategy).boxed()
    } else {
        strategy.prop_map(Some).boxed()
    }
}

const CURRENCIES: [Currency; 3] = [Currency::BRL, Currency::USD, Currency::EUR];

fn scenario() -> impl Strategy<Value = Scenario> {
    let values: Vec<_> = Field::ALL.into_iter().map(value).collect();
    (
        values,
        any::<bool>(),
        0usize..3,
        0usize..3,
        any::<bool>(),
        proptest::option::of("[a-z]{1,8}/[a-z0-9._:@+~-]{1,12}"),
    )
        .prop_map(|(vals, per_million, pc, rc, risk, model)| {
            let choices = Choices {
                price_unit: if per_million {
                    PriceUnit::PerMillion
                } else {
                    PriceUnit::PerThousand
                },
                price_currency: CURRENCIES[pc],
                revenue_currency: CURRENCIES[rc],
            };
            let get = |f: Field| {
                let v = vals[f.index()];
                // The risk block is all or nothing.
                if Field::RISK.contains(&f) {
                    return if risk { v.or(Some(Decimal::ONE)) } else { None };
                }
                // The rate is required exactly when the currencies differ.
                if f == Field::Fx && pc != rc {
                    return v.or(Some(Decimal::new(533, 2)));
                }
                v
            };
            let mut s = Scenario::from_values(get, choices, true).unwrap();
            s.model = model;
            s
        })
}

fn read(q: &str) -> Scenario {
    Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).unwrap()
}

proptest! {
    #[test]
    fn a_link_reads_back_as_the_same_scenario(s in scenario()) {
        let q = s.to_query();
        prop_assert!(q.starts_with("v=2"));
        let back = read(&q);
        // Equal as numbers (trailing zeros are not kept) and as links.
        prop_assert_eq!(back.to_query(), q);
        for f in Field::ALL {
            prop_assert_eq!(f.get(&back).map(|d| d.normalize()), f.get(&s).map(|d| d.normalize()));
        }
        prop_assert_eq!(back.choices(), s.choices());
        prop_assert_eq!(&back.model, &s.model);
        // The same scenario computes the same numbers, or fails the same way.
        prop_assert_eq!(back.compute().ok(), s.compute().ok());
    }

    #[test]
    fn a_link_never_needs_escaping(s in scenario()) {
        let q = s.to_query();
        prop_assert!(q.bytes().all(|b| b.is_ascii_alphanumeric() || b"=&.-/_:@+~".contains(&b)), "{}", q);
    }

    /// Prices typed in US dollars at US$ 1 = R$ r give exactly the results
    /// of the same prices converted to reais by hand, and of the same
    /// prices typed in reais with revenue in dollars at the inverse rate
    /// (where the inverse is exact: r a power of two times a power of five).
    #[test]
    fn results_do_not_depend_on_the_currency_prices_are_typed_in(
        s in scenario(),
        rate_cents in 1i64..100_000,
    ) {
        let rate = Decimal::new(rate_cents, 2);
        let mut usd = s.clone();
        usd.inputs.price_currency = Currency::USD;
        usd.inputs.revenue_currency = Currency::BRL;
        usd.inputs.fx = Some(rate);
        let mut brl = s.clone();
        brl.inputs.price_currency = Currency::BRL;
        brl.inputs.revenue_currency = Currency::BRL;
        brl.inputs.fx = None;
        for f in Field::PRICES {
            let v = f.get(&s).unwrap();
            set_price(&mut brl, f, v * rate);
        }
        match (usd.compute(), brl.compute()) {
            (Ok(a), Ok(b)) => prop_assert_eq!(normalized(&a), normalized(&b)),
            // Overflow can happen on either side only at absurd sizes.
            (a, b) => prop_assert_eq!(a.is_ok(), b.is_ok()),
        }
    }
}

fn set_price(s: &mut Scenario, f: Field, v: Decimal) {
    match f {
        Field::PriceIn => s.inputs.price_in = v,
        Field::PriceCached => s.inputs.price_cached = v,
        _ => s.inputs.price_out = v,
    }
}

fn normalized(o: &CostOutputs) -> serde_json::Value {
    // Compare as numbers: 0.17589 and 0.175890 are the same result.
    let mut v = serde_json::to_value(o).unwrap();
    if let Some(obj) = v.as_object_mut() {
        for (_, x) in obj.iter_mut() {
            if let Some(t) = x.as_str() {
                *x = serde_json::Value::String(canonical(t.parse::<Decimal>().unwrap()));
            }
        }
    }
    v
}

#[test]
fn every_version_1_link_gives_the_numbers_it_always_gave() {
    // Written by the last build that wrote v=1 links (the commit before
    // links v2): each link, and every figure the page showed for it, exact.
    let corpus: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/scenario-links-v1.json")).unwrap();
    let cases = corpus.as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        let link = case["link"].as_str().unwrap();
        let s = read(link);
        let o = s.compute().unwrap();
        let c = |d: Decimal| canonical(d);
        let mut got = serde_json::Map::new();
        let mut put = |k: &str, v: String| {
            got.insert(k.into(), serde_json::Value::String(v));
        };
        put("cost_per_call", c(o.cost_per_call));
        put("monthly_revenue", c(o.monthly_revenue));
        put("monthly_useful_spend", c(o.monthly_useful_spend));
        put("duplicated_conversations", c(o.duplicated_conversations));
        put("monthly_token_waste", c(o.monthly_token_waste));
        put(
            "waste_share_of_revenue_pct",
            o.waste_share_of_revenue_pct.map(c).unwrap_or_default(),
        );
        put("annual_token_waste", c(o.annual_token_waste));
        put(
            "break_even_conversations",
            o.break_even_conversations.map(c).unwrap_or_default(),
        );
        if let Some(r) = &o.risk {
            put("duplicated_charges", c(r.duplicated_charges));
            put("monthly_duplicated_amount", c(r.monthly_duplicated_amount));
            put("monthly_ops_cost", c(r.monthly_ops_cost));
            put("monthly_claim_exposure", c(r.monthly_claim_exposure));
            put("monthly_total_cost", c(r.monthly_total_cost));
            put("annual_total_cost", c(r.annual_total_cost));
        }
        put("currency", s.currency().code().to_owned());
        assert_eq!(
            serde_json::Value::Object(got),
            case["outputs"],
            "the v1 link {link:?} changed its numbers"
        );
        // Re-written as v2, it reads back to the same scenario.
        assert_eq!(read(&s.to_query()), s, "{link}");
    }
}
