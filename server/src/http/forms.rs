//! The pages' half of the trust boundary: a fresh script nonce and the
//! visit's form token for every page, the Content-Security-Policy and
//! `X-Frame-Options` on every HTML answer, the anonymous forms' checks
//! (same origin, form token) and their rate limits, and the open monitor
//! kept from proxied visitors. A layer on the pages' routes only: the API
//! never renders a page (`idem_api::boundary` is the half every route
//! shares).

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use idem_api::error::{ApiError, Problem};
use std::sync::Arc;

/// Middleware on the pages' routes: for a `GET` or `HEAD`, a fresh script
/// nonce and the visit's form token (the cookie's, or a new one) in the
/// request's extensions; on an HTML answer, the policy naming the nonce,
/// `X-Frame-Options: DENY` and a new form token's cookie.
pub async fn pages(mut req: Request, next: Next) -> Response {
    use axum::http::Method;
    let page = matches!(*req.method(), Method::GET | Method::HEAD).then(|| {
        let nonce = new_nonce();
        // The visit's form token: the cookie's, or a new one the response
        // sets (on a page, where the forms that carry it are rendered).
        let (token, minted) = match idem_api::extract::cookie(req.headers(), app::FORM_COOKIE)
            .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            Some(t) => (t, false),
            None => (new_form_token(), true),
        };
        req.extensions_mut().insert(CspNonce(nonce.clone()));
        req.extensions_mut().insert(app::FormToken(token.clone()));
        Page {
            nonce,
            token,
            minted,
        }
    });
    with_page_headers(next.run(req).await, page)
}

/// Middleware on the monitor's routes of a server whose monitor is open
/// (loopback, no admin token): 403 for a request a proxy forwarded that
/// presents no token or session, since its visitor may be anyone.
pub async fn open_monitor(State(open): State<Arc<bool>>, req: Request, next: Next) -> Response {
    let h = req.headers();
    if *open && idem_api::boundary::forwarded(h) && !credentials(h) {
        return ApiError::forbidden(
            Problem::OpenMonitorForwarded,
            "this monitor is open to visitors on this machine only (loopback, no admin token), \
             and this request came through a proxy (it carries Forwarded, Via, X-Forwarded-*, \
             X-Real-IP or another proxy header), so its \
             visitor may be anyone: start idem serve with an admin token (IDEM_ADMIN_TOKEN) to \
             serve the monitor behind a proxy",
        )
        .into_response();
    }
    next.run(req).await
}

/// Whether the request presents a token or a monitor session (which then
/// decides what it sees, wherever it came from).
fn credentials(headers: &HeaderMap) -> bool {
    headers.contains_key(header::AUTHORIZATION)
        || headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|c| {
                c.split(';')
                    .any(|kv| kv.trim_start().starts_with("idem_live="))
            })
}

/// The refusal of a cross-site form post, naming the form.
pub fn cross_site(form: &str) -> ApiError {
    ApiError::forbidden(
        Problem::CrossSite,
        format!("the {form} form is accepted only from this site's own pages (Origin and Sec-Fetch-Site said otherwise)"),
    )
}

/// Whether the visitor reached idem over https: a proxy in front says so
/// with `X-Forwarded-Proto: https` or `Forwarded: proto=https` (idem itself
/// serves plain http).
pub fn came_over_https(headers: &HeaderMap) -> bool {
    let xfp = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let fwd = headers
        .get_all(header::FORWARDED)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split([';', ','])
                .any(|p| p.trim().eq_ignore_ascii_case("proto=https"))
        });
    xfp || fwd
}

/// 429 with `Retry-After`, naming what was limited.
pub fn too_many(detail: &str, wait: std::time::Duration) -> ApiError {
    ApiError::too_many(detail).retry_after(wait.as_secs().max(1))
}

/// A count of events per client address in fixed windows: `max` in each
/// `window`, then refused until the window ends. Remembers at most
/// [`Limiter::ADDRESSES`] addresses (a flood of new ones clears the
/// oldest windows first, never grows the map without end). Requests with
/// no known address (a router called without a socket) share one count.
#[derive(Debug)]
pub struct Limiter {
    max: u32,
    window: std::time::Duration,
    seen: std::sync::Mutex<
        std::collections::HashMap<Option<std::net::IpAddr>, (std::time::Instant, u32)>,
    >,
}

