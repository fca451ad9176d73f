//! idem's dashboard, as Leptos components. The same code renders on the
//! server (feature `ssr`) and hydrates in the browser (feature `hydrate`).

mod calculator;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    SsrMode, StaticSegment,
};

pub use calculator::Calculator;

/// The HTML document around the app, rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="pt-BR">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.ico"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The routed application.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/idem.css"/>
        <Title text="idem — custo de chamadas duplicadas"/>
        <Router>
            <header class="top">
                <span class="brand">"idem"</span>
                <span class="tagline">"Dinheiro e chamadas de modelo que executam duas vezes"</span>
            </header>
            <main>
                // In-order streaming: the out-of-order mode emitted markers
                // that a release build failed to hydrate (see the build notes).
                <Routes fallback=|| view! { <p>"Página não encontrada."</p> }>
                    <Route path=StaticSegment("") view=Calculator ssr=SsrMode::InOrder/>
                </Routes>
            </main>
        </Router>
    }
}

/// The browser entry point: attaches to the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
    // A marker the browser tests (and curious humans) can wait on: the page
    // is interactive from here on.
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.set_attribute("data-hydrated", "true");
    }
}
