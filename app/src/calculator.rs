//! The cost and risk calculator: every input of the cost model as a text
//! field a person can type "1.234,56" into, every output with its formula,
//! the three charts, and the ways out of the page (link, save, compare, CSV).

use crate::charts::Charts;
use crate::i18n::{currency_name, field_label, number_hint, problem_text, tr, Prefs};
use crate::SavedView;
use idem_core::cost::{CostOutputs, PriceUnit};
use idem_core::locale::{format_count, format_decimal, format_money, format_pct, parse_decimal};
use idem_core::locale::{Currency, Locale};
use idem_core::scenario::{parse_canonical, Field, Kind, Problem, Scenario};
use leptos::prelude::*;
use rust_decimal::Decimal;

/// The query key that marks values as typed by a person in the page's
/// locale (a form submitted without JavaScript) rather than canonical.
pub const TYPED_KEY: &str = "t";

fn idx(f: Field) -> usize {
    Field::ALL.iter().position(|g| *g == f).unwrap_or(0)
}

/// A value as the field shows it in `locale`.
pub fn display_text(f: Field, v: Decimal, l: Locale) -> String {
    match f.kind() {
        Kind::Money => format_decimal(v, l, 2, 8),
        _ => format_decimal(v, l, 0, 8),
    }
}

fn default_text(f: Field, l: Locale) -> String {
    f.default_value()
        .map(|v| display_text(f, v, l))
        .unwrap_or_default()
}

/// The calculator's editable state: what the person typed, field by field,
/// kept verbatim while they type.
#[derive(Clone, Copy)]
pub struct Form {
    texts: [RwSignal<String>; 12],
    /// What prices are quoted per.
    pub unit: RwSignal<PriceUnit>,
    /// The display currency.
    pub currency: RwSignal<Currency>,
}

impl Form {
    /// The state a query string describes: canonical values are shown in
    /// the page's locale; typed values (`t=1`) are kept as typed.
    pub fn from_query(pairs: &[(String, String)], l: Locale) -> Form {
        let typed = pairs.iter().any(|(k, _)| k == TYPED_KEY);
        let get = |key: &str| pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
        let texts = Field::ALL.map(|f| {
            let text = match get(f.key()) {
                None => default_text(f, l),
                Some(v) if typed => v.clone(),
                Some(v) => parse_canonical(v)
                    .map(|d| display_text(f, d, l))
                    .unwrap_or_else(|| v.clone()),
            };
            RwSignal::new(text)
        });
        let unit = get("u")
            .and_then(|u| u.parse().ok())
            .unwrap_or(PriceUnit::PerThousand);
        let currency = get("cur")
            .and_then(|c| Currency::from_code(c))
            .unwrap_or_default();
        Form {
            texts,
            unit: RwSignal::new(unit),
            currency: RwSignal::new(currency),
        }
    }

    /// The text signal of a field.
    pub fn text(&self, f: Field) -> RwSignal<String> {
        self.texts[idx(f)]
    }

    /// A field's value, `Ok(None)` when an optional field is empty, or what
    /// to fix, in the reader's language.
    pub fn read(&self, f: Field, l: Locale) -> Result<Option<Decimal>, String> {
        let text = self.text(f).get();
        if text.trim().is_empty() {
            return if f.optional() {
                Ok(None)
            } else {
                Err(problem_text(Problem::NotANumber, l).to_owned())
            };
        }
        let v = parse_decimal(&text, l).map_err(|_| number_hint(l).to_owned())?;
        f.check(v)
            .map(Some)
            .map_err(|p| problem_text(p, l).to_owned())
    }

    /// A problem of the field that only shows with the others: a risk field
    /// left empty while another risk field is filled in.
    pub fn joint_problem(&self, f: Field, l: Locale) -> Option<String> {
        if !Field::RISK.contains(&f) || !self.text(f).get().trim().is_empty() {
            return None;
        }
        Field::RISK
            .into_iter()
            .any(|g| !self.text(g).get().trim().is_empty())
            .then(|| problem_text(Problem::RiskIncomplete, l).to_owned())
    }

