//! idem-core: the pure heart of idem.
//!
//! * [`derive`]: idempotency keys derived from a *frozen* intent payload —
//!   an explicit per-action list of normalized fields ([`catalog`]),
//!   canonical JSON, HMAC-SHA256 under a secret, with a rules version.
//! * [`cost`]: the cost and risk model, in exact decimals (never floats).
//!
//! Nothing here performs I/O; the crate builds for `wasm32-unknown-unknown`
//! so the dashboard's calculator runs the same code in the browser.

pub mod catalog;
pub mod cost;
pub mod currency;
pub mod date;
pub mod derive;
mod error;
pub mod ids;
pub mod json;
pub mod lang;
pub mod locale;
pub mod money;
pub mod normalize;
pub mod payload;
pub mod pix;
pub mod scenario;
pub mod secret;
mod text;

pub use catalog::{ActionSpec, Catalog, FieldSpec, Rule, RulesVersion};
pub use derive::{Derived, Generation, IdempotencyKey, KeyDeriver, NormalizedPayload};
pub use error::Error;
pub use ids::{ActionType, TenantId};
pub use money::Cents;
pub use payload::Payload;
pub use secret::Secret;
pub use text::{is_bidi_control, reveal_bidi};
