//! Write turns, shared fairly: a request that may write runs in a task of
//! its own to its end (see `guard::boundary`), and takes one of a bounded
//! number of turns to do so. A leaf: it knows bodies and tokens, not routes.
//!
//! Three rules keep a client from taking the server from everyone:
//!
//! - **A turn is taken once the request could be answered by the store:**
//!   after its token was checked (a tokenless request is refused before
//!   its body is read) and after its whole body arrived ([`TurnBody`]
//!   holds the body's end until the turn is granted). A slow upload holds
//!   a connection, bounded by the connection's time-outs, never a turn.
//! - **Turns are shared by who asks:** a tenant (by its token), or, for
//!   the site's anonymous forms, the client's address. One of them holds at
//!   most [`Turns::per_key`] turns, and a turn given back goes to the
//!   waiting one that holds the fewest, so a tenant with a thousand
//!   requests in line does not make another tenant's one wait behind them.
//! - **A waiter holds no turn:** a handler that waits for something else
//!   (a claim's `wait_ms`) gives its turn back for the wait
//!   ([`Ticket::pause`]) and stops the moment its client leaves.
//!
//! A request that has not taken its turn has begun nothing: when its
//! client leaves, it stops where it is.

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Turns every client together, by default: well above what the store's
/// pool runs at once (8 SQLite, 32 PostgreSQL connections by default), so
/// it never slows a store that keeps up, and low enough that a backlog of
/// abandoned writes drains within a second or so.
pub const TURNS: usize = 256;

/// Who a turn is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TurnKey {
    /// A tenant, by its token.
    Tenant(String),
    /// An anonymous visitor (the site's forms), by its address.
    Address(std::net::IpAddr),
    /// Neither known (a test that calls the router without a connection).
    Unknown,
}

/// The shared turns.
pub struct Turns {
    total: usize,
    per_key: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    free: usize,
    held: HashMap<TurnKey, usize>,
    waiting: HashMap<TurnKey, VecDeque<oneshot::Sender<Turn>>>,
}

impl State {
    fn held(&self, key: &TurnKey) -> usize {
        self.held.get(key).copied().unwrap_or(0)
    }
}

impl std::fmt::Debug for Turns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turns")
            .field("total", &self.total)
            .field("per_key", &self.per_key)
            .finish()
    }
}

/// One turn, given back when dropped.
pub struct Turn {
    turns: Option<Arc<Turns>>,
    key: TurnKey,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn").field("key", &self.key).finish()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(turns) = self.turns.take() {
            turns.give_back(&self.key);
        }
    }
}

impl Turns {
    /// `total` turns, at most a quarter of them (at least one) to one key.
    pub fn new(total: usize) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(Self {
            total,
            per_key: (total / 4).max(1),
            state: Mutex::new(State {
                free: total,
                ..State::default()
            }),
        })
    }

    /// The most turns one key holds at once.
    pub fn per_key(&self) -> usize {
        self.per_key
    }

    /// Turns held now, every key together.
    pub fn in_use(&self) -> usize {
        self.total - self.lock().free
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A turn for `key`: at once when one is free and `key` holds fewer
    /// than its share, else when one is given back to it. Dropping the
    /// future leaves the line.
    pub async fn take(self: &Arc<Self>, key: TurnKey) -> Turn {
        let rx = {
            let mut s = self.lock();
            if s.free > 0 && s.held(&key) < self.per_key {
                s.free -= 1;
                *s.held.entry(key.clone()).or_insert(0) += 1;
                return Turn {
                    turns: Some(self.clone()),
                    key,
                };
            }
            let (tx, rx) = oneshot::channel();
            s.waiting.entry(key).or_default().push_back(tx);
            rx
        };
        match rx.await {
            Ok(turn) => turn,
            // Senders are only dropped by a grant that failed, which
            // removes them from the line first: never reached.
            Err(_) => std::future::pending().await,
        }
    }

    fn give_back(self: &Arc<Self>, key: &TurnKey) {
        let mut s = self.lock();
        s.free += 1;
        if let Some(n) = s.held.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                s.held.remove(key);
            }
        }
        // Grant free turns to the waiting keys holding the fewest.
        while s.free > 0 {
            let next = s
                .waiting
                .iter()
                .filter(|(k, _)| s.held(k) < self.per_key)
                .min_by_key(|(k, _)| s.held(k))
                .map(|(k, _)| k.clone());
            let Some(k) = next else { break };
            let tx = match s.waiting.get_mut(&k).and_then(VecDeque::pop_front) {
                Some(tx) => tx,
                None => {
                    s.waiting.remove(&k);
                    continue;
                }
            };
            if s.waiting.get(&k).is_some_and(VecDeque::is_empty) {
                s.waiting.remove(&k);
            }
            if tx.is_closed() {
                continue;
            }
            s.free -= 1;
            *s.held.entry(k.clone()).or_insert(0) += 1;
            let turn = Turn {
                turns: Some(self.clone()),
                key: k.clone(),
            };
            if let Err(mut turn) = tx.send(turn) {
                // Its waiter left between the check and the send: undo
                // here, under the lock, rather than through its drop.
                turn.turns = None;
                s.free += 1;
                if let Some(n) = s.held.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        s.held.remove(&k);
                    }
                }
            }
        }
    }
}

