//! `GET /charts/{name}.svg?<scenario query>&lang=`: the calculator's
//! charts as images with a stable address, drawn on the server (the page
//! shows them with `<img>`, and anyone can paste the address into a slide).
//!
//! The query is a scenario link's (v1 or v2); a query the calculator
//! refuses gets 422 with the same reason, an unknown chart 404. The body
//! depends only on the query, so the `ETag` is a hash of it and the answer
//! may be cached for a day.

use super::error::plain_text;
use super::extract::ScenarioQuery;
use axum::extract::Path;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The chart.
#[tracing::instrument(level = "debug", skip(query, headers))]
pub async fn svg(Path(file): Path<String>, query: ScenarioQuery, headers: HeaderMap) -> Response {
    let Some(name) = file
        .strip_suffix(".svg")
        .filter(|n| app::charts::NAMES.contains(n))
    else {
        return plain_text(
            StatusCode::NOT_FOUND,
            format!(
                "no chart `{file}`; the charts are {}",
                app::charts::NAMES.map(|n| format!("{n}.svg")).join(", ")
            ),
        );
    };
    let ScenarioQuery { scenario, locale } = query;
    let outputs = match scenario.compute() {
        Ok(o) => o,
        Err(e) => {
            return plain_text(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("the scenario cannot be computed: {e}"),
            )
        }
    };
    // What the drawing depends on: the chart, the canonical scenario and the
    // language (equal scenarios written differently share a tag).
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(scenario.to_query().as_bytes());
    h.update([0]);
    h.update(locale.tag().as_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    let digest = h.finalize();
    let etag = format!("\"{}\"", hex::encode(&digest[..12]));
    let cache = (header::CACHE_CONTROL, "public, max-age=86400".to_owned());
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag), cache]).into_response();
    }
    let Some(body) = app::charts::chart_svg(name, &scenario, &outputs, locale) else {
        return plain_text(StatusCode::NOT_FOUND, format!("no chart `{file}`"));
    };
    (
        [
            (
                header::CONTENT_TYPE,
                "image/svg+xml; charset=utf-8".to_owned(),
            ),
            (header::ETAG, etag),
            cache,
        ],
        body,
    )
        .into_response()
}
