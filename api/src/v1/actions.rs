//! `/v1/actions/{key}`: claim an action under a lease and a fencing token
//! (`begin`), settle it (`complete`, `fail`, `reconcile`), read it.

use crate::error::{ApiError, Problem};
use crate::extract::{ApiJson, ApiPath, Tenant};
use crate::state::ApiState;
use crate::turns::Waiter;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use idem_core::{ActionType, IdempotencyKey};
use idem_store::{Begin, Outcome, Session};
use idem_wire::{stored_json_or_string, ActionResponse, LeaseMs};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::time::Duration;
use utoipa::ToSchema;

fn key(raw: &str) -> Result<IdempotencyKey, ApiError> {
    IdempotencyKey::try_from(raw).map_err(|_| {
        ApiError::bad_request(format!(
            "`{:.80}` is not a key: a key is 64 lowercase hexadecimal characters, as /v1/intents returns it",
            raw
        ))
    })
}

/// The longest a claim waits for another holder's outcome (`wait_ms`): well
/// under the server's request timeout, so a wait answers rather than times
/// out. A client that waits longer asks again.
pub const MAX_WAIT_MS: u64 = 20_000;
/// The longest attempt id a claim may name.
pub const MAX_ATTEMPT_ID: usize = 128;

/// `POST /v1/actions/{key}/begin` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BeginRequest {
    /// The action type (from the catalog) the key belongs to.
    #[schema(value_type = String, example = "pix.cobranca")]
    pub action: ActionType,
    /// How long the claim holds, in ms (`default` and `maximum` in the schema).
    #[schema(value_type = LeaseMs, inline, required = false, nullable = true)]
    pub lease_ms: Option<u64>,
    /// The caller's name for this attempt (1 to 128 visible ASCII
    /// characters). Asking again with the same id while its claim is held
    /// answers the same claim and token, so a lost answer is recoverable.
    #[schema(example = "w1-6f1c0e2a")]
    pub attempt_id: Option<String>,
    /// While another holder's lease runs, wait up to this many ms for its
    /// outcome before answering (default 0, at most 20000).
    #[schema(minimum = 0, maximum = 20000)]
    pub wait_ms: Option<u64>,
}

/// The claim options `begin` and `POST /v1/intents`' `claim` share.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimOptions {
    /// How long the claim holds, in ms (`default` and `maximum` in the schema).
    #[schema(value_type = LeaseMs, inline, required = false, nullable = true)]
    pub lease_ms: Option<u64>,
    /// As `begin`'s `attempt_id`.
    pub attempt_id: Option<String>,
    /// As `begin`'s `wait_ms`.
    #[schema(minimum = 0, maximum = 20000)]
    pub wait_ms: Option<u64>,
}

/// Checked claim options.
pub(crate) struct Claim {
    lease: Duration,
    attempt_id: Option<String>,
    wait: Duration,
}

impl Claim {
    /// The attempt id the claim names, if any.
    pub(crate) fn attempt_id(&self) -> Option<&str> {
        self.attempt_id.as_deref()
    }

    /// How long the claim holds.
    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }
}

impl TryFrom<ClaimOptions> for Claim {
    type Error = ApiError;
    fn try_from(o: ClaimOptions) -> Result<Self, ApiError> {
        let lease = LeaseMs::from_request(o.lease_ms)
            .map_err(|e| ApiError::unprocessable(e.to_string()))?;
        let wait_ms = o.wait_ms.unwrap_or(0);
        if wait_ms > MAX_WAIT_MS {
            return Err(ApiError::unprocessable(format!(
                "wait_ms must be between 0 and {MAX_WAIT_MS}"
            )));
        }
        if let Some(id) = &o.attempt_id {
            let visible = id.bytes().all(|b| b.is_ascii_graphic());
            if id.is_empty() || id.len() > MAX_ATTEMPT_ID || !visible {
                return Err(ApiError::unprocessable(format!(
                    "attempt_id must be 1 to {MAX_ATTEMPT_ID} visible ASCII characters (no spaces)"
                )));
            }
        }
        Ok(Claim {
            lease: lease.duration(),
            attempt_id: o.attempt_id,
            wait: Duration::from_millis(wait_ms),
        })
    }
}

