//! The comparison (`/compare?s=…&s=…`, and a saved one at `/c/{id}`):
//! scenarios side by side with their deltas against the first, the chart
//! of their annual loss, and the forms to add a column or save the lot.
//! The server writes all of it (the browser never redraws it: switching
//! the language reloads the page), so the wasm carries no link reader.
//!
//! Also what the pages that read a comparison's columns share: the saved
//! ids among them (`/compare`, `/charts/compare.svg`), and the canonical
//! query a comparison is saved under (`POST /c`).

use crate::figures::{compare_columns, compare_figure, figure_html};
use crate::markup::scrolling;
use app::calculator::{encode_param, rows, Row};
use app::i18n::tr;
use app::{SavedView, FORM_FIELD};
use idem_core::locale::{
    format_count, format_decimal, format_money, format_price, format_unit_cost, Locale,
};
use idem_core::scenario::{is_link_key, is_saved_id, parse_canonical, Field, Scenario};
use maud::{html, Markup};
use rust_decimal::Decimal;

/// The comparison page's body: its heading, then the comparison, or why
/// it cannot be shown (`failed`: the saved scenarios cannot be read).
pub fn page(
    values: &[String],
    stored: Option<&PageComparison>,
    saved: &[SavedView],
    failed: bool,
    site: Option<&str>,
    form_token: &str,
    l: Locale,
) -> Markup {
    let refs: Vec<Ref> = values
        .iter()
        .filter_map(|s| parse_ref(s, site))
        .take(MAX_COLUMNS)
        .collect();
    html! {
        h1 { (tr(l, "Comparar cenários", "Compare scenarios")) }
        // A database that cannot be read is said as such: the columns it
        // would have filled are neither "not found" nor an empty comparison.
        @if failed {
            p class="scenario-error" id="compare-unavailable" role="alert" {
                (tr(l, "Não foi possível ler os cenários salvos agora. Tente de novo em instantes.", "Saved scenarios cannot be read right now. Try again in a moment."))
            }
        } @else {
            div class="compare-body" { (compare_html(&refs, saved, stored, form_token, l)) }
        }
    }
}

/// What one `s` value of a compare link names: a saved id, a scenario
/// query, or something else that was pasted (another site's address, a
/// truncated link), which the page refuses with a message.
#[derive(Clone, Debug, PartialEq)]
enum Ref {
    Saved(String),
    Query(String),
    Foreign(String),
}

/// The host an absolute address names (`https://host/…`, `//host/…`), or
/// `None` for a path or a bare query.
fn link_host(t: &str) -> Option<&str> {
    let rest = match t.split_once("://") {
        Some((scheme, rest)) if !scheme.contains(['/', '?', '&', '=']) => rest,
        _ => t.strip_prefix("//")?,
    };
    Some(rest.split(['/', '?', '#']).next().unwrap_or_default())
}

/// Reads what a person pasted: a saved link (`…/s/{id}`), a bare id, a
/// calculator link (`…/?v=2&…`) or a bare query. An absolute address of
/// another host than `site` (the page's own), an address whose path is not
/// the calculator's, or whose query has a key no scenario link uses, is
/// [`Ref::Foreign`]: read as a query it would have become the reference
/// scenario without a word, and another site's `/s/{id}` is another
/// site's scenario, not the one of that id here. With no `site`, every
/// absolute address is foreign.
fn parse_ref(text: &str, site: Option<&str>) -> Option<Ref> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let foreign = || Some(Ref::Foreign(t.to_owned()));
    if let Some(host) = link_host(t) {
        if !site.is_some_and(|s| !s.is_empty() && s.eq_ignore_ascii_case(host)) {
            return foreign();
        }
    }
    if let Some(pos) = t.find("/s/") {
        let id: String = t[pos + 3..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        return if is_saved_id(&id) {
            Some(Ref::Saved(id))
        } else {
            foreign()
        };
    }
    if is_saved_id(t) {
        return Some(Ref::Saved(t.to_owned()));
    }
    let t = t.split('#').next().unwrap_or(t);
    let (head, q) = match t.split_once('?') {
        Some((head, q)) => (head, q),
        None if t.contains("://") => return foreign(),
        None => ("", t),
    };
    let path = match head.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |i| &rest[i..]),
        None => head,
    };
    let scenario_keys = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').map(|(k, _)| is_link_key(k)))
        .collect::<Option<Vec<bool>>>();
    match scenario_keys {
        Some(keys)
            if (path.is_empty() || path == "/") && !keys.is_empty() && keys.iter().all(|k| *k) =>
        {
            Some(Ref::Query(q.to_owned()))
        }
        _ => foreign(),
    }
}

/// The saved-scenario ids among a compare page's `s` values, for the server
/// to look up before rendering.
pub fn saved_ids<'a>(values: impl IntoIterator<Item = &'a str>, site: Option<&str>) -> Vec<String> {
    values
        .into_iter()
        .filter_map(|v| parse_ref(v, site))
        .take(MAX_COLUMNS)
        .filter_map(|r| match r {
            Ref::Saved(id) if is_saved_id(&id) => Some(id),
            _ => None,
        })
        .collect()
}