    /// The scenario, or each field's problem.
    pub fn scenario(&self, l: Locale) -> Result<Scenario, Vec<(Field, String)>> {
        let mut errors = Vec::new();
        let values: Vec<Option<Decimal>> = Field::ALL
            .into_iter()
            .map(|f| match self.read(f, l) {
                Ok(v) => v,
                Err(e) => {
                    errors.push((f, e));
                    None
                }
            })
            .collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        Scenario::from_values(|f| values[idx(f)], self.unit.get(), self.currency.get()).map_err(
            |p| {
                p.0.into_iter()
                    .map(|(f, p)| (f, problem_text(p, l).to_owned()))
                    .collect()
            },
        )
    }

    /// Back to the reference scenario.
    pub fn reset(&self, l: Locale) {
        for f in Field::ALL {
            self.text(f).set(default_text(f, l));
        }
        self.unit.set(PriceUnit::PerThousand);
        self.currency.set(Currency::Brl);
    }

    /// Rewrites every readable field from one locale's notation to
    /// another's; a field that cannot be read is left as typed.
    pub fn relocalize(&self, from: Locale, to: Locale) {
        for f in Field::ALL {
            let t = self.text(f);
            if let Ok(v) = parse_decimal(&t.get_untracked(), from) {
                t.set(display_text(f, v, to));
            }
        }
    }

    /// Switches the price unit, converting the prices so the scenario stays
    /// the same (R$ 0,015 per 1k is R$ 15,00 per 1M).
    pub fn set_unit(&self, unit: PriceUnit, l: Locale) {
        let old = self.unit.get_untracked();
        if old == unit {
            return;
        }
        for f in [Field::PriceIn, Field::PriceOut] {
            let t = self.text(f);
            if let Some(v) = parse_decimal(&t.get_untracked(), l)
                .ok()
                .and_then(|v| old.convert(v))
            {
                t.set(display_text(f, v, l));
            }
        }
        self.unit.set(unit);
    }
}

/// Where the address bar should point for a scenario: the saved link while
/// the scenario is unchanged, else the scenario's own query.
pub fn scenario_href(s: &Scenario, saved: Option<&SavedView>, l: Locale) -> String {
    let lang = match l {
        Locale::PtBr => String::new(),
        Locale::EnUs => "lang=en-US".to_owned(),
    };
    let q = s.to_query();
    match saved {
        Some(v) if v.query == q => {
            if lang.is_empty() {
                format!("/s/{}", v.id)
            } else {
                format!("/s/{}?{lang}", v.id)
            }
        }
        _ if lang.is_empty() => format!("/?{q}"),
        _ => format!("/?{q}&{lang}"),
    }
}

/// Percent-encodes a canonical query so it can travel as one parameter.
pub fn encode_param(q: &str) -> String {
    q.replace('%', "%25")
        .replace('&', "%26")
        .replace('=', "%3D")
}

