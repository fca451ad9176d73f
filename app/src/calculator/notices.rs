//! What the server writes inside the calculator: the notices above the
//! form, the help under each field, the note on the link's model and the
//! charts' figures. The page's handler writes them (the server's
//! `http::calculator`, in maud) and provides them while the page renders;
//! hydration keeps them (it never rewrites inner HTML), so the wasm carries
//! none of their writers.

use idem_core::cost::CostOutputs;
use idem_core::locale::Locale;
use idem_core::scenario::{Field, Scenario};
use leptos::prelude::use_context;
use std::sync::Arc;

/// The server's markup for one render of the calculator (all of it
/// escaped by the server's templates).
#[derive(Clone, Debug)]
pub struct ServerMarkup {
    /// Above the form: the live monitor's banner, why a link is not a
    /// scenario.
    pub notices: String,
    /// Each field's help line, in [`Field::ALL`]'s order (shared: they
    /// are the same on every page).
    pub help: Arc<[String]>,
    /// Under the prices: the link names a model the price table lacks.
    pub model: String,
    /// The charts' figures for a computed scenario.
    pub charts: fn(&Scenario, &CostOutputs, Locale) -> String,
}

fn no_charts(_: &Scenario, _: &CostOutputs, _: Locale) -> String {
    String::new()
}

impl Default for ServerMarkup {
    fn default() -> Self {
        Self {
            notices: String::new(),
            help: Arc::from(Vec::new()),
            model: String::new(),
            charts: no_charts,
        }
    }
}

impl ServerMarkup {
    /// What the page's handler provided (nothing in the browser).
    pub(crate) fn current() -> Self {
        use_context::<Self>().unwrap_or_default()
    }

    /// Field `f`'s help line.
    pub(crate) fn help(&self, f: Field) -> String {
        self.help
            .get(super::form::idx(f))
            .cloned()
            .unwrap_or_default()
    }
}