/// A request's place with the turns: who it is counted against (its
/// tenant once authenticated, else its address), the turn once taken
/// (kept until the request's task ends), and whether its client left.
#[derive(Clone)]
pub struct Ticket(Arc<TicketInner>);

struct TicketInner {
    turns: Arc<Turns>,
    tenant: OnceLock<String>,
    address: Option<std::net::IpAddr>,
    turn: Mutex<Option<Turn>>,
    gone: CancellationToken,
}

/// Why a request stopped before its turn: its client left.
#[derive(Debug, Clone, Copy)]
pub struct ClientLeft;

impl std::fmt::Display for ClientLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client left before the request's turn to write")
    }
}

impl std::error::Error for ClientLeft {}

impl Ticket {
    /// A ticket for a request from `address` whose client leaving
    /// cancels `gone`.
    pub fn new(
        turns: Arc<Turns>,
        address: Option<std::net::IpAddr>,
        gone: CancellationToken,
    ) -> Self {
        Self(Arc::new(TicketInner {
            turns,
            tenant: OnceLock::new(),
            address,
            turn: Mutex::new(None),
            gone,
        }))
    }

    /// Counts the request against `tenant` from now on (authentication
    /// calls this, before the body is read).
    pub fn for_tenant(&self, tenant: &str) {
        let _ = self.0.tenant.set(tenant.to_owned());
    }

    fn key(&self) -> TurnKey {
        match (self.0.tenant.get(), self.0.address) {
            (Some(t), _) => TurnKey::Tenant(t.clone()),
            (None, Some(a)) => TurnKey::Address(a),
            (None, None) => TurnKey::Unknown,
        }
    }

    /// Whether the request holds its turn.
    pub fn holds(&self) -> bool {
        self.slot().is_some()
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Turn>> {
        self.0.turn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the request's turn unless it holds it; stops when the client
    /// leaves first.
    pub async fn take(&self) -> Result<(), ClientLeft> {
        if self.holds() {
            return Ok(());
        }
        if self.0.gone.is_cancelled() {
            return Err(ClientLeft);
        }
        let turn = tokio::select! {
            biased;
            () = self.0.gone.cancelled() => return Err(ClientLeft),
            t = self.0.turns.take(self.key()) => t,
        };
        *self.slot() = Some(turn);
        Ok(())
    }

    /// Runs `wait` holding no turn, then takes the turn again: a handler
    /// that waits for something else (another holder's outcome) leaves
    /// the turns to requests that write. Stops when the client leaves,
    /// during the wait or in line for the turn again.
    pub async fn pause<F: Future>(&self, wait: F) -> Result<F::Output, ClientLeft> {
        let had = self.slot().take();
        let held = had.is_some();
        drop(had);
        let out = tokio::select! {
            biased;
            () = self.0.gone.cancelled() => return Err(ClientLeft),
            out = wait => out,
        };
        if held {
            self.take().await?;
        }
        Ok(out)
    }

    /// Whether the client left.
    pub fn client_left(&self) -> bool {
        self.0.gone.is_cancelled()
    }

    /// Gives the turn back (the request's task ended).
    pub fn release(&self) {
        drop(self.slot().take());
    }
}

/// The request's [`Ticket`], for a handler that waits (absent on reads,
/// which hold no turn).
pub struct Waiter(pub Option<Ticket>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Waiter {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<Ticket>().cloned()))
    }
}

