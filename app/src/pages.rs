//! The routed pages around the calculator.

use crate::calculator::{encode_param, rows, Calculator};
use crate::i18n::{tr, Prefs};
use crate::{load_scenarios, SavedView};
use idem_core::locale::{format_count, format_decimal, format_money, Locale};
use idem_core::scenario::{is_saved_id, parse_canonical, Field, Scenario};
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use rust_decimal::Decimal;

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
    view! { <Calculator initial saved=None/> }
}

/// `/s/{id}`: a saved scenario, in the calculator.
#[component]
pub fn SavedPage() -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let id = use_params_map().with_untracked(|p| p.get("id").unwrap_or_default());
    let wanted = id.clone();
    let data = Resource::new(
        move || wanted.clone(),
        |id| async move {
            if is_saved_id(&id) {
                load_scenarios(vec![id]).await
            } else {
                Ok(Vec::new())
            }
        },
    );
    view! {
        <Suspense fallback=move || view! { <p>{move || tr(locale.get(), "Carregando…", "Loading…")}</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(found) => match found.into_iter().next() {
                        Some(v) => view! { <Calculator initial=pairs(&v.query) saved=Some(v)/> }.into_any(),
                        None => view! {
                            <h1>{move || tr(locale.get(), "Cenário não encontrado", "Scenario not found")}</h1>
                            <p class="scenario-error" role="alert">{move || tr(locale.get(),
                                "Nenhum cenário salvo tem este link. Confira o endereço, ou monte o cenário de novo na calculadora.",
                                "No saved scenario has this link. Check the address, or build the scenario again in the calculator.")}</p>
                            <p><a href="/">{move || tr(locale.get(), "Abrir a calculadora", "Open the calculator")}</a></p>
                        }.into_any(),
                    },
                    Err(_) => view! {
                        <p class="scenario-error" role="alert">{move || tr(locale.get(),
                            "Não foi possível ler os cenários salvos agora. Tente de novo em instantes.",
                            "Saved scenarios cannot be read right now. Try again in a moment.")}</p>
                    }.into_any(),
                }
            })}
        </Suspense>
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

impl Ref {
    fn param(&self) -> String {
        match self {
            Ref::Saved(id) => id.clone(),
            Ref::Query(q) => encode_param(q),
        }
    }
}

/// One column of the comparison.
struct Column {
    label: String,
    href: String,
    scenario: Result<Scenario, String>,
}

fn compare_href(refs: &[Ref]) -> String {
    let ps: Vec<String> = refs.iter().map(|r| format!("s={}", r.param())).collect();
    format!("/compare?{}", ps.join("&"))
}

/// `/compare?s=…&s=…`: scenarios side by side, with deltas against the first.
#[component]
pub fn ComparePage() -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let refs: Vec<Ref> = use_query_map().with_untracked(|q| {
        q.get_all("s")
            .unwrap_or_default()
            .iter()
            .filter_map(|s| parse_ref(s))
            .take(12)
            .collect()
    });
    let ids: Vec<String> = refs
        .iter()
        .filter_map(|r| match r {
            Ref::Saved(id) if is_saved_id(id) => Some(id.clone()),
            _ => None,
        })
        .collect();
    let data = Resource::new(
        move || ids.clone(),
        |ids| async move {
            if ids.is_empty() {
                Ok(Vec::new())
            } else {
                load_scenarios(ids).await
            }
        },
    );
    view! {
        <h1>{move || tr(locale.get(), "Comparar cenários", "Compare scenarios")}</h1>
        <Suspense fallback=move || view! { <p>{move || tr(locale.get(), "Carregando…", "Loading…")}</p> }>
            {move || {
                let refs = refs.clone();
                Suspend::new(async move {
                    let saved = data.await.unwrap_or_default();
                    view! { <CompareTable refs saved/> }
                })
            }}
        </Suspense>
    }
}