/// The previous attempt an uncertain claim replaced.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviousAttemptDoc {
    /// Its fencing token (now refused).
    pub token: i64,
    /// When it started, ms since the epoch.
    pub started_ms: i64,
    /// When its lease ended (absent once the sweeper marked it uncertain).
    pub lease_until_ms: Option<i64>,
}

/// What `begin` decided, tagged by `status`; each status has its members.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BeginResponse {
    /// You hold the action: act, then complete or fail with the token
    /// before the lease ends (201).
    Claimed {
        /// The fencing token to present to complete/fail.
        token: i64,
        /// The attempt number, 1 for the first.
        attempt: i32,
        /// The lease end, ms since the epoch.
        lease_until_ms: i64,
        /// The previous attempt's retryable error, when it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        previous_error: Option<String>,
    },
    /// Finished before: the stored response, verbatim (200).
    Completed {
        /// The stored response: any JSON the effect completed with.
        #[schema(value_type = Value)]
        response: Box<RawValue>,
        /// The attempt that completed it.
        attempt: i32,
        /// Whether the outcome was learned from the provider by reconcile.
        reconciled: bool,
    },
    /// Failed for good (200).
    Failed {
        /// The stored final error.
        error: String,
    },
    /// A previous attempt's outcome is unknown; you now hold the action
    /// under a new token (202).
    Uncertain {
        /// The fencing token to present to complete/fail/reconcile.
        token: i64,
        /// The attempt number.
        attempt: i32,
        /// The lease end, ms since the epoch.
        lease_until_ms: i64,
        /// The attempt whose outcome is unknown.
        previous: PreviousAttemptDoc,
        /// What to do next.
        advice: &'static str,
    },
    /// Only inside `POST /v1/intents`' `claim` (`begin` answers 409): another
    /// holder's lease is running; do not act, ask again after
    /// `retry_after_ms`.
    InFlight {
        /// The other holder's lease end, ms since the epoch.
        lease_until_ms: i64,
        /// How long until that lease ends, in ms.
        retry_after_ms: i64,
    },
}

const UNCERTAIN_ADVICE: &str = "a previous attempt started and its outcome is unknown: retry the provider call with the same key (the provider deduplicates it), or ask the provider what happened and record it with /reconcile, presenting this token";

