//! Every output of a scenario as a row: its label, value, formula (with
//! operands a person can multiply out), exact value and note.

use crate::i18n::tr;
use idem_core::cost::{CostOutputs, PriceUnit};
use idem_core::locale::{
    format_count, format_decimal, format_money, format_pct, format_price, format_unit_cost,
    Currency, Locale,
};
use idem_core::scenario::Scenario;
use rust_decimal::Decimal;

/// One output: its key (for tests and CSV), label, value and formula.
#[derive(Clone, Debug)]
pub struct Row {
    /// Stable key, as in the CLI's JSON.
    pub key: &'static str,
    /// The label in the page's language.
    pub label: &'static str,
    /// The value as shown (money to the cent, counts whole).
    pub value: String,
    /// The formula with the numbers that went in.
    pub formula: String,
    /// The exact value, canonical (empty when there is none).
    pub exact: String,
    /// The unit of the value: a currency code, `%`, or what is counted.
    pub unit: &'static str,
    /// A caveat printed beside the value (the claim exposure's).
    pub note: Option<String>,
}

/// The caveat of the claim exposure: the assumptions it rests on; for
/// revenue in reais, the Brazilian law it estimates (CDC art. 42), which
/// says nothing about a contract in another currency.
pub fn claim_caveat(claim_rate_pct: Decimal, l: Locale, revenue: Currency) -> String {
    let assumption = if revenue == Currency::BRL {
        tr(
            l,
            "das cobranças em dobro viram reclamação e que cada uma é restituída em dobro (CDC art. 42, parágrafo único), sem engano justificável reconhecido: 2 × o valor cobrado a mais, menos o 1 × que o estorno devolveria de todo modo, é o custo líquido contado aqui, (2 − 1) × o valor; o resultado real depende de decisão judicial.",
            "of the double charges become a claim and that each is refunded in double (Brazil's consumer code, CDC art. 42, sole paragraph), with no justifiable error recognised: 2 × the amount overcharged, less the 1 × a refund would return anyway, is the net extra cost counted here, (2 − 1) × the amount; the real outcome depends on a court's judgement."
        )
    } else {
        tr(
            l,
            "das cobranças em dobro viram reclamação e que cada uma custa, além do estorno, mais uma vez o valor cobrado a mais (como numa restituição em dobro): (2 − 1) × o valor; o resultado real depende da lei aplicável e de cada caso.",
            "of the double charges become a claim and that each costs, beyond the refund, the amount overcharged once more (as a refund in double would): (2 − 1) × the amount; the real outcome depends on the applicable law and on each case."
        )
    };
    format!(
        "{} {} {assumption}",
        tr(
            l,
            "Estimativa, não parecer jurídico: supõe que",
            "An estimate, not legal advice: it assumes"
        ),
        format_pct(claim_rate_pct, l),
    )
}

