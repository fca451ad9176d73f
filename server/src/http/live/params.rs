//! The monitor's query (`tenant`, `window`, `lang`), read strictly.

use super::data::Window;
use axum::extract::Query;
use axum::http::HeaderMap;
use idem_api::error::ApiError;
use idem_core::locale::Locale;
use idem_core::TenantId;

/// The monitor's query: `tenant`, `window` (1h, 24h, 7d, 30d), `lang`.
#[derive(Debug, Clone, Default)]
pub struct LiveQuery {
    /// A tenant to narrow to.
    pub tenant: Option<String>,
    /// The window.
    pub window: Window,
    /// The page's language.
    pub locale: Locale,
}

impl LiveQuery {
    pub(super) fn parse(pairs: &[(String, String)], locale: Locale) -> Result<Self, String> {
        let mut q = LiveQuery {
            locale,
            ..Self::default()
        };
        for (k, v) in pairs {
            match k.as_str() {
                "tenant" if v.is_empty() => q.tenant = None,
                "tenant" => {
                    TenantId::try_from(v.as_str()).map_err(|e| format!("tenant: {e}"))?;
                    q.tenant = Some(v.clone());
                }
                "window" => {
                    q.window = Window::parse(v)
                        .ok_or_else(|| format!("window={v:?}: use 1h, 24h, 7d or 30d"))?;
                }
                "lang" => {
                    if let Some(l) = Locale::from_tag(v) {
                        q.locale = l;
                    }
                }
                _ => {}
            }
        }
        Ok(q)
    }

    pub(super) fn feed(&self, path: &str) -> String {
        let mut s = format!(
            "{path}?window={}&lang={}",
            self.window.as_str(),
            self.locale.tag()
        );
        if let Some(t) = &self.tenant {
            s.push('&');
            s.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .append_pair("tenant", t)
                    .finish(),
            );
        }
        s
    }
}

pub(super) fn query_of(
    pairs: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
    headers: &HeaderMap,
) -> Result<LiveQuery, ApiError> {
    let Query(pairs) = pairs.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let cookie_locale = crate::http::page_request::cookie_locale(headers);
    LiveQuery::parse(&pairs, cookie_locale).map_err(ApiError::unprocessable)
}
