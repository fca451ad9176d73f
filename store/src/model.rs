//! What the store's operations return.

/// A state machine's states, stored as text (`state text not null` in both
/// backends): each state's spelling, and sqlx's `Type`, `Encode` and
/// `Decode` over it, so rows carry the enum and queries bind it. A stored
/// text that names no state fails to decode, which the store reports as
/// [`crate::Error::Corrupt`].
macro_rules! stored_as_text {
    ($name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $name {
            /// Every state, in declaration order.
            #[allow(dead_code)] // not every stored state is listed by its users
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The state as stored.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),*
                }
            }

            /// The state a stored text names.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }

        impl<DB: sqlx::Database> sqlx::Type<DB> for $name
        where
            str: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <str as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <str as sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $name
        where
            &'r str: sqlx::Decode<'r, DB>,
        {
            fn decode(
                value: <DB as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&'r str as sqlx::Decode<'r, DB>>::decode(value)?;
                Self::parse(text).ok_or_else(|| {
                    format!("{} {text:?} is no state", stringify!($name)).into()
                })
            }
        }

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $name
        where
            &'q str: sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&'q str as sqlx::Encode<'q, DB>>::encode(self.as_str(), buf)
            }
        }
    };
}

use idem_core::{IdempotencyKey, NormalizedPayload, RulesVersion};

/// Milliseconds since the Unix epoch, from the store's [`Clock`](crate::Clock).
pub type Millis = i64;

/// The outcome of [`record_intent`](crate::Session::record_intent): the
/// frozen intent as the first write left it, plus what this delivery was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedIntent {
    /// The intent reference (normalized).
    pub reference: String,
    /// The frozen key: use it as the provider's idempotency key.
    pub key: IdempotencyKey,
    /// The rules version the frozen key was derived with.
    pub rules_version: RulesVersion,
    /// The frozen normalized payload: act on this, not on the candidate.
    pub payload: NormalizedPayload,
    /// 1 for the first write, then one more per correction.
    pub revision: i32,
    /// Deliveries counted so far, this one included.
    pub deliveries: i64,
    /// Deliveries whose candidate differed from the frozen payload.
    pub divergences: i64,
    /// When the first delivery arrived.
    pub first_seen_ms: Millis,
    /// The latest delivery time recorded.
    pub last_seen_ms: Millis,
    /// The candidate's JSON text as the first delivery sent it: act on this
    /// (`None` for intents recorded before idem kept it).
    pub candidate: Option<String>,
    /// Whether this delivery created the intent.
    pub inserted: bool,
    /// Whether this delivery's candidate differs from the frozen payload (the
    /// model re-extracted another amount or destination). It was not stored.
    pub diverged: bool,
    /// The key the candidate alone would have had.
    pub candidate_key: IdempotencyKey,
}

/// The intent as stored, read without recording a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// The frozen key.
    pub key: IdempotencyKey,
    /// Its rules version.
    pub rules_version: RulesVersion,
    /// The frozen normalized payload.
    pub payload: NormalizedPayload,
    /// 1 for the first write, then one more per correction.
    pub revision: i32,
    /// Deliveries counted.
    pub deliveries: i64,
    /// Deliveries whose candidate differed from the frozen payload.
    pub divergences: i64,
    /// First delivery.
    pub first_seen_ms: Millis,
    /// Last delivery.
    pub last_seen_ms: Millis,
    /// The candidate's JSON text as the first delivery (or the latest
    /// correction) sent it; `None` for intents recorded before idem kept it.
    pub candidate: Option<String>,
}

impl RecordedIntent {
    /// The intent as it now stands, the same shape a read returns, with
    /// what this delivery learned beside it (the reference, whether it
    /// created or diverged, the candidate's key). Moves, never copies: the
    /// record path answers every delivery.
    pub fn into_parts(self) -> (Intent, String, bool, bool, IdempotencyKey) {
        (
            Intent {
                key: self.key,
                rules_version: self.rules_version,
                payload: self.payload,
                revision: self.revision,
                deliveries: self.deliveries,
                divergences: self.divergences,
                first_seen_ms: self.first_seen_ms,
                last_seen_ms: self.last_seen_ms,
                candidate: self.candidate,
            },
            self.reference,
            self.inserted,
            self.diverged,
            self.candidate_key,
        )
    }
}

