//! Every message gets an answer: what reaches the gateway before rmcp reads
//! it. A message over the bound is answered with a JSON-RPC error that
//! carries **its request's id**, read from the start of the text (an
//! `id: null` answer cannot be matched by the agent's SDK, which would wait
//! for good); text that is not JSON gets a parse error; a guarded call
//! whose JSON names a member twice gets an `isError` result naming it,
//! since which of the two values counts depends on the parser, and the key
//! must not. Everything else passes to rmcp as it came.

use idem_core::json::duplicate_member;
use serde_json::{json, Value};

/// What to do with one incoming message.
#[derive(Debug, PartialEq)]
pub enum Screened {
    /// Hand it to the MCP server as it is.
    Pass,
    /// Answer it with this JSON-RPC message, and hand nothing on.
    Answer(Value),
}

/// JSON-RPC's "invalid request" code, for a message over the bound.
pub const TOO_LARGE: i64 = -32600;
/// JSON-RPC's "parse error" code.
pub const PARSE_ERROR: i64 = -32700;

/// Screens one message of `len` bytes whose text is `text` (its whole
/// text when `len` is within `max`, else at least its first few KiB).
/// `guarded` says whether a tool name is guarded.
pub fn screen(text: &[u8], len: usize, max: usize, guarded: impl Fn(&str) -> bool) -> Screened {
    if len > max {
        return Screened::Answer(json!({
            "jsonrpc": "2.0",
            "id": id_from_start(text),
            "error": {"code": TOO_LARGE, "message": format!(
                "the message is over the {max} bytes this server reads ({len} bytes or more; a guarded call's arguments are at most 64 KiB)"
            )},
        }));
    }
    let Ok(text) = std::str::from_utf8(text) else {
        return parse_error("the message is not UTF-8");
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return parse_error(&format!("the message is not JSON: {e}")),
    };
    if let Some(refusal) = shape(&value) {
        return Screened::Answer(refusal);
    }
    let tool = (value.get("method").and_then(Value::as_str) == Some("tools/call"))
        .then(|| value.pointer("/params/name").and_then(Value::as_str))
        .flatten();
    if let (Some(tool), Some(id)) = (tool, value.get("id")) {
        if guarded(tool) {
            if let Some((member, at)) = duplicate_member(text) {
                return Screened::Answer(json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "result": {
                        "content": [{"type": "text", "text": format!(
                            "the call names member `{member}` twice (at {at}); which value would count depends on the parser, so idem takes neither. Nothing was recorded or executed: send each member once"
                        )}],
                        "isError": true,
                        "_meta": {"idem": idem_wire::IdemMeta::refused()},
                    },
                }));
            }
        }
    }
    Screened::Pass
}

/// JSON-RPC's "invalid params" code.
pub const INVALID_PARAMS: i64 = -32602;

/// A message the MCP server would drop or answer outside JSON-RPC (HTTP
/// 415 with text, or nothing): a batch (MCP has none since 2025-06-18), a
/// request id that is neither a string nor an integer, a call whose
/// arguments are not an object. Answered here with a JSON-RPC error
/// carrying the request's own top-level id.
fn shape(value: &Value) -> Option<Value> {
    let error = |id: &Value, code: i64, message: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let Some(message) = value.as_object() else {
        let what = if value.is_array() {
            "a batch (a JSON array of messages) is not accepted: MCP sends each message on its own"
        } else {
            "a JSON-RPC message is a JSON object"
        };
        return Some(error(&Value::Null, TOO_LARGE, what));
    };
    let id = message.get("id").unwrap_or(&Value::Null);
    let plain_id = match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if message.contains_key("id") && !plain_id {
        return Some(error(
            id,
            TOO_LARGE,
            "the request id must be a string or an integer (MCP); nothing was done",
        ));
    }
    let is_call = message.get("method").and_then(Value::as_str) == Some("tools/call");
    if is_call {
        if let Some(args) = value.pointer("/params/arguments") {
            if !args.is_object() && !args.is_null() {
                return Some(error(
                    id,
                    INVALID_PARAMS,
                    "params.arguments must be an object of named arguments; nothing was recorded or executed",
                ));
            }
        }
    }
    None
}

fn parse_error(message: &str) -> Screened {
    Screened::Answer(json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": PARSE_ERROR, "message": message},
    }))
}

