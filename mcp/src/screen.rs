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
                        "_meta": {"idem": {"key": null, "replayed": false, "diverged": false,
                                           "attempt": 0, "reconciled": false, "source": "idem"}},
                    },
                }));
            }
        }
    }
    Screened::Pass
}

fn parse_error(message: &str) -> Screened {
    Screened::Answer(json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": PARSE_ERROR, "message": message},
    }))
}

/// The request id a message's text names near its start (`"id": 7` or
/// `"id": "a-1"`), or null. Read from text that may be cut anywhere.
pub fn id_from_start(text: &[u8]) -> Value {
    let head = &text[..text.len().min(64 * 1024)];
    let head = String::from_utf8_lossy(head);
    let mut rest = head.as_ref();
    while let Some(at) = rest.find("\"id\"") {
        let after = rest[at + 4..].trim_start();
        if let Some(value) = after.strip_prefix(':') {
            let value = value.trim_start();
            if let Some(s) = value.strip_prefix('"') {
                if let Some(end) = s.find('"') {
                    if !s[..end].contains('\\') {
                        return Value::String(s[..end].to_owned());
                    }
                }
            } else {
                let digits: String = value
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '-')
                    .collect();
                if let Ok(n) = digits.parse::<i64>() {
                    return Value::from(n);
                }
            }
        }
        rest = &rest[at + 4..];
    }
    Value::Null
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
