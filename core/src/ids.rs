//! Identifier newtypes: parsed once at the edge, trusted everywhere after.

use crate::Error;
use std::fmt;

/// Longest tenant id or action type accepted, in characters.
pub const MAX_ID_CHARS: usize = 128;

fn check_id(s: &str, what: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{what} must not be empty"));
    }
    if s.chars().count() > MAX_ID_CHARS {
        return Err(format!("{what} must be at most {MAX_ID_CHARS} characters"));
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{what} must not contain control characters"));
    }
    // Refused rather than trimmed: trimming silently would make two spellings
    // of one tenant share keys, or one spelling split them.
    if s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return Err(format!("{what} must not start or end with whitespace"));
    }
    Ok(())
}

/// A tenant: the first component of every key and every primary key.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct TenantId(String);

impl TenantId {
    /// The tenant id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for TenantId {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        check_id(s, "tenant id").map_err(Error::Tenant)?;
        Ok(Self(s.to_owned()))
    }
}

impl TryFrom<String> for TenantId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        check_id(&s, "tenant id").map_err(Error::Tenant)?;
        Ok(Self(s))
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TenantId({:?})", self.0)
    }
}

/// An action type name such as `pix.cobranca`: lowercase ASCII letters,
/// digits, `.`, `_` and `-`, so it can travel in URLs and metric labels.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct ActionType(String);

impl ActionType {
    /// The action type as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for ActionType {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        check_id(s, "action type").map_err(Error::ActionType)?;
        if !s
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        {
            return Err(Error::ActionType(format!(
                "`{s}` may only hold lowercase ASCII letters, digits, `.`, `_` and `-`"
            )));
        }
        Ok(Self(s.to_owned()))
    }
}

impl TryFrom<String> for ActionType {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::try_from(s.as_str())
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActionType({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_checked() {
        assert!(TenantId::try_from("loja-do-zé").is_ok());
        assert!(TenantId::try_from("").is_err());
        assert!(TenantId::try_from(" acme").is_err());
        assert!(TenantId::try_from("a\nb").is_err());
        assert!(TenantId::try_from("x".repeat(129)).is_err());
    }

    #[test]
    fn action_types_are_checked() {
        assert!(ActionType::try_from("pix.cobranca").is_ok());
        assert!(ActionType::try_from("Pix.Cobranca").is_err());
        assert!(ActionType::try_from("pix cobranca").is_err());
    }
}