#[component]
fn CompareTable(refs: Vec<Ref>, saved: Vec<SavedView>) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || {
        let l = locale.get();
        let letter = |i: usize| char::from(b'A' + (i % 26) as u8);
        let columns: Vec<Column> = refs
            .iter()
            .enumerate()
            .map(|(i, r)| match r {
                Ref::Saved(id) => match saved.iter().find(|v| &v.id == id) {
                    Some(v) => Column {
                        label: if v.name.is_empty() {
                            format!("{} {}", tr(l, "Cenário", "Scenario"), letter(i))
                        } else {
                            v.name.clone()
                        },
                        href: format!("/s/{id}"),
                        scenario: Scenario::from_query(
                            v.query.split('&').filter_map(|kv| kv.split_once('=')),
                        )
                        .map_err(|e| e.to_string()),
                    },
                    None => Column {
                        label: format!("{} {}", tr(l, "Cenário", "Scenario"), letter(i)),
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
                    label: format!("{} {}", tr(l, "Cenário", "Scenario"), letter(i)),
                    href: format!("/?{q}"),
                    scenario: Scenario::from_query(
                        q.split('&').filter_map(|kv| kv.split_once('=')),
                    )
                    .map_err(|e| format!("{}: {e}", tr(l, "link inválido", "invalid link"))),
                },
            })
            .collect();
        let add_form = add_form(&refs, l);
        if columns.is_empty() {
            return view! {
                <p>{tr(l,
                    "Cole abaixo o link de um cenário (da calculadora ou salvo), ou abra a comparação pelo botão «Comparar» da calculadora.",
                    "Paste a scenario's link below (from the calculator, or a saved one), or open the comparison from the calculator's «Compare» button.")}</p>
                {add_form}
            }
            .into_any();
        }
        let computed: Vec<Option<(Scenario, Vec<crate::calculator::Row>)>> = columns
            .iter()
            .map(|c| {
                let s = c.scenario.as_ref().ok()?;
                let o = s.compute().ok()?;
                Some((s.clone(), rows(s, &o, l)))
            })
            .collect();
        let base = computed.first().cloned().flatten();
        // Inputs worth a row: the duplicate rate always, the others where
        // any two scenarios differ.
        let input_rows = Field::ALL
            .into_iter()
            .filter(|f| {
                let vals: Vec<Option<Decimal>> = computed
                    .iter()
                    .flatten()
                    .map(|(s, _)| f.get(s).map(|d| d.normalize()))
                    .collect();
                *f == Field::DuplicateRate || vals.windows(2).any(|w| w[0] != w[1])
            })
            .map(|f| {
                let cells = computed
                    .iter()
                    .map(|c| match c {
                        Some((s, _)) => f
                            .get(s)
                            .map(|v| crate::calculator::display_text(f, v, l))
                            .unwrap_or_else(|| "—".into()),
                        None => "—".into(),
                    })
                    .map(|v| view! { <td>{v}</td> })
                    .collect_view();
                view! { <tr class="input-row"><th scope="row">{crate::i18n::field_label(f, l)}</th>{cells}</tr> }
            })
            .collect_view();
        let output_keys: Vec<(&'static str, &'static str)> = computed
            .iter()
            .flatten()
            .flat_map(|(_, rs)| rs.iter().map(|r| (r.key, r.label)))
            .fold(Vec::new(), |mut acc, k| {
                if !acc.iter().any(|(key, _)| *key == k.0) {
                    acc.push(k);
                }
                acc
            });
        let output_rows = output_keys
            .into_iter()
            .map(|(key, label)| {
                let base_row = base.as_ref().and_then(|(s, rs)| {
                    rs.iter()
                        .find(|r| r.key == key)
                        .map(|r| (s.currency, r.exact.clone()))
                });
                let cells = computed
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let row = c
                            .as_ref()
                            .and_then(|(s, rs)| rs.iter().find(|r| r.key == key).map(|r| (s, r)));
                        let Some((s, r)) = row else {
                            return view! { <td>"—"</td> }.into_any();
                        };
                        let delta = (i > 0)
                            .then(|| delta_text(key, base_row.as_ref(), s, &r.exact, l))
                            .flatten();
                        view! {
                            <td data-key=key>
                                <span class="value">{r.value.clone()}</span>
                                {delta.map(|d| view! { <span class="delta">{d}</span> })}
                            </td>
                        }
                        .into_any()
                    })
                    .collect_view();
                view! { <tr data-key=key><th scope="row">{label}</th>{cells}</tr> }
            })
            .collect_view();
        let headers = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let rest: Vec<Ref> = refs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, r)| r.clone())
                    .collect();
                let error = c.scenario.as_ref().err().cloned();
                view! {
                    <th scope="col">
                        <a class="scenario-link" rel="external" href=c.href.clone()>{c.label.clone()}</a>
                        " "
                        <a class="remove" rel="external" href=compare_href(&rest) title=tr(l, "Tirar da comparação", "Remove from the comparison")>"×"</a>
                        {error.map(|e| view! { <p class="scenario-error" role="alert">{e}</p> })}
                    </th>
                }
            })
            .collect_view();
        view! {
            <p class="note">{tr(l,
                "Diferenças em relação ao primeiro cenário: absoluta e relativa.",
                "Differences from the first scenario: absolute and relative.")}</p>
            <div class="compare-scroll">
                <table class="compare" id="compare-table">
                    <thead><tr><th scope="col">{tr(l, "Cenário", "Scenario")}</th>{headers}</tr></thead>
                    <tbody>{input_rows}{output_rows}</tbody>
                </table>
            </div>
            {add_form}
        }
        .into_any()
    }
}

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
    if *base_cur != s.currency {
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
            let m = format_money(d.abs(), l, s.currency);
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

fn add_form(refs: &[Ref], l: Locale) -> impl IntoView {
    let hidden = refs
        .iter()
        .map(|r| {
            let value = match r {
                Ref::Saved(id) => id.clone(),
                Ref::Query(q) => q.clone(),
            };
            view! { <input type="hidden" name="s" value=value/> }
        })
        .collect_view();
    // Quick variants of the first scenario: the same with fewer duplicates.
    let variants = refs.first().and_then(|first| match first {
        Ref::Query(q) => {
            Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('='))).ok()
        }
        Ref::Saved(_) => None,
    });
    let quick = variants.map(|s| {
        [("0.5", "com 0,5% de duplicatas", "with 0.5% duplicates"), ("0", "com idem (0% de duplicatas)", "with idem (0% duplicates)")]
            .into_iter()
            .filter_map(|(rate, pt, en)| {
                let mut v = s.clone();
                v.inputs.duplicate_rate_pct = parse_canonical(rate)?;
                (v != s).then(|| {
                    let mut all = refs.to_vec();
                    all.push(Ref::Query(v.to_query()));
                    view! { <a class="quick-add" rel="external" href=compare_href(&all)>{format!("+ {}", tr(l, pt, en))}</a> }
                })
            })
            .collect_view()
    });
    view! {
        <form class="compare-add" method="get" action="/compare">
            {hidden}
            <label for="compare-add">{tr(l, "Adicionar cenário (link ou id salvo)", "Add a scenario (link or saved id)")}</label>
            <input id="compare-add" name="s" type="text" autocomplete="off" placeholder="/s/… · /?v=1&…"/>
            <button type="submit">{tr(l, "Adicionar", "Add")}</button>
            " "
            {quick}
        </form>
    }
}

/// Any other path.
#[component]
pub fn NotFound() -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    view! {
        <h1>{move || tr(locale.get(), "Página não encontrada", "Page not found")}</h1>
        <p><a href="/">{move || tr(locale.get(), "Abrir a calculadora", "Open the calculator")}</a></p>
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
