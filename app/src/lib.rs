//! idem's dashboard, as Leptos components. The same code renders on the
//! server (feature `ssr`) and hydrates in the browser (feature `hydrate`).
//!
//! What this crate holds: the document's shell, the header ([`TopBar`]),
//! the calculator ([`Calculator`]) with its form model, and the texts in
//! both languages ([`i18n`]). The server decides which page a request is
//! and writes every page but the calculator itself, with maud
//! (`idem-server`'s `http` pages, the comparison, the monitor, the chart
//! figures); [`App`] puts the [`Page`] it chose in the shell.
//!
//! The browser hydrates two parts of a page, not the whole body: the header
//! and, where there is one, the calculator (`#calculator`). Everything else
//! is the server's markup, so the wasm carries neither a router nor the
//! views only the server renders: that halved it (docs/PERFORMANCE.md).

// Leptos views nest deeply in their types; the calculator needs more room
// than the compiler's default to name them.
#![recursion_limit = "512"]

#[cfg(feature = "hydrate")]
mod browser;
pub mod calculator;
pub mod charts;
pub mod i18n;
pub mod pages;

use i18n::{tr, Prefs, T};
use idem_core::locale::Locale;
use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use serde::{Deserialize, Serialize};

pub use calculator::Calculator;
pub use i18n::RequestLocale;

/// The cookie that carries an anonymous visitor's form token.
pub const FORM_COOKIE: &str = "idem_form";
/// The form field that carries it back.
pub const FORM_FIELD: &str = "form_token";

/// The form token of this visit (double-submit: the same value in the
/// `idem_form` cookie and in each anonymous form), which the server
/// provides while it renders. A page elsewhere can post to `/s` but cannot
/// read the cookie to copy it. The browser never needs the value: the
/// server-rendered field keeps it through hydration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FormToken(pub String);

/// The form token to render, empty when there is none (in the browser).
pub fn form_token() -> String {
    use_context::<FormToken>().map(|t| t.0).unwrap_or_default()
}

/// A saved scenario as the pages show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedView {
    /// The short id in `/s/{id}`.
    pub id: String,
    /// The name it was saved under (may be empty).
    pub name: String,
    /// The canonical query string.
    pub query: String,
    /// When it was saved, Unix milliseconds.
    pub created_ms: i64,
}

/// The saved scenarios a page names (`/s/{id}`, or `s=` ids on
/// `/compare`), looked up by the server before it renders the page.
///
/// The page carries them as data attributes (`#page-data`), and the browser
/// reads them back before hydrating, so hydration renders exactly what the
/// server did without a second request, a `Suspense` or a serializer in the
/// wasm (which the size budget has no room for).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageScenarios {
    /// The scenarios found; unknown ids are absent.
    pub found: Vec<SavedView>,
    /// The lookup failed (the database was unreachable).
    pub failed: bool,
}

impl PageScenarios {
    /// The saved scenario with this id.
    pub fn get(&self, id: &str) -> Option<&SavedView> {
        self.found.iter().find(|v| v.id == id)
    }
}

fn page_scenarios() -> PageScenarios {
    #[cfg(feature = "ssr")]
    {
        use_context::<PageScenarios>().unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        browser::read_page_scenarios()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        PageScenarios::default()
    }
}

/// The page's saved scenarios as data attributes (see [`PageScenarios`]).
#[component]
fn PageData(data: PageScenarios) -> impl IntoView {
    view! {
        <div id="page-data" hidden data-failed=data.failed.then_some("true")>
            {data
                .found
                .into_iter()
                .map(|v| {
                    view! {
                        <span
                            data-id=v.id
                            data-name=v.name
                            data-query=v.query
                            data-created=v.created_ms.to_string()
                        ></span>
                    }
                })
                .collect_view()}
        </div>
    }
}

/// The latest day a rate may be dated (`i18n::Today`): the server's, read
/// back from `<html data-today>` in the browser; empty when unknown (no
/// date is then refused for being in the future).
pub fn latest_today() -> String {
    #[cfg(feature = "ssr")]
    {
        use_context::<i18n::Today>()
            .map(|t| t.0)
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        document()
            .document_element()
            .and_then(|e| e.get_attribute("data-today"))
            .unwrap_or_default()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        String::new()
    }
}

/// The locale this page starts in: the server's choice for the request,
/// which the browser reads back from `<html lang>` so hydration renders the
/// same text.
fn initial_locale() -> Locale {
    #[cfg(feature = "ssr")]
    {
        use_context::<RequestLocale>()
            .map(|r| r.0)
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        document()
            .document_element()
            .and_then(|e| e.get_attribute("lang"))
            .and_then(|t| Locale::from_tag(&t))
            .unwrap_or_default()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        Locale::default()
    }
}

