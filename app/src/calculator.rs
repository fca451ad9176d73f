//! The cost and risk calculator: every input of the cost model as a text
//! field a person can type "1.234,56" into, every output with its formula,
//! the three charts, and the ways out of the page (link, save, compare, CSV).
//!
//! A refused field never hides the rest: outputs that do not depend on it
//! are computed with a stand-in value (any valid value gives them the same
//! result) and the ones that do say which field blocks them. Links and
//! exports keep the last valid scenario and say so.

use crate::charts::Charts;
use crate::i18n::{currency_name, field_label, number_hint, problem_text, tr, Prefs, T};
use crate::SavedView;
use idem_core::cost::{CostOutputs, PriceUnit};
use idem_core::locale::{
    currency_in_text, format_count, format_decimal, format_money, format_pct, format_price,
    format_unit_cost, parse_decimal,
};
use idem_core::locale::{Currency, Locale};
use idem_core::scenario::{
    depends_on, is_iso_date, is_model_id, parse_canonical, read_date, read_dropped_rate, Choices,
    Field, Kind, Problem, Scenario,
};
use leptos::prelude::*;
use rust_decimal::Decimal;

/// What the server has to say about the price-table model a link names
/// (one the bundled table does not have): markup the server writes, which
/// hydration keeps, so the wasm carries neither the table nor the check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelNotice(pub String);

fn model_notice() -> String {
    #[cfg(feature = "ssr")]
    {
        use_context::<ModelNotice>().unwrap_or_default().0
    }
    #[cfg(not(feature = "ssr"))]
    {
        String::new()
    }
}

/// The query key that marks values as typed by a person in the page's
/// locale (a form submitted without JavaScript) rather than canonical.
pub const TYPED_KEY: &str = "t";

fn idx(f: Field) -> usize {
    Field::ALL.iter().position(|g| *g == f).unwrap_or(0)
}

/// A value as the field shows it in `locale`: every decimal the field
/// keeps, so showing a value never rounds it. Money and exchange rates
/// show at least two decimals, as they are quoted (a rate typed `6,10`
/// comes back `6,10`, not `6,1`).
pub fn display_text(f: Field, v: Decimal, l: Locale) -> String {
    match f.kind() {
        Kind::Money | Kind::Rate => format_decimal(v, l, 2, 28),
        _ => format_decimal(v, l, 0, 28),
    }
}

/// The calculator's editable state: what the person typed, field by field,
/// kept verbatim while they type.
#[derive(Clone, Copy)]
pub struct Form {
    texts: [RwSignal<String>; 16],
    /// What prices are quoted per.
    pub unit: RwSignal<PriceUnit>,
    /// The currency of the token prices.
    pub price_currency: RwSignal<Currency>,
    /// The currency of revenue and results.
    pub revenue_currency: RwSignal<Currency>,
    /// The day the exchange rate was quoted, `YYYY-MM-DD` or empty.
    pub fx_date: RwSignal<String>,
    /// The price-table model the prices came from, and the table's date;
    /// cleared when a price is edited by hand.
    pub model: RwSignal<Option<(String, Option<String>)>>,
    /// The rate a change of currency dropped, kept to say so (and to give
    /// it back if the reader returns to its pair); never in a figure.
    pub fx_dropped: RwSignal<Option<DroppedRate>>,
}

/// An exchange rate dropped because the currencies it was quoted for
/// changed: a rate belongs to its two currencies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedRate {
    /// The price currency the rate was for.
    pub from: Currency,
    /// The revenue currency the rate was in.
    pub to: Currency,
    /// The rate as it was typed (or as the link carried it).
    pub rate: String,
    /// Its date, as typed.
    pub date: String,
}

impl Form {
    fn from_scenario(s: &Scenario, l: Locale) -> Form {
        let texts = Field::ALL
            .map(|f| RwSignal::new(f.get(s).map(|v| display_text(f, v, l)).unwrap_or_default()));
        Form {
            texts,
            unit: RwSignal::new(s.inputs.price_unit),
            price_currency: RwSignal::new(s.inputs.price_currency),
            revenue_currency: RwSignal::new(s.inputs.revenue_currency),
            fx_date: RwSignal::new(s.fx_date.clone().unwrap_or_default()),
            model: RwSignal::new(s.model.clone().map(|m| (m, s.model_date.clone()))),
            fx_dropped: RwSignal::new(None),
        }
    }

    /// The state a query string describes: a link (v1 or v2) is read into
    /// the scenario it means and shown in the page's locale; typed values
    /// (`t=1`), and links that do not read, are kept as written so each
    /// field can say what is wrong with it.
    pub fn from_query(pairs: &[(String, String)], l: Locale) -> Form {
        let form = Form::from_query_fields(pairs, l);
        let get = |key: &str| pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
        // The rate the model picker dropped (`pxd=EUR:6.1`), to say so.
        if let Some((from, rate)) = get("pxd").and_then(|v| read_dropped_rate(v)) {
            let to = form.revenue_currency.get_untracked();
            if from != form.price_currency.get_untracked() && from != to {
                form.fx_dropped.set(Some(DroppedRate {
                    from,
                    to,
                    rate: display_text(Field::Fx, rate, l),
                    date: String::new(),
                }));
            }
        }
        form
    }

