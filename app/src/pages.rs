//! The pages around the calculator, drawn from what the server's page
//! handlers loaded ([`crate::Page`]).

use crate::calculator::Calculator;
#[cfg(feature = "ssr")]
use crate::calculator::{encode_param, rows};
use crate::i18n::T;
#[cfg(feature = "ssr")]
use crate::i18n::{tr, Prefs};
#[cfg(feature = "ssr")]
use crate::markup::{esc, scroll_open, SCROLL_CLOSE};
use crate::{PageScenarios, SavedView};
#[cfg(feature = "ssr")]
use idem_core::locale::{format_count, format_decimal, format_money, Locale};
use idem_core::scenario::{is_link_key, is_saved_id};
#[cfg(feature = "ssr")]
use idem_core::scenario::{parse_canonical, Field, Scenario};
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use rust_decimal::Decimal;
#[cfg(feature = "ssr")]
use std::fmt::Write;

/// The calculator inside the element the browser hydrates it into
/// ([`crate::CALCULATOR_ROOT`]; `display: contents`, so it lays out as if
/// it were not there).
#[component]
fn CalculatorRoot(initial: Vec<(String, String)>, saved: Option<SavedView>) -> impl IntoView {
    view! {
        <div id=crate::CALCULATOR_ROOT class="hydrate-root">
            <Calculator initial saved/>
        </div>
    }
}

/// A saved scenario's stored query as the calculator's starting pairs, split
/// as stored (the server and the browser both start from these).
pub(crate) fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `/`: the calculator, starting from the address's scenario, with the
/// live panel (the server's markup) under it.
#[component]
pub fn CalculatorPage(
    /// The calculator's starting pairs.
    initial: Vec<(String, String)>,
    /// The live panel's markup.
    panel: String,
) -> impl IntoView {
    view! {
        <CalculatorRoot initial saved=None/>
        <crate::live::LivePanel html=panel/>
    }
}

