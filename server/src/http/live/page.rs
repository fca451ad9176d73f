//! The monitor as a page (`/live`, and the panel on `/`) and as JSON
//! (`/live/data.json`).

use super::access::{authorized, csrf_token, viewer};
use super::data::Window;
use super::feed::markup;
use super::params::{query_of, LiveQuery};
use super::snapshot::snapshot;
use super::{action, render};
use crate::http::error::ApiError;
use crate::http::state::LiveState;
use app::live::LiveMarkup;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

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

/// Middleware on the pages that show live numbers (`/live`, and the panel
/// on `/`): reads them before the page renders and hands the markup to the
/// render through the request's extensions.
pub async fn live_markup(
    State(state): State<LiveState>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path().to_owned();
    if let Some(raw) = path.strip_prefix("/live/actions/") {
        let pairs: Vec<(String, String)> = Query::<Vec<(String, String)>>::try_from_uri(req.uri())
            .map(|q| q.0)
            .unwrap_or_default();
        let l = crate::http::extract::request_locale_of(req.uri(), req.headers());
        let form_token = req
            .extensions()
            .get::<app::FormToken>()
            .map(|t| t.0.clone())
            .unwrap_or_default();
        let (status, html) = action::page(&state, req.headers(), raw, &pairs, &form_token, l).await;
        req.extensions_mut().insert(LiveMarkup { html });
        let mut res = next.run(req).await;
        if status != StatusCode::OK && res.status() == StatusCode::OK {
            *res.status_mut() = status;
        }
        return res;
    }
    let page = path == "/live";
    if !page && path != "/" {
        return next.run(req).await;
    }
    let pairs: Vec<(String, String)> = Query::<Vec<(String, String)>>::try_from_uri(req.uri())
        .map(|q| q.0)
        .unwrap_or_default();
    let locale = crate::http::extract::request_locale_of(req.uri(), req.headers());
    // The calculator ignores what it does not know; the monitor says what
    // is wrong with its address (422) instead of showing another window.
    let (q, refused) = match LiveQuery::parse(&pairs, locale) {
        Ok(q) => (q, None),
        Err(why) => (
            LiveQuery {
                locale,
                ..LiveQuery::default()
            },
            page.then_some(why),
        ),
    };
    let q = if page {
        q
    } else {
        LiveQuery {
            tenant: None,
            window: Window::Day,
            locale,
        }
    };
    let login_failed = pairs.iter().any(|(k, v)| k == "login" && v == "failed");
    let l = q.locale;
    let mut status = StatusCode::OK;
    // (controls, numbers, feed)
    let (controls, numbers, feed) = match viewer(&state, req.headers()).await {
        Ok(Some(_)) if refused.is_some() => {
            status = StatusCode::UNPROCESSABLE_ENTITY;
            (
                String::new(),
                render::refused_html(refused.as_deref().unwrap_or_default(), l),
                String::new(),
            )
        }
        // The calculator's panel reads nothing while the page renders: the
        // calculator is the hot page, and the feed's first event fills the
        // panel a moment after it arrives.
        Ok(Some(_)) if !page => (
            String::new(),
            render::panel_waiting_html(l),
            q.feed("/live/events") + "&view=panel",
        ),
        Ok(Some(v)) => match snapshot(&state, &v, &q).await {
            Ok(data) => (
                render::controls_html(&data, l),
                markup(&data, false, l),
                q.feed("/live/events"),
            ),
            Err(e) => {
                if page {
                    status = e.status();
                }
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
                    format!("<p class=\"field-error\" role=\"alert\">{why}</p>"),
                    String::new(),
                )
            }
        },
        Ok(None) => {
            if page {
                status = StatusCode::UNAUTHORIZED;
            }
            let numbers = if page {
                render::login_html(
                    l,
                    login_failed,
                    &req.extensions()
                        .get::<app::FormToken>()
                        .map(|t| t.0.clone())
                        .unwrap_or_default(),
                )
            } else {
                render::locked_html(l)
            };
            (String::new(), numbers, String::new())
        }
        Err(_) => (String::new(), render::locked_html(l), String::new()),
    };
    // A signed-in visitor can end the session here.
    let controls = match csrf_token(req.headers()) {
        Some(csrf) if page && !feed.is_empty() => controls + &render::logout_html(&csrf, l),
        _ => controls,
    };
    let html = if page {
        render::page_html(&controls, &numbers, &feed, l)
    } else {
        render::panel_frame_html(&numbers, &feed, l)
    };
    let m = LiveMarkup { html };
    req.extensions_mut().insert(m);
    let mut res = next.run(req).await;
    if status != StatusCode::OK && res.status() == StatusCode::OK {
        *res.status_mut() = status;
    }
    res
}
