//! Markup the server writes as text: the charts, the comparison table and
//! the live monitor are escaped strings set as inner HTML, which costs the
//! wasm far less than typed views (docs/PERFORMANCE.md).

use crate::i18n::tr;
use idem_core::locale::Locale;

/// Opens the box a wide table scrolls in (`.table-scroll`), after a hint
/// that narrow screens show. The box takes the keyboard's focus and is
/// named, so the columns off to the side are reachable without a mouse.
/// Close it with [`SCROLL_CLOSE`].
pub fn scroll_open(label: &str, l: Locale) -> String {
    format!(
        "<p class=\"scroll-hint\" aria-hidden=\"true\">{}</p><div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{}\">",
        esc(scroll_hint(l)),
        esc(label)
    )
}

/// The hint above a table that scrolls sideways (shown on narrow screens);
/// the server's maud pages write the same box around it.
pub fn scroll_hint(l: Locale) -> &'static str {
    tr(
        l,
        "Deslize a tabela para o lado para ver todas as colunas →",
        "Swipe the table sideways to see every column →",
    )
}

/// Closes [`scroll_open`]'s box.
pub const SCROLL_CLOSE: &str = "</div>";

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_special_character_is_escaped() {
        assert_eq!(
            super::esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(super::esc("R$ 1.782,00 — ok"), "R$ 1.782,00 — ok");
    }
}