/// The calculator, starting from a query string's scenario, optionally a
/// saved one (then the address bar keeps its short link until an edit).
#[component]
pub fn Calculator(
    /// The query pairs to start from (canonical, or typed with `t=1`).
    initial: Vec<(String, String)>,
    /// The saved scenario this page shows, if any.
    saved: Option<SavedView>,
) -> impl IntoView {
    let prefs = expect_context::<Prefs>();
    let locale = prefs.locale;
    let form = Form::from_query(&initial, locale.get_untracked());
    let scenario = Memo::new(move |_| form.scenario(locale.get()));
    let computed = Memo::new(move |_| -> Result<(Scenario, CostOutputs), String> {
        let s = scenario.get().map_err(|e| {
            let l = locale.get();
            e.iter()
                .map(|(f, m)| format!("{}: {m}", field_label(*f, l)))
                .collect::<Vec<_>>()
                .join(" · ")
        })?;
        let o = s
            .compute()
            .map_err(|_| problem_text(Problem::TooLarge, locale.get()).to_owned())?;
        Ok((s, o))
    });
    let saved_for_href = saved.clone();
    let href = Memo::new(move |_| {
        scenario
            .get()
            .ok()
            .map(|s| scenario_href(&s, saved_for_href.as_ref(), locale.get()))
    });
    let query = Memo::new(move |_| scenario.get().ok().map(|s| s.to_query()));

    // Keep the address bar on the current scenario, without a history entry
    // per keystroke; and keep typed numbers in the new locale's notation.
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| {
            if let Some(h) = href.get() {
                crate::browser::replace_url(&h);
            }
        });
        Effect::watch(
            move || locale.get(),
            move |now, before, _| {
                if let Some(before) = before {
                    if before != now {
                        form.relocalize(*before, *now);
                    }
                }
            },
            false,
        );
    }

    let reset = move |_| form.reset(locale.get_untracked());
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let input_currency = move || {
        // With a rate, inputs stay in the prices' currency (BRL) and only
        // results are converted; without one, the currency is a label.
        match scenario.get().ok().and_then(|s| s.rate) {
            Some(_) => Currency::Brl,
            None => form.currency.get(),
        }
    };
    let symbol = move || input_currency().symbol(locale.get()).to_owned();
    let unit_label = move || match form.unit.get() {
        PriceUnit::PerThousand => t("por 1k tokens", "per 1k tokens"),
        PriceUnit::PerMillion => t("por 1M tokens", "per 1M tokens"),
    };
    let price_equivalent = move |f: Field| {
        move || {
            let l = locale.get();
            let unit = form.unit.get();
            let v = form.read(f, l).ok().flatten()?;
            let converted = unit.convert(v)?;
            let other = match unit.other() {
                PriceUnit::PerThousand => tr(l, "por 1k tokens", "per 1k tokens"),
                PriceUnit::PerMillion => tr(l, "por 1M tokens", "per 1M tokens"),
            };
            Some(format!(
                "= {} {other}",
                format_money(converted, l, input_currency())
            ))
        }
    };
    let rate_label = move || {
        let l = locale.get();
        format!(
            "{} — 1 R$ = ? {}",
            field_label(Field::Rate, l),
            form.currency.get().code()
        )
    };
    let field = move |f: Field, suffix: Signal<String>| {
        view! { <NumberField form field=f suffix/> }
    };
    let money_suffix = Signal::derive(symbol);
    let price_suffix = Signal::derive(move || format!("{} {}", symbol(), unit_label()));
    let pct = Signal::derive(|| "%".to_owned());
    let tokens = Signal::derive(move || t("tokens", "tokens").to_owned());
    let none = Signal::derive(String::new);

    let save_disabled = move || query.get().is_none();
    let saved_banner = saved.clone().map(|v| {
        let id = v.id.clone();
        view! {
            <p class="saved-banner" id="saved-banner">
                {move || {
                    let l = locale.get();
                    let name = if v.name.is_empty() { tr(l, "sem nome", "unnamed").to_owned() } else { v.name.clone() };
                    format!(
                        "{} «{name}», {} {}. {}",
                        tr(l, "Cenário salvo", "Saved scenario"),
                        tr(l, "salvo em", "saved on"),
                        crate::i18n::utc_minute(v.created_ms),
                        tr(l, "Editar cria um novo cenário; este link nunca muda.", "Editing makes a new scenario; this link never changes."),
                    )
                }}
                " "
                <code>{format!("/s/{id}")}</code>
            </p>
        }
    });

    view! {
        <h1>{move || t("Quanto custa uma chamada que executa duas vezes", "What a call that runs twice costs")}</h1>
        {saved_banner}
        <form class="calculator" method="get" action="/">
            <input type="hidden" name=TYPED_KEY value="1"/>
            <input type="hidden" name="lang" value=move || locale.get().tag()/>
            <fieldset>
                <legend>{move || t("Volume", "Volume")}</legend>
                {field(Field::Conversations, none)}
                {field(Field::TokensIn, tokens)}
                {field(Field::TokensOut, tokens)}
            </fieldset>
            <fieldset>
                <legend>{move || t("Preços", "Prices")}</legend>
                <div class="field">
                    <label for="in-u">{move || t("Preços cotados", "Prices quoted")}</label>
                    <select id="in-u" name="u"
                        on:change=move |ev| {
                            let unit = if event_target_value(&ev) == "1m" { PriceUnit::PerMillion } else { PriceUnit::PerThousand };
                            form.set_unit(unit, locale.get_untracked());
                        }>
                        <option value="1k" selected=move || form.unit.get() == PriceUnit::PerThousand>{move || t("por 1k tokens", "per 1k tokens")}</option>
                        <option value="1m" selected=move || form.unit.get() == PriceUnit::PerMillion>{move || t("por 1M tokens", "per 1M tokens")}</option>
                    </select>
                </div>
                <NumberField form field=Field::PriceIn suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceIn))/>
                <NumberField form field=Field::PriceOut suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceOut))/>
            </fieldset>
            <fieldset>
                <legend>{move || t("Receita", "Revenue")}</legend>
                {field(Field::Ticket, money_suffix)}
                <div class="field">
                    <label for="in-cur">{move || t("Moeda de exibição", "Display currency")}</label>
                    <select id="in-cur" name="cur"
                        on:change=move |ev| {
                            let c = Currency::from_code(&event_target_value(&ev)).unwrap_or_default();
                            if c == Currency::Brl {
                                form.text(Field::Rate).set(String::new());
                            }
                            form.currency.set(c);
                        }>
                        {[Currency::Brl, Currency::Usd, Currency::Eur].map(|c| view! {
                            <option value=c.code() selected=move || form.currency.get() == c>{move || currency_name(c, locale.get())}</option>
                        })}
                    </select>
                </div>
                <Show when=move || form.currency.get() != Currency::Brl>
                    <NumberField form field=Field::Rate suffix=Signal::derive(move || form.currency.get().code().to_owned()) label=Signal::derive(rate_label)/>
                </Show>
            </fieldset>
            <fieldset>
                <legend>{move || t("Duplicatas", "Duplicates")}</legend>
                {field(Field::DuplicateRate, pct)}
            </fieldset>
            <fieldset class="risk">
                <legend>{move || t("Risco financeiro (opcional)", "Financial risk (optional)")}</legend>
                {field(Field::MoneyShare, pct)}
                {field(Field::AvgCharge, money_suffix)}
                {field(Field::OpsCost, money_suffix)}
                {field(Field::ClaimRate, pct)}
            </fieldset>
            <div class="actions">
                <noscript><button type="submit">{move || t("Calcular", "Calculate")}</button></noscript>
                <button type="button" id="reset" on:click=reset>{move || t("Restaurar cenário de referência", "Restore the reference scenario")}</button>
            </div>
        </form>
        <ShareBar href query save_disabled=Signal::derive(save_disabled)/>
        <section class="results" aria-live="polite">
            <h2>{move || t("Resultados", "Results")}</h2>
            {move || match computed.get() {
                Err(msg) => view! { <p class="scenario-error" role="alert">{msg}</p> }.into_any(),
                Ok((s, o)) => view! {
                    <Results scenario=s.clone() outputs=o.clone()/>
                    <Charts scenario=s outputs=o/>
                }.into_any(),
            }}
        </section>
    }
}

