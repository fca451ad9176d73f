//! idem's own MCP server: the calculator and the live monitor as tools an
//! agent can call. `estimate_duplicate_cost` answers what `idem cost
//! --json` prints; the others read (and `reconcile_action` settles) the
//! tenant's intents and actions. Bad input is an `isError` result that
//! names the argument, never a protocol error.

use crate::tool_args::{
    EstimateArgs, IntentArgs, KeyArgs, ListArgs, Num, Parameters, ReconcileArgs, SummaryArgs,
    SupersedeArgs, BAD_ARGUMENT,
};
use idem_core::cost::{self, CostInputs, PriceUnit, RiskInputs};
use idem_core::locale::{
    currency_in_text, format_count, format_money, format_pct, read_marking, read_number, Currency,
    Locale, Marking,
};
use idem_core::scenario::{is_iso_date, Field, Problem, Scenario};
use idem_core::{ActionType, IdempotencyKey, TenantId};
use idem_store::{ActionState, Outcome, Store};
use idem_wire::{ActionResponse, IntentView};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{tool, tool_router};
use rmcp::{ErrorData as McpError, ServerHandler};

pub use crate::tenant::TenantSource;
use rust_decimal::Decimal;
use serde_json::{json, Value};

pub use crate::tool_args::MAX_LISTED;
/// The largest candidate `supersede_intent` records.
pub const MAX_CANDIDATE: usize = 32 * 1024;

/// idem's own MCP server.
#[derive(Clone)]
pub struct IdemTools {
    store: Store,
    tenant: TenantSource,
    /// The tools, declared once each by `#[tool]` below.
    router: ToolRouter<IdemTools>,
    /// The largest evidence `reconcile_action` records: the server's
    /// `--max-outcome-bytes`, as every door.
    max_outcome: usize,
}

impl IdemTools {
    /// The server for `tenant` on `store`.
    pub fn new(store: Store, tenant: TenantSource) -> Self {
        Self {
            store,
            tenant,
            router: Self::tool_router(),
            max_outcome: idem_wire::DEFAULT_MAX_OUTCOME_BYTES,
        }
    }

    /// With `bytes` as the largest evidence recorded (`--max-outcome-bytes`).
    pub fn with_max_outcome(mut self, bytes: usize) -> Self {
        self.max_outcome = bytes;
        self
    }

    /// Serves one agent over stdin and stdout until it closes them.
    pub fn serve_stdio(
        self,
    ) -> futures_util::future::BoxFuture<'static, Result<(), std::io::Error>> {
        Box::pin(crate::stdio::serve_stdio(self, |_| false))
    }
}

/// The tools: each one's name, description, annotations and arguments (a
/// type of [`crate::tool_args`], whose schema is its `inputSchema`) are
/// declared here once. A refusal is an `isError` result ([`Bad`]).
#[tool_router]
impl IdemTools {
    #[tool(
        name = "estimate_duplicate_cost",
        description = "What duplicated model calls cost a month and a year, in exact decimals: the inputs and figures of `idem cost --json`, and a link to the scenario on idem's dashboard.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn estimate_duplicate_cost(
        &self,
        Parameters(args): Parameters<EstimateArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(estimate(args)))
    }

    #[tool(
        name = "live_summary",
        description = "The tenant's intents, redeliveries absorbed, duplicate rate, divergent re-extractions, and actions in flight or with an unknown outcome now.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn live_summary(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<SummaryArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.summary(&tenant, args).await))
    }

    #[tool(
        name = "list_uncertain_actions",
        description = "Actions whose outcome is unknown (an attempt started and never said how it ended), newest first, with each one's intent: ask the provider about the key, then reconcile_action.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_uncertain_actions(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.list_uncertain(&tenant, args).await))
    }

    #[tool(
        name = "get_intent",
        description = "An intent as frozen by its first delivery: the candidate as sent, the normalized fields its key covers, deliveries and divergences.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_intent(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<IntentArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.intent(&tenant, args).await))
    }

    #[tool(
        name = "get_action",
        description = "An action by its key: state, attempts, lease, the stored response or error.",
        annotations(
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_action(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<KeyArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.action(&tenant, args).await))
    }

    // The tools that write settle money's state (a charge recorded as done
    // or not): destructive, so hosts ask before they run.
    #[tool(
        name = "reconcile_action",
        description = "Settles an action whose outcome is unknown now with what the provider says happened, with its response or error as evidence; later calls replay it. It never re-opens an action (a person does that on /live).",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn reconcile_action(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<ReconcileArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.reconcile(&tenant, args).await))
    }

    // Not idempotent: a second call finds the new action, not a failed one.
    #[tool(
        name = "supersede_intent",
        description = "A way out of a wrong first attempt, never out of a charge: an intent whose action failed (nothing executed: the provider refused it, or its authorization expired) gets the corrected candidate, or releases its own for the next delivery, under a key of its own; the failed action is sealed and the old version kept with the reason. Refused for an action started, uncertain or completed.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn supersede_intent(
        &self,
        Extension(tenant): Extension<TenantId>,
        Parameters(args): Parameters<SupersedeArgs>,
    ) -> Result<CallToolResult, McpError> {
        Ok(answered(self.supersede(&tenant, args).await))
    }
}

