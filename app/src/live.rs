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

/// The monitor's markup for one page, as the server rendered it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveMarkup {
    /// The `/live` page's body, or the calculator panel's.
    pub html: String,
}

/// The server's markup (empty outside the server, which alone renders it).
fn live_markup() -> String {
    #[cfg(feature = "ssr")]
    {
        use_context::<LiveMarkup>().unwrap_or_default().html
    }
    #[cfg(not(feature = "ssr"))]
    {
        String::new()
    }
}

/// `/live`: duplicates, divergences and uncertain actions as they happen.
#[component]
pub fn LivePage() -> impl IntoView {
    view! { <div id="live-page" inner_html=live_markup()></div> }
}

/// The compact panel under the calculator.
#[component]
pub fn LivePanel() -> impl IntoView {
    view! { <aside class="live-panel-box" aria-labelledby="live-panel-title" inner_html=live_markup()></aside> }
}
