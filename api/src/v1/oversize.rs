//! A body too large to keep, read for what still matters: its top-level
//! `token` (so the action can be marked uncertain, whatever the size and
//! wherever the member is) and the first bytes of its `error` (kept cut).
//! One pass over the bytes as they arrive, holding only what it keeps:
//! nothing of the large value itself.
//!
//! Not a JSON validator: a body this large was never going to be stored,
//! and a token read from a body that later turns out malformed fences like
//! any other (a stale one is refused by the store).

/// The largest token text read (an `i64` has at most 20 characters).
const TOKEN_CHARS: usize = 24;
/// The longest member name remembered (`token`, `error`).
const NAME_CHARS: usize = 16;

/// What the scan found so far.
#[derive(Debug, Default)]
pub struct Scan {
    /// Bytes seen.
    pub size: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the member name being read or just read, and whether a
    /// `:` followed it (then the value is being read).
    name: Vec<u8>,
    name_long: bool,
    expect: Expect,
    value: Option<Member>,
    token_text: Vec<u8>,
    /// The top-level `token`, once read whole.
    pub token: Option<i64>,
    error_raw: Vec<u8>,
    error_cap: usize,
    error_done: bool,
    /// The `error` string's length in bytes as sent (escapes included).
    pub error_len: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A member name (or the object's end).
    #[default]
    Name,
    /// The `:` after a name.
    Colon,
    /// A value.
    Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Token,
    Error,
    Other,
}

impl Scan {
    /// A scan keeping up to `error_cap` bytes of the `error` member.
    pub fn new(error_cap: usize) -> Self {
        Self {
            error_cap,
            ..Self::default()
        }
    }

    /// Whether nothing more is needed: the token, and the error's start
    /// (when one is kept).
    pub fn has_enough(&self) -> bool {
        self.token.is_some() && (self.error_cap == 0 || self.error_done)
    }

    /// Reads `bytes`, the body's next ones.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.size += 1;
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            let top_name = self.depth == 1 && self.expect == Expect::Name;
            let error_value = self.depth == 1 && self.value == Some(Member::Error);
            if error_value {
                self.error_len += 1;
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if error_value {
                    self.error_len -= 1; // the closing quote
                    self.error_done = true;
                }
                if top_name {
                    self.expect = Expect::Colon;
                }
                return;
            }
            if top_name {
                if self.name.len() < NAME_CHARS {
                    self.name.push(b);
                } else {
                    self.name_long = true;
                }
            } else if error_value && self.error_raw.len() < self.error_cap {
                self.error_raw.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect == Expect::Name {
                    self.name.clear();
                    self.name_long = false;
                }
                if self.depth == 1 && self.expect == Expect::Value {
                    self.begin_value();
                }
            }
            b'{' | b'[' => {
                if self.depth == 1 && self.expect == Expect::Value {
                    self.begin_value();
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 && self.expect == Expect::Colon => {
                self.expect = Expect::Value;
                self.value = None;
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect = Expect::Name;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            other => {
                if self.depth == 1 && self.expect == Expect::Value {
                    self.begin_value();
                }
                if self.depth == 1
                    && self.value == Some(Member::Token)
                    && self.token_text.len() < TOKEN_CHARS
                {
                    self.token_text.push(other);
                }
            }
        }
    }

    /// The value of the member just named starts (its first byte).
    fn begin_value(&mut self) {
        if self.value.is_some() {
            return;
        }
        let member = match (self.name_long, self.name.as_slice()) {
            (false, b"token") => Member::Token,
            (false, b"error") => Member::Error,
            _ => Member::Other,
        };
        self.value = Some(member);
        if member == Member::Token {
            self.token_text.clear();
        }
    }

    /// The top-level value ends (a `,` or the object's `}`).
    fn end_value(&mut self) {
        if self.value == Some(Member::Token) && self.token.is_none() {
            self.token = std::str::from_utf8(&self.token_text)
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok());
        }
        self.value = None;
    }