/// The HTML document around the app, rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let lang = initial_locale().tag();
    let today = latest_today();
    view! {
        <!DOCTYPE html>
        <html lang=lang data-today=today>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.ico"/>
                // The build's stylesheet under the name the server gives it
                // (with its digest when the build is there: cached for good).
                <link rel="stylesheet" id="leptos" href=format!("/{}/{}.css", options.site_pkg_dir, options.output_name)/>
                // Copy buttons and the printed estimate's first line (plain script: no room in the wasm).
                <script src="/page.js" defer></script>
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

/// The page's title in Portuguese and English.
const TITLE: (&str, &str) = (
    "idem — custo de chamadas duplicadas",
    "idem — the cost of duplicated calls",
);

/// The id of the element the calculator is hydrated into.
pub const CALCULATOR_ROOT: &str = "calculator";

/// The id of the live monitor's numbers, which `public/live.js` redraws in
/// the language `<html lang>` names when it changes.
#[cfg(feature = "hydrate")]
const LIVE_ROOT: &str = "live-root";

/// The id of the header the browser hydrates ([`TopBar`]).
const TOP_ROOT: &str = "top";

/// The page the server renders, with what its handler loaded. The
/// server's route table picks the handler (`server/src/http/mod.rs`), the
/// handler picks the page and [`App`] draws it: no second routing here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// `/` and `/s/{id}`: the calculator, which the browser hydrates.
    Calculator {
        /// Its starting pairs: the address's ([`start_pairs`]) or the
        /// saved scenario's ([`pages::pairs`]).
        initial: Vec<(String, String)>,
        /// The saved scenario it shows (`/s/{id}`).
        saved: Option<SavedView>,
        /// The live panel under it (on `/`), as the server rendered it.
        panel: Option<String>,
    },
    /// Every other page (the comparison, the monitor, a page that is not
    /// there): the server's markup, which the browser leaves as it is.
    Markup {
        /// The page's body.
        html: String,
    },
}

impl Default for Page {
    fn default() -> Self {
        Page::Markup {
            html: String::new(),
        }
    }
}

/// The address a page was asked for: its path, and its query with the `?`
/// (or empty). The server provides it; the header's links are built from
/// it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageAddress {
    /// The path, `/s/abc`.
    pub path: String,
    /// The query string with its `?`, or empty.
    pub search: String,
}

/// The calculator's starting pairs from an address's decoded query, put
/// through the router's `ParamsMap` (its order and repeated keys), so the
/// server and the browser start from the same pairs.
pub fn start_pairs(decoded: Vec<(String, String)>) -> Vec<(String, String)> {
    let map: leptos_router::params::ParamsMap = decoded.into_iter().collect();
    map.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The application, rendered on the server around the [`Page`] its handler
/// chose (the browser hydrates parts of it, see the crate's documentation).
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let locale = RwSignal::new(initial_locale());
    provide_context(Prefs { locale });
    let data = page_scenarios();
    provide_context(data.clone());
    let page = use_context::<Page>().unwrap_or_default();
    // The title is read once, here, inside leptos' reactive arena:
    // leptos_meta renders the <title> later, outside that arena, and a
    // closure reading the locale signal there panicked whenever the
    // request's task had moved to another worker thread (1 run in 4 of the
    // HTTP tests). In the browser the language switch sets it.
    let title = {
        let text = tr(locale.get_untracked(), TITLE.0, TITLE.1);
        move || text
    };
    let body = match page {
        Page::Calculator {
            initial,
            saved,
            panel,
        } => view! {
            <pages::CalculatorRoot initial saved/>
            {panel.map(|html| view! {
                <aside class="live-panel-box" aria-labelledby="live-panel-title" inner_html=html></aside>
            })}
        }
        .into_any(),
        Page::Markup { html } => view! { <div class="page-body" inner_html=html></div> }.into_any(),
    };
    view! {
        <Title text=title/>
        <header class="top" id=TOP_ROOT>
            <TopBar/>
        </header>
        <main>{body}</main>
        <PageData data/>
    }
}

/// The header's contents: what the browser hydrates into `#top`.
#[component]
pub fn TopBar() -> impl IntoView {
    view! {
        <span class="brand">"idem"</span>
        <span class="tagline"><T pt="Dinheiro e chamadas de modelo que executam uma vez só" en="Money and model calls that execute once"/></span>
        <PageLinks/>
        <LocaleSwitch/>
    }
}

/// The page's path and query string (with its `?`, or empty): the
/// server's [`PageAddress`], the address bar's in the browser. Pages load
/// whole, so neither changes under a rendered header.
fn page_address() -> (String, String) {
    #[cfg(feature = "ssr")]
    {
        let a = use_context::<PageAddress>().unwrap_or_default();
        (a.path, a.search)
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        browser::address()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        (String::new(), String::new())
    }
}

