//! One function per query, written once and compiled for each backend.
//! Each concern is a module with its row types and a declared trait of its
//! queries (`IntentQueries`, `ActionQueries`, ...), which
//! [`common::queries`] implements over SQLite's and PostgreSQL's connection
//! types from one body per query, so the two cannot drift apart and every
//! query has a signature. A query takes a connection, pooled or inside the
//! caller's transaction; the statements it runs are in [`crate::sql`].

mod common;

pub(crate) mod actions;
pub(crate) mod admin;
pub(crate) mod alerts;
pub(crate) mod dashboard;
pub(crate) mod events;
pub(crate) mod http_keys;
pub(crate) mod intents;
pub(crate) mod live;
pub(crate) mod mcp;
pub(crate) mod stats;
pub(crate) mod webhooks;

pub(crate) use actions::{ActionRow, AttemptWrite, BeginRow};
pub(crate) use intents::{HistoryRow, IntentRow, IntentWrite};
pub(crate) use live::UncertainRow;
pub(crate) use stats::RollupRow;

/// Every concern's queries, for calling them as methods on a connection.
pub(crate) mod prelude {
    pub(crate) use super::actions::ActionQueries;
    pub(crate) use super::admin::AdminQueries;
    pub(crate) use super::alerts::AlertQueries;
    pub(crate) use super::dashboard::DashboardQueries;
    pub(crate) use super::events::EventQueries;
    pub(crate) use super::http_keys::HttpKeyQueries;
    pub(crate) use super::intents::IntentQueries;
    pub(crate) use super::live::LiveQueries;
    pub(crate) use super::mcp::McpQueries;
    pub(crate) use super::stats::StatsQueries;
    pub(crate) use super::webhooks::WebhookQueries;
}