impl IdemTools {
    async fn summary(&self, tenant: &TenantId, args: SummaryArgs) -> Result<CallToolResult, Bad> {
        let hours = whole("hours", args.hours, 1, 24 * 31)?.unwrap_or(24);
        let to = self.store.now_ms() + 1;
        let from = to - hours * 3_600_000;
        let report = self
            .store
            .stats(tenant, idem_store::stats::Granularity::Hour, from, to)
            .await
            .map_err(store_bad)?;
        let live = self
            .store
            .session()
            .await
            .map_err(store_bad)?
            .live_actions(tenant, self.store.now_ms(), 0)
            .await
            .map_err(store_bad)?;
        let t = &report.totals;
        let summary = json!({
            "window_hours": hours,
            "intents": t.intents,
            "deliveries": t.deliveries,
            "redeliveries": t.redeliveries,
            "duplicate_rate_pct": report.duplicate_rate_pct,
            "divergences": t.divergences,
            "actions_started": t.actions_started,
            "actions_completed": t.actions_completed,
            "in_flight_now": live.in_flight,
            "uncertain_now": live.uncertain,
        });
        let text = format!(
            "In the last {hours} h: {} intents, {} redeliveries absorbed, {} divergent re-extractions; {} actions in flight and {} uncertain now.",
            t.intents, t.redeliveries, t.divergences, live.in_flight, live.uncertain
        );
        Ok(structured(summary, text))
    }

    async fn list_uncertain(
        &self,
        tenant: &TenantId,
        args: ListArgs,
    ) -> Result<CallToolResult, Bad> {
        let limit = whole("limit", args.limit, 1, MAX_LISTED)?.unwrap_or(20);
        let live = self
            .store
            .session()
            .await
            .map_err(store_bad)?
            .live_actions(
                tenant,
                self.store.now_ms(),
                u32::try_from(limit).unwrap_or(20),
            )
            .await
            .map_err(store_bad)?;
        let n = live.uncertain_keys.len();
        let listed = json!({"uncertain_now": live.uncertain, "actions": live.uncertain_keys});
        Ok(structured(
            listed,
            format!(
                "{} actions have an unknown outcome; {n} listed (newest first). Ask the provider about each key, then settle it with reconcile_action.",
                live.uncertain
            ),
        ))
    }

    async fn intent(&self, tenant: &TenantId, args: IntentArgs) -> Result<CallToolResult, Bad> {
        let action = action_arg(&args.action)?;
        let reference = chars("reference", args.reference, 1, 255)?;
        let mut s = self.store.session().await.map_err(store_bad)?;
        let i = match s.intent(tenant, action.as_str(), &reference).await {
            Ok(i) => i,
            Err(idem_store::Error::NotFound) => {
                return Err(Bad(format!(
                "argument `reference`: no intent {reference:?} of action {action} for this tenant"
            )))
            }
            Err(e) => return Err(store_bad(e)),
        };
        let (deliveries, divergences, key) = (i.deliveries, i.divergences, i.key.clone());
        let view = IntentView::of(action, reference.clone(), i).map_err(|e| {
            tracing::error!(error = %e, "a stored intent cannot be sent");
            Bad("the intent could not be read; the server's log says why".into())
        })?;
        Ok(structured(
            serde_json::to_value(&view).unwrap_or(Value::Null),
            format!(
                "Intent {reference}: {deliveries} deliveries, {divergences} divergent; key {key}."
            ),
        ))
    }

