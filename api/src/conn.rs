//! Serving connections with bounds a slow or hostile client cannot stretch:
//! a time limit on a request's headers, a time limit on a connection that
//! moves no bytes, and a bound on connections open at once. A leaf: it
//! knows sockets and hyper, not the routes.
//!
//! axum's own `serve` sets no timer, so hyper's header timeout would never
//! run, and a client sending one header byte at a time could hold its
//! socket for as long as it liked. Here a watchdog per connection counts
//! the requests in flight on it (HTTP/1 and HTTP/2 alike, a response's body
//! until its last byte): with none in flight, the connection has the header
//! timeout to start one, whatever else it sends (HTTP/2 PING and SETTINGS
//! frames, a preface and nothing, half a request's headers); with one in
//! flight, a connection that moves no byte either way for the idle timeout
//! is closed (a body sent a byte a minute is as much an attack as slow
//! headers). The accept loop waits for a free slot instead of opening a
//! task per socket without end; the kernel's backlog holds the rest.
//!
//! HTTP/2 is served in cleartext too (prior knowledge, `h2c`), for gRPC-
//! style clients and load balancers that speak it to their backends; the
//! same bounds hold for it, and at most [`H2_MAX_STREAMS`] streams run at
//! once on one connection.

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The bounds on client connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// How long a client has to send a request's headers, counted from the
    /// moment the server waits for them: from accepting the connection,
    /// and on a kept-alive connection from the end of the previous
    /// response (so it also closes an idle keep-alive connection).
    pub header_timeout: Duration,
    /// A connection that moves no byte either way for this long is closed,
    /// mid-request included (a stalled body upload).
    pub idle_timeout: Duration,
    /// Connections served at once; further ones wait in the kernel's
    /// accept queue until one closes.
    pub max_connections: usize,
    /// Connections one client address may hold at once, and requests it
    /// may have in flight at once (HTTP/2 streams count like connections:
    /// one connection's 64 streams are no way around it). 0: a quarter of
    /// `max_connections` for remote addresses, and no share for loopback
    /// ones, where every local process has the same address and a share
    /// would let one of them lock out every other. One connection past it
    /// is closed as soon as it is accepted; one request past it is
    /// answered 429. Behind a proxy every client shares the proxy's
    /// address: set it to `max_connections` there.
    pub max_per_address: usize,
    /// How long one request may take, from its headers to its response's
    /// head, before the client gets 503 with the outcome unknown: the
    /// bound that holds when a database host vanishes without a reset
    /// (no keepalive in sqlx: a statement's socket would wait forever).
    pub request_timeout: Duration,
    /// Live-feed streams (`/live/events`) open at once, every viewer
    /// together; never more than a quarter of `max_connections`, so feeds
    /// cannot take the slots ordinary requests need. Past it a feed is
    /// refused with 503 and the page polls instead.
    pub max_feeds: usize,
    /// How long one feed stream lives before the server ends it (the
    /// browser's EventSource reconnects at once, and is counted again).
    pub feed_max_age: Duration,
}

impl ConnLimits {
    /// The connections (and requests in flight) one address may hold:
    /// `max_per_address`, or a quarter of the connections when it is 0;
    /// at least one.
    pub fn per_address(&self) -> usize {
        match self.max_per_address {
            0 => (self.max_connections / 4).max(1),
            n => n,
        }
    }

    /// [`Self::per_address`] for `ip`: none for a loopback address unless
    /// the operator set `max_per_address`.
    pub fn share_of(&self, ip: std::net::IpAddr) -> Option<usize> {
        (self.max_per_address != 0 || !is_loopback(ip)).then(|| self.per_address())
    }

    /// The feed streams allowed at once: `max_feeds`, at most a quarter of
    /// the connections, at least one.
    pub fn feed_slots(&self) -> usize {
        self.max_feeds.min(self.max_connections / 4).max(1)
    }
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_per_address: 0,
            request_timeout: Duration::from_secs(30),
            max_feeds: 64,
            feed_max_age: Duration::from_secs(600),
        }
    }
}

