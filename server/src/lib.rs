//! idem-server: the `idem` command line, the HTTP server and the dashboard host.

// Leptos views nest deeply in their types; the calculator needs more room
// than the compiler's default to name them.
#![recursion_limit = "512"]

pub mod api;
pub mod audit;
pub mod cli;
mod cost_cmd;
pub mod dashboard;
mod key_cmd;
pub mod live;
pub mod metrics;
pub mod secret;
pub mod simulate;
pub mod web;
