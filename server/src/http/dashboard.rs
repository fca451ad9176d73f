//! The dashboard: its pages (the calculator `/`, a saved scenario
//! `/s/{id}`, the comparison `/compare` and a saved one `/c/{id}`), each a
//! handler that loads what it shows and hands it to [`page::render`]; and
//! saving a scenario (`POST /s`) or a comparison (`POST /c`) and exporting
//! one as CSV (`GET /export.csv`).
//!
//! Saving and exporting are plain form posts and links, so both work
//! without JavaScript. The calculator wears the live area's panel
//! ([`live_panel`]), as `demo` wears `idempotency`.

use super::calculator::markup as calculator_markup;
use super::compare::{self, comparison_values, saved_ids, PageComparison};
use super::forms::SaveLimits;
use super::live::panel as live_panel;
use super::page::{self, PageView};
use super::saved::{load, load_comparison, tenant};
use super::state::{ApiState, AppState};
use app::i18n::{field_label, tr};
use app::{Page, PageScenarios};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use idem_api::boundary::host_of;
use idem_api::error::plain_text as refuse;
use idem_api::error::ApiError;
use idem_core::locale::Locale;
use idem_core::scenario::{is_saved_id, Field, Scenario};
use idem_store::{SavedComparison, SavedScenario, Store};
use maud::html;
use std::sync::Arc;

pub use super::saved::SCENARIO_TENANT;