    async fn action(&self, tenant: &TenantId, args: KeyArgs) -> Result<CallToolResult, Bad> {
        let key = key_arg(&args.key)?;
        let mut s = self.store.session().await.map_err(store_bad)?;
        let a = action_of(&mut s, tenant, &key).await?;
        let (state, attempts, reconciled) = (a.state.as_str(), a.attempts, a.reconciled);
        Ok(structured(
            serde_json::to_value(ActionResponse::new(&key, a)).unwrap_or(Value::Null),
            format!(
                "Action {key}: {state}, {attempts} attempts{}.",
                if reconciled { ", reconciled" } else { "" }
            ),
        ))
    }

    async fn supersede(
        &self,
        tenant: &TenantId,
        args: SupersedeArgs,
    ) -> Result<CallToolResult, Bad> {
        let action = action_arg(&args.action)?;
        let reference = chars("reference", args.reference, 1, 255)?;
        let reason = chars("reason", args.reason, 1, 1000)?;
        let text = match &args.candidate {
            None | Some(Value::Null) => None,
            Some(Value::Object(c)) => {
                if let Some(m) = c.keys().find(|k| k.starts_with("_idem")) {
                    return Err(Bad(format!(
                        "argument `candidate`: member `{m}`: names starting with `_idem` are idem's own"
                    )));
                }
                let t = Value::Object(c.clone()).to_string();
                if t.len() > MAX_CANDIDATE {
                    return Err(Bad(format!(
                        "argument `candidate`: over {MAX_CANDIDATE} bytes"
                    )));
                }
                Some(t)
            }
            Some(_) => return Err(Bad(
                "argument `candidate`: an object, or leave it out to release the frozen candidate"
                    .into(),
            )),
        };
        let candidate = text
            .as_deref()
            .map(idem_core::Payload::from_json)
            .transpose()
            .map_err(|e| Bad(format!("argument `candidate`: {e}")))?;
        let actor = format!(
            "an agent through idem's MCP server (tenant {})",
            tenant.as_str()
        );
        let done = match self
            .store
            .supersede_intent(tenant, action.as_str(), &reference, candidate.as_ref(), &actor, &reason)
            .await
        {
            Ok(d) => d,
            Err(idem_store::Error::NotFound) => {
                return Err(Bad(format!(
                    "argument `reference`: no intent {reference:?} of action {action} for this tenant"
                )))
            }
            Err(idem_store::Error::NotSupersedable(state)) => {
                return Err(Bad(format!(
                    "the intent's action is {state}: only an action that failed (nothing executed) can be superseded; an uncertain one is settled with reconcile_action first. Nothing was changed"
                )))
            }
            Err(idem_store::Error::Invalid(m)) if m.contains("without a key secret") => {
                return Err(Bad("supersede_intent derives the intent's new key, and this server was started without the key secret (`idem mcp serve` derives none): use idem serve's /mcp, POST /v1/intents/{action}/{reference}/supersede, or the action's page on /live. Nothing was changed".into()))
            }
            Err(idem_store::Error::Invalid(m)) => {
                return Err(Bad(format!("argument `candidate`: {m}")))
            }
            Err(e) => return Err(store_bad(e)),
        };
        let (old, new, released) = (
            done.previous_key.clone(),
            done.intent.key.clone(),
            done.released,
        );
        let view = IntentView::of(action, reference.clone(), done.intent).map_err(|e| {
            tracing::error!(error = %e, "a stored intent cannot be sent");
            Bad("the intent could not be read; the server's log says why".into())
        })?;
        Ok(structured(
            serde_json::to_value(&view).unwrap_or(Value::Null),
            format!(
                "Intent {reference} superseded: the failed action {old} is sealed; the intent now has key {new}{}.",
                if released {
                    ", and the next delivery's candidate is frozen"
                } else {
                    ""
                }
            ),
        ))
    }

