//! The arguments of idem's own MCP tools, each declared once as a type:
//! its `Deserialize` reads a call and its `JsonSchema` is the tool's
//! `inputSchema` (rmcp's `#[tool]` derives it). [`Parameters`] reads a
//! call's arguments with the path of what failed, so bad input is an
//! `isError` naming the argument, never a protocol error.

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The most uncertain actions `list_uncertain_actions` returns.
pub const MAX_LISTED: i64 = 100;

/// What marks a refused argument in the error [`Parameters`] gives rmcp:
/// the server answers it as an `isError` result with its message.
pub const BAD_ARGUMENT: &str = "idem_bad_argument";

/// A tool's arguments, read as `T`; the `#[tool]` macro takes its
/// `inputSchema` from `T`'s schema, as for rmcp's own `Parameters`.
pub struct Parameters<T>(pub T);

impl<T: JsonSchema> JsonSchema for Parameters<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<S, T> FromContextPart<ToolCallContext<'_, S>> for Parameters<T>
where
    T: DeserializeOwned + JsonSchema + 'static,
{
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        read::<T>(arguments).map(Parameters).map_err(|message| {
            rmcp::ErrorData::invalid_params(
                message,
                Some(serde_json::json!({ BAD_ARGUMENT: true })),
            )
        })
    }
}

/// Reads `arguments` as `T`, or says which argument is wrong and how.
pub fn read<T: DeserializeOwned + JsonSchema + 'static>(
    arguments: Map<String, Value>,
) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(Value::Object(arguments)).map_err(|e| {
        let path = e.path().to_string();
        let why = e.inner().to_string();
        if let Some(name) = quoted_after(&why, "unknown field `") {
            let schema = rmcp::handler::server::common::schema_for_type::<T>();
            let inputs: Vec<&str> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return format!(
                "argument `{name}` is not an input of this tool; the inputs are {}",
                inputs.join(", ")
            );
        }
        if let Some(name) = quoted_after(&why, "missing field `") {
            return format!("argument `{name}` is required");
        }
        format!("argument `{path}`: {why}")
    })
}

/// The name between `start` and the next backtick in `text`.
fn quoted_after<'a>(text: &'a str, start: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(start)?;
    rest.split('`').next()
}

/// A number argument: a JSON number, read as exactly the number it is, or
/// a decimal written as a string (`"0,015"`), read by the one reader every
/// surface uses.
#[derive(Debug, Clone)]
pub enum Num {
    /// A JSON number.
    Json(serde_json::Number),
    /// A string.
    Text(String),
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(n) => Ok(Num::Json(n)),
            Value::String(s) => Ok(Num::Text(s)),
            _ => Err(serde::de::Error::custom(
                "a number, or a decimal written as a string",
            )),
        }
    }
}

impl JsonSchema for Num {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Num".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["number", "string"]})
    }
}

/// `estimate_duplicate_cost`: the inputs of `idem cost --json`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateArgs {
    /// conversations a month
    pub conversations: Num,
    /// input tokens per model call
    pub tokens_in: Num,
    /// output tokens per model call
    pub tokens_out: Num,
    /// price of input tokens per price_unit, in price_currency
    pub price_in: Num,
    /// price of output tokens per price_unit
    pub price_out: Num,
    /// price of cached input tokens (default 0)
    pub price_cached: Option<Num>,
    /// what prices are quoted per (default 1k)
    #[schemars(extend("enum" = ["1k", "1m"]))]
    pub price_unit: Option<String>,
    /// ISO 4217 code of the prices (default BRL)
    pub price_currency: Option<String>,
    /// ISO 4217 code of revenue and every result (default BRL)
    pub revenue_currency: Option<String>,
    /// one unit of price_currency in revenue_currency; required when they differ
    pub fx: Option<Num>,
    /// the day the rate was quoted, YYYY-MM-DD
    pub fx_date: Option<String>,
    /// percentage of each call's input served from cache (default 0)
    pub cached_share: Option<Num>,
    /// model calls per conversation (default 1)
    pub calls: Option<Num>,
    /// percentage of a duplicate's input that hits the cache (default 0)
    pub dup_cache_share: Option<Num>,
    /// revenue per resolved conversation
    pub ticket: Num,
    /// percentage of conversations that repeat the call (3 means 3%)
    pub duplicate_rate: Num,
    /// risk block: percentage of duplicated conversations that move money
    pub money_share: Option<Num>,
    /// risk block: average charge
    pub avg_charge: Option<Num>,
    /// risk block: operations cost per duplicate charge
    pub ops_cost: Option<Num>,
    /// risk block: percentage of duplicate charges customers claim back
    pub claim_rate: Option<Num>,
    /// the language of the summary sentence (default pt-BR); the figures are exact decimals either way
    #[schemars(extend("enum" = ["pt-BR", "en-US"]))]
    pub locale: Option<String>,
}

/// `live_summary`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryArgs {
    /// the window, in hours (default 24)
    #[schemars(range(min = 1, max = 744))]
    pub hours: Option<i64>,
}

/// `list_uncertain_actions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// how many to list (default 20)
    #[schemars(range(min = 1, max = MAX_LISTED))]
    pub limit: Option<i64>,
}

/// `get_intent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentArgs {
    /// e.g. pix.cobranca
    pub action: String,
    /// the intent's reference
    pub reference: String,
}

/// `get_action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyArgs {
    /// the action's key
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub key: String,
}

/// `reconcile_action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileArgs {
    /// the action's key
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub key: String,
    /// what the provider says happened
    #[schemars(extend("enum" = ["completed", "failed"]))]
    pub outcome: String,
    /// the provider's response (outcome completed). For an action of the MCP gateway: a CallToolResult (an object with `content`), or any other JSON value, which becomes the replayed result's text and, when it is an object, its structuredContent
    pub response: Option<Value>,
    /// the provider's error (outcome failed): the action fails for good
    pub error: Option<String>,
    /// false or absent: reconcile_action cannot re-open an action
    pub retryable: Option<Value>,
}

/// `supersede_intent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupersedeArgs {
    /// e.g. pix.cobranca
    pub action: String,
    /// the intent's reference
    pub reference: String,
    /// why, for the audit
    #[schemars(length(min = 1, max = 1000))]
    pub reason: String,
    /// the corrected candidate, with the intent's own reference; leave it out to release the frozen one (the next delivery's is frozen)
    #[schemars(with = "Option<Map<String, Value>>")]
    pub candidate: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_argument_is_named() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let e = read::<SummaryArgs>(args(serde_json::json!({"hours": "x"}))).unwrap_err();
        assert!(e.starts_with("argument `hours`: "), "{e}");
        let e = read::<KeyArgs>(args(serde_json::json!({}))).unwrap_err();
        assert_eq!(e, "argument `key` is required");
        let e = read::<KeyArgs>(args(serde_json::json!({"key": "k", "surprise": 1}))).unwrap_err();
        assert_eq!(
            e,
            "argument `surprise` is not an input of this tool; the inputs are key"
        );
        let e = read::<EstimateArgs>(args(serde_json::json!({"conversations": true}))).unwrap_err();
        assert_eq!(
            e,
            "argument `conversations`: a number, or a decimal written as a string"
        );
    }
}