/// Claims an action for a lease, or says why not.
#[utoipa::path(post, path = "/v1/actions/{key}/begin", tag = "actions", request_body = BeginRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The frozen intent key (64 lowercase hex)")),
    responses(
        (status = 201, description = "Claimed: act, then complete or fail with the token before the lease ends", body = BeginResponse),
        (status = 200, description = "Already finished: `completed` with the stored response, or `failed` for good", body = BeginResponse),
        (status = 202, description = "Uncertain: a previous attempt's outcome is unknown. You now hold the action with a new token: retry with the same key or reconcile", body = BeginResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "In flight: another holder's lease is running; retry after Retry-After seconds", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Unknown action, an action other than the key's, or lease out of range", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn begin_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    waiter: Waiter,
    ApiPath(raw): ApiPath<String>,
    ApiJson(req): ApiJson<BeginRequest>,
) -> Result<Response, ApiError> {
    let key = key(&raw)?;
    let action = req.action;
    state
        .catalog
        .action(action.as_str())
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let claim = Claim::try_from(ClaimOptions {
        lease_ms: req.lease_ms,
        attempt_id: req.attempt_id,
        wait_ms: req.wait_ms,
    })?;
    // Held to the end of this request (see `crate::attempts`).
    let attempt = state
        .attempts
        .seat(tenant.as_str(), claim.attempt_id.as_deref());
    let (status, answer, in_use) = claim_action(
        &state,
        &tenant,
        &action,
        &key,
        &claim,
        attempt.is_err(),
        &waiter,
        None,
    )
    .await?;
    if let BeginResponse::InFlight { lease_until_ms, .. } = answer {
        return Err(ApiError::lease_held(
            Problem::ActionInFlight,
            if in_use {
                ATTEMPT_IN_USE
            } else {
                "do not act: another holder's lease is running; call begin again after Retry-After seconds"
            },
            lease_until_ms,
            state.store.now_ms(),
        ));
    }
    let mut res = (status, Json(answer)).into_response();
    if status == StatusCode::CREATED {
        if let Ok(loc) = HeaderValue::from_str(&format!("/v1/actions/{key}")) {
            res.headers_mut().insert(header::LOCATION, loc);
        }
    }
    Ok(res)
}

/// What `begin` says to a request whose `attempt_id` another request is
/// using now (see [`crate::attempts`]).
pub(crate) const ATTEMPT_IN_USE: &str = "do not act: another request with this attempt_id is running now. An attempt_id names one attempt of one worker: never a message id two workers share. If this is a retry of a lost answer, call begin again after Retry-After seconds";

/// Claims `key` as `claim` says, waiting up to its `wait` while another
/// holder's lease runs, and says what happened with the status `begin`
/// answers it with (in flight: 409), and whether it was in flight because
/// another request used its attempt id. A wait holds no write turn, and
/// ends when the client leaves (nothing was claimed: the answer goes
/// nowhere). `first` is a claim already asked for (with the record, in
/// its transaction); it is answered as the first round's.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim_action(
    state: &ApiState,
    tenant: &idem_core::TenantId,
    action: &ActionType,
    key: &IdempotencyKey,
    claim: &Claim,
    attempt_in_use: bool,
    waiter: &Waiter,
    mut first: Option<Begin>,
) -> Result<(StatusCode, BeginResponse, bool), ApiError> {
    if attempt_in_use {
        // Another request with this attempt id is in the server now: this
        // one is another holder until it has ended (see
        // `crate::attempts`). Not waited on: asked about again soon.
        tracing::info!(
            "a claim named an attempt_id another request is using now; answered in flight"
        );
        let lease_until_ms = state.store.now_ms() + 250;
        return Ok((
            StatusCode::CONFLICT,
            BeginResponse::InFlight {
                lease_until_ms,
                retry_after_ms: 250,
            },
            true,
        ));
    }
    let until = tokio::time::Instant::now() + claim.wait;
    // Short first pauses: most holders finish within a provider's answer.
    let mut pause = Duration::from_millis(10);
    let begin = loop {
        let begin = match first.take() {
            Some(b) => b,
            None => {
                state
                    .store
                    .begin_attempt(
                        tenant,
                        action,
                        key,
                        claim.lease,
                        claim.attempt_id.as_deref(),
                    )
                    .await?
            }
        };
        let Begin::InFlight { lease_until_ms } = begin else {
            break begin;
        };
        let now = tokio::time::Instant::now();
        if now >= until {
            break begin;
        }
        // Never past the wait, nor much past the holder's lease (then the
        // claim is taken over as uncertain).
        let to_lease = u64::try_from(lease_until_ms.saturating_sub(state.store.now_ms()))
            .unwrap_or(0)
            .max(1);
        let nap = pause.min(until - now).min(Duration::from_millis(to_lease));
        if waiter.nap(nap).await.is_err() {
            tracing::debug!("a claim's client left while it waited; it claimed nothing");
            return Err(ApiError::unavailable());
        }
        pause = (pause * 2).min(Duration::from_millis(200));
    };
    note_begin(&begin);
    let answer = match begin {
        Begin::Claimed {
            token,
            attempt,
            lease_until_ms,
            previous_error,
        } => (
            StatusCode::CREATED,
            BeginResponse::Claimed {
                token,
                attempt,
                lease_until_ms,
                previous_error,
            },
        ),
        Begin::Completed {
            response,
            attempts,
            reconciled,
        } => (
            StatusCode::OK,
            BeginResponse::Completed {
                response: stored_json_or_string(response),
                attempt: attempts,
                reconciled,
            },
        ),
        Begin::Failed { error } => (StatusCode::OK, BeginResponse::Failed { error }),
        Begin::Uncertain {
            token,
            attempt,
            lease_until_ms,
            previous,
        } => {
            state.metrics.uncertain.inc();
            if previous.lease_until_ms.is_some() {
                state.metrics.lease_takeovers.inc();
            }
            (
                StatusCode::ACCEPTED,
                BeginResponse::Uncertain {
                    token,
                    attempt,
                    lease_until_ms,
                    previous: PreviousAttemptDoc {
                        token: previous.token,
                        started_ms: previous.started_ms,
                        lease_until_ms: previous.lease_until_ms,
                    },
                    advice: UNCERTAIN_ADVICE,
                },
            )
        }
        Begin::InFlight { lease_until_ms } => (
            StatusCode::CONFLICT,
            BeginResponse::InFlight {
                lease_until_ms,
                retry_after_ms: lease_until_ms.saturating_sub(state.store.now_ms()).max(0),
            },
        ),
    };
    Ok((answer.0, answer.1, false))
}

