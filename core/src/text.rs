//! Text primitives that key derivation shares: Python's `strip`, `lower`
//! and `isalnum` as the reference derivation applies them, and Unicode NFC.
//! A leaf: the field rules (`normalize`) and the Pix key rules (`pix`)
//! both build on it.

use std::borrow::Cow;

/// Python's `str.isspace`, which the reference derivation's `strip()` uses:
/// Unicode White_Space plus the four information separators U+001C..U+001F.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Python's `str.lower()`, without allocating when there is nothing to lower.
pub fn lower(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

/// Unicode NFC, without allocating when the text is already composed (the
/// quick check answers yes for all ASCII and nearly all real text).
pub fn nfc(s: &str) -> Cow<'_, str> {
    use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    match is_nfc_quick(s.chars()) {
        IsNormalized::Yes => Cow::Borrowed(s),
        _ => Cow::Owned(s.nfc().collect()),
    }
}

/// Python's `str.isalnum`: letters and numbers, but not the combining marks
/// that Rust's `is_alphanumeric` also counts as alphabetic.
pub fn py_isalnum(c: char) -> bool {
    c.is_alphanumeric() && !unicode_normalization::char::is_combining_mark(c)
}