    /// The `error` member's start, decoded, when one was read.
    pub fn error_start(&self) -> Option<String> {
        if self.error_len == 0 && self.error_raw.is_empty() {
            return None;
        }
        let mut raw = self.error_raw.clone();
        // A cut can end inside an escape: drop back to before it.
        if let Some(at) = raw.iter().rposition(|&b| b == b'\\') {
            let tail = &raw[at..];
            let whole = match tail.get(1) {
                Some(b'u') => tail.len() >= 6,
                Some(_) => tail.len() >= 2,
                None => false,
            };
            // An even run of backslashes before `at` would make this one a
            // literal: count them.
            let run = raw[..at].iter().rev().take_while(|&&b| b == b'\\').count();
            if !whole && run % 2 == 0 {
                raw.truncate(at);
            }
        }
        let mut quoted = Vec::with_capacity(raw.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&raw);
        quoted.push(b'"');
        Some(
            serde_json::from_slice::<String>(&quoted)
                .unwrap_or_else(|_| String::from_utf8_lossy(&raw).into_owned()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(body: &str, cap: usize, chunk: usize) -> Scan {
        let mut s = Scan::new(cap);
        for part in body.as_bytes().chunks(chunk.max(1)) {
            s.feed(part);
        }
        s
    }

    #[test]
    fn the_token_is_found_wherever_it_is_and_however_the_body_arrives() {
        let big = "x".repeat(10_000);
        let cases = [
            format!(r#"{{"token": 7, "response": {{"blob": "{big}"}}}}"#),
            format!(
                r#"{{"response": {{"token": 99, "blob": ["{big}", {{"token": 5}}]}}, "token":7}}"#
            ),
            format!(r#"{{ "response" : "{big}\"token\": 3" , "token" :  7 }}"#),
            format!(r#"{{"error": "{big}", "retryable": true, "token": 7}}"#),
            r#"{"token":7}"#.to_string(),
        ];
        for body in &cases {
            for chunk in [1, 3, 64, 100_000] {
                let s = scan(body, 0, chunk);
                assert_eq!(s.token, Some(7), "chunk {chunk}: {:.120}", body);
                assert_eq!(s.size, body.len());
            }
        }
    }

    #[test]
    fn no_token_is_invented() {
        for body in [
            r#"{"response": {"token": 7}}"#,
            r#"{"tokens": 7}"#,
            r#"{"token": "7"}"#,
            r#"{"token": 7.5}"#,
            r#"{"token": "#,
            r#"["token", 7]"#,
        ] {
            assert_eq!(scan(body, 0, 2).token, None, "{body}");
        }
    }

    #[test]
    fn hostile_bodies_are_read_in_one_pass_and_give_nothing() {
        // Nesting two million deep (no recursion here), NUL bytes, a
        // string that never closes, unbalanced closers: no token, no panic.
        let deep = "[".repeat(2_000_000);
        let nul = format!("{{\"x\": \"{}\", \"tok\u{0}en\": 7}}", "\u{0}".repeat(1000));
        let open = format!("{{\"error\": \"{}", "e".repeat(100_000));
        let closers = "]]]]}}}}".repeat(1000);
        for body in [deep.as_str(), nul.as_str(), open.as_str(), closers.as_str()] {
            let s = scan(body, 64, 4096);
            assert_eq!(s.token, None);
            assert_eq!(s.size, body.len());
        }
        // A token inside a nested object at any depth is never the body's.
        let nested = format!(
            "{{\"a\": {}{{\"token\": 9}}{}}}",
            "[".repeat(1000),
            "]".repeat(1000)
        );
        assert_eq!(scan(&nested, 0, 7).token, None);
    }

    #[test]
    fn the_error_is_kept_cut_and_decoded() {
        let body = r#"{"token": 3, "error": "caf\u00e9 \"quoted\" \\ end", "retryable": false}"#;
        let s = scan(body, 1_000, 5);
        assert_eq!(s.error_start().as_deref(), Some("café \"quoted\" \\ end"));
        // Cut inside an escape: the escape is left out, not garbled.
        for cap in 1..30 {
            let s = scan(body, cap, 7);
            let start = s.error_start().unwrap();
            assert!(
                "café \"quoted\" \\ end".starts_with(&start),
                "{cap}: {start:?}"
            );
        }
        assert!(scan(body, 4, 1).has_enough());
        assert!(!scan(r#"{"token": 3, "error": "abc"#, 100, 1).has_enough());
    }
}