/// A claim's answer on the request's span (traces on).
fn note_begin(begin: &Begin) {
    use idem_wire::trace::note;
    let (outcome, attempt, token) = match begin {
        Begin::Claimed { token, attempt, .. } => ("claimed", Some(*attempt), Some(*token)),
        Begin::Completed { attempts, .. } => ("completed", Some(*attempts), None),
        Begin::Failed { .. } => ("failed", None, None),
        Begin::Uncertain { token, attempt, .. } => ("uncertain", Some(*attempt), Some(*token)),
        Begin::InFlight { .. } => ("in_flight", None, None),
    };
    note("idem.outcome", outcome);
    note(
        "idem.replayed",
        matches!(begin, Begin::Completed { .. } | Begin::Failed { .. }),
    );
    note("idem.uncertain", matches!(begin, Begin::Uncertain { .. }));
    if let Some(a) = attempt {
        note("idem.attempt", i64::from(a));
    }
    if let Some(t) = token {
        note("idem.fencing_token", t);
    }
}

async fn read_action(
    s: &mut Session,
    tenant: &idem_core::TenantId,
    key: &IdempotencyKey,
) -> Result<Json<ActionResponse>, ApiError> {
    match s.action(tenant, key).await {
        Ok(a) => Ok(Json(ActionResponse::new(key, a))),
        Err(idem_store::Error::NotFound) => Err(unknown_action(key)),
        Err(e) => Err(e.into()),
    }
}

fn unknown_action(key: &IdempotencyKey) -> ApiError {
    ApiError::not_found(format!(
        "no action with key {key} for this tenant: call /v1/actions/{key}/begin first"
    ))
}

/// Reads an action's state.
#[utoipa::path(get, path = "/v1/actions/{key}", tag = "actions",
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "The action as stored", body = ActionResponse),
        (status = 400, description = "Malformed key", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn get_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
) -> Result<Json<ActionResponse>, ApiError> {
    let key = key(&raw)?;
    read_action(&mut state.store.session().await?, &tenant, &key).await
}

/// `POST /v1/actions/{key}/complete` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    /// The fencing token `begin` gave.
    pub token: i64,
    /// The provider's response, stored verbatim and returned to every later
    /// `begin`: any JSON value.
    #[schema(value_type = Value)]
    pub response: Box<RawValue>,
}

/// `POST /v1/actions/{key}/fail` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailRequest {
    /// The fencing token `begin` gave.
    pub token: i64,
    /// What went wrong.
    pub error: String,
    /// Whether a later `begin` may claim the action again.
    pub retryable: bool,
}

