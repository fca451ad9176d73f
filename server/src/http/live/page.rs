//! The monitor as pages (`/live`, `/live/actions/{key}`, and the panel on
//! `/`) and as JSON (`/live/data.json`).

use super::access::{authorized, csrf_token, viewer};
use super::data::Window;
use super::feed::markup;
use super::params::{query_of, LiveQuery};
use super::snapshot::snapshot;
use super::{action, render};
use crate::http::live::state::LiveState;
use crate::http::page::PageView;
use crate::http::state::AppState;
use app::Page;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use idem_api::error::ApiError;
use idem_core::locale::Locale;

/// `GET /live/data.json`: the numbers as JSON.
pub async fn data_json(
    State(state): State<LiveState>,
    headers: HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query_of(pairs, &headers)?;
    let v = authorized(&state, &headers).await?;
    let data = snapshot(&state, &v, &q).await?;
    Ok((
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        axum::Json(&*data),
    )
        .into_response())
}

/// `GET /live`: the monitor. 401 with the sign-in form for a visitor who
/// has not signed in, 422 (saying why) for an address it cannot read, and
/// the snapshot's own status when the numbers cannot be read.
pub async fn page(
    State(state): State<AppState>,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
    req: Request,
) -> Response {
    // An address whose query does not decode is read as having none.
    let pairs = pairs.map(|Query(p)| p).unwrap_or_default();
    let locale = crate::http::page::locale(&req);
    let form_token = crate::http::page::form_token(&req);
    let (status, html) = monitor(&state.live, req.headers(), &form_token, &pairs, locale).await;
    let view = PageView::new(live_page(html)).status(status);
    crate::http::page::render(state.leptos_options, req, view).await
}

/// `GET /live/actions/{key}`: one action's page, where an on-call engineer
/// settles it.
pub async fn action_page(
    State(state): State<AppState>,
    key: Result<Path<String>, PathRejection>,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
    req: Request,
) -> Response {
    // A key that does not decode names no action: `action::page` answers
    // 404 for it, as for an unknown one.
    let key = key.map(|Path(k)| k).unwrap_or_default();
    let pairs = pairs.map(|Query(p)| p).unwrap_or_default();
    let locale = crate::http::page::locale(&req);
    let form_token = crate::http::page::form_token(&req);
    let (status, html) = action::page(
        &state.live,
        req.headers(),
        &key,
        &pairs,
        &form_token,
        locale,
    )
    .await;
    let view = PageView::new(live_page(html)).status(status);
    crate::http::page::render(state.leptos_options, req, view).await
}

/// The monitor's markup as a page (`#live-page`, which `public/live.js`
/// redraws).
fn live_page(html: String) -> Page {
    crate::http::page::markup(maud::html! { div id="live-page" { (maud::PreEscaped(html)) } })
}

/// The calculator's live panel. It reads no numbers while the page
/// renders: the calculator is the hot page, and the feed's first event
/// fills the panel a moment after it arrives.
pub async fn panel(state: &LiveState, headers: &HeaderMap, locale: Locale) -> String {
    let q = LiveQuery {
        tenant: None,
        window: Window::Day,
        locale,
    };
    let (numbers, feed) = match viewer(state, headers).await {
        Ok(Some(_)) => (
            render::panel_waiting_html(locale),
            q.feed("/live/events") + "&view=panel",
        ),
        Ok(None) | Err(_) => (render::locked_html(locale), String::new()),
    };
    render::panel_frame_html(&numbers, &feed, locale)
}

/// The monitor page's markup and status.
async fn monitor(
    state: &LiveState,
    headers: &HeaderMap,
    form_token: &str,
    pairs: &[(String, String)],
    locale: Locale,
) -> (StatusCode, String) {
    // The calculator ignores what it does not know; the monitor says what
    // is wrong with its address (422) instead of showing another window.
    let (q, refused) = match LiveQuery::parse(pairs, locale) {
        Ok(q) => (q, None),
        Err(why) => (
            LiveQuery {
                locale,
                ..LiveQuery::default()
            },
            Some(why),
        ),
    };
    let login_failed = pairs.iter().any(|(k, v)| k == "login" && v == "failed");
    let l = q.locale;
    let mut status = StatusCode::OK;
    // (controls, numbers, feed)
    let (controls, numbers, feed) = match viewer(state, headers).await {
        Ok(Some(_)) if refused.is_some() => {
            status = StatusCode::UNPROCESSABLE_ENTITY;
            (
                String::new(),
                render::refused_html(refused.as_deref().unwrap_or_default(), l),
                String::new(),
            )
        }
        Ok(Some(v)) => match snapshot(state, &v, &q).await {
            Ok(data) => (
                render::controls_html(&data, l),
                markup(&data, false, l),
                q.feed("/live/events"),
            ),
            Err(e) => {
                status = e.status();
                let why = match e.status() {
                    StatusCode::FORBIDDEN => app::i18n::tr(
                        l,
                        "Este token vê só o próprio tenant.",
                        "This token sees only its own tenant.",
                    ),
                    _ => app::i18n::tr(
                        l,
                        "Não foi possível ler os números agora; tente de novo em instantes.",
                        "The numbers cannot be read right now; try again in a moment.",
                    ),
                };
                (
                    String::new(),
                    maud::html! { p class="field-error" role="alert" { (why) } }.into_string(),
                    String::new(),
                )
            }
        },
        Ok(None) => {
            status = StatusCode::UNAUTHORIZED;
            (
                String::new(),
                render::login_html(l, login_failed, form_token),
                String::new(),
            )
        }
        Err(_) => (String::new(), render::locked_html(l), String::new()),
    };
    // A signed-in visitor can end the session here.
    let controls = match csrf_token(headers) {
        Some(csrf) if !feed.is_empty() => controls + &render::logout_html(&csrf, l),
        _ => controls,
    };
    (status, render::page_html(&controls, &numbers, &feed, l))
}
