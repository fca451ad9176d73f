//! `GET /prices?q=&back=&lang=`: the calculator's model picker, a page the
//! server renders from the bundled price table (the wasm never carries the
//! table). Each model links back to the calculator with its prices filled
//! into the scenario the reader came from (`back`, a scenario query), so
//! the picker works the same with and without JavaScript.

use super::extract::request_locale;
use crate::prices::{table, ModelPrice};
use app::i18n::tr;
use app::markup::{esc, scroll_open, SCROLL_CLOSE};
use axum::extract::{Query, State};
use axum::http::{header, request::Parts};
use axum::response::{Html, IntoResponse, Response};
use idem_core::locale::{format_decimal, Locale};
use idem_core::scenario::Scenario;
use leptos::config::LeptosOptions;
use std::fmt::Write;

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
fn site_header(back: &str, q: &str, l: Locale) -> String {
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
    let current = |to: Locale| {
        if to == l {
            " aria-current=\"true\""
        } else {
            ""
        }
    };
    format!(
        "<header class=\"top\"><span class=\"brand\">idem</span>\
         <span class=\"tagline\">{tagline}</span>\
         <nav class=\"pages\"><a href=\"{calc}\" rel=\"external\">{calc_label}</a>\
         <a href=\"{compare}\" rel=\"external\">{compare_label}</a>\
         <a href=\"/live?{lang}\" rel=\"external\">{live_label}</a></nav>\
         <nav class=\"locale\" aria-label=\"Idioma / Language\">\
         <a href=\"{pt}\" hreflang=\"pt-BR\" id=\"lang-pt-BR\"{pt_current}>Português</a>\
         <a href=\"{en}\" hreflang=\"en-US\" id=\"lang-en-US\"{en_current}>English</a></nav></header>",
        tagline = tr(
            l,
            "Dinheiro e chamadas de modelo que executam uma vez só",
            "Money and model calls that execute once"
        ),
        calc = esc(&format!("/?{scenario}&{}", lang(l))),
        calc_label = tr(l, "Calculadora", "Calculator"),
        compare = esc(&format!("/compare?s={}&{}", encode(scenario), lang(l))),
        compare_label = tr(l, "Comparar", "Compare"),
        lang = lang(l),
        live_label = tr(l, "Ao vivo", "Live"),
        pt = esc(&here(Locale::PtBr)),
        en = esc(&here(Locale::EnUs)),
        pt_current = current(Locale::PtBr),
        en_current = current(Locale::EnUs),
    )
}

/// Percent-encodes text to travel as one query value.
fn encode(v: &str) -> String {
    form_urlencoded::byte_serialize(v.as_bytes()).collect()
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
    let n = |d| format_decimal(d, l, 2, 10);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"/{pkg}/{css}.css\"></head><body>\
         {header}<main>\
         <h1>{title}</h1><p class=\"note\">{source} {date}. {explain}</p>\
         <form method=\"get\" action=\"/prices\" role=\"search\">\
         <input type=\"hidden\" name=\"back\" value=\"{back}\"><input type=\"hidden\" name=\"lang\" value=\"{lang}\">\
         <label for=\"model-q\">{label}</label> <input id=\"model-q\" name=\"q\" type=\"search\" value=\"{q}\" autofocus \
         placeholder=\"claude sonnet · gpt-4.1 mini · gemini\"> <button type=\"submit\">{search}</button></form>",
        lang = l.tag(),
        pkg = site.site_pkg_dir,
        css = site.output_name,
        title = tr(l, "Preços de um modelo", "A model's prices"),
        header = site_header(back, q, l),
        source = tr(l, "Tabela genai-prices (pydantic, licença MIT), preços em vigor em", "The genai-prices table (pydantic, MIT licence), prices in effect on"),
        date = t.date,
        explain = tr(
            l,
            "Preços em US$ por 1M de tokens. Escolher um modelo leva os preços para a calculadora e guarda no link o modelo e os preços, que não mudam quando a tabela for atualizada.",
            "Prices in US$ per 1M tokens. Choosing a model takes its prices to the calculator and keeps the model and the prices in the link, which do not change when the table is updated."
        ),
        back = esc(back),
        label = tr(l, "Buscar modelo", "Search models"),
        q = esc(q),
        search = tr(l, "Buscar", "Search"),
    );
    if !q.is_empty() && hits.is_empty() {
        let _ = write!(
            out,
            "<p class=\"scenario-error\" role=\"alert\">{}</p>",
            tr(
                l,
                "Nenhum modelo da tabela tem essas palavras.",
                "No model in the table has those words."
            )
        );
    }
    if !hits.is_empty() {
        let _ = write!(
            out,
            "{}<table id=\"price-results\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>",
            scroll_open(tr(l, "Modelos encontrados", "Models found"), l),
            tr(l, "Modelo", "Model"),
            tr(l, "Entrada", "Input"),
            tr(l, "Entrada em cache", "Cached input"),
            tr(l, "Saída", "Output"),
        );
        for m in hits {
            let cached = match m.cached {
                Some(c) => format!("US$ {}", n(c)),
                None => tr(l, "sem desconto (= entrada)", "no discount (= input)").to_owned(),
            };
            let tier = if m.tiered {
                format!(
                    " <small>{}</small>",
                    tr(
                        l,
                        "faixa base; prompts longos custam mais",
                        "base tier; long prompts cost more"
                    )
                )
            } else {
                String::new()
            };
            let _ = write!(
                out,
                // The link sits with the model's name, first in the row,
                // so a phone shows it without scrolling the table sideways.
                "<tr data-model=\"{id}\"><th scope=\"row\"><code>{id}</code><br><small>{provider} · {name}</small>{tier}\
                 <br><a class=\"use-model\" rel=\"external\" href=\"{href}\">{use_it}</a></th>\
                 <td>US$ {input}</td><td>{cached}</td><td>US$ {output}</td></tr>",
                id = esc(&m.id),
                provider = esc(m.provider_name),
                name = esc(m.name),
                input = n(m.input),
                output = n(m.output),
                href = esc(&use_href(back, m, t.date, l)),
                use_it = tr(l, "Usar estes preços", "Use these prices"),
            );
        }
        out.push_str("</tbody></table>");
        out.push_str(SCROLL_CLOSE);
    }
    out.push_str("</main></body></html>");
    ([(header::CACHE_CONTROL, "no-cache")], Html(out)).into_response()
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
