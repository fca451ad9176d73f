//! What only the browser can do: the address bar, the clipboard, the
//! cookie. Compiled for the `hydrate` build only.

use idem_core::locale::Locale;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    /// The address (path and query) the page shows: the one it loaded or
    /// the last [`replace_url`] set.
    static SHOWN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn here() -> String {
    let l = window().location();
    format!(
        "{}{}",
        l.pathname().unwrap_or_default(),
        l.search().unwrap_or_default()
    )
}

/// Points the address bar at `href` without a history entry or a reload.
pub fn replace_url(href: &str) {
    SHOWN.with(|s| *s.borrow_mut() = Some(href.to_owned()));
    let w = window();
    let current = w
        .location()
        .pathname()
        .ok()
        .zip(w.location().search().ok())
        .map(|(p, s)| format!("{p}{s}"));
    if current.as_deref() == Some(href) {
        return;
    }
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(href));
    }
}

/// Asks the reader to confirm `message` (the browser's own dialog).
pub fn confirm(message: &str) -> bool {
    window().confirm_with_message(message).unwrap_or(false)
}

/// Adds a history entry for the address as it is now, so the next
/// [`replace_url`] leaves this one a Back away.
pub fn keep_in_history() {
    if let Ok(h) = window().history() {
        let _ = h.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&here()));
    }
}

/// Loads the page again when Back (or Forward) lands on an entry of this
/// document with another scenario: the calculator starts from its
/// address, so that scenario comes back whole. A move within the page
/// (only the fragment changes) is left alone.
pub fn reload_on_back() {
    SHOWN.with(|s| {
        s.borrow_mut().get_or_insert_with(here);
    });
    let reload = wasm_bindgen::closure::Closure::<dyn Fn()>::new(|| {
        let now = here();
        if SHOWN.with(|s| s.borrow().as_deref() != Some(now.as_str())) {
            let _ = window().location().reload();
        }
    });
    window().set_onpopstate(Some(reload.as_ref().unchecked_ref()));
    reload.forget();
}

/// A full page load of `href` (not the router's in-page navigation).
pub fn go_to(href: &str) {
    let _ = window().location().set_href(href);
}

/// Keeps the locale choice: the cookie the server reads, `<html lang>`, and
/// the `lang` parameter of the address bar.
pub fn remember_locale(l: Locale) {
    let doc = document();
    if let Some(html) = doc.document_element() {
        let _ = html.set_attribute("lang", l.tag());
    }
    if let Ok(d) = doc.dyn_into::<web_sys::HtmlDocument>() {
        let _ = d.set_cookie(&format!(
            "{}={}; Path=/; Max-Age=31536000; SameSite=Lax",
            crate::i18n::LOCALE_COOKIE,
            l.tag()
        ));
    }
    let w = window();
    if let Ok(url) = web_sys::Url::new(&w.location().href().unwrap_or_default()) {
        let params = url.search_params();
        match l {
            Locale::PtBr => params.delete("lang"),
            Locale::EnUs => params.set("lang", l.tag()),
        }
        url.set_search(&params.to_string().as_string().unwrap_or_default());
        replace_url(&format!("{}{}", url.pathname(), url.search()));
    }
}

/// Copies the address bar to the clipboard and reports whether it worked.
pub fn copy_location(done: RwSignal<Option<bool>>) {
    let w = window();
    let href = w.location().href().unwrap_or_default();
    let promise = w.navigator().clipboard().write_text(&href);
    leptos::task::spawn_local(async move {
        let ok = wasm_bindgen_futures::JsFuture::from(promise).await.is_ok();
        done.set(Some(ok));
    });
}

/// GETs `url` and returns its body when the answer is 2xx.
pub async fn fetch_text(url: &str) -> Option<String> {
    use wasm_bindgen_futures::JsFuture;
    let res = JsFuture::from(window().fetch_with_str(url)).await.ok()?;
    let res: web_sys::Response = res.dyn_into().ok()?;
    if !res.ok() {
        return None;
    }
    JsFuture::from(res.text().ok()?).await.ok()?.as_string()
}

/// The address bar's path and query string (with its `?`, or empty).
pub fn address() -> (String, String) {
    let l = window().location();
    (
        l.pathname().unwrap_or_default(),
        l.search().unwrap_or_default(),
    )
}

/// The saved scenarios the server put in `#page-data` (see
/// [`crate::PageScenarios`]).
pub fn read_page_scenarios() -> crate::PageScenarios {
    let mut out = crate::PageScenarios::default();
    let Some(root) = document().get_element_by_id("page-data") else {
        return out;
    };
    out.failed = root.has_attribute("data-failed");
    let children = root.children();
    for i in 0..children.length() {
        let Some(e) = children.item(i) else { continue };
        let attr = |k: &str| e.get_attribute(k).unwrap_or_default();
        out.found.push(crate::SavedView {
            id: attr("data-id"),
            name: attr("data-name"),
            query: attr("data-query"),
            created_ms: attr("data-created").parse().unwrap_or_default(),
        });
    }
    out
}