    async fn reconcile(
        &self,
        tenant: &TenantId,
        args: ReconcileArgs,
    ) -> Result<CallToolResult, Bad> {
        let key = key_arg(&args.key)?;
        let outcome = match args.outcome.as_str() {
            "completed" => {
                let Some(r) = args.response.as_ref().filter(|v| !v.is_null()) else {
                    return Err(Bad("argument `response`: outcome `completed` needs the provider's response as evidence".into()));
                };
                let text = r.to_string();
                if text.len() > self.max_outcome {
                    return Err(Bad(format!(
                        "argument `response`: {} bytes, over the {} this server keeps (--max-outcome-bytes)",
                        text.len(),
                        self.max_outcome
                    )));
                }
                Outcome::Completed(text)
            }
            "failed" => {
                let max = self.max_outcome;
                let error = args
                    .error
                    .clone()
                    .filter(|e| !e.is_empty() && e.len() <= max)
                    .ok_or_else(|| Bad(format!("argument `error`: outcome `failed` needs the provider's error as evidence (1 character to {max} bytes, --max-outcome-bytes)")))?;
                let retryable = match &args.retryable {
                    None | Some(Value::Null | Value::Bool(false)) => false,
                    // Re-opening lets the next call execute again: if the
                    // provider did act after all, that is a second charge.
                    // A person decides that on /live, with the evidence.
                    Some(Value::Bool(true)) => return Err(Bad("argument `retryable`: reconcile_action cannot re-open an action (a later call would execute it again, and if the provider did act that is a second charge); settle it as failed for good, or let a person re-open it on /live".into())),
                    Some(_) => return Err(Bad("argument `retryable`: false, or leave it out".into())),
                };
                Outcome::Failed { error, retryable }
            }
            _ => {
                return Err(Bad(
                    "argument `outcome`: `completed` (with `response`) or `failed` (with `error`)"
                        .into(),
                ))
            }
        };
        let mut s = self.store.session().await.map_err(store_bad)?;
        let a = action_of(&mut s, tenant, &key).await?;
        let outcome = match outcome {
            // A gateway's action replays its stored answer as a tool result:
            // a provider's plain JSON becomes that result's structured
            // content (and its text), so an agent's SDK can check it against
            // the tool's output schema.
            Outcome::Completed(text) if self.is_gateway_action(&mut s, tenant, &key).await => {
                Outcome::Completed(as_tool_result(&text)?)
            }
            other => other,
        };
        let now = self.store.now_ms();
        let unknown = a.state == ActionState::Uncertain
            || (a.state == ActionState::Started && a.lease_until_ms.is_some_and(|u| u <= now));
        if !unknown {
            return Err(Bad(format!(
                "argument `key`: action {key} is {} {}; only an action whose outcome is unknown is reconciled",
                a.state.as_str(),
                if a.state == ActionState::Started { "with its lease running" } else { "" }
            )));
        }
        match s.reconcile(tenant, &key, a.token, &outcome).await {
            Ok(()) => {}
            Err(idem_store::Error::StaleToken { .. }) => {
                return Err(Bad(format!("argument `key`: action {key} changed while it was being reconciled; read it again with get_action")))
            }
            Err(e) => return Err(store_bad(e)),
        }
        tracing::info!(tenant = %tenant, "action reconciled over MCP");
        let settled = match outcome {
            Outcome::Completed(_) => "completed",
            Outcome::Failed { .. } => "failed",
        };
        // The answer is the action as now stored: the shape get_action and
        // `GET /v1/actions/{key}` answer with.
        let stored = action_of(&mut s, tenant, &key).await?;
        Ok(structured(
            serde_json::to_value(ActionResponse::new(&key, stored)).unwrap_or(Value::Null),
            format!("Action {key} recorded as {settled} (reconciled); later calls for it replay this outcome."),
        ))
    }
}

