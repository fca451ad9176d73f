//! The cost and risk calculator: every input of the cost model as a text
//! field a person can type "1.234,56" into, every output with its formula.

use idem_core::cost::{self, CostInputs, CostOutputs, PriceUnit};
use idem_core::locale::{format_count, format_money, format_pct, parse_decimal, Currency, Locale};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use rust_decimal::Decimal;

/// One text input of the calculator: its query key (for scenario links),
/// label, and the raw text the person typed.
#[derive(Clone, Copy)]
struct Field {
    key: &'static str,
    label: &'static str,
    suffix: &'static str,
    text: RwSignal<String>,
}

impl Field {
    fn parsed(&self, locale: Locale) -> Result<Decimal, String> {
        parse_decimal(&self.text.get(), locale).map_err(|e| e.to_string())
    }
}

fn default_text(key: &str, locale: Locale) -> String {
    let r = CostInputs::reference();
    let d = |v: Decimal| idem_core::locale::format_decimal(v, locale, 0, 6);
    // Money fields show cents, as a finance lead writes them ("1,20").
    let m = |v: Decimal| idem_core::locale::format_decimal(v, locale, 2, 6);
    match key {
        "c" => d(r.conversations),
        "ti" => d(r.tokens_in),
        "to" => d(r.tokens_out),
        "pi" => m(r.price_in),
        "po" => m(r.price_out),
        "tk" => m(r.ticket),
        "d" => d(r.duplicate_rate_pct),
        _ => String::new(),
    }
}