/// Link, copy, save, compare and export.
#[component]
fn ShareBar(
    href: Memo<Option<String>>,
    query: Memo<Option<String>>,
    save_disabled: Signal<bool>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let copied = RwSignal::new(None::<bool>);
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        crate::browser::copy_location(copied);
    };
    let q = move || query.get().unwrap_or_else(|| "v=1".to_owned());
    view! {
        <section class="share" aria-label=move || t("Compartilhar", "Share")>
            <a id="share-link" rel="external" href=move || href.get().unwrap_or_else(|| "/".to_owned())>
                {move || t("Link deste cenário", "Link to this scenario")}
            </a>
            <button type="button" id="copy-link" on:click=copy>{move || t("Copiar link", "Copy link")}</button>
            <span class="copy-status" role="status">
                {move || copied.get().map(|ok| if ok {
                    t("Link copiado.", "Link copied.")
                } else {
                    t("Não consegui copiar: copie o endereço da barra.", "Could not copy: copy the address bar instead.")
                })}
            </span>
            <form class="save" method="post" action="/s">
                <input type="hidden" name="q" value=q/>
                <input type="hidden" name="lang" value=move || locale.get().tag()/>
                <label for="save-name">{move || t("Nome (opcional)", "Name (optional)")}</label>
                <input id="save-name" name="name" type="text" maxlength="80" autocomplete="off"/>
                <button type="submit" id="save" disabled=save_disabled>{move || t("Salvar cenário", "Save scenario")}</button>
            </form>
            <a id="compare-link" rel="external" href=move || format!("/compare?s={}", crate::calculator::encode_param(&q()))>
                {move || t("Comparar com outro cenário", "Compare with another scenario")}
            </a>
            <a id="export-csv" rel="external" href=move || format!("/export.csv?{}&lang={}", q(), locale.get().tag()) download="idem-scenario.csv">
                {move || t("Exportar CSV", "Export CSV")}
            </a>
        </section>
    }
}

