//! What the server writes inside the calculator ([`app::calculator::ServerMarkup`]):
//! the notices above the form, each field's help line, the note on a
//! link's model, and the charts' figures. Text in both languages is
//! written once, both spans in the page, and the stylesheet shows the
//! page's (`.bi [lang]`), so switching the language in place needs no copy
//! of the text in the wasm.

use app::calculator::ServerMarkup;
use app::i18n::{field_label, tr};
use idem_core::cost::CostOutputs;
use idem_core::locale::Locale;
use idem_core::scenario::{Field, QueryError, Scenario};
use maud::{html, Markup};
use std::sync::{Arc, LazyLock};

/// The calculator's server markup for a page that starts from `initial`
/// (the address's pairs, or a saved scenario's), in locale `l`.
pub fn markup(initial: &[(String, String)], l: Locale) -> ServerMarkup {
    ServerMarkup {
        notices: notices(initial).into_string(),
        help: HELP.clone(),
        model: model_notice(initial, l),
        charts,
    }
}

/// Each field's help line, the same for every page: written once.
static HELP: LazyLock<Arc<[String]>> = LazyLock::new(|| {
    Field::ALL
        .into_iter()
        .map(|f| {
            bilingual(
                app::i18n::field_help(f, Locale::PtBr),
                app::i18n::field_help(f, Locale::EnUs),
            )
            .into_string()
        })
        .collect()
});

fn charts(s: &Scenario, o: &CostOutputs, l: Locale) -> String {
    crate::figures::charts_html(s, o, l).into_string()
}

/// Text in both languages, the one the page is not in hidden by the
/// stylesheet.
pub fn bilingual(pt: &str, en: &str) -> Markup {
    html! { span lang="pt-BR" { (pt) } span lang="en-US" { (en) } }
}

/// The notices above the form: the live monitor's banner, and why a link
/// is not a scenario when no field can say it (a version, currency, unit,
/// model id or date it cannot take; the page answers such a link 422).
fn notices(initial: &[(String, String)]) -> Markup {
    let pairs = || initial.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let read = Scenario::from_query(pairs());
    // Refused fields, and a rate's date, are said under the field; the
    // rest (a currency, unit or version the link cannot take) here, typed
    // or not: a form edited by hand can carry them too.
    let why = match &read {
        Err(e) if !matches!(e, QueryError::Fields(_) | QueryError::Date(_)) => {
            let why = |l| {
                format!(
                    "{}: {}",
                    tr(
                        l,
                        "Este link não é um cenário",
                        "This link is not a scenario"
                    ),
                    app::i18n::query_error_text(e, l)
                )
            };
            Some((why(Locale::PtBr), why(Locale::EnUs)))
        }
        _ => None,
    };
    html! {
        @if let Some(origin) = live_origin(initial) {
            @let start = read.as_ref().ok();
            p class="saved-banner" id="live-banner" {
                (bilingual(&origin.text(start, Locale::PtBr), &origin.text(start, Locale::EnUs)))
            }
        }
        @if let Some((pt, en)) = why {
            p class="scenario-error" id="link-error" role="alert" { (bilingual(&pt, &en)) }
        }
    }
}

/// The note under the prices when the link names a model the bundled price
/// table does not have (a newer or older table dropped or renamed it): the
/// link's prices still hold, since the link carries them.
fn model_notice(initial: &[(String, String)], l: Locale) -> String {
    let model = initial
        .iter()
        .rev()
        .find(|(k, _)| k == "m")
        .map(|(_, v)| v.as_str())
        .filter(|m| !m.is_empty());
    let table = crate::prices::table();
    let Some(model) = model.filter(|m| table.get(m).is_none()) else {
        return String::new();
    };
    let text = match l {
        Locale::PtBr => format!(
            "O modelo «{model}» não está na tabela de preços deste servidor (genai-prices de {}): os preços do link valem como estão.",
            table.date
        ),
        Locale::EnUs => format!(
            "The model “{model}” is not in this server's price table (genai-prices of {}): the link's prices hold as they are.",
            table.date
        ),
    };
    html! { (text) }.into_string()
}

/// Where a scenario came from when the live monitor's "use these numbers"
/// opened it (`src=live` and its `lw`, `li`, `lt`, `la` keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveOrigin {
    window: String,
    intents: String,
    tenant: Option<String>,
    action: Option<String>,
}

/// The live monitor's provenance keys of a link, if it came from there.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(q.as_bytes()).into_owned().collect()
    }

    #[test]
    fn a_link_that_is_not_a_scenario_says_why_in_both_languages() {
        let m = markup(&pairs("v=9"), Locale::PtBr);
        assert!(m.notices.contains(r#"id="link-error""#), "{}", m.notices);
        assert!(m.notices.contains("Este link não é um cenário"));
        assert!(m.notices.contains("This link is not a scenario"));
        assert!(markup(&pairs("v=2"), Locale::PtBr).notices.is_empty());
        assert_eq!(m.help.len(), Field::ALL.len());
    }

    #[test]
    fn an_unknown_model_is_named_escaped() {
        let m = markup(&pairs("v=2&m=%3Cb%3Enope"), Locale::EnUs);
        assert!(m.model.contains("&lt;b&gt;nope"), "{}", m.model);
        assert!(!m.model.contains("<b>"));
        let live = markup(&pairs("v=2&src=live&lw=24h&li=5&lt=%3Ci%3E"), Locale::EnUs);
        assert!(live.notices.contains("&lt;i&gt;"), "{}", live.notices);
    }
}
