//! The nesting bound on every JSON idem reads from a client.
//!
//! serde_json's own parser stops at 128 levels, but its `RawValue` skips a
//! value with a loop of its own and no limit, and idem's recursive walks
//! (the request fingerprint's canonical form, payload fields) then recurse
//! once per level: 8,000 levels fit in 16 KB and overflow a worker thread's
//! stack, which aborts the process. [`check_depth`] measures the nesting
//! with a counter, never recursion, so it is safe on any input, and every
//! reader of client JSON calls it before anything recursive sees the text.

/// The deepest nesting of arrays and objects idem accepts from a client.
/// Intent payloads are flat objects and API bodies nest two or three
/// levels; 64 leaves room for any honest document and keeps every
/// recursive walk far from the stack's end.
pub const MAX_DEPTH: usize = 64;

/// JSON text that nests deeper than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// The limit that was passed.
    pub limit: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the JSON nests arrays and objects more than {} levels deep (idem reads at most {} levels)",
            self.limit, self.limit
        )
    }
}

impl std::error::Error for TooDeep {}

/// Fails when `text` opens more than `limit` arrays or objects inside one
/// another. Brackets inside strings (escapes included) do not count. The
/// text need not be valid JSON: this bounds what a parser will be asked to
/// do, and the parser still judges the syntax. One pass, no allocation.
pub fn check_depth(text: &[u8], limit: usize) -> Result<(), TooDeep> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Err(TooDeep { limit });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The first object member name that appears twice in one object, at any
/// depth, with the path to its object (`$`, `$.payload`, `$.items[2]`), or
/// `None` when every object names each member once (or the text is not
/// JSON: the parser judges that). Parsers disagree on duplicates (most keep
/// the last, some the first, some refuse), so idem refuses them wherever a
/// client's JSON enters: one reading for the fingerprint, the handler and
/// whoever reads the stored text later. Call [`check_depth`] first: the
/// walk recurses once per level.
pub fn duplicate_member(text: &str) -> Option<(String, String)> {
    let raw = serde_json::from_str::<&serde_json::value::RawValue>(text).ok()?;
    find_duplicate(raw, "$")
}

fn find_duplicate(raw: &serde_json::value::RawValue, at: &str) -> Option<(String, String)> {
    use serde_json::value::RawValue;
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            let members = serde_json::from_str::<Members<'_>>(text).ok()?.0;
            let mut seen = std::collections::BTreeSet::new();
            for (name, _) in &members {
                if !seen.insert(name.as_str()) {
                    return Some((name.clone(), at.to_owned()));
                }
            }
            members
                .iter()
                .find_map(|(name, v)| find_duplicate(v, &format!("{at}.{name}")))
        }
        Some(b'[') => {
            let items = serde_json::from_str::<Vec<&RawValue>>(text).ok()?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| find_duplicate(v, &format!("{at}[{i}]")))
        }
        _ => None,
    }
}

/// An object's members in the order sent, duplicates kept.
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Members<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) =
                    m.next_entry::<String, &'de serde_json::value::RawValue>()?
                {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn the_limit_is_inclusive() {
        assert_eq!(check_depth(nested(64).as_bytes(), MAX_DEPTH), Ok(()));
        assert_eq!(
            check_depth(nested(65).as_bytes(), MAX_DEPTH),
            Err(TooDeep { limit: 64 })
        );
        let objects = format!("{}1{}", r#"{"a":"#.repeat(65), "}".repeat(65));
        assert!(check_depth(objects.as_bytes(), MAX_DEPTH).is_err());
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        let s = format!(r#"{{"a":"{}\"{}"}}"#, "[".repeat(500), "{".repeat(500));
        assert_eq!(check_depth(s.as_bytes(), 2), Ok(()));
        // An escaped backslash ends the escape: the quote after it closes.
        let s = r#"["\\", [[[]]]]"#;
        assert_eq!(check_depth(s.as_bytes(), 3), Err(TooDeep { limit: 3 }));
        assert_eq!(check_depth(s.as_bytes(), 4), Ok(()));
    }

    #[test]
    fn unbalanced_or_hostile_text_never_panics() {
        for text in ["]]]]", "}", "\"", "\\", "[\"\\", "", "{{{{"] {
            let _ = check_depth(text.as_bytes(), 2);
        }
        let deep = nested(1_000_000);
        assert!(check_depth(deep.as_bytes(), MAX_DEPTH).is_err());
    }

    #[test]
    fn duplicate_members_are_found_at_any_depth() {
        assert_eq!(duplicate_member(r#"{"a":1,"b":{"c":[1,{"d":2}]}}"#), None);
        assert_eq!(
            duplicate_member(r#"{"a":1,"a":2}"#),
            Some(("a".into(), "$".into()))
        );
        assert_eq!(
            duplicate_member(r#"{"p":{"x":1,"y":2,"\u0078":3}}"#),
            Some(("x".into(), "$.p".into())),
            "an escaped name is the same name"
        );
        assert_eq!(
            duplicate_member(r#"[0,{"k":[{"z":1,"z":1}]}]"#),
            Some(("z".into(), "$[1].k[0]".into()))
        );
        assert_eq!(duplicate_member("not json"), None);
        assert_eq!(duplicate_member(r#""{\"a\":1,\"a\":2}""#), None);
    }

    #[test]
    fn the_message_names_the_limit() {
        let e = check_depth(nested(9).as_bytes(), 8).unwrap_err();
        assert!(e.to_string().contains("more than 8 levels"), "{e}");
    }
}
