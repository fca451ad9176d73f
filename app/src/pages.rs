//! The routed pages around the calculator.

use crate::calculator::Calculator;
#[cfg(feature = "ssr")]
use crate::calculator::{encode_param, rows};
use crate::i18n::T;
#[cfg(feature = "ssr")]
use crate::i18n::{tr, Prefs};
#[cfg(feature = "ssr")]
use crate::markup::esc;
use crate::{PageScenarios, SavedView};
#[cfg(feature = "ssr")]
use idem_core::locale::{format_count, format_decimal, format_money, Locale};
use idem_core::scenario::is_saved_id;
#[cfg(feature = "ssr")]
use idem_core::scenario::{parse_canonical, Field, Scenario};
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
#[cfg(feature = "ssr")]
use rust_decimal::Decimal;
#[cfg(feature = "ssr")]
use std::fmt::Write;

fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `/`: the calculator, starting from the address bar's scenario.
#[component]
pub fn CalculatorPage() -> impl IntoView {
    let query = use_query_map();
    let initial: Vec<(String, String)> = query.with_untracked(|q| {
        q.clone()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    });
    view! {
        <Calculator initial saved=None/>
        <crate::live::LivePanel/>
    }
}

/// `/s/{id}`: a saved scenario, in the calculator.
#[component]
pub fn SavedPage() -> impl IntoView {
    let data = expect_context::<PageScenarios>();
    let id = use_params_map().with_untracked(|p| p.get("id").unwrap_or_default());
    match data.get(&id).cloned() {
        Some(v) => view! { <Calculator initial=pairs(&v.query) saved=Some(v)/> }.into_any(),
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

/// A scenario named in a compare link: a saved id or a canonical query.
#[derive(Clone, Debug, PartialEq)]
enum Ref {
    Saved(String),
    Query(String),
}

/// Reads what a person pasted: a saved link (`…/s/{id}`), a bare id, a
/// calculator link (`…/?v=1&…`) or a bare query.
fn parse_ref(text: &str) -> Option<Ref> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if let Some(pos) = t.find("/s/") {
        let id: String = t[pos + 3..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        return Some(Ref::Saved(id));
    }
    if is_saved_id(t) {
        return Some(Ref::Saved(t.to_owned()));
    }
    let q = t.split_once('?').map_or(t, |(_, q)| q);
    let q = q.split('#').next().unwrap_or(q);
    Some(Ref::Query(q.to_owned()))
}

/// The saved-scenario ids among a compare page's `s` values, for the server
/// to look up before rendering.
pub fn saved_ids<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values
        .into_iter()
        .filter_map(parse_ref)
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
            Ref::Query(q) => encode_param(q),
        }
    }
}

#[cfg(feature = "ssr")]
/// One column of the comparison.
struct Column {
    label: String,
    href: String,
    scenario: Result<Scenario, String>,
}

#[cfg(feature = "ssr")]
fn compare_href(refs: &[Ref]) -> String {
    let ps: Vec<String> = refs.iter().map(|r| format!("s={}", r.param())).collect();
    format!("/compare?{}", ps.join("&"))
}

/// `/compare?s=…&s=…`: scenarios side by side, with deltas against the first.
#[component]
pub fn ComparePage() -> impl IntoView {
    let refs: Vec<Ref> = use_query_map().with_untracked(|q| {
        q.get_all("s")
            .unwrap_or_default()
            .iter()
            .filter_map(|s| parse_ref(s))
            .take(MAX_COLUMNS)
            .collect()
    });
    let saved = expect_context::<PageScenarios>().found;
    view! {
        <h1><T pt="Comparar cenários" en="Compare scenarios"/></h1>
        <CompareTable refs saved/>
    }
}

/// The comparison, as markup set as inner HTML: a table of text with no
/// event handlers, which as typed views cost the release wasm more than its
/// budget allows. Every text that goes in (scenario names included) is
/// escaped.
#[component]
fn CompareTable(refs: Vec<Ref>, saved: Vec<SavedView>) -> impl IntoView {
    // Drawn by the server only: hydration never rewrites an element's inner
    // HTML, so the browser keeps the server's table and the wasm carries no
    // copy of its writer. (Switching the language reloads this page.)
    #[cfg(feature = "ssr")]
    let html = compare_html(
        &refs,
        &saved,
        expect_context::<Prefs>().locale.get_untracked(),
    );
    #[cfg(not(feature = "ssr"))]
    let html = {
        let _ = (refs, saved);
        String::new()
    };
    view! { <div class="compare-body" inner_html=html></div> }
}