/// Longest scenario name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// `GET /`: the calculator, from the address's scenario, with the live
/// panel under it. A link that does not read as a scenario still gets the
/// page (each problem under its field, or above the form), with 422, so a
/// script that checks links can tell.
pub async fn calculator(State(state): State<AppState>, req: Request) -> Response {
    let locale = page::locale(&req);
    let decoded: Vec<(String, String)> =
        form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let status = if link_reads(&decoded) {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let initial = app::start_pairs(decoded);
    let markup = calculator_markup(&initial, locale);
    let panel = live_panel(&state.live, req.headers(), locale).await;
    let view = PageView::new(Page::Calculator {
        initial,
        saved: None,
        panel: Some(panel),
    })
    .status(status)
    .calculator(markup);
    page::render(state.leptos_options, req, view).await
}

/// `GET /s/{id}`: a saved scenario, in the calculator; 404 (with the page
/// that says so) when no scenario has this id, 503 when none can be read.
pub async fn saved(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    // An id that does not decode names no scenario.
    let id = id.map(|Path(id)| id).unwrap_or_default();
    // `scenarios` skips an id no saved scenario can have.
    let data = scenarios(&state.api.store, vec![id]).await;
    let l = page::locale(&req);
    let view = match (data.found.first().cloned(), data.failed) {
        (Some(v), _) => {
            let initial = app::pages::pairs(&v.query);
            let markup = calculator_markup(&initial, l);
            PageView::new(Page::Calculator {
                initial,
                saved: Some(v),
                panel: None,
            })
            .calculator(markup)
        }
        (None, true) => PageView::new(page::markup(html! {
            p class="scenario-error" role="alert" { (tr(l, "Não foi possível ler os cenários salvos agora. Tente de novo em instantes.", "Saved scenarios cannot be read right now. Try again in a moment.")) }
        }))
        .status(StatusCode::SERVICE_UNAVAILABLE),
        (None, false) => PageView::new(page::markup(html! {
            h1 { (tr(l, "Cenário não encontrado", "Scenario not found")) }
            p class="scenario-error" role="alert" { (tr(l, "Nenhum cenário salvo tem este link. Confira o endereço, ou monte o cenário de novo na calculadora.", "No saved scenario has this link. Check the address, or build the scenario again in the calculator.")) }
            p { a href="/" rel="external" { (tr(l, "Abrir a calculadora", "Open the calculator")) } }
        }))
        .status(StatusCode::NOT_FOUND),
    };
    page::render(state.leptos_options, req, view.scenarios(data)).await
}

/// `GET /compare?s=…&s=…`: scenarios side by side (saved ids and links);
/// 503 when the saved ones cannot be read.
pub async fn compare(State(state): State<AppState>, req: Request) -> Response {
    let values = comparison_values(req.uri().query().unwrap_or_default());
    compare_page(state, req, values, None).await
}

/// `GET /c/{id}`: a saved comparison; 404 (with the page that says so)
/// when none has this id, 503 when it cannot be read.
pub async fn comparison(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let id = id.map(|Path(id)| id).unwrap_or_default();
    match load_comparison(&state.api.store, &id).await {
        Ok(Some(c)) => {
            let values = comparison_values(&c.query);
            compare_page(state, req, values, Some(c)).await
        }
        // None with this id (404), or none readable now (503).
        read => {
            let failed = read.is_err();
            let body = compare::page(&[], None, &[], failed, None, "", page::locale(&req));
            let status = if failed {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::NOT_FOUND
            };
            page::render(
                state.leptos_options,
                req,
                PageView::new(page::markup(body)).status(status),
            )
            .await
        }
    }
}

/// The comparison page for these column values: the saved ids among them
/// (on this site) are read before it renders.
async fn compare_page(
    state: AppState,
    req: Request,
    values: Vec<String>,
    stored: Option<PageComparison>,
) -> Response {
    // The host the guard has already checked: a pasted address is this
    // site's only when it names it.
    let site = host_of(req.headers(), req.uri());
    let ids = saved_ids(values.iter().map(String::as_str), site.as_deref());
    let data = scenarios(&state.api.store, ids).await;
    let status = if data.failed {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = compare::page(
        &values,
        stored.as_ref(),
        &data.found,
        data.failed,
        site.as_deref(),
        &page::form_token(&req),
        page::locale(&req),
    );
    let view = PageView::new(page::markup(body)).status(status);
    page::render(state.leptos_options, req, view).await
}

/// The saved scenarios with these ids (ids that cannot be saved ones are
/// skipped); `failed` when the database cannot be read.
async fn scenarios(store: &Store, ids: Vec<String>) -> PageScenarios {
    let ids = ids.into_iter().filter(|id| is_saved_id(id)).collect();
    match load(store, ids).await {
        Ok(found) => PageScenarios {
            found,
            failed: false,
        },
        Err(_) => PageScenarios {
            found: Vec::new(),
            failed: true,
        },
    }
}

/// Whether a calculator query reads as a scenario: canonical, or typed in
/// the page's language by a form submitted without JavaScript (`t=1`).
fn link_reads(pairs: &[(String, String)]) -> bool {
    if pairs.iter().any(|(k, _)| k == app::calculator::TYPED_KEY) {
        // Typed values are checked field by field on the page itself.
        return true;
    }
    match Scenario::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(_) => true,
        // A rate not given yet is a question the page asks (a model picked
        // on /prices is priced in dollars), not a link that is wrong.
        Err(idem_core::scenario::QueryError::Fields(p)) => {
            p.0.iter()
                .all(|(_, why)| *why == idem_core::scenario::Problem::RateRequired)
        }
        Err(_) => false,
    }
}

/// `POST /c`: saves a comparison (form: `s` once per column, in order, and
/// an optional `name`) and answers 303 to its short link `/c/{id}`. As with
/// scenarios, the id is derived from the content: saving twice lands on the
/// same link, and a saved comparison never changes.
#[tracing::instrument(level = "info", skip(api, form))]
pub async fn save_comparison(
    State(api): State<ApiState>,
    State(saves): State<Arc<SaveLimits>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    ext: axum::http::Extensions,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let sent = form
        .iter()
        .rev()
        .find(|(k, _)| k == app::FORM_FIELD)
        .map(|(_, v)| v.as_str());
    if let Err(refused) = may_save(&api, &saves, &headers, &ext, sent, "save comparison") {
        return refused.into_response();
    }
    let field = |k: &str| {
        form.iter()
            .rev()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.as_str())
    };
    let values = form
        .iter()
        .filter(|(k, _)| k == "s")
        .map(|(_, v)| v.as_str());
    // Refusals are plain English text, as `POST /s`'s are.
    let site = idem_api::boundary::host_of(&headers, &uri);
    let query = match compare::comparison_query(values, site.as_deref(), Locale::EnUs) {
        Ok(q) => q,
        Err(why) => {
            return refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("the comparison cannot be saved: {why}"),
            )
        }
    };
    let name = match saved_name(field("name").unwrap_or_default()) {
        Ok(name) => name,
        Err(why) => return refuse(StatusCode::UNPROCESSABLE_ENTITY, why),
    };
    let row = SavedComparison {
        id: idem_core::scenario::comparison_id(&query, name),
        name: name.to_owned(),
        query,
        created_ms: api.store.now_ms(),
    };
    let saved = async {
        let mut s = api.store.session().await?;
        s.save_comparison(&tenant(), &row).await
    }
    .await;
    saved_link(saved.map(|c| format!("/c/{}", c.id)), "comparison")
}