impl IdemTools {
    /// Whether `key`'s intent was recorded by the MCP gateway (its frozen
    /// candidate keeps the call's arguments).
    async fn is_gateway_action(
        &self,
        s: &mut idem_store::Session,
        tenant: &TenantId,
        key: &idem_core::IdempotencyKey,
    ) -> bool {
        matches!(
            s.intent_by_key(tenant, key).await,
            Ok(Some((_, _, intent))) if intent.candidate.as_deref().is_some_and(|c| c.contains(crate::guarded::ARGUMENTS_MEMBER))
        )
    }
}

/// `reconcile_action`'s `response` for a gateway's action, as the tool
/// result the gateway replays: a `CallToolResult` as given (it must read as
/// one), or any other JSON value as the text of one, with the value as its
/// `structuredContent` when it is an object.
fn as_tool_result(text: &str) -> Result<String, Bad> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Bad(format!("argument `response`: not JSON: {e}")))?;
    if value.get("content").is_some() {
        let result: CallToolResult = serde_json::from_value(value).map_err(|e| {
            Bad(format!(
                "argument `response`: it has `content`, so it is read as a CallToolResult, and it is not one: {e}"
            ))
        })?;
        return serde_json::to_string(&result).map_err(|e| Bad(e.to_string()));
    }
    let mut result =
        CallToolResult::success(vec![rmcp::model::ContentBlock::text(text.to_owned())]);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    serde_json::to_string(&result).map_err(|e| Bad(e.to_string()))
}

impl ServerHandler for IdemTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("idem", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "idem: what duplicate model and payment calls cost (estimate_duplicate_cost), and the tenant's intents and actions as they stand (live_summary, list_uncertain_actions, get_intent, get_action, reconcile_action, supersede_intent).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.router.list_all()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if self.router.get(&request.name).is_none() {
            return Err(McpError::invalid_params(
                format!("no tool {:?}", request.name),
                None,
            ));
        }
        let Some(tenant) = self.tenant.of(&context) else {
            return Err(McpError::invalid_request(
                "no tenant: authenticate with a tenant's bearer token",
                None,
            ));
        };
        self.tenant.refuse_disabled(&self.store, &tenant).await?;
        let mut context = context;
        context.extensions.insert(tenant);
        match self
            .router
            .call(ToolCallContext::new(self, request, context))
            .await
        {
            // An argument that does not read: the agent's to fix, so a
            // result it reads (`isError`), never a protocol error.
            Err(e)
                if e.data
                    .as_ref()
                    .is_some_and(|d| d.get(BAD_ARGUMENT).is_some()) =>
            {
                Ok(CallToolResult::error(vec![ContentBlock::text(e.message.to_string())]).into())
            }
            answer => answer,
        }
    }
}

/// The tenant's action `key`, or a refusal naming the argument.
async fn action_of(
    s: &mut idem_store::Session,
    tenant: &TenantId,
    key: &IdempotencyKey,
) -> Result<idem_store::Action, Bad> {
    match s.action(tenant, key).await {
        Ok(a) => Ok(a),
        Err(idem_store::Error::NotFound) => Err(Bad(format!(
            "argument `key`: no action {key} for this tenant"
        ))),
        Err(e) => Err(store_bad(e)),
    }
}

/// A refusal the agent reads (`isError`).
struct Bad(String);

/// A tool's answer: its result, or its refusal as an `isError` result.
fn answered(r: Result<CallToolResult, Bad>) -> CallToolResult {
    r.unwrap_or_else(|Bad(m)| CallToolResult::error(vec![ContentBlock::text(m)]))
}

fn store_bad(e: idem_store::Error) -> Bad {
    tracing::error!(error = %e, "the intent store failed during an MCP tool call");
    Bad("idem's store is unavailable right now; retry in a moment".into())
}

fn structured(value: Value, text: String) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

/// A string argument of `min` to `max` characters.
fn chars(name: &str, s: String, min: usize, max: usize) -> Result<String, Bad> {
    if (min..=max).contains(&s.chars().count()) {
        Ok(s)
    } else {
        Err(Bad(format!("argument `{name}`: {min} to {max} characters")))
    }
}

