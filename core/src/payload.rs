//! A candidate payload, parsed from JSON text without ever turning a number
//! into a binary float: each field keeps its raw JSON text until a rule reads
//! it, so `42321.83` reaches the money rule as the digits that were sent.

use crate::Error;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A JSON object's fields, borrowed from the text they were parsed from.
#[derive(Debug, Clone)]
pub struct Payload<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
    /// The whole object's text as it was sent, when it was parsed from text:
    /// what a worker acts on is this, in its own names and formats, never
    /// the normalized forms the key is derived from.
    source: Option<&'a str>,
}

/// One field's value, as a rule sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// A JSON string, unescaped.
    Str(Cow<'a, str>),
    /// A JSON number, as its exact source text.
    Num(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// An array or an object.
    Composite(&'static str),
}

impl FieldValue<'_> {
    /// The JSON type's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            FieldValue::Str(_) => "a string",
            FieldValue::Num(_) => "a number",
            FieldValue::Bool(_) => "a boolean",
            FieldValue::Null => "null",
            FieldValue::Composite(k) => k,
        }
    }
}

impl<'a> Payload<'a> {
    /// Parses a JSON object. Fails with a message when the text is not JSON
    /// or not an object, or nests deeper than [`crate::json::MAX_DEPTH`].
    pub fn from_json(text: &'a str) -> Result<Self, Error> {
        crate::json::check_depth(text.as_bytes(), crate::json::MAX_DEPTH)
            .map_err(Error::TooDeep)?;
        let mut p: Self = serde_json::from_str(text).map_err(|e| Error::Payload(e.to_string()))?;
        p.source = Some(text);
        Ok(p)
    }

    /// The object's JSON text as it was sent (`None` when it was not parsed
    /// from text of its own, as when it was deserialized inside another
    /// document).
    pub fn source(&self) -> Option<&'a str> {
        self.source
    }

    /// Wraps an already-parsed raw object.
    pub fn from_raw(raw: &'a RawValue) -> Result<Self, Error> {
        Self::from_json(raw.get())
    }

    /// The raw JSON text of a field; with duplicate names the last one wins,
    /// as in Python's and JavaScript's JSON parsers.
    pub fn raw(&self, name: &str) -> Option<&'a RawValue> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }

    /// A field's value, or `None` when the payload does not have it.
    pub fn get(&self, name: &str) -> Option<FieldValue<'a>> {
        self.raw(name).map(classify)
    }

    /// Field names in the order they were sent.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_ref())
    }
}

fn classify(raw: &RawValue) -> FieldValue<'_> {
    let text = raw.get();
    match text.as_bytes().first() {
        // No backslash: the string's text is its value, no parsing needed.
        Some(b'"') if !text.contains('\\') && text.len() >= 2 => {
            FieldValue::Str(Cow::Borrowed(&text[1..text.len() - 1]))
        }
        Some(b'"') => match serde_json::from_str::<CowStr<'_>>(text) {
            Ok(s) => FieldValue::Str(s.0),
            // RawValue already validated the string; this cannot fail, but
            // an unreadable string is still better reported than panicked on.
            Err(_) => FieldValue::Composite("an unreadable string"),
        },
        Some(b't') => FieldValue::Bool(true),
        Some(b'f') => FieldValue::Bool(false),
        Some(b'n') => FieldValue::Null,
        Some(b'[') => FieldValue::Composite("an array"),
        Some(b'{') => FieldValue::Composite("an object"),
        _ => FieldValue::Num(text),
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Payload<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Payload<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut fields = Vec::with_capacity(m.size_hint().unwrap_or(6));
                while let Some(k) = m.next_key::<CowStr<'de>>()? {
                    let v: &'de RawValue = m.next_value()?;
                    fields.push((k.0, v));
                }
                Ok(Payload {
                    fields,
                    source: None,
                })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A string that borrows from the input when it holds no escapes (serde's
/// own `Cow<str>` always allocates).
struct CowStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text() {
        let p = Payload::from_json(r#"{"v": 42321.830, "s": "a\"b", "n": null}"#).unwrap();
        assert_eq!(p.get("v"), Some(FieldValue::Num("42321.830")));
        assert_eq!(p.get("s"), Some(FieldValue::Str(Cow::Borrowed("a\"b"))));
        assert_eq!(p.get("n"), Some(FieldValue::Null));
        assert_eq!(p.get("x"), None);
    }

    #[test]
    fn last_duplicate_wins_and_non_objects_fail() {
        let p = Payload::from_json(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(p.get("a"), Some(FieldValue::Num("2")));
        assert!(Payload::from_json("[1]").is_err());
        assert!(Payload::from_json("{").is_err());
    }
}
