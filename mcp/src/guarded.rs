//! One guarded tool call: the arguments become the action's fields, the
//! intent is recorded (the first call freezes the fields the key covers
//! and the arguments as it sent them), the action is claimed under the key,
//! and the upstream runs only in the call that holds the claim, always
//! with the frozen arguments. Every answer says what happened in
//! `_meta.idem`, and a replayed or divergent one also in a sentence a model
//! reads.

use crate::bind::BoundGuard;
use crate::guard_file::{Errors, Field, Guard, LookupArgument, OnUncertain};
use idem_core::{IdempotencyKey, Payload, TenantId};
use idem_store::{Begin, CallCount, LookupSaid, Outcome, Store};
use idem_wire::meta::{IdemMeta, LookupVerdict, Source, UpstreamState};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Put by the HTTP layer in a request's extensions: cancelled once the
/// request's client has gone away (its connection closed, or the request
/// timed out), while the request itself runs on to its end.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// The member of the recorded candidate that keeps the tool's arguments as
/// the first call sent them (the catalog's fields beside it make the key;
/// this member never enters it).
pub const ARGUMENTS_MEMBER: &str = "_idem_mcp_arguments";
/// The member of the recorded candidate that keeps the request's `_meta`
/// entries a guard freezes (`freeze_meta`), as the first call sent them;
/// never part of the key.
pub const META_MEMBER: &str = "_idem_mcp_meta";
/// The largest arguments object a call may send, as the API's body bound.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

/// Why a call to the upstream brought no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswered {
    /// The request never left: the connection to the upstream was refused
    /// or could not be made (nothing can have run).
    NotSent(String),
    /// The request may have left and no answer came: the outcome is
    /// unknown.
    Lost(String),
}

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unanswered::NotSent(why) | Unanswered::Lost(why) => f.write_str(why),
        }
    }
}

/// An error with no more said is a lost answer: unknown, never "not run".
impl From<String> for Unanswered {
    fn from(why: String) -> Self {
        Unanswered::Lost(why)
    }
}

/// What the gateway calls: the upstream server's `tools/call`.
pub trait CallUpstream: Send + Sync {
    /// Calls `tool` with `arguments`; an error says whether the request
    /// could have reached the upstream ([`Unanswered::Lost`]: the outcome
    /// is unknown) or provably did not ([`Unanswered::NotSent`]).
    /// `meta` is the request's `_meta` to send (empty: none).
    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
    ) -> impl Future<Output = Result<CallToolResult, Unanswered>> + Send;

    /// Whether a call can be sent now: `false` when the upstream is known
    /// to be gone (its process exited, its connection closed), so that a
    /// call not sent is never recorded as sent.
    fn available(&self) -> bool {
        true
    }
}

/// What one guarded call did, for the monitor's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The upstream ran (first time, after a retryable failure, or resent
    /// for an uncertain action).
    Executed,
    /// The stored result was returned; nothing ran.
    Replayed,
    /// An earlier attempt's unknown outcome was settled by this call (the
    /// lookup said executed, or a resend was answered): the effect ran
    /// once, in an attempt whose own call may never have been answered (a
    /// gateway killed), so it is counted as an execution now.
    Settled,
    /// The outcome is unknown (the upstream did not answer, or an earlier
    /// attempt's outcome is unknown and the guard refuses to resend).
    Uncertain,
    /// Another attempt still holds the claim.
    InFlight,
    /// The call was refused before anything was recorded (bad arguments).
    Refused,
    /// The action failed for good earlier, or idem's store failed.
    Failed,
}

impl CallOutcome {
    /// The outcome as a trace attribute names it (`idem.outcome`).
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Executed => "executed",
            CallOutcome::Replayed => "replayed",
            CallOutcome::Settled => "settled",
            CallOutcome::Uncertain => "uncertain",
            CallOutcome::InFlight => "in_flight",
            CallOutcome::Refused => "refused",
            CallOutcome::Failed => "failed",
        }
    }
}

/// What the gateway answers, and what it was.
#[derive(Debug)]
pub struct Answer {
    /// The `tools/call` result.
    pub result: CallToolResult,
    /// What happened.
    pub outcome: CallOutcome,
    /// Whether this call's arguments differed from the frozen intent's.
    pub diverged: bool,
}

/// The guarded calls of one tenant, on one store.
#[derive(Clone)]
pub struct GuardedCalls {
    store: Store,
    tenant: TenantId,
    /// The upstream's time in this call so far (the tool call, a
    /// lookup's), for `/metrics`.
    upstream_time: std::sync::Arc<std::sync::Mutex<Option<Duration>>>,
    /// The largest upstream result stored for replay: the server's
    /// `--max-outcome-bytes`, as every door.
    max_outcome: usize,
}

impl GuardedCalls {
    /// Guarded calls for `tenant` on `store`.
    pub fn new(store: Store, tenant: TenantId) -> Self {
        Self {
            store,
            tenant,
            upstream_time: Default::default(),
            max_outcome: idem_wire::DEFAULT_MAX_OUTCOME_BYTES,
        }
    }

