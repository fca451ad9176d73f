//! The trust boundary's checks that every route shares: which `Host` an
//! open server answers, whether a form post comes from this site, and the
//! headers every response carries (a Content-Security-Policy with a fresh
//! nonce on every page), and the anonymous forms' token. A leaf: it imports
//! only the error type and the extractors' cookie reader.
//!
//! Why a Host check: a server on a loopback address with no admin token
//! opens the monitor to whoever can reach it, on the theory that only this
//! machine can. A web page elsewhere can still reach it through DNS
//! rebinding (its own name, re-pointed at 127.0.0.1), and the browser then
//! sends that name as `Host`. Answering only loopback names (and the names
//! an operator allows) closes that door; a proxy in front is another
//! visitor again, told apart by its `Forwarded`/`X-Forwarded-For`.

use super::error::{ApiError, Problem};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Which `Host` names the server answers, and whether its monitor is open.
#[derive(Debug, Clone)]
pub struct HostRule {
    /// Enforce the rule: the monitor is open (loopback, no admin token), or
    /// the operator listed names with `--allowed-host`.
    pub enforce: bool,
    /// Names allowed besides loopback ones, lowercase, without a port.
    pub allowed: Vec<String>,
    /// The monitor is open to loopback visitors (then a forwarded request
    /// to it, which is no loopback visitor, is refused).
    pub open_monitor: bool,
    /// How long a request may take before it is answered 503 with its
    /// outcome unknown (`--request-timeout`; `None`: no bound).
    pub deadline: Option<std::time::Duration>,
    /// Writes running to their end at once ([`run_to_end`]), shared
    /// fairly by tenants and anonymous visitors ([`super::turns`]): a write
    /// whose client went away still holds its turn until it ends, so
    /// clients that time out and retry cannot pile up work faster than
    /// the store does it.
    pub turns: Arc<super::turns::Turns>,
}

impl Default for HostRule {
    fn default() -> Self {
        Self::new(false, &[])
    }
}

impl HostRule {
    /// The rule for a server whose monitor is `open`, with the operator's
    /// extra names.
    pub fn new(open: bool, allowed: &[String]) -> Self {
        let allowed: Vec<String> = allowed
            .iter()
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        Self {
            enforce: open || !allowed.is_empty(),
            allowed,
            open_monitor: open,
            deadline: None,
            turns: super::turns::Turns::new(super::turns::TURNS),
        }
    }

    /// Whether `host` (a `Host` header's value, port included) may be
    /// answered.
    pub fn allows(&self, host: &str) -> bool {
        if !self.enforce {
            return true;
        }
        let name = host_name(host).trim_end_matches('.');
        is_loopback_name(name) || self.allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// The name part of a `Host` value: `[::1]:3000` → `::1`, `a.b:80` → `a.b`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// `localhost` (and its subdomains, which resolvers keep on loopback), or a
/// loopback address literal.
fn is_loopback_name(name: &str) -> bool {
    let b = name.as_bytes();
    const SUFFIX: &[u8] = b".localhost";
    name.eq_ignore_ascii_case("localhost")
        || (b.len() > SUFFIX.len() && b[b.len() - SUFFIX.len()..].eq_ignore_ascii_case(SUFFIX))
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The request's `Host`: the header, else the URI's authority (HTTP/2).
fn request_host(req: &Request) -> Option<String> {
    host_of(req.headers(), req.uri())
}

/// The `Host` a request was sent to (the header, else the URI's
/// authority). Behind [`HostRule`] it is one of the names the server
/// answers, so a page may tell its own links from another site's by it.
pub fn host_of(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))
}

/// Whether a proxy says it forwarded the request (`Forwarded`,
/// `X-Forwarded-For`): then the visitor is not on this machine, whatever
/// address the connection came from.
pub fn forwarded(headers: &HeaderMap) -> bool {
    PROXY_HEADERS.iter().any(|h| headers.contains_key(*h))
}

/// The headers proxies, load balancers and CDNs add to say whom they
/// forwarded for, or that they forwarded at all (RFC 7239, RFC 9110's
/// `Via`, and the de facto ones of nginx, Apache, HAProxy, Envoy,
/// Cloudflare, Akamai and Fastly).
pub const PROXY_HEADERS: [&str; 13] = [
    "forwarded",
    "via",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-forwarded-server",
    "x-real-ip",
    "x-client-ip",
    "x-cluster-client-ip",
    "true-client-ip",
    "cf-connecting-ip",
    "fastly-client-ip",
];

/// Why the boundary refuses a request before any route sees it, if it
/// does: 421 for a `Host` the rule does not allow, 403 for a forwarded
/// request without credentials to an open monitor, 431 past the header
/// bounds, 400 for two `Authorization` headers. The probes (`/healthz`,
/// `/readyz`) answer whatever the name: load balancers call them by
/// address.
fn refusal(rule: &HostRule, req: &Request) -> Option<ApiError> {
    let h = req.headers();
    let path = req.uri().path();
    if rule.open_monitor
        && (path == "/live" || path.starts_with("/live/"))
        && forwarded(h)
        && !credentials(h)
    {
        return Some(ApiError::forbidden(
            Problem::OpenMonitorForwarded,
            "this monitor is open to visitors on this machine only (loopback, no admin token), \
             and this request came through a proxy (it carries Forwarded, Via, X-Forwarded-*, \
             X-Real-IP or another proxy header), so its \
             visitor may be anyone: start idem serve with an admin token (IDEM_ADMIN_TOKEN) to \
             serve the monitor behind a proxy",
        ));
    }
    // One name per request: two Host headers, or a target (an absolute-form
    // URI, HTTP/2's :authority) naming another host than the Host header,
    // would let a proxy route by one name while idem checks the other.
    let mut hosts = h.get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Some(ApiError::bad_request("send one Host header, not several"));
    }
    if let (Some(host), Some(authority)) = (first, req.uri().authority()) {
        let same = host
            .to_str()
            .is_ok_and(|h| h.trim().eq_ignore_ascii_case(authority.as_str()));
        if !same {
            return Some(ApiError::bad_request(
                "the request target names another host than the Host header; send one name",
            ));
        }
    }
    if rule.enforce && !matches!(path, "/healthz" | "/readyz") {
        let host = request_host(req).unwrap_or_default();
        if !rule.allows(&host) {
            return Some(ApiError::misdirected(format!(
                "this server answers only requests addressed to localhost or a loopback address \
                 (it runs with an open monitor), and this one was addressed to {:?}; a page that \
                 re-points its own name at this machine must not read it. Behind a proxy, set an \
                 admin token and name the public host with --allowed-host",
                host_name(&host)
            )));
        }
    }
    let bytes: usize = h.iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
    if h.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Some(ApiError::headers_too_large(format!(
            "send at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes of them; this request had {} headers and {bytes} bytes",
            h.len()
        )));
    }
    if h.get_all(header::AUTHORIZATION).iter().nth(1).is_some() {
        // Which one a proxy, a cache and idem each read would differ.
        return Some(ApiError::bad_request(
            "send one Authorization header, not several",
        ));
    }
    None
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