/// `POST /v1/actions/{key}/reconcile` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    /// The fencing token the uncertain claim gave.
    pub token: i64,
    /// What the provider says happened.
    pub outcome: ReconcileOutcome,
    /// The provider's response (outcome `completed`): any JSON value.
    #[schema(value_type = Option<Value>)]
    pub response: Option<Box<RawValue>>,
    /// The error (outcome `failed`).
    pub error: Option<String>,
    /// Whether a retry may run (outcome `failed`; default false).
    pub retryable: Option<bool>,
}

/// What the provider says happened to an uncertain attempt.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReconcileOutcome {
    /// It executed: `response` holds what the provider answered.
    Completed,
    /// It did not: `error` says why, `retryable` whether to try again.
    Failed,
}

impl ReconcileRequest {
    /// The outcome with the member it requires, or what is missing. The
    /// body keeps its documented flat shape (`outcome` beside `response` or
    /// `error`): a `response` is stored byte for byte, which serde's
    /// internally tagged enums cannot carry.
    fn outcome(self) -> Result<Outcome, ApiError> {
        match (self.outcome, self.response, self.error) {
            (ReconcileOutcome::Completed, Some(r), None) => {
                Ok(Outcome::Completed(r.get().to_owned()))
            }
            (ReconcileOutcome::Failed, None, Some(error)) => Ok(Outcome::Failed {
                error,
                retryable: self.retryable.unwrap_or(false),
            }),
            (ReconcileOutcome::Completed, _, _) => Err(ApiError::unprocessable(
                "outcome `completed` takes `response` (and no `error`)",
            )),
            (ReconcileOutcome::Failed, _, _) => Err(ApiError::unprocessable(
                "outcome `failed` takes `error` (and no `response`)",
            )),
        }
    }
}

/// `text`, or its first `limit` bytes (cut at a character) and how long it was.
fn cut_to(text: &str, limit: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= limit {
        return text.into();
    }
    let mut end = limit.saturating_sub(64);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut: {} bytes in all)", &text[..end], text.len()).into()
}

/// The body of `complete`, `fail`, `reconcile` and `uncertain`: JSON like
/// [`ApiJson`], read up to the outcome limit (`--max-outcome-bytes`) plus
/// [`ENVELOPE`] for the members around the outcome. A body past that is
/// [`Oversize`]: read on without keeping it, for its `token` (wherever it
/// is) and the start of its `error`, so the handler can mark the action
/// uncertain before it answers 413.
pub struct OutcomeJson<T>(pub Result<T, Oversize>);

/// What is known of a body too large to keep.
#[derive(Debug)]
pub struct Oversize {
    /// Bytes read (the whole body's size when `whole`).
    pub size: usize,
    /// Whether the body was read to its end.
    pub whole: bool,
    /// Its top-level `token`, when it has one.
    pub token: Option<i64>,
    /// The start of its `error` member, decoded, and the member's length.
    pub error: Option<(String, usize)>,
}

/// Room for the members around an outcome (token, outcome, retryable).
const ENVELOPE: usize = 64 * 1024;