/// The save form's fields.
#[derive(Debug, serde::Deserialize)]
pub struct SaveForm {
    /// The scenario's canonical query (`v=1&...`).
    q: String,
    /// An optional name.
    #[serde(default)]
    name: String,
    /// The visit's form token (see `guard::form_token_ok`).
    #[serde(default)]
    form_token: Option<String>,
}

/// `POST /s`: saves the scenario and answers 303 to its short link. The id
/// is derived from the scenario and name, so saving twice lands on the same
/// link, and a saved scenario never changes.
#[tracing::instrument(level = "info", skip(api, form))]
pub async fn save(
    State(api): State<ApiState>,
    State(saves): State<Arc<SaveLimits>>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
    Form(form): Form<SaveForm>,
) -> Response {
    if let Err(refused) = may_save(
        &api,
        &saves,
        &headers,
        &ext,
        form.form_token.as_deref(),
        "save scenario",
    ) {
        return refused.into_response();
    }
    let scenario = match Scenario::from_query(form.q.split('&').filter_map(|kv| kv.split_once('=')))
    {
        Ok(s) => s,
        Err(e) => {
            return refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("the scenario cannot be saved: {e}"),
            )
        }
    };
    let name = match saved_name(&form.name) {
        Ok(name) => name,
        Err(why) => return refuse(StatusCode::UNPROCESSABLE_ENTITY, why),
    };
    let row = SavedScenario {
        id: scenario.saved_id(name),
        name: name.to_owned(),
        query: scenario.to_query(),
        created_ms: api.store.now_ms(),
    };
    let saved = async {
        let mut s = api.store.session().await?;
        s.save_scenario(&tenant(), &row).await
    }
    .await;
    saved_link(saved.map(|v| format!("/s/{}", v.id)), "scenario")
}

/// Whether an anonymous save may go on: posted from this site's pages (a
/// page elsewhere must not fill the table in a visitor's name), within
/// the per-address and daily bounds. The refusal is the answer to send.
fn may_save(
    api: &ApiState,
    saves: &SaveLimits,
    headers: &HeaderMap,
    ext: &axum::http::Extensions,
    form_token: Option<&str>,
    form: &str,
) -> Result<(), ApiError> {
    if !idem_api::boundary::same_origin(headers)
        || !super::forms::form_token_ok(headers, form_token)
    {
        return Err(super::forms::cross_site(form));
    }
    saves.take(idem_api::conn::client_addr(ext), api.store.now_ms())
}

/// A saved link's name, trimmed: at most [`MAX_NAME_CHARS`] characters and
/// no control characters and no bidirectional controls (a shared link's
/// name is drawn for everyone who opens it), else why not.
fn saved_name(raw: &str) -> Result<&str, String> {
    let name = raw.trim();
    if name.chars().count() > MAX_NAME_CHARS
        || name
            .chars()
            .any(|c| c.is_control() || idem_core::is_bidi_control(c))
    {
        return Err(format!(
            "the name must be at most {MAX_NAME_CHARS} characters, without control or text-direction characters"
        ));
    }
    Ok(name)
}

