//! The live duplicate monitor: the `/live` page and the compact panel on
//! the calculator.
//!
//! The server renders the numbers as markup (see `render`, server only) and
//! streams fresh markup over server-sent events; `public/live.js` swaps it
//! in and shows whether the feed is live, stale or disconnected. The wasm
//! only hydrates the frame around it: the size budget has no room for a
//! second copy of the rendering in the browser, and the numbers come from
//! the server anyway.

use crate::i18n::{tr, Prefs};
use leptos::prelude::*;

/// The monitor's markup for one page, as the server rendered it: the
/// controls, the numbers, and the feed the browser subscribes to (empty
/// when the viewer may not see traffic).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveMarkup {
    /// The tenant and window form (the `/live` page only).
    pub controls: String,
    /// The numbers.
    pub html: String,
    /// The server-sent events URL, or empty.
    pub feed: String,
}

/// The page's live markup: the server's, or read back from the page
/// before hydrating so hydration renders exactly what is there.
fn live_markup(root: &'static str) -> LiveMarkup {
    #[cfg(feature = "ssr")]
    {
        let _ = root;
        use_context::<LiveMarkup>().unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        crate::browser::read_live_markup(root)
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        let _ = root;
        LiveMarkup::default()
    }
}

/// The feed-status line `live.js` keeps current; its texts travel as data
/// attributes so the script needs no translations of its own.
#[component]
fn FeedStatus(id: &'static str) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let t = move |pt: &'static str, en: &'static str| tr(locale.get(), pt, en);
    view! {
        <p
            id=id
            class="feed-status"
            role="status"
            data-state="connecting"
            data-text-connecting=move || t("conectando ao feed ao vivo…", "connecting to the live feed…")
            data-text-live=move || t("ao vivo", "live")
            data-text-reconnected=move || t("ao vivo (reconectado)", "live (reconnected)")
            data-text-stale=move || t("dados desatualizados: sem notícias do servidor há mais de 5 s", "stale: no word from the server for over 5 s")
            data-text-disconnected=move || t("desconectado: tentando reconectar…", "disconnected: trying to reconnect…")
            data-text-polling=move || t("ao vivo (consultando a cada 2 s)", "live (polling every 2 s)")
        >
            // Static text: live.js owns it from here on (it reads the
            // reactive data-text-* attributes, which follow the language).
            {tr(locale.get_untracked(), "conectando ao feed ao vivo…", "connecting to the live feed…")}
        </p>
    }
}

/// `/live`: duplicates, divergences and uncertain actions as they happen.
#[component]
pub fn LivePage() -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let m = live_markup("live-root");
    view! {
        <h1>{move || tr(locale.get(), "Monitor de duplicatas ao vivo", "Live duplicate monitor")}</h1>
        <div id="live-controls" inner_html=m.controls></div>
        <FeedStatus id="live-status"/>
        <div id="live-root" class="live" data-feed=m.feed data-status="live-status" inner_html=m.html></div>
        <script src="/live.js" defer></script>
    }
}

/// The compact panel under the calculator.
#[component]
pub fn LivePanel() -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    let m = live_markup("live-panel");
    view! {
        <aside class="live-panel-box" aria-labelledby="live-panel-title">
            <h2 id="live-panel-title">{move || tr(locale.get(), "Tráfego real (últimas 24 h)", "Real traffic (last 24 h)")}</h2>
            <FeedStatus id="live-panel-status"/>
            <div id="live-panel" data-feed=m.feed data-status="live-panel-status" inner_html=m.html></div>
            <script src="/live.js" defer></script>
        </aside>
    }
}

#[cfg(feature = "ssr")]
pub mod render;
