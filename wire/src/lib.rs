//! The answers idem sends about intents and actions, declared once.
//!
//! `/v1` and idem's MCP server both serialize these structs, so a field
//! renamed here is renamed on both doors, in the OpenAPI document generated
//! from them (`clients/conformance/openapi.json`) and, through it, in the
//! TypeScript client's generated types and the Python client's checked
//! `TypedDict`s. A copy written with `json!` elsewhere would drift silently.

pub mod meta;
pub mod trace;

pub use meta::IdemMeta;

use idem_core::{ActionType, IdempotencyKey};
use idem_store::{Action, ActionState, Intent};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// A claim's lease when the request names none, in ms. The OpenAPI
/// document states it as every `lease_ms`'s `default`, and the clients'
/// tests check their own default against the document.
pub const DEFAULT_LEASE_MS: u64 = 30_000;
/// The longest lease a claim may ask for, in ms (an hour): the document's
/// `maximum` for every `lease_ms`.
pub const MAX_LEASE_MS: u64 = 3_600_000;

/// The default of the largest provider outcome idem keeps, in bytes
/// (`--max-outcome-bytes`, 1 MiB: far above any payment provider's answer,
/// so an outcome is refused only when something is wrong with it). One
/// bound for every door: a `complete`'s response or a `fail`'s error on
/// `/v1`, a settlement's evidence on the monitor and through idem's MCP
/// tools, and a guarded tool's result the MCP gateway stores for replay.
pub const DEFAULT_MAX_OUTCOME_BYTES: usize = 1 << 20;
/// The smallest `--max-outcome-bytes` accepted.
pub const MIN_MAX_OUTCOME_BYTES: u64 = 1024;
/// The largest `--max-outcome-bytes` accepted (64 MiB).
pub const MAX_MAX_OUTCOME_BYTES: u64 = 64 << 20;

/// A claim's lease, in ms: 1 to [`MAX_LEASE_MS`], [`DEFAULT_LEASE_MS`] when
/// the request names none. Built once, where a request or a guard file is
/// read ([`LeaseMs::from_request`]); its schema is every `lease_ms` of the
/// OpenAPI document (bounds and default from the constants above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LeaseMs(u64);

/// A `lease_ms` outside 1 to [`MAX_LEASE_MS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseOutOfRange(pub u64);

impl std::fmt::Display for LeaseOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "lease_ms must be between 1 and {MAX_LEASE_MS}")
    }
}

impl std::error::Error for LeaseOutOfRange {}

impl LeaseMs {
    /// The lease a request without `lease_ms` gets.
    pub const DEFAULT: LeaseMs = LeaseMs(DEFAULT_LEASE_MS);

    /// `ms`, when it is 1 to [`MAX_LEASE_MS`].
    pub fn new(ms: u64) -> Result<Self, LeaseOutOfRange> {
        if (1..=MAX_LEASE_MS).contains(&ms) {
            Ok(Self(ms))
        } else {
            Err(LeaseOutOfRange(ms))
        }
    }

    /// A request's `lease_ms`: the default when absent.
    pub fn from_request(ms: Option<u64>) -> Result<Self, LeaseOutOfRange> {
        ms.map_or(Ok(Self::DEFAULT), Self::new)
    }

    /// In ms.
    pub fn get(self) -> u64 {
        self.0
    }

    /// As a duration.
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }
}

impl utoipa::PartialSchema for LeaseMs {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(MAX_LEASE_MS))
            .default(Some(DEFAULT_LEASE_MS.into()))
            .into()
    }
}

impl utoipa::ToSchema for LeaseMs {}

/// The schema of an action's `state`: the store's states, by name.
pub struct ActionStateName;

impl utoipa::PartialSchema for ActionStateName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(ActionState::ALL.iter().map(|s| s.as_str())))
            .description(Some(
                "`started` (claimed, outcome pending), `completed`, `failed` (retryable or final) or \
                 `uncertain` (started, outcome unknown: never completed)",
            ))
            .into()
    }
}

impl utoipa::ToSchema for ActionStateName {
    fn name() -> std::borrow::Cow<'static, str> {
        "ActionState".into()
    }
}

/// A stored text that should be JSON was not: the store holds only what
/// idem wrote, so this is a defect, never a client's mistake.
#[derive(Debug)]
pub struct NotJson {
    /// Which stored text.
    pub what: &'static str,
    /// The parser's account.
    pub error: serde_json::Error,
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is not JSON: {}", self.what, self.error)
    }
}