/// The answer to a save: 303 to the saved link, 409 when its id names
/// other content, 503 when the database cannot take it (logged once here).
fn saved_link(saved: Result<String, idem_store::Error>, what: &str) -> Response {
    match saved {
        Ok(link) => Redirect::to(&link).into_response(),
        Err(e @ idem_store::Error::ScenarioIdTaken(_)) => {
            refuse(StatusCode::CONFLICT, e.to_string())
        }
        Err(e) => {
            tracing::error!(error = %idem_api::error::chain(&e), what, "saving failed");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the {what} could not be saved right now; try again"),
            )
        }
    }
}

/// `GET /export.csv?<scenario query>&lang=[&name=]`: the scenario's inputs
/// and outputs as CSV in the page's locale (see [`csv_of`]), downloaded as
/// `idem-<name or id>-<date>.csv`.
#[tracing::instrument(level = "debug", skip(query, name))]
pub async fn export_csv(
    query: super::page_request::ScenarioQuery,
    Query(name): Query<CsvName>,
) -> Response {
    let super::page_request::ScenarioQuery { scenario, locale } = query;
    let file = csv_file_name(&scenario, name.name.as_deref(), now_ms());
    match csv_of(&scenario, locale) {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{file}\""),
                ),
            ],
            body,
        )
            .into_response(),
        Err(msg) => refuse(StatusCode::UNPROCESSABLE_ENTITY, msg),
    }
}