impl Waiter {
    /// Sleeps `nap` holding no turn; `Err` when the client left meanwhile.
    pub async fn nap(&self, nap: std::time::Duration) -> Result<(), ClientLeft> {
        match &self.0 {
            Some(t) => t.pause(tokio::time::sleep(nap)).await,
            None => {
                tokio::time::sleep(nap).await;
                Ok(())
            }
        }
    }
}

/// A ticket's [`Ticket::take`], pinned where a body's poll can drive it.
type TakingTurn = Pin<Box<dyn Future<Output = Result<(), ClientLeft>> + Send>>;

/// A request body whose end waits for the request's turn: every reader of
/// a whole body (JSON, forms, the Idempotency-Key layer, the MCP
/// transport) sees its last frame only once the request holds its turn,
/// so the turn is taken after the body arrived and after the token was
/// checked (authentication runs before any body is read), and never for a
/// body refused on its size. When the client leaves first, the body ends
/// in an error and the request stops there, having begun nothing.
pub struct TurnBody {
    inner: Body,
    ticket: Ticket,
    waiting: Option<TakingTurn>,
    done: bool,
}

impl TurnBody {
    /// `inner`, ending once `ticket` holds its turn.
    pub fn new(inner: Body, ticket: Ticket) -> Self {
        Self {
            inner,
            ticket,
            waiting: None,
            done: false,
        }
    }
}