    fn from_query_fields(pairs: &[(String, String)], l: Locale) -> Form {
        let typed = pairs.iter().any(|(k, _)| k == TYPED_KEY);
        if !typed {
            if let Ok(s) = Scenario::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            {
                return Form::from_scenario(&s, l);
            }
        }
        let form = Form::from_scenario(&Scenario::default(), l);
        let get = |key: &str| pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
        for f in Field::ALL {
            if let Some(v) = get(f.key()) {
                let text = match parse_canonical(v) {
                    Some(d) if !typed => display_text(f, d, l),
                    _ => v.clone(),
                };
                form.text(f).set(text);
            }
        }
        if let Some(u) = get("u").and_then(|u| u.parse().ok()) {
            form.unit.set(u);
        }
        if let Some(c) = get("pc").and_then(|c| Currency::from_code(c)) {
            form.price_currency.set(c);
        }
        if let Some(c) = get("rc").and_then(|c| Currency::from_code(c)) {
            form.revenue_currency.set(c);
        }
        if let Some(d) = get("pd") {
            form.fx_date.set(read_date(d).unwrap_or_else(|| d.clone()));
        }
        if let Some(m) = get("m").filter(|m| is_model_id(m)) {
            let date = get("md").filter(|d| is_iso_date(d)).cloned();
            form.model.set(Some((m.clone(), date)));
        }
        form
    }

    /// The text signal of a field.
    pub fn text(&self, f: Field) -> RwSignal<String> {
        self.texts[idx(f)]
    }

    fn choices(&self) -> Choices {
        Choices {
            price_unit: self.unit.get(),
            price_currency: self.price_currency.get(),
            revenue_currency: self.revenue_currency.get(),
        }
    }

    /// The currency a money field is typed in.
    pub fn currency_of(&self, f: Field) -> Currency {
        if f.in_price_currency() {
            self.price_currency.get()
        } else {
            self.revenue_currency.get()
        }
    }

