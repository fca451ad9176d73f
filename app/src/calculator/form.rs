//! The calculator's editable state: what the person typed, field by
//! field, read into a scenario, and the links and queries it becomes.

use crate::i18n::{date_problem_text, number_hint, problem_text, wrong_currency_text};
use crate::SavedView;
use idem_core::cost::PriceUnit;
use idem_core::date::{format_date, read_typed_date};
use idem_core::locale::{
    format_decimal, parse_decimal, read_in, read_marking, Currency, Locale, Marking,
};
use idem_core::scenario::{
    is_iso_date, is_model_id, parse_canonical, read_date, read_dropped_rate, Choices, Field, Kind,
    Problem, Scenario,
};
use leptos::prelude::*;
use rust_decimal::Decimal;

/// The query key that marks values as typed by a person in the page's
/// locale (a form submitted without JavaScript) rather than canonical.
pub const TYPED_KEY: &str = "t";

pub(crate) fn idx(f: Field) -> usize {
    f.index()
}

/// A value as the field shows it in `locale`: every decimal the field
/// keeps, so showing a value never rounds it. Money shows at least its
/// currency's minor units (`c`: TND 2,750, ISK 95, BRL 1,20), exchange
/// rates at least two decimals, as they are quoted (a rate typed `6,10`
/// comes back `6,10`, not `6,1`).
pub fn display_text(f: Field, v: Decimal, l: Locale, c: Currency) -> String {
    match f.kind() {
        Kind::Money => format_decimal(v, l, c.minor_units(), 28),
        Kind::Rate => format_decimal(v, l, 2, 28),
        _ => format_decimal(v, l, 0, 28),
    }
}

/// A field's value as a scenario's field shows it (money in the
/// scenario's currency for the field).
pub fn scenario_text(f: Field, v: Decimal, s: &Scenario, l: Locale) -> String {
    let i = &s.inputs;
    display_text(
        f,
        v,
        l,
        currency_in(f, i.price_currency, i.revenue_currency),
    )
}

/// The currency a money field of a scenario is in.
fn currency_in(f: Field, price: Currency, revenue: Currency) -> Currency {
    if f.in_price_currency() {
        price
    } else {
        revenue
    }
}