/// Streams one HTTP/2 connection may run at once.
pub const H2_MAX_STREAMS: u32 = 64;

/// How long requests in flight may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` within `limits` until `shutdown`
/// resolves, then lets the requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_MAX_STREAMS)
        .max_header_list_size(64 * 1024);
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let by_address = PerAddress::default();
    let requests_by_address = PerAddress::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, or a connection reset while
                    // queued: neither is the listener's end.
                    tracing::warn!(error = %e, "accept failed; retrying shortly");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let share = limits.share_of(remote.ip());
        let Some(held) = by_address.take(remote.ip(), share) else {
            tracing::debug!(%remote, "closing a connection: its address holds its share of the connections already");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (io, last) = Watched::new(stream);
        let requests = Requests::new();
        let router = router.clone();
        let counted = requests.clone();
        let in_flight = requests_by_address.clone();
        let service = hyper::service::service_fn(
            move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(remote));
                let running = counted.start();
                let requests = counted.clone();
                // Requests in flight count against the address like
                // connections: an HTTP/2 connection's streams included.
                let slot = in_flight.take(remote.ip(), share);
                if slot.is_none() {
                    tracing::debug!(%remote, "refusing a request: its address has its share of requests in flight");
                    req.extensions_mut().insert(OverShare(share.unwrap_or(0)));
                }
                let res = router.clone().oneshot(req.map(axum::body::Body::new));
                async move {
                    let res = res.await?;
                    // The request counts until its response's last byte
                    // (or until hyper drops the body: a reset stream).
                    Ok::<_, std::convert::Infallible>(res.map(|b| {
                        axum::body::Body::new(Counted {
                            inner: b,
                            waiting: requests.body_mark(),
                            since: requests.ended.clone(),
                            _running: running,
                            _slot: slot,
                        })
                    }))
                }
            },
        );
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            tokio::select! {
                r = conn => if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                why = watchdog(&requests, &last, limits) => {
                    tracing::debug!(%remote, "closing a connection: {why}");
                }
            }
            drop(held);
            drop(permit);
        });
    }
    drop(listener);
    // Requests in flight finish; new ones on kept-alive connections are
    // refused (hyper sends `connection: close`). A feed (server-sent
    // events) never finishes by itself: past the grace, what is left is
    // dropped.
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!(
            "connections still open {SHUTDOWN_GRACE:?} after shutdown began; closing them"
        );
    }
    Ok(())
}

/// Resolves once the connection should close: no request in flight for
/// the header timeout, one in flight and no byte moved for the idle
/// timeout, or a response the client has not taken a byte of for the
/// request timeout (an HTTP/2 flow-control window kept at 0, an HTTP/1
/// client that does not read), whatever else it sends meanwhile: PINGs
/// move bytes, but they do not move the response. Says which.
async fn watchdog(requests: &Requests, bytes: &Activity, limits: ConnLimits) -> &'static str {
    loop {
        if !limits.request_timeout.is_zero() && requests.stalled_for() >= limits.request_timeout {
            return "a response waited for the client to take its next byte for the request timeout";
        }
        let wait = if requests.in_flight() == 0 {
            let since = requests.idle_for();
            if since >= limits.header_timeout {
                return "no request started within the header timeout";
            }
            limits.header_timeout - since
        } else {
            let since = bytes.since();
            if since >= limits.idle_timeout {
                return "a request in flight moved no byte for the idle timeout";
            }
            limits.idle_timeout - since
        };
        // A request starting or ending is noticed at the next wake-up, at
        // most a quarter of a second later.
        tokio::time::sleep(wait.min(Duration::from_millis(250))).await;
    }
}

/// How many connections (or requests) each client address holds.
#[derive(Clone, Default)]
struct PerAddress {
    held: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
}

/// One connection's (or request's) place in its address's count, given
/// back on drop.
struct AddressSlot {
    of: PerAddress,
    ip: std::net::IpAddr,
}