/// A version a correction replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentVersion {
    /// Its revision number.
    pub revision: i32,
    /// Its rules version.
    pub rules_version: RulesVersion,
    /// Its key.
    pub key: IdempotencyKey,
    /// Its normalized payload.
    pub payload: NormalizedPayload,
    /// When the correction replaced it.
    pub replaced_ms: Millis,
    /// Why, as the person correcting it said.
    pub reason: String,
}

/// The outcome of [`correct_intent`](crate::Session::correct_intent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrected {
    /// The intent after the correction.
    pub intent: Intent,
    /// False when the corrected payload normalized to the frozen one: nothing
    /// was replaced and no new key was minted.
    pub changed: bool,
}

/// The outcome of [`supersede_intent`](crate::Store::supersede_intent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    /// The intent as it now stands: its own key, its revision one more.
    pub intent: Intent,
    /// The key of the failed action it superseded (sealed for good).
    pub previous_key: IdempotencyKey,
    /// Whether the candidate was released: none is kept, and the next
    /// delivery's is frozen (a payment signed anew).
    pub released: bool,
}

/// A version filed by a correction or a supersession, found by the key it
/// had: where that key's intent went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Filed {
    /// The intent reference.
    pub reference: String,
    /// Its action type.
    pub action: String,
    /// The revision that had this key.
    pub revision: i32,
    /// When it was replaced.
    pub replaced_ms: Millis,
    /// Why, and by whom (`superseded by <who>: <why>`).
    pub reason: String,
}

/// The attempt a takeover replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousAttempt {
    /// Its fencing token (now refused).
    pub token: i64,
    /// When it started.
    pub started_ms: Millis,
    /// When its lease ended (`None` once the sweeper marked it uncertain).
    pub lease_until_ms: Option<Millis>,
}

/// What [`begin_action`](crate::Session::begin_action) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// The caller holds the action: act, then `complete` or `fail` with the
    /// token before the lease ends.
    Claimed {
        /// Fencing token to present.
        token: i64,
        /// Attempt number, 1 for the first.
        attempt: i32,
        /// The lease end.
        lease_until_ms: Millis,
        /// The error of the previous attempt when it failed retryably.
        previous_error: Option<String>,
    },
    /// Another holder's lease is running. Do not act; come back after it.
    InFlight {
        /// When that lease ends.
        lease_until_ms: Millis,
    },
    /// Already done: the stored response, byte for byte.
    Completed {
        /// The response as recorded.
        response: String,
        /// The attempt that completed it (claims so far).
        attempts: i32,
        /// Whether the outcome was learned from the provider by reconcile.
        reconciled: bool,
    },
    /// Failed for good: the stored error.
    Failed {
        /// The error as recorded.
        error: String,
    },
    /// A previous attempt started and its outcome is unknown. The caller now
    /// holds the action with a new token and must retry with the same key or
    /// ask the provider, then record the outcome (`reconcile`).
    Uncertain {
        /// The new fencing token.
        token: i64,
        /// Attempt number.
        attempt: i32,
        /// The new lease end.
        lease_until_ms: Millis,
        /// The attempt whose outcome is unknown.
        previous: PreviousAttempt,
    },
}

/// The states an action moves through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    /// Claimed, outcome pending.
    Started,
    /// Succeeded.
    Completed,
    /// Failed (retryable or final).
    Failed,
    /// Started and its outcome is unknown.
    Uncertain,
}

stored_as_text!(ActionState {
    Started => "started",
    Completed => "completed",
    Failed => "failed",
    Uncertain => "uncertain",
});