impl<T: serde::de::DeserializeOwned> axum::extract::FromRequest<ApiState> for OutcomeJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &ApiState) -> Result<Self, ApiError> {
        use futures_util::StreamExt;
        crate::extract::json_only(req.headers())?;
        let limit = state.max_outcome_bytes;
        let cap = limit.saturating_add(ENVELOPE);
        let ticket = req.extensions().get::<crate::turns::Ticket>().cloned();
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        // Sized once when the length is declared: a kept outcome costs
        // its size, not a doubling vector's slack.
        let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(cap));
        let mut scan: Option<super::oversize::Scan> = None;
        let mut stream = req.into_body().into_data_stream();
        let mut whole = true;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                // Past the cap with a token read: the provider acted and
                // its worker said so; a body cut short changes nothing.
                Err(_) if scan.as_ref().is_some_and(|s| s.token.is_some()) => {
                    whole = false;
                    break;
                }
                Err(e) => {
                    return Err(ApiError::body(
                        axum::http::StatusCode::BAD_REQUEST,
                        format!("the body could not be read: {e}"),
                    ))
                }
            };
            match scan.as_mut() {
                None if buf.len() + chunk.len() <= cap => buf.extend_from_slice(&chunk),
                None => {
                    let mut s = super::oversize::Scan::new(limit);
                    s.feed(&buf);
                    s.feed(&chunk);
                    buf = Vec::new();
                    scan = Some(s);
                }
                Some(s) => s.feed(&chunk),
            }
            if scan.as_ref().is_some_and(super::oversize::Scan::has_enough) {
                whole = false;
                break;
            }
        }
        let Some(s) = scan else {
            return crate::extract::parse_json(&buf).map(|v| OutcomeJson(Ok(v)));
        };
        // Read to its end, the body took its turn; stopped early, it
        // takes it here, before the handler writes.
        if let Some(t) = ticket {
            t.take().await.map_err(|_| ApiError::unavailable())?;
        }
        let error = s.error_start().map(|e| (e, s.error_len));
        Ok(OutcomeJson(Err(Oversize {
            size: s.size,
            whole,
            token: s.token,
            error,
        })))
    }
}

/// The answer to a body too large to keep: the action marked uncertain
/// first when its token was read (`mark`: not for a reconcile, whose claim
/// is uncertain already), then 413 saying so.
async fn too_large(
    state: &ApiState,
    tenant: &idem_core::TenantId,
    key: &IdempotencyKey,
    big: Oversize,
    mark: bool,
) -> ApiError {
    let limit = state.max_outcome_bytes;
    let size = big.whole.then_some(big.size);
    let (Some(token), true) = (big.token, mark) else {
        return ApiError::outcome_too_large(size, limit, false);
    };
    let size_said = if big.whole {
        format!("{} bytes", big.size)
    } else {
        format!("over {} bytes", big.size)
    };
    let why = format!(
        "the provider's outcome was {size_said}, over the {limit}-byte limit (--max-outcome-bytes): it acted, but its answer could not be kept"
    );
    let marked = async {
        let mut s = state.store.session().await?;
        s.mark_uncertain(tenant, key, token, &why).await
    }
    .await;
    match marked {
        Ok(()) => {
            state.metrics.uncertain.inc();
            ApiError::outcome_too_large(size, limit, true)
        }
        Err(e) => finish_error(key, e),
    }
}

fn finish_error(key: &IdempotencyKey, e: idem_store::Error) -> ApiError {
    match e {
        idem_store::Error::NotFound => unknown_action(key),
        e @ (idem_store::Error::StaleToken { .. } | idem_store::Error::LeaseLost { .. }) => {
            ApiError::conflict(
                Problem::StaleToken,
                format!("{e}; nothing was recorded. Read the action with GET /v1/actions/{key}"),
            )
        }
        other => other.into(),
    }
}

