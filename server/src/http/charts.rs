//! `GET /charts/{name}.svg?<scenario query>&lang=`: the calculator's and
//! the comparison's charts as images with a stable address, drawn on the
//! server by `crate::charts` (the pages show them with `<img>`, and anyone
//! can paste the address into a slide or a document).
//!
//! - `loss`, `breakdown`, `tornado`: the query is a scenario link's (v1 or
//!   v2), or `s={id}` for a saved scenario.
//! - `compare`: the comparison's `s=` values (saved ids or scenario links),
//!   as on `/compare`.
//! - `format=png` (or the name ending in `.png`) draws a PNG, `width=`
//!   pixels wide (320 to 2560, default 1280).
//!
//! A query the calculator refuses gets 422 with the calculator's words, an
//! unknown chart 404. The body depends only on the inputs, so the `ETag` is
//! a hash of them: saved scenarios never change (their id is a hash of their
//! content), so their charts are cacheable for good; a link's for a day.

use super::drawing::{draw, if_none_match};
use super::page_request::ScenarioQuery;
use super::saved::load;
use super::state::ApiState;
use crate::charts::{compare_chart, scenario_chart, ChartError, Format};
use app::i18n::{query_error_text, tr};
use app::PageScenarios;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use idem_api::error::plain_text;
use idem_core::locale::Locale;
use idem_core::scenario::{is_saved_id, Scenario};
use sha2::{Digest, Sha256};

/// How long a chart of a link may be cached (it changes only with a new
/// release, which the tag carries).
const LINK_CACHE: &str = "public, max-age=86400";
/// A saved scenario's chart: its id is a hash of its content.
const SAVED_CACHE: &str = "public, max-age=31536000, immutable";

/// The chart.
#[tracing::instrument(level = "debug", skip(api, pairs, headers))]
pub async fn image(
    State(api): State<ApiState>,
    Path(file): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    let value = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let locale = value("lang").and_then(Locale::from_tag).unwrap_or_default();
    let (name, format) = match (file.strip_suffix(".svg"), file.strip_suffix(".png")) {
        (Some(n), _) => (n, Format::parse(value("format"), value("width"))),
        (None, Some(n)) => (n, Format::parse(Some("png"), value("width"))),
        (None, None) => ("", Err(String::new())),
    };
    if !(app::charts::NAMES.contains(&name) || name == "compare") {
        return plain_text(
            StatusCode::NOT_FOUND,
            format!(
                "no chart `{file}`; the charts are {}, compare.svg (and .png)",
                app::charts::NAMES.map(|n| format!("{n}.svg")).join(", ")
            ),
        );
    }
    let format = match format {
        Ok(f) => f,
        Err(why) => return plain_text(StatusCode::UNPROCESSABLE_ENTITY, why),
    };
    let saved_values: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "s")
        .map(|(_, v)| v.as_str())
        .collect();
    // What the drawing depends on, for the tag: the chart, its encoding,
    // the canonical inputs, the language and the release.
    let mut tag = Sha256::new();
    tag.update(name.as_bytes());
    tag.update(format!("|{format:?}|{}|", locale.tag()).as_bytes());
    tag.update(env!("CARGO_PKG_VERSION").as_bytes());

    // What to draw, decided here; drawn only once the tag says the client
    // does not already have it.
    let (render, cache) = if name == "compare" {
        // The page writes the chart's address from its accepted columns
        // (saved ids and bare queries), never an absolute link: none is
        // taken here.
        let saved = match saved(
            &api,
            super::compare::saved_ids(saved_values.iter().copied(), None),
        )
        .await
        {
            Ok(s) => s,
            Err(r) => return r,
        };
        let scenarios = super::compare::compare_scenarios(
            saved_values.iter().copied(),
            None,
            &saved.found,
            locale,
        );
        if scenarios.is_empty() {
            return plain_text(
                StatusCode::UNPROCESSABLE_ENTITY,
                tr(
                    locale,
                    "a comparação não tem cenários: passe um ou mais s= (id salvo ou link de cenário)",
                    "the comparison has no scenarios: pass one or more s= (a saved id or a scenario link)",
                ),
            );
        }
        for (label, s) in &scenarios {
            tag.update(label.as_bytes());
            tag.update(
                s.as_ref()
                    .map_or_else(Clone::clone, Scenario::to_query)
                    .as_bytes(),
            );
        }
        let (columns, currency, total) = crate::figures::compare_columns(&scenarios, locale);
        let all_saved = saved_values.iter().all(|v| is_saved_id(v));
        let render: Render =
            Box::new(move || Some(compare_chart(&columns, currency, total, locale, format)));
        (render, if all_saved { SAVED_CACHE } else { LINK_CACHE })
    } else {
        let (scenario, cache) = match value("s") {
            Some(id) => {
                let found = match saved(&api, vec![id.to_owned()]).await {
                    Ok(s) => s.found,
                    Err(r) => return r,
                };
                let Some(view) = found.into_iter().next() else {
                    return plain_text(StatusCode::NOT_FOUND, format!("no saved scenario `{id}`"));
                };
                let read = Scenario::from_query_for_figures(
                    view.query.split('&').filter_map(|kv| kv.split_once('=')),
                );
                (read, SAVED_CACHE)
            }
            None => {
                let read = Scenario::from_query_for_figures(
                    pairs
                        .iter()
                        .filter(|(k, _)| !matches!(k.as_str(), "lang" | "format" | "width"))
                        .map(|(k, v)| (k.as_str(), v.as_str())),
                );
                (read, LINK_CACHE)
            }
        };
        let scenario = match scenario {
            Ok(s) => s,
            Err(e) => {
                return plain_text(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    query_error_text(&e, locale),
                )
            }
        };
        let outputs = match scenario.compute() {
            Ok(o) => o,
            Err(e) => return uncomputable(&e, locale),
        };
        // Equal scenarios written differently share a tag.
        tag.update(scenario.to_query().as_bytes());
        let chart = name.to_owned();
        let render: Render =
            Box::new(move || scenario_chart(&chart, &scenario, &outputs, locale, format));
        (render, cache)
    };
    let etag = format!("\"{}\"", hex::encode(&tag.finalize()[..12]));
    let headers_out = [
        (header::ETAG, etag.clone()),
        (header::CACHE_CONTROL, cache.to_owned()),
    ];
    if if_none_match(&headers, &etag) {
        return (StatusCode::NOT_MODIFIED, headers_out).into_response();
    }
    match draw(format, render).await {
        Some(Ok(body)) => (
            [(header::CONTENT_TYPE, format.content_type().to_owned())],
            headers_out,
            body,
        )
            .into_response(),
        Some(Err(e)) => {
            tracing::error!(error = %e, chart = name, "cannot draw a chart");
            plain_text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the chart could not be drawn",
            )
        }
        None => plain_text(StatusCode::NOT_FOUND, format!("no chart `{file}`")),
    }
}