/// An action as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Its action type.
    pub action: String,
    /// Its state.
    pub state: ActionState,
    /// The current fencing token.
    pub token: i64,
    /// Claims so far.
    pub attempts: i32,
    /// The running lease's end, if any.
    pub lease_until_ms: Option<Millis>,
    /// When the current attempt started.
    pub started_ms: Millis,
    /// Last change.
    pub updated_ms: Millis,
    /// The stored response (completed).
    pub response: Option<String>,
    /// The stored error (failed).
    pub error: Option<String>,
    /// Whether the failure may be retried.
    pub retryable: Option<bool>,
    /// Whether the outcome was learned from the provider by `reconcile`.
    pub reconciled: bool,
    /// When the periodic sweep marked the current attempt uncertain (its
    /// lease ran out with no outcome); the lease end stays beside it.
    pub swept_ms: Option<Millis>,
}

/// An attempt a later claim replaced, as the action's history keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReplacedAttempt {
    /// Its number (1 for the first claim).
    pub attempt: i32,
    /// The fencing token it held.
    pub token: i64,
    /// When it was claimed.
    pub started_ms: Millis,
    /// When its lease ran out (or was to).
    pub lease_until_ms: Option<Millis>,
    /// How it ended.
    pub ended: AttemptEnd,
    /// The error it recorded (`failed`).
    pub error: Option<String>,
    /// When the next claim replaced it.
    pub replaced_ms: Millis,
}

/// How a replaced attempt ended. All but `Failed` left the outcome unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptEnd {
    /// It failed, retryably: its error says why.
    Failed,
    /// Its lease ran out and a claim took over.
    Expired,
    /// The sweep marked it uncertain first.
    Swept,
    /// It held an uncertain action and its lease ran out too.
    Uncertain,
}

stored_as_text!(AttemptEnd {
    Failed => "failed",
    Expired => "expired",
    Swept => "swept",
    Uncertain => "uncertain",
});

/// What one guarded call came to, as the MCP gateway counts it (one row
/// per tenant, hour, tool and count). A lookup is counted under the tool
/// it asked, with what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallCount {
    /// Executed now.
    Executed,
    /// The stored result, replayed.
    Replayed,
    /// An uncertain call settled by a lookup that said executed.
    Settled,
    /// A lookup was asked (counted under the guarded tool).
    LookedUp,
    /// Its outcome is unknown.
    Uncertain,
    /// Another call held the claim past the wait.
    InFlight,
    /// Refused before anything was recorded (bad arguments).
    Refused,
    /// The action failed for good earlier, or idem's store failed.
    Failed,
    /// Beside another count: its arguments differed from the frozen ones.
    Diverged,
    /// Forwarded unrecorded (a payment handshake).
    Unrecorded,
    /// Refused unrecorded: an unrecorded call had succeeded before.
    UnrecordedRefused,
    /// An unrecorded call the upstream answered with success (an alarm).
    UnrecordedSuccess,
    /// A lookup tool's answer, under that tool.
    Lookup(LookupSaid),
}

/// What a lookup tool said of an uncertain call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupSaid {
    /// Executed.
    Executed,
    /// Not executed.
    NotExecuted,
    /// It did not tell.
    Unknown,
}

impl CallCount {
    /// Every count, for tests and docs.
    pub const ALL: [CallCount; 15] = [
        Self::Executed,
        Self::Replayed,
        Self::Settled,
        Self::LookedUp,
        Self::Uncertain,
        Self::InFlight,
        Self::Refused,
        Self::Failed,
        Self::Diverged,
        Self::Unrecorded,
        Self::UnrecordedRefused,
        Self::UnrecordedSuccess,
        Self::Lookup(LookupSaid::Executed),
        Self::Lookup(LookupSaid::NotExecuted),
        Self::Lookup(LookupSaid::Unknown),
    ];