/// Every output of a scenario, formatted for `l`.
pub fn rows(s: &Scenario, o: &CostOutputs, l: Locale) -> Vec<Row> {
    let i = &s.inputs;
    let cur = i.revenue_currency;
    let code = cur.code();
    let m = |d: Decimal| format_money(d, l, cur);
    let unit_cost = |d: Decimal| format_unit_cost(d, l, cur);
    let price = |d: Decimal| format_price(d, l, i.price_currency);
    let money_in = |d: Decimal| format_price(d, l, cur);
    let n = |d: Decimal| format_count(d, l);
    // An operand as the computation used it, so a formula multiplies out
    // by hand: every decimal up to ten (a call's R$ 0,196725, a month's
    // R$ 267,6375); past ten, rounded and marked ≈ (the value's tooltip
    // has every digit).
    let approx = |d: Decimal, shown: String| {
        if d.normalize().scale() <= 10 {
            shown
        } else {
            format!("≈ {shown}")
        }
    };
    let op = |d: Decimal| approx(d, format_price(d, l, cur));
    // A count inside a formula keeps its decimals (an expected 900,03).
    let exact_n = |d: Decimal| approx(d, format_decimal(d, l, 0, 10));
    let pc = |d: Decimal| format!("{}%", format_decimal(d, l, 0, 6));
    let c = idem_core::scenario::canonical;
    let conv = match i.conversion() {
        Ok(fx) if i.price_currency != cur => format!(" × {}", format_decimal(fx, l, 2, 8)),
        _ => String::new(),
    };
    let unit = match i.price_unit {
        PriceUnit::PerThousand => "1k",
        PriceUnit::PerMillion => "1M",
    };
    let call_formula = |cached: Decimal| {
        let input = if cached.is_zero() {
            price(i.price_in)
        } else {
            format!(
                "({} × {} + {} × {})",
                pc(Decimal::ONE_HUNDRED - cached),
                price(i.price_in),
                pc(cached),
                price(i.price_cached)
            )
        };
        format!(
            "({} × {input} + {} × {}) / {unit}{conv}",
            n(i.tokens_in),
            n(i.tokens_out),
            price(i.price_out)
        )
    };
    let money_row = |key, label, d: Decimal, formula: String| Row {
        key,
        label,
        value: m(d),
        formula,
        exact: c(d),
        unit: code,
        note: None,
    };
    let rounded_note = |d: Decimal| {
        (!d.fract().is_zero()).then(|| {
            format!(
                "{} {}; {}",
                tr(l, "valor esperado", "expected value"),
                exact_n(d),
                tr(
                    l,
                    "mostrado arredondado ao inteiro mais próximo; os valores em dinheiro usam o exato",
                    "shown rounded to the nearest whole number; money uses the exact value"
                )
            )
        })
    };
    let calls = if i.calls_per_conversation == Decimal::ONE {
        String::new()
    } else {
        format!(" × {}", format_decimal(i.calls_per_conversation, l, 0, 4))
    };
    let mut rows = vec![Row {
        key: "cost_per_call",
        label: tr(l, "Custo por chamada", "Cost per call"),
        value: unit_cost(o.cost_per_call),
        formula: call_formula(i.cached_share_pct),
        exact: c(o.cost_per_call),
        unit: code,
        note: None,
    }];
    // Present whatever its value, so an export's rows are the same keys
    // for every scenario.
    rows.push(Row {
        key: "cost_per_duplicate_call",
        label: tr(l, "Custo da chamada repetida", "Cost of a repeated call"),
        value: unit_cost(o.cost_per_duplicate_call),
        formula: call_formula(i.dup_cache_share_pct),
        exact: c(o.cost_per_duplicate_call),
        unit: code,
        note: None,
    });
    rows.extend([
        money_row(
            "monthly_revenue",
            tr(l, "Receita do mês", "Monthly revenue"),
            o.monthly_revenue,
            format!("{} × {}", n(i.conversations), money_in(i.ticket)),
        ),
        money_row(
            "monthly_useful_spend",
            tr(l, "Gasto útil com o modelo por mês", "Useful model spend per month"),
            o.monthly_useful_spend,
            format!("{}{calls} × {}", n(i.conversations), op(o.cost_per_call)),
        ),
        Row {
            key: "duplicated_conversations",
            label: tr(l, "Conversas duplicadas por mês", "Duplicated conversations per month"),
            value: n(o.duplicated_conversations),
            formula: format!(
                "{} × {}",
                n(i.conversations),
                format_pct(i.duplicate_rate_pct, l)
            ),
            exact: c(o.duplicated_conversations),
            unit: tr(l, "conversas/mês", "conversations/month"),
            note: rounded_note(o.duplicated_conversations),
        },
        money_row(
            "monthly_token_waste",
            tr(l, "Token queimado por mês", "Tokens burnt per month"),
            o.monthly_token_waste,
            format!(
                "{} × {}",
                exact_n(o.duplicated_conversations),
                op(o.cost_per_duplicate_call)
            ),
        ),
        Row {
            key: "waste_share_of_revenue_pct",
            label: tr(l, "Parcela da receita", "Share of revenue"),
            value: o
                .waste_share_of_revenue_pct
                .map(|p| format_pct(p, l))
                .unwrap_or_else(|| "—".into()),
            formula: match o.waste_share_of_revenue_pct {
                Some(_) => format!(
                    "{} / {}",
                    op(o.monthly_token_waste),
                    op(o.monthly_revenue)
                ),
                None => tr(
                    l,
                    "sem receita, não há parcela a calcular",
                    "no revenue, so there is no share to compute",
                )
                .into(),
            },
            exact: o.waste_share_of_revenue_pct.map(c).unwrap_or_default(),
            unit: "%",
            note: None,
        },
        money_row(
            "annual_token_waste",
            tr(l, "Token queimado por ano", "Tokens burnt per year"),
            o.annual_token_waste,
            format!("12 × {}", op(o.monthly_token_waste)),
        ),
        Row {
            key: "break_even_conversations",
            label: tr(l, "Conversas a mais para empatar", "Extra conversations to break even"),
            value: o
                .break_even_conversations
                .map(n)
                .unwrap_or_else(|| "—".into()),
            formula: match o.break_even_conversations {
                Some(_) => format!("⌈{} / {}⌉", op(o.monthly_token_waste), money_in(i.ticket)),
                None => tr(
                    l,
                    "receita por conversa zero: nenhuma quantidade de conversas cobre o desperdício",
                    "zero revenue per conversation: no number of conversations covers the waste",
                )
                .into(),
            },
            exact: o.break_even_conversations.map(c).unwrap_or_default(),
            unit: tr(l, "conversas/mês", "conversations/month"),
            note: None,
        },
        Row {
            key: "break_even_conversations_on_margin",
            label: tr(
                l,
                "Conversas a mais para empatar na margem",
                "Extra conversations to break even on margin",
            ),
            value: o
                .break_even_conversations_on_margin
                .map(n)
                .unwrap_or_else(|| "—".into()),
            formula: match o.break_even_conversations_on_margin {
                Some(_) => format!(
                    "⌈{} / ({} − {}{})⌉",
                    op(o.monthly_token_waste),
                    money_in(i.ticket),
                    if i.calls_per_conversation == Decimal::ONE {
                        String::new()
                    } else {
                        format!("{} × ", format_decimal(i.calls_per_conversation, l, 0, 4))
                    },
                    op(o.cost_per_call)
                ),
                None => tr(
                    l,
                    "cada conversa custa em chamadas o que traz ou mais: nenhuma quantidade de conversas cobre o desperdício na margem",
                    "each conversation costs in calls as much as it brings or more: no number of conversations covers the waste on margin",
                )
                .into(),
            },
            exact: o
                .break_even_conversations_on_margin
                .map(c)
                .unwrap_or_default(),
            unit: tr(l, "conversas/mês", "conversations/month"),
            note: Some(
                tr(
                    l,
                    "Na margem: cada conversa a mais traz a receita por conversa, mas também custa as próprias chamadas ao modelo.",
                    "On margin: each extra conversation brings its revenue, but also costs its own model calls.",
                )
                .to_owned(),
            ),
        },
    ]);
    if let (Some(r), Some(ri)) = (&o.risk, &i.risk) {
        rows.extend([
            Row {
                key: "duplicated_charges",
                label: tr(
                    l,
                    "Cobranças duplicadas por mês",
                    "Duplicated charges per month",
                ),
                value: n(r.duplicated_charges),
                formula: format!(
                    "{} × {}",
                    exact_n(o.duplicated_conversations),
                    format_pct(ri.money_share_pct, l)
                ),
                exact: c(r.duplicated_charges),
                unit: tr(l, "cobranças/mês", "charges/month"),
                note: rounded_note(r.duplicated_charges),
            },
            money_row(
                "monthly_duplicated_amount",
                tr(
                    l,
                    "Valor cobrado em dobro por mês",
                    "Amount charged twice per month",
                ),
                r.monthly_duplicated_amount,
                format!(
                    "{} × {}",
                    exact_n(r.duplicated_charges),
                    money_in(ri.avg_charge)
                ),
            ),
            money_row(
                "monthly_ops_cost",
                tr(l, "Custo operacional por mês", "Operational cost per month"),
                r.monthly_ops_cost,
                format!(
                    "{} × {}",
                    exact_n(r.duplicated_charges),
                    money_in(ri.ops_cost)
                ),
            ),
            Row {
                note: Some(claim_caveat(ri.claim_rate_pct, l, cur)),
                ..money_row(
                    "monthly_claim_exposure",
                    if cur == Currency::BRL {
                        tr(
                            l,
                            "Exposição a reclamações por mês (estimativa, CDC art. 42)",
                            "Claim exposure per month (estimate, CDC art. 42)",
                        )
                    } else {
                        tr(
                            l,
                            "Exposição a reclamações por mês (estimativa)",
                            "Claims exposure per month (estimate)",
                        )
                    },
                    r.monthly_claim_exposure,
                    // The double refund less the refund owed anyway: the
                    // ×2 is where the law puts it, and the formula says so.
                    format!(
                        "(2 − 1) × {} × {}",
                        op(r.monthly_duplicated_amount),
                        format_pct(ri.claim_rate_pct, l)
                    ),
                )
            },
            money_row(
                "monthly_total_risk",
                tr(l, "Risco financeiro por mês", "Financial risk per month"),
                r.monthly_total_risk,
                format!(
                    "{} + {}",
                    op(r.monthly_ops_cost),
                    op(r.monthly_claim_exposure)
                ),
            ),
            money_row(
                "annual_total_risk",
                tr(l, "Risco financeiro por ano", "Financial risk per year"),
                r.annual_total_risk,
                format!("12 × {}", op(r.monthly_total_risk)),
            ),
            money_row(
                "monthly_total_cost",
                tr(
                    l,
                    "Custo total das duplicatas por mês",
                    "Total cost of duplicates per month",
                ),
                r.monthly_total_cost,
                format!(
                    "{} + {} + {}",
                    op(o.monthly_token_waste),
                    op(r.monthly_ops_cost),
                    op(r.monthly_claim_exposure)
                ),
            ),
            money_row(
                "annual_total_cost",
                tr(
                    l,
                    "Custo total das duplicatas por ano",
                    "Total cost of duplicates per year",
                ),
                r.annual_total_cost,
                format!("12 × {}", op(r.monthly_total_cost)),
            ),
        ]);
    }
    rows
}
