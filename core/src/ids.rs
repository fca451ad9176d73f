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

    /// The rule a refusal names, so a refusal for another rule fails.
    fn refusal(e: Error) -> String {
        match e {
            Error::Tenant(why) | Error::ActionType(why) => why,
            other => panic!("not an identifier refusal: {other:?}"),
        }
    }

    #[test]
    fn tenant_ids_are_checked() {
        assert_eq!(
            TenantId::try_from("loja-do-zé").unwrap().as_str(),
            "loja-do-zé"
        );
        let refused = |s: &str| refusal(TenantId::try_from(s).unwrap_err());
        assert_eq!(refused(""), "tenant id must not be empty");
        assert_eq!(
            refused(" acme"),
            "tenant id must not start or end with whitespace"
        );
        assert_eq!(
            refused("acme "),
            "tenant id must not start or end with whitespace"
        );
        assert_eq!(
            refused("a\nb"),
            "tenant id must not contain control characters"
        );
        assert_eq!(
            refused(&"x".repeat(129)),
            "tenant id must be at most 128 characters"
        );
        assert!(
            TenantId::try_from("x".repeat(128)).is_ok(),
            "128 is the limit, not past it"
        );
        assert!(matches!(
            TenantId::try_from(String::new()),
            Err(Error::Tenant(_))
        ));
    }

    #[test]
    fn action_types_are_checked() {
        assert_eq!(
            ActionType::try_from("pix.cobranca").unwrap().as_str(),
            "pix.cobranca"
        );
        let refused = |s: &str| refusal(ActionType::try_from(s).unwrap_err());
        assert_eq!(
            refused("Pix.Cobranca"),
            "`Pix.Cobranca` may only hold lowercase ASCII letters, digits, `.`, `_` and `-`"
        );
        assert_eq!(
            refused("pix cobranca"),
            "`pix cobranca` may only hold lowercase ASCII letters, digits, `.`, `_` and `-`"
        );
        assert_eq!(refused(""), "action type must not be empty");
    }
}