    /// As stored (and as `/metrics` labels it).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Replayed => "replayed",
            Self::Settled => "settled",
            Self::LookedUp => "looked_up",
            Self::Uncertain => "uncertain",
            Self::InFlight => "in_flight",
            Self::Refused => "refused",
            Self::Failed => "failed",
            Self::Diverged => "diverged",
            Self::Unrecorded => "unrecorded",
            Self::UnrecordedRefused => "unrecorded_refused",
            Self::UnrecordedSuccess => "unrecorded_success",
            Self::Lookup(LookupSaid::Executed) => "lookup:executed",
            Self::Lookup(LookupSaid::NotExecuted) => "lookup:not_executed",
            Self::Lookup(LookupSaid::Unknown) => "lookup:unknown",
        }
    }

    /// The count a stored text names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// How an attempt ended, for [`reconcile`](crate::Session::reconcile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The provider did it; its response.
    Completed(String),
    /// The provider did not; the error and whether a retry may run.
    Failed {
        /// The error.
        error: String,
        /// Whether a later `begin` may claim it again.
        retryable: bool,
    },
}

/// An HTTP request about to run under a client's Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequestKey<'a> {
    /// The client's key.
    pub client_key: &'a str,
    /// Fingerprint of method, path and canonical body.
    pub fingerprint: &'a str,
    /// The method.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
}

/// A response stored for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// Its status code.
    pub status: u16,
    /// Its headers, as the middleware serialized them.
    pub headers: String,
    /// Its body, byte for byte.
    pub body: Vec<u8>,
}

/// What [`http_begin`](crate::Session::http_begin) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpBegin {
    /// Run the request, then `http_complete` (or `http_release` on a 5xx).
    Proceed,
    /// Same key, same request, done: replay this response.
    Replay(StoredResponse),
    /// Same key, same request, still running: 409.
    InProgress,
    /// Same key, a different request: 422.
    Mismatch,
}

/// `consume_once`'s verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumed {
    /// First time: handle it.
    First,
    /// Seen before: acknowledge and drop it.
    Duplicate,
}

/// What claiming an event decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventClaim {
    /// You hold it: act, then complete or fail it with the token before the
    /// lease ends.
    Claimed {
        /// The fencing token to present to complete or fail.
        token: i64,
        /// 1 for the first claim.
        attempt: i32,
        /// When the lease ends.
        lease_until_ms: Millis,
        /// Why an earlier claim no longer holds it: `expired` (its holder
        /// may have acted) or `released` (it failed retryably).
        previous: Option<String>,
    },
    /// Another consumer holds it until then.
    InFlight {
        /// When its lease ends.
        lease_until_ms: Millis,
    },
    /// Handled before: acknowledge and drop it.
    Completed,
    /// Failed for good: acknowledge and drop it.
    Failed,
}

/// The states a claimed event moves through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventState {
    /// Claimed, its lease running.
    Leased,
    /// Handled.
    Completed,
    /// Failed for good.
    Failed,
    /// Failed, may be retried.
    Released,
}

stored_as_text!(EventState {
    Leased => "leased",
    Completed => "completed",
    Failed => "failed",
    Released => "released",
});

/// How a claimed event ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOutcome {
    /// Handled: later deliveries are duplicates.
    Completed,
    /// Failed for good: later deliveries are acknowledged and dropped.
    Failed,
    /// Failed, may be retried: the next delivery claims it again.
    Released,
}

impl EventOutcome {
    /// The state it leaves the event in.
    pub fn state(self) -> EventState {
        match self {
            EventOutcome::Completed => EventState::Completed,
            EventOutcome::Failed => EventState::Failed,
            EventOutcome::Released => EventState::Released,
        }
    }

    /// The state stored for it.
    pub fn as_str(self) -> &'static str {
        self.state().as_str()
    }
}

/// A message waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Its id (grows per tenant).
    pub id: i64,
    /// Its topic.
    pub topic: String,
    /// Its payload.
    pub payload: String,
    /// When it was written.
    pub created_ms: Millis,
}

/// How long a tenant keeps its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Retention {
    /// Intents, their history and consumed-event marks.
    pub intent_ms: Millis,
    /// Actions and sent outbox messages.
    pub action_ms: Millis,
    /// HTTP Idempotency-Key records.
    pub http_ms: Millis,
}

impl Default for Retention {
    fn default() -> Self {
        const DAY: Millis = 24 * 3600 * 1000;
        Self {
            intent_ms: 7 * DAY,
            action_ms: 7 * DAY,
            http_ms: DAY,
        }
    }
}