/// The most scenarios one comparison shows.
pub const MAX_COLUMNS: usize = 12;

impl Ref {
    fn param(&self) -> String {
        match self {
            Ref::Saved(id) => id.clone(),
            Ref::Query(q) | Ref::Foreign(q) => encode_param(q),
        }
    }

    /// The reference as the page names it in a message.
    fn shown(&self) -> String {
        let text = match self {
            Ref::Saved(id) => format!("/s/{id}"),
            Ref::Query(q) => format!("/?{q}"),
            Ref::Foreign(t) => t.clone(),
        };
        match text.char_indices().nth(60) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }
}

/// One column of the comparison.
struct Column {
    /// The saved scenario's name, where it has one.
    name: Option<String>,
    href: String,
    scenario: Result<Scenario, String>,
}

impl Column {
    /// The column's heading: its saved name, else a letter by position.
    fn label(&self, i: usize, l: Locale) -> String {
        self.name.clone().unwrap_or_else(|| {
            let letter = char::from(b'A' + (i % 26) as u8);
            format!("{} {letter}", tr(l, "Cenário", "Scenario"))
        })
    }
}

fn compare_href(refs: &[Ref]) -> String {
    let ps: Vec<String> = refs.iter().map(|r| format!("s={}", r.param())).collect();
    format!("/compare?{}", ps.join("&"))
}

/// A saved comparison (`/c/{id}`), looked up by the server before the page
/// renders. Only the server reads it: the comparison is server markup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageComparison {
    /// The short id in `/c/{id}`.
    pub id: String,
    /// The name it was saved under (may be empty).
    pub name: String,
    /// Its query, `s=…&s=…`.
    pub query: String,
    /// When it was saved, Unix milliseconds.
    pub created_ms: i64,
}

/// The `s` values of a comparison's query, decoded.
pub fn comparison_values(query: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "s")
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// The query a comparison is saved under (`s=…&s=…`, columns in order):
/// saved ids as they are, scenario links in their canonical spelling. A
/// value that names no scenario refuses the save, with the reason.
pub fn comparison_query<'a>(
    values: impl IntoIterator<Item = &'a str>,
    site: Option<&str>,
    l: Locale,
) -> Result<String, String> {
    let mut refs = Vec::new();
    for v in values {
        match parse_ref(v, site) {
            None => {}
            Some(Ref::Foreign(t)) => {
                return Err(format!(
                    "«{t}»: {}",
                    tr(
                        l,
                        "não é um link de cenário do idem",
                        "not an idem scenario link"
                    )
                ))
            }
            Some(Ref::Query(q)) => {
                let s = Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')))
                    .map_err(|e| format!("«{q}»: {}", app::i18n::query_error_text(&e, l)))?;
                refs.push(Ref::Query(s.to_query()));
            }
            Some(r) => refs.push(r),
        }
    }
    if refs.is_empty() || refs.len() > MAX_COLUMNS {
        let (has, scenarios) = (
            tr(l, "uma comparação tem de", "a comparison has"),
            tr(l, "cenários", "scenarios"),
        );
        return Err(format!("{has} 1–{MAX_COLUMNS} {scenarios}"));
    }
    Ok(compare_href(&refs)
        .trim_start_matches("/compare?")
        .to_owned())
}

fn column(r: &Ref, saved: &[SavedView], l: Locale) -> Column {
    let read = |q: &str| {
        Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')))
            .map_err(|e| app::i18n::query_error_text(&e, l))
    };
    match r {
        Ref::Saved(id) => match saved.iter().find(|v| &v.id == id) {
            Some(v) => Column {
                name: (!v.name.is_empty()).then(|| v.name.clone()),
                href: format!("/s/{id}"),
                scenario: read(&v.query),
            },
            None => Column {
                name: None,
                href: format!("/s/{id}"),
                scenario: Err(tr(
                    l,
                    "cenário salvo não encontrado",
                    "saved scenario not found",
                )
                .to_owned()),
            },
        },
        Ref::Query(q) => Column {
            name: None,
            href: format!("/?{q}"),
            scenario: read(q)
                .map_err(|e| format!("{}: {e}", tr(l, "link inválido", "invalid link"))),
        },
        Ref::Foreign(_) => Column {
            name: None,
            href: String::new(),
            scenario: Err(tr(
                l,
                "não é um link de cenário do idem (/s/… ou /?v=2&…)",
                "not an idem scenario link (/s/… or /?v=2&…)",
            )
            .to_owned()),
        },
    }
}

