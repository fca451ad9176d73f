//! The monitor's charts as images (`/live/charts/{name}.svg|png`).

use super::access::authorized;
use super::data::Window;
use super::params::query_of;
use super::render;
use super::snapshot::snapshot;
use crate::http::live::state::LiveState;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use idem_api::error::ApiError;

/// `GET /live/charts/{name}.svg?window=&tenant=&lang=` (and `format=png`,
/// `width=`): the monitor's charts (`deliveries`, `rate`) as images, with
/// the same access rules as the page. They change with every read, so a
/// client may keep one for a few seconds, privately; the `ETag` is a hash
/// of the drawing.
pub async fn chart(
    State(state): State<LiveState>,
    axum::extract::Path(file): axum::extract::Path<String>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let value = |k: &str| {
        pairs.as_ref().ok().and_then(|q| {
            q.0.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.to_owned())
        })
    };
    let (format, width) = (value("format"), value("width"));
    let (name, format) = match (file.strip_suffix(".svg"), file.strip_suffix(".png")) {
        (Some(n), _) => (
            n,
            crate::charts::Format::parse(format.as_deref(), width.as_deref()),
        ),
        (None, Some(n)) => (
            n,
            crate::charts::Format::parse(Some("png"), width.as_deref()),
        ),
        (None, None) => ("", Err(String::new())),
    };
    let Some(index) = app::charts::LIVE_NAMES.iter().position(|n| *n == name) else {
        return Err(ApiError::body(
            StatusCode::NOT_FOUND,
            "no such chart: the monitor's charts are deliveries.svg and rate.svg",
        ));
    };
    let format = format.map_err(ApiError::unprocessable)?;
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    let points: Vec<crate::charts::SeriesPoint> = data
        .series
        .iter()
        .map(|p| crate::charts::SeriesPoint {
            start_ms: p.start_ms,
            deliveries: p.deliveries,
            redeliveries: p.redeliveries,
            intents: p.intents,
            redelivered_intents: p.redelivered_intents,
        })
        .collect();
    let [deliveries, rate] = render::live_figures(&data, q.locale);
    let figure = if index == 0 { deliveries } else { rate };
    let daily = matches!(q.window, Window::Week | Window::Month);
    let locale = q.locale;
    let chart_name = name.to_owned();
    let drawn = crate::http::drawing::draw(format, move || {
        crate::charts::live_chart(&chart_name, figure, &points, daily, locale, format)
    })
    .await;
    let body = match drawn {
        Some(Ok(body)) => body,
        Some(Err(e)) => {
            tracing::error!(error = %e, chart = name, "cannot draw a monitor chart");
            return Err(ApiError::body(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the chart could not be drawn",
            ));
        }
        None => return Err(ApiError::body(StatusCode::NOT_FOUND, "no such chart")),
    };
    let etag = {
        use sha2::Digest;
        format!("\"{}\"", hex::encode(&sha2::Sha256::digest(&body)[..12]))
    };
    let cache = (header::CACHE_CONTROL, "private, max-age=5".to_owned());
    if crate::http::drawing::if_none_match(&headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag), cache]).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_owned()),
            (header::ETAG, etag),
            cache,
        ],
        body,
    )
        .into_response())
}
