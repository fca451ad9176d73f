//! Pieces of markup that several server-rendered pages share, written
//! with maud (every interpolated value escaped by the template). A leaf.

use app::i18n::tr;
use idem_core::locale::Locale;
use maud::{html, Markup};

/// A wide table in its own scroll box (`.table-scroll`), so a phone scrolls
/// the table and not the page, after a hint that narrow screens show. The
/// box takes the keyboard's focus and is named, so the columns off to the
/// side are reachable without a mouse.
pub fn scrolling(label: &str, l: Locale, table: Markup) -> Markup {
    html! {
        p class="scroll-hint" aria-hidden="true" {
            (tr(l, "Deslize a tabela para o lado para ver todas as colunas →", "Swipe the table sideways to see every column →"))
        }
        div class="table-scroll" tabindex="0" role="region" aria-label=(label) { (table) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_is_named_and_escapes_its_label() {
        let m = scrolling("<b>&", Locale::EnUs, html! { table {} }).into_string();
        assert!(
            m.contains(r#"<div class="table-scroll" tabindex="0" role="region" aria-label="&lt;b&gt;&amp;"><table></table></div>"#),
            "{m}"
        );
        assert!(m.contains("Swipe the table sideways"));
    }
}