    /// A field's value, `Ok(None)` when an optional field is empty, or what
    /// to fix, in the reader's language.
    pub fn read(&self, f: Field, l: Locale) -> Result<Option<Decimal>, String> {
        let text = self.text(f).get();
        let problem = |p| problem_text(p, l).to_owned();
        if text.trim().is_empty() {
            return if f == Field::Fx && self.price_currency.get() != self.revenue_currency.get() {
                Err(problem(Problem::RateRequired))
            } else if f.optional() {
                Ok(None)
            } else {
                Err(problem(Problem::NotANumber))
            };
        }
        if let Some(c) = currency_in_text(&text) {
            // "$3" in a block priced in reais is a typo to point out, not
            // a number to reinterpret.
            if f.kind() != Kind::Money || c != self.currency_of(f) {
                return Err(problem(Problem::WrongCurrency));
            }
        }
        let v = parse_decimal(&text, l).map_err(|_| number_hint(l).to_owned())?;
        f.check_typed(v).map(Some).map_err(problem)
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

    fn with_meta(&self, mut s: Scenario) -> Scenario {
        let date = self.fx_date.get();
        s.fx_date = (is_iso_date(&date) && s.inputs.fx.is_some()).then_some(date);
        if let Some((m, d)) = self.model.get() {
            s.model = Some(m);
            s.model_date = d;
        }
        s
    }

    /// Each field's problem, in display order.
    pub fn problems(&self, l: Locale) -> Vec<(Field, String)> {
        let mut out = Vec::new();
        for f in Field::ALL {
            if let Some(e) = self.read(f, l).err().or_else(|| self.joint_problem(f, l)) {
                out.push((f, e));
            }
        }
        out
    }

    /// What is wrong with the rate's date, if anything. A date only labels
    /// the rate: a bad one is said under its field and blocks no figure.
    pub fn date_problem(&self, l: Locale) -> Option<String> {
        let date = self.fx_date.get();
        (!date.is_empty() && !is_iso_date(&date)).then(|| {
            tr(
                l,
                "data inválida: use dd/mm/aaaa, como 01/12/2026",
                "invalid date: use dd/mm/yyyy, as in 01/12/2026",
            )
            .to_owned()
        })
    }

    /// Sets the price currency (`price`) or the revenue currency. A typed
    /// rate belongs to the pair it was typed for: a new pair drops it (kept
    /// aside to say so), and returning to that pair gives it back.
    pub fn set_currency(&self, price: bool, c: Currency) {
        let pair = || {
            (
                self.price_currency.get_untracked(),
                self.revenue_currency.get_untracked(),
            )
        };
        let before = pair();
        if price {
            self.price_currency.set(c);
        } else {
            self.revenue_currency.set(c);
        }
        let after = pair();
        if before == after {
            return;
        }
        let fx = self.text(Field::Fx);
        let current =
            (before.0 != before.1 && !fx.get_untracked().trim().is_empty()).then(|| DroppedRate {
                from: before.0,
                to: before.1,
                rate: fx.get_untracked(),
                date: self.fx_date.get_untracked(),
            });
        let back = self
            .fx_dropped
            .get_untracked()
            .filter(|d| (d.from, d.to) == after);
        match &back {
            Some(d) => {
                fx.set(d.rate.clone());
                self.fx_date.set(d.date.clone());
            }
            None if current.is_some() => {
                fx.set(String::new());
                self.fx_date.set(String::new());
            }
            None => {}
        }
        if current.is_some() || back.is_some() {
            self.fx_dropped.set(current);
        }
    }

    /// The scenario with every refused field replaced by a stand-in, and
    /// the refused fields: what the outputs that do not depend on them are
    /// computed from. With no field refused, it is the form's scenario.
    pub fn lenient(&self, l: Locale) -> (Scenario, Vec<Field>) {
        let blocked: Vec<Field> = self.problems(l).into_iter().map(|(f, _)| f).collect();
        let risk_blocked = Field::RISK.iter().any(|f| blocked.contains(f));
        let values: Vec<Option<Decimal>> = Field::ALL
            .into_iter()
            .map(|f| {
                let read = self.read(f, l).ok().flatten();
                if blocked.contains(&f) || (risk_blocked && Field::RISK.contains(&f)) {
                    // A risk block with a refused field still shows the
                    // outputs its valid fields give, so all four get a value.
                    return Some(read.unwrap_or_else(|| f.stand_in()));
                }
                read
            })
            .collect();
        let s =
            Scenario::from_values(|f| values[idx(f)], self.choices(), false).unwrap_or_default();
        (self.with_meta(s), blocked)
    }

    /// Back to the reference scenario.
    pub fn reset(&self, l: Locale) {
        let r = Form::from_scenario(&Scenario::default(), l);
        for f in Field::ALL {
            self.text(f).set(r.text(f).get_untracked());
        }
        self.unit.set(PriceUnit::PerThousand);
        self.price_currency.set(Currency::Brl);
        self.revenue_currency.set(Currency::Brl);
        self.fx_date.set(String::new());
        self.model.set(None);
        self.fx_dropped.set(None);
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
        if let Some(mut d) = self.fx_dropped.get_untracked() {
            if let Ok(v) = parse_decimal(&d.rate, from) {
                d.rate = display_text(Field::Fx, v, to);
                self.fx_dropped.set(Some(d));
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
        for f in Field::PRICES {
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
        // Compared as scenarios: a scenario saved as a v1 link is the same
        // scenario as its v2 spelling.
        Some(v) if saved_query(v) == q => {
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

/// A saved scenario's query in this build's spelling (v2), whatever version
/// it was saved in.
fn saved_query(v: &SavedView) -> String {
    Scenario::from_query(v.query.split('&').filter_map(|kv| kv.split_once('=')))
        .map(|s| s.to_query())
        .unwrap_or_else(|_| v.query.clone())
}

/// Percent-encodes free text (a scenario's name) for a query value: every
/// byte but letters, digits and `-._~`.
pub fn encode_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
    // Every field read and checked once per change: the scenario (with
    // stand-ins for refused fields), its outputs, and the refused fields.
    let lenient = Memo::new(move |_| {
        let (s, blocked) = form.lenient(locale.get());
        let outputs = s.compute().ok();
        (s, outputs, blocked)
    });
    // The scenario while every field agrees.
    let scenario =
        Memo::new(move |_| lenient.with(|(s, _, blocked)| blocked.is_empty().then(|| s.clone())));
    // The last scenario every field agreed on: what links and exports keep
    // while a field is being fixed (None until there is one).
    let last_valid = Memo::new(move |prev: Option<&Option<Scenario>>| {
        scenario.get().or_else(|| prev.cloned().flatten())
    });
    let saved_for_href = saved.clone();
    let href = Memo::new(move |_| {
        last_valid
            .get()
            .map(|s| scenario_href(&s, saved_for_href.as_ref(), locale.get()))
    });
    let query = Memo::new(move |_| last_valid.get().map(|s| s.to_query()));
    // The saved scenario while the inputs still hold it (id, name): the CSV
    // is named after it, the comparison names its column by it, and its
    // banner shows; an edit makes a new scenario and they let go.
    let saved_for_unchanged = saved.clone();
    let unchanged = Signal::derive(move || {
        let q = query.get()?;
        saved_for_unchanged
            .as_ref()
            .filter(|v| saved_query(v) == q)
            .map(|v| (v.id.clone(), v.name.clone()))
    });
    let stale = Signal::derive(move || scenario.with(Option::is_none));
    // The charts' figures (image, caption, controls, table): the server
    // writes them, in the page and at `/charts/figures?<query>`. Once the
    // inputs have been still for about 300 ms the browser fetches the new
    // figures, whose images the server then draws, so typing a number costs
    // one drawing, not one per keystroke, and the wasm carries no chart
    // code. While a field is refused the charts step aside (the results
    // say why).
    #[cfg(feature = "ssr")]
    let charts = RwSignal::new(lenient.with_untracked(|(s, o, blocked)| match o {
        Some(o) if blocked.is_empty() => crate::charts::charts_html(s, o, locale.get_untracked()),
        _ => String::new(),
    }));
    // Hydration keeps the server's markup (it never rewrites inner HTML),
    // and an update rewrites it only when the text differs from the last
    // one set: starting from a text no update sets, the first one (the
    // empty text of a refused field included) always reaches the page.
    #[cfg(not(feature = "ssr"))]
    let charts = RwSignal::new("<!-- the server's figures -->".to_owned());
    #[cfg(feature = "hydrate")]
    {
        let timer = StoredValue::new(None::<leptos::leptos_dom::helpers::TimeoutHandle>);
        let latest = StoredValue::new(String::new());
        Effect::watch(
            move || {
                let query = lenient.with(|(s, o, blocked)| {
                    (o.is_some() && blocked.is_empty()).then(|| s.to_query())
                });
                (query, locale.get())
            },
            move |(query, l), _, _| {
                if let Some(t) = timer.get_value() {
                    t.clear();
                }
                let url = query
                    .as_ref()
                    .map(|q| format!("/charts/figures?{q}&lang={}", l.tag()))
                    .unwrap_or_default();
                latest.set_value(url.clone());
                // A refused field takes the charts away at once, with the
                // results: a chart of the previous numbers would read as
                // the current ones.
                if url.is_empty() {
                    charts.set(String::new());
                    return;
                }
                let handle = leptos::leptos_dom::helpers::set_timeout_with_handle(
                    move || {
                        leptos::task::spawn_local(async move {
                            // A slower answer for an older scenario is dropped.
                            if let Some(html) = crate::browser::fetch_text(&url).await {
                                if latest.get_value() == url {
                                    charts.set(html);
                                }
                            }
                        });
                    },
                    std::time::Duration::from_millis(300),
                );
                timer.set_value(handle.ok());
            },
            false,
        );
    }

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

    // Restoring the reference scenario discards what was typed: the page
    // asks first, and keeps the typed contract one Back away.
    #[cfg(feature = "hydrate")]
    crate::browser::reload_on_back();
    let reset = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let l = locale.get_untracked();
            let typed = lenient.with_untracked(|(s, _, blocked)| {
                !blocked.is_empty() || s.to_query() != Scenario::default().to_query()
            });
            if typed {
                let ok = crate::browser::confirm(tr(
                    l,
                    "Descartar o contrato digitado e voltar ao cenário de referência? (Voltar, no navegador, traz o contrato de volta.)",
                    "Discard the contract you typed and go back to the reference scenario? (The browser's Back brings the contract back.)",
                ));
                if !ok {
                    return;
                }
                crate::browser::keep_in_history();
            }
        }
        form.reset(locale.get_untracked());
    };
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let sym = move |c: Currency| c.symbol(locale.get()).to_owned();
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
                format_price(converted, l, form.price_currency.get())
            ))
        }
    };
    let needs_rate = move || form.price_currency.get() != form.revenue_currency.get();
    let rate_label = move || {
        let l = locale.get();
        format!(
            "{} — {} 1 = {} ?",
            field_label(Field::Fx, l),
            form.price_currency.get().symbol(l),
            form.revenue_currency.get().symbol(l),
        )
    };
    // Why the rate field is empty after a change of currency.
    let dropped_note = move || {
        let l = locale.get();
        let d = form.fx_dropped.get()?;
        let (pc, rc) = (form.price_currency.get(), form.revenue_currency.get());
        if !form.text(Field::Fx).get().trim().is_empty() || (d.from, d.to) == (pc, rc) {
            return None;
        }
        Some(format!(
            "{} {} 1 = {} {} {} {}→{}; {} {} 1 {} {}.",
            tr(l, "A taxa", "The rate"),
            d.from.symbol(l),
            d.to.symbol(l),
            d.rate,
            tr(l, "foi descartada: era do par", "was dropped: it was for"),
            d.from.code(),
            d.to.code(),
            tr(l, "informe quanto vale", "enter what"),
            pc.symbol(l),
            tr(l, "em", "is worth in"),
            rc.symbol(l),
        ))
    };
    let price_suffix =
        Signal::derive(move || format!("{} {}", sym(form.price_currency.get()), unit_label()));
    let revenue_suffix = Signal::derive(move || sym(form.revenue_currency.get()));
    let pct = Signal::derive(|| "%".to_owned());
    let tokens = Signal::derive(move || t("tokens", "tokens").to_owned());
    let none = Signal::derive(String::new);
    let field = move |f: Field, suffix: Signal<String>| {
        view! { <NumberField form field=f suffix/> }
    };
    let currency_select = move |id: &'static str,
                                name: &'static str,
                                signal: RwSignal<Currency>| {
        view! {
            <select id=id name=name
                on:change=move |ev| {
                    let c = Currency::from_code(&event_target_value(&ev)).unwrap_or_default();
                    form.set_currency(name == "pc", c);
                    if name == "pc" {
                        form.model.set(None);
                    }
                }>
                {[Currency::Brl, Currency::Usd, Currency::Eur].map(|c| view! {
                    <option value=c.code() selected=move || signal.get() == c>{move || currency_name(c, locale.get())}</option>
                })}
            </select>
        }
    };
    let model_note = move || {
        let l = locale.get();
        form.model.get().map(|(m, date)| {
            let date = date.unwrap_or_else(|| "?".into());
            format!(
                "{} {m} {} {date} (genai-prices). {}",
                tr(l, "Preços de", "Prices of"),
                tr(l, "na tabela de", "in the table of"),
                tr(
                    l,
                    "Editar um preço desfaz o vínculo com o modelo.",
                    "Editing a price unlinks the model."
                ),
            )
        })
    };
    let picker_href = move || {
        let q = query.get().unwrap_or_else(|| "v=2".to_owned());
        format!(
            "/prices?back={}&lang={}",
            encode_param(&q),
            locale.get().tag()
        )
    };