/// The columns a comparison shows, and why the others are not there: a
/// foreign or broken link, an unknown saved id, or a scenario already in
/// the comparison gets a message instead of a column.
fn accept(refs: &[Ref], saved: &[SavedView], l: Locale) -> (Vec<(Ref, Column)>, Vec<String>) {
    let mut accepted: Vec<(Ref, Column)> = Vec::new();
    let mut refused = Vec::new();
    for r in refs {
        let c = column(r, saved, l);
        match &c.scenario {
            Err(e) => refused.push(format!("«{}»: {e}", r.shown())),
            Ok(s) => {
                let twin = accepted
                    .iter()
                    .position(|(_, a)| a.scenario.as_ref().is_ok_and(|a| a == s));
                match twin {
                    Some(k) => refused.push(format!(
                        "«{}»: {} «{}».",
                        r.shown(),
                        tr(
                            l,
                            "já está na comparação, como",
                            "is already in the comparison, as"
                        ),
                        accepted[k].1.label(k, l)
                    )),
                    None => accepted.push((r.clone(), c)),
                }
            }
        }
    }
    (accepted, refused)
}

/// "With idem" against "without", in one line, when the comparison has a
/// column at 0% duplicates and one above it in the same currency: what the
/// month and the year save (the totals with the risk block where both have
/// it, else the token waste).
fn savings_line(
    columns: &[(String, &Column)],
    computed: &[Option<(Scenario, Vec<app::calculator::Row>)>],
    l: Locale,
) -> Option<String> {
    let rate = |s: &Scenario| s.inputs.duplicate_rate_pct;
    let find = |zero: bool| {
        computed.iter().enumerate().find_map(|(i, c)| {
            c.as_ref()
                .filter(|(s, _)| rate(s).is_zero() == zero)
                .map(|c| (i, c))
        })
    };
    let (zi, (zs, zr)) = find(true)?;
    let (wi, (ws, wr)) = find(false)?;
    if zs.currency() != ws.currency() {
        return None;
    }
    let exact = |rs: &[app::calculator::Row], key: &str| {
        rs.iter()
            .find(|r| r.key == key)
            .and_then(|r| parse_canonical(&r.exact))
    };
    let (month, year) =
        if exact(zr, "annual_total_cost").is_some() && exact(wr, "annual_total_cost").is_some() {
            ("monthly_total_cost", "annual_total_cost")
        } else {
            ("monthly_token_waste", "annual_token_waste")
        };
    let saved = |key: &str| exact(wr, key)?.checked_sub(exact(zr, key)?);
    let cur = ws.currency();
    Some(format!(
        "{} «{}» {} «{}» ({}): {} {} {}, {} {}.",
        tr(l, "Com idem:", "With idem:"),
        columns[zi].0,
        tr(l, "(0% de duplicatas) contra", "(0% duplicates) against"),
        columns[wi].0,
        app::calculator::scenario_text(Field::DuplicateRate, rate(ws), ws, l) + "%",
        tr(l, "economia de", "saves"),
        format_money(saved(month)?, l, cur),
        tr(l, "por mês", "a month"),
        format_money(saved(year)?, l, cur),
        tr(l, "por ano", "a year"),
    ))
}

/// A comparison's scenarios from its `s` values, as the compare page reads
/// them: each column's label and scenario, or why it has none.
pub fn compare_scenarios<'a>(
    values: impl IntoIterator<Item = &'a str>,
    site: Option<&str>,
    saved: &[SavedView],
    l: Locale,
) -> Vec<(String, Result<Scenario, String>)> {
    let refs: Vec<Ref> = values
        .into_iter()
        .filter_map(|v| parse_ref(v, site))
        .take(MAX_COLUMNS)
        .collect();
    refs.iter()
        .enumerate()
        .map(|(i, r)| {
            let c = column(r, saved, l);
            (c.label(i, l), c.scenario)
        })
        .collect()
}

/// An input as a comparison cell, with its unit and currency: a price
/// "US$ 0,015 por 1k tokens", a share "3%", a rate "£ 1 = R$ 7,35", a
/// count of tokens "8.000 tokens", so no two cells in other units read as
/// one number a thousand times the other.
fn input_cell(f: Field, v: Decimal, s: &Scenario, l: Locale) -> String {
    use idem_core::scenario::Kind;
    let i = &s.inputs;
    match f.kind() {
        Kind::Money if f.in_price_currency() => {
            let per = match i.price_unit {
                idem_core::cost::PriceUnit::PerThousand => tr(l, "por 1k tokens", "per 1k tokens"),
                idem_core::cost::PriceUnit::PerMillion => tr(l, "por 1M tokens", "per 1M tokens"),
            };
            format!("{} {per}", format_price(v, l, i.price_currency))
        }
        Kind::Money => format_price(v, l, i.revenue_currency),
        Kind::Percent => format!("{}%", format_decimal(v, l, 0, 6)),
        // With its date (or the word that it has none), as the page says it.
        Kind::Rate => app::calculator::rate_value(
            i.price_currency,
            i.revenue_currency,
            v,
            s.fx_date.as_deref(),
            l,
        ),
        Kind::Count if matches!(f, Field::TokensIn | Field::TokensOut) => {
            format!("{} tokens", format_decimal(v, l, 0, 0))
        }
        Kind::Count => format!(
            "{} {}",
            format_decimal(v, l, 0, 0),
            tr(l, "por mês", "a month")
        ),
        Kind::Average => format!(
            "{} {}",
            format_decimal(v, l, 0, 4),
            if v == Decimal::ONE {
                tr(l, "chamada", "call")
            } else {
                tr(l, "chamadas", "calls")
            }
        ),
    }
}