/// A whole-number argument from `min` to `max`, when given.
fn whole(name: &str, v: Option<i64>, min: i64, max: i64) -> Result<Option<i64>, Bad> {
    match v {
        Some(n) if !(min..=max).contains(&n) => Err(Bad(format!(
            "argument `{name}`: a whole number from {min} to {max}"
        ))),
        v => Ok(v),
    }
}

fn action_arg(a: &str) -> Result<ActionType, Bad> {
    let a = chars("action", a.to_owned(), 1, 100)?;
    ActionType::try_from(a.as_str()).map_err(|e| Bad(format!("argument `action`: {e}")))
}

fn key_arg(k: &str) -> Result<IdempotencyKey, Bad> {
    IdempotencyKey::try_from(k)
        .map_err(|_| Bad("argument `key`: 64 lowercase hexadecimal characters".into()))
}

/// How the estimate's string numbers are read: in `locale` when the call
/// names one, and each amount with its currency's rule (see
/// [`idem_core::locale::read_number`]).
struct Reading {
    locale: Option<Locale>,
    price: Currency,
    revenue: Currency,
}

impl Reading {
    /// The currency of the amount argument `name`, if it is one.
    fn money(&self, name: &str) -> Option<Currency> {
        match name {
            "price_in" | "price_out" | "price_cached" => Some(self.price),
            "ticket" | "avg_charge" | "ops_cost" => Some(self.revenue),
            _ => None,
        }
    }
}

/// A number argument: a JSON number, read as exactly the number it is; or
/// a decimal string (`"0,015"`, `"0.015"`), read by the one reader every
/// surface uses, in the call's `locale` when it names one (without one, a
/// string two locales read differently, `"1,200"`, is refused naming both
/// readings).
fn number(v: Option<&Num>, name: &str, r: &Reading) -> Result<Option<Decimal>, Bad> {
    let text = match v {
        None => return Ok(None),
        Some(Num::Text(s)) => s.clone(),
        Some(Num::Json(n)) => {
            let t = n.to_string();
            return <Decimal as std::str::FromStr>::from_str(&t)
                .or_else(|_| Decimal::from_scientific(&t))
                .map(Some)
                .map_err(|_| Bad(format!("argument `{name}`: {t} is out of range")));
        }
    };
    // A currency typed with the number: the argument's own is dropped, any
    // other refused (never a dollar figure read as dinars).
    let text = match r.money(name) {
        Some(c) => match read_marking(&text, c) {
            Marking::None(t) => t.to_owned(),
            Marking::Matches(n) => n,
            Marking::Other(m) => {
                return Err(Bad(format!(
                    "argument `{name}`: `{m}` is not the currency of `{name}`, which is in {} ({}); give the number alone or in {}",
                    c.name(Locale::EnUs),
                    c.code(),
                    c.code()
                )))
            }
        },
        None if idem_core::locale::thousands_shorthand(&text).is_some() => {
            return Err(Bad(format!(
                "argument `{name}`: `{text}` is not a number: write it in digits ({})",
                idem_core::locale::thousands_shorthand(&text).unwrap_or_default()
            )))
        }
        None if currency_in_text(&text).is_some() => {
            return Err(Bad(format!(
                "argument `{name}`: `{text}` carries a currency symbol, but `{name}` is not an amount of money: give the number alone"
            )))
        }
        None => text,
    };
    read_number(&text, r.locale, r.money(name))
        .map(Some)
        .map_err(|e| match e {
            idem_core::Error::AmbiguousNumber { .. } => Bad(format!(
                "argument `{name}`: {e}: give it as a JSON number, or as a string in the call's `locale` with that locale's decimal mark ({})",
                match r.money(name).map(|c| (c, c.minor_units())) {
                    Some((c, 3)) => format!("in {}, three decimals: pt-BR `37,125`, en-US `37.125`", c.code()),
                    Some((c, 0)) => format!("{} has no decimals: `1200`, or grouped pt-BR `1.200`, en-US `1,200`", c.code()),
                    _ => "pt-BR `1,5`, en-US `1.5`".to_owned(),
                }
            )),
            e => Bad(format!("argument `{name}`: {e}")),
        })
}

