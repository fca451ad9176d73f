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

mod access;
pub mod action;
mod chart;
pub mod data;
mod feed;
mod page;
mod params;
pub mod render;
mod snapshot;
pub mod state;

pub use access::{csrf_ok, csrf_token, login, logout, LoginForm, LogoutForm, Viewer, SESSION_TTL};
pub use chart::chart;
pub use feed::{events, fragment};
pub use page::{action_page, data_json, page, panel};
pub use params::LiveQuery;
pub use snapshot::snapshot;
// The work queue's page (`action`) reads the monitor's access rules and
// scope as the monitor does.
use access::{authorized, viewer};
use params::query_of;
use snapshot::{every_tenant, scope};

use std::time::Duration;

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
const HEARTBEAT: Duration = Duration::from_secs(1);