impl Limiter {
    /// Addresses remembered at most.
    pub const ADDRESSES: usize = 100_000;

    /// `max` events per `window` per address (`max` 0: no limit).
    pub fn new(max: u32, window: std::time::Duration) -> Self {
        Self {
            max,
            window,
            seen: std::sync::Mutex::default(),
        }
    }

    /// How long `addr` must wait, when it reached the limit.
    pub fn blocked(&self, addr: Option<std::net::IpAddr>) -> Option<std::time::Duration> {
        if self.max == 0 {
            return None;
        }
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (start, n) = *seen.get(&addr)?;
        let age = start.elapsed();
        (age < self.window && n >= self.max).then(|| self.window - age)
    }

    /// Counts one event of `addr`.
    pub fn count(&self, addr: Option<std::net::IpAddr>) {
        if self.max == 0 {
            return;
        }
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() >= Self::ADDRESSES && !seen.contains_key(&addr) {
            let window = self.window;
            seen.retain(|_, (start, _)| start.elapsed() < window);
            if seen.len() >= Self::ADDRESSES {
                seen.clear();
            }
        }
        let e = seen.entry(addr).or_insert((std::time::Instant::now(), 0));
        if e.0.elapsed() >= self.window {
            *e = (std::time::Instant::now(), 0);
        }
        e.1 = e.1.saturating_add(1);
    }

    /// [`blocked`](Self::blocked), and when not, [`count`](Self::count).
    pub fn take(&self, addr: Option<std::net::IpAddr>) -> Result<(), std::time::Duration> {
        match self.blocked(addr) {
            Some(wait) => Err(wait),
            None => {
                self.count(addr);
                Ok(())
            }
        }
    }
}

/// A count of events per UTC day, all clients together (in this process:
/// each instance counts its own).
#[derive(Debug)]
pub struct DailyCap {
    max: u32,
    today: std::sync::Mutex<(i64, u32)>,
}

impl DailyCap {
    /// `max` events per UTC day (0: no cap).
    pub fn new(max: u32) -> Self {
        Self {
            max,
            today: std::sync::Mutex::new((0, 0)),
        }
    }

    /// Counts one event at `now_ms`, or says how long until the next day
    /// when today's are used up.
    pub fn take(&self, now_ms: i64) -> Result<(), std::time::Duration> {
        if self.max == 0 {
            return Ok(());
        }
        const DAY: i64 = 86_400_000;
        let day = now_ms.div_euclid(DAY);
        let mut t = self
            .today
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if t.0 != day {
            *t = (day, 0);
        }
        if t.1 >= self.max {
            let left = (day + 1) * DAY - now_ms;
            return Err(std::time::Duration::from_millis(
                u64::try_from(left).unwrap_or(0),
            ));
        }
        t.1 += 1;
        Ok(())
    }
}

/// The bounds on anonymous saves (`POST /s`, `POST /c`): per client
/// address in ten-minute windows, and per day.
#[derive(Debug)]
pub struct SaveLimits {
    /// Per address.
    pub per_address: Limiter,
    /// All addresses together.
    pub per_day: DailyCap,
}

impl SaveLimits {
    /// The window [`SaveLimits::per_address`] counts in.
    pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

    /// `per_address` saves per address per ten minutes, `per_day` in all
    /// per day (0: unbounded).
    pub fn new(per_address: u32, per_day: u32) -> Self {
        Self {
            per_address: Limiter::new(per_address, Self::WINDOW),
            per_day: DailyCap::new(per_day),
        }
    }

    /// Counts a save of `addr` at `now_ms`, or the 429 that refuses it.
    pub fn take(&self, addr: Option<std::net::IpAddr>, now_ms: i64) -> Result<(), ApiError> {
        if let Some(wait) = self.per_address.blocked(addr) {
            return Err(too_many(
                "this address saved too many links in the last ten minutes; wait before saving more (saved links stay)",
                wait,
            ));
        }
        self.per_day.take(now_ms).map_err(|wait| {
            too_many(
                "this server took as many saved links as it takes in a day; try again tomorrow (UTC)",
                wait,
            )
        })?;
        self.per_address.count(addr);
        Ok(())
    }
}