async fn finish(
    state: &ApiState,
    tenant: &idem_core::TenantId,
    key: &IdempotencyKey,
    token: i64,
    outcome: Outcome,
    reconciled: bool,
) -> Result<Json<ActionResponse>, ApiError> {
    let text_len = match &outcome {
        Outcome::Completed(r) => r.len(),
        Outcome::Failed { error, .. } => error.len(),
    };
    let mut s = state.store.session().await?;
    let limit = state.max_outcome_bytes;
    if text_len > limit {
        // The provider acted (or answered an error nobody can read now):
        // never bad input. Uncertain before the answer goes out, so the
        // work queue shows it now rather than when the lease ends. A
        // reconcile's claim is uncertain already and stays so.
        if !reconciled {
            let why = format!(
                "the provider's outcome was {text_len} bytes, over the {limit}-byte limit (--max-outcome-bytes): it acted, but its answer could not be kept"
            );
            s.mark_uncertain(tenant, key, token, &why)
                .await
                .map_err(|e| finish_error(key, e))?;
        }
        return Err(ApiError::outcome_too_large(
            Some(text_len),
            limit,
            !reconciled,
        ));
    }
    idem_wire::trace::note("idem.fencing_token", token);
    idem_wire::trace::note(
        "idem.outcome",
        if matches!(outcome, Outcome::Completed(_)) {
            "completed"
        } else {
            "failed"
        },
    );
    idem_wire::trace::note("idem.reconciled", reconciled);
    // The outcome's statement returns the row: the answer, without a read.
    let action = s
        .settle_action(tenant, key, token, &outcome, reconciled)
        .await
        .map_err(|e| finish_error(key, e))?;
    Ok(Json(ActionResponse::new(key, action)))
}

/// Records success under the fencing token.
#[utoipa::path(post, path = "/v1/actions/{key}/complete", tag = "actions", request_body = CompleteRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "Recorded (or the same outcome was already recorded with this token)", body = ActionResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale fencing token: a newer claim holds the action; nothing was recorded", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "`outcome-too-large`: the response is over --max-outcome-bytes. The provider acted: the action is now uncertain (`marked_uncertain: true`; the token is read wherever it is in the body, whatever its size), or, when the body had no top-level token (`marked_uncertain: false`), mark it with POST .../uncertain. Never bad input", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn complete_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
    OutcomeJson(req): OutcomeJson<CompleteRequest>,
) -> Result<Json<ActionResponse>, ApiError> {
    let key = key(&raw)?;
    let req = match req {
        Ok(r) => r,
        Err(big) => return Err(too_large(&state, &tenant, &key, big, true).await),
    };
    let outcome = Outcome::Completed(req.response.get().to_owned());
    finish(&state, &tenant, &key, req.token, outcome, false).await
}

/// Records a failure under the fencing token.
#[utoipa::path(post, path = "/v1/actions/{key}/fail", tag = "actions", request_body = FailRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "Recorded", body = ActionResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale fencing token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "`outcome-too-large`: the error is over --max-outcome-bytes; the action is now uncertain (see `marked_uncertain`)", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn fail_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
    OutcomeJson(req): OutcomeJson<FailRequest>,
) -> Result<Json<ActionResponse>, ApiError> {
    let key = key(&raw)?;
    let req = match req {
        Ok(r) => r,
        Err(big) => return Err(too_large(&state, &tenant, &key, big, true).await),
    };
    let outcome = Outcome::Failed {
        error: req.error,
        retryable: req.retryable,
    };
    finish(&state, &tenant, &key, req.token, outcome, false).await
}

/// Records what the provider says happened to an uncertain attempt.
#[utoipa::path(post, path = "/v1/actions/{key}/reconcile", tag = "actions", request_body = ReconcileRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "Recorded, marked reconciled", body = ActionResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale fencing token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 413, description = "`outcome-too-large`: the response or error is over --max-outcome-bytes; the action stays uncertain", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Outcome not `completed` or `failed`, or its member missing; or the claim is not uncertain (it started fresh and its lease runs: complete or fail it)", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn reconcile_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
    OutcomeJson(req): OutcomeJson<ReconcileRequest>,
) -> Result<Json<ActionResponse>, ApiError> {
    let key = key(&raw)?;
    let req = match req {
        Ok(r) => r,
        Err(big) => return Err(too_large(&state, &tenant, &key, big, false).await),
    };
    let token = req.token;
    let outcome = req.outcome()?;
    finish(&state, &tenant, &key, token, outcome, true).await
}

/// `POST /v1/actions/{key}/renew` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenewRequest {
    /// The fencing token of the claim to extend.
    pub token: i64,
    /// The new lease, in ms from now (`default` and `maximum` in the schema).
    #[schema(value_type = LeaseMs, inline, required = false, nullable = true)]
    pub lease_ms: Option<u64>,
}

