//! idem's own MCP server: the calculator and the live monitor as tools an
//! agent can call. `estimate_duplicate_cost` answers what `idem cost
//! --json` prints; the others read (and `reconcile_action` settles) the
//! tenant's intents and actions. Bad input is an `isError` result that
//! names the argument, never a protocol error.

use idem_core::cost::{self, CostInputs, PriceUnit, RiskInputs};
use idem_core::locale::{
    currency_in_text, format_count, format_money, format_pct, read_marking, read_number, Currency,
    Locale, Marking,
};
use idem_core::scenario::{is_iso_date, Field, Problem, Scenario};
use idem_core::{ActionType, IdempotencyKey, TenantId};
use idem_store::{ActionState, Outcome, Store};
use idem_wire::{ActionResponse, IntentView};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};

pub use crate::tenant::TenantSource;
use rust_decimal::Decimal;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The most uncertain actions `list_uncertain_actions` returns.
pub const MAX_LISTED: i64 = 100;
/// The largest candidate `supersede_intent` records.
pub const MAX_CANDIDATE: usize = 32 * 1024;

/// idem's own MCP server.
#[derive(Clone)]
pub struct IdemTools {
    store: Store,
    tenant: TenantSource,
    tools: Arc<Vec<Tool>>,
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
            tools: Arc::new(tool_list()),
            max_outcome: idem_wire::DEFAULT_MAX_OUTCOME_BYTES,
        }
    }

    /// With `bytes` as the largest evidence recorded (`--max-outcome-bytes`).
    pub fn with_max_outcome(mut self, bytes: usize) -> Self {
        self.max_outcome = bytes;
        self
    }

    /// Serves one agent over stdin and stdout until it closes them.
    pub async fn serve_stdio(self) -> Result<(), std::io::Error> {
        crate::stdio::serve_stdio(self, |_| false).await
    }

    async fn run(
        &self,
        tenant: &TenantId,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        match name {
            "estimate_duplicate_cost" => estimate(args),
            "live_summary" => self.live_summary(tenant, args).await,
            "list_uncertain_actions" => self.list_uncertain(tenant, args).await,
            "get_intent" => self.get_intent(tenant, args).await,
            "get_action" => self.get_action(tenant, args).await,
            "reconcile_action" => self.reconcile(tenant, args).await,
            "supersede_intent" => self.supersede(tenant, args).await,
            other => Err(Bad(format!("no tool {other:?}"))),
        }
    }

    async fn live_summary(
        &self,
        tenant: &TenantId,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let hours = optional_int(args, "hours", 1, 24 * 31)?.unwrap_or(24);
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
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let limit = optional_int(args, "limit", 1, MAX_LISTED)?.unwrap_or(20);
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

    async fn get_intent(
        &self,
        tenant: &TenantId,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let action = action_arg(args)?;
        let reference = string(args, "reference", 1, 255)?;
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

    async fn get_action(
        &self,
        tenant: &TenantId,
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let key = key_arg(args)?;
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
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let action = action_arg(args)?;
        let reference = string(args, "reference", 1, 255)?;
        let reason = string(args, "reason", 1, 1000)?;
        let text = match args.get("candidate") {
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
        args: &Map<String, Value>,
    ) -> Result<CallToolResult, Bad> {
        let key = key_arg(args)?;
        let outcome = match args.get("outcome").and_then(Value::as_str) {
            Some("completed") => {
                let Some(r) = args.get("response").filter(|v| !v.is_null()) else {
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
            Some("failed") => {
                let max = self.max_outcome;
                let error = string(args, "error", 1, usize::MAX)
                    .ok()
                    .filter(|e| e.len() <= max)
                    .ok_or_else(|| Bad(format!("argument `error`: outcome `failed` needs the provider's error as evidence (1 character to {max} bytes, --max-outcome-bytes)")))?;
                let retryable = match args.get("retryable") {
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
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.tools.iter().any(|t| t.name == request.name) {
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
        let args = request.arguments.unwrap_or_default();
        let result = match self.run(&tenant, &request.name, &args).await {
            Ok(r) => r,
            Err(Bad(m)) => CallToolResult::error(vec![ContentBlock::text(m)]),
        };
        Ok(result.into())
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

fn store_bad(e: idem_store::Error) -> Bad {
    tracing::error!(error = %e, "the intent store failed during an MCP tool call");
    Bad("idem's store is unavailable right now; retry in a moment".into())
}

fn structured(value: Value, text: String) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

fn string(args: &Map<String, Value>, name: &str, min: usize, max: usize) -> Result<String, Bad> {
    match args.get(name) {
        Some(Value::String(s)) if (min..=max).contains(&s.chars().count()) => Ok(s.clone()),
        Some(Value::String(_)) => Err(Bad(format!("argument `{name}`: {min} to {max} characters"))),
        None | Some(Value::Null) => Err(Bad(format!("argument `{name}` is required"))),
        Some(_) => Err(Bad(format!("argument `{name}`: a string"))),
    }
}

fn optional_int(
    args: &Map<String, Value>,
    name: &str,
    min: i64,
    max: i64,
) -> Result<Option<i64>, Bad> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(Bad(format!(
                "argument `{name}`: a whole number from {min} to {max}"
            ))),
        },
    }
}

fn action_arg(args: &Map<String, Value>) -> Result<ActionType, Bad> {
    let a = string(args, "action", 1, 100)?;
    ActionType::try_from(a.as_str()).map_err(|e| Bad(format!("argument `action`: {e}")))
}

fn key_arg(args: &Map<String, Value>) -> Result<IdempotencyKey, Bad> {
    let k = string(args, "key", 64, 64)
        .map_err(|_| Bad("argument `key`: 64 lowercase hexadecimal characters".into()))?;
    IdempotencyKey::try_from(k.as_str())
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
fn number(args: &Map<String, Value>, name: &str, r: &Reading) -> Result<Option<Decimal>, Bad> {
    let text = match args.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => {
            let t = n.to_string();
            return <Decimal as std::str::FromStr>::from_str(&t)
                .or_else(|_| Decimal::from_scientific(&t))
                .map(Some)
                .map_err(|_| Bad(format!("argument `{name}`: {t} is out of range")));
        }
        Some(_) => {
            return Err(Bad(format!(
                "argument `{name}`: a number, or a decimal written as a string"
            )))
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

fn required(args: &Map<String, Value>, name: &str, r: &Reading) -> Result<Decimal, Bad> {
    number(args, name, r)?.ok_or_else(|| Bad(format!("argument `{name}` is required")))
}

fn currency(args: &Map<String, Value>, name: &str) -> Result<Currency, Bad> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(Currency::BRL),
        Some(Value::String(s)) => Currency::from_code(s).ok_or_else(|| {
            Bad(match idem_core::currency::known_refusal(s) {
                Some(why) => format!("argument `{name}`: {why}"),
                None => format!(
                    "argument `{name}`: `{}` is not an ISO 4217 currency code (BRL, USD, GBP, JPY…)",
                    s.chars().take(16).collect::<String>()
                ),
            })
        }),
        Some(_) => Err(Bad(format!(
            "argument `{name}`: a currency code such as BRL"
        ))),
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
fn estimate(args: &Map<String, Value>) -> Result<CallToolResult, Bad> {
    const KNOWN: [&str; 21] = [
        "conversations",
        "tokens_in",
        "tokens_out",
        "price_in",
        "price_out",
        "price_cached",
        "price_unit",
        "price_currency",
        "revenue_currency",
        "fx",
        "fx_date",
        "cached_share",
        "calls",
        "dup_cache_share",
        "ticket",
        "duplicate_rate",
        "money_share",
        "avg_charge",
        "ops_cost",
        "claim_rate",
        "locale",
    ];
    if let Some(unknown) = args.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(Bad(format!(
            "argument `{unknown}` is not an input of the estimate; the inputs are {}",
            KNOWN.join(", ")
        )));
    }
    let zero = Decimal::ZERO;
    let locale = match args.get("locale") {
        None | Some(Value::Null) => None,
        Some(Value::String(tag)) => Some(
            Locale::from_tag(tag).ok_or_else(|| Bad("argument `locale`: pt-BR or en-US".into()))?,
        ),
        Some(_) => return Err(Bad("argument `locale`: pt-BR or en-US".into())),
    };
    let r = Reading {
        locale,
        price: currency(args, "price_currency")?,
        revenue: currency(args, "revenue_currency")?,
    };
    let risk_parts = ["money_share", "avg_charge", "ops_cost", "claim_rate"];
    let given: Vec<&str> = risk_parts
        .iter()
        .copied()
        .filter(|p| args.get(*p).is_some_and(|v| !v.is_null()))
        .collect();
    let risk = match given.len() {
        0 => None,
        4 => Some(RiskInputs {
            money_share_pct: required(args, "money_share", &r)?,
            avg_charge: required(args, "avg_charge", &r)?,
            ops_cost: required(args, "ops_cost", &r)?,
            claim_rate_pct: required(args, "claim_rate", &r)?,
        }),
        _ => {
            let missing: Vec<&str> = risk_parts
                .iter()
                .copied()
                .filter(|p| !given.contains(p))
                .collect();
            return Err(Bad(format!("argument `{}`: the risk block takes money_share, avg_charge, ops_cost and claim_rate together", missing[0])));
        }
    };
    let price_unit = match args.get("price_unit") {
        None | Some(Value::Null) => PriceUnit::PerThousand,
        Some(Value::String(u)) => u
            .parse::<PriceUnit>()
            .map_err(|e| Bad(format!("argument `price_unit`: {e}")))?,
        Some(_) => return Err(Bad("argument `price_unit`: \"1k\" or \"1m\"".into())),
    };
    let mut s = Scenario {
        inputs: CostInputs {
            conversations: required(args, "conversations", &r)?,
            tokens_in: required(args, "tokens_in", &r)?,
            tokens_out: required(args, "tokens_out", &r)?,
            price_in: required(args, "price_in", &r)?,
            price_out: required(args, "price_out", &r)?,
            price_unit,
            ticket: required(args, "ticket", &r)?,
            duplicate_rate_pct: required(args, "duplicate_rate", &r)?,
            risk,
            price_currency: r.price,
            revenue_currency: r.revenue,
            fx: number(args, "fx", &r)?,
            cached_share_pct: number(args, "cached_share", &r)?.unwrap_or(zero),
            price_cached: number(args, "price_cached", &r)?.unwrap_or(zero),
            calls_per_conversation: number(args, "calls", &r)?.unwrap_or(Decimal::ONE),
            dup_cache_share_pct: number(args, "dup_cache_share", &r)?.unwrap_or(zero),
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
    if let Some(d) = args.get("fx_date").filter(|v| !v.is_null()) {
        match d.as_str() {
            Some(d) if is_iso_date(d) => s.fx_date = Some(d.to_owned()),
            _ => return Err(Bad("argument `fx_date`: a date written YYYY-MM-DD".into())),
        }
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

fn schema(properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let mut m = Map::new();
    m.insert("type".into(), "object".into());
    m.insert("properties".into(), properties);
    m.insert("required".into(), json!(required));
    m.insert("additionalProperties".into(), false.into());
    Arc::new(m)
}

fn tool(
    name: &'static str,
    description: &'static str,
    input: Arc<Map<String, Value>>,
    read_only: bool,
) -> Tool {
    let mut t = Tool::new(name, description, input);
    let mut a = ToolAnnotations::new();
    a.read_only_hint = Some(read_only);
    // The one tool that writes settles money's state (a charge recorded as
    // done or not): hosts should ask before it runs.
    a.destructive_hint = Some(!read_only);
    a.idempotent_hint = Some(true);
    a.open_world_hint = Some(false);
    t.annotations = Some(a);
    t
}

fn tool_list() -> Vec<Tool> {
    let num = |d: &str| json!({"type": ["number", "string"], "description": d});
    let estimate = schema(
        json!({
            "conversations": num("conversations a month"),
            "tokens_in": num("input tokens per model call"),
            "tokens_out": num("output tokens per model call"),
            "price_in": num("price of input tokens per price_unit, in price_currency"),
            "price_out": num("price of output tokens per price_unit"),
            "price_cached": num("price of cached input tokens (default 0)"),
            "price_unit": {"type": "string", "enum": ["1k", "1m"], "description": "what prices are quoted per (default 1k)"},
            "price_currency": {"type": "string", "description": "ISO 4217 code of the prices (default BRL)"},
            "revenue_currency": {"type": "string", "description": "ISO 4217 code of revenue and every result (default BRL)"},
            "fx": num("one unit of price_currency in revenue_currency; required when they differ"),
            "fx_date": {"type": "string", "description": "the day the rate was quoted, YYYY-MM-DD"},
            "cached_share": num("percentage of each call's input served from cache (default 0)"),
            "calls": num("model calls per conversation (default 1)"),
            "dup_cache_share": num("percentage of a duplicate's input that hits the cache (default 0)"),
            "ticket": num("revenue per resolved conversation"),
            "duplicate_rate": num("percentage of conversations that repeat the call (3 means 3%)"),
            "money_share": num("risk block: percentage of duplicated conversations that move money"),
            "avg_charge": num("risk block: average charge"),
            "ops_cost": num("risk block: operations cost per duplicate charge"),
            "claim_rate": num("risk block: percentage of duplicate charges customers claim back"),
            "locale": {"type": "string", "enum": ["pt-BR", "en-US"], "description": "the language of the summary sentence (default pt-BR); the figures are exact decimals either way"},
        }),
        &[
            "conversations",
            "tokens_in",
            "tokens_out",
            "price_in",
            "price_out",
            "ticket",
            "duplicate_rate",
        ],
    );
    vec![
        tool("estimate_duplicate_cost", "What duplicated model calls cost a month and a year, in exact decimals: the inputs and figures of `idem cost --json`, and a link to the scenario on idem's dashboard.", estimate, true),
        tool("live_summary", "The tenant's intents, redeliveries absorbed, duplicate rate, divergent re-extractions, and actions in flight or with an unknown outcome now.", schema(json!({"hours": {"type": "integer", "minimum": 1, "maximum": 744, "description": "the window, in hours (default 24)"}}), &[]), true),
        tool("list_uncertain_actions", "Actions whose outcome is unknown (an attempt started and never said how it ended), newest first, with each one's intent: ask the provider about the key, then reconcile_action.", schema(json!({"limit": {"type": "integer", "minimum": 1, "maximum": MAX_LISTED}}), &[]), true),
        tool("get_intent", "An intent as frozen by its first delivery: the candidate as sent, the normalized fields its key covers, deliveries and divergences.", schema(json!({"action": {"type": "string", "description": "e.g. pix.cobranca"}, "reference": {"type": "string"}}), &["action", "reference"]), true),
        tool("get_action", "An action by its key: state, attempts, lease, the stored response or error.", schema(json!({"key": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}), &["key"]), true),
        tool("reconcile_action", "Settles an action whose outcome is unknown now with what the provider says happened, with its response or error as evidence; later calls replay it. It never re-opens an action (a person does that on /live).", schema(json!({
            "key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "outcome": {"type": "string", "enum": ["completed", "failed"]},
            "response": {"description": "the provider's response (outcome completed). For an action of the MCP gateway: a CallToolResult (an object with `content`), or any other JSON value, which becomes the replayed result's text and, when it is an object, its structuredContent"},
            "error": {"type": "string", "description": "the provider's error (outcome failed): the action fails for good"},
            "retryable": {"type": "boolean", "enum": [false], "description": "false or absent: reconcile_action cannot re-open an action"},
        }), &["key", "outcome"]), false),
        {
            let mut t = tool("supersede_intent", "A way out of a wrong first attempt, never out of a charge: an intent whose action failed (nothing executed: the provider refused it, or its authorization expired) gets the corrected candidate, or releases its own for the next delivery, under a key of its own; the failed action is sealed and the old version kept with the reason. Refused for an action started, uncertain or completed.", schema(json!({
                "action": {"type": "string", "description": "e.g. pix.cobranca"},
                "reference": {"type": "string"},
                "reason": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "why, for the audit"},
                "candidate": {"type": "object", "description": "the corrected candidate, with the intent's own reference; leave it out to release the frozen one (the next delivery's is frozen)"},
            }), &["action", "reference", "reason"]), false);
            if let Some(a) = t.annotations.as_mut() {
                // A second call finds the new action, not a failed one.
                a.idempotent_hint = Some(false);
            }
            t
        },
    ]
}