    let save_disabled = move || query.get().is_none();
    let saved_banner = saved.clone().map(|v| {
        let id = v.id.clone();
        view! {
            <p class="saved-banner" id="saved-banner" hidden=move || unchanged.with(Option::is_none)>
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

    // What the server says about the link itself, written once by the
    // server in both languages (CSS shows the page's): where "use these
    // numbers" came from, or why the link is not a scenario. Hydration keeps
    // the server's markup, so none of it is in the wasm.
    let notices = notices_html(&initial);
    view! {
        // Filled in by public/page.js (date, link, saved name); set as inner
        // HTML so hydration leaves what the script wrote.
        <p class="print-meta" id="print-meta" inner_html=String::new()></p>
        <h1><T pt="Quanto custa uma chamada que executa duas vezes" en="What a call that runs twice costs"/></h1>
        {saved_banner}
        <div class="notices bi" inner_html=notices></div>
        <Headline lenient/>
        <form class="calculator" method="get" action="/">
            <input type="hidden" name=TYPED_KEY value="1"/>
            <input type="hidden" name="v" value="2"/>
            <input type="hidden" name="lang" value=move || locale.get().tag()/>
            <input type="hidden" name="m" value=move || form.model.get().map(|(m, _)| m).unwrap_or_default()/>
            <input type="hidden" name="md" value=move || form.model.get().and_then(|(_, d)| d).unwrap_or_default()/>
            <fieldset>
                <legend><T pt="Volume" en="Volume"/></legend>
                {field(Field::Conversations, none)}
                {field(Field::Calls, none)}
            </fieldset>
            <fieldset>
                <legend><T pt="Tokens por chamada" en="Tokens per call"/></legend>
                {field(Field::TokensIn, tokens)}
                {field(Field::CachedShare, pct)}
                {field(Field::TokensOut, tokens)}
            </fieldset>
            <fieldset>
                <legend><T pt="Preços dos tokens" en="Token prices"/></legend>
                <div class="field">
                    <label for="in-pc"><T pt="Moeda dos preços" en="Price currency"/></label>
                    {currency_select("in-pc", "pc", form.price_currency)}
                </div>
                <div class="field">
                    <label for="in-u"><T pt="Preços cotados" en="Prices quoted"/></label>
                    <select id="in-u" name="u"
                        on:change=move |ev| {
                            let unit = if event_target_value(&ev) == "1m" { PriceUnit::PerMillion } else { PriceUnit::PerThousand };
                            form.set_unit(unit, locale.get_untracked());
                        }>
                        <option value="1k" selected=move || form.unit.get() == PriceUnit::PerThousand><T pt="por 1k tokens" en="per 1k tokens"/></option>
                        <option value="1m" selected=move || form.unit.get() == PriceUnit::PerMillion><T pt="por 1M tokens" en="per 1M tokens"/></option>
                    </select>
                </div>
                <NumberField form field=Field::PriceIn suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceIn))/>
                <NumberField form field=Field::PriceCached suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceCached))/>
                <NumberField form field=Field::PriceOut suffix=price_suffix hint=Signal::derive(price_equivalent(Field::PriceOut))/>
                <p class="hint" id="model-note">{model_note}</p>
                <p class="field-error" id="model-check" inner_html=model_notice()></p>
                <p><a id="model-picker" rel="external" href=picker_href><T pt="Preencher com os preços de um modelo…" en="Fill in a model's prices…"/></a></p>
            </fieldset>
            <fieldset>
                <legend><T pt="Receita" en="Revenue"/></legend>
                <div class="field">
                    <label for="in-rc"><T pt="Moeda da receita e dos resultados" en="Revenue and results currency"/></label>
                    {currency_select("in-rc", "rc", form.revenue_currency)}
                </div>
                {field(Field::Ticket, revenue_suffix)}
                <Show when=needs_rate>
                    <NumberField form field=Field::Fx suffix=revenue_suffix label=Signal::derive(rate_label)/>
                    <p class="field-error" id="fx-dropped" role="status" hidden=move || dropped_note().is_none()>{dropped_note}</p>
                    <div class="field">
                        <label for="in-pd"><T pt="Data do câmbio" en="Exchange rate date"/></label>
                        <input id="in-pd" name="pd" type="date" value=form.fx_date.get_untracked()
                            prop:value=move || form.fx_date.get()
                            aria-invalid=move || form.date_problem(locale.get()).is_some().then_some("true")
                            aria-describedby="err-pd"
                            on:input=move |ev| form.fx_date.set(event_target_value(&ev))/>
                        <p class="field-error" id="err-pd" hidden=move || form.date_problem(locale.get()).is_none()>{move || form.date_problem(locale.get())}</p>
                    </div>
                </Show>
            </fieldset>
            <fieldset>
                <legend><T pt="Duplicatas" en="Duplicates"/></legend>
                {field(Field::DuplicateRate, pct)}
                {field(Field::DupCacheShare, pct)}
                <p class="hint"><T pt="Uma duplicata repete a chamada cuja entrega se repetiu, não a conversa inteira." en="A duplicate repeats the call whose delivery was repeated, not the whole conversation."/></p>
            </fieldset>
            <fieldset class="risk">
                <legend><T pt="Risco financeiro (opcional)" en="Financial risk (optional)"/></legend>
                {field(Field::MoneyShare, pct)}
                {field(Field::AvgCharge, revenue_suffix)}
                {field(Field::OpsCost, revenue_suffix)}
                {field(Field::ClaimRate, pct)}
            </fieldset>
            <div class="actions">
                <noscript><button type="submit"><T pt="Calcular" en="Calculate"/></button></noscript>
                <button type="button" id="reset" on:click=reset><T pt="Restaurar cenário de referência" en="Restore the reference scenario"/></button>
            </div>
        </form>
        <ShareBar href query stale unchanged save_disabled=Signal::derive(save_disabled)/>
        <section class="results" aria-live="polite">
            <h2><T pt="Resultados" en="Results"/></h2>
            {move || {
                let (s, o, blocked) = lenient.get();
                match o {
                    None => view! { <p class="scenario-error" role="alert">{problem_text(Problem::TooLarge, locale.get())}</p> }.into_any(),
                    Some(o) => view! { <Results scenario=s outputs=o blocked/> }.into_any(),
                }
            }}
            <Charts html=charts.into()/>
        </section>
    }
}