/// The calculator page.
#[component]
pub fn Calculator() -> impl IntoView {
    let locale = Locale::PtBr;
    let currency = Currency::Brl;
    let query = use_query_map();
    // A value in the address bar wins over the reference default, so a
    // submitted form (no JavaScript) or a shared link renders its numbers.
    let field = |key: &'static str, label: &'static str, suffix: &'static str| {
        let initial = query
            .with_untracked(|q| q.get(key))
            .unwrap_or_else(|| default_text(key, locale));
        Field {
            key,
            label,
            suffix,
            text: RwSignal::new(initial),
        }
    };
    let conversations = field("c", "Conversas por mês", "");
    let tokens_in = field("ti", "Tokens de entrada por chamada", "tokens");
    let tokens_out = field("to", "Tokens de saída por chamada", "tokens");
    let price_in = field("pi", "Preço de entrada por 1k tokens", "R$");
    let price_out = field("po", "Preço de saída por 1k tokens", "R$");
    let ticket = field("tk", "Receita por conversa resolvida", "R$");
    let dup = field("d", "Conversas que repetem a chamada", "%");
    let fields = [
        conversations,
        tokens_in,
        tokens_out,
        price_in,
        price_out,
        ticket,
        dup,
    ];

    let result = Memo::new(move |_| -> Result<(CostInputs, CostOutputs), String> {
        let v = |f: &Field| f.parsed(locale).map_err(|e| format!("{}: {e}", f.label));
        let inputs = CostInputs {
            conversations: v(&conversations)?,
            tokens_in: v(&tokens_in)?,
            tokens_out: v(&tokens_out)?,
            price_in: v(&price_in)?,
            price_out: v(&price_out)?,
            price_unit: PriceUnit::PerThousand,
            ticket: v(&ticket)?,
            duplicate_rate_pct: v(&dup)?,
            risk: None,
        };
        let out = cost::compute(&inputs).map_err(|e| e.to_string())?;
        Ok((inputs, out))
    });

    let reset = move |_| {
        for f in fields {
            f.text.set(default_text(f.key, locale));
        }
    };

    view! {
        <h1>"Quanto custa uma chamada que executa duas vezes"</h1>
        <form class="calculator" method="get" action="/">
            <fieldset>
                <legend>"Volume"</legend>
                <NumberField field=conversations locale/>
                <NumberField field=tokens_in locale/>
                <NumberField field=tokens_out locale/>
            </fieldset>
            <fieldset>
                <legend>"Preços"</legend>
                <NumberField field=price_in locale/>
                <NumberField field=price_out locale/>
            </fieldset>
            <fieldset>
                <legend>"Receita e duplicatas"</legend>
                <NumberField field=ticket locale/>
                <NumberField field=dup locale/>
            </fieldset>
            <div class="actions">
                <noscript><button type="submit">"Calcular"</button></noscript>
                <button type="button" id="reset" on:click=reset>"Restaurar cenário de referência"</button>
            </div>
        </form>
        <section class="results" aria-live="polite">
            <h2>"Resultados"</h2>
            {move || match result.get() {
                Err(msg) => view! { <p class="scenario-error" role="alert">{msg}</p> }.into_any(),
                Ok((i, o)) => view! { <Results inputs=i outputs=o locale currency/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn NumberField(field: Field, locale: Locale) -> impl IntoView {
    let id = format!("in-{}", field.key);
    let error = move || field.parsed(locale).err();
    view! {
        <div class="field">
            <label for=id.clone()>{field.label}</label>
            <div class="input-row">
                <input
                    id=id
                    name=field.key
                    type="text"
                    inputmode="decimal"
                    autocomplete="off"
                    prop:value=move || field.text.get()
                    on:input=move |ev| field.text.set(event_target_value(&ev))
                    aria-invalid=move || if error().is_some() { "true" } else { "false" }
                />
                <span class="suffix">{field.suffix}</span>
            </div>
            {move || error().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
        </div>
    }
}

#[component]
fn Results(
    inputs: CostInputs,
    outputs: CostOutputs,
    locale: Locale,
    currency: Currency,
) -> impl IntoView {
    let m = move |d: Decimal| format_money(d, locale, currency);
    let n = move |d: Decimal| format_count(d, locale);
    let unit = n(inputs.price_unit.tokens());
    let rows: Vec<(&str, &str, String, String)> = vec![
        (
            "cost_per_call",
            "Custo por chamada",
            m(outputs.cost_per_call),
            format!(
                "{} × {} / {unit} + {} × {} / {unit}",
                n(inputs.tokens_in),
                m(inputs.price_in),
                n(inputs.tokens_out),
                m(inputs.price_out)
            ),
        ),
        (
            "monthly_revenue",
            "Receita do mês",
            m(outputs.monthly_revenue),
            format!("{} × {}", n(inputs.conversations), m(inputs.ticket)),
        ),
        (
            "duplicated_conversations",
            "Conversas duplicadas",
            n(outputs.duplicated_conversations),
            format!(
                "{} × {}",
                n(inputs.conversations),
                format_pct(inputs.duplicate_rate_pct, locale)
            ),
        ),
        (
            "monthly_token_waste",
            "Token queimado por mês",
            m(outputs.monthly_token_waste),
            format!(
                "{} × {}",
                n(outputs.duplicated_conversations),
                m(outputs.cost_per_call)
            ),
        ),
        (
            "waste_share_of_revenue_pct",
            "Parcela da receita",
            outputs
                .waste_share_of_revenue_pct
                .map(|p| format_pct(p, locale))
                .unwrap_or_else(|| "—".into()),
            match outputs.waste_share_of_revenue_pct {
                Some(_) => format!(
                    "{} / {}",
                    m(outputs.monthly_token_waste),
                    m(outputs.monthly_revenue)
                ),
                None => "sem receita, não há parcela a calcular".into(),
            },
        ),
        (
            "annual_token_waste",
            "Token queimado por ano",
            m(outputs.annual_token_waste),
            format!("12 × {}", m(outputs.monthly_token_waste)),
        ),
        (
            "break_even_conversations",
            "Conversas a mais para empatar",
            outputs
                .break_even_conversations
                .map(n)
                .unwrap_or_else(|| "—".into()),
            match outputs.break_even_conversations {
                Some(_) => format!(
                    "⌈{} / {}⌉",
                    m(outputs.monthly_token_waste),
                    m(inputs.ticket)
                ),
                None => "ticket zero: nenhuma quantidade de conversas cobre o desperdício".into(),
            },
        ),
    ];
    view! {
        <dl class="outputs">
            {rows
                .into_iter()
                .map(|(key, label, value, formula)| {
                    view! {
                        <div class="output" data-key=key>
                            <dt>{label}</dt>
                            <dd>
                                <span class="value" id=format!("out-{key}")>{value.clone()}</span>
                                <span class="formula">{format!("{formula} = {value}")}</span>
                            </dd>
                        </div>
                    }
                })
                .collect_view()}
        </dl>
    }
}