/// `GET /charts/figures?<scenario query>&lang=`: the calculator's chart
/// figures (heading, image, caption, controls, table) as an HTML fragment,
/// what the page swaps in when the inputs change. Same answers as the
/// images: 422 with the calculator's words for a refused query, an `ETag`
/// of the inputs, cacheable for a day.
#[tracing::instrument(level = "debug", skip(query, headers))]
pub async fn figures(query: ScenarioQuery, headers: HeaderMap) -> Response {
    let ScenarioQuery { scenario, locale } = query;
    let outputs = match scenario.compute() {
        Ok(o) => o,
        Err(e) => return uncomputable(&e, locale),
    };
    let mut tag = Sha256::new();
    tag.update(b"figures|");
    tag.update(scenario.to_query().as_bytes());
    tag.update(format!("|{}|", locale.tag()).as_bytes());
    tag.update(env!("CARGO_PKG_VERSION").as_bytes());
    let etag = format!("\"{}\"", hex::encode(&tag.finalize()[..12]));
    let headers_out = [
        (header::ETAG, etag.clone()),
        (header::CACHE_CONTROL, LINK_CACHE.to_owned()),
    ];
    if if_none_match(&headers, &etag) {
        return (StatusCode::NOT_MODIFIED, headers_out).into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned())],
        headers_out,
        crate::figures::charts_html(&scenario, &outputs, locale).into_string(),
    )
        .into_response()
}

/// A chart to draw: `None` for an unknown name.
type Render = Box<dyn FnOnce() -> Option<Result<Vec<u8>, ChartError>> + Send>;

/// 422 for a scenario that reads but cannot be computed (an overflow).
fn uncomputable(e: &impl std::fmt::Display, locale: Locale) -> Response {
    plain_text(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!(
            "{}: {e}",
            tr(
                locale,
                "o cenário não pode ser calculado",
                "the scenario cannot be computed"
            )
        ),
    )
}

/// The saved scenarios among `ids`; a database failure is a 503.
async fn saved(api: &ApiState, ids: Vec<String>) -> Result<PageScenarios, Response> {
    let ids: Vec<String> = ids.into_iter().filter(|id| is_saved_id(id)).collect();
    if ids.is_empty() {
        return Ok(PageScenarios::default());
    }
    load(&api.store, ids)
        .await
        .map(|found| PageScenarios {
            found,
            failed: false,
        })
        .map_err(|why| plain_text(StatusCode::SERVICE_UNAVAILABLE, why))
}