/// Markup in both languages, the one the page is not in hidden by the
/// stylesheet (`.bi [lang]`), so switching the language in place needs no
/// copy of the text in the wasm.
#[cfg(feature = "ssr")]
pub fn bilingual(pt: &str, en: &str) -> String {
    use crate::markup::esc;
    format!(
        "<span lang=\"pt-BR\">{}</span><span lang=\"en-US\">{}</span>",
        esc(pt),
        esc(en)
    )
}

/// The notices above the form (server only; empty in the browser, where
/// hydration keeps the server's): the live monitor's banner, and why a link
/// is not a scenario when no field can say it (a version, currency, unit,
/// model id or date it cannot take; the server answers such a link 422).
fn notices_html(initial: &[(String, String)]) -> String {
    #[cfg(feature = "ssr")]
    {
        let mut out = String::new();
        let pairs = || initial.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let read = Scenario::from_query(pairs());
        if let Some(origin) = live_origin(initial) {
            let start = read.as_ref().ok();
            out.push_str(&format!(
                "<p class=\"saved-banner\" id=\"live-banner\">{}</p>",
                bilingual(
                    &origin.text(start, Locale::PtBr),
                    &origin.text(start, Locale::EnUs)
                )
            ));
        }
        let typed = initial.iter().any(|(k, _)| k == TYPED_KEY);
        if let (Err(e), false) = (&read, typed) {
            // Refused fields, and a rate's date, are said under the field.
            if !matches!(
                e,
                idem_core::scenario::QueryError::Fields(_)
                    | idem_core::scenario::QueryError::Date(_)
            ) {
                let why = |l| {
                    format!(
                        "{}: {}",
                        tr(
                            l,
                            "Este link não é um cenário",
                            "This link is not a scenario"
                        ),
                        crate::i18n::query_error_text(e, l)
                    )
                };
                out.push_str(&format!(
                    "<p class=\"scenario-error\" id=\"link-error\" role=\"alert\">{}</p>",
                    bilingual(&why(Locale::PtBr), &why(Locale::EnUs))
                ));
            }
        }
        out
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = initial;
        String::new()
    }
}

