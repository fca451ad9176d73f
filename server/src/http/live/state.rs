//! The monitor's own state: the API's handles, who may look, the cache of
//! shared reads, the sign-in limiter, the feed's stream slots and the
//! exports running.

use super::data::LiveData;
use idem_api::access::LiveAccess;
use idem_api::ApiState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Refused sign-ins an address may make per [`LOGIN_WINDOW`] before it
/// gets 429: a person mistyping never gets there, a guesser stops at 10.
pub const LOGIN_FAILURES: u32 = 10;
/// See [`LOGIN_FAILURES`].
pub const LOGIN_WINDOW: std::time::Duration = std::time::Duration::from_secs(300);

/// What the monitor needs: the API's handles, the access rule and the
/// shared-read cache.
#[derive(Clone)]
pub struct LiveState {
    /// The store and its friends.
    pub api: ApiState,
    /// Who may look.
    pub access: Arc<LiveAccess>,
    pub(crate) cache: Arc<Mutex<SharedReads>>,
    /// Refused sign-ins per client address.
    pub login_failures: Arc<crate::http::forms::Limiter>,
    /// The live feed's stream slots and how long a stream lives.
    pub feeds: Arc<Feeds>,
    /// One permit per uncertain-list export running.
    pub exports: Arc<tokio::sync::Semaphore>,
    /// Whose exports run now (a tenant, or `*` for an admin's export of
    /// every tenant): one each, so one tenant cannot hold every slot.
    pub exporting: Arc<Mutex<std::collections::HashSet<String>>>,
}

/// Uncertain-list exports running at once, every viewer together: the
/// next one is a 503 with Retry-After, so six dashboards exporting at once
/// cannot crowd out the monitor.
pub const EXPORTS_AT_ONCE: usize = 2;

/// The bound on live-feed streams (server-sent events): they hold their
/// connection for as long as the page is open, and their heartbeats keep
/// every idle timer from firing, so they get a cap and an age of their own.
#[derive(Debug)]
pub struct Feeds {
    /// One permit per open stream.
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The most streams open at once.
    pub cap: usize,
    /// How long a stream lives before the server ends it.
    pub max_age: std::time::Duration,
    /// Set when the server begins to shut down: every stream ends at once,
    /// so pages say they lost the feed instead of showing "live" through
    /// the shutdown's grace.
    pub closing: tokio::sync::watch::Sender<bool>,
}

impl Feeds {
    /// `cap` streams at once, each ending after `max_age`.
    pub fn new(cap: usize, max_age: std::time::Duration) -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(cap)),
            cap,
            max_age,
            closing: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Ends every open stream, and refuses new ones.
    pub fn close(&self) {
        self.closing.send_replace(true);
        self.slots.close();
    }
}

/// Recent reads by scope and window, with when they were made.
pub(crate) type SharedReads = HashMap<String, (Instant, Arc<LiveData>)>;

impl LiveState {
    /// A monitor over `api` with the access rule `access`.
    pub fn new(api: ApiState, access: LiveAccess) -> Self {
        let limits = idem_api::conn::ConnLimits::default();
        Self::with_feeds(
            api,
            access,
            Feeds::new(limits.feed_slots(), limits.feed_max_age),
        )
    }

    /// A monitor whose feed streams are bounded by `feeds`.
    pub fn with_feeds(api: ApiState, access: LiveAccess, feeds: Feeds) -> Self {
        Self {
            api,
            access: Arc::new(access),
            cache: Arc::default(),
            login_failures: Arc::new(crate::http::forms::Limiter::new(
                LOGIN_FAILURES,
                LOGIN_WINDOW,
            )),
            feeds: Arc::new(feeds),
            exports: Arc::new(tokio::sync::Semaphore::new(EXPORTS_AT_ONCE)),
            exporting: Arc::default(),
        }
    }
}