/// A charge the demo payment provider executed (its ledger row).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct DemoCharge {
    /// The charge id the provider minted.
    #[sqlx(rename = "charge_id")]
    pub id: String,
    /// Amount in cents (positive).
    pub amount_cents: i64,
    /// ISO 4217 currency code.
    pub currency: String,
    /// Who was charged.
    pub customer: String,
    /// When it executed.
    pub created_ms: Millis,
}

/// A calculator scenario saved from the dashboard. Immutable once stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct SavedScenario {
    /// The short id in its link, `/s/{id}`.
    #[sqlx(rename = "scenario_id")]
    pub id: String,
    /// The name it was saved under (may be empty).
    pub name: String,
    /// The scenario's canonical query string (`v=1&...`).
    pub query: String,
    /// When it was first saved.
    pub created_ms: Millis,
}

/// A comparison of scenarios saved from the dashboard. Immutable once stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct SavedComparison {
    /// The short id in its link, `/c/{id}`.
    #[sqlx(rename = "comparison_id")]
    pub id: String,
    /// The name it was saved under (may be empty).
    pub name: String,
    /// The comparison's query: `s=…&s=…`, one per column, in order.
    pub query: String,
    /// When it was first saved.
    pub created_ms: Millis,
}

/// An action whose outcome is unknown, as the live monitor lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UncertainAction {
    /// The action's key.
    pub key: String,
    /// The action type.
    pub action: String,
    /// When the attempt whose outcome is unknown started.
    pub started_ms: Millis,
    /// When its lease ran out (kept after the sweep marked it; absent only
    /// for rows swept before that was kept).
    pub lease_until_ms: Option<Millis>,
    /// Claims so far.
    pub attempts: i32,
    /// `true` when the sweep has not marked it yet (its lease just ran out).
    pub lease_expired_unswept: bool,
    /// Its intent's business reference, while retention keeps the intent.
    pub reference: Option<String>,
    /// Its intent's frozen normalized payload (canonical JSON), likewise.
    pub payload: Option<String>,
}

/// A tenant's actions as they stand now, for the live monitor.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveActions {
    /// Started, with a lease still running.
    pub in_flight: i64,
    /// Outcome unknown: marked uncertain, or started with a lease that ran
    /// out and not swept yet. The sum of [`uncertain_by_action`](Self::uncertain_by_action).
    pub uncertain: i64,
    /// The same, per action type (sorted by action; empty when none).
    pub uncertain_by_action: Vec<(String, i64)>,
    /// The newest of them, for reconciliation (at most the limit asked).
    pub uncertain_keys: Vec<UncertainAction>,
    /// Not settled: started (lease running or not), uncertain, or failed
    /// but retryable. Retention keeps these.
    pub unresolved: i64,
    /// When the oldest unsettled action's attempt started.
    pub oldest_unresolved_ms: Option<Millis>,
}

/// Unsettled actions of one state across every tenant (`/metrics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnresolvedActions {
    /// `started`, `uncertain` or `failed_retryable`.
    pub state: String,
    /// How many.
    pub count: i64,
    /// When the oldest one's attempt started.
    pub oldest_started_ms: Option<Millis>,
}

/// What `idem stats rebuild` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RebuildReport {
    /// Buckets from this instant on were recounted (a UTC day start).
    pub since_ms: Millis,
    /// Tenants recounted.
    pub tenants: u64,
    /// Rollup rows cleared or written.
    pub rows: u64,
}

/// Where an alert stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    /// The number is at or under the threshold.
    Ok,
    /// Above the threshold, not yet for long enough.
    Pending,
    /// Above the threshold for its hold: the endpoint was told.
    Firing,
}

stored_as_text!(AlertState {
    Ok => "ok",
    Pending => "pending",
    Firing => "firing",
});

