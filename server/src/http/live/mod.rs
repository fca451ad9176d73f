//! The live duplicate monitor: `/live` (page), `/live/data.json`,
//! `/live/events` (server-sent events), `/live/fragment` (polling) and
//! `/live/login`.
//!
//! The numbers are read from the database on every refresh: the statistics
//! rollups (every write's counts reach them through a journal committed with
//! the write, folded twice a second and before each read), and the actions table
//! for what stands now. So every instance on one database shows the same
//! numbers, whichever instance took the writes. Identical refreshes within
//! half a second share one read, so five open dashboards cost the database
//! what one does.
//!
//! Access: on a loopback address with no admin token configured, the
//! monitor is open and shows every tenant. Otherwise it needs a token, as
//! `Authorization: Bearer` or the `idem_live` cookie that `/live/login`
//! sets: the admin token (`--admin-token`) sees every tenant; a tenant's API
//! token sees only that tenant, whatever it asks for.

use super::error::ApiError;
use super::state::LiveState;
mod access;
pub mod action;
mod chart;
pub mod data;
mod feed;
mod page;
mod params;
pub mod render;
mod snapshot;

pub use access::{csrf_ok, csrf_token, login, logout, LoginForm, LogoutForm, Viewer, SESSION_TTL};
pub use chart::chart;
pub use feed::{events, fragment};
pub use page::{data_json, live_markup};
pub use params::LiveQuery;
pub use snapshot::snapshot;
// What the areas share with each other (each reads its siblings through
// `use super::*`).
use access::*;
use feed::*;
use params::*;
use snapshot::*;

use app::live::LiveMarkup;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use data::{
    Counts, DuplicateRate, LiveData, LiveHorizon, LivePoint, LiveRow, LiveUncertain,
    LiveUnresolved, Window,
};
use futures_util::stream::{Stream, StreamExt};
use idem_core::locale::Locale;
use idem_core::TenantId;
use idem_store::stats::Granularity;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cookie `/live/login` sets.
pub const COOKIE: &str = "idem_live";
/// Uncertain keys listed per tenant.
const UNCERTAIN_LISTED: u32 = 20;
/// Tenants an admin's "all tenants" view reads, at most.
const MAX_TENANTS: usize = 50;
/// How long one read serves identical refreshes.
const SHARE_FOR: Duration = Duration::from_millis(500);
/// Tenants read at once for the admin's view (each on its own connection).
const PARALLEL_READS: usize = 4;
/// How often a feed looks for new numbers.
const TICK: Duration = Duration::from_millis(500);
/// A feed sends at least this often, so a browser can tell a quiet feed
/// from a dead one.
const HEARTBEAT: Duration = Duration::from_secs(2);
