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

/// Python's `str.isalnum`: letters (general category L*) and numbers.
/// Rust's `is_alphanumeric` reads the Alphabetic property instead, which
/// also counts combining marks and 130 symbols (category So) drawn as
/// enclosed Latin letters: circled Ⓐ–ⓩ (U+24B6–U+24E9), and squared,
/// negative circled and negative squared A–Z (U+1F130–U+1F149,
/// U+1F150–U+1F169, U+1F170–U+1F189). Python keeps none of them. A code
/// point assigned after Python's Unicode version (14.0 in 3.11) can still
/// differ: Python sees it unassigned.
pub fn py_isalnum(c: char) -> bool {
    c.is_alphanumeric()
        && !unicode_normalization::char::is_combining_mark(c)
        && !is_enclosed_latin_letter(c)
}

/// The 130 enclosed Latin letters that are Alphabetic but not letters.
fn is_enclosed_latin_letter(c: char) -> bool {
    matches!(c,
        '\u{24B6}'..='\u{24E9}'
        | '\u{1F130}'..='\u{1F149}'
        | '\u{1F150}'..='\u{1F169}'
        | '\u{1F170}'..='\u{1F189}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enclosed_latin_letters_are_not_alphanumeric_in_python() {
        let dropped: Vec<char> = (0..=0x10FFFF_u32)
            .filter_map(char::from_u32)
            .filter(|&c| {
                c.is_alphanumeric()
                    && !unicode_normalization::char::is_combining_mark(c)
                    && !py_isalnum(c)
            })
            .collect();
        assert_eq!(dropped.len(), 130);
        assert!(dropped.contains(&'Ⓐ') && dropped.contains(&'ⓩ') && dropped.contains(&'🅰'));
        assert!(py_isalnum('a') && py_isalnum('Ж') && py_isalnum('٣') && py_isalnum('Ⅻ'));
    }
}

/// Whether `c` changes the direction text is drawn in (the Unicode
/// bidirectional controls: embeddings, overrides, isolates and the marks).
/// Text holding them can be drawn in another order than it is stored:
/// `FAT-1`, U+202E, `2-TAF` is drawn as `FAT-1FAT-2`.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200E}' | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}')
}

/// `s` with every bidirectional control written out as `<U+XXXX>`, so a
/// person sees that it is there and the text is drawn in the order it is
/// stored. Borrowed when there is none (nearly always).
pub fn reveal_bidi(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_bidi_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod bidi_tests {
    use super::*;

    #[test]
    fn bidi_controls_are_written_out() {
        assert_eq!(reveal_bidi("FAT-1"), "FAT-1");
        assert!(matches!(reveal_bidi("FAT-1"), Cow::Borrowed(_)));
        assert_eq!(reveal_bidi("FAT-1\u{202E}2-TAF"), "FAT-1<U+202E>2-TAF");
        assert_eq!(
            reveal_bidi("\u{2066}a\u{2069}\u{200F}"),
            "<U+2066>a<U+2069><U+200F>"
        );
        assert_eq!(
            reveal_bidi("العربية"),
            "العربية",
            "right-to-left letters stay"
        );
    }
}