/// Whether a form post comes from this site's own pages. Browsers send
/// `Sec-Fetch-Site` and `Origin` on a post; a page elsewhere must not act
/// with the visitor's session. A post with neither (curl, a script) is no
/// browser's, so no cross-site request forgery: it passes.
pub fn same_origin(headers: &HeaderMap) -> bool {
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v != "same-origin" && v != "none")
    {
        return false;
    }
    match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.trim_end_matches('/').eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
        (None, _) => true,
    }
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

/// Middleware, the trust boundary in one pass: [`refusal`]'s checks on the
/// way in; for a page (a `GET` outside `/v1`), a fresh script nonce and the
/// visit's form token in the request's extensions; on the way out, a `/v1`
/// error the framework answered turned into a problem document, and the
/// headers: `X-Content-Type-Options: nosniff` and `Referrer-Policy:
/// same-origin` on every response (scenario links carry contract figures
/// in their query), the policy, `X-Frame-Options: DENY` and a new form
/// token's cookie on HTML. One layer rather than one per rule: each layer
/// boxes a future per request.
pub async fn boundary(State(rule): State<Arc<HostRule>>, mut req: Request, next: Next) -> Response {
    if let Some(refused) = refusal(&rule, &req) {
        return with_headers(refused.into_response(), None);
    }
    if let Some(super::conn::OverShare(share)) = req.extensions().get::<super::conn::OverShare>() {
        let refused = ApiError::too_many(format!(
            "this address has {share} requests in flight, its share of the server (--max-connections-per-address); retry after Retry-After seconds"
        ))
        .retry_after(1);
        return with_headers(refused.into_response(), None);
    }
    let path = req.uri().path();
    let api = path == "/v1" || path.starts_with("/v1/");
    let page = (!api && matches!(*req.method(), Method::GET | Method::HEAD)).then(|| {
        let nonce = new_nonce();
        // The visit's form token: the cookie's, or a new one the response
        // sets (on a page, where the forms that carry it are rendered).
        let (token, minted) = match super::extract::cookie(req.headers(), app::FORM_COOKIE)
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
    let res = match rule.deadline {
        None => run_to_end(&rule.turns, next, req).await,
        Some(limit) => {
            match tokio::time::timeout(limit, run_to_end(&rule.turns, next, req)).await {
                Ok(res) => res,
                Err(_) => {
                    tracing::error!(
                        limit_ms = limit.as_millis() as u64,
                        "request timed out (--request-timeout); its outcome is unknown"
                    );
                    super::error::ApiError::timed_out(limit).into_response()
                }
            }
        }
    };
    let res = if api { problem_document(res) } else { res };
    with_headers(res, page)
}

/// Runs the rest of the stack. A request that may write (any method but
/// `GET`, `HEAD` and `OPTIONS`) runs in a task of its own: a client that
/// goes away, or the request time-out above, drops this future but never
/// that task, so a write that has begun runs to its end (its transaction
/// commits or rolls back) instead of being cut at whichever await it had
/// reached. Reads are cut where they are, which costs nothing.
///
/// The task writes only once it holds its turn ([`super::turns`]): taken
/// when its body has arrived, after its token was checked, and kept to
/// the task's end. Until then it has begun nothing, and it stops when its
/// client leaves.
async fn run_to_end(turns: &Arc<super::turns::Turns>, next: Next, req: Request) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    // Cancelled when this future is dropped before the task has answered
    // (the client left, or the time-out): a handler that only waits can
    // stop waiting, while one that writes runs on.
    let gone = tokio_util::sync::CancellationToken::new();
    let address = super::conn::client_addr(req.extensions());
    let ticket = super::turns::Ticket::new(turns.clone(), address, gone.clone());
    let (mut parts, body) = req.into_parts();
    parts
        .extensions
        .insert(idem_mcp::guarded::ClientGone(gone.clone()));
    parts.extensions.insert(ticket.clone());
    let body = axum::body::Body::new(super::turns::TurnBody::new(body, ticket.clone()));
    let req = Request::from_parts(parts, body);
    let gone_on_drop = gone.drop_guard();
    let running = async move {
        let res = next.run(req).await;
        ticket.release();
        res
    };
    let answered = tokio::spawn(running).await;
    // Answered: the client is still there.
    let _ = gone_on_drop.disarm();
    match answered {
        Ok(res) => res,
        Err(e) => {
            tracing::error!(error = %e, "a request's handler panicked");
            super::error::ApiError::internal().into_response()
        }
    }
}

/// What a page's response needs from its request.
struct Page {
    nonce: String,
    token: String,
    minted: bool,
}

fn with_headers(mut res: Response, page: Option<Page>) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
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

/// A `/v1` error the framework answered before a handler ran (no such
/// route, a method the route lacks, a body over the limit) as a problem
/// document, keeping its status and the headers that go with it (`Allow`
/// on a 405). The handlers' own errors are problem documents already.
fn problem_document(res: Response) -> Response {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if problem {
        return res;
    }
    let (parts, _) = res.into_parts();
    let mut out = ApiError::from_status(status).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
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
    match super::extract::cookie(headers, app::FORM_COOKIE) {
        None => true,
        Some(expected) => sent.is_some_and(|s| constant_time_eq(s.as_bytes(), expected.as_bytes())),
    }
}

/// Equal bytes, in time that depends on the length only.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 128 random bits, base64url.
fn new_nonce() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The longest `x-request-id` a client may choose (README: 1 to 64 visible
/// ASCII characters).
pub const MAX_REQUEST_ID: usize = 64;

/// Middleware, outside the request-id layers: a client's `x-request-id`
/// that is not 1 to [`MAX_REQUEST_ID`] visible ASCII characters is dropped,
/// so the next layer mints one (the id goes into every log line and back
/// into the response).
pub async fn bound_request_id(mut req: Request, next: Next) -> Response {
    let ids = req.headers().get_all(super::metrics::REQUEST_ID);
    let mut it = ids.iter();
    let keep = match (it.next(), it.next()) {
        (Some(v), None) => {
            let b = v.as_bytes();
            (1..=MAX_REQUEST_ID).contains(&b.len()) && b.iter().all(|c| (0x21..=0x7e).contains(c))
        }
        (None, _) => true,
        _ => false,
    };
    if !keep {
        req.headers_mut().remove(super::metrics::REQUEST_ID);
    }
    next.run(req).await
}

/// Headers a request may carry at most, and their total size: past either,
/// a `/v1` client gets a 431 problem document. Below hyper's own limit of
/// 100 headers (past which hyper answers a bare 431 before any route runs),
/// so a client that sends a few too many learns why; raising hyper's limit
/// instead costs a heap allocation for every request's header table.
pub const MAX_HEADERS: usize = 64;
/// See [`MAX_HEADERS`].
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_and_allowed_ones_pass_an_open_server() {
        let r = HostRule::new(true, &["Idem.Example.com.".to_owned()]);
        for ok in [
            "127.0.0.1:3000",
            "127.9.9.9",
            "localhost",
            "LOCALHOST:80",
            "app.localhost:1",
            "[::1]:3000",
            "idem.example.com",
            "idem.example.com:443",
        ] {
            assert!(r.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "127.0.0.1.evil.example",
            "localhost.evil.example:3000",
            "10.0.0.1:3000",
            "[::ffff:8.8.8.8]",
            "",
            "0.0.0.0:3000",
        ] {
            assert!(!r.allows(bad), "{bad}");
        }
        assert!(HostRule::new(false, &[]).allows("anything"));
    }

    #[test]
    fn cross_site_posts_are_told_apart() {
        let mut h = HeaderMap::new();
        assert!(same_origin(&h), "a post without Origin (curl, a script)");
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:3000"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000"),
        );
        assert!(same_origin(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(!same_origin(&h));
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("same-site"));
        assert!(!same_origin(&h), "a sibling subdomain is another site here");
    }

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
