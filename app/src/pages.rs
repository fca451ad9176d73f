//! The calculator as a page: the element the browser hydrates it into, and
//! what it starts from.

use crate::calculator::Calculator;
use crate::SavedView;
use leptos::prelude::*;

/// The calculator inside the element the browser hydrates it into
/// ([`crate::CALCULATOR_ROOT`]; `display: contents`, so it lays out as if
/// it were not there).
#[component]
pub fn CalculatorRoot(
    /// The query pairs to start from.
    initial: Vec<(String, String)>,
    /// The saved scenario the page shows (`/s/{id}`).
    saved: Option<SavedView>,
) -> impl IntoView {
    view! {
        <div id=crate::CALCULATOR_ROOT class="hydrate-root">
            <Calculator initial saved/>
        </div>
    }
}

/// A saved scenario's stored query as the calculator's starting pairs, split
/// as stored (the server and the browser both start from these).
pub fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}
