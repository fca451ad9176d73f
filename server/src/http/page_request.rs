//! What a page reads from its request: the locale (query, then cookie) and
//! a scenario link's query. The API's extractors are `idem_api::extract`;
//! these belong to the pages, which answer in a language and in plain text.

use app::i18n::LOCALE_COOKIE;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use idem_api::extract::cookie;
use idem_core::locale::Locale;

/// The locale a request asks for, and whether it asked in the query (then
/// the choice is also kept in a cookie): `lang` in the query, else the
/// cookie, else pt-BR.
pub fn request_locale(parts: &Parts) -> (Locale, bool) {
    match query_locale(&parts.uri) {
        Some(l) => (l, true),
        None => (cookie_locale(&parts.headers), false),
    }
}

fn query_locale(uri: &axum::http::Uri) -> Option<Locale> {
    uri.query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == "lang")
            .filter_map(|(_, v)| Locale::from_tag(v))
            .next_back()
    })
}

/// The locale the `idem_lang` cookie names, else pt-BR.
pub fn cookie_locale(headers: &axum::http::HeaderMap) -> Locale {
    cookie(headers, LOCALE_COOKIE)
        .and_then(|v| Locale::from_tag(&v))
        .unwrap_or_default()
}

/// [`request_locale`]'s choice, from a request's address and headers.
pub fn request_locale_of(uri: &axum::http::Uri, headers: &axum::http::HeaderMap) -> Locale {
    query_locale(uri).unwrap_or_else(|| cookie_locale(headers))
}

/// A scenario link's query (v1 or v2) and its `lang`, for the pages that
/// draw or export a scenario (`/charts/…`, `/export.csv`). A query the
/// calculator refuses is answered 422 in plain text, in the calculator's
/// own words and the request's language.
#[derive(Debug, Clone)]
pub struct ScenarioQuery {
    /// The scenario.
    pub scenario: idem_core::scenario::Scenario,
    /// `lang`, else pt-BR.
    pub locale: Locale,
}

impl<S: Send + Sync> FromRequestParts<S> for ScenarioQuery {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let locale = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "lang")
            .and_then(|(_, v)| Locale::from_tag(v))
            .unwrap_or_default();
        // A date only labels the rate: one that names no day, or one that
        // has not begun anywhere yet, blocks no figure and no export (the
        // rate goes out undated).
        let read = idem_core::scenario::Scenario::from_query_for_figures(
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        match read {
            Ok(mut scenario) => {
                let latest = crate::today::latest_today();
                scenario.fx_date = scenario
                    .fx_date
                    .filter(|d| idem_core::date::not_after(d, &latest).is_ok());
                Ok(ScenarioQuery { scenario, locale })
            }
            Err(e) => Err(idem_api::error::plain_text(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                app::i18n::query_error_text(&e, locale),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    #[test]
    fn the_locale_comes_from_the_query_then_the_cookie() {
        let parts = |uri: &str, cookie: Option<&str>| {
            let mut b = axum::http::Request::builder().uri(uri);
            if let Some(c) = cookie {
                b = b.header(header::COOKIE, c);
            }
            b.body(()).map(|r| r.into_parts().0).ok()
        };
        let p = parts("/?lang=en-US", Some("idem_lang=pt-BR")).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::EnUs, true));
        let p = parts("/", Some("a=b; idem_lang=en-US")).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::EnUs, false));
        let p = parts("/?lang=xx", None).unwrap_or_else(|| unreachable!());
        assert_eq!(request_locale(&p), (Locale::PtBr, false));
    }
}
