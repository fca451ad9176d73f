//! The server's integration tests, in one binary (the server is linked
//! once, not once per area): one module per area, `common` for what they
//! share. The reliability suite is a harness of its own
//! (`tests/reliability`), since it runs `idem serve` and re-executes itself
//! as client processes.
//!
//! `cargo test -p idem-server --test it AREA::` runs one area (`api`,
//! `http`, `live`, `cli`, ...).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

mod api;
mod assets;
mod audit;
mod broker;
mod cli;
mod fairness;
mod hostile;
mod http;
mod live;
mod mistakes;
mod security;
mod simulate;
mod soak;
mod traces;
mod webhooks;