/// An alert a tenant set (`idem alert add`): a threshold on one of the
/// monitor's numbers, held for `for_ms` before it fires.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct Alert {
    /// `al_` and 16 hex digits.
    pub alert_id: String,
    /// `uncertain_now`, `duplicate_rate_pct` or `divergences`.
    pub metric: String,
    /// The threshold, exact decimal text; the alert is above it when the
    /// number is strictly greater.
    pub above: String,
    /// How long the number must stay above before the alert fires.
    pub for_ms: Millis,
    /// The window rates and counts are measured over.
    pub window_ms: Millis,
    /// The webhook endpoint told when it fires and resolves.
    pub endpoint_id: String,
    /// `ok`, `pending` or `firing`.
    pub state: AlertState,
    /// When the number went above the threshold (pending, firing).
    pub since_ms: Option<Millis>,
    /// The number at the last evaluation (decimal text).
    pub last_value: Option<String>,
    /// When it was last evaluated.
    pub evaluated_ms: Option<Millis>,
    /// When it was added.
    pub created_ms: Millis,
}

/// What an evaluation found, to record.
#[derive(Debug, Clone, Copy)]
pub struct AlertEvaluation<'a> {
    /// The new state.
    pub state: AlertState,
    /// When the number went above (absent once back under).
    pub since_ms: Option<Millis>,
    /// The number, as decimal text.
    pub value: Option<&'a str>,
}

/// A webhook endpoint a tenant registered (`idem webhook add`).
#[derive(Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct WebhookEndpoint {
    /// `ep_` and 16 hex digits.
    pub endpoint_id: String,
    /// Where deliveries are POSTed (http or https).
    pub url: String,
    /// Comma-separated topics, or `*` for every topic.
    pub events: String,
    /// The signing key, base64 (without the `whsec_` prefix). Never logged.
    #[serde(skip)]
    pub secret: String,
    /// When it was registered.
    pub created_ms: Millis,
}

impl std::fmt::Debug for WebhookEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("endpoint_id", &self.endpoint_id)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("secret", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl WebhookEndpoint {
    /// Whether this endpoint takes messages of `topic`.
    pub fn wants(&self, topic: &str) -> bool {
        self.events == "*" || self.events.split(',').any(|e| e == topic)
    }
}

/// A delivery the relay claimed: one outbox message for one endpoint, and
/// the attempt number that fences its outcome.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WebhookDelivery {
    /// The outbox message's id (per tenant).
    pub outbox_id: i64,
    /// Its topic (`charge.created`).
    pub topic: String,
    /// Its payload, as queued.
    pub payload: String,
    /// When it was queued.
    pub created_ms: Millis,
    /// This attempt's number, from 1.
    pub attempts: i32,
}

/// What became of one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// A 2xx (the status).
    Delivered(u16),
    /// Anything else: the status if one came back, what went wrong, and
    /// when to try again, or `None` to dead-letter it.
    Failed {
        /// The HTTP status, when the receiver answered.
        status: Option<u16>,
        /// What went wrong, for the operator.
        error: String,
        /// The next attempt's time; `None`: give up (dead-letter).
        retry_at_ms: Option<Millis>,
    },
}

/// Webhook deliveries by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct WebhookCounts {
    /// Waiting for a first attempt, or in it.
    pub pending: i64,
    /// Waiting after at least one failed attempt.
    pub retrying: i64,
    /// Delivered (a 2xx came back).
    pub delivered: i64,
    /// Dead-lettered after the give-up time.
    pub dead_lettered: i64,
    /// When the oldest message still waiting (pending or retrying) was queued.
    pub oldest_waiting_ms: Option<Millis>,
}

/// Where a webhook delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeliveryState {
    /// Waiting, in flight or retrying.
    Pending,
    /// A 2xx came back.
    Delivered,
    /// Dead-lettered after the give-up time.
    Dead,
}

stored_as_text!(DeliveryState {
    Pending => "pending",
    Delivered => "delivered",
    Dead => "dead",
});

/// Where an HTTP `Idempotency-Key` record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpKeyState {
    /// The first request with the key is running.
    InProgress,
    /// Its response is stored for replay.
    Completed,
}

stored_as_text!(HttpKeyState {
    InProgress => "in_progress",
    Completed => "completed",
});

