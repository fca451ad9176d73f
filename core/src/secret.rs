//! The HMAC secret, wrapped so it never reaches a log.

use crate::Error;
use std::fmt;
use zeroize::Zeroizing;

/// The `IDEMPOTENCY_HMAC_KEY` secret. Its `Debug` and `Display` print
/// `[redacted]`; the bytes are wiped from memory on drop.
#[derive(Clone)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Wraps raw secret bytes. An empty secret is refused: HMAC with an empty
    /// key would make every key guessable.
    pub fn new(bytes: Vec<u8>) -> Result<Self, Error> {
        if bytes.is_empty() {
            return Err(Error::Secret("the secret must not be empty".into()));
        }
        Ok(Self(Zeroizing::new(bytes)))
    }

    /// The secret bytes, for keying the HMAC.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_is_redacted() {
        let s = Secret::new(b"hunter2-very-secret".to_vec()).unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(!format!("{s}").contains("hunter2"));
        assert!(Secret::new(Vec::new()).is_err());
    }
}
