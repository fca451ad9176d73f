//! Property tests of scenario links: what a link writes, it reads back.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use idem_core::cost::PriceUnit;
use idem_core::locale::Currency;
use idem_core::scenario::{Field, Scenario};
use proptest::prelude::*;
use rust_decimal::Decimal;

fn value(f: Field) -> impl Strategy<Value = Option<Decimal>> {
    use idem_core::scenario::Kind;
    let any_scale = (0u64..10_000_000, 0u32..7).prop_map(|(m, s)| Decimal::new(m as i64, s));
    let strategy: BoxedStrategy<Decimal> = match f.kind() {
        Kind::Count => (0u64..10_000_000).prop_map(Decimal::from).boxed(),
        Kind::Percent => (0i64..=10_000).prop_map(|c| Decimal::new(c, 2)).boxed(),
        Kind::Money => any_scale.boxed(),
        Kind::Rate => (1u64..10_000_000, 0u32..7)
            .prop_map(|(m, s)| Decimal::new(m as i64, s))
            .boxed(),
    };
    if f.optional() {
        proptest::option::of(strategy).boxed()
    } else {
        strategy.prop_map(Some).boxed()
    }
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let values: Vec<_> = Field::ALL.into_iter().map(value).collect();
    (values, any::<bool>(), 0usize..3, any::<bool>()).prop_map(|(vals, per_million, cur, risk)| {
        let get = |f: Field| {
            let v = vals[Field::ALL.iter().position(|g| *g == f).unwrap()];
            // The risk block is all or nothing.
            if Field::RISK.contains(&f) {
                return if risk { v.or(Some(Decimal::ONE)) } else { None };
            }
            v
        };
        let unit = if per_million {
            PriceUnit::PerMillion
        } else {
            PriceUnit::PerThousand
        };
        let currency = [Currency::Brl, Currency::Usd, Currency::Eur][cur];
        Scenario::from_values(get, unit, currency).unwrap()
    })
}

fn read(q: &str) -> Scenario {
    Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).unwrap()
}

proptest! {
    #[test]
    fn a_link_reads_back_as_the_same_scenario(s in scenario()) {
        let q = s.to_query();
        prop_assert!(q.starts_with("v=1"));
        let back = read(&q);
        // Equal as numbers (trailing zeros are not kept) and as links.
        prop_assert_eq!(back.to_query(), q);
        for f in Field::ALL {
            prop_assert_eq!(f.get(&back).map(|d| d.normalize()), f.get(&s).map(|d| d.normalize()));
        }
        prop_assert_eq!(back.inputs.price_unit, s.inputs.price_unit);
        prop_assert_eq!(back.currency, s.currency);
        // The same scenario computes the same numbers, or fails the same way.
        prop_assert_eq!(back.compute().ok(), s.compute().ok());
    }

    #[test]
    fn a_link_never_needs_escaping(s in scenario()) {
        let q = s.to_query();
        prop_assert!(q.bytes().all(|b| b.is_ascii_alphanumeric() || b"=&.-".contains(&b)), "{}", q);
    }
}