/// A page's script nonce, fresh for every request: the page's inline
/// hydration script carries it, and the Content-Security-Policy names it.
#[derive(Debug, Clone)]
pub struct CspNonce(pub String);

/// The policy of an HTML page whose scripts carry `nonce`: nothing from
/// elsewhere, no inline script but the nonced one, WebAssembly allowed to
/// compile (the calculator), no framing (the reconcile form must not be
/// clicked through another site's page), forms posted only here.
pub fn csp(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// What a page's response needs from its request.
struct Page {
    nonce: String,
    token: String,
    minted: bool,
}

fn with_page_headers(mut res: Response, page: Option<Page>) -> Response {
    let h = res.headers_mut();
    let html = h
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if html {
        // An HTML answer to anything but a page's GET has no inline script
        // to allow: a nonce nobody carries.
        let nonce = page.as_ref().map_or_else(new_nonce, |p| p.nonce.clone());
        if let Ok(v) = HeaderValue::from_str(&csp(&nonce)) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        if let Some(p) = page.filter(|p| p.minted) {
            let cookie = format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                app::FORM_COOKIE,
                p.token
            );
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                h.append(header::SET_COOKIE, v);
            }
        }
    }
    res
}

/// 128 random bits, hex.
fn new_form_token() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// Whether an anonymous form (`/s`, `/c`, `/live/login`) carries the
/// visit's form token: a browser that has the `idem_form` cookie must send
/// the same value in the form (a page elsewhere cannot read the cookie).
/// A post with no cookie is no browser visit of this site's (curl, a
/// script): the Origin check decides alone.
pub fn form_token_ok(headers: &HeaderMap, sent: Option<&str>) -> bool {
    match idem_api::extract::cookie(headers, app::FORM_COOKIE) {
        None => true,
        Some(expected) => sent.is_some_and(|s| {
            idem_api::boundary::constant_time_eq(s.as_bytes(), expected.as_bytes())
        }),
    }
}

/// 128 random bits, base64url.
fn new_nonce() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_refuses_past_its_count_until_the_window_ends() {
        let a = Some(std::net::IpAddr::from([10, 0, 0, 1]));
        let b = Some(std::net::IpAddr::from([10, 0, 0, 2]));
        let l = Limiter::new(2, std::time::Duration::from_millis(200));
        assert!(l.take(a).is_ok());
        assert!(l.take(a).is_ok());
        let wait = l.take(a).unwrap_err();
        assert!(wait <= std::time::Duration::from_millis(200));
        assert!(l.take(b).is_ok(), "another address has its own count");
        std::thread::sleep(std::time::Duration::from_millis(220));
        assert!(l.take(a).is_ok(), "a new window starts over");
        let open = Limiter::new(0, std::time::Duration::from_secs(1));
        for _ in 0..10 {
            assert!(open.take(a).is_ok());
        }
    }

    #[test]
    fn the_daily_cap_resets_at_utc_midnight() {
        let cap = DailyCap::new(2);
        let day = 86_400_000 * 20_000;
        assert!(cap.take(day + 5).is_ok());
        assert!(cap.take(day + 6).is_ok());
        let wait = cap.take(day + 86_399_000).unwrap_err();
        assert_eq!(wait, std::time::Duration::from_secs(1));
        assert!(cap.take(day + 86_400_000).is_ok());
    }

    #[test]
    fn https_is_what_the_proxy_says() {
        let mut h = HeaderMap::new();
        assert!(!came_over_https(&h));
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(came_over_https(&h));
        let mut h = HeaderMap::new();
        h.insert(
            header::FORWARDED,
            HeaderValue::from_static("for=1.2.3.4;proto=https"),
        );
        assert!(came_over_https(&h));
    }

    #[test]
    fn the_policy_names_the_nonce_and_forbids_framing() {
        let p = csp("abc");
        assert!(p.contains("'nonce-abc'"));
        assert!(p.contains("frame-ancestors 'none'"));
        assert!(p.starts_with("default-src 'self'"));
        assert_ne!(new_nonce(), new_nonce());
    }
}