impl WebhookCounts {
    pub(crate) fn add(
        &mut self,
        state: DeliveryState,
        failed_before: bool,
        n: i64,
        oldest: Option<Millis>,
    ) {
        match (state, failed_before) {
            (DeliveryState::Pending, false) => self.pending += n,
            (DeliveryState::Pending, true) => self.retrying += n,
            (DeliveryState::Delivered, _) => self.delivered += n,
            (DeliveryState::Dead, _) => self.dead_lettered += n,
        }
        if state == DeliveryState::Pending {
            self.oldest_waiting_ms = match (self.oldest_waiting_ms, oldest) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
}

/// What one guarded MCP tool did over a range: the gateway counts each
/// call's outcome (and a divergence beside it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct McpToolCounts {
    /// The upstream tool's name.
    pub tool: String,
    /// Calls answered, whatever the outcome (divergences are not extra calls).
    pub calls: i64,
    /// Calls that ran the upstream (first time, after a retryable failure,
    /// or resent for an uncertain action).
    pub executions: i64,
    /// Calls answered with the stored result; nothing ran.
    pub replays: i64,
    /// Calls that settled an earlier attempt's unknown outcome (a lookup
    /// said executed, or a resend was answered); each counts the effect
    /// among `executions` too, since the call that ran it may never have
    /// been answered.
    pub settled: i64,
    /// Lookups asked about this tool's unknown outcomes (not calls).
    pub lookups: i64,
    /// Calls whose arguments differed from the frozen intent's (the frozen
    /// ones were used).
    pub divergences: i64,
    /// Calls whose outcome is unknown, or refused because an earlier one's is.
    pub uncertain: i64,
    /// Calls answered "still running" (another call held the claim).
    pub in_flight: i64,
    /// Calls refused before anything was recorded (bad arguments).
    pub refused: i64,
    /// Calls that failed for good, or found the store failing.
    pub failed: i64,
    /// Calls forwarded unrecorded: they carried none of the `_meta`
    /// entries the key reads (x402's unpaid first call).
    pub unrecorded: i64,
    /// Of those, the ones the upstream answered with success: the guard
    /// does not see how the tool's calls pay (an alarm).
    pub unrecorded_successes: i64,
    /// Calls refused because an unrecorded call had succeeded before.
    pub unrecorded_refused: i64,
}

impl McpToolCounts {
    /// The per-tool counts from (tool, outcome, n) rows sorted by tool.
    pub fn from_rows(rows: impl IntoIterator<Item = (String, String, i64)>) -> Vec<Self> {
        let mut out: Vec<Self> = Vec::new();
        for (tool, outcome, n) in rows {
            // A count this version does not know (a newer instance's) is
            // left out; a lookup is counted under the tool it asked, for
            // `/metrics`, and is not a call of a guarded tool.
            let Some(outcome) = CallCount::parse(&outcome) else {
                continue;
            };
            if matches!(outcome, CallCount::Lookup(_)) {
                continue;
            }
            if out.last().map(|c| c.tool.as_str()) != Some(tool.as_str()) {
                out.push(Self {
                    tool,
                    ..Self::default()
                });
            }
            let Some(c) = out.last_mut() else { continue };
            match outcome {
                CallCount::Executed => c.executions += n,
                CallCount::Replayed => c.replays += n,
                CallCount::Settled => {
                    c.settled += n;
                    c.executions += n;
                }
                CallCount::LookedUp => {
                    c.lookups += n;
                    continue;
                }
                CallCount::Uncertain => c.uncertain += n,
                CallCount::InFlight => c.in_flight += n,
                CallCount::Refused => c.refused += n,
                CallCount::Failed => c.failed += n,
                CallCount::Diverged => c.divergences += n,
                CallCount::Unrecorded => c.unrecorded += n,
                CallCount::UnrecordedRefused => c.unrecorded_refused += n,
                // Not a call of its own: one of the unrecorded ones.
                CallCount::UnrecordedSuccess => {
                    c.unrecorded_successes += n;
                    continue;
                }
                CallCount::Lookup(_) => continue,
            }
            if outcome != CallCount::Diverged {
                c.calls += n;
            }
        }
        out
    }
}