impl PerAddress {
    /// A place for one more from `ip`, unless it holds `cap` already
    /// (`None`: no cap, counted all the same).
    fn take(&self, ip: std::net::IpAddr, cap: Option<usize>) -> Option<AddressSlot> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(ip).or_insert(0);
        if cap.is_some_and(|cap| *n >= cap.max(1)) {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            of: self.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut held = self.of.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// The requests in flight on one connection, and when the last one ended.
#[derive(Clone)]
struct Requests {
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
    ended: Activity,
    /// Each response body's [`Counted::waiting`] mark, while it lives.
    bodies: Arc<std::sync::Mutex<Vec<std::sync::Weak<AtomicU64>>>>,
}

impl Requests {
    fn new() -> Self {
        Self {
            in_flight: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            ended: Activity {
                opened: Instant::now(),
                last_ms: Arc::new(AtomicU64::new(0)),
            },
            bodies: Arc::default(),
        }
    }

    /// A new response body's mark, counted from now as waiting for the
    /// client (hyper has not asked it for a byte yet).
    fn body_mark(&self) -> Arc<AtomicU64> {
        let mark = Arc::new(AtomicU64::new(self.ended.now_mark()));
        let mut bodies = self.bodies.lock().unwrap_or_else(|p| p.into_inner());
        bodies.retain(|w| w.strong_count() > 0);
        bodies.push(Arc::downgrade(&mark));
        mark
    }

    /// How long the longest-waiting response has waited for the client
    /// to take what it has (zero when none waits).
    fn stalled_for(&self) -> Duration {
        let bodies = self.bodies.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = bodies
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(|m| m.load(Ordering::Relaxed))
            .filter(|&m| m != 0)
            .min();
        match oldest {
            Some(m) => self
                .ended
                .opened
                .elapsed()
                .saturating_sub(Duration::from_millis(m - 1)),
            None => Duration::ZERO,
        }
    }

    fn start(&self) -> Running {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Running(self.clone())
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// How long since the last request ended (or the connection opened).
    fn idle_for(&self) -> Duration {
        self.ended.since()
    }
}

/// One request in flight; it ends when this is dropped.
struct Running(Requests);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.ended.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted until it is done, and
/// notes when it waits for the client rather than for itself.
struct Counted {
    inner: axum::body::Body,
    /// Since when (a mark of [`Activity::now_mark`]) hyper has not asked
    /// for the next frame although the last one was ready: hyper asks
    /// again once the client has room for it (HTTP/2's window, the socket's
    /// buffer), so a mark that stays is a client that does not take the
    /// response. 0 while the body itself is not ready (a feed waiting for
    /// its next event): that is the server's wait, not the client's.
    waiting: Arc<AtomicU64>,
    since: Activity,
    _running: Running,
    /// The request's place in its address's share, when it has one.
    _slot: Option<AddressSlot>,
}

impl hyper::body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let mark = match &polled {
            Poll::Ready(Some(Ok(_))) => self.since.now_mark(),
            _ => 0,
        };
        self.waiting.store(mark, Ordering::Relaxed);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// When the connection last moved a byte, in milliseconds since it opened.
#[derive(Clone)]
struct Activity {
    opened: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Activity {
    fn touch(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Now, as a mark: milliseconds since the connection opened, plus one
    /// (0 means none).
    fn now_mark(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    fn since(&self) -> Duration {
        let now = self.opened.elapsed();
        now.saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// A socket that notes when it last read or wrote a byte.
struct Watched {
    inner: TcpStream,
    activity: Activity,
}

impl Watched {
    fn new(inner: TcpStream) -> (Self, Activity) {
        let activity = Activity {
            opened: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        };
        (
            Self {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A loopback address, IPv4-mapped IPv6 included.
fn is_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        v4 => v4.is_loopback(),
    }
}

/// Marks a request that came past its address's share of requests in
/// flight: the trust boundary answers it 429 before any route runs (the
/// answer is a problem document, which this leaf does not write).
#[derive(Debug, Clone, Copy)]
pub struct OverShare(pub usize);

/// The client's address, where the connection loop recorded it (tests that
/// call the router directly have none).
pub fn client_addr(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}
