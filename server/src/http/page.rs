//! How a page handler answers. Each page has its own handler in the route
//! table (`http/mod.rs`): it reads its own address, loads its own data and
//! chooses an [`app::Page`]; [`render`] then draws [`app::App`] around that
//! page, inside the shell, with the status the handler chose set through
//! leptos_axum's `ResponseOptions`.
//!
//! Every page's render also gets what any page needs from its request
//! ([`request_context`]): the locale (kept in a cookie when the query asked
//! for it), the visit's form token and the script nonce the trust
//! boundary minted, and the host and address the header's links are built
//! from. The not-found page gets the same, through the router's fallback
//! ([`not_found_context`]).

use super::forms::CspNonce;
use super::page_request::{request_locale, request_locale_of};
use app::calculator::ServerMarkup;
use app::i18n::{tr, RequestLocale};
use app::{shell, FormToken, Page, PageAddress, PageScenarios};
use axum::extract::Request;
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::Response;
use idem_core::locale::Locale;
use leptos::config::LeptosOptions;
use leptos::prelude::{provide_context, use_context};
use leptos_axum::ResponseOptions;
use maud::{html, Markup};

/// What a page handler hands [`render`]: the page, its status, and the
/// data the page shows beyond its address.
#[derive(Clone, Debug, Default)]
pub struct PageView {
    page: Page,
    status: StatusCode,
    scenarios: PageScenarios,
    calculator: Option<ServerMarkup>,
}

impl PageView {
    /// `page`, answered 200.
    pub fn new(page: Page) -> Self {
        Self {
            page,
            ..Self::default()
        }
    }

    /// Answers `status` instead. A 503 also says when to try again
    /// (`Retry-After: 1`): the page says the data cannot be read now, and
    /// the status says the same to a script or a cache.
    #[must_use]
    pub fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The saved scenarios the page shows (the browser reads them back from
    /// the page before it hydrates, see [`app::PageScenarios`]).
    #[must_use]
    pub fn scenarios(mut self, scenarios: PageScenarios) -> Self {
        self.scenarios = scenarios;
        self
    }

    /// What the server writes inside the calculator (its notices, help,
    /// model note and charts), on a page that has one.
    #[must_use]
    pub fn calculator(mut self, markup: ServerMarkup) -> Self {
        self.calculator = Some(markup);
        self
    }
}

/// Renders `view` for `req`: the shell, [`app::App`] and the page, in
/// order (the build notes explain why in-order streaming).
pub async fn render(options: LeptosOptions, req: Request, view: PageView) -> Response {
    let PageView {
        page,
        status,
        scenarios,
        calculator,
    } = view;
    let base = request_context();
    let context = move || {
        base();
        provide_context(page.clone());
        provide_context(scenarios.clone());
        if let Some(m) = &calculator {
            provide_context(m.clone());
        }
        if let Some(res) = use_context::<ResponseOptions>() {
            if status != StatusCode::OK {
                res.set_status(status);
            }
            if status == StatusCode::SERVICE_UNAVAILABLE {
                res.insert_header(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
        }
    };
    let handler = leptos_axum::render_app_to_stream_in_order_with_context(context, move || {
        shell(options.clone())
    });
    handler(req).await
}

/// What every page's render needs from its request, read from the
/// request leptos_axum puts in context (see the module's documentation).
pub fn request_context() -> impl Fn() + Clone + Send + Sync + 'static {
    || {
        let Some(parts) = use_context::<Parts>() else {
            return;
        };
        // The hydration script carries the nonce the response's
        // Content-Security-Policy names (`guard::security_headers`).
        if let Some(n) = parts.extensions.get::<CspNonce>() {
            provide_context(leptos::nonce::Nonce::from_value(n.0.as_str()));
        }
        if let Some(t) = parts.extensions.get::<FormToken>() {
            provide_context(t.clone());
        }
        let (locale, asked) = request_locale(&parts);
        provide_context(RequestLocale(locale));
        provide_context(app::i18n::Today(crate::today::latest_today()));
        provide_context(PageAddress {
            path: parts.uri.path().to_owned(),
            search: parts
                .uri
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default(),
        });
        if asked {
            if let Some(res) = use_context::<ResponseOptions>() {
                res.insert_header(header::SET_COOKIE, locale_cookie(locale));
            }
        }
    }
}

/// What the router's fallback renders for a path that is no page (404):
/// what every page gets, and the page that says so.
pub fn not_found_context() -> impl Fn() + Clone + Send + Sync + 'static {
    let base = request_context();
    move || {
        base();
        let l = use_context::<RequestLocale>()
            .map(|r| r.0)
            .unwrap_or_default();
        provide_context(markup(html! {
            h1 { (tr(l, "Página não encontrada", "Page not found")) }
            p { a href="/" { (tr(l, "Abrir a calculadora", "Open the calculator")) } }
        }));
    }
}

/// A page that is the server's markup alone.
pub fn markup(body: Markup) -> Page {
    Page::Markup {
        html: body.into_string(),
    }
}

/// The locale a page request asks for (`lang`, else the cookie).
pub fn locale(req: &Request) -> Locale {
    request_locale_of(req.uri(), req.headers())
}

/// The visit's form token the trust boundary set (empty for none).
pub fn form_token(req: &Request) -> String {
    req.extensions()
        .get::<FormToken>()
        .map(|t| t.0.clone())
        .unwrap_or_default()
}

fn locale_cookie(l: Locale) -> HeaderValue {
    HeaderValue::from_static(match l {
        Locale::PtBr => "idem_lang=pt-BR; Path=/; Max-Age=31536000; SameSite=Lax",
        Locale::EnUs => "idem_lang=en-US; Path=/; Max-Age=31536000; SameSite=Lax",
    })
}