/// Whether an output is an amount of money (else a count or a share,
/// which read the same in any currency).
fn is_money(key: &str) -> bool {
    !matches!(
        key,
        "duplicated_conversations"
            | "break_even_conversations"
            | "break_even_conversations_on_margin"
            | "duplicated_charges"
            | "waste_share_of_revenue_pct"
    )
}

/// "+R$ 123,75 (−83,33%)" against the base column, when both are numbers in
/// the same currency.
fn delta_text(
    key: &str,
    base: Option<&(Option<idem_core::locale::Currency>, String)>,
    s: &Scenario,
    exact: &str,
    l: Locale,
) -> Option<String> {
    let (base_cur, base_exact) = base?;
    // Counts and percentages compare across currencies; only amounts in
    // two currencies have no difference to show.
    if is_money(key) && *base_cur != Some(s.currency()) {
        return Some(tr(l, "outra moeda", "other currency").to_owned());
    }
    let b = parse_canonical(base_exact)?;
    let v = parse_canonical(exact)?;
    let d = v.checked_sub(b)?;
    let sign = if d.is_sign_positive() && !d.is_zero() {
        "+"
    } else {
        ""
    };
    let abs = match key {
        "duplicated_conversations"
        | "break_even_conversations"
        | "break_even_conversations_on_margin"
        | "duplicated_charges" => {
            format!("{sign}{}", format_count(d, l))
        }
        "waste_share_of_revenue_pct" => {
            format!("{sign}{} p.p.", format_decimal(d, l, 2, 2))
        }
        _ => {
            // A delta keeps its figure's precision: a call's cost shows
            // its sub-cent digits (−R$ 0,0149, not −R$ 0,01).
            let m = match key {
                "cost_per_call" | "cost_per_duplicate_call" => {
                    format_unit_cost(d.abs(), l, s.currency())
                }
                _ => format_money(d.abs(), l, s.currency()),
            };
            if d.is_sign_negative() && !d.is_zero() {
                format!("−{m}")
            } else {
                format!("{sign}{m}")
            }
        }
    };
    let rel = if b.is_zero() {
        String::new()
    } else {
        let pct = d.checked_mul(Decimal::ONE_HUNDRED)?.checked_div(b)?;
        let psign = if pct.is_sign_positive() && !pct.is_zero() {
            "+"
        } else {
            ""
        };
        format!(" ({psign}{}%)", format_decimal(pct, l, 2, 2))
    };
    // One minus sign for every negative delta, the typographic one.
    Some(format!("Δ {abs}{rel}").replace('-', "−"))
}