/// `/s/{id}`: a saved scenario, in the calculator.
#[component]
pub fn SavedPage(
    /// The id in the address.
    id: String,
) -> impl IntoView {
    let data = expect_context::<PageScenarios>();
    match data.get(&id).cloned() {
        Some(v) => view! { <CalculatorRoot initial=pairs(&v.query) saved=Some(v)/> }.into_any(),
        None if data.failed => view! {
            <p class="scenario-error" role="alert"><T pt="Não foi possível ler os cenários salvos agora. Tente de novo em instantes." en="Saved scenarios cannot be read right now. Try again in a moment."/></p>
        }
        .into_any(),
        None => view! {
            <h1><T pt="Cenário não encontrado" en="Scenario not found"/></h1>
            <p class="scenario-error" role="alert"><T pt="Nenhum cenário salvo tem este link. Confira o endereço, ou monte o cenário de novo na calculadora." en="No saved scenario has this link. Check the address, or build the scenario again in the calculator."/></p>
            <p><a href="/" rel="external"><T pt="Abrir a calculadora" en="Open the calculator"/></a></p>
        }
        .into_any(),
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

/// The host the page was asked for (the request's `Host`, which the
/// server's guard has already checked against its allowed hosts). A
/// pasted address is this site's only when it names this host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSite(pub String);

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

#[cfg(feature = "ssr")]
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

#[cfg(feature = "ssr")]
/// One column of the comparison.
struct Column {
    /// The saved scenario's name, where it has one.
    name: Option<String>,
    href: String,
    scenario: Result<Scenario, String>,
}

#[cfg(feature = "ssr")]
impl Column {
    /// The column's heading: its saved name, else a letter by position.
    fn label(&self, i: usize, l: Locale) -> String {
        self.name.clone().unwrap_or_else(|| {
            let letter = char::from(b'A' + (i % 26) as u8);
            format!("{} {letter}", tr(l, "Cenário", "Scenario"))
        })
    }
}

#[cfg(feature = "ssr")]
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
#[cfg(feature = "ssr")]
pub fn comparison_values(query: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "s")
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// `/compare?s=…&s=…` and a saved comparison `/c/{id}`: scenarios side by
/// side, with deltas against the first.
#[component]
pub fn ComparePage(
    /// Each column's `s` value.
    values: Vec<String>,
    /// The saved comparison they come from (`/c/{id}`).
    stored: Option<PageComparison>,
) -> impl IntoView {
    // Only the server reads the columns: in the browser the comparison is
    // the server's markup (CompareTable), so the wasm carries no link reader.
    #[cfg(feature = "ssr")]
    let (refs, stored) = {
        let site = use_context::<PageSite>().unwrap_or_default();
        let refs: Vec<Ref> = values
            .iter()
            .filter_map(|s| parse_ref(s, Some(&site.0)))
            .take(MAX_COLUMNS)
            .collect();
        (refs, stored)
    };
    #[cfg(not(feature = "ssr"))]
    let (refs, stored) = {
        let _ = values;
        (Vec::<Ref>::new(), stored)
    };
    let data = expect_context::<PageScenarios>();
    // A database that cannot be read is said as such: the columns it would
    // have filled are neither "not found" nor an empty comparison.
    if data.failed {
        return view! {
            <h1><T pt="Comparar cenários" en="Compare scenarios"/></h1>
            <p class="scenario-error" id="compare-unavailable" role="alert"><T pt="Não foi possível ler os cenários salvos agora. Tente de novo em instantes." en="Saved scenarios cannot be read right now. Try again in a moment."/></p>
        }
        .into_any();
    }
    let saved = data.found;
    view! {
        <h1><T pt="Comparar cenários" en="Compare scenarios"/></h1>
        <CompareTable refs saved stored/>
    }
    .into_any()
}

/// The query a comparison is saved under (`s=…&s=…`, columns in order):
/// saved ids as they are, scenario links in their canonical spelling. A
/// value that names no scenario refuses the save, with the reason.
#[cfg(feature = "ssr")]
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
                    .map_err(|e| format!("«{q}»: {}", crate::i18n::query_error_text(&e, l)))?;
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

/// The comparison, as markup set as inner HTML: a table of text with no
/// event handlers, which as typed views cost the release wasm more than its
/// budget allows. Every text that goes in (scenario names included) is
/// escaped.
#[component]
fn CompareTable(
    refs: Vec<Ref>,
    saved: Vec<SavedView>,
    stored: Option<PageComparison>,
) -> impl IntoView {
    // Drawn by the server only: hydration never rewrites an element's inner
    // HTML, so the browser keeps the server's table and the wasm carries no
    // copy of its writer. (Switching the language reloads this page.)
    #[cfg(feature = "ssr")]
    let html = compare_html(
        &refs,
        &saved,
        stored.as_ref(),
        expect_context::<Prefs>().locale.get_untracked(),
    );
    #[cfg(not(feature = "ssr"))]
    let html = {
        let _ = (refs, saved, stored);
        String::new()
    };
    view! { <div class="compare-body" inner_html=html></div> }
}

#[cfg(feature = "ssr")]
fn column(r: &Ref, saved: &[SavedView], l: Locale) -> Column {
    let read = |q: &str| {
        Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')))
            .map_err(|e| crate::i18n::query_error_text(&e, l))
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
#[cfg(feature = "ssr")]
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

#[cfg(feature = "ssr")]
/// The comparison's markup.
fn compare_html(
    refs: &[Ref],
    saved: &[SavedView],
    stored: Option<&PageComparison>,
    l: Locale,
) -> String {
    let mut out = String::new();
    if let Some(c) = stored {
        let name = if c.name.is_empty() {
            tr(l, "sem nome", "unnamed").to_owned()
        } else {
            c.name.clone()
        };
        let _ = write!(
            out,
            "<p class=\"saved-banner\" id=\"comparison-banner\">{} «{}», {} {}. {} <code>/c/{}</code></p>",
            esc(tr(l, "Comparação salva", "Saved comparison")),
            esc(&name),
            esc(tr(l, "salva em", "saved on")),
            esc(&crate::i18n::utc_minute(c.created_ms)),
            esc(tr(l, "Mudar as colunas abre uma nova comparação; este link nunca muda.", "Changing the columns opens a new comparison; this link never changes.")),
            esc(&c.id),
        );
    }
    let (accepted, refused) = accept(refs, saved, l);
    if !refused.is_empty() {
        let _ = write!(
            out,
            "<div class=\"compare-refused\" id=\"compare-refused\" role=\"alert\"><p>{}</p><ul>",
            esc(tr(l, "Fora da comparação:", "Left out of the comparison:"))
        );
        for r in &refused {
            let _ = write!(out, "<li>{}</li>", esc(r));
        }
        out.push_str("</ul></div>");
    }
    let refs: Vec<Ref> = accepted.iter().map(|(r, _)| r.clone()).collect();
    let columns: Vec<(String, &Column)> = accepted
        .iter()
        .enumerate()
        .map(|(i, (_, c))| (c.label(i, l), c))
        .collect();
    if columns.is_empty() {
        let _ = write!(
            out,
            "<p>{}</p>",
            esc(tr(l,
                "Cole abaixo o link de um cenário (da calculadora ou salvo), ou abra a comparação pelo botão «Comparar» da calculadora.",
                "Paste a scenario's link below (from the calculator, or a saved one), or open the comparison from the calculator's «Compare» button."))
        );
        add_form(&mut out, &refs, saved, l);
        return out;
    }
    let computed: Vec<Option<(Scenario, Vec<crate::calculator::Row>)>> = columns
        .iter()
        .map(|(_, c)| {
            let s = c.scenario.as_ref().ok()?;
            let o = s.compute().ok()?;
            Some((s.clone(), rows(s, &o, l)))
        })
        .collect();
    let _ = write!(
        out,
        "<p class=\"note\">{}</p>{}<table class=\"compare\" id=\"compare-table\"><thead><tr><th scope=\"col\">{}</th>",
        esc(tr(l, "Diferenças em relação ao primeiro cenário: absoluta e relativa. Em destaque, o que muda.", "Differences from the first scenario: absolute and relative. Highlighted: what changes.")),
        scroll_open(tr(l, "Tabela da comparação", "Comparison table"), l),
        esc(tr(l, "Cenário", "Scenario")),
    );
    for (i, (label, c)) in columns.iter().enumerate() {
        let rest: Vec<Ref> = refs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| r.clone())
            .collect();
        let _ = write!(
            out,
            "<th scope=\"col\"><a class=\"scenario-link\" rel=\"external\" href=\"{}\">{}</a> <a class=\"remove\" rel=\"external\" href=\"{}\" title=\"{}\">×</a></th>",
            esc(&c.href),
            esc(label),
            esc(&compare_href(&rest)),
            esc(tr(l, "Tirar da comparação", "Remove from the comparison")),
        );
    }
    out.push_str("</tr></thead><tbody>");
    // Inputs worth a row: the duplicate rate always, the others where any
    // two scenarios differ.
    for f in Field::ALL {
        let vals: Vec<Option<Decimal>> = computed
            .iter()
            .map(|c| {
                c.as_ref()
                    .and_then(|(s, _)| f.get(s))
                    .map(|d| d.normalize())
            })
            .collect();
        if f != Field::DuplicateRate && vals.iter().all(|v| *v == vals[0]) {
            continue;
        }
        let _ = write!(
            out,
            "<tr class=\"compare-input\"><th scope=\"row\">{}</th>",
            esc(crate::i18n::field_label(f, l))
        );
        for (i, v) in vals.iter().enumerate() {
            let text = v.map_or_else(
                || "—".to_owned(),
                |v| crate::calculator::display_text(f, v, l),
            );
            let class = if i > 0 && *v != vals[0] {
                " class=\"changed\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(&text));
        }
        out.push_str("</tr>");
    }
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
    let cell = |c: &Option<(Scenario, Vec<crate::calculator::Row>)>, key: &str| {
        c.as_ref().and_then(|(s, rs)| {
            let find = |k: &str| rs.iter().find(|r| r.key == k);
            find(key)
                .or_else(|| {
                    (key == "cost_per_duplicate_call")
                        .then(|| find("cost_per_call"))
                        .flatten()
                })
                .map(|r| (s.currency(), r.exact.clone(), r.value.clone()))
        })
    };
    let mut same: Vec<(&'static str, &'static str, String)> = Vec::new();
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
        let base_row = cells[0]
            .as_ref()
            .map(|(cur, exact, _)| (*cur, exact.clone()));
        let _ = write!(
            out,
            "<tr data-key=\"{key}\"><th scope=\"row\">{}</th>",
            esc(label)
        );
        for (i, (c, cell)) in computed.iter().zip(&cells).enumerate() {
            // Every cell is a number or says why it is not one.
            let (Some((s, _)), Some((cur, exact, value))) = (c, cell) else {
                let why = match c {
                    None => tr(
                        l,
                        "não calculado: os valores deste cenário passam do que o cálculo comporta",
                        "not computed: this scenario's values exceed what the computation holds",
                    ),
                    Some(_) => tr(
                        l,
                        "não se aplica: o cenário não tem os campos deste resultado",
                        "does not apply: the scenario lacks this result's fields",
                    ),
                };
                let _ = write!(
                    out,
                    "<td class=\"na\">— <span class=\"delta\">{}</span></td>",
                    esc(why)
                );
                continue;
            };
            let changed = i > 0 && base_row.as_ref() != Some(&(*cur, exact.clone()));
            let _ = write!(
                out,
                "<td data-key=\"{key}\"{}><span class=\"value\">{}</span>",
                if changed { " class=\"changed\"" } else { "" },
                esc(value)
            );
            if i > 0 {
                if let Some(d) = delta_text(key, base_row.as_ref(), s, exact, l) {
                    let _ = write!(out, "<span class=\"delta\">{}</span>", esc(&d));
                }
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out.push_str(SCROLL_CLOSE);
    if !same.is_empty() {
        let _ = write!(
            out,
            "<details class=\"compare-same\" id=\"compare-same\"><summary>{} ({})</summary>{}<table class=\"compare-same\"><tbody>",
            esc(tr(l, "Iguais em todos", "The same in all")),
            same.len(),
            scroll_open(tr(l, "Iguais em todos", "The same in all"), l),
        );
        for (key, label, value) in &same {
            let _ = write!(
                out,
                "<tr data-key=\"{key}\"><th scope=\"row\">{}</th><td>{}</td></tr>",
                esc(label),
                esc(value)
            );
        }
        out.push_str("</tbody></table>");
        out.push_str(SCROLL_CLOSE);
        out.push_str("</details>");
    }
    if let Some(line) = savings_line(&columns, &computed, l) {
        let _ = write!(
            out,
            "<p class=\"savings\" id=\"compare-savings\">{}</p>",
            esc(&line)
        );
    }
    // The annual loss per scenario, drawn by the server at its own address.
    let scenarios: Vec<(String, Result<Scenario, String>)> = columns
        .iter()
        .map(|(label, c)| (label.clone(), c.scenario.clone()))
        .collect();
    let (chart_columns, currency) = crate::charts::compare_columns(&scenarios, l);
    let figure = crate::charts::compare_figure(&chart_columns, currency, l);
    let src = format!(
        "/charts/compare.svg{}&lang={}",
        compare_href(&refs).trim_start_matches("/compare"),
        l.tag()
    );
    let _ = write!(
        out,
        "<section class=\"charts\"><h2>{}</h2>",
        esc(tr(l, "Gráfico", "Chart"))
    );
    crate::charts::figure_html(&mut out, &figure, &src, l);
    out.push_str("</section>");
    add_form(&mut out, &refs, saved, l);
    save_form(&mut out, &refs, l);
    out
}

/// Saves the comparison as shown (its accepted columns, in order) under one
/// short link: `POST /c` answers 303 to `/c/{id}`.
#[cfg(feature = "ssr")]
fn save_form(out: &mut String, refs: &[Ref], l: Locale) {
    out.push_str("<form class=\"compare-save\" method=\"post\" action=\"/c\">");
    let _ = write!(
        out,
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        crate::FORM_FIELD,
        esc(&crate::form_token())
    );
    for r in refs {
        if let Ref::Saved(v) | Ref::Query(v) = r {
            let _ = write!(
                out,
                "<input type=\"hidden\" name=\"s\" value=\"{}\">",
                esc(v)
            );
        }
    }
    let _ = write!(
        out,
        "<label for=\"comparison-name\">{}</label><input id=\"comparison-name\" name=\"name\" type=\"text\" maxlength=\"80\" autocomplete=\"off\"><button type=\"submit\" id=\"save-comparison\">{}</button></form>",
        esc(tr(l, "Nome da comparação (opcional)", "Comparison name (optional)")),
        esc(tr(l, "Salvar comparação", "Save comparison")),
    );
}

/// "With idem" against "without", in one line, when the comparison has a
/// column at 0% duplicates and one above it in the same currency: what the
/// month and the year save (the totals with the risk block where both have
/// it, else the token waste).
#[cfg(feature = "ssr")]
fn savings_line(
    columns: &[(String, &Column)],
    computed: &[Option<(Scenario, Vec<crate::calculator::Row>)>],
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
    let exact = |rs: &[crate::calculator::Row], key: &str| {
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
        crate::calculator::display_text(Field::DuplicateRate, rate(ws), l) + "%",
        tr(l, "economia de", "saves"),
        format_money(saved(month)?, l, cur),
        tr(l, "por mês", "a month"),
        format_money(saved(year)?, l, cur),
        tr(l, "por ano", "a year"),
    ))
}

/// A comparison's scenarios from its `s` values, as the compare page reads
/// them: each column's label and scenario, or why it has none.
#[cfg(feature = "ssr")]
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

#[cfg(feature = "ssr")]
/// "+R$ 123,75 (−83,33%)" against the base column, when both are numbers in
/// the same currency.
fn delta_text(
    key: &str,
    base: Option<&(idem_core::locale::Currency, String)>,
    s: &Scenario,
    exact: &str,
    l: Locale,
) -> Option<String> {
    let (base_cur, base_exact) = base?;
    if *base_cur != s.currency() {
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
            let m = format_money(d.abs(), l, s.currency());
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

#[cfg(feature = "ssr")]
fn add_form(out: &mut String, refs: &[Ref], saved: &[SavedView], l: Locale) {
    out.push_str("<form class=\"compare-add\" method=\"get\" action=\"/compare\">");
    for r in refs {
        let value = match r {
            Ref::Saved(id) => id.clone(),
            Ref::Query(q) | Ref::Foreign(q) => q.clone(),
        };
        let _ = write!(
            out,
            "<input type=\"hidden\" name=\"s\" value=\"{}\">",
            esc(&value)
        );
    }
    let _ = write!(
        out,
        "<label for=\"compare-add\">{}</label><input id=\"compare-add\" name=\"s\" type=\"text\" autocomplete=\"off\" placeholder=\"/s/… · /?v=2&amp;…\"><button type=\"submit\">{}</button> ",
        esc(tr(l, "Adicionar cenário (link ou id salvo)", "Add a scenario (link or saved id)")),
        esc(tr(l, "Adicionar", "Add")),
    );
    // Quick variants of the first scenario, a link's or a saved one's:
    // the same with fewer duplicates.
    let first = refs.first().and_then(|first| {
        let q = match first {
            Ref::Query(q) => q.as_str(),
            Ref::Saved(id) => saved.iter().find(|v| &v.id == id)?.query.as_str(),
            Ref::Foreign(_) => return None,
        };
        Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).ok()
    });
    if let Some(s) = first {
        for (rate, pt, en) in [
            ("0.5", "com 0,5% de duplicatas", "with 0.5% duplicates"),
            (
                "0",
                "com idem (0% de duplicatas)",
                "with idem (0% duplicates)",
            ),
        ] {
            let mut v = s.clone();
            v.inputs.duplicate_rate_pct = parse_canonical(rate).unwrap_or_default();
            if v == s {
                continue;
            }
            let mut all = refs.to_vec();
            all.push(Ref::Query(v.to_query()));
            let _ = write!(
                out,
                "<a class=\"quick-add\" rel=\"external\" href=\"{}\">+ {}</a> ",
                esc(&compare_href(&all)),
                esc(tr(l, pt, en))
            );
        }
    }
    out.push_str("</form>");
}

/// Any other path.
#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <h1><T pt="Página não encontrada" en="Page not found"/></h1>
        <p><a href="/"><T pt="Abrir a calculadora" en="Open the calculator"/></a></p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[cfg(feature = "ssr")]
    fn compare(values: &[&str], saved: &[SavedView]) -> String {
        let refs: Vec<Ref> = values
            .iter()
            .filter_map(|v| parse_ref(v, Some("127.0.0.1:3000")))
            .collect();
        compare_html(&refs, saved, None, Locale::PtBr)
    }

    #[cfg(feature = "ssr")]
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

    #[cfg(feature = "ssr")]
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
}
