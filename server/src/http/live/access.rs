//! Who may look at the monitor: the admin token, a tenant's API token, or
//! the session cookie `/live/login` sets; the CSRF token of its forms; and
//! sign-in and sign-out.

use super::COOKIE;
use crate::http::live::state::LiveState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use idem_api::error::ApiError;
use idem_core::locale::Locale;
use idem_core::TenantId;
use std::time::Duration;

/// Who is looking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// Every tenant.
    Admin,
    /// One tenant only.
    Tenant(TenantId),
}

/// What a request presents: a bearer token, else the login session's id.
pub(super) enum Presented {
    Token(String),
    Session(String),
}

pub(super) fn presented(headers: &HeaderMap) -> Option<Presented> {
    idem_api::extract::bearer(headers)
        .ok()
        .map(|t| Presented::Token(t.to_owned()))
        .or_else(|| idem_api::extract::cookie(headers, COOKIE).map(Presented::Session))
}

/// The viewer a request speaks for: `Ok(None)` when it may not look.
/// A presented token or session always decides (a tenant token narrows
/// even the open monitor to its tenant); a bad one is refused, not ignored.
pub(super) async fn viewer(
    state: &LiveState,
    headers: &HeaderMap,
) -> Result<Option<Viewer>, ApiError> {
    match presented(headers) {
        Some(Presented::Token(t)) if state.access.admin.as_ref().is_some_and(|a| a.matches(&t)) => {
            Ok(Some(Viewer::Admin))
        }
        Some(Presented::Token(t)) => match state.api.store.authenticate(&t).await {
            Ok(tenant) => Ok(Some(Viewer::Tenant(tenant))),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => Ok(None),
            Err(e) => Err(e.into()),
        },
        Some(Presented::Session(id)) => match state.api.store.live_session(&id).await {
            // An admin session holds while the admin token it was opened
            // with is the one configured now.
            Ok(idem_store::SessionOwner::Admin { token_digest }) => Ok(state
                .access
                .admin
                .as_ref()
                .filter(|a| a.digest_hex() == token_digest)
                .map(|_| Viewer::Admin)),
            Ok(idem_store::SessionOwner::Tenant { tenant, .. }) => Ok(Some(Viewer::Tenant(tenant))),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => Ok(None),
            Err(e) => Err(e.into()),
        },
        None if state.access.open_to(headers) => Ok(Some(Viewer::Admin)),
        None => Ok(None),
    }
}

/// The form token of a request's login session: a digest of the session
/// id, so a page elsewhere, which cannot read the HttpOnly cookie, cannot
/// know it. `None` without a session (a bearer token or the open monitor,
/// where no cookie rides along and the Origin check suffices).
pub fn csrf_token(headers: &HeaderMap) -> Option<String> {
    if idem_api::extract::bearer(headers).is_ok() {
        return None;
    }
    let id = idem_api::extract::cookie(headers, COOKIE)?;
    let mut h = <sha2::Sha256 as sha2::Digest>::new();
    sha2::Digest::update(&mut h, b"idem live form v1\n");
    sha2::Digest::update(&mut h, id.as_bytes());
    Some(hex::encode(&sha2::Digest::finalize(h)[..16]))
}

/// Whether a form post carries its session's form token (or needs none).
pub fn csrf_ok(headers: &HeaderMap, sent: Option<&str>) -> bool {
    match csrf_token(headers) {
        None => true,
        // Constant time: the comparison says nothing of how much matched.
        Some(expected) => sent.is_some_and(|s| {
            idem_api::boundary::constant_time_eq(s.as_bytes(), expected.as_bytes())
        }),
    }
}

pub(super) async fn authorized(state: &LiveState, headers: &HeaderMap) -> Result<Viewer, ApiError> {
    viewer(state, headers)
        .await?
        .ok_or_else(|| ApiError::unauthorized(presented(headers).is_some()))
}

/// `POST /live/login` form.
#[derive(Debug, serde::Deserialize)]
pub struct LoginForm {
    token: String,
    #[serde(default)]
    lang: Option<String>,
    #[serde(default)]
    form_token: Option<String>,
}

