//! `GET /prices?q=&back=&lang=`: the calculator's model picker, a page the
//! server renders from the bundled price table (the wasm never carries the
//! table). Each model links back to the calculator with its prices filled
//! into the scenario the reader came from (`back`, a scenario query), so
//! the picker works the same with and without JavaScript.

use super::page_request::request_locale;
use crate::markup::scrolling;
use crate::prices::{table, ModelPrice};
use app::i18n::tr;
use axum::extract::{Query, State};
use axum::http::{header, request::Parts};
use axum::response::{Html, IntoResponse, Response};
use idem_core::locale::{format_decimal, Locale};
use idem_core::scenario::Scenario;
use leptos::config::LeptosOptions;
use maud::{html, Markup, DOCTYPE};

/// The most models one search lists.
pub const MAX_RESULTS: usize = 60;

/// The calculator link that takes `m`'s prices into the scenario `back`
/// (every other input kept). A `back` that is not a scenario starts from
/// the reference one.
pub fn use_href(back: &str, m: &ModelPrice, date: &str, l: Locale) -> String {
    let pairs: Vec<(&str, &str)> = back
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let mut s = Scenario::from_query(pairs.iter().copied()).unwrap_or_default();
    let before = (s.inputs.price_currency, s.inputs.revenue_currency);
    let rate = s.inputs.fx;
    m.fill(&mut s, date);
    // A rate belongs to the two currencies it was quoted for: when the
    // model's prices are in another currency, the rate goes, and the link
    // says which one went so the calculator can ask for the new pair's.
    let mut dropped = String::new();
    if (s.inputs.price_currency, s.inputs.revenue_currency) != before {
        s.inputs.fx = None;
        s.fx_date = None;
        if let Some(r) = rate {
            dropped = format!("&pxd={}:{}", before.0.code(), r.normalize());
        }
    }
    let lang = match l {
        Locale::PtBr => "",
        Locale::EnUs => "&lang=en-US",
    };
    format!("/?{}{dropped}{lang}", s.to_query())
}

/// The site's header, as the other pages show it (the page links and the
/// language switch), written by the server: this page has no wasm. Every
/// link keeps the scenario the reader came from.
fn site_header(back: &str, q: &str, l: Locale) -> Markup {
    let scenario = if back.is_empty() { "v=2" } else { back };
    let lang = |to: Locale| match to {
        Locale::PtBr => "lang=pt-BR",
        Locale::EnUs => "lang=en-US",
    };
    let here = |to: Locale| {
        let mut h = format!("/prices?back={}", encode(back));
        if !q.is_empty() {
            h.push_str("&q=");
            h.push_str(&encode(q));
        }
        h.push('&');
        h.push_str(lang(to));
        h
    };
    let current = |to: Locale| (to == l).then_some("true");
    html! {
        header class="top" {
            span class="brand" { "idem" }
            span class="tagline" {
                (tr(l, "Dinheiro e chamadas de modelo que executam uma vez só", "Money and model calls that execute once"))
            }
            nav class="pages" {
                a href=(format!("/?{scenario}&{}", lang(l))) rel="external" { (tr(l, "Calculadora", "Calculator")) }
                a href=(format!("/compare?s={}&{}", encode(scenario), lang(l))) rel="external" { (tr(l, "Comparar", "Compare")) }
                a href=(format!("/live?{}", lang(l))) rel="external" { (tr(l, "Ao vivo", "Live")) }
            }
            nav class="locale" aria-label="Idioma / Language" {
                a href=(here(Locale::PtBr)) hreflang="pt-BR" id="lang-pt-BR" aria-current=[current(Locale::PtBr)] { "Português" }
                a href=(here(Locale::EnUs)) hreflang="en-US" id="lang-en-US" aria-current=[current(Locale::EnUs)] { "English" }
            }
        }
    }
}

