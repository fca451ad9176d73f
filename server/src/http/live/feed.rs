//! The monitor's feeds: server-sent events (`/live/events`) and the
//! polling fragment (`/live/fragment`).

use super::access::{authorized, Viewer};
use super::data::LiveData;
use super::params::{query_of, LiveQuery};
use super::render;
use super::snapshot::{scope, snapshot};
use super::{HEARTBEAT, TICK};
use crate::http::live::state::LiveState;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::Stream;
use idem_api::error::ApiError;
use idem_core::locale::Locale;
use std::time::Instant;

/// Which markup a feed carries.
pub(super) fn markup(data: &LiveData, panel: bool, l: Locale) -> String {
    if panel {
        render::panel_html(data, l)
    } else {
        render::live_html(data, l)
    }
}

pub(super) fn is_panel(
    pairs: &Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> bool {
    pairs
        .as_ref()
        .map(|q| q.0.iter().any(|(k, v)| k == "view" && v == "panel"))
        .unwrap_or(false)
}

/// `GET /live/fragment`: the current markup, for browsers that poll.
pub async fn fragment(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let panel = is_panel(&pairs);
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        markup(&data, panel, q.locale),
    )
        .into_response())
}

/// `GET /live/events`: server-sent events. `snapshot` carries new markup
/// when the numbers change; `heartbeat` comes at least every second otherwise;
/// `trouble` says the database could not be read (the page shows stale).
pub async fn events(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let panel = is_panel(&pairs);
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    // Refused before the stream opens, so a bad query gets a status.
    scope(&state, &v, &q).await?;
    let Ok(slot) = state.feeds.slots.clone().try_acquire_owned() else {
        return Err(ApiError::feeds_full(state.feeds.cap));
    };
    let ends = Instant::now() + state.feeds.max_age;
    let closing = state.feeds.closing.subscribe();
    struct Feed {
        state: LiveState,
        viewer: Viewer,
        q: LiveQuery,
        panel: bool,
        last: Option<i64>,
        last_html: String,
        sent: Instant,
        first: bool,
        ends: Instant,
        closing: tokio::sync::watch::Receiver<bool>,
        _slot: tokio::sync::OwnedSemaphorePermit,
    }
    let feed = Feed {
        state,
        viewer: v,
        q,
        panel,
        last: None,
        last_html: String::new(),
        sent: Instant::now(),
        first: true,
        ends,
        closing,
        _slot: slot,
    };
    let stream = futures_util::stream::unfold(feed, |mut f| async move {
        loop {
            if Instant::now() >= f.ends {
                // The stream's age is up: the browser reconnects at once
                // (and takes a slot again, if one is free).
                return None;
            }
            if *f.closing.borrow() {
                // The server is going away: the browser sees the stream
                // end and says it lost the feed.
                return None;
            }
            if !f.first {
                tokio::select! {
                    () = tokio::time::sleep(TICK) => {}
                    _ = f.closing.changed() => return None,
                }
            }
            f.first = false;
            match snapshot(&f.state, &f.viewer, &f.q).await {
                Ok(data) => {
                    if f.last == Some(data.generated_ms) && f.sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    f.last = Some(data.generated_ms);
                    let html = markup(&data, f.panel, f.q.locale);
                    let changed = html != f.last_html;
                    if !changed && f.sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    f.sent = Instant::now();
                    let event = if changed {
                        f.last_html = html.clone();
                        Event::default().event("snapshot").data(html)
                    } else {
                        Event::default()
                            .event("heartbeat")
                            .data(data.generated_ms.to_string())
                    };
                    return Some((Ok(event), f));
                }
                Err(_) => {
                    f.sent = Instant::now();
                    return Some((
                        Ok(Event::default()
                            .event("trouble")
                            .data("the database cannot be read")),
                        f,
                    ));
                }
            }
        }
    });
    // Fused, as every streamed body: a layer may poll past the end.
    Ok(Sse::new(futures_util::StreamExt::fuse(stream)).keep_alive(KeepAlive::default()))
}