/// The comparison's markup.
fn compare_html(
    refs: &[Ref],
    saved: &[SavedView],
    stored: Option<&PageComparison>,
    form_token: &str,
    l: Locale,
) -> Markup {
    let (accepted, refused) = accept(refs, saved, l);
    let refs: Vec<Ref> = accepted.iter().map(|(r, _)| r.clone()).collect();
    let columns: Vec<(String, &Column)> = accepted
        .iter()
        .enumerate()
        .map(|(i, (_, c))| (c.label(i, l), c))
        .collect();
    let banner = html! {
        @if let Some(c) = stored {
            p class="saved-banner" id="comparison-banner" {
                (tr(l, "Comparação salva", "Saved comparison")) " «"
                @if c.name.is_empty() { (tr(l, "sem nome", "unnamed")) } @else { (c.name) }
                "», " (tr(l, "salva em", "saved on")) " " (app::i18n::utc_minute(c.created_ms)) ". "
                (tr(l, "Mudar as colunas abre uma nova comparação; este link nunca muda.", "Changing the columns opens a new comparison; this link never changes."))
                " " code { "/c/" (c.id) }
            }
        }
        @if !refused.is_empty() {
            div class="compare-refused" id="compare-refused" role="alert" {
                p { (tr(l, "Fora da comparação:", "Left out of the comparison:")) }
                ul { @for r in &refused { li { (r) } } }
            }
        }
    };
    if columns.is_empty() {
        return html! {
            (banner)
            p { (tr(l,
                "Cole abaixo o link de um cenário (da calculadora ou salvo), ou abra a comparação pelo botão «Comparar» da calculadora.",
                "Paste a scenario's link below (from the calculator, or a saved one), or open the comparison from the calculator's «Compare» button.")) }
            (add_form(&refs, saved, l))
        };
    }
    let computed: Vec<Option<(Scenario, Vec<Row>)>> = columns
        .iter()
        .map(|(_, c)| {
            let s = c.scenario.as_ref().ok()?;
            let o = s.compute().ok()?;
            Some((s.clone(), rows(s, &o, l)))
        })
        .collect();
    // Inputs worth a row: the duplicate rate always, the others where any
    // two scenarios differ.
    let inputs: Vec<(Field, Vec<Option<Decimal>>)> = Field::ALL
        .into_iter()
        .map(|f| {
            let vals: Vec<Option<Decimal>> = computed
                .iter()
                .map(|c| {
                    c.as_ref()
                        .and_then(|(s, _)| f.get(s))
                        .map(|d| d.normalize())
                })
                .collect();
            (f, vals)
        })
        .filter(|(f, vals)| *f == Field::DuplicateRate || vals.iter().any(|v| *v != vals[0]))
        .collect();
    let mut keys: Vec<(&'static str, &'static str)> = Vec::new();
    for (_, rs) in computed.iter().flatten() {
        for r in rs {
            if !keys.iter().any(|(k, _)| *k == r.key) {
                keys.push((r.key, r.label));
            }
        }
    }
    // An output the same in every column (in the same currency) collapses
    // under "the same in all", so the table shows what the choice changes.
    // A scenario whose repeated call costs what a call costs shows no row
    // of its own for it: its cell is the call's cost.
    let cell = |c: &Option<(Scenario, Vec<Row>)>, key: &str| {
        c.as_ref().and_then(|(s, rs)| {
            let find = |k: &str| rs.iter().find(|r| r.key == k);
            find(key)
                .or_else(|| {
                    (key == "cost_per_duplicate_call")
                        .then(|| find("cost_per_call"))
                        .flatten()
                })
                .map(|r| {
                    // A count says what it counts ("313 conversas/mês"); a
                    // count or a share is in no currency, so two columns
                    // in different ones still compare.
                    let value = if is_money(key) || r.unit == "%" {
                        r.value.clone()
                    } else {
                        format!("{} {}", r.value, r.unit)
                    };
                    let cur = is_money(key).then(|| s.currency());
                    (cur, r.exact.clone(), value)
                })
        })
    };
    let mut same: Vec<(&'static str, &'static str, String)> = Vec::new();
    let mut outputs = Vec::new();
    for (key, label) in keys {
        let cells: Vec<_> = computed.iter().map(|c| cell(c, key)).collect();
        if computed.len() > 1
            && cells.iter().all(|c| {
                c.as_ref().map(|(cur, exact, _)| (cur, exact))
                    == cells[0].as_ref().map(|(cur, exact, _)| (cur, exact))
            })
        {
            if let Some((_, _, value)) = &cells[0] {
                same.push((key, label, value.clone()));
                continue;
            }
        }
        outputs.push((key, label, cells));
    }
    let table = html! {
        table class="compare" id="compare-table" {
            thead {
                tr {
                    th scope="col" { (tr(l, "Cenário", "Scenario")) }
                    @for (i, (label, c)) in columns.iter().enumerate() {
                        @let rest: Vec<Ref> = refs.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, r)| r.clone()).collect();
                        th scope="col" {
                            a class="scenario-link" rel="external" href=(c.href) { (label) }
                            " "
                            a class="remove" rel="external" href=(compare_href(&rest)) title=(tr(l, "Tirar da comparação", "Remove from the comparison")) { "×" }
                        }
                    }
                }
            }
            tbody {
                @for (f, vals) in &inputs {
                    tr class="compare-input" data-field=(f.key()) {
                        th scope="row" { (app::i18n::field_label(*f, l)) }
                        @for (i, (v, c)) in vals.iter().zip(&computed).enumerate() {
                            @let text = match (v, c) {
                                (Some(v), Some((s, _))) => input_cell(*f, *v, s, l),
                                _ => "—".to_owned(),
                            };
                            td class=[(i > 0 && *v != vals[0]).then_some("changed")] { (text) }
                        }
                    }
                }
                @for (key, label, cells) in &outputs {
                    @let base_row = cells[0].as_ref().map(|(cur, exact, _)| (*cur, exact.clone()));
                    tr data-key=(key) {
                        th scope="row" { (label) }
                        @for (i, (c, cell)) in computed.iter().zip(cells).enumerate() {
                            // Every cell is a number or says why it is not one.
                            @if let (Some((s, _)), Some((cur, exact, value))) = (c, cell) {
                                @let changed = i > 0 && base_row.as_ref() != Some(&(*cur, exact.clone()));
                                td data-key=(key) class=[changed.then_some("changed")] {
                                    span class="value" { (value) }
                                    @if i > 0 {
                                        @if let Some(d) = delta_text(key, base_row.as_ref(), s, exact, l) {
                                            span class="delta" { (d) }
                                        }
                                    }
                                }
                            } @else {
                                td class="na" {
                                    "— "
                                    span class="delta" {
                                        @if c.is_none() {
                                            (tr(l, "não calculado: os valores deste cenário passam do que o cálculo comporta", "not computed: this scenario's values exceed what the computation holds"))
                                        } @else {
                                            (tr(l, "não se aplica: o cenário não tem os campos deste resultado", "does not apply: the scenario lacks this result's fields"))
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    // The annual loss per scenario, drawn by the server at its own address.
    let scenarios: Vec<(String, Result<Scenario, String>)> = columns
        .iter()
        .map(|(label, c)| (label.clone(), c.scenario.clone()))
        .collect();
    let (chart_columns, currency, total) = compare_columns(&scenarios, l);
    let figure = compare_figure(&chart_columns, currency, total, l);
    let src = format!(
        "/charts/compare.svg{}&lang={}",
        compare_href(&refs).trim_start_matches("/compare"),
        l.tag()
    );
    html! {
        // On paper: the date and the comparison's link (public/page.js),
        // then each column's name and the link that reproduces it.
        p class="print-meta" id="print-meta" data-kind="comparison" {}
        ol class="print-refs" id="print-refs" {
            @for (label, c) in &columns {
                li { strong { (label) } " — " span class="print-href" data-href=(c.href) { (c.href) } }
            }
        }
        (banner)
        p class="note" { (tr(l, "Diferenças em relação ao primeiro cenário: absoluta e relativa. Em destaque, o que muda.", "Differences from the first scenario: absolute and relative. Highlighted: what changes.")) }
        (scrolling(tr(l, "Tabela da comparação", "Comparison table"), l, table))
        @if !same.is_empty() {
            details class="compare-same" id="compare-same" {
                summary { (tr(l, "Iguais em todos", "The same in all")) " (" (same.len()) ")" }
                (scrolling(tr(l, "Iguais em todos", "The same in all"), l, html! {
                    table class="compare-same" {
                        tbody {
                            @for (key, label, value) in &same {
                                tr data-key=(key) { th scope="row" { (label) } td { (value) } }
                            }
                        }
                    }
                }))
            }
        }
        @if let Some(line) = savings_line(&columns, &computed, l) {
            p class="savings" id="compare-savings" { (line) }
        }
        section class="charts" {
            h2 { (tr(l, "Gráfico", "Chart")) }
            (figure_html(&figure, &src, l))
        }
        (add_form(&refs, saved, l))
        (save_form(&refs, form_token, l))
    }
}

/// Saves the comparison as shown (its accepted columns, in order) under one
/// short link: `POST /c` answers 303 to `/c/{id}`.
fn save_form(refs: &[Ref], form_token: &str, l: Locale) -> Markup {
    html! {
        form class="compare-save" method="post" action="/c" {
            input type="hidden" name=(FORM_FIELD) value=(form_token);
            @for r in refs {
                @if let Ref::Saved(v) | Ref::Query(v) = r {
                    input type="hidden" name="s" value=(v);
                }
            }
            label for="comparison-name" { (tr(l, "Nome da comparação (opcional)", "Comparison name (optional)")) }
            input id="comparison-name" name="name" type="text" maxlength="80" autocomplete="off";
            button type="submit" id="save-comparison" { (tr(l, "Salvar comparação", "Save comparison")) }
        }
    }
}

/// Adds a column: a pasted link or saved id, or a quick variant of the
/// first scenario (a link's or a saved one's) with fewer duplicates.
fn add_form(refs: &[Ref], saved: &[SavedView], l: Locale) -> Markup {
    let first = refs.first().and_then(|first| {
        let q = match first {
            Ref::Query(q) => q.as_str(),
            Ref::Saved(id) => saved.iter().find(|v| &v.id == id)?.query.as_str(),
            Ref::Foreign(_) => return None,
        };
        Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).ok()
    });
    let quick: Vec<(String, &str)> = first
        .map(|s| {
            [
                ("0.5", "com 0,5% de duplicatas", "with 0.5% duplicates"),
                (
                    "0",
                    "com idem (0% de duplicatas)",
                    "with idem (0% duplicates)",
                ),
            ]
            .into_iter()
            .filter_map(|(rate, pt, en)| {
                let mut v = s.clone();
                v.inputs.duplicate_rate_pct = parse_canonical(rate).unwrap_or_default();
                if v == s {
                    return None;
                }
                let mut all = refs.to_vec();
                all.push(Ref::Query(v.to_query()));
                Some((compare_href(&all), tr(l, pt, en)))
            })
            .collect()
        })
        .unwrap_or_default();
    html! {
        form class="compare-add" method="get" action="/compare" {
            @for r in refs {
                @let value = match r { Ref::Saved(id) => id, Ref::Query(q) | Ref::Foreign(q) => q };
                input type="hidden" name="s" value=(value);
            }
            label for="compare-add" { (tr(l, "Adicionar cenário (link ou id salvo)", "Add a scenario (link or saved id)")) }
            input id="compare-add" name="s" type="text" autocomplete="off" placeholder="/s/… · /?v=2&…";
            button type="submit" { (tr(l, "Adicionar", "Add")) }
            " "
            @for (href, text) in &quick {
                a class="quick-add" rel="external" href=(href) { "+ " (text) }
                " "
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idem_core::locale::Currency;

    #[test]
    fn pasted_links_are_understood() {
        let here = Some("127.0.0.1:3000");
        assert_eq!(
            parse_ref("http://127.0.0.1:3000/s/0123456789ab?lang=en-US", here),
            Some(Ref::Saved("0123456789ab".into()))
        );
        assert_eq!(
            parse_ref("0123456789ab", None),
            Some(Ref::Saved("0123456789ab".into()))
        );
        assert_eq!(
            parse_ref("/s/0123456789ab", None),
            Some(Ref::Saved("0123456789ab".into()))
        );
        assert_eq!(
            parse_ref("https://X/?v=1&d=0.5#top", Some("x")),
            Some(Ref::Query("v=1&d=0.5".into()))
        );
        assert_eq!(
            parse_ref("v=1&d=0.5", None),
            Some(Ref::Query("v=1&d=0.5".into()))
        );
        assert_eq!(parse_ref("  ", here), None);
        assert_eq!(Ref::Query("v=1&d=0.5".into()).param(), "v%3D1%26d%3D0.5");
        // Another site's address, or a link cut short, names no scenario.
        for foreign in [
            "https://example.com",
            "https://example.com/",
            "https://example.com/search?q=idem",
            "https://127.0.0.1:3000/compare?s=abc",
            "http://127.0.0.1:3000/?utm_source=mail",
            "https://github.com/s/abc",
            "hello",
            "/?v=2&d",
            // Scenario links, but another site's: never a column here.
            "https://idem.example/s/0123456789ab",
            "//idem.example/s/0123456789ab",
            "https://idem.example/?v=2&d=3",
            "http://127.0.0.1:3001/?v=2&d=3",
            "https://127.0.0.1:3000.example/?v=2&d=3",
        ] {
            assert_eq!(
                parse_ref(foreign, here),
                Some(Ref::Foreign(foreign.into())),
                "{foreign}"
            );
        }
        // A page that does not know its host takes no absolute address.
        assert_eq!(
            parse_ref("http://127.0.0.1:3000/?v=2&d=3", None),
            Some(Ref::Foreign("http://127.0.0.1:3000/?v=2&d=3".into()))
        );
        assert_eq!(
            saved_ids(
                ["https://idem.example/s/0123456789ab", "/s/00000000000a"],
                here
            ),
            vec!["00000000000a".to_owned()]
        );
    }

    fn compare(values: &[&str], saved: &[SavedView]) -> String {
        let refs: Vec<Ref> = values
            .iter()
            .filter_map(|v| parse_ref(v, Some("127.0.0.1:3000")))
            .collect();
        compare_html(&refs, saved, None, "", Locale::PtBr).into_string()
    }

    #[test]
    fn foreign_broken_and_repeated_links_get_a_message_not_a_column() {
        let html = compare(
            &[
                "v=2&d=3",
                "https://example.com/search?q=idem",
                "v=2&d=abc",
                "/?v=2&d=3",
                "0123456789ab",
                "v=2&d=0.5",
            ],
            &[],
        );
        let refused = &html[..html.find("</div>").unwrap()];
        assert!(
            refused
                .contains("«https://example.com/search?q=idem»: não é um link de cenário do idem"),
            "{refused}"
        );
        assert!(refused.contains("«/?v=2&amp;d=abc»: link inválido: Conversas que repetem a chamada: digite um número"), "{refused}");
        assert!(!html.contains("NotANumber"));
        assert!(
            refused.contains("«/?v=2&amp;d=3»: já está na comparação, como «Cenário A»."),
            "{refused}"
        );
        assert!(
            refused.contains("«/s/0123456789ab»: cenário salvo não encontrado"),
            "{refused}"
        );
        // Two columns stay, and only they travel in the page's links.
        assert_eq!(html.matches("class=\"scenario-link\"").count(), 2);
        assert!(
            !html.contains("example.com\">"),
            "no hidden field keeps a foreign link"
        );
        assert!(!html.contains("value=\"https://example.com"));
    }

    #[test]
    fn unchanged_rows_collapse_changed_cells_stand_out_and_idem_s_savings_show() {
        let saved = [SavedView {
            id: "0123456789ab".into(),
            name: "contrato".into(),
            query: "v=2&d=3".into(),
            created_ms: 0,
        }];
        let html = compare(&["/s/0123456789ab", "v=2&d=0"], &saved);
        // The saved name heads its column; the other gets its letter.
        assert!(html.contains(">contrato</a>"));
        assert!(html.contains(">Cenário B</a>"));
        // Revenue and the cost per call do not change: they collapse.
        let (table, rest) = html.split_once("id=\"compare-same\"").unwrap();
        assert!(!table.contains("data-key=\"monthly_revenue\""));
        assert!(rest.contains("Iguais em todos ("));
        assert!(rest.contains("<tr data-key=\"monthly_revenue\"><th scope=\"row\">Receita do mês</th><td>R$ 36.000,00</td></tr>"), "{rest}");
        // What changes is marked.
        assert!(table.contains("<td data-key=\"monthly_token_waste\" class=\"changed\"><span class=\"value\">R$ 0,00</span>"));
        assert!(table.contains(
            "<td data-key=\"monthly_token_waste\"><span class=\"value\">R$ 148,50</span>"
        ));
        assert!(html.contains("Com idem: «Cenário B» (0% de duplicatas) contra «contrato» (3%): economia de R$ 148,50 por mês, R$ 1.782,00 por ano."), "{html}");
        // A saved first column offers the same quick variants as a link.
        assert!(
            html.contains("class=\"quick-add\" rel=\"external\" href=\"/compare?s=0123456789ab&amp;s=v%3D2%26d%3D0&amp;s=v%3D2%26d%3D0.5\""),
            "{html}"
        );
        // One column: nothing to collapse, no savings line.
        let one = compare(&["v=2&d=3"], &[]);
        assert!(!one.contains("compare-same") && !one.contains("compare-savings"));
    }

    /// The table row of `html` that starts at `marker`, to its `</tr>`.
    fn row_of(html: &str, marker: &str) -> String {
        let start = html
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker} row in {html}"));
        let end = start + html[start..].find("</tr>").unwrap();
        html[start..end].to_owned()
    }

    #[test]
    fn across_currencies_counts_and_shares_compare_and_say_their_unit() {
        let html = compare(
            &[
                "v=2&c=12500&d=2.5",
                "v=2&c=12500&pc=USD&u=1m&pi=2.5&po=10&rc=INR&px=84.37&pd=2026-12-01&tk=95&d=4&cl=1",
                "v=2&c=12500&cl=1.5&d=2.5",
            ],
            &[],
        );
        let row = |key: &str| row_of(&html, &format!("<tr data-key=\"{key}\""));
        // 12.500 × 4% = 500 against 312,5: a count, compared across
        // currencies, with what it counts.
        let dups = row("duplicated_conversations");
        assert!(dups.contains("500 conversas/mês"), "{dups}");
        assert!(dups.contains("Δ +188 (+60,00%)"), "{dups}");
        assert!(!dups.contains("outra moeda"), "{dups}");
        let share = row("waste_share_of_revenue_pct");
        assert!(!share.contains("outra moeda"), "{share}");
        // Money in two currencies has no difference to show.
        assert!(row("monthly_token_waste").contains("outra moeda"));
        // The rate row is dated as the page dates it.
        let px = row_of(&html, "data-field=\"px\"");
        assert!(px.contains("US$ 1 = ₹ 84,37 em 01/12/2026"), "{px}");
        // One call, calls.
        let cl = row_of(&html, "data-field=\"cl\"");
        assert!(cl.contains("1 chamada<"), "{cl}");
        assert!(cl.contains("1,5 chamadas"), "{cl}");
    }

    #[test]
    fn every_row_carries_its_unit_and_deltas_keep_their_precision() {
        // A price per 1M in dollars beside one per 1k in reais, a share, a
        // rate, and a call's cost that moves by less than a cent.
        let html = compare(
            &[
                "v=2",
                "v=2&pi=3&po=15&u=1m&pc=USD&px=5.33&cs=40&pca=0.3&d=2.5",
                "v=2&pi=0.0149&d=3.5",
            ],
            &[],
        );
        let row = |field: &str| row_of(&html, &format!("data-field=\"{field}\""));
        let pi = row("pi");
        assert!(pi.contains("R$ 0,015 por 1k tokens"), "{pi}");
        assert!(pi.contains("US$ 3,00 por 1M tokens"), "{pi}");
        assert!(pi.contains("R$ 0,0149 por 1k tokens"), "{pi}");
        assert!(row("d").contains("2,5%"), "{}", row("d"));
        assert!(row("cs").contains("40%"), "{}", row("cs"));
        assert!(row("px").contains("US$ 1 = R$ 5,33"), "{}", row("px"));
        // (8.000 × 0,0149 + 600 × 0,075) / 1k = 0,1642: 0,0008 less than
        // 0,165, said to the digit, not as −R$ 0,00.
        let cost = &html[html.find("<tr data-key=\"cost_per_call\"").unwrap()..];
        let cost = &cost[..cost.find("</tr>").unwrap()];
        assert!(cost.contains("Δ −R$ 0,0008"), "{cost}");
    }

    #[test]
    fn the_chart_shows_one_total_for_every_scenario() {
        let scenarios = |links: &[&str]| -> Vec<(String, Result<Scenario, String>)> {
            links
                .iter()
                .map(|q| {
                    let s = Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')))
                        .map_err(|e| e.to_string());
                    ((*q).to_owned(), s)
                })
                .collect()
        };
        let risk = "v=2&ms=40&ac=100&oc=10&cr=2";
        // One scenario without the risk block: every bar is the token waste.
        let (cols, _, total) = compare_columns(&scenarios(&["v=2", risk]), Locale::PtBr);
        assert_eq!(total, crate::figures::CompareTotal::TokenWaste);
        assert_eq!(
            cols[0].annual_loss, cols[1].annual_loss,
            "same waste, same bar"
        );
        let figure = compare_figure(&cols, Currency::BRL, total, Locale::PtBr);
        assert!(figure.title.contains("tokens"), "{}", figure.title);
        // Every scenario at risk: every bar is the total with the risk.
        let (cols, _, total) = compare_columns(&scenarios(&[risk, risk]), Locale::PtBr);
        assert_eq!(total, crate::figures::CompareTotal::WithRisk);
        assert!(cols[0].annual_loss.as_ref().unwrap() > &Decimal::from(1782));
        let figure = compare_figure(&cols, Currency::BRL, total, Locale::EnUs);
        assert!(figure.title.contains("tokens + risk"), "{}", figure.title);
    }
}
