//! idem-server: the `idem` command line, the HTTP server and the dashboard host.
//!
//! Layers, lowest first; a module never imports one above it:
//! `config`, `secret`, `prices`, `targets` and `telemetry` (plain values, the
//! bundled model price table, helpers) → `http`
//! (its leaves `state`, `error`, `extract`, `metrics`, then the areas, then
//! the router) → `startup` (builds and runs the application) → `cli` (the
//! commands; `main.rs` only dispatches to it).

// Leptos views nest deeply in their types; the calculator needs more room
// than the compiler's default to name them.
#![recursion_limit = "512"]

pub mod alerts;
pub mod charts;
pub mod cli;
pub mod config;
pub mod figures;
pub mod http;
pub mod markup;
pub mod prices;
pub mod relay;
pub mod secret;
pub mod startup;
pub mod targets;
pub mod telemetry;
pub mod today;
