//! The live duplicate monitor: the `/live` page and the compact panel on
//! the calculator.
//!
//! The server renders both whole, as markup (the server crate's
//! `http::live::render`; none of it is in the wasm),
//! and streams fresh numbers over server-sent events; `public/live.js`
//! swaps them in and shows whether the feed is live, stale or disconnected.
//! The browser does not hydrate them at all (see the crate's
//! documentation): the wasm has no copy of the rendering.

use leptos::prelude::*;

/// `/live` and `/live/actions/{key}`: duplicates, divergences and
/// uncertain actions as they happen, as the server rendered them.
#[component]
pub fn LivePage(
    /// The page's body.
    html: String,
) -> impl IntoView {
    view! { <div id="live-page" inner_html=html></div> }
}

/// The compact panel under the calculator, as the server rendered it.
#[component]
pub fn LivePanel(
    /// The panel's contents.
    html: String,
) -> impl IntoView {
    view! { <aside class="live-panel-box" aria-labelledby="live-panel-title" inner_html=html></aside> }
}