/// How long a monitor session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// `POST /live/login`: checks the token and opens a session, whose random
/// id (never the token) goes into an HttpOnly cookie; a refused token goes
/// back to the form with the reason. Failures are counted per client
/// address: past the limit the answer is 429 with `Retry-After`.
pub async fn login(
    State(state): State<LiveState>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    Form(form): Form<LoginForm>,
) -> Response {
    let lang = form
        .lang
        .as_deref()
        .and_then(Locale::from_tag)
        .unwrap_or_default();
    if !idem_api::boundary::same_origin(&headers)
        || !crate::http::forms::form_token_ok(&headers, form.form_token.as_deref())
    {
        return crate::http::forms::cross_site("login").into_response();
    }
    let client = idem_api::conn::client_addr(&ext);
    if let Some(wait) = state.login_failures.blocked(client) {
        return crate::http::forms::too_many(
            "too many refused sign-ins from this address; wait before trying again",
            wait,
        )
        .into_response();
    }
    let token = form.token.trim();
    let owner = if token.is_empty() {
        None
    } else if let Some(a) = state.access.admin.as_ref().filter(|a| a.matches(token)) {
        Some(idem_store::SessionOwner::Admin {
            token_digest: a.digest_hex(),
        })
    } else {
        match state.api.store.authenticate(token).await {
            Ok(tenant) => Some(idem_store::SessionOwner::Tenant {
                tenant,
                token_hash: idem_store::token_hash(token),
            }),
            Err(idem_store::Error::NotFound | idem_store::Error::TenantDisabled(_)) => None,
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let Some(owner) = owner else {
        state.login_failures.count(client);
        return Redirect::to(&format!("/live?lang={}&login=failed", lang.tag())).into_response();
    };
    let id = match state.api.store.open_live_session(&owner, SESSION_TTL).await {
        Ok(id) => id,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let mut res = Redirect::to(&format!("/live?lang={}", lang.tag())).into_response();
    // HttpOnly keeps scripts from reading the id, SameSite=Strict keeps
    // other sites from sending it, Secure keeps it off plain http where the
    // visitor came over https.
    let cookie = axum_extra::extract::cookie::Cookie::build((COOKIE, id.expose().to_owned()))
        .path("/")
        .http_only(true)
        .secure(state.access.cookie_secure || crate::http::forms::came_over_https(&headers))
        .same_site(axum_extra::extract::cookie::SameSite::Strict)
        .max_age(time::Duration::seconds(SESSION_TTL.as_secs() as i64))
        .build();
    if let Ok(v) = HeaderValue::from_str(&cookie.to_string()) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

/// `POST /live/logout` form.
#[derive(Debug, serde::Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrf: Option<String>,
    #[serde(default)]
    lang: Option<String>,
}

/// `POST /live/logout`: ends the session in the database (a copied cookie
/// stops working too) and clears the cookie.
pub async fn logout(
    State(state): State<LiveState>,
    headers: HeaderMap,
    Form(form): Form<LogoutForm>,
) -> Response {
    if !idem_api::boundary::same_origin(&headers) || !csrf_ok(&headers, form.csrf.as_deref()) {
        return crate::http::forms::cross_site("logout").into_response();
    }
    if let Some(id) = idem_api::extract::cookie(&headers, COOKIE) {
        if let Err(e) = state.api.store.end_live_session(&id).await {
            return ApiError::from(e).into_response();
        }
    }
    let lang = form
        .lang
        .as_deref()
        .and_then(Locale::from_tag)
        .unwrap_or_default();
    let mut res = Redirect::to(&format!("/live?lang={}", lang.tag())).into_response();
    let gone = axum_extra::extract::cookie::Cookie::build((COOKIE, ""))
        .path("/")
        .http_only(true)
        .same_site(axum_extra::extract::cookie::SameSite::Strict)
        .max_age(time::Duration::ZERO)
        .build();
    if let Ok(v) = HeaderValue::from_str(&gone.to_string()) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}