impl std::error::Error for NotJson {}

/// `GET /v1/intents/{action}/{reference}` answer: the intent as frozen.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntentView {
    /// The frozen key.
    #[schema(value_type = String)]
    pub key: IdempotencyKey,
    /// The rules version of the frozen key.
    pub rules_version: u32,
    /// The action type.
    #[schema(value_type = String)]
    pub action: ActionType,
    /// The intent reference, as stored.
    pub reference: String,
    /// The frozen normalized payload: the fields the key covers, in their
    /// normalized forms (`valor` in cents, as text). Not what to act on.
    #[schema(value_type = Object)]
    pub payload: Box<RawValue>,
    /// The candidate as its first delivery sent it (or the latest
    /// correction), in the sender's own names and formats (`"180.00"` stays
    /// `"180.00"`): what a worker acts on. `null` for intents recorded
    /// before idem kept it.
    #[schema(value_type = Option<Object>)]
    pub frozen: Option<Box<RawValue>>,
    /// 1 for the first write, then one more per correction.
    pub revision: i32,
    /// Deliveries so far.
    pub deliveries: i64,
    /// Deliveries whose candidate differed from the frozen payload.
    pub divergences: i64,
    /// First delivery, ms since the epoch.
    pub first_seen_ms: i64,
    /// Latest delivery, ms since the epoch.
    pub last_seen_ms: i64,
}

impl IntentView {
    /// The view of a stored intent.
    pub fn of(action: ActionType, reference: String, i: Intent) -> Result<Self, NotJson> {
        let payload = RawValue::from_string(i.payload.to_json()).map_err(|error| NotJson {
            what: "a frozen payload",
            error,
        })?;
        let frozen = i
            .candidate
            .map(RawValue::from_string)
            .transpose()
            .map_err(|error| NotJson {
                what: "a frozen candidate",
                error,
            })?;
        Ok(IntentView {
            key: i.key,
            rules_version: i.rules_version.number(),
            action,
            reference,
            payload,
            frozen,
            revision: i.revision,
            deliveries: i.deliveries,
            divergences: i.divergences,
            first_seen_ms: i.first_seen_ms,
            last_seen_ms: i.last_seen_ms,
        })
    }
}

/// An action as stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionResponse {
    /// The key.
    #[schema(value_type = String)]
    pub key: IdempotencyKey,
    /// The action type.
    pub action: String,
    /// `started`, `completed`, `failed` or `uncertain`.
    #[schema(value_type = ActionStateName)]
    pub state: ActionState,
    /// The current fencing token.
    pub token: i64,
    /// Claims so far.
    pub attempts: i32,
    /// The running lease's end, ms since the epoch.
    pub lease_until_ms: Option<i64>,
    /// When the current attempt started.
    pub started_ms: i64,
    /// Last change.
    pub updated_ms: i64,
    /// The stored response (completed): any JSON value.
    #[schema(value_type = Option<Value>)]
    pub response: Option<Box<RawValue>>,
    /// The stored error (failed).
    pub error: Option<String>,
    /// Whether the failure may be retried.
    pub retryable: Option<bool>,
    /// Whether the outcome was learned from the provider by reconcile.
    pub reconciled: bool,
}

impl ActionResponse {
    /// The view of a stored action.
    pub fn new(key: &IdempotencyKey, a: Action) -> Self {
        Self {
            key: key.clone(),
            action: a.action,
            state: a.state,
            token: a.token,
            attempts: a.attempts,
            lease_until_ms: a.lease_until_ms,
            started_ms: a.started_ms,
            updated_ms: a.updated_ms,
            response: a.response.map(stored_json_or_string),
            error: a.error,
            retryable: a.retryable,
            reconciled: a.reconciled,
        }
    }
}

/// A stored response as JSON: the text itself when it is JSON, else the
/// text as a JSON string (a worker may complete with any text).
pub fn stored_json_or_string(text: String) -> Box<RawValue> {
    let text = if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        text
    } else {
        serde_json::Value::String(text).to_string()
    };
    RawValue::from_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_that_is_not_json_is_sent_as_a_string() {
        assert_eq!(
            stored_json_or_string(r#"{"id":"ch_1"}"#.into()).get(),
            r#"{"id":"ch_1"}"#
        );
        assert_eq!(
            stored_json_or_string("ch_1 ok".into()).get(),
            r#""ch_1 ok""#
        );
    }
}
