//! CSV cells that a spreadsheet reads as data, never as a formula. A leaf.
//!
//! Excel, LibreOffice and Google Sheets evaluate a cell whose text starts
//! with `=`, `+`, `-` or `@` (and, after a tab or a carriage return, what
//! follows), so a reference or a customer name chosen by whoever recorded
//! the intent could run in the finance lead's spreadsheet. OWASP's advice is
//! followed: such a text cell is written with a leading `'`, which the
//! spreadsheet shows as text and hides. A number stays a number: `-5` in an
//! amount column is the number minus five, not text.

use std::borrow::Cow;

/// The cell as written: `text` unchanged, or `'` and `text` when it would
/// start a formula. Numbers (`-5`, `-0.25`, `1.234,56`) are left alone.
pub fn cell(text: &str) -> Cow<'_, str> {
    // A direction override would draw the cell in another order than the
    // file holds it: written out instead.
    if text.chars().any(idem_core::is_bidi_control) {
        return Cow::Owned(cell(&idem_core::reveal_bidi(text)).into_owned());
    }
    match text.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') if !is_number(text) => {
            Cow::Owned(format!("'{text}"))
        }
        _ => Cow::Borrowed(text),
    }
}

/// A plain decimal number as the product writes one: an optional sign,
/// digits, and `.` or `,` between digits. Anything else (letters, a second
/// sign, an operator, a space) is text.
fn is_number(text: &str) -> bool {
    let digits = text
        .strip_prefix('-')
        .or_else(|| text.strip_prefix('+'))
        .unwrap_or(text);
    let b = digits.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_digit()
        && b[b.len() - 1].is_ascii_digit()
        && b.iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b','))
}

/// An exact number as a spreadsheet of `locale` reads it: a pt-BR sheet
/// takes the decimal comma and reads `0.075` as seventy-five, so there the
/// point becomes a comma (`0,075`, `148,5`); no group separator either way
/// (`90006`), which a sheet would read as a decimal mark in the other
/// locale. Text that is not a plain exact number (a date, a unit, a model
/// name) is returned as it is.
pub fn exact_number(text: &str, pt_br: bool) -> Cow<'_, str> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let plain = !digits.is_empty()
        && digits.matches('.').count() <= 1
        && digits.bytes().all(|c| c.is_ascii_digit() || c == b'.')
        && digits.as_bytes()[0].is_ascii_digit()
        && digits.as_bytes()[digits.len() - 1].is_ascii_digit();
    if pt_br && plain && digits.contains('.') {
        Cow::Owned(text.replace('.', ","))
    } else {
        Cow::Borrowed(text)
    }
}

/// One cell as `csv::Writer::write_record` takes it.
pub struct Cell<'a>(Cow<'a, str>);

impl AsRef<[u8]> for Cell<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// [`cell`] over a whole record, for `csv::Writer::write_record`.
pub fn record<'a, I>(cells: I) -> impl Iterator<Item = Cell<'a>>
where
    I: IntoIterator<Item = &'a str>,
{
    cells.into_iter().map(|c| Cell(cell(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_become_text() {
        for f in [
            "=1+1",
            "+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
            "-",
            "=",
            "- 5",
            "-5e3",
        ] {
            assert_eq!(cell(f), format!("'{f}"), "{f:?}");
        }
    }

    #[test]
    fn numbers_and_plain_text_stay() {
        for t in [
            "-5",
            "-0.25",
            "-1.234,56",
            "+7",
            "148.5",
            "FAT-1",
            "loja",
            "",
            "R$ 1,20",
        ] {
            assert_eq!(cell(t), t, "{t:?}");
        }
    }
}
