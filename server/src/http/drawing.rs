//! How a chart route answers, for the calculator's charts and the
//! monitor's alike: PNG renders bounded, and `If-None-Match` read.

use crate::charts::{ChartError, Format};
use axum::http::{header, HeaderMap};

/// PNG renders running at once: each takes a few milliseconds of CPU and
/// up to width × height × 3 bytes of pixels (about 16 MB at 2560 px), so
/// a burst of downloads waits its turn instead of taking the memory and
/// the cores the API needs.
static PNG_RENDERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Draws a chart: an SVG (a fraction of a millisecond) on the request's
/// task; a PNG on the blocking pool, at most [`PNG_RENDERS`] at once.
pub async fn draw(
    format: Format,
    render: impl FnOnce() -> Option<Result<Vec<u8>, ChartError>> + Send + 'static,
) -> Option<Result<Vec<u8>, ChartError>> {
    if format == Format::Svg {
        return render();
    }
    let Ok(_permit) = PNG_RENDERS.acquire().await else {
        return None;
    };
    tokio::task::spawn_blocking(render)
        .await
        .unwrap_or_else(|e| Some(Err(ChartError::from(e.to_string()))))
}

/// Whether the request's `If-None-Match` names `etag`.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
}