/// Percent-encodes text to travel as one query value.
fn encode(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// The table of the models a search found: the link that takes a model's
/// prices sits with its name, first in the row, so a phone shows it
/// without scrolling the table sideways.
fn results(hits: &[&ModelPrice], back: &str, date: &str, l: Locale) -> Markup {
    let n = |d| format_decimal(d, l, 2, 10);
    scrolling(
        tr(l, "Modelos encontrados", "Models found"),
        l,
        html! {
            table id="price-results" {
                thead { tr {
                    th scope="col" { (tr(l, "Modelo", "Model")) }
                    th scope="col" { (tr(l, "Entrada", "Input")) }
                    th scope="col" { (tr(l, "Entrada em cache", "Cached input")) }
                    th scope="col" { (tr(l, "Saída", "Output")) }
                } }
                tbody {
                    @for m in hits {
                        tr data-model=(m.id) {
                            th scope="row" {
                                code { (m.id) }
                                br;
                                small { (m.provider_name) " · " (m.name) }
                                @if m.tiered {
                                    " "
                                    small { (tr(l, "faixa base; prompts longos custam mais", "base tier; long prompts cost more")) }
                                }
                                br;
                                a class="use-model" rel="external" href=(use_href(back, m, date, l)) {
                                    (tr(l, "Usar estes preços", "Use these prices"))
                                }
                            }
                            td { "US$ " (n(m.input)) }
                            td {
                                @match m.cached {
                                    Some(c) => { "US$ " (n(c)) }
                                    None => (tr(l, "sem desconto (= entrada)", "no discount (= input)")),
                                }
                            }
                            td { "US$ " (n(m.output)) }
                        }
                    }
                }
            }
        },
    )
}

/// The page.
#[tracing::instrument(level = "debug", skip(parts, pairs))]
pub async fn page(
    State(site): State<LeptosOptions>,
    parts: Parts,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let (l, _) = request_locale(&parts);
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let q = get("q").trim();
    let back = get("back");
    let t = table();
    let hits = if q.is_empty() {
        Vec::new()
    } else {
        t.search(q, MAX_RESULTS)
    };
    let title = tr(l, "Preços de um modelo", "A model's prices");
    let page = html! {
        (DOCTYPE)
        html lang=(l.tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href=(format!("/{}/{}.css", site.site_pkg_dir, site.output_name));
            }
            body {
                (site_header(back, q, l))
                main {
                    h1 { (title) }
                    p class="note" {
                        (tr(l, "Tabela genai-prices (pydantic, licença MIT), preços em vigor em", "The genai-prices table (pydantic, MIT licence), prices in effect on"))
                        " " (t.date) ". "
                        (tr(l,
                            "Preços em US$ por 1M de tokens. Escolher um modelo leva os preços para a calculadora e guarda no link o modelo e os preços, que não mudam quando a tabela for atualizada.",
                            "Prices in US$ per 1M tokens. Choosing a model takes its prices to the calculator and keeps the model and the prices in the link, which do not change when the table is updated."))
                    }
                    form method="get" action="/prices" role="search" {
                        input type="hidden" name="back" value=(back);
                        input type="hidden" name="lang" value=(l.tag());
                        label for="model-q" { (tr(l, "Buscar modelo", "Search models")) }
                        " "
                        input id="model-q" name="q" type="search" value=(q) autofocus
                            placeholder="claude sonnet · gpt-4.1 mini · gemini";
                        " "
                        button type="submit" { (tr(l, "Buscar", "Search")) }
                    }
                    @if !q.is_empty() && hits.is_empty() {
                        p class="scenario-error" role="alert" {
                            (tr(l, "Nenhum modelo da tabela tem essas palavras.", "No model in the table has those words."))
                        }
                    }
                    @if !hits.is_empty() {
                        (results(&hits, back, t.date, l))
                    }
                }
            }
        }
    };
    (
        [(header::CACHE_CONTROL, "no-cache")],
        Html(page.into_string()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_keeps_the_rest_of_the_scenario() {
        let t = table();
        let m = t
            .get("anthropic/claude-3-5-sonnet")
            .unwrap_or_else(|| unreachable!());
        let href = use_href(
            "v=2&c=1000&pc=USD&px=5.33&pd=2026-11-30",
            m,
            "2026-12-01",
            Locale::PtBr,
        );
        assert_eq!(
            href,
            "/?v=2&c=1000&pi=3&pca=0.3&po=15&px=5.33&u=1m&pc=USD&pd=2026-11-30&m=anthropic/claude-3-5-sonnet&md=2026-12-01"
        );
        // A v1 link, or none, starts from what it means.
        assert!(use_href("", m, "2026-12-01", Locale::EnUs).ends_with("&lang=en-US"));
    }

    #[test]
    fn a_rate_for_another_pair_is_dropped_and_named() {
        let t = table();
        let m = t
            .get("openai/gpt-4o-mini")
            .unwrap_or_else(|| unreachable!());
        // A euro rate never becomes a dollar rate.
        let href = use_href(
            "v=2&c=45000&pc=EUR&px=6.1&pd=2026-12-01",
            m,
            "2026-12-01",
            Locale::PtBr,
        );
        assert!(!href.contains("px=") && !href.contains("pd="), "{href}");
        assert!(
            href.contains("pc=USD") && href.contains("&pxd=EUR:6.1"),
            "{href}"
        );
        let pairs: Vec<(&str, &str)> = href[2..]
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .collect();
        assert!(
            Scenario::from_query(pairs).is_err(),
            "the link asks for the dollar's rate: {href}"
        );
        // Prices in reais had no rate to keep.
        let href = use_href("v=2&c=1000", m, "2026-12-01", Locale::PtBr);
        assert!(!href.contains("px") && !href.contains("pxd"), "{href}");
    }
}
