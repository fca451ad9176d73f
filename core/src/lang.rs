//! The page languages idem writes in: a leaf every other module may use.

use serde::{Deserialize, Serialize};

/// A display locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
pub enum Locale {
    /// Brazilian Portuguese: `1.234,56`.
    #[default]
    #[serde(rename = "pt-BR")]
    PtBr,
    /// US English: `1,234.56`.
    #[serde(rename = "en-US")]
    EnUs,
}

impl Locale {
    /// The BCP 47 tag.
    pub fn tag(self) -> &'static str {
        match self {
            Locale::PtBr => "pt-BR",
            Locale::EnUs => "en-US",
        }
    }

    /// Reads a tag, case-insensitively (`pt-BR`, `pt`, `en-US`, `en`).
    pub fn from_tag(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pt-br" | "pt" | "pt_br" => Some(Locale::PtBr),
            "en-us" | "en" | "en_us" => Some(Locale::EnUs),
            _ => None,
        }
    }

    /// The decimal mark and the thousands separator, in that order.
    pub fn separators(self) -> (char, char) {
        match self {
            Locale::PtBr => (',', '.'),
            Locale::EnUs => ('.', ','),
        }
    }
}
