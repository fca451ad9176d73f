//! The trust boundary every route shares: which `Host` an open server
//! answers, one name and one `Authorization` per request, the header
//! bounds, each address's share, the request deadline, writes that run to
//! their end whatever the client does, and the headers every response
//! carries. The pages add their own layer in the server (script nonces,
//! form tokens, the Content-Security-Policy); the API adds
//! [`problem_document`]. A leaf: it imports the error type, the connection
//! loop's extensions and the write turns.
//!
//! Why a Host check: a server on a loopback address with no admin token
//! opens the monitor to whoever can reach it, on the theory that only this
//! machine can. A web page elsewhere can still reach it through DNS
//! rebinding (its own name, re-pointed at 127.0.0.1), and the browser then
//! sends that name as `Host`. Answering only loopback names (and the names
//! an operator allows) closes that door; a proxy in front is another
//! visitor again, told apart by its `Forwarded`/`X-Forwarded-For`.

use super::error::ApiError;
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
/// does: 421 for a `Host` the rule does not allow, 431 past the header
/// bounds, 400 for two `Host` or `Authorization` headers. The probes (`/healthz`,
/// `/readyz`) answer whatever the name: load balancers call them by
/// address.
fn refusal(rule: &HostRule, req: &Request) -> Option<ApiError> {
    let h = req.headers();
    let path = req.uri().path();
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

/// Middleware, the trust boundary every route shares, in one pass:
/// [`refusal`]'s checks on the way in, the per-address share, the request
/// deadline and [`run_to_end`]; on the way out, `X-Content-Type-Options:
/// nosniff` and `Referrer-Policy: same-origin` on every response (scenario
/// links carry contract figures in their query). What only the API or only
/// the pages need is a layer of their own routes: [`problem_document`] on
/// `/v1`, the pages' nonce, form token and policy in the server. One layer
/// rather than one per rule: each layer boxes a future per request.
pub async fn boundary(State(rule): State<Arc<HostRule>>, req: Request, next: Next) -> Response {
    if let Some(refused) = refusal(&rule, &req) {
        return with_headers(refused.into_response());
    }
    if let Some(super::conn::OverShare(share)) = req.extensions().get::<super::conn::OverShare>() {
        let refused = ApiError::too_many(format!(
            "this address has {share} requests in flight, its share of the server (--max-connections-per-address); retry after Retry-After seconds"
        ))
        .retry_after(1);
        return with_headers(refused.into_response());
    }
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
    with_headers(res)
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

fn with_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    res
}

/// A layer of the `/v1` routes (`axum::middleware::map_response`): an
/// error the framework answered before a handler ran (no such route, a
/// method the route lacks, a body over the limit) as a problem document, keeping its status and the headers that go with it (`Allow`
/// on a 405). The handlers' own errors are problem documents already.
pub async fn problem_document(res: Response) -> Response {
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

/// Equal bytes, in time that depends on the length only.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
}