/// `POST /v1/actions/{key}/renew` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RenewResponse {
    /// The token, still holding the claim.
    pub token: i64,
    /// The lease's new end, ms since the epoch.
    pub lease_until_ms: i64,
}

/// Extends a held claim's lease while its effect runs.
#[utoipa::path(post, path = "/v1/actions/{key}/renew", tag = "actions", request_body = RenewRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "Extended", body = RenewResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "The token no longer holds the claim (a newer claim took it, it was settled, or its lease ran out): stop and let the next claim settle it", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 422, description = "Lease out of range", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn renew_action(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
    ApiJson(req): ApiJson<RenewRequest>,
) -> Result<Json<RenewResponse>, ApiError> {
    let key = key(&raw)?;
    let claim = Claim::try_from(ClaimOptions {
        lease_ms: req.lease_ms,
        ..ClaimOptions::default()
    })?;
    let mut s = state.store.session().await?;
    let lease_until_ms = s
        .renew(&tenant, &key, req.token, claim.lease)
        .await
        .map_err(|e| finish_error(&key, e))?;
    Ok(Json(RenewResponse {
        token: req.token,
        lease_until_ms,
    }))
}

/// `POST /v1/actions/{key}/uncertain` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UncertainRequest {
    /// The fencing token of the held claim.
    pub token: i64,
    /// What happened (the exception the effect raised), kept as evidence.
    pub error: String,
}

/// Marks a held claim uncertain now: its effect raised, so whether the
/// provider acted is unknown. The next `begin` answers `uncertain` at once
/// and `/live`'s work queue lists it, without waiting for the lease.
#[utoipa::path(post, path = "/v1/actions/{key}/uncertain", tag = "actions", request_body = UncertainRequest,
    params(("key" = String, Path, pattern = "^[0-9a-f]{64}$", description = "The key (64 lowercase hex)")),
    responses(
        (status = 200, description = "Marked uncertain (or it already was, with this token)", body = ActionResponse),
        (status = 400, description = "Malformed key or body", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 404, description = "No such action for this tenant", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
        (status = 409, description = "Stale fencing token: a newer claim holds the action, or it was settled", body = crate::error::ProblemDoc, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])))]
pub async fn mark_uncertain(
    State(state): State<ApiState>,
    Tenant(tenant): Tenant,
    ApiPath(raw): ApiPath<String>,
    OutcomeJson(req): OutcomeJson<UncertainRequest>,
) -> Result<Json<ActionResponse>, ApiError> {
    let key = key(&raw)?;
    // Never refused for its size: the effect may have happened, and the
    // action must become uncertain whatever the error says. A text over
    // the limit is kept cut, saying so; a body too large to keep gives its
    // token and its error's start.
    let (token, error) = match req {
        Ok(req) => (
            req.token,
            cut_to(&req.error, state.max_outcome_bytes).into_owned(),
        ),
        Err(big) => {
            let Some(token) = big.token else {
                return Err(ApiError::outcome_too_large(
                    big.whole.then_some(big.size),
                    state.max_outcome_bytes,
                    false,
                ));
            };
            let error = match big.error {
                Some((mut start, len)) => {
                    let mut end = state.max_outcome_bytes.saturating_sub(64).min(start.len());
                    while !start.is_char_boundary(end) {
                        end -= 1;
                    }
                    start.truncate(end);
                    format!("{start}… (cut: {len} bytes in all)")
                }
                None => format!("(an error over {} bytes, not kept)", big.size),
            };
            (token, error)
        }
    };
    let mut s = state.store.session().await?;
    s.mark_uncertain(&tenant, &key, token, &error)
        .await
        .map_err(|e| finish_error(&key, e))?;
    state.metrics.uncertain.inc();
    read_action(&mut s, &tenant, &key).await
}