#[cfg(feature = "ssr")]
fn columns(refs: &[Ref], saved: &[SavedView], l: Locale) -> Vec<Column> {
    let letter = |i: usize| char::from(b'A' + (i % 26) as u8);
    let unnamed = |i: usize| format!("{} {}", tr(l, "Cenário", "Scenario"), letter(i));
    let read = |q: &str| Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')));
    refs.iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ref::Saved(id) => match saved.iter().find(|v| &v.id == id) {
                Some(v) => Column {
                    label: if v.name.is_empty() {
                        unnamed(i)
                    } else {
                        v.name.clone()
                    },
                    href: format!("/s/{id}"),
                    scenario: read(&v.query).map_err(|e| e.to_string()),
                },
                None => Column {
                    label: unnamed(i),
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
                label: unnamed(i),
                href: format!("/?{q}"),
                scenario: read(q)
                    .map_err(|e| format!("{}: {e}", tr(l, "link inválido", "invalid link"))),
            },
        })
        .collect()
}

#[cfg(feature = "ssr")]
/// The comparison's markup.
fn compare_html(refs: &[Ref], saved: &[SavedView], l: Locale) -> String {
    let mut out = String::new();
    let columns = columns(refs, saved, l);
    if columns.is_empty() {
        let _ = write!(
            out,
            "<p>{}</p>",
            esc(tr(l,
                "Cole abaixo o link de um cenário (da calculadora ou salvo), ou abra a comparação pelo botão «Comparar» da calculadora.",
                "Paste a scenario's link below (from the calculator, or a saved one), or open the comparison from the calculator's «Compare» button."))
        );
        add_form(&mut out, refs, l);
        return out;
    }
    let computed: Vec<Option<(Scenario, Vec<crate::calculator::Row>)>> = columns
        .iter()
        .map(|c| {
            let s = c.scenario.as_ref().ok()?;
            let o = s.compute().ok()?;
            Some((s.clone(), rows(s, &o, l)))
        })
        .collect();
    let _ = write!(
        out,
        "<p class=\"note\">{}</p><div class=\"compare-scroll\"><table class=\"compare\" id=\"compare-table\"><thead><tr><th scope=\"col\">{}</th>",
        esc(tr(l, "Diferenças em relação ao primeiro cenário: absoluta e relativa.", "Differences from the first scenario: absolute and relative.")),
        esc(tr(l, "Cenário", "Scenario")),
    );
    for (i, c) in columns.iter().enumerate() {
        let rest: Vec<Ref> = refs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| r.clone())
            .collect();
        let _ = write!(
            out,
            "<th scope=\"col\"><a class=\"scenario-link\" rel=\"external\" href=\"{}\">{}</a> <a class=\"remove\" rel=\"external\" href=\"{}\" title=\"{}\">×</a>",
            esc(&c.href),
            esc(&c.label),
            esc(&compare_href(&rest)),
            esc(tr(l, "Tirar da comparação", "Remove from the comparison")),
        );
        if let Err(e) = &c.scenario {
            let _ = write!(
                out,
                "<p class=\"scenario-error\" role=\"alert\">{}</p>",
                esc(e)
            );
        }
        out.push_str("</th>");
    }
    out.push_str("</tr></thead><tbody>");
    // Inputs worth a row: the duplicate rate always, the others where any
    // two scenarios differ.
    for f in Field::ALL {
        let vals: Vec<Option<Decimal>> = computed
            .iter()
            .flatten()
            .map(|(s, _)| f.get(s).map(|d| d.normalize()))
            .collect();
        if f != Field::DuplicateRate && !vals.windows(2).any(|w| w[0] != w[1]) {
            continue;
        }
        let _ = write!(
            out,
            "<tr class=\"compare-input\"><th scope=\"row\">{}</th>",
            esc(crate::i18n::field_label(f, l))
        );
        for c in &computed {
            let v = c.as_ref().and_then(|(s, _)| f.get(s)).map_or_else(
                || "—".to_owned(),
                |v| crate::calculator::display_text(f, v, l),
            );
            let _ = write!(out, "<td>{}</td>", esc(&v));
        }
        out.push_str("</tr>");
    }
    let base = computed.first().cloned().flatten();
    let mut keys: Vec<(&'static str, &'static str)> = Vec::new();
    for (_, rs) in computed.iter().flatten() {
        for r in rs {
            if !keys.iter().any(|(k, _)| *k == r.key) {
                keys.push((r.key, r.label));
            }
        }
    }
    for (key, label) in keys {
        let base_row = base.as_ref().and_then(|(s, rs)| {
            rs.iter()
                .find(|r| r.key == key)
                .map(|r| (s.currency(), r.exact.clone()))
        });
        let _ = write!(
            out,
            "<tr data-key=\"{key}\"><th scope=\"row\">{}</th>",
            esc(label)
        );
        for (i, c) in computed.iter().enumerate() {
            let row = c
                .as_ref()
                .and_then(|(s, rs)| rs.iter().find(|r| r.key == key).map(|r| (s, r)));
            let Some((s, r)) = row else {
                out.push_str("<td>—</td>");
                continue;
            };
            let _ = write!(
                out,
                "<td data-key=\"{key}\"><span class=\"value\">{}</span>",
                esc(&r.value)
            );
            if i > 0 {
                if let Some(d) = delta_text(key, base_row.as_ref(), s, &r.exact, l) {
                    let _ = write!(out, "<span class=\"delta\">{}</span>", esc(&d));
                }
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    // The annual loss per scenario, drawn by the server at its own address.
    let scenarios: Vec<(String, Result<Scenario, String>)> = columns
        .iter()
        .map(|c| (c.label.clone(), c.scenario.clone()))
        .collect();
    let (chart_columns, currency) = crate::charts::compare_columns(&scenarios, l);
    let figure = crate::charts::compare_figure(&chart_columns, currency, l);
    let src = format!(
        "/charts/compare.svg{}&lang={}",
        compare_href(refs).trim_start_matches("/compare"),
        l.tag()
    );
    out.push_str("<section class=\"charts\">");
    crate::charts::figure_html(&mut out, &figure, &src, l);
    out.push_str("</section>");
    add_form(&mut out, refs, l);
    out
}

/// A comparison's scenarios from its `s` values, as the compare page reads
/// them: each column's label and scenario, or why it has none.
#[cfg(feature = "ssr")]
pub fn compare_scenarios<'a>(
    values: impl IntoIterator<Item = &'a str>,
    saved: &[SavedView],
    l: Locale,
) -> Vec<(String, Result<Scenario, String>)> {
    let refs: Vec<Ref> = values
        .into_iter()
        .filter_map(parse_ref)
        .take(MAX_COLUMNS)
        .collect();
    columns(&refs, saved, l)
        .into_iter()
        .map(|c| (c.label, c.scenario))
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
        "duplicated_conversations" | "break_even_conversations" | "duplicated_charges" => {
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
fn add_form(out: &mut String, refs: &[Ref], l: Locale) {
    out.push_str("<form class=\"compare-add\" method=\"get\" action=\"/compare\">");
    for r in refs {
        let value = match r {
            Ref::Saved(id) => id.clone(),
            Ref::Query(q) => q.clone(),
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
    // Quick variants of the first scenario: the same with fewer duplicates.
    let first = refs.first().and_then(|first| match first {
        Ref::Query(q) => {
            Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).ok()
        }
        Ref::Saved(_) => None,
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
        assert_eq!(
            parse_ref("http://127.0.0.1:3000/s/0123456789ab?lang=en-US"),
            Some(Ref::Saved("0123456789ab".into()))
        );
        assert_eq!(
            parse_ref("0123456789ab"),
            Some(Ref::Saved("0123456789ab".into()))
        );
        assert_eq!(
            parse_ref("https://x/?v=1&d=0.5#top"),
            Some(Ref::Query("v=1&d=0.5".into()))
        );
        assert_eq!(parse_ref("v=1&d=0.5"), Some(Ref::Query("v=1&d=0.5".into())));
        assert_eq!(parse_ref("  "), None);
        assert_eq!(Ref::Query("v=1&d=0.5".into()).param(), "v%3D1%26d%3D0.5");
    }
}
