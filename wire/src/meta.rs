//! `_meta.idem`: what the MCP gateway tells an agent about every answer of
//! a guarded tool, declared once. Each answer the gateway writes, its
//! refusals before anything was recorded included, is this struct
//! serialized; `clients/conformance/mcp-meta.schema.json` is its JSON
//! Schema, generated from it and checked like `openapi.json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `_meta.idem` of a guarded tool's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdemMeta {
    /// The intent's key; `null` when no key was derived (a refusal before
    /// anything was recorded, or an unrecorded call).
    pub key: Option<String>,
    /// `false` when the call was forwarded or refused without being
    /// recorded (a payment handshake); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<bool>,
    /// The stored result of an earlier call, nothing executed now.
    pub replayed: bool,
    /// This call's values differ from the frozen intent's: the frozen ones
    /// were used.
    pub diverged: bool,
    /// The claim's attempt (1 for the first execution); 0 when nothing was
    /// claimed.
    pub attempt: i32,
    /// The outcome was learned again from the upstream (a resend of an
    /// uncertain call, or its lookup).
    pub reconciled: bool,
    /// The `freeze_meta` entries this call sent with another value than the
    /// frozen one (`[]` when none).
    pub diverged_meta: Vec<String>,
    /// On an `isError` answer, who said no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The failed action's key this call superseded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    /// `false` when nothing was sent to the upstream (it was down); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<bool>,
    /// Why nothing was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamState>,
    /// What asking the upstream about an uncertain call found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup: Option<LookupVerdict>,
}

/// Who said no on an `isError` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// idem refused, or does not know the outcome.
    Idem,
    /// The upstream's own error.
    Upstream,
}

/// Why a call was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamState {
    /// The upstream's process exited; the gateway is starting it again.
    Restarting,
    /// A URL upstream refused the connection (nothing was written).
    Unreachable,
}

/// What the lookup tool said of an uncertain call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LookupVerdict {
    /// It was executed: its result is the stored one now.
    Executed,
    /// It was not: the gateway ran it now, under the same key.
    NotExecuted,
    /// The lookup did not tell: the action stays uncertain.
    Unknown,
}

impl LookupVerdict {
    /// The verdict's name, as `_meta.idem.lookup` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::NotExecuted => "not_executed",
            Self::Unknown => "unknown",
        }
    }
}

impl IdemMeta {
    /// A call about intent `key`, at `attempt`.
    pub fn of(key: &str, attempt: i32) -> Self {
        Self {
            key: Some(key.to_owned()),
            attempt,
            ..Self::refused()
        }
    }

    /// idem's refusal before anything was recorded: no key, nothing ran.
    pub fn refused() -> Self {
        Self {
            key: None,
            recorded: None,
            replayed: false,
            diverged: false,
            attempt: 0,
            reconciled: false,
            diverged_meta: Vec::new(),
            source: Some(Source::Idem),
            superseded: None,
            sent: None,
            upstream: None,
            lookup: None,
        }
    }

    /// A call not recorded (a payment handshake), answered by `source`.
    pub fn unrecorded(source: Source) -> Self {
        Self {
            recorded: Some(false),
            source: Some(source),
            ..Self::refused()
        }
    }

    /// The JSON Schema of `_meta.idem`, as committed.
    pub fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(IdemMeta)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema agents and both clients read is committed
    /// (`clients/conformance/mcp-meta.schema.json`): a change to
    /// `_meta.idem` that does not update it fails here.
    /// `IDEM_WRITE_SCHEMA=1 cargo test -p idem-wire` writes it.
    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../clients/conformance/mcp-meta.schema.json"
        );
        let generated =
            serde_json::to_string_pretty(&IdemMeta::schema()).unwrap_or_default() + "\n";
        if std::env::var_os("IDEM_WRITE_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "{path} is not the schema of _meta.idem: run IDEM_WRITE_SCHEMA=1 cargo test -p idem-wire, and review the difference"
        );
    }

    #[test]
    fn a_refusal_says_no_key_and_idem_as_its_source() {
        let v = serde_json::to_value(IdemMeta::refused()).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"key": null, "replayed": false, "diverged": false, "attempt": 0,
                               "reconciled": false, "diverged_meta": [], "source": "idem"})
        );
        let v = serde_json::to_value(IdemMeta::unrecorded(Source::Upstream)).unwrap_or_default();
        assert_eq!(v["recorded"], false);
        assert_eq!(v["source"], "upstream");
    }
}