/// The page links. Full page loads (`rel="external"`): every page starts
/// from its address, which the server renders, so a page never keeps the
/// previous page's state.
#[component]
fn PageLinks() -> impl IntoView {
    let (path, _) = page_address();
    let current = |p: &'static str| {
        (path == p
            || (p == "/" && path.starts_with("/s/"))
            || (p == "/compare" && path.starts_with("/c/"))
            || (p == "/live" && path.starts_with("/live/")))
        .then_some("page")
    };
    view! {
        <nav class="pages">
            <a href="/" rel="external" aria-current=current("/")><T pt="Calculadora" en="Calculator"/></a>
            <a href="/compare" rel="external" aria-current=current("/compare")><T pt="Comparar" en="Compare"/></a>
            <a href="/live" rel="external" aria-current=current("/live")><T pt="Ao vivo" en="Live"/></a>
        </nav>
    }
}

/// The visible language switch: a plain link without JavaScript (the server
/// sets the cookie). With it, the pages that can follow a switch in place
/// do: the calculator (hydrated) and the live monitor (`live.js` redraws
/// it). The others are the server's markup alone (the wasm has no copy of
/// their writers), so there the link loads the page in the other language.
#[component]
fn LocaleSwitch() -> impl IntoView {
    let prefs = expect_context::<Prefs>();
    let (path, search) = page_address();
    let link = move |l: Locale, label: &'static str| {
        view! {
            <a
                href=lang_href(l, &path, &search)
                hreflang=l.tag()
                id=format!("lang-{}", l.tag())
                aria-current=move || (prefs.locale.get() == l).then_some("true")
                on:click=move |ev| {
                    ev.prevent_default();
                    #[cfg(feature = "hydrate")]
                    {
                        let in_place = [CALCULATOR_ROOT, LIVE_ROOT]
                            .iter()
                            .any(|id| document().get_element_by_id(id).is_some());
                        if !in_place {
                            // The address as it is now: the calculator keeps
                            // its inputs in it.
                            let (path, search) = page_address();
                            browser::go_to(&lang_href(l, &path, &search));
                            return;
                        }
                        prefs.locale.set(l);
                        browser::remember_locale(l);
                        document().set_title(tr(l, TITLE.0, TITLE.1));
                    }
                    #[cfg(not(feature = "hydrate"))]
                    prefs.locale.set(l);
                }
            >
                {label}
            </a>
        }
    };
    view! {
        <nav class="locale" aria-label="Idioma / Language">
            {link(Locale::PtBr, "Português")}
            {link(Locale::EnUs, "English")}
        </nav>
    }
}

/// The address of this page in locale `l`: its query with `lang` set (the
/// server reads it, then the cookie keeps it).
fn lang_href(l: Locale, path: &str, search: &str) -> String {
    let mut parts: Vec<&str> = search
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("lang="))
        .collect();
    let lang = format!("lang={}", l.tag());
    parts.push(&lang);
    format!("{path}?{}", parts.join("&"))
}

#[cfg(feature = "hydrate")]
/// What the calculator starts from, read the way the server read it: the
/// saved scenario the server put in `#page-data` (a calculator page has one
/// only on `/s/{id}`), else the address bar's query, decoded by the
/// browser and collected into the router's `ParamsMap` as the server does
/// ([`start_pairs`]), so hydration renders what the server did.
fn calculator_start() -> (Vec<(String, String)>, Option<SavedView>) {
    if let Some(saved) = browser::read_page_scenarios().found.into_iter().next() {
        return (pages::pairs(&saved.query), Some(saved));
    }
    let (_, search) = browser::address();
    let mut decoded = Vec::new();
    if let Ok(params) = web_sys::UrlSearchParams::new_with_str(&search) {
        if let Ok(Some(entries)) = js_sys::try_iter(&params) {
            for entry in entries.flatten() {
                let Ok(pair) = wasm_bindgen::JsCast::dyn_into::<js_sys::Array>(entry) else {
                    continue;
                };
                if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
                    decoded.push((k, v));
                }
            }
        }
    }
    (start_pairs(decoded), None)
}

/// The browser entry point: hydrates the header and, where the page has
/// one, the calculator, sharing one locale between them.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    use leptos::mount::hydrate_from;
    use wasm_bindgen::JsCast;
    console_error_panic_hook::set_once();
    let prefs = Prefs {
        locale: RwSignal::new(initial_locale()),
    };
    let root = |id: &str| {
        document()
            .get_element_by_id(id)
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    };
    if let Some(top) = root(TOP_ROOT) {
        hydrate_from(top, move || {
            provide_context(prefs);
            view! { <TopBar/> }
        })
        .forget();
    }
    if let Some(calculator) = root(CALCULATOR_ROOT) {
        let (initial, saved) = calculator_start();
        hydrate_from(calculator, move || {
            provide_context(prefs);
            view! { <Calculator initial saved/> }
        })
        .forget();
    }
    // A marker the browser tests (and curious humans) can wait on: the page
    // is interactive from here on.
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.set_attribute("data-hydrated", "true");
    }
}
