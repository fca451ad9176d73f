//! What the server says around the form: notices above it, help under
//! each field, and where a live monitor's numbers came from.

use idem_core::scenario::Field;
// What only the server's half of this module uses.
#[cfg(feature = "ssr")]
use super::form::TYPED_KEY;
#[cfg(feature = "ssr")]
use crate::i18n::{field_label, tr};
#[cfg(feature = "ssr")]
use idem_core::locale::Locale;
#[cfg(feature = "ssr")]
use idem_core::scenario::Scenario;

/// Markup in both languages, the one the page is not in hidden by the
/// stylesheet (`.bi [lang]`), so switching the language in place needs no
/// copy of the text in the wasm.
#[cfg(feature = "ssr")]
pub fn bilingual(pt: &str, en: &str) -> String {
    use crate::markup::esc;
    format!(
        "<span lang=\"pt-BR\">{}</span><span lang=\"en-US\">{}</span>",
        esc(pt),
        esc(en)
    )
}

/// The notices above the form (server only; empty in the browser, where
/// hydration keeps the server's): the live monitor's banner, and why a link
/// is not a scenario when no field can say it (a version, currency, unit,
/// model id or date it cannot take; the server answers such a link 422).
pub(crate) fn notices_html(initial: &[(String, String)]) -> String {
    #[cfg(feature = "ssr")]
    {
        let mut out = String::new();
        let pairs = || initial.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let read = Scenario::from_query(pairs());
        if let Some(origin) = live_origin(initial) {
            let start = read.as_ref().ok();
            out.push_str(&format!(
                "<p class=\"saved-banner\" id=\"live-banner\">{}</p>",
                bilingual(
                    &origin.text(start, Locale::PtBr),
                    &origin.text(start, Locale::EnUs)
                )
            ));
        }
        let typed = initial.iter().any(|(k, _)| k == TYPED_KEY);
        if let (Err(e), false) = (&read, typed) {
            // Refused fields, and a rate's date, are said under the field.
            if !matches!(
                e,
                idem_core::scenario::QueryError::Fields(_)
                    | idem_core::scenario::QueryError::Date(_)
            ) {
                let why = |l| {
                    format!(
                        "{}: {}",
                        tr(
                            l,
                            "Este link não é um cenário",
                            "This link is not a scenario"
                        ),
                        crate::i18n::query_error_text(e, l)
                    )
                };
                out.push_str(&format!(
                    "<p class=\"scenario-error\" id=\"link-error\" role=\"alert\">{}</p>",
                    bilingual(&why(Locale::PtBr), &why(Locale::EnUs))
                ));
            }
        }
        out
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = initial;
        String::new()
    }
}

/// A field's help line in both languages (server only, like the notices).
pub(crate) fn help_html(f: Field) -> String {
    #[cfg(feature = "ssr")]
    {
        bilingual(
            crate::i18n::field_help(f, Locale::PtBr),
            crate::i18n::field_help(f, Locale::EnUs),
        )
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = f;
        String::new()
    }
}

/// Where a scenario came from when the live monitor's "use these numbers"
/// opened it (`src=live` and its `lw`, `li`, `lt`, `la` keys).
#[cfg(feature = "ssr")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveOrigin {
    window: String,
    intents: String,
    tenant: Option<String>,
    action: Option<String>,
}

/// The live monitor's provenance keys of a link, if it came from there.
#[cfg(feature = "ssr")]
pub fn live_origin(pairs: &[(String, String)]) -> Option<LiveOrigin> {
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    (get("src")?.as_str() == "live").then(|| LiveOrigin {
        window: get("lw").unwrap_or_default(),
        intents: get("li").unwrap_or_default(),
        tenant: get("lt").filter(|t| !t.is_empty()),
        action: get("la").filter(|a| !a.is_empty()),
    })
}

#[cfg(feature = "ssr")]
impl LiveOrigin {
    /// The banner: what came from the monitor, how the window was scaled,
    /// and which inputs are still the reference scenario's.
    pub fn text(&self, s: Option<&Scenario>, l: Locale) -> String {
        let (window, factor) = match self.window.as_str() {
            "24h" => (tr(l, "últimas 24 h", "last 24 h"), "×30"),
            "7d" => (tr(l, "últimos 7 dias", "last 7 days"), "×30/7"),
            "30d" => (tr(l, "últimos 30 dias", "last 30 days"), "×1"),
            _ => (tr(l, "janela desconhecida", "unknown window"), "?"),
        };
        let all = tr(l, "todos", "all");
        let reference: Vec<&str> = s
            .map(|s| {
                Field::ALL
                    .into_iter()
                    .filter(|f| !matches!(f, Field::Conversations | Field::DuplicateRate))
                    .filter(|f| f.get(s).is_some() && f.get(s) == f.default_value())
                    .map(|f| field_label(f, l))
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "{} {}, {} {}, {window}: {} {} ({factor}) {}. {} {}.",
            tr(l, "Números do monitor ao vivo — tenant", "Numbers from the live monitor — tenant"),
            self.tenant.as_deref().unwrap_or(all),
            tr(l, "ação", "action"),
            self.action.as_deref().unwrap_or(tr(
                l,
                "todas as de negócio (sem http e *)",
                "every business action (not http nor *)"
            )),
            self.intents,
            tr(l, "intenções escaladas para um mês", "intents scaled to a month"),
            tr(
                l,
                "= conversas por mês; taxa de duplicatas = intenções reentregues que o idem absorveu",
                "= conversations per month; duplicate rate = redelivered intents idem absorbed"
            ),
            tr(
                l,
                "Ainda valores de referência, ajuste ao seu contrato:",
                "Still reference values, set them to your contract:"
            ),
            reference.join(", "),
        )
    }
}