#[component]
fn NumberField(
    form: Form,
    field: Field,
    suffix: Signal<String>,
    #[prop(optional, into)] hint: Option<Signal<Option<String>>>,
    #[prop(optional, into)] label: Option<Signal<String>>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let text = form.text(field);
    let id = format!("in-{}", field.key());
    let error = move || {
        let l = locale.get();
        form.read(field, l)
            .err()
            .or_else(|| form.joint_problem(field, l))
    };
    let label = move || match label {
        Some(l) => l.get(),
        None => field_label(field, locale.get()).to_owned(),
    };
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <div class="input-row">
                <input
                    id=id
                    name=field.key()
                    type="text"
                    inputmode="decimal"
                    autocomplete="off"
                    value=text.get_untracked()
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))
                    aria-invalid=move || if error().is_some() { "true" } else { "false" }
                />
                <span class="suffix">{move || suffix.get()}</span>
            </div>
            {move || hint.and_then(|h| h.get()).map(|h| view! { <p class="hint">{h}</p> })}
            {move || error().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
        </div>
    }
}

/// One output: its key (for tests and CSV), label, value and formula.
#[derive(Clone, Debug)]
pub struct Row {
    /// Stable key, as in the CLI's JSON.
    pub key: &'static str,
    /// The label in the page's language.
    pub label: &'static str,
    /// The value as shown.
    pub value: String,
    /// The formula with the numbers that went in.
    pub formula: String,
    /// The exact value, canonical (empty when there is none).
    pub exact: String,
}