impl hyper::body::Body for TurnBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.waiting.is_none() {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(None) => {
                    let ticket = this.ticket.clone();
                    this.waiting = Some(Box::pin(async move { ticket.take().await }));
                }
                other => return other,
            }
        }
        let Some(waiting) = this.waiting.as_mut() else {
            return Poll::Ready(None);
        };
        match waiting.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                this.waiting = None;
                this.done = true;
                match r {
                    Ok(()) => Poll::Ready(None),
                    Err(e) => Poll::Ready(Some(Err(axum::Error::new(e)))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Never "ended" before the turn: a reader that trusted this would
        // skip the wait.
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        // The inner body's bound, so a reader's size limit refuses a body
        // that says it is too large before it is read.
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower());
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tenant(t: &str) -> TurnKey {
        TurnKey::Tenant(t.into())
    }

    #[tokio::test]
    async fn one_key_holds_at_most_its_share_and_others_go_first() {
        let turns = Turns::new(8); // 2 per key
        let a1 = turns.take(tenant("a")).await;
        let a2 = turns.take(tenant("a")).await;
        // a's third waits although 6 are free.
        let a3 = tokio::time::timeout(Duration::from_millis(50), turns.take(tenant("a"))).await;
        assert!(a3.is_err(), "a key took more than its share");
        // Another key takes one at once.
        let b1 = tokio::time::timeout(Duration::from_millis(50), turns.take(tenant("b")))
            .await
            .expect("b waited behind a");
        assert_eq!(turns.in_use(), 3);
        drop((a1, a2, b1));
        assert_eq!(turns.in_use(), 0);
    }

    #[tokio::test]
    async fn a_turn_given_back_goes_to_the_waiting_key_holding_fewest() {
        let turns = Turns::new(4); // 1 per key
        let a = turns.take(tenant("a")).await;
        let b = turns.take(tenant("b")).await;
        let c = turns.take(tenant("c")).await;
        let d = turns.take(tenant("d")).await;
        // a queues two more, then e queues one: all turns are held.
        let t = turns.clone();
        let a_more = tokio::spawn(async move { t.take(tenant("a")).await });
        let t = turns.clone();
        let a_more2 = tokio::spawn(async move { t.take(tenant("a")).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = turns.clone();
        let e = tokio::spawn(async move { t.take(tenant("e")).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // b gives back: a holds 1 (its share), e holds 0: e gets it.
        drop(b);
        let e = tokio::time::timeout(Duration::from_millis(200), e)
            .await
            .expect("e waited behind a's line")
            .unwrap();
        assert!(!a_more.is_finished());
        drop(a);
        let got = tokio::time::timeout(Duration::from_millis(200), a_more)
            .await
            .expect("a's next never came")
            .unwrap();
        drop((got, c, d, e));
        let last = tokio::time::timeout(Duration::from_millis(200), a_more2)
            .await
            .expect("a's last never came")
            .unwrap();
        drop(last);
        assert_eq!(turns.in_use(), 0);
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_the_line_loses_no_turn() {
        let turns = Turns::new(1);
        let held = turns.take(tenant("a")).await;
        let left = tokio::time::timeout(Duration::from_millis(20), turns.take(tenant("b"))).await;
        assert!(left.is_err());
        drop(held);
        assert_eq!(turns.in_use(), 0);
        let again = tokio::time::timeout(Duration::from_millis(50), turns.take(tenant("c")))
            .await
            .expect("a turn was lost to a waiter that left");
        drop(again);
    }

    #[tokio::test]
    async fn a_paused_ticket_holds_no_turn_and_stops_when_its_client_leaves() {
        let turns = Turns::new(4); // 1 per key
        let gone = CancellationToken::new();
        let ticket = Ticket::new(turns.clone(), None, gone.clone());
        ticket.for_tenant("a");
        ticket.take().await.unwrap();
        assert_eq!(turns.in_use(), 1);
        let t = ticket.clone();
        let waiting =
            tokio::spawn(async move { t.pause(tokio::time::sleep(Duration::from_secs(60))).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(turns.in_use(), 0, "a waiter kept its turn");
        // Its tenant's next request is not kept waiting by it.
        let other = tokio::time::timeout(Duration::from_millis(50), turns.take(tenant("a")))
            .await
            .expect("the paused request's turn was not free");
        drop(other);
        gone.cancel();
        let r = tokio::time::timeout(Duration::from_millis(200), waiting)
            .await
            .expect("a waiter outlived its client")
            .unwrap();
        assert!(r.is_err());
        assert!(!ticket.holds());
    }

    #[tokio::test]
    async fn a_body_ends_only_with_its_turn() {
        use http_body_util::BodyExt;
        let turns = Turns::new(1);
        let held = turns.take(TurnKey::Unknown).await;
        let ticket = Ticket::new(turns.clone(), None, CancellationToken::new());
        let body = TurnBody::new(Body::from("{}"), ticket.clone());
        let read = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!read.is_finished(), "the body ended without its turn");
        drop(held);
        let bytes = read.await.unwrap().unwrap();
        assert_eq!(&bytes[..], b"{}");
        assert!(ticket.holds());
        ticket.release();
        assert_eq!(turns.in_use(), 0);
    }

    #[tokio::test]
    async fn a_body_whose_client_left_ends_in_an_error_without_a_turn() {
        use http_body_util::BodyExt;
        let turns = Turns::new(1);
        let held = turns.take(TurnKey::Unknown).await;
        let gone = CancellationToken::new();
        let ticket = Ticket::new(turns.clone(), None, gone.clone());
        let body = TurnBody::new(Body::from("{}"), ticket.clone());
        let read = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone.cancel();
        let r = read.await.unwrap();
        assert!(r.is_err());
        assert!(!ticket.holds());
        drop(held);
        assert_eq!(turns.in_use(), 0);
    }
}
