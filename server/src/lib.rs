//! idem-server: the `idem` command line, the HTTP server and the dashboard host.

pub mod api;
pub mod cli;
mod cost_cmd;
mod key_cmd;
pub mod metrics;
pub mod secret;
pub mod web;