/// Every output of a scenario, formatted for `l`.
pub fn rows(s: &Scenario, o: &CostOutputs, l: Locale) -> Vec<Row> {
    let i = &s.inputs;
    let in_cur = if s.rate.is_some() {
        Currency::Brl
    } else {
        s.currency
    };
    let m_in = |d: Decimal| format_money(d, l, in_cur);
    let m = |d: Decimal| format_money(s.shown(d), l, s.currency);
    let n = |d: Decimal| format_count(d, l);
    let c = idem_core::scenario::canonical;
    let conv = match s.rate {
        Some(r) => format!(
            " × {} ({})",
            format_decimal(r, l, 0, 8),
            tr(l, "câmbio", "exchange rate")
        ),
        None => String::new(),
    };
    let unit = n(i.price_unit.tokens());
    let mut rows = vec![
        Row {
            key: "cost_per_call",
            label: tr(l, "Custo por chamada", "Cost per call"),
            value: m(o.cost_per_call),
            formula: format!(
                "({} × {} + {} × {}) / {unit}{conv}",
                n(i.tokens_in),
                m_in(i.price_in),
                n(i.tokens_out),
                m_in(i.price_out)
            ),
            exact: c(s.shown(o.cost_per_call)),
        },
        Row {
            key: "monthly_revenue",
            label: tr(l, "Receita do mês", "Monthly revenue"),
            value: m(o.monthly_revenue),
            formula: format!("{} × {}{conv}", n(i.conversations), m_in(i.ticket)),
            exact: c(s.shown(o.monthly_revenue)),
        },
        Row {
            key: "monthly_useful_spend",
            label: tr(l, "Gasto útil com o modelo por mês", "Useful model spend per month"),
            value: m(o.monthly_useful_spend),
            formula: format!("{} × {}", n(i.conversations), m(o.cost_per_call)),
            exact: c(s.shown(o.monthly_useful_spend)),
        },
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
        },
        Row {
            key: "monthly_token_waste",
            label: tr(l, "Token queimado por mês", "Tokens burnt per month"),
            value: m(o.monthly_token_waste),
            formula: format!(
                "{} × {}",
                n(o.duplicated_conversations),
                m(o.cost_per_call)
            ),
            exact: c(s.shown(o.monthly_token_waste)),
        },
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
                    m(o.monthly_token_waste),
                    m(o.monthly_revenue)
                ),
                None => tr(
                    l,
                    "sem receita, não há parcela a calcular",
                    "no revenue, so there is no share to compute",
                )
                .into(),
            },
            exact: o.waste_share_of_revenue_pct.map(c).unwrap_or_default(),
        },
        Row {
            key: "annual_token_waste",
            label: tr(l, "Token queimado por ano", "Tokens burnt per year"),
            value: m(o.annual_token_waste),
            formula: format!("12 × {}", m(o.monthly_token_waste)),
            exact: c(s.shown(o.annual_token_waste)),
        },
        Row {
            key: "break_even_conversations",
            label: tr(l, "Conversas a mais para empatar", "Extra conversations to break even"),
            value: o
                .break_even_conversations
                .map(n)
                .unwrap_or_else(|| "—".into()),
            formula: match o.break_even_conversations {
                Some(_) => format!("⌈{} / {}⌉", m(o.monthly_token_waste), m(i.ticket)),
                None => tr(
                    l,
                    "receita por conversa zero: nenhuma quantidade de conversas cobre o desperdício",
                    "zero revenue per conversation: no number of conversations covers the waste",
                )
                .into(),
            },
            exact: o.break_even_conversations.map(c).unwrap_or_default(),
        },
    ];
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
                    n(o.duplicated_conversations),
                    format_pct(ri.money_share_pct, l)
                ),
                exact: c(r.duplicated_charges),
            },
            Row {
                key: "monthly_duplicated_amount",
                label: tr(
                    l,
                    "Valor cobrado em dobro por mês",
                    "Amount charged twice per month",
                ),
                value: m(r.monthly_duplicated_amount),
                formula: format!("{} × {}", n(r.duplicated_charges), m(ri.avg_charge)),
                exact: c(s.shown(r.monthly_duplicated_amount)),
            },
            Row {
                key: "monthly_ops_cost",
                label: tr(l, "Custo operacional por mês", "Operational cost per month"),
                value: m(r.monthly_ops_cost),
                formula: format!("{} × {}", n(r.duplicated_charges), m(ri.ops_cost)),
                exact: c(s.shown(r.monthly_ops_cost)),
            },
            Row {
                key: "monthly_claim_exposure",
                label: tr(
                    l,
                    "Exposição a reclamações por mês",
                    "Claim exposure per month",
                ),
                value: m(r.monthly_claim_exposure),
                formula: format!(
                    "{} × {}",
                    m(r.monthly_duplicated_amount),
                    format_pct(ri.claim_rate_pct, l)
                ),
                exact: c(s.shown(r.monthly_claim_exposure)),
            },
            Row {
                key: "monthly_total_cost",
                label: tr(
                    l,
                    "Custo total das duplicatas por mês",
                    "Total cost of duplicates per month",
                ),
                value: m(r.monthly_total_cost),
                formula: format!(
                    "{} + {} + {}",
                    m(o.monthly_token_waste),
                    m(r.monthly_ops_cost),
                    m(r.monthly_claim_exposure)
                ),
                exact: c(s.shown(r.monthly_total_cost)),
            },
            Row {
                key: "annual_total_cost",
                label: tr(
                    l,
                    "Custo total das duplicatas por ano",
                    "Total cost of duplicates per year",
                ),
                value: m(r.annual_total_cost),
                formula: format!("12 × {}", m(r.monthly_total_cost)),
                exact: c(s.shown(r.annual_total_cost)),
            },
        ]);
    }
    rows
}

#[component]
fn Results(scenario: Scenario, outputs: CostOutputs) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || {
        let l = locale.get();
        let risk_missing = outputs.risk.is_none();
        view! {
            <dl class="outputs">
                {rows(&scenario, &outputs, l)
                    .into_iter()
                    .map(|r| {
                        view! {
                            <div class="output" data-key=r.key>
                                <dt>{r.label}</dt>
                                <dd>
                                    <span class="value" id=format!("out-{}", r.key)>{r.value.clone()}</span>
                                    <span class="formula">{format!("{} = {}", r.formula, r.value)}</span>
                                </dd>
                            </div>
                        }
                    })
                    .collect_view()}
            </dl>
            {risk_missing.then(|| view! {
                <p class="note">{tr(l,
                    "Preencha o bloco de risco financeiro para ver cobranças duplicadas, custo operacional e exposição a reclamações.",
                    "Fill in the financial-risk block to see duplicated charges, operational cost and claim exposure.")}</p>
            })}
        }
    }
}
