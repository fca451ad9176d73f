//! Serving connections with bounds a slow or hostile client cannot stretch:
//! a time limit on a request's headers, a time limit on a connection that
//! moves no bytes, and a bound on connections open at once. A leaf: it
//! knows sockets and hyper, not the routes.
//!
//! axum's own `serve` sets no timer, so hyper's header timeout would never
//! run, and a client sending one header byte at a time could hold its
//! socket for as long as it liked. Here hyper gets tokio's timer and the limit,
//! a watchdog closes a connection that stays silent both ways (a body sent
//! a byte a minute is as much an attack as slow headers), and the accept
//! loop waits for a free slot instead of opening a task per socket without
//! end; the kernel's backlog holds the rest.

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
    /// How long one request may take, from its headers to its response's
    /// head, before the client gets 503 with the outcome unknown: the
    /// bound that holds when a database host vanishes without a reset
    /// (no keepalive in sqlx: a statement's socket would wait forever).
    pub request_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            request_timeout: Duration::from_secs(30),
        }
    }
}

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
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
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
        let _ = stream.set_nodelay(true);
        let (io, last) = Watched::new(stream);
        let router = router.clone();
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(remote));
                router.clone().oneshot(req.map(axum::body::Body::new))
            });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
        let conn = graceful.watch(conn.into_owned());
        let idle = limits.idle_timeout;
        tokio::spawn(async move {
            tokio::select! {
                r = conn => if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                () = silent_for(&last, idle) => {
                    tracing::debug!(%remote, "closing a connection that moved no bytes for {idle:?}");
                }
            }
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

/// Resolves once nothing moved on the connection for `idle`.
async fn silent_for(last: &Activity, idle: Duration) {
    loop {
        let since = last.since();
        if since >= idle {
            return;
        }
        tokio::time::sleep(idle - since).await;
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

/// The client's address, where the connection loop recorded it (tests that
/// call the router directly have none).
pub fn client_addr(extensions: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}