/// A field's help line in both languages (server only, like the notices).
fn help_html(f: Field) -> String {
    #[cfg(feature = "ssr")]
    {
        bilingual(
            crate::i18n::field_help(f, Locale::PtBr),
            crate::i18n::field_help(f, Locale::EnUs),
        )
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = f;
        String::new()
    }
}

/// Where a scenario came from when the live monitor's "use these numbers"
/// opened it (`src=live` and its `lw`, `li`, `lt`, `la` keys).
#[cfg(feature = "ssr")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveOrigin {
    window: String,
    intents: String,
    tenant: Option<String>,
    action: Option<String>,
}

/// The live monitor's provenance keys of a link, if it came from there.
#[cfg(feature = "ssr")]
pub fn live_origin(pairs: &[(String, String)]) -> Option<LiveOrigin> {
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    (get("src")?.as_str() == "live").then(|| LiveOrigin {
        window: get("lw").unwrap_or_default(),
        intents: get("li").unwrap_or_default(),
        tenant: get("lt").filter(|t| !t.is_empty()),
        action: get("la").filter(|a| !a.is_empty()),
    })
}

#[cfg(feature = "ssr")]
impl LiveOrigin {
    /// The banner: what came from the monitor, how the window was scaled,
    /// and which inputs are still the reference scenario's.
    pub fn text(&self, s: Option<&Scenario>, l: Locale) -> String {
        let (window, factor) = match self.window.as_str() {
            "24h" => (tr(l, "últimas 24 h", "last 24 h"), "×30"),
            "7d" => (tr(l, "últimos 7 dias", "last 7 days"), "×30/7"),
            "30d" => (tr(l, "últimos 30 dias", "last 30 days"), "×1"),
            _ => (tr(l, "janela desconhecida", "unknown window"), "?"),
        };
        let all = tr(l, "todos", "all");
        let reference: Vec<&str> = s
            .map(|s| {
                Field::ALL
                    .into_iter()
                    .filter(|f| !matches!(f, Field::Conversations | Field::DuplicateRate))
                    .filter(|f| f.get(s).is_some() && f.get(s) == f.default_value())
                    .map(|f| field_label(f, l))
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "{} {}, {} {}, {window}: {} {} ({factor}) {}. {} {}.",
            tr(l, "Números do monitor ao vivo — tenant", "Numbers from the live monitor — tenant"),
            self.tenant.as_deref().unwrap_or(all),
            tr(l, "ação", "action"),
            self.action.as_deref().unwrap_or(tr(
                l,
                "todas as de negócio (sem http e *)",
                "every business action (not http nor *)"
            )),
            self.intents,
            tr(l, "intenções escaladas para um mês", "intents scaled to a month"),
            tr(
                l,
                "= conversas por mês; taxa de duplicatas = intenções reentregues que o idem absorveu",
                "= conversations per month; duplicate rate = redelivered intents idem absorbed"
            ),
            tr(
                l,
                "Ainda valores de referência, ajuste ao seu contrato:",
                "Still reference values, set them to your contract:"
            ),
            reference.join(", "),
        )
    }
}

/// Link, copy, save, compare and export.
#[component]
fn ShareBar(
    href: Memo<Option<String>>,
    query: Memo<Option<String>>,
    stale: Signal<bool>,
    unchanged: Signal<Option<(String, String)>>,
    save_disabled: Signal<bool>,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    let copied = RwSignal::new(None::<bool>);
    let form_token = crate::form_token();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        crate::browser::copy_location(copied);
    };
    // With no valid scenario yet the links have no address at all, rather
    // than the reference scenario's.
    let q = move || query.get();
    view! {
        <section class="share" aria-label=move || t("Compartilhar", "Share")>
            {move || stale.get().then(|| view! {
                <p class="stale-note" id="stale-note" role="status">{move || if query.get().is_some() {
                    t("O link, a comparação e o CSV mantêm o último cenário válido até você corrigir os campos marcados.",
                      "The link, the comparison and the CSV keep the last valid scenario until you fix the marked fields.")
                } else {
                    t("Corrija os campos marcados para ter um link, a comparação e o CSV.",
                      "Fix the marked fields to get a link, the comparison and the CSV.")
                }}</p>
            })}
            <a id="share-link" rel="external" href=move || href.get()>
                <T pt="Link deste cenário" en="Link to this scenario"/>
            </a>
            <button type="button" id="copy-link" on:click=copy><T pt="Copiar link" en="Copy link"/></button>
            <span class="copy-status" role="status">
                {move || copied.get().map(|ok| if ok {
                    t("Link copiado.", "Link copied.")
                } else {
                    t("Não consegui copiar: copie o endereço da barra.", "Could not copy: copy the address bar instead.")
                })}
            </span>
            <form class="save" method="post" action="/s">
                <input type="hidden" name=crate::FORM_FIELD value=form_token/>
                <input type="hidden" name="q" value=move || q().unwrap_or_default()/>
                <input type="hidden" name="lang" value=move || locale.get().tag()/>
                <label for="save-name"><T pt="Nome (opcional)" en="Name (optional)"/></label>
                <input id="save-name" name="name" type="text" maxlength="80" autocomplete="off"/>
                <button type="submit" id="save" disabled=save_disabled><T pt="Salvar cenário" en="Save scenario"/></button>
            </form>
            <a id="compare-link" rel="external" href=move || q().map(|q| match unchanged.get() {
                Some((id, _)) => format!("/compare?s={id}"),
                None => format!("/compare?s={}", encode_param(&q)),
            })>
                <T pt="Comparar com outro cenário" en="Compare with another scenario"/>
            </a>
            <a id="export-csv" rel="external" download=""
                href=move || q().map(|q| {
                    let name = unchanged.get().filter(|(_, n)| !n.is_empty()).map(|(_, n)| format!("&name={}", encode_text(&n))).unwrap_or_default();
                    format!("/export.csv?{q}&lang={}{name}", locale.get().tag())
                })>
                <T pt="Exportar CSV" en="Export CSV"/>
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
                    on:input=move |ev| {
                        text.set(event_target_value(&ev));
                        // A price typed by hand is no longer the table's.
                        if field.in_price_currency() {
                            form.model.set(None);
                        }
                    }
                    aria-invalid=move || if error().is_some() { "true" } else { "false" }
                    aria-describedby=format!("help-{}", field.key())
                />
                <span class="suffix">{move || suffix.get()}</span>
            </div>
            <p class="help bi" id=format!("help-{}", field.key()) inner_html=help_html(field)></p>
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

/// The caveat of the claim exposure: an estimate under CDC art. 42 and the
/// assumptions it rests on.
pub fn claim_caveat(claim_rate_pct: Decimal, l: Locale) -> String {
    format!(
        "{} {} {}",
        tr(
            l,
            "Estimativa, não parecer jurídico: supõe que",
            "An estimate, not legal advice: it assumes"
        ),
        format_pct(claim_rate_pct, l),
        tr(
            l,
            "das cobranças em dobro viram reclamação e que cada uma é restituída em dobro (CDC art. 42, parágrafo único), sem engano justificável reconhecido: 2 × o valor cobrado a mais, menos o 1 × que o estorno devolveria de todo modo, é o custo líquido contado aqui, (2 − 1) × o valor; o resultado real depende de decisão judicial.",
            "of the double charges become a claim and that each is refunded in double (Brazil's consumer code, CDC art. 42, sole paragraph), with no justifiable error recognised: 2 × the amount overcharged, less the 1 × a refund would return anyway, is the net extra cost counted here, (2 − 1) × the amount; the real outcome depends on a court's judgement."
        )
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
    if o.cost_per_duplicate_call != o.cost_per_call {
        rows.push(Row {
            key: "cost_per_duplicate_call",
            label: tr(l, "Custo da chamada repetida", "Cost of a repeated call"),
            value: unit_cost(o.cost_per_duplicate_call),
            formula: call_formula(i.dup_cache_share_pct),
            exact: c(o.cost_per_duplicate_call),
            unit: code,
            note: None,
        });
    }
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
                note: Some(claim_caveat(ri.claim_rate_pct, l)),
                ..money_row(
                    "monthly_claim_exposure",
                    tr(
                        l,
                        "Exposição a reclamações por mês (estimativa, CDC art. 42)",
                        "Claim exposure per month (estimate, CDC art. 42)",
                    ),
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

/// The outputs the headline repeats, in its order: what the month wastes,
/// its share of revenue, the year's loss, the break-even and, with the risk
/// block, the year's total.
pub const HEADLINE: [&str; 5] = [
    "monthly_token_waste",
    "waste_share_of_revenue_pct",
    "annual_token_waste",
    "break_even_conversations",
    "annual_total_cost",
];

/// The headline: the few numbers a reader came for, above the inputs (kept
/// in view on a wide screen while the inputs scroll, first on a phone and on
/// paper). Same rows, values and refusals as the results below.
#[component]
fn Headline(lenient: Memo<(Scenario, Option<CostOutputs>, Vec<Field>)>) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    view! {
        <section class="headline" id="headline" aria-label=move || tr(locale.get(), "Resumo", "Summary")>
            {move || {
                let l = locale.get();
                lenient.with(|(s, o, blocked)| {
                    o.as_ref().map(|o| rows(s, o, l)
                        .into_iter()
                        .filter(|r| HEADLINE.contains(&r.key))
                        .map(|r| {
                            let waiting = depends_on(r.key).into_iter().any(|f| blocked.contains(&f));
                            let value = if waiting { "—".to_owned() } else { r.value };
                            view! {
                                <div class="headline-item" data-key=r.key>
                                    <span class="label">{r.label}</span>
                                    <strong id=format!("head-{}", r.key)>{value}</strong>
                                </div>
                            }
                        })
                        .collect_view())
                })
            }}
        </section>
    }
}

#[component]
fn Results(scenario: Scenario, outputs: CostOutputs, blocked: Vec<Field>) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || {
        let l = locale.get();
        let risk_missing = outputs.risk.is_none();
        let charts_blocked = !blocked.is_empty();
        view! {
            <dl class="outputs">
                {rows(&scenario, &outputs, l)
                    .into_iter()
                    .map(|r| {
                        let blockers: Vec<&str> = depends_on(r.key)
                            .into_iter()
                            .filter(|f| blocked.contains(f))
                            .map(|f| field_label(f, l))
                            .collect();
                        let (value, formula) = if blockers.is_empty() {
                            (r.value.clone(), format!("{} = {}", r.formula, r.value))
                        } else {
                            ("—".to_owned(), format!("{}: {}", tr(l, "aguarda o campo", "waiting for"), blockers.join(", ")))
                        };
                        // Every digit, in the page's notation (a point
                        // in "90.006" reads as thousands in Portuguese).
                        let title = parse_canonical(&r.exact)
                            .filter(|_| blockers.is_empty())
                            .map(|d| format!("{}: {}", tr(l, "valor exato", "exact value"), format_decimal(d, l, 0, 28)));
                        view! {
                            <div class="output" data-key=r.key data-blocked=(!blockers.is_empty()).then_some("true")>
                                <dt>{r.label}</dt>
                                <dd>
                                    <span class="value" id=format!("out-{}", r.key) title=title>{value}</span>
                                    <span class="formula">{formula}</span>
                                    {r.note.clone().filter(|_| blockers.is_empty()).map(|n| view! { <span class="note">{n}</span> })}
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
            {charts_blocked.then(|| view! {
                <p class="note" id="charts-blocked">{tr(l,
                    "Os gráficos voltam quando todos os campos forem válidos.",
                    "The charts come back when every field is valid.")}</p>
            })}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