    /// How long the upstream took in the calls made through this, when
    /// they asked it at all.
    pub fn upstream_time(&self) -> Option<Duration> {
        *self.upstream_time.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds the upstream's time since `since`.
    fn upstream_took(&self, since: std::time::Instant) {
        let mut t = self.upstream_time.lock().unwrap_or_else(|p| p.into_inner());
        *t = Some(t.unwrap_or_default() + since.elapsed());
    }

    /// With `bytes` as the largest result stored (`--max-outcome-bytes`).
    pub fn with_max_outcome(mut self, bytes: usize) -> Self {
        self.max_outcome = bytes;
        self
    }

    /// Runs one guarded call of `guard`'s tool.
    pub async fn call<U: CallUpstream>(
        &self,
        guard: &BoundGuard,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
        upstream: &U,
    ) -> Answer {
        self.call_until(guard, arguments, meta, upstream, &CancellationToken::new())
            .await
    }

    /// [`call`](Self::call), which stops *waiting* once `gone` is
    /// cancelled (its client went away): a call waiting on another's claim
    /// answers in-flight at once instead of polling to the lease's end.
    /// An execution under way is never cut: its outcome is recorded.
    pub async fn call_until<U: CallUpstream>(
        &self,
        guard: &BoundGuard,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
        upstream: &U,
        gone: &CancellationToken,
    ) -> Answer {
        let answer = self.answer(guard, arguments, meta, upstream, gone).await;
        self.count(guard, &answer).await;
        answer
    }

    /// Counts the call for the monitor, `/v1/stats` and `/metrics`; a count
    /// that cannot be written costs the agent nothing.
    async fn count(&self, guard: &Guard, answer: &Answer) {
        let outcome = match answer.outcome {
            CallOutcome::Executed => CallCount::Executed,
            CallOutcome::Replayed => CallCount::Replayed,
            CallOutcome::Settled => CallCount::Settled,
            CallOutcome::Uncertain => CallCount::Uncertain,
            CallOutcome::InFlight => CallCount::InFlight,
            CallOutcome::Refused => CallCount::Refused,
            CallOutcome::Failed => CallCount::Failed,
        };
        // Its divergence was counted when the intent was recorded.
        self.count_as(&guard.tool, outcome).await;
    }

    /// Counts one outcome of `tool` (a call's, or a note beside one).
    async fn count_as(&self, tool: &str, outcome: CallCount) {
        let counted = match self.store.session().await {
            Ok(mut s) => s.count_mcp_call(&self.tenant, tool, outcome, false).await,
            Err(e) => Err(e),
        };
        if let Err(e) = counted {
            tracing::warn!(error = %e, tool, outcome = outcome.as_str(), "a guarded call was not counted");
        }
    }

    async fn answer<U: CallUpstream>(
        &self,
        guard: &BoundGuard,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
        upstream: &U,
        gone: &CancellationToken,
    ) -> Answer {
        match self
            .try_call(guard, arguments, meta, upstream, gone, None)
            .await
        {
            Ok(a) => a,
            Err(Refusal::BadArguments(message)) => Answer {
                result: refused_meta(error_result(message)),
                outcome: CallOutcome::Refused,
                diverged: false,
            },
            Err(Refusal::Store(e)) => {
                tracing::error!(error = %e, tool = %guard.tool, "the intent store failed during a guarded call");
                Answer {
                    result: refused_meta(error_result(format!(
                        "idem could not record this call ({e}); nothing was executed by this call. Retry the same call with the same arguments: it cannot run twice."
                    ))),
                    outcome: CallOutcome::Failed,
                    diverged: false,
                }
            }
        }
    }

    async fn try_call<U: CallUpstream>(
        &self,
        guard: &BoundGuard,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
        upstream: &U,
        gone: &CancellationToken,
        superseded: Option<IdempotencyKey>,
    ) -> Result<Answer, Refusal> {
        // Kept for the one new try after a supersession (`supersede_failed`).
        let again = (guard.supersede_failed && superseded.is_none())
            .then(|| (arguments.clone(), meta.clone()));
        // The `_meta` entries this guard freezes, as this call sent them.
        let to_freeze: Map<String, Value> = guard
            .freeze_meta
            .iter()
            .filter_map(|name| meta.get(name).map(|v| (name.clone(), v.clone())))
            .collect();
        let sent = serde_json::to_string(&arguments).unwrap_or_default();
        let frozen_meta_text = serde_json::to_string(&to_freeze).unwrap_or_default();
        let frozen_meta_bytes = frozen_meta_text.len();
        if frozen_meta_bytes > MAX_ARGUMENTS_BYTES {
            return Err(Refusal::BadArguments(format!(
                "the _meta entries this tool freezes ({}) are {frozen_meta_bytes} bytes; at most {MAX_ARGUMENTS_BYTES}",
                guard.freeze_meta.join(", ")
            )));
        }
        if sent.len() > MAX_ARGUMENTS_BYTES {
            return Err(Refusal::BadArguments(format!(
                "the arguments are {} bytes; a guarded call takes at most {MAX_ARGUMENTS_BYTES}",
                sent.len()
            )));
        }
        if let Err(e) = idem_core::json::check_depth(sent.as_bytes(), idem_core::json::MAX_DEPTH) {
            return Err(Refusal::BadArguments(format!(
                "the arguments nest too deep: {e}"
            )));
        }
        // The same on both backends (PostgreSQL's text cannot hold one;
        // SQLite's can, and would freeze it).
        if let Some(arg) = arguments.iter().find(|(_, v)| holds_nul(v)).map(|(k, _)| k) {
            return Err(Refusal::BadArguments(format!(
                "argument `{arg}` holds a NUL character (\\u0000), which idem cannot store; nothing was recorded or executed"
            )));
        }
        let mut candidate = Map::new();
        if let Some(k) = &guard.key_argument {
            // Refused before anything is recorded: the key must have a
            // place to go in these arguments.
            if let Err(why) = k.value.set(&mut arguments.clone(), Value::Null) {
                return Err(Refusal::BadArguments(format!(
                    "key_argument {why}; nothing was recorded or executed"
                )));
            }
        }
        for Field {
            name: field, arg, ..
        } in &guard.fields
        {
            let Some(v) = arg.read(&arguments, &meta) else {
                let what = if arg.in_meta() {
                    "_meta entry"
                } else {
                    "argument"
                };
                return Err(Refusal::BadArguments(format!(
                    "missing {what} `{arg}`: {} needs it (idem's field `{field}`) to tell this charge from others; nothing was recorded or executed",
                    guard.tool
                )));
            };
            candidate.insert(field.clone(), v.clone());
        }
        candidate.insert(
            ARGUMENTS_MEMBER.to_owned(),
            Value::Object(arguments.clone()),
        );
        if !to_freeze.is_empty() {
            if let Err(e) = idem_core::json::check_depth(
                frozen_meta_text.as_bytes(),
                idem_core::json::MAX_DEPTH,
            ) {
                return Err(Refusal::BadArguments(format!(
                    "the _meta entries this tool freezes nest too deep: {e}"
                )));
            }
            if to_freeze.values().any(holds_nul) {
                return Err(Refusal::BadArguments(
                    "a _meta entry this tool freezes holds a NUL character (\\u0000), which idem cannot store; nothing was recorded or executed".into(),
                ));
            }
            candidate.insert(META_MEMBER.to_owned(), Value::Object(to_freeze));
        }
        let text = Value::Object(candidate).to_string();
        let payload = Payload::from_json(&text)
            .map_err(|e| Refusal::BadArguments(format!("the arguments cannot be read: {e}")))?;
        let recorded = match self
            .store
            .record_intent(&self.tenant, guard.action.as_str(), &payload)
            .await
        {
            Ok(r) => r,
            Err(idem_store::Error::Invalid(m)) => {
                return Err(Refusal::BadArguments(name_the_argument(guard, &m)))
            }
            Err(e) if e.is_unstorable_text() => {
                return Err(Refusal::BadArguments(
                    "an argument holds a NUL character or text the database cannot store".into(),
                ))
            }
            Err(e) => return Err(Refusal::Store(e)),
        };
        if recorded.diverged {
            // Counted with the intent's own count, whatever becomes of the
            // call (a gateway killed from here on still agrees with
            // idem_intent_divergences_total).
            self.count_as(&guard.tool, CallCount::Diverged).await;
        }
        let frozen = frozen_arguments(guard, recorded.candidate.as_deref(), &arguments);
        let differences = differences(guard, &arguments, &frozen);
        let (meta, diverged_meta) = meta_to_send(guard, recorded.candidate.as_deref(), meta);
        if let Some((arguments, meta)) = again {
            if recorded.diverged || !diverged_meta.is_empty() {
                let why = if differences.is_empty() {
                    format!("the _meta entries {} changed", diverged_meta.join(", "))
                } else {
                    differences
                        .iter()
                        .map(|(arg, now, first)| {
                            format!("{arg} {} (was {})", plain(now), plain(first))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                if let Some(old) = self
                    .supersede_if_failed(guard, &recorded, &payload, &why)
                    .await?
                {
                    // Recorded again: the intent now freezes this call's
                    // candidate under a key of its own.
                    return Box::pin(self.try_call(
                        guard,
                        arguments,
                        meta,
                        upstream,
                        gone,
                        Some(old),
                    ))
                    .await;
                }
            }
        }
        let call = Call {
            guard,
            rules_version: recorded.rules_version,
            payload: recorded.payload.clone(),
            key: recorded.key.clone(),
            reference: recorded.reference.clone(),
            frozen,
            // Diverged means one thing everywhere: the normalized fields
            // the key covers differ (`180` and `180.00` do not), as the
            // intent's own count says.
            diverged: recorded.diverged,
            differences,
            meta,
            diverged_meta,
            looked_up: AtomicBool::new(false),
            superseded,
        };
        self.claim_and_run(&call, upstream, gone).await
    }

    /// `supersede_failed`: a call that diverges from an intent whose action
    /// failed (nothing executed: the provider refused it, or its
    /// authorization expired) supersedes it with this call's candidate. The
    /// store seals the failed action and files the old version, audited;
    /// anything but a failure (started, uncertain, completed) is left as it
    /// is. The superseded key, when it was done.
    async fn supersede_if_failed(
        &self,
        guard: &Guard,
        recorded: &idem_store::RecordedIntent,
        candidate: &Payload<'_>,
        why: &str,
    ) -> Result<Option<IdempotencyKey>, Refusal> {
        let state = match self
            .store
            .session()
            .await
            .map_err(Refusal::Store)?
            .action(&self.tenant, &recorded.key)
            .await
        {
            Ok(a) => a.state,
            Err(idem_store::Error::NotFound) => return Ok(None),
            Err(e) => return Err(Refusal::Store(e)),
        };
        if state != idem_store::ActionState::Failed {
            return Ok(None);
        }
        let actor = format!(
            "the MCP gateway's guard of {} (line {})",
            guard.tool, guard.line
        );
        let reason = format!("a later call diverged from the failed intent: {why}");
        match self
            .store
            .supersede_intent(
                &self.tenant,
                guard.action.as_str(),
                &recorded.reference,
                Some(candidate),
                &actor,
                &reason,
            )
            .await
        {
            Ok(done) => {
                tracing::warn!(tool = %guard.tool, old = %done.previous_key, new = %done.intent.key, "a failed intent was superseded by a divergent call (supersede_failed)");
                Ok(Some(done.previous_key))
            }
            // Claimed meanwhile, or settled: the call goes on as it is.
            Err(idem_store::Error::NotSupersedable(_)) => Ok(None),
            Err(e) => Err(Refusal::Store(e)),
        }
    }

    async fn claim_and_run<U: CallUpstream>(
        &self,
        call: &Call<'_>,
        upstream: &U,
        gone: &CancellationToken,
    ) -> Result<Answer, Refusal> {
        let guard = call.guard;
        // Another holder's lease bounds the wait: past it the claim is
        // taken over as uncertain.
        let give_up = tokio::time::Instant::now() + guard.lease + Duration::from_secs(1);
        let mut pause = Duration::from_millis(10);
        loop {
            let begin = self
                .store
                .begin_action(&self.tenant, &guard.action, &call.key, guard.lease)
                .await
                .map_err(Refusal::Store)?;
            if let Begin::Claimed { token, .. } | Begin::Uncertain { token, .. } = &begin {
                idem_wire::trace::note("idem.fencing_token", *token);
            }
            match begin {
                Begin::Claimed { token, attempt, .. } => {
                    return self.execute(call, upstream, token, attempt, false).await
                }
                Begin::Completed {
                    response,
                    attempts,
                    reconciled,
                } => return self.replay(call, &response, attempts, reconciled).await,
                Begin::Failed { error } => {
                    return Ok(error_answer(
                        call,
                        0,
                        CallOutcome::Failed,
                        format!(
                            "{} for {} failed for good earlier and will not run again: {error}",
                            guard.tool, call.reference
                        ),
                    ))
                }
                Begin::Uncertain { token, attempt, .. } => match guard.on_uncertain {
                    OnUncertain::Resend => {
                        return self.execute(call, upstream, token, attempt, true).await
                    }
                    OnUncertain::Lookup(_) => {
                        return self.look_up(call, upstream, token, attempt).await
                    }
                    OnUncertain::Refuse => {
                        let mut s = self.store.session().await.map_err(Refusal::Store)?;
                        // Handed back at once, still uncertain, for a person.
                        let _ = s
                            .mark_uncertain(
                                &self.tenant,
                                &call.key,
                                token,
                                "the gateway refuses to resend (on_uncertain = \"refuse\")",
                            )
                            .await;
                        return Ok(error_answer(
                            call,
                            attempt,
                            CallOutcome::Uncertain,
                            format!(
                                    "the outcome of an earlier {} for {} is unknown: it may have been executed. \
                                     Do not retry it with a new reference (that would be a new charge); \
                                     it is in idem's work queue (/live), where a person settles it. Key {}.",
                                    guard.tool, call.reference, call.key
                                ),
                        ));
                    }
                },
                Begin::InFlight { lease_until_ms } => {
                    let now = tokio::time::Instant::now();
                    if now >= give_up {
                        let wait_s = (lease_until_ms - self.store.now_ms()).max(0) / 1000 + 1;
                        return Ok(error_answer(
                            call,
                            0,
                            CallOutcome::InFlight,
                            format!(
                                    "{} for {} is still running in another call; nothing was executed by this one. Retry the same call in {wait_s} s to get its result.",
                                    guard.tool, call.reference
                                ),
                        ));
                    }
                    tokio::select! {
                        () = tokio::time::sleep(pause.min(give_up - now)) => {}
                        () = gone.cancelled() => {
                            return Ok(error_answer(
                                call,
                                0,
                                CallOutcome::InFlight,
                                format!(
                                    "{} for {} is still running in another call, and this call's client went away; nothing was executed by this one",
                                    guard.tool, call.reference
                                ),
                            ));
                        }
                    }
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
            }
        }
    }

    async fn execute<U: CallUpstream>(
        &self,
        call: &Call<'_>,
        upstream: &U,
        token: i64,
        attempt: i32,
        reconcile: bool,
    ) -> Result<Answer, Refusal> {
        let guard = call.guard;
        if let Err(why) = self.covered(call) {
            // Nothing is sent: the arguments that would run are not the
            // ones the key stands for. Failed for good, so every later
            // call says so instead of executing.
            tracing::error!(tool = %guard.tool, key = %call.key, "{why}");
            let mut s = self.store.session().await.map_err(Refusal::Store)?;
            if let Err(e) = s.fail(&self.tenant, &call.key, token, &why, false).await {
                tracing::warn!(error = %e, "could not record a refused guarded call");
            }
            return Ok(error_answer(
                call,
                attempt,
                CallOutcome::Refused,
                format!("{why}; nothing was executed"),
            ));
        }
        if !upstream.available() {
            return self
                .not_sent(
                    call,
                    token,
                    attempt,
                    "the upstream MCP server is down (the gateway is restarting it)",
                    UpstreamState::Restarting,
                )
                .await;
        }
        let mut arguments = call.frozen.clone();
        if let Some(k) = &guard.key_argument {
            // Overwritten whatever the caller sent there; checked to fit
            // before the intent was recorded.
            if let Err(why) = k
                .value
                .set(&mut arguments, Value::String(call.key.to_string()))
            {
                tracing::warn!(error = %why, tool = %guard.tool, "the key argument does not fit the frozen arguments");
            }
        }
        let asked = std::time::Instant::now();
        let answered = tokio::time::timeout(
            guard.lease,
            upstream.call(&guard.tool, arguments, call.meta.clone()),
        )
        .await;
        self.upstream_took(asked);
        let result = match answered {
            Ok(Ok(r)) => r,
            Ok(Err(Unanswered::NotSent(why))) => {
                return self
                    .not_sent(call, token, attempt, &why, UpstreamState::Unreachable)
                    .await
            }
            Ok(Err(Unanswered::Lost(why))) => {
                return self.unanswered(call, upstream, token, attempt, why).await
            }
            Err(_) => {
                let why = format!(
                    "no answer within the lease ({} ms)",
                    guard.lease.as_millis()
                );
                return self.unanswered(call, upstream, token, attempt, why).await;
            }
        };
        if reconcile && result.is_error == Some(true) {
            // An error answering a resend says nothing about the first
            // send: a facilitator that refuses a replayed nonce answers
            // exactly so after having settled it. Never the reconciled
            // result: the action stays uncertain with that error as why.
            return self.resend_refused(call, token, attempt, result).await;
        }
        let stored = stored_text(&result, self.max_outcome);
        let failed = result.is_error == Some(true) && guard.errors == Errors::Retryable;
        let outcome = if failed {
            Outcome::Failed {
                error: stored,
                retryable: true,
            }
        } else {
            Outcome::Completed(stored)
        };
        let mut s = self.store.session().await.map_err(Refusal::Store)?;
        let settled = if reconcile {
            s.reconcile(&self.tenant, &call.key, token, &outcome).await
        } else {
            match &outcome {
                Outcome::Completed(r) => s.complete(&self.tenant, &call.key, token, r).await,
                Outcome::Failed { error, retryable } => {
                    s.fail(&self.tenant, &call.key, token, error, *retryable)
                        .await
                }
            }
        };
        if let Err(e) = settled {
            // The upstream answered; its answer goes back even when the
            // claim was lost meanwhile (the next holder settles it).
            tracing::warn!(error = %e, tool = %guard.tool, "a guarded call's outcome could not be recorded");
        }
        Ok(Answer {
            result: with_meta(result, call, false, attempt, reconcile, Source::Upstream),
            outcome: if reconcile {
                CallOutcome::Settled
            } else {
                CallOutcome::Executed
            },
            diverged: call.diverged,
        })
    }

    /// A resend (`on_uncertain = "resend"`) answered with an error: the
    /// first send's outcome is still unknown, so the action is handed back
    /// uncertain with the upstream's error as the reason, for a person (or
    /// the next call) to settle; the agent reads the error and that nothing
    /// was settled.
    async fn resend_refused(
        &self,
        call: &Call<'_>,
        token: i64,
        attempt: i32,
        result: CallToolResult,
    ) -> Result<Answer, Refusal> {
        let said = clipped(&first_text(&result).unwrap_or_default());
        let mut s = self.store.session().await.map_err(Refusal::Store)?;
        if let Err(e) = s
            .mark_uncertain(
                &self.tenant,
                &call.key,
                token,
                &format!("the resend was answered with an error, so the first send's outcome is still unknown: {said}"),
            )
            .await
        {
            tracing::warn!(error = %e, "could not mark a refused resend uncertain; its lease will");
        }
        tracing::warn!(tool = %call.guard.tool, key = %call.key, "a resend was answered with an error; the action stays uncertain");
        let mut out = with_meta(result, call, false, attempt, false, Source::Upstream);
        out.content.push(ContentBlock::text(format!(
            "idem: an earlier {} for {} may have been executed, and resending it under the same key was answered with the error above \
             (a provider that refuses a replayed payment answers so even when the first one settled). Whether it was executed is unknown: \
             do not retry it with a new reference or a new payment; it is in idem's work queue (/live), where a person settles it. Key {}.",
            call.guard.tool, call.reference, call.key
        )));
        Ok(Answer {
            result: out,
            outcome: CallOutcome::Uncertain,
            diverged: call.diverged,
        })
    }

    /// Nothing was sent (the upstream is gone, or its connection was
    /// refused): the claim is given back at once as a retryable failure (a
    /// retry, from this gateway or another, executes now rather than after
    /// the lease), and the answer says so. Nothing is uncertain: nothing
    /// could have run.
    async fn not_sent(
        &self,
        call: &Call<'_>,
        token: i64,
        attempt: i32,
        why: &str,
        state: UpstreamState,
    ) -> Result<Answer, Refusal> {
        let reason = format!("not sent: {why}");
        let mut s = self.store.session().await.map_err(Refusal::Store)?;
        if let Err(e) = s.fail(&self.tenant, &call.key, token, &reason, true).await {
            tracing::warn!(error = %e, "could not give back the claim of a call not sent; its lease will");
        }
        let mut answer = error_answer(
            call,
            attempt,
            CallOutcome::Failed,
            format!(
                "{} for {} was not sent: {why}. Nothing was executed; retry the same call in a few seconds (same key, it cannot run twice).",
                call.guard.tool, call.reference
            ),
        );
        update_idem(&mut answer.result, |idem| {
            idem.sent = Some(false);
            idem.upstream = Some(state);
        });
        Ok(answer)
    }

    /// Whether the frozen arguments, the ones that would be sent, normalize
    /// to the intent's frozen fields (what its key was derived from): the
    /// gateway executes only what the key covers.
    fn covered(&self, call: &Call<'_>) -> Result<(), String> {
        let guard = call.guard;
        match self.normalized_with(call, None)? {
            n if n == call.payload => Ok(()),
            _ => Err(format!(
                "the frozen arguments of {} do not derive to its key {} (they were not written by this gateway)",
                guard.tool, call.key
            )),
        }
    }

    /// The fields the frozen arguments and `_meta` normalize to, with one
    /// field's value replaced when `instead` says so (a provider's record
    /// checked against the intent: the same normalization decides).
    fn normalized_with(
        &self,
        call: &Call<'_>,
        instead: Option<(&str, &Value)>,
    ) -> Result<idem_core::NormalizedPayload, String> {
        let guard = call.guard;
        let mut fields = Map::new();
        for Field {
            name: field, arg, ..
        } in &guard.fields
        {
            let value = match instead {
                Some((f, v)) if f == field => v,
                _ => arg.read(&call.frozen, &call.meta).ok_or_else(|| {
                    format!(
                        "the frozen arguments and _meta of {} lack `{arg}` (idem's field `{field}`), which the key covers",
                        guard.tool
                    )
                })?,
            };
            fields.insert(field.clone(), value.clone());
        }
        let text = Value::Object(fields).to_string();
        let payload = Payload::from_json(&text).map_err(|e| e.to_string())?;
        self.store
            .normalized_of(guard.action.as_str(), &payload, call.rules_version)
            .map_err(|e| format!("the frozen arguments of {} cannot be read: {e}", guard.tool))
    }

    /// Whether a provider's record that says executed is this action's:
    /// each `matches` field's value in it, put in place of the frozen one,
    /// normalizes to the same fields (so derives to the same key). A record of another intent (another
    /// tenant's charge with the same reference, another amount) is never
    /// settled as this one.
    fn is_ours(
        &self,
        call: &Call<'_>,
        lookup: &crate::guard_file::Lookup,
        found: &Value,
    ) -> Result<(), Looked> {
        // Besides `matches`: a record that names the value it was looked up
        // by (a lookup argument `id` taken from a field's argument, and an
        // `id` in the record) must hold the frozen one.
        let implied: Vec<(String, String)> = lookup
            .arguments
            .iter()
            .filter_map(|(name, source)| match source {
                LookupArgument::Frozen(path) => call
                    .guard
                    .fields
                    .iter()
                    .find(|f| f.arg == *path)
                    .map(|f| (f.name.clone(), name.clone())),
                LookupArgument::Key => None,
            })
            .filter(|(field, name)| {
                !lookup.matches.iter().any(|(f, _)| f == field) && found.get(name).is_some()
            })
            .map(|(field, name)| {
                let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
                (field, pointer)
            })
            .collect();
        for (field, pointer) in lookup.matches.iter().chain(&implied) {
            let Some(theirs) = found.pointer(pointer) else {
                return Err(Looked::Unknown(format!(
                    "it says executed, but its result has nothing at {pointer} to check idem's field `{field}` against"
                )));
            };
            let same = self
                .normalized_with(call, Some((field, theirs)))
                .is_ok_and(|n| n == call.payload);
            if !same {
                let ours = call
                    .guard
                    .fields
                    .iter()
                    .find(|f| f.name == *field)
                    .and_then(|f| f.arg.read(&call.frozen, &call.meta))
                    .map(plain)
                    .unwrap_or_default();
                return Err(Looked::NotOurs {
                    said: format!(
                        "it says executed, but the record it found is not this action's (its {field}, at {pointer}, differs from the frozen intent's)"
                    ),
                    detail: format!(
                        "it says executed, but the record it found is not this action's: its {field} ({pointer}) is {}, the frozen intent's is {ours}",
                        plain(theirs)
                    ),
                });
            }
        }
        Ok(())
    }

    /// The upstream was called and no answer came: the outcome is unknown,
    /// so the action is uncertain now, never "not done".
    async fn unanswered<U: CallUpstream>(
        &self,
        call: &Call<'_>,
        upstream: &U,
        token: i64,
        attempt: i32,
        why: String,
    ) -> Result<Answer, Refusal> {
        let mut s = self.store.session().await.map_err(Refusal::Store)?;
        if let Err(e) = s
            .mark_uncertain(
                &self.tenant,
                &call.key,
                token,
                &format!("the upstream: {why}"),
            )
            .await
        {
            tracing::warn!(error = %e, "could not mark a guarded call uncertain; its lease will");
        }
        drop(s);
        if matches!(call.guard.on_uncertain, OnUncertain::Lookup(_))
            && !call.looked_up.load(Ordering::SeqCst)
        {
            // Asked at once, in this call: the claim is taken again (it is
            // uncertain now) and the upstream's record read.
            if let Ok(Begin::Uncertain { token, attempt, .. }) = self
                .store
                .begin_action(
                    &self.tenant,
                    &call.guard.action,
                    &call.key,
                    call.guard.lease,
                )
                .await
            {
                return Box::pin(self.look_up(call, upstream, token, attempt)).await;
            }
        }
        Ok(error_answer(
            call,
            attempt,
            CallOutcome::Uncertain,
            format!(
                    "{} for {} was sent, and its answer never came ({why}): whether it was executed is unknown. \
                     Do not retry with a new reference; retrying this same call is safe (same key). Key {}.",
                    call.guard.tool, call.reference, call.key
                ),
        ))
    }

    /// Asks the upstream whether the action was executed (`on_uncertain =
    /// "lookup"`), holding the claim (`token`): executed settles it with
    /// the lookup's result (reconciled), not executed runs it again under
    /// the same key with the frozen arguments and `_meta`, anything else
    /// hands it back uncertain, with what the lookup said, for a person.
    async fn look_up<U: CallUpstream>(
        &self,
        call: &Call<'_>,
        upstream: &U,
        token: i64,
        attempt: i32,
    ) -> Result<Answer, Refusal> {
        call.looked_up.store(true, Ordering::SeqCst);
        let guard = call.guard;
        let Some(lookup) = guard.lookup() else {
            return Ok(error_answer(
                call,
                attempt,
                CallOutcome::Uncertain,
                "no [guard.lookup]".into(),
            ));
        };
        let verdict = self.ask(call, upstream, lookup).await;
        let label = match &verdict {
            Looked::Executed(_) => LookupVerdict::Executed,
            Looked::NotExecuted => LookupVerdict::NotExecuted,
            Looked::Unknown(_) | Looked::NotOurs { .. } => LookupVerdict::Unknown,
        };
        let verdict_detail = match &verdict {
            Looked::NotOurs { detail, .. } => Some(detail.clone()),
            _ => None,
        };
        if let Ok(mut s) = self.store.session().await {
            if let Err(e) = s
                .count_mcp_call(
                    &self.tenant,
                    &lookup.tool,
                    CallCount::Lookup(match label {
                        LookupVerdict::Executed => LookupSaid::Executed,
                        LookupVerdict::NotExecuted => LookupSaid::NotExecuted,
                        LookupVerdict::Unknown => LookupSaid::Unknown,
                    }),
                    false,
                )
                .await
            {
                tracing::warn!(error = %e, "a lookup could not be counted");
            }
        }
        self.count_as(&guard.tool, CallCount::LookedUp).await;
        tracing::info!(tool = %guard.tool, lookup = %lookup.tool, verdict = label.as_str(), "looked up an unknown outcome");
        let answer = match verdict {
            Looked::Executed(value) => {
                let result = as_result(&value);
                let mut s = self.store.session().await.map_err(Refusal::Store)?;
                if let Err(e) = s
                    .reconcile(
                        &self.tenant,
                        &call.key,
                        token,
                        &Outcome::Completed(stored_text(&result, self.max_outcome)),
                    )
                    .await
                {
                    tracing::warn!(error = %e, "a looked-up outcome could not be recorded");
                }
                Answer {
                    result: with_meta(result, call, false, attempt, true, Source::Upstream),
                    outcome: CallOutcome::Settled,
                    diverged: call.diverged,
                }
            }
            Looked::NotExecuted => {
                Box::pin(self.execute(call, upstream, token, attempt, false)).await?
            }
            Looked::Unknown(why) | Looked::NotOurs { said: why, .. } => {
                // The person settling it sees what the record held; the
                // agent only that it is not this action's.
                let detail = match &verdict_detail {
                    Some(d) => d.as_str(),
                    None => why.as_str(),
                };
                let mut s = self.store.session().await.map_err(Refusal::Store)?;
                let _ = s
                    .mark_uncertain(
                        &self.tenant,
                        &call.key,
                        token,
                        &format!("lookup {}: {detail}", lookup.tool),
                    )
                    .await;
                error_answer(
                    call,
                    attempt,
                    CallOutcome::Uncertain,
                    format!(
                        "the outcome of {} for {} is unknown, and asking the provider ({}) did not tell: {why}. \
                         Do not retry it with a new reference; it is in idem's work queue (/live), where a person settles it. Key {}.",
                        guard.tool, call.reference, lookup.tool, call.key
                    ),
                )
            }
        };
        Ok(with_lookup(answer, label))
    }

    /// Calls the lookup tool and reads its verdict.
    async fn ask<U: CallUpstream>(
        &self,
        call: &Call<'_>,
        upstream: &U,
        lookup: &crate::guard_file::Lookup,
    ) -> Looked {
        let mut arguments = Map::new();
        for (name, source) in &lookup.arguments {
            let value = match source {
                LookupArgument::Key => Value::String(call.key.to_string()),
                LookupArgument::Frozen(path) => match path.get(&call.frozen) {
                    Some(v) => v.clone(),
                    None => {
                        return Looked::Unknown(format!(
                            "the frozen arguments have nothing at {path} for its argument `{name}`"
                        ))
                    }
                },
            };
            arguments.insert(name.clone(), value);
        }
        if !upstream.available() {
            return Looked::Unknown("the upstream MCP server is down".into());
        }
        let asked = std::time::Instant::now();
        let answered = tokio::time::timeout(
            call.guard.lease,
            upstream.call(&lookup.tool, arguments, Map::new()),
        )
        .await;
        self.upstream_took(asked);
        let result = match answered {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Looked::Unknown(format!("no answer: {e}")),
            Err(_) => {
                return Looked::Unknown(format!(
                    "no answer within the lease ({} ms)",
                    call.guard.lease.as_millis()
                ))
            }
        };
        if result.is_error == Some(true) {
            return Looked::Unknown(format!(
                "it answered isError: {}",
                clipped(&first_text(&result).unwrap_or_default())
            ));
        }
        // Its structured result, else its first text item read as JSON.
        let found = match result.structured_content.clone() {
            Some(v) => v,
            None => {
                match first_text(&result).and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
                    Some(v) => v,
                    None => {
                        return Looked::Unknown(
                            "its result is neither structured nor JSON text".into(),
                        )
                    }
                }
            }
        };
        if lookup.executed.holds(&found) {
            if let Err(not_ours) = self.is_ours(call, lookup, &found) {
                return not_ours;
            }
            let value = match &lookup.result {
                None => found,
                Some(p) => match found.pointer(p) {
                    Some(v) => v.clone(),
                    None => {
                        return Looked::Unknown(format!(
                            "it says executed, but its result has nothing at {p}"
                        ))
                    }
                },
            };
            if let Some(schema) = &call.guard.output_schema {
                let schema = Value::Object(schema.clone());
                let checked = jsonschema::validator_for(&schema)
                    .map_err(|e| format!("the tool's outputSchema cannot be used: {e}"))
                    .and_then(|v| {
                        v.validate(&value).map_err(|e| {
                            format!(
                                "its result does not satisfy {}'s outputSchema: {e}",
                                call.guard.tool
                            )
                        })
                    });
                if let Err(why) = checked {
                    return Looked::Unknown(format!("it says executed, but {why}"));
                }
            }
            return Looked::Executed(value);
        }
        if lookup.not_executed.holds(&found) {
            return Looked::NotExecuted;
        }
        Looked::Unknown(format!(
            "its result says neither: {}",
            clipped(&found.to_string())
        ))
    }

    async fn replay(
        &self,
        call: &Call<'_>,
        response: &str,
        attempt: i32,
        reconciled: bool,
    ) -> Result<Answer, Refusal> {
        let stored: CallToolResult = match serde_json::from_str(response) {
            Ok(r) => r,
            // Completed through /v1 or the monitor with another document:
            // shown as it was recorded.
            Err(_) => CallToolResult::success(vec![ContentBlock::text(response.to_owned())]),
        };
        let when = self
            .store
            .session()
            .await
            .map_err(Refusal::Store)?
            .action(&self.tenant, &call.key)
            .await
            .map(|a| a.updated_ms)
            .ok();
        let at = when
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| {
                format!(
                    " at {}",
                    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                )
            })
            .unwrap_or_default();
        let mut result = with_meta(stored, call, true, attempt, reconciled, Source::Upstream);
        result.content.push(ContentBlock::text(format!(
            "idem: {} was already executed for {}{at}; the stored result is returned and nothing was executed or charged again.",
            call.guard.tool, call.reference
        )));
        Ok(Answer {
            result,
            outcome: CallOutcome::Replayed,
            diverged: call.diverged,
        })
    }
}

/// What a lookup said.
enum Looked {
    /// Executed: the result that stands for the guarded tool's.
    Executed(Value),
    NotExecuted,
    /// Anything else, and why.
    Unknown(String),
    /// It says executed, but the record is not this action's: what the
    /// agent reads, and what the person settling it reads (both values).
    NotOurs {
        said: String,
        detail: String,
    },
}

/// A looked-up result as the guarded tool's answer: its JSON as text, and
/// as `structuredContent` when it is an object.
fn as_result(value: &Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(
        serde_json::to_string_pretty(value).unwrap_or_default(),
    )]);
    if value.is_object() {
        r.structured_content = Some(value.clone());
    }
    r
}

fn first_text(result: &CallToolResult) -> Option<String> {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
}

/// At most 500 characters of a provider's answer, for a message.
fn clipped(text: &str) -> String {
    match text.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// `answer` with `_meta.idem.lookup` saying what the lookup found.
fn with_lookup(mut answer: Answer, verdict: LookupVerdict) -> Answer {
    update_idem(&mut answer.result, |idem| idem.lookup = Some(verdict));
    answer
}

/// Changes `result`'s `_meta.idem` (set by [`with_meta`]) through `f`.
fn update_idem(result: &mut CallToolResult, f: impl FnOnce(&mut IdemMeta)) {
    let Some(meta) = result.meta.as_mut() else {
        return;
    };
    let Some(mut idem) = meta
        .0
        .get("idem")
        .and_then(|v| IdemMeta::deserialize(v).ok())
    else {
        return;
    };
    f(&mut idem);
    if let Ok(v) = serde_json::to_value(&idem) {
        meta.0.insert("idem".into(), v);
    }
}

/// One call's frozen view.
struct Call<'a> {
    guard: &'a BoundGuard,
    /// The rules the intent's key was derived with.
    rules_version: idem_core::RulesVersion,
    /// The frozen fields its key was derived from.
    payload: idem_core::NormalizedPayload,
    key: IdempotencyKey,
    reference: String,
    /// The arguments as the first call sent them.
    frozen: Map<String, Value>,
    diverged: bool,
    /// (argument, this call's value, the frozen value) where they differ.
    differences: Vec<(String, Value, Value)>,
    /// The `_meta` every forward of this action sends: this call's, with
    /// the frozen entries in place of its own.
    meta: Map<String, Value>,
    /// The frozen `_meta` entries this call sent with another value.
    diverged_meta: Vec<String>,
    /// Whether this call has asked the upstream already (`lookup`): it
    /// asks at most once.
    looked_up: AtomicBool,
    /// The key of the failed intent this call superseded, if it did.
    superseded: Option<IdempotencyKey>,
}

enum Refusal {
    BadArguments(String),
    Store(idem_store::Error),
}

/// An `isError` answer about `call` (what an agent reads when nothing, or
/// nothing known, was executed), with `_meta.idem`.
fn error_answer(call: &Call<'_>, attempt: i32, outcome: CallOutcome, message: String) -> Answer {
    Answer {
        result: with_meta(
            error_result(message),
            call,
            false,
            attempt,
            false,
            Source::Idem,
        ),
        outcome,
        diverged: call.diverged,
    }
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The upstream's result with `_meta.idem` added (its own `_meta` kept),
/// and, for a divergent call, the sentence that says which frozen values
/// were used.
fn with_meta(
    result: CallToolResult,
    call: &Call<'_>,
    replayed: bool,
    attempt: i32,
    reconciled: bool,
    source: Source,
) -> CallToolResult {
    let idem = IdemMeta {
        replayed,
        diverged: call.diverged,
        reconciled,
        diverged_meta: call.diverged_meta.clone(),
        // Who said no: idem (nothing, or nothing known, ran) or the
        // upstream (its own error), without parsing a sentence.
        source: (result.is_error == Some(true)).then_some(source),
        superseded: call.superseded.as_ref().map(|k| k.as_str().to_owned()),
        ..IdemMeta::of(call.key.as_str(), attempt)
    };
    meta_idem(result, &idem, call)
}

/// Whether a NUL character is anywhere in `v` (names included).
fn holds_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(holds_nul),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// idem's own refusal before anything was recorded, with the `_meta.idem`
/// every guarded answer carries: no key was derived, nothing ran.
fn refused_meta(result: CallToolResult) -> CallToolResult {
    with_idem(result, &IdemMeta::refused())
}

/// idem's refusal of a call it cannot record (a guard that has seen an
/// unrecorded call succeed): nothing was sent.
pub fn refused_unrecorded(message: String) -> CallToolResponse {
    CallToolResponse::Complete(with_idem(
        error_result(message),
        &IdemMeta::unrecorded(Source::Idem),
    ))
}

/// A handshake call's answer (see `Guard::handshake`), forwarded as the
/// upstream gave it, with `_meta.idem` saying nothing was recorded.
pub fn unrecorded(response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(result) = response else {
        return response;
    };
    CallToolResponse::Complete(with_idem(result, &IdemMeta::unrecorded(Source::Upstream)))
}

/// `result` with `_meta.idem` set to `idem`, its own `_meta` kept.
fn with_idem(result: CallToolResult, idem: &IdemMeta) -> CallToolResult {
    let idem = serde_json::to_value(idem).unwrap_or_else(|_| json!({}));
    let mut value = serde_json::to_value(&result).unwrap_or_else(|_| json!({}));
    if let Some(obj) = value.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(m) = meta.as_object_mut() {
            m.insert("idem".into(), idem);
        }
    }
    serde_json::from_value(value).unwrap_or(result)
}

/// `result` with `_meta.idem` set to `idem` (its own `_meta` kept), and a
/// sentence for each argument that differs from the frozen one.
fn meta_idem(result: CallToolResult, idem: &IdemMeta, call: &Call<'_>) -> CallToolResult {
    let mut out = with_idem(result, idem);
    if !call.differences.is_empty() {
        let verb = if call.diverged {
            "differs from"
        } else {
            "is written differently from (the same value as)"
        };
        let said: Vec<String> = call
            .differences
            .iter()
            .map(|(arg, now, first)| {
                format!(
                    "the {arg} you sent, {}, {verb} the frozen intent's {}",
                    plain(now),
                    plain(first)
                )
            })
            .collect();
        out.content.push(ContentBlock::text(format!(
            "idem: {}; the frozen intent was used, as the first call for {} sent it.",
            said.join("; "),
            call.reference
        )));
    }
    out
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What is stored for replay: the whole result, or a note when it is too
/// large to keep.
fn stored_text(result: &CallToolResult, max: usize) -> String {
    let text = serde_json::to_string(result).unwrap_or_default();
    if text.len() <= max {
        return text;
    }
    let mut note = CallToolResult::success(vec![ContentBlock::text(format!(
        "the upstream's result ({} bytes) was over idem's {max}-byte bound (--max-outcome-bytes) and was not stored; the call was executed once",
        text.len()
    ))]);
    note.is_error = result.is_error;
    serde_json::to_string(&note).unwrap_or_default()
}

/// The arguments as the first call sent them: the recorded candidate's
/// copy, or (an intent recorded through `/v1`, without one) this call's
/// arguments with the frozen fields' values.
fn frozen_arguments(
    guard: &Guard,
    candidate: Option<&str>,
    arguments: &Map<String, Value>,
) -> Map<String, Value> {
    let parsed: Option<Map<String, Value>> =
        candidate.and_then(|c| serde_json::from_str::<Map<String, Value>>(c).ok());
    if let Some(Value::Object(args)) = parsed.as_ref().and_then(|c| c.get(ARGUMENTS_MEMBER)) {
        return args.clone();
    }
    let mut out = arguments.clone();
    if let Some(c) = parsed {
        for Field {
            name: field, arg, ..
        } in guard.fields.iter().filter(|f| !f.arg.in_meta())
        {
            if let Some(v) = c.get(field) {
                // An argument the shape cannot take stays as sent; the
                // coverage check refuses to execute it then.
                let _ = arg.set(&mut out, v.clone());
            }
        }
    }
    out
}

/// The `_meta` to forward, and the frozen entries this call changed: the
/// request's entries, each `freeze_meta` entry replaced by its frozen value
/// when the first call sent one (first wins; an entry the first call did
/// not send passes as this call sends it, and is not frozen later).
fn meta_to_send(
    guard: &Guard,
    candidate: Option<&str>,
    mut meta: Map<String, Value>,
) -> (Map<String, Value>, Vec<String>) {
    let frozen: Map<String, Value> = candidate
        .and_then(|c| serde_json::from_str::<Map<String, Value>>(c).ok())
        .and_then(|mut c| match c.remove(META_MEMBER) {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let mut diverged = Vec::new();
    for name in &guard.freeze_meta {
        let Some(first) = frozen.get(name) else {
            continue;
        };
        if meta.get(name).is_some_and(|now| now != first) {
            diverged.push(name.clone());
        }
        meta.insert(name.clone(), first.clone());
    }
    (meta, diverged)
}

fn differences(
    guard: &Guard,
    now: &Map<String, Value>,
    frozen: &Map<String, Value>,
) -> Vec<(String, Value, Value)> {
    guard
        .fields
        .iter()
        // A `_meta` value differing shows in `diverged_meta`.
        .filter(|f| !f.arg.in_meta())
        .filter_map(|Field { arg, .. }| {
            let (a, b) = (arg.get(now)?, arg.get(frozen)?);
            (a != b).then(|| (arg.to_string(), a.clone(), b.clone()))
        })
        .collect()
}

/// A store refusal names the catalog's field; the agent knows the tool's
/// argument, so the message names that.
fn name_the_argument(guard: &Guard, message: &str) -> String {
    for Field {
        name: field, arg, ..
    } in &guard.fields
    {
        if message.contains(&format!("`{field}`")) {
            return format!(
                "argument `{arg}` (idem's field `{field}`): {message}; nothing was recorded or executed"
            );
        }
    }
    format!("{message}; nothing was recorded or executed")
}