/// The calculator's editable state: what the person typed, field by field,
/// kept verbatim while they type.
#[derive(Clone, Copy)]
pub struct Form {
    texts: [RwSignal<String>; Field::ALL.len()],
    /// What prices are quoted per.
    pub unit: RwSignal<PriceUnit>,
    /// The currency of the token prices.
    pub price_currency: RwSignal<Currency>,
    /// The currency of revenue and results.
    pub revenue_currency: RwSignal<Currency>,
    /// The day the exchange rate was quoted, as typed in the page's
    /// language (`04/12/2026`, `4 Dec 2026`) or empty.
    pub fx_date: RwSignal<String>,
    /// The price-table model the prices came from, and the table's date;
    /// cleared when a price is edited by hand.
    pub model: RwSignal<Option<(String, Option<String>)>>,
    /// The rate a change of currency dropped, kept to say so (and to give
    /// it back if the reader returns to its pair); never in a figure.
    pub fx_dropped: RwSignal<Option<DroppedRate>>,
    /// A price currency a link named that is not one (`pc=XYZ`, a
    /// withdrawn `HRK`), as it was written (empty when there is none),
    /// until the person picks one: no figure is given in a currency the
    /// link did not name. (A text signal, the type the fields use, keeps
    /// the wasm from carrying another signal type.)
    pub bad_price_currency: RwSignal<String>,
    /// The same for the revenue currency (`rc`).
    pub bad_revenue_currency: RwSignal<String>,
    /// The latest day a rate may be dated (`crate::latest_today`), empty
    /// when unknown.
    pub today: RwSignal<String>,
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
        let (pc, rc) = (s.inputs.price_currency, s.inputs.revenue_currency);
        let texts = Field::ALL.map(|f| {
            RwSignal::new(
                f.get(s)
                    .map(|v| display_text(f, v, l, currency_in(f, pc, rc)))
                    .unwrap_or_default(),
            )
        });
        Form {
            texts,
            unit: RwSignal::new(s.inputs.price_unit),
            price_currency: RwSignal::new(s.inputs.price_currency),
            revenue_currency: RwSignal::new(s.inputs.revenue_currency),
            fx_date: RwSignal::new(
                s.fx_date
                    .as_deref()
                    .map(|d| format_date(d, l))
                    .unwrap_or_default(),
            ),
            model: RwSignal::new(s.model.clone().map(|m| (m, s.model_date.clone()))),
            fx_dropped: RwSignal::new(None),
            bad_price_currency: RwSignal::new(String::new()),
            bad_revenue_currency: RwSignal::new(String::new()),
            today: RwSignal::new(crate::latest_today()),
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
                    rate: display_text(Field::Fx, rate, l, to),
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
        if let Some(u) = get("u").and_then(|u| u.parse().ok()) {
            form.unit.set(u);
        }
        let price_code =
            get("pc").or_else(|| get("cur").filter(|_| get("v").is_some_and(|v| v == "1")));
        // A key the link carries twice (`rc=BHD…&rc=USD`) is never read as
        // its last value: the notice above the form says why, and what the
        // key decides waits (a currency's figures, a field's value).
        let all = |key: &str| -> Vec<&String> {
            pairs
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v)
                .collect()
        };
        let twice = |key: &str| {
            let values = all(key);
            (values.len() > 1).then(|| {
                values
                    .iter()
                    .map(|v| v.chars().take(16).collect::<String>())
                    .collect::<Vec<_>>()
                    .join(" / ")
            })
        };
        for (key, code, signal, bad) in [
            (
                "pc",
                price_code,
                form.price_currency,
                form.bad_price_currency,
            ),
            (
                "rc",
                get("rc"),
                form.revenue_currency,
                form.bad_revenue_currency,
            ),
        ] {
            if let Some(both) = twice(key) {
                bad.set(both);
                continue;
            }
            match code.map(|c| (c, Currency::from_code(c))) {
                Some((_, Some(c))) => signal.set(c),
                Some((code, None)) => bad.set(code.chars().take(16).collect()),
                None => {}
            }
        }
        if let Some(d) = get("pd") {
            // Typed on the page: kept as typed, read in the page's
            // language. In a link: the ISO date (or the pt-BR form older
            // links carry), shown in the page's language.
            let shown = match read_date(d) {
                Some(iso) if !typed => format_date(&iso, l),
                _ => d.clone(),
            };
            form.fx_date.set(shown);
        }
        let (pc, rc) = (
            form.price_currency.get_untracked(),
            form.revenue_currency.get_untracked(),
        );
        for f in Field::ALL {
            if let Some(both) = twice(f.key()) {
                form.text(f).set(both);
                continue;
            }
            if let Some(v) = get(f.key()) {
                let text = match parse_canonical(v) {
                    Some(d) if !typed => display_text(f, d, l, currency_in(f, pc, rc)),
                    _ => v.clone(),
                };
                form.text(f).set(text);
            }
        }
        if !form.bad_price_currency.get_untracked().is_empty()
            || !form.bad_revenue_currency.get_untracked().is_empty()
        {
            // The link's rate was quoted for a currency that cannot be
            // used: it never enters a figure in another one.
            form.text(Field::Fx).set(String::new());
            form.fx_date.set(String::new());
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
        // "$3" in a block priced in pounds is a typo to point out, not a
        // number to reinterpret; "£2,40" there is the number 2,40.
        let expected = self.currency_of(f);
        let number = match read_marking(&text, expected) {
            Marking::None(t) => t.to_owned(),
            Marking::Matches(t) if f.kind() == Kind::Money => t,
            Marking::Other(m) if f.kind() == Kind::Money => {
                return Err(wrong_currency_text(&m, expected, l));
            }
            // A currency sign in a share, a rate or an average: the field
            // is no amount, so it names no currency (a percentage is never
            // "in BHD"). A count's letters are never a currency (`25k` is
            // thousands, not kyats): it is told how to write a number.
            Marking::Matches(_) => return Err(problem(Problem::WrongCurrency)),
            Marking::Other(m) if f.kind() != Kind::Count && looks_like_currency(&m) => {
                return Err(problem(Problem::WrongCurrency));
            }
            Marking::Other(_) => return Err(number_hint(l).to_owned()),
        };
        // The one reader every surface uses: an amount in a three-decimal
        // currency typed in the other notation (`37.125` dinars on the
        // Portuguese page) is refused with both readings, never read a
        // thousand times off.
        let money = (f.kind() == Kind::Money).then_some(expected);
        let read = match read_in(&number, l, money) {
            Err(idem_core::Error::AmbiguousNumber { pt_br, en_us, .. }) => {
                return Err(ambiguous_amount(&number, &pt_br, &en_us, expected, l));
            }
            r => r.map_err(|e| half_typed(&e, l).unwrap_or_else(|| number_hint(l).to_owned())),
        }
        .and_then(|v| f.check_typed(v).map_err(problem));
        // Refused here but a valid number in the other language's notation
        // ("12.500" conversations on the English page): say how to write
        // it on this page, rather than a rule the person did not break.
        read.map(Some)
            .map_err(|why| other_notation_hint(f, &number, l).unwrap_or(why))
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

    /// The money fields a currency the link named but cannot be used
    /// blocks: every figure in that currency waits for a choice.
    fn currency_blocked(&self) -> Vec<Field> {
        let mut out = Vec::new();
        if !self.bad_price_currency.with(String::is_empty) {
            out.extend(Field::PRICES);
            out.push(Field::Fx);
        }
        if !self.bad_revenue_currency.with(String::is_empty) {
            // An empty optional field (the risk block) has no figure to
            // block.
            out.extend(Field::ALL.into_iter().filter(|f| {
                f.kind() == Kind::Money
                    && !f.in_price_currency()
                    && (!f.optional() || !self.text(*f).get().trim().is_empty())
            }));
            out.push(Field::Fx);
        }
        out
    }

    /// The rate's date as an ISO date, if one is typed and reads as one day.
    pub fn fx_date_iso(&self, l: Locale) -> Option<String> {
        self.read_date(l).ok()
    }

    /// The rate's date as typed, read in `l`: a day after today is refused
    /// like one that names no day.
    fn read_date(&self, l: Locale) -> Result<String, idem_core::date::DateProblem> {
        let iso = read_typed_date(&self.fx_date.get(), l)?;
        idem_core::date::not_after(&iso, &self.today.get())?;
        Ok(iso)
    }

    fn with_meta(&self, mut s: Scenario, l: Locale) -> Scenario {
        s.fx_date = self.fx_date_iso(l).filter(|_| s.inputs.fx.is_some());
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
        if date.trim().is_empty() {
            return None;
        }
        self.read_date(l).err().map(|p| date_problem_text(&p, l))
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
        if price {
            self.bad_price_currency.set(String::new());
        } else {
            self.bad_revenue_currency.set(String::new());
        }
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
        let mut blocked: Vec<Field> = self.problems(l).into_iter().map(|(f, _)| f).collect();
        for f in self.currency_blocked() {
            if !blocked.contains(&f) {
                blocked.push(f);
            }
        }
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
        (self.with_meta(s, l), blocked)
    }

    /// Back to the reference scenario.
    pub fn reset(&self, l: Locale) {
        let r = Form::from_scenario(&Scenario::default(), l);
        for f in Field::ALL {
            self.text(f).set(r.text(f).get_untracked());
        }
        self.unit.set(PriceUnit::PerThousand);
        self.price_currency.set(Currency::BRL);
        self.revenue_currency.set(Currency::BRL);
        self.fx_date.set(String::new());
        self.model.set(None);
        self.fx_dropped.set(None);
        self.bad_price_currency.set(String::new());
        self.bad_revenue_currency.set(String::new());
    }

    /// Rewrites every readable field from one locale's notation to
    /// another's; a field that cannot be read is left as typed.
    pub fn relocalize(&self, from: Locale, to: Locale) {
        let (pc, rc) = (
            self.price_currency.get_untracked(),
            self.revenue_currency.get_untracked(),
        );
        // Only what the page reads is rewritten: a refused value (`48.240`
        // dinars, ambiguous on the Portuguese page) stays as typed, to be
        // refused in the new language too, never turned into a number the
        // person did not type.
        for f in Field::ALL {
            if let Ok(Some(v)) = untrack(|| self.read(f, from)) {
                self.text(f)
                    .set(display_text(f, v, to, currency_in(f, pc, rc)));
            }
        }
        if let Ok(iso) = read_typed_date(&self.fx_date.get_untracked(), from) {
            self.fx_date.set(format_date(&iso, to));
        }
        if let Some(mut d) = self.fx_dropped.get_untracked() {
            if let Ok(v) = parse_decimal(&d.rate, from) {
                d.rate = display_text(Field::Fx, v, to, d.to);
                self.fx_dropped.set(Some(d));
            }
        }
    }

    /// Switches the price unit, converting the prices so the scenario stays
    /// the same (R$ 0,015 per 1k is R$ 15,00 per 1M), or, with `relabel`,
    /// keeping the typed numbers under the new unit (the fix for prices
    /// typed per the other unit).
    pub fn set_unit(&self, unit: PriceUnit, relabel: bool, l: Locale) {
        let old = self.unit.get_untracked();
        if old == unit {
            return;
        }
        if relabel {
            self.unit.set(unit);
            return;
        }
        for f in Field::PRICES {
            let t = self.text(f);
            if let Some(v) = parse_decimal(&t.get_untracked(), l)
                .ok()
                .and_then(|v| old.convert(v))
            {
                t.set(display_text(f, v, l, self.price_currency.get_untracked()));
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
pub(crate) fn saved_query(v: &SavedView) -> String {
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

/// How to write `text` on a page in `l`, when it is refused there but is a
/// valid value of `f` in the other language's notation and uses a mark the
/// two read differently: "use 12,500 or 12500".
fn other_notation_hint(f: Field, text: &str, l: Locale) -> Option<String> {
    if !text.contains(['.', ',']) {
        return None;
    }
    let other = match l {
        Locale::PtBr => Locale::EnUs,
        Locale::EnUs => Locale::PtBr,
    };
    let v = parse_decimal(text, other).ok()?;
    let v = f.check_typed(v).ok()?;
    let places = v.normalize().scale();
    let grouped = format_decimal(v, l, places, places);
    let plain = grouped.replace(
        match l {
            Locale::PtBr => '.',
            Locale::EnUs => ',',
        },
        "",
    );
    Some(if grouped == plain {
        format!(
            "{} {grouped}",
            crate::i18n::tr(l, "nesta página, escreva", "on this page, write")
        )
    } else {
        format!(
            "{} {grouped} {} {plain}",
            crate::i18n::tr(l, "nesta página, escreva", "on this page, write"),
            crate::i18n::tr(l, "ou", "or"),
        )
    })
}

/// What to say of an amount a three-decimal currency makes ambiguous
/// (`37.125` on the Portuguese page): both readings, written as this page
/// writes them, so the person types the one meant. Built from the text
/// itself (the mark the page groups with, read as its decimal mark; or
/// three decimals added), which keeps the browser's build small.
fn ambiguous_amount(text: &str, pt_br: &str, en_us: &str, c: Currency, l: Locale) -> String {
    // Each reading with the currency's decimals, so the two differ on the
    // page (BHD 37,125 or BHD 37.125,000; JPY 1,2 or JPY 1.200), the
    // smaller first.
    let (x, y) = (
        idem_core::scenario::parse_canonical(pt_br).unwrap_or_default(),
        idem_core::scenario::parse_canonical(en_us).unwrap_or_default(),
    );
    let shown = |d| {
        format!(
            "{} {}",
            c.code(),
            idem_core::locale::format_decimal(d, l, c.minor_units().min(3), 28)
        )
    };
    let (a, b) = (shown(x.min(y)), shown(x.max(y)));
    match l {
        Locale::PtBr => format!(
            "`{}` pode ser {a} ou {b}: escreva o que quer dizer como está aqui",
            text.trim()
        ),
        Locale::EnUs => format!(
            "`{}` could be {a} or {b}: write the one you mean as shown here",
            text.trim()
        ),
    }
}

/// A half-typed number's own message (`48,`), in the page's language.
fn half_typed(e: &idem_core::Error, l: Locale) -> Option<String> {
    let idem_core::Error::Number { input, hint } = e else {
        return None;
    };
    let input = input.trim();
    hint.contains("ends in").then(|| match l {
        Locale::PtBr => {
            format!("`{input}` termina num separador: digite as casas depois dele, ou apague-o")
        }
        Locale::EnUs => format!("`{input}` ends in a mark: type the digits after it, or delete it"),
    })
}

/// Whether letters typed in a number field look like a currency (a code
/// or a symbol), so the message names the field's currency rather than
/// giving number advice.
fn looks_like_currency(marking: &str) -> bool {
    Currency::from_code(marking).is_some()
        || Currency::all().any(|c| {
            c.spellings()
                .iter()
                .any(|s| s.eq_ignore_ascii_case(marking))
        })
}