/// The request id a message's text names as a member of its top-level
/// object (`"id": 7` or `"id": "a-1"`), or null: an `"id"` inside the
/// params (a nested argument's) is never taken for it. Read from text that
/// may be cut anywhere; an id past the cut is not guessed.
pub fn id_from_start(text: &[u8]) -> Value {
    let head = &text[..text.len().min(64 * 1024)];
    let mut depth = 0usize;
    let mut i = 0usize;
    // Whether the string that starts at `i` is a member name (it follows
    // `{` or `,` in an object).
    let mut expect_name = false;
    while i < head.len() {
        match head[i] {
            b'{' => {
                depth += 1;
                expect_name = true;
            }
            b'[' => {
                depth += 1;
                expect_name = false;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_name = true,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < head.len() && head[j] != b'"' {
                    j += if head[j] == b'\\' { 2 } else { 1 };
                }
                if j >= head.len() {
                    return Value::Null;
                }
                if depth == 1 && expect_name && &head[start..j] == b"id" {
                    return id_value(&head[j + 1..]);
                }
                expect_name = false;
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

/// The string or integer after a member name's `:`.
fn id_value(rest: &[u8]) -> Value {
    let rest = String::from_utf8_lossy(rest);
    let Some(value) = rest.trim_start().strip_prefix(':') else {
        return Value::Null;
    };
    let value = value.trim_start();
    if let Some(s) = value.strip_prefix('"') {
        return match s.find('"') {
            Some(end) if !s[..end].contains('\\') => Value::String(s[..end].to_owned()),
            _ => Value::Null,
        };
    }
    let digits: String = value
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse::<i64>().map_or(Value::Null, Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_message_is_answered_with_its_id() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"x","arguments":{{"t":"{}"}}}}}}"#,
            "x".repeat(100)
        );
        let Screened::Answer(a) = screen(&big.as_bytes()[..60], big.len(), 50, |_| true) else {
            panic!("passed")
        };
        assert_eq!(a["id"], 42);
        assert_eq!(a["error"]["code"], TOO_LARGE);
        assert_eq!(
            id_from_start(br#"{"id" : "req-7", "method"#),
            json!("req-7")
        );
        assert_eq!(id_from_start(br#"{"jsonrpc":"2.0","met"#), Value::Null);
    }

    /// A nested argument named `id` is never the request's id, whatever
    /// comes first in the text.
    #[test]
    fn only_a_top_level_id_is_the_requests() {
        let nested = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"id":"not-it","t":"xxxx"}},"id":9}"#;
        assert_eq!(id_from_start(nested), json!(9));
        // Cut before the top-level id: not guessed.
        assert_eq!(id_from_start(&nested[..70]), Value::Null);
        let escaped = br#"{"params":{"k":"a\"id\":3"},"id":"r-1"}"#;
        assert_eq!(id_from_start(escaped), json!("r-1"));
        assert_eq!(id_from_start(br#"[{"id":1}]"#), Value::Null);
    }

    /// Batches, odd ids and argument arrays get a JSON-RPC error with the
    /// request's own id, never an HTTP 415 in text or silence.
    #[test]
    fn what_mcp_cannot_take_is_answered_in_json_rpc() {
        let cases: [(&[u8], Value, i64); 5] = [
            (br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#, Value::Null, TOO_LARGE),
            (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#, json!({"a": 1}), TOO_LARGE),
            (br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#, json!(1.5), TOO_LARGE),
            (br#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#, json!(true), TOO_LARGE),
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":[1,2]}}"#,
                json!(7),
                INVALID_PARAMS,
            ),
        ];
        for (text, id, code) in cases {
            let Screened::Answer(a) = screen(text, text.len(), 10_000, |_| true) else {
                panic!("passed: {}", String::from_utf8_lossy(text))
            };
            assert_eq!(a["id"], id, "{a}");
            assert_eq!(a["error"]["code"], code, "{a}");
        }
        let fine = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"pay","arguments":{}}}"#;
        assert_eq!(screen(fine, fine.len(), 10_000, |_| false), Screened::Pass);
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(screen(note, note.len(), 10_000, |_| false), Screened::Pass);
    }

    #[test]
    fn malformed_text_is_a_parse_error_and_duplicates_in_a_guarded_call_are_named() {
        let Screened::Answer(a) = screen(b"[[[", 3, 100, |_| true) else {
            panic!("passed")
        };
        assert_eq!(a["error"]["code"], PARSE_ERROR);
        let dup = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pay","arguments":{"amount":"1.00","amount":"999.00"}}}"#;
        let Screened::Answer(a) = screen(dup, dup.len(), 10_000, |t| t == "pay") else {
            panic!("passed")
        };
        assert_eq!(a["id"], 3);
        assert_eq!(a["result"]["isError"], true);
        assert!(a["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("`amount` twice"));
        // Unguarded, or well formed: passed on as it is.
        assert_eq!(screen(dup, dup.len(), 10_000, |_| false), Screened::Pass);
        let ok = br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
        assert_eq!(screen(ok, ok.len(), 10_000, |_| true), Screened::Pass);
    }
}