fn required(v: Option<&Num>, name: &str, r: &Reading) -> Result<Decimal, Bad> {
    number(v, name, r)?.ok_or_else(|| Bad(format!("argument `{name}` is required")))
}

fn currency(v: Option<&str>, name: &str) -> Result<Currency, Bad> {
    match v {
        None => Ok(Currency::BRL),
        Some(s) => Currency::from_code(s).ok_or_else(|| {
            Bad(match idem_core::currency::known_refusal(s) {
                Some(why) => format!("argument `{name}`: {why}"),
                None => format!(
                    "argument `{name}`: `{}` is not an ISO 4217 currency code (BRL, USD, GBP, JPY…)",
                    s.chars().take(16).collect::<String>()
                ),
            })
        }),
    }
}

/// A refused input of the cost model, naming the tool's argument
/// (`duplicate_rate`, not the flag's `duplicate-rate`) and only it.
fn cost_refusal(e: idem_core::Error) -> Bad {
    match e {
        idem_core::Error::CostInput { field, reason } => {
            Bad(format!("argument `{}`: {reason}", field.replace('-', "_")))
        }
        e => Bad(e.to_string()),
    }
}

/// `estimate_duplicate_cost`: the inputs of `idem cost --json`, its figures.
fn estimate(a: EstimateArgs) -> Result<CallToolResult, Bad> {
    let zero = Decimal::ZERO;
    let locale = match a.locale.as_deref() {
        None => None,
        Some(tag) => Some(
            Locale::from_tag(tag).ok_or_else(|| Bad("argument `locale`: pt-BR or en-US".into()))?,
        ),
    };
    let r = Reading {
        locale,
        price: currency(a.price_currency.as_deref(), "price_currency")?,
        revenue: currency(a.revenue_currency.as_deref(), "revenue_currency")?,
    };
    let risk_parts = [
        ("money_share", a.money_share.as_ref()),
        ("avg_charge", a.avg_charge.as_ref()),
        ("ops_cost", a.ops_cost.as_ref()),
        ("claim_rate", a.claim_rate.as_ref()),
    ];
    let given: Vec<&str> = risk_parts
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(p, _)| *p)
        .collect();
    let risk = match given.len() {
        0 => None,
        4 => Some(RiskInputs {
            money_share_pct: required(a.money_share.as_ref(), "money_share", &r)?,
            avg_charge: required(a.avg_charge.as_ref(), "avg_charge", &r)?,
            ops_cost: required(a.ops_cost.as_ref(), "ops_cost", &r)?,
            claim_rate_pct: required(a.claim_rate.as_ref(), "claim_rate", &r)?,
        }),
        _ => {
            let missing: Vec<&str> = risk_parts
                .iter()
                .map(|(p, _)| *p)
                .filter(|p| !given.contains(p))
                .collect();
            return Err(Bad(format!("argument `{}`: the risk block takes money_share, avg_charge, ops_cost and claim_rate together", missing[0])));
        }
    };
    let price_unit = match a.price_unit.as_deref() {
        None => PriceUnit::PerThousand,
        Some(u) => u
            .parse::<PriceUnit>()
            .map_err(|e| Bad(format!("argument `price_unit`: {e}")))?,
    };
    let mut s = Scenario {
        inputs: CostInputs {
            conversations: required(Some(&a.conversations), "conversations", &r)?,
            tokens_in: required(Some(&a.tokens_in), "tokens_in", &r)?,
            tokens_out: required(Some(&a.tokens_out), "tokens_out", &r)?,
            price_in: required(Some(&a.price_in), "price_in", &r)?,
            price_out: required(Some(&a.price_out), "price_out", &r)?,
            price_unit,
            ticket: required(Some(&a.ticket), "ticket", &r)?,
            duplicate_rate_pct: required(Some(&a.duplicate_rate), "duplicate_rate", &r)?,
            risk,
            price_currency: r.price,
            revenue_currency: r.revenue,
            fx: number(a.fx.as_ref(), "fx", &r)?,
            cached_share_pct: number(a.cached_share.as_ref(), "cached_share", &r)?.unwrap_or(zero),
            price_cached: number(a.price_cached.as_ref(), "price_cached", &r)?.unwrap_or(zero),
            calls_per_conversation: number(a.calls.as_ref(), "calls", &r)?.unwrap_or(Decimal::ONE),
            dup_cache_share_pct: number(a.dup_cache_share.as_ref(), "dup_cache_share", &r)?
                .unwrap_or(zero),
        },
        ..Scenario::default()
    };
    if s.inputs.price_currency == s.inputs.revenue_currency {
        if s.inputs.fx.is_some() {
            return Err(Bad(format!("argument `fx`: prices and revenue are both in {}; a rate applies only when price_currency differs from revenue_currency", s.inputs.revenue_currency.code())));
        }
    } else if s.inputs.fx.is_none() {
        return Err(Bad(format!("argument `fx` is required: prices are in {} and revenue in {} (US$ 1 = R$ 5,33 is fx 5.33)", s.inputs.price_currency.code(), s.inputs.revenue_currency.code())));
    }
    if let Some(d) = a.fx_date.as_deref() {
        if !is_iso_date(d) {
            return Err(Bad("argument `fx_date`: a date written YYYY-MM-DD".into()));
        }
        s.fx_date = Some(d.to_owned());
        let latest = idem_core::date::latest_today(chrono::Utc::now().timestamp());
        if let Some(d) = s.fx_date.as_deref() {
            if idem_core::date::not_after(d, &latest).is_err() {
                return Err(Bad(format!(
                    "argument `fx_date`: {d} is after today ({latest} at the latest anywhere): a rate is quoted on the day it is given or before"
                )));
            }
        }
    }
    for f in Field::ALL {
        if let Some(v) = f.get(&s) {
            if f.check_typed(v) == Err(Problem::TooPrecise) {
                // The tool's argument (`price_in`), never the link's key (`pi`).
                return Err(Bad(format!(
                    "argument `{}`: more than {} decimal places",
                    f.flag().replace('-', "_"),
                    f.kind().max_decimals()
                )));
            }
        }
    }
    let o = cost::compute(&s.inputs).map_err(cost_refusal)?;
    o.break_even().map_err(cost_refusal)?;
    let v = idem_core::scenario::estimate_json(&s, &o);
    let l = r.locale.unwrap_or(Locale::PtBr);
    let c = s.inputs.revenue_currency;
    let share = o
        .waste_share_of_revenue_pct
        .map(|p| format!(" ({} of revenue)", format_pct(p, l)))
        .unwrap_or_default();
    // A count is written as the page writes it: whole, in the locale's
    // grouping, with the exact expected value beside it when that has
    // decimals (12,500 × 2.5% = 312.5).
    let n = o.duplicated_conversations;
    let conversations = if n.fract().is_zero() {
        format_count(n, l)
    } else {
        format!(
            "{} (expected value {})",
            format_count(n, l),
            idem_core::locale::format_decimal(n, l, 0, n.normalize().scale())
        )
    };
    // The doubt first: a model reading the sentence must not pass on a
    // figure a thousand times off without it.
    let rate = idem_core::scenario::rate_inverted(&s)
        .then(|| idem_core::scenario::rate_warning_text(&s, l));
    let warning: String = idem_core::scenario::unit_warning(&s, &o)
        .map(|w| idem_core::scenario::unit_warning_text(w, &s, &o, l))
        .into_iter()
        .chain(rate)
        .map(|w| {
            format!(
                "{} {w} ",
                if l == Locale::PtBr {
                    "Aviso:"
                } else {
                    "Warning:"
                }
            )
        })
        .collect();
    let text = format!(
        "{warning}{} wasted a month on duplicated calls{share}, {} a year; {conversations} duplicated conversations. The scenario: /?{}",
        format_money(o.monthly_token_waste, l, c),
        format_money(o.annual_token_waste, l, c),
        s.to_query()
    );
    Ok(structured(v, text))
}