/// The optional `name` of `/export.csv`: the saved scenario's name.
#[derive(Debug, serde::Deserialize)]
pub struct CsvName {
    name: Option<String>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `idem-<name>-<YYYY-MM-DD>.csv`: the saved name folded to ASCII letters,
/// digits and dashes (at most 40), else the scenario's 12-hex id; the date
/// of the export (UTC).
pub fn csv_file_name(s: &Scenario, name: Option<&str>, now_ms: i64) -> String {
    let mut slug = String::new();
    for c in name.unwrap_or("").chars().flat_map(char::to_lowercase) {
        let c = match c {
            'á' | 'à' | 'â' | 'ã' | 'ä' => 'a',
            'é' | 'ê' | 'è' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'õ' | 'ö' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ç' => 'c',
            c if c.is_ascii_alphanumeric() => c,
            _ => '-',
        };
        if c != '-' || !slug.ends_with('-') {
            slug.push(c);
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(40).collect();
    let slug = slug.trim_end_matches('-');
    let id = if slug.is_empty() {
        s.saved_id("")
    } else {
        slug.to_owned()
    };
    let day: String = app::i18n::utc_minute(now_ms).chars().take(10).collect();
    format!("idem-{id}-{day}.csv")
}

/// The CSV text of a scenario: a header, one row per input, one per output,
/// one per caveat. The dialect follows the locale, so a spreadsheet opens
/// it in columns: pt-BR is `;`-separated with a UTF-8 byte-order mark (what
/// Excel in Portuguese expects); English is `,`-separated without one. Both
/// quote with `"` and end lines with `\n`. Columns: `section`, `key`,
/// `label`, `value` (exact and locale-free, `148.5`), `formatted` (as the
/// page shows it, `R$ 148,50`) and `unit` (a currency code, `%`, or what is
/// counted).
pub fn csv_of(s: &Scenario, l: Locale) -> Result<String, String> {
    let outputs = s
        .compute()
        .map_err(|e| format!("the scenario cannot be computed: {e}"))?;
    let pt = l == Locale::PtBr;
    let mut w = csv::WriterBuilder::new()
        .delimiter(if pt { b';' } else { b',' })
        .from_writer(Vec::new());
    // A model name or a rate date comes from the link: every cell is
    // written as data (`sheet::cell`), numbers left as numbers.
    let mut write = |r: [&str; 6]| {
        w.write_record(super::sheet::record(r))
            .map_err(|e| e.to_string())
    };
    write(["section", "key", "label", "value", "formatted", "unit"])?;
    let label = |pt_text: &'static str, en: &'static str| if pt { pt_text } else { en };
    let i = &s.inputs;
    let (pc, rc) = (i.price_currency.code(), i.revenue_currency.code());
    let per = match i.price_unit {
        idem_core::cost::PriceUnit::PerThousand => "1k",
        idem_core::cost::PriceUnit::PerMillion => "1M",
    };
    let price_unit = format!("{pc}/{per} tokens");
    let fx_unit = format!("{rc}/{pc}");
    for f in Field::ALL {
        let Some(v) = f.get(s) else { continue };
        let exact = idem_core::scenario::canonical(v);
        let shown = app::calculator::scenario_text(f, v, s, l);
        let unit: &str = match f {
            Field::Conversations => label("conversas/mês", "conversations/month"),
            Field::Calls => label("chamadas/conversa", "calls/conversation"),
            Field::TokensIn | Field::TokensOut => label("tokens/chamada", "tokens/call"),
            Field::PriceIn | Field::PriceCached | Field::PriceOut => &price_unit,
            Field::Fx => &fx_unit,
            Field::Ticket | Field::AvgCharge | Field::OpsCost => rc,
            _ => "%",
        };
        let exact = exact.to_string();
        let exact = super::sheet::exact_number(&exact, pt);
        write(["input", f.key(), field_label(f, l), &exact, &shown, unit])?;
    }
    let unit = match i.price_unit {
        idem_core::cost::PriceUnit::PerThousand => "1k",
        idem_core::cost::PriceUnit::PerMillion => "1m",
    };
    let tokens = label("tokens", "tokens");
    write([
        "input",
        "u",
        label("Unidade dos preços", "Price unit"),
        unit,
        unit,
        tokens,
    ])?;
    write([
        "input",
        "pc",
        label("Moeda dos preços", "Price currency"),
        pc,
        pc,
        "",
    ])?;
    let revenue_label = label(
        "Moeda da receita e dos resultados",
        "Revenue and results currency",
    );
    write(["input", "rc", revenue_label, rc, rc, ""])?;
    if let Some(d) = s.fx_date.as_deref() {
        // The ISO date a spreadsheet reads as a date, and the page's form
        // beside it (04/12/2026, 4 Dec 2026).
        let shown = idem_core::date::format_date(d, l);
        write([
            "input",
            "pd",
            label("Data do câmbio", "Exchange rate date"),
            d,
            &shown,
            "",
        ])?;
    }
    if let Some(m) = s.model.as_deref() {
        write([
            "input",
            "m",
            label("Modelo (tabela de preços)", "Model (price table)"),
            m,
            m,
            "",
        ])?;
        if let Some(d) = s.model_date.as_deref() {
            write([
                "input",
                "md",
                label("Data da tabela de preços", "Price table date"),
                d,
                d,
                "",
            ])?;
        }
    }
    let rows = app::calculator::rows(s, &outputs, l);
    for r in &rows {
        let exact = super::sheet::exact_number(&r.exact, pt);
        write(["output", r.key, r.label, &exact, &r.value, r.unit])?;
    }
    // Caveats travel with the numbers they qualify (the claim exposure's).
    for r in &rows {
        if let Some(n) = &r.note {
            write(["note", r.key, r.label, "", n, ""])?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    Ok(if pt { format!("\u{feff}{text}") } else { text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_scenario_exports_its_numbers() {
        let text = csv_of(&Scenario::default(), Locale::PtBr).unwrap_or_default();
        // pt-BR: a byte-order mark, then `;`-separated with decimal commas.
        assert!(
            text.starts_with("\u{feff}section;key;label;value;formatted;unit\n"),
            "{text}"
        );
        assert!(
            text.contains("input;pi;Preço dos tokens de entrada;0,015;0,015;BRL/1k tokens\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "output;monthly_token_waste;Token queimado por mês;148,5;R$ 148,50;BRL\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "output;break_even_conversations;Conversas a mais para empatar;124;124;conversas/mês\n"
            ),
            "{text}"
        );
        // Read back with the documented dialect, every row has six fields.
        let mut r = csv::ReaderBuilder::new()
            .delimiter(b';')
            .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
        assert!(r
            .records()
            .all(|rec| rec.map(|x| x.len() == 6).unwrap_or(false)));
        let en = csv_of(&Scenario::default(), Locale::EnUs).unwrap_or_default();
        assert!(
            en.starts_with("section,key,label,value,formatted,unit\n"),
            "{en}"
        );
        assert!(
            en.contains(
                "output,annual_token_waste,Tokens burnt per year,1782,\"R$1,782.00\",BRL\n"
            ),
            "{en}"
        );
    }

    /// Each dialect's exact column, read as a spreadsheet of its locale
    /// reads numbers (pt-BR: decimal comma; en: decimal point; neither
    /// groups), gives back every exact value, inputs and outputs.
    #[test]
    fn a_spreadsheet_of_each_locale_reads_the_exact_values() {
        use rust_decimal::Decimal;
        use std::str::FromStr;
        let d = |v: &str| Decimal::from_str(v).unwrap();
        let mut s = Scenario::default();
        let i = &mut s.inputs;
        (i.conversations, i.tokens_in, i.tokens_out) = (d("45000"), d("12000"), d("900"));
        (i.cached_share_pct, i.calls_per_conversation) = (d("25"), d("1.7"));
        (i.price_in, i.price_cached, i.price_out) = (d("2.5"), d("0.25"), d("10"));
        i.price_unit = idem_core::cost::PriceUnit::PerMillion;
        i.price_currency = idem_core::locale::Currency::EUR;
        i.fx = Some(d("6.1"));
        (i.ticket, i.duplicate_rate_pct) = (d("2.4"), d("2.5"));
        i.risk = Some(idem_core::cost::RiskInputs {
            money_share_pct: d("40"),
            avg_charge: d("89.9"),
            ops_cost: d("12.5"),
            claim_rate_pct: d("3"),
        });
        let outputs = s.compute().unwrap();
        for (l, delimiter) in [(Locale::PtBr, b';'), (Locale::EnUs, b',')] {
            let text = csv_of(&s, l).unwrap();
            let mut r = csv::ReaderBuilder::new()
                .delimiter(delimiter)
                .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
            let cells: std::collections::HashMap<String, String> = r
                .records()
                .map(|rec| rec.unwrap())
                .filter(|rec| &rec[0] != "note")
                .map(|rec| (rec[1].to_owned(), rec[3].to_owned()))
                .collect();
            let read = |key: &str| {
                let cell = &cells[key];
                assert!(
                    !cell.contains(if l == Locale::PtBr { '.' } else { ',' }),
                    "{key}: {cell}"
                );
                idem_core::locale::parse_decimal(cell, l).unwrap()
            };
            for f in Field::ALL {
                if let Some(v) = f.get(&s) {
                    assert_eq!(read(f.key()), v, "{} in {l:?}", f.key());
                }
            }
            for row in app::calculator::rows(&s, &outputs, l) {
                if let Ok(want) = Decimal::from_str(&row.exact) {
                    assert_eq!(read(row.key), want, "{} in {l:?}", row.key);
                }
            }
        }
    }

    #[test]
    fn the_csv_file_carries_the_name_or_id_and_the_date() {
        let s = Scenario::default();
        let day = 1_796_040_300_000; // 2026-11-30 12:05 UTC
        assert_eq!(
            csv_file_name(&s, Some("Contrato São Paulo / 2026"), day),
            "idem-contrato-sao-paulo-2026-2026-11-30.csv"
        );
        assert_eq!(
            csv_file_name(&s, None, day),
            format!("idem-{}-2026-11-30.csv", s.saved_id(""))
        );
        assert_eq!(
            csv_file_name(&s, Some("\"; rm -rf /"), day),
            "idem-rm-rf-2026-11-30.csv"
        );
    }
}
