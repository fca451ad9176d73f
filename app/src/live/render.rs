//! The live monitor's data as the server assembles it, and its markup
//! (server only: the browser receives the markup, never this code).

use crate::i18n::{tr, utc_minute};
use crate::markup::esc;
use idem_core::locale::{format_count, format_decimal, Locale};
use idem_core::scenario::{Field, Scenario};
use rust_decimal::Decimal;
use serde::Serialize;
use std::fmt::Write;

/// The windows the monitor offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Window {
    /// The last hour, by minute.
    #[serde(rename = "1h")]
    Hour,
    /// The last 24 hours, by hour.
    #[serde(rename = "24h")]
    #[default]
    Day,
    /// The last 7 days, by hour.
    #[serde(rename = "7d")]
    Week,
    /// The last 30 days, by day.
    #[serde(rename = "30d")]
    Month,
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

impl Window {
    /// Every window, in the order the form lists them.
    pub const ALL: [Window; 4] = [Window::Hour, Window::Day, Window::Week, Window::Month];

    /// As written in `?window=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Hour => "1h",
            Window::Day => "24h",
            Window::Week => "7d",
            Window::Month => "30d",
        }
    }

    /// Reads `?window=`.
    pub fn parse(s: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.as_str() == s)
    }

    /// The window's length.
    pub fn len_ms(self) -> i64 {
        match self {
            Window::Hour => HOUR,
            Window::Day => DAY,
            Window::Week => 7 * DAY,
            Window::Month => 30 * DAY,
        }
    }

    /// The chart's bucket width (the statistics' granularity).
    pub fn bucket_ms(self) -> i64 {
        match self {
            Window::Hour => MINUTE,
            Window::Day | Window::Week => HOUR,
            Window::Month => DAY,
        }
    }

    fn label(self, l: Locale) -> &'static str {
        match self {
            Window::Hour => tr(l, "última hora", "last hour"),
            Window::Day => tr(l, "últimas 24 h", "last 24 h"),
            Window::Week => tr(l, "últimos 7 dias", "last 7 days"),
            Window::Month => tr(l, "últimos 30 dias", "last 30 days"),
        }
    }
}

/// Counters over the window (the statistics rollups).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveCounts {
    /// Intents recorded for the first time.
    pub intents: i64,
    /// Deliveries, first ones and redeliveries.
    pub deliveries: i64,
    /// Redeliveries absorbed by the primary key.
    pub redeliveries: i64,
    /// Intents delivered more than once: the duplicate rate's numerator.
    pub redelivered_intents: i64,
    /// Redeliveries whose fresh extraction differed from the frozen intent.
    pub divergences: i64,
    /// Action claims.
    pub actions_started: i64,
    /// Actions completed.
    pub actions_completed: i64,
    /// Action failures.
    pub actions_failed: i64,
    /// Attempts whose lease ran out without an outcome.
    pub actions_uncertain: i64,
    /// HTTP responses replayed under an Idempotency-Key.
    pub http_replays: i64,
    /// HTTP 409s (same key while running).
    pub http_409: i64,
    /// HTTP 422s (same key, different request).
    pub http_422: i64,
}

impl LiveCounts {
    /// Adds another set of counters.
    pub fn add(&mut self, o: &LiveCounts) {
        self.intents += o.intents;
        self.deliveries += o.deliveries;
        self.redeliveries += o.redeliveries;
        self.redelivered_intents += o.redelivered_intents;
        self.divergences += o.divergences;
        self.actions_started += o.actions_started;
        self.actions_completed += o.actions_completed;
        self.actions_failed += o.actions_failed;
        self.actions_uncertain += o.actions_uncertain;
        self.http_replays += o.http_replays;
        self.http_409 += o.http_409;
        self.http_422 += o.http_422;
    }

    /// Intents delivered more than once per intent recorded, in percent,
    /// to two decimals; `None` without intents.
    pub fn duplicate_rate_pct(&self) -> Option<Decimal> {
        (self.intents > 0).then(|| {
            (Decimal::from(self.redelivered_intents) * Decimal::ONE_HUNDRED
                / Decimal::from(self.intents))
            .round_dp(2)
        })
    }
}

/// One tenant and action type over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveRow {
    /// Tenant.
    pub tenant: String,
    /// Action type (`http` for Idempotency-Key counters).
    pub action: String,
    /// Counters.
    #[serde(flatten)]
    pub counts: LiveCounts,
}

/// One chart bucket (every tenant and action shown, summed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LivePoint {
    /// Bucket start, ms since the epoch (UTC).
    pub start_ms: i64,
    /// Deliveries in the bucket.
    pub deliveries: i64,
    /// Redeliveries in the bucket.
    pub redeliveries: i64,
    /// Intents recorded in the bucket.
    pub intents: i64,
    /// Intents that got their second delivery in the bucket.
    pub redelivered_intents: i64,
}

/// An action whose outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveUncertain {
    /// Tenant.
    pub tenant: String,
    /// The key to reconcile.
    pub key: String,
    /// Action type.
    pub action: String,
    /// When the attempt started.
    pub started_ms: i64,
    /// When its lease ran out, when known.
    pub lease_until_ms: Option<i64>,
    /// Claims so far.
    pub attempts: i32,
}

/// The redelivery horizon against the retention that must cover it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveHorizon {
    /// Redeliveries whose delay was measured.
    pub measured: i64,
    /// 99th percentile delay (upper bound of its histogram bucket).
    pub p99_ms: Option<i64>,
    /// Longest delay.
    pub max_ms: Option<i64>,
    /// The shortest intent retention among the tenants shown.
    pub retention_ms: Option<i64>,
    /// Retention is under twice the longest observed delay.
    pub warning: bool,
}

/// Everything the monitor shows, as `/live/data.json` returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveData {
    /// When the numbers were read, ms since the epoch.
    pub generated_ms: i64,
    /// The window.
    pub window: Window,
    /// Window start (inclusive, floored to a bucket).
    pub from_ms: i64,
    /// Window end (exclusive).
    pub to_ms: i64,
    /// The chart's bucket width.
    pub bucket_ms: i64,
    /// The tenant asked for (`None`: every tenant the viewer may see).
    pub tenant: Option<String>,
    /// The tenants shown.
    pub tenants: Vec<String>,
    /// Whether the viewer sees every tenant (admin, or the open loopback).
    pub admin: bool,
    /// Sums over every tenant and action shown.
    pub totals: LiveCounts,
    /// `totals.redelivered_intents / totals.intents`, percent, two decimals.
    pub duplicate_rate_pct: Option<String>,
    /// Per tenant and action type.
    pub rows: Vec<LiveRow>,
    /// Per bucket, oldest first, every bucket of the window.
    pub series: Vec<LivePoint>,
    /// Actions holding a running lease now.
    pub in_flight: i64,
    /// Actions whose outcome is unknown now.
    pub uncertain: i64,
    /// The newest uncertain actions.
    pub uncertain_keys: Vec<LiveUncertain>,
    /// Redelivery horizon and retention.
    pub horizon: LiveHorizon,
    /// The calculator link with the measured monthly volume and rate.
    pub use_numbers: Option<String>,
}

/// The calculator scenario the measured traffic implies: the window's
/// intents scaled to 30 days, and the measured duplicate rate. `None`
/// without intents.
pub fn measured_scenario(window: Window, totals: &LiveCounts) -> Option<Scenario> {
    let rate = totals.duplicate_rate_pct()?;
    let monthly = (Decimal::from(totals.intents) * Decimal::from(30 * DAY)
        / Decimal::from(window.len_ms()))
    .round()
    .max(Decimal::ONE);
    let mut s = Scenario::default();
    s.inputs.conversations = Field::Conversations.check(monthly).ok()?;
    s.inputs.duplicate_rate_pct = Field::DuplicateRate.check(rate).ok()?;
    Some(s)
}

/// The `/?…` link of [`measured_scenario`].
pub fn use_numbers_href(window: Window, totals: &LiveCounts) -> Option<String> {
    measured_scenario(window, totals).map(|s| format!("/?{}", s.to_query()))
}

fn count(n: i64, l: Locale) -> String {
    format_count(Decimal::from(n), l)
}

fn pct(d: Decimal, l: Locale) -> String {
    format!("{}%", format_decimal(d, l, 2, 2))
}

/// A duration for people: "850 ms", "12 s", "3,5 min", "2,0 h", "1,5 d".
pub fn duration(ms: i64, l: Locale) -> String {
    let d = Decimal::from(ms);
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < MINUTE {
        format!("{} s", format_decimal(d / Decimal::from(1_000), l, 0, 1))
    } else if ms < HOUR {
        format!("{} min", format_decimal(d / Decimal::from(MINUTE), l, 0, 1))
    } else if ms < DAY {
        format!("{} h", format_decimal(d / Decimal::from(HOUR), l, 0, 1))
    } else {
        format!("{} d", format_decimal(d / Decimal::from(DAY), l, 0, 1))
    }
}

fn card(out: &mut String, id: &str, label: &str, value: &str, note: &str, class: &str) {
    let _ = write!(
        out,
        "<div class=\"live-card {class}\" id=\"{id}\"><span class=\"label\">{}</span>\
         <output class=\"value\">{}</output><span class=\"note\">{}</span></div>",
        esc(label),
        esc(value),
        esc(note)
    );
}

/// "3,00% (27 de 900 intenções)": the rate with its denominator.
fn rate_text(c: &LiveCounts, l: Locale) -> String {
    match c.duplicate_rate_pct() {
        Some(r) => format!(
            "{} ({} {} {} {})",
            pct(r, l),
            count(c.redelivered_intents, l),
            tr(l, "de", "of"),
            count(c.intents, l),
            tr(l, "intenções", "intents")
        ),
        None => format!(
            "— ({})",
            tr(l, "nenhuma intenção na janela", "no intent in the window")
        ),
    }
}

fn scope_text(d: &LiveData, l: Locale) -> String {
    match &d.tenant {
        Some(t) => format!("{} {t}", tr(l, "tenant", "tenant")),
        None if d.tenants.len() == 1 => format!("{} {}", tr(l, "tenant", "tenant"), d.tenants[0]),
        None => format!(
            "{} {}",
            count(d.tenants.len() as i64, l),
            tr(l, "tenants", "tenants")
        ),
    }
}

/// The "use these numbers" link, saying where the numbers came from.
fn use_numbers_link(out: &mut String, d: &LiveData, l: Locale) {
    match &d.use_numbers {
        Some(href) => {
            let _ = write!(
                out,
                "<p class=\"use-numbers\"><a id=\"use-numbers\" rel=\"external\" href=\"{}\">{}</a> \
                 <span class=\"note\">{} {}, {}: {} {}, {} {}.</span></p>",
                esc(href),
                tr(l, "Usar estes números na calculadora", "Use these numbers in the calculator"),
                tr(l, "Medido em", "Measured on"),
                esc(&scope_text(d, l)),
                d.window.label(l),
                count(
                    measured_scenario(d.window, &d.totals)
                        .and_then(|s| s.inputs.conversations.try_into().ok())
                        .unwrap_or(0),
                    l
                ),
                tr(l, "conversas por mês", "conversations a month"),
                d.duplicate_rate_pct
                    .as_deref()
                    .and_then(|r| r.parse::<Decimal>().ok())
                    .map(|r| pct(r, l))
                    .unwrap_or_default(),
                tr(l, "de duplicatas", "duplicates"),
            );
        }
        None => {
            let _ = write!(
                out,
                "<p class=\"use-numbers note\">{}</p>",
                tr(
                    l,
                    "Sem intenções na janela: nada a levar para a calculadora ainda.",
                    "No intents in the window: nothing to take to the calculator yet."
                )
            );
        }
    }
}

/// The tenant and window form of `/live` (plain GET: works without
/// JavaScript; `live.js` submits it on change).
pub fn controls_html(d: &LiveData, l: Locale) -> String {
    let mut out = String::from("<form class=\"live-controls\" method=\"get\" action=\"/live\">");
    if d.admin {
        let _ = write!(
            out,
            "<label>{} <select name=\"tenant\"><option value=\"\">{}</option>",
            tr(l, "Tenant", "Tenant"),
            tr(l, "todos", "all")
        );
        for t in &d.tenants_all() {
            let sel = if d.tenant.as_deref() == Some(t.as_str()) {
                " selected"
            } else {
                ""
            };
            let _ = write!(out, "<option value=\"{0}\"{sel}>{0}</option>", esc(t));
        }
        out.push_str("</select></label>");
    }
    let _ = write!(
        out,
        "<label>{} <select name=\"window\">",
        tr(l, "Janela", "Window")
    );
    for w in Window::ALL {
        let sel = if w == d.window { " selected" } else { "" };
        let _ = write!(
            out,
            "<option value=\"{}\"{sel}>{}</option>",
            w.as_str(),
            w.label(l)
        );
    }
    let _ = write!(
        out,
        "</select></label><input type=\"hidden\" name=\"lang\" value=\"{}\"><button type=\"submit\">{}</button></form>",
        l.tag(),
        tr(l, "Mostrar", "Show")
    );
    out
}

impl LiveData {
    /// The tenants the admin may pick from: those shown, plus the one
    /// asked for.
    fn tenants_all(&self) -> Vec<String> {
        let mut v = self.tenants.clone();
        if let Some(t) = &self.tenant {
            if !v.contains(t) {
                v.push(t.clone());
            }
        }
        v
    }
}

/// The whole monitor (`/live`).
pub fn live_html(d: &LiveData, l: Locale) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"live-scope\">{} · {} · {} {}</p>",
        esc(&scope_text(d, l)),
        d.window.label(l),
        tr(l, "lido às", "read at"),
        utc_minute(d.generated_ms)
    );
    let t = &d.totals;
    out.push_str("<div class=\"live-cards\">");
    card(
        &mut out,
        "live-intents",
        tr(l, "Intenções", "Intents"),
        &count(t.intents, l),
        tr(
            l,
            "registradas pela primeira vez",
            "recorded for the first time",
        ),
        "",
    );
    card(
        &mut out,
        "live-deliveries",
        tr(l, "Entregas", "Deliveries"),
        &count(t.deliveries, l),
        tr(l, "primeiras e repetidas", "first ones and repeats"),
        "",
    );
    card(
        &mut out,
        "live-redeliveries",
        tr(l, "Reentregas absorvidas", "Redeliveries absorbed"),
        &count(t.redeliveries, l),
        tr(
            l,
            "a chave primária devolveu a intenção congelada",
            "the primary key returned the frozen intent",
        ),
        "",
    );
    card(
        &mut out,
        "live-rate",
        tr(l, "Taxa de duplicatas medida", "Measured duplicate rate"),
        &rate_text(t, l),
        tr(
            l,
            "intenções entregues mais de uma vez",
            "intents delivered more than once",
        ),
        "",
    );
    card(
        &mut out,
        "live-divergences",
        tr(l, "Divergências", "Divergences"),
        &count(t.divergences, l),
        tr(
            l,
            "reentregas cuja nova extração teria cobrado outra coisa",
            "redeliveries whose fresh extraction would have charged something else",
        ),
        if t.divergences > 0 { "warn" } else { "" },
    );
    card(
        &mut out,
        "live-http",
        tr(l, "HTTP: replays · 409 · 422", "HTTP: replays · 409 · 422"),
        &format!(
            "{} · {} · {}",
            count(t.http_replays, l),
            count(t.http_409, l),
            count(t.http_422, l)
        ),
        tr(
            l,
            "respostas repetidas, chave em uso, chave com outro pedido",
            "replayed answers, key in use, key with another request",
        ),
        "",
    );
    out.push_str("</div>");

    let _ = write!(
        out,
        "<h2>{}</h2><div class=\"live-cards\">",
        tr(l, "Ações", "Actions")
    );
    card(
        &mut out,
        "live-in-flight",
        tr(l, "Em andamento agora", "In flight now"),
        &count(d.in_flight, l),
        tr(l, "com lease vigente", "holding a running lease"),
        "",
    );
    card(
        &mut out,
        "live-completed",
        tr(l, "Concluídas", "Completed"),
        &count(t.actions_completed, l),
        d.window.label(l),
        "",
    );
    card(
        &mut out,
        "live-failed",
        tr(l, "Falharam", "Failed"),
        &count(t.actions_failed, l),
        d.window.label(l),
        "",
    );
    card(
        &mut out,
        "live-uncertain",
        tr(l, "Incertas agora", "Uncertain now"),
        &count(d.uncertain, l),
        tr(
            l,
            "lease expirou sem resultado: reconciliar",
            "lease ran out with no outcome: reconcile",
        ),
        if d.uncertain > 0 { "alert" } else { "" },
    );
    out.push_str("</div>");
    uncertain_table(&mut out, d, l);
    horizon(&mut out, d, l);
    use_numbers_link(&mut out, d, l);
    series_charts(&mut out, d, l);
    rows_table(&mut out, d, l);
    out
}

fn uncertain_table(out: &mut String, d: &LiveData, l: Locale) {
    if d.uncertain_keys.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section class=\"uncertain alert\" id=\"live-uncertain-keys\"><h3>{}</h3><p>{}</p><table><thead><tr>\
         <th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>",
        tr(l, "Precisam de reconciliação", "Need reconciliation"),
        tr(l, "Pergunte ao provedor o que aconteceu e registre com POST /v1/actions/{key}/reconcile, ou repita a chamada com a mesma chave.", "Ask the provider what happened and record it with POST /v1/actions/{key}/reconcile, or retry the call with the same key."),
        tr(l, "Chave", "Key"),
        tr(l, "Ação", "Action"),
        tr(l, "Tenant", "Tenant"),
        tr(l, "Início (UTC)", "Started (UTC)"),
        tr(l, "Lease terminou", "Lease ended"),
        tr(l, "Tentativas", "Attempts"),
    );
    for u in &d.uncertain_keys {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&u.key),
            esc(&u.action),
            esc(&u.tenant),
            utc_minute(u.started_ms),
            u.lease_until_ms.map(utc_minute).unwrap_or_else(|| "—".into()),
            u.attempts
        );
    }
    out.push_str("</tbody></table></section>");
}

fn horizon(out: &mut String, d: &LiveData, l: Locale) {
    let h = &d.horizon;
    let show = |v: Option<i64>| v.map(|ms| duration(ms, l)).unwrap_or_else(|| "—".into());
    let _ = write!(
        out,
        "<section class=\"horizon{}\" id=\"live-horizon\"><h3>{}</h3><p>{}: p99 <strong>{}</strong>, {} <strong>{}</strong> ({} {}) · {}: <strong>{}</strong></p>",
        if h.warning { " warn" } else { "" },
        tr(l, "Horizonte de reentrega", "Redelivery horizon"),
        tr(l, "Atraso entre a primeira e a última entrega", "Delay between first and last delivery"),
        show(h.p99_ms),
        tr(l, "máximo", "max"),
        show(h.max_ms),
        count(h.measured, l),
        tr(l, "reentregas medidas", "redeliveries measured"),
        tr(l, "retenção das intenções", "intent retention"),
        show(h.retention_ms),
    );
    if h.warning {
        let _ = write!(
            out,
            "<p class=\"warning\" role=\"alert\">{}</p>",
            tr(
                l,
                "A retenção é menor que o dobro do maior atraso observado: uma reentrega tardia pode chegar depois que a intenção foi apagada e executar de novo. Aumente a retenção (idem retention).",
                "Retention is under twice the longest delay observed: a late redelivery may arrive after the intent is purged and run again. Raise the retention (idem retention)."
            )
        );
    }
    out.push_str("</section>");
}

const CW: f64 = 640.0;
const CH: f64 = 180.0;
const PAD: f64 = 40.0;

fn px(v: f64) -> String {
    format!("{:.1}", if v.is_finite() { v } else { 0.0 })
}

fn polyline(values: &[f64], max: f64, class: &str) -> String {
    let n = values.len().max(2) as f64 - 1.0;
    let pts: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let x = PAD + (CW - 2.0 * PAD) * i as f64 / n;
            let y = CH - PAD / 2.0 - (CH - PAD) * (v / max.max(1e-9));
            format!("{},{}", px(x), px(y))
        })
        .collect();
    format!(
        "<polyline class=\"{class}\" fill=\"none\" points=\"{}\"/>",
        pts.join(" ")
    )
}

/// One chart's figure up to its caption: the heading, an SVG with a title
/// and description for screen readers, the top and bottom axis labels, and
/// the lines. The caller adds what follows the caption and `</figure>`.
struct Chart<'a> {
    id: &'a str,
    /// Prefix of the title and description element ids.
    short: &'a str,
    title: &'a str,
    caption: &'a str,
    top: &'a str,
    bottom: &'a str,
}

fn chart_open(out: &mut String, c: &Chart<'_>, lines: &[String]) {
    let _ = write!(
        out,
        "<figure class=\"chart\" id=\"{id}\"><h3>{t}</h3><svg viewBox=\"0 0 {CW} {CH}\" role=\"img\" aria-labelledby=\"{s}-t {s}-d\"><title id=\"{s}-t\">{t}</title><desc id=\"{s}-d\">{c}</desc>\
         <text class=\"axis\" x=\"4\" y=\"14\">{m}</text><text class=\"axis\" x=\"4\" y=\"{b}\">{z}</text>{p}</svg><figcaption>{c}</figcaption>",
        id = c.id,
        s = c.short,
        t = esc(c.title),
        c = esc(c.caption),
        m = c.top,
        z = c.bottom,
        b = px(CH - PAD / 2.0),
        p = lines.concat(),
    );
}

fn series_charts(out: &mut String, d: &LiveData, l: Locale) {
    let s = &d.series;
    if s.is_empty() {
        return;
    }
    let span = format!(
        "{} {}, {} – {}.",
        tr(l, "Um ponto por", "One point per"),
        duration(d.bucket_ms, l),
        utc_minute(s[0].start_ms),
        utc_minute(s[s.len() - 1].start_ms)
    );
    // Deliveries vs redeliveries.
    let del: Vec<f64> = s.iter().map(|p| p.deliveries as f64).collect();
    let red: Vec<f64> = s.iter().map(|p| p.redeliveries as f64).collect();
    let max = del.iter().cloned().fold(0.0, f64::max).max(1.0);
    let caption = format!(
        "{span} {}",
        tr(
            l,
            "Linha cheia: entregas; tracejada: reentregas.",
            "Solid: deliveries; dashed: redeliveries."
        )
    );
    chart_open(
        out,
        &Chart {
            id: "live-chart-deliveries",
            short: "lcd",
            title: tr(
                l,
                "Entregas e reentregas por intervalo",
                "Deliveries and redeliveries per bucket",
            ),
            caption: &caption,
            top: &count(max as i64, l),
            bottom: "0",
        },
        &[
            polyline(&del, max, "line deliveries"),
            polyline(&red, max, "line redeliveries"),
        ],
    );
    series_table(out, d, l);
    out.push_str("</figure>");
    // The duplicate rate per bucket.
    let rates: Vec<f64> = s
        .iter()
        .map(|p| {
            if p.intents > 0 {
                p.redelivered_intents as f64 * 100.0 / p.intents as f64
            } else {
                0.0
            }
        })
        .collect();
    let rmax = rates.iter().cloned().fold(0.0, f64::max).max(1.0).ceil();
    let caption = format!(
        "{span} {}",
        tr(
            l,
            "Intenções entregues mais de uma vez sobre intenções registradas no intervalo.",
            "Intents delivered more than once over intents recorded in the bucket."
        )
    );
    chart_open(
        out,
        &Chart {
            id: "live-chart-rate",
            short: "lcr",
            title: tr(
                l,
                "Taxa de duplicatas por intervalo",
                "Duplicate rate per bucket",
            ),
            caption: &caption,
            top: &format!("{rmax}%"),
            bottom: "0%",
        },
        &[polyline(&rates, rmax, "line rate")],
    );
    out.push_str("</figure>");
}

fn series_table(out: &mut String, d: &LiveData, l: Locale) {
    let _ = write!(
        out,
        "<details><summary>{}</summary><table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>",
        tr(l, "Tabela", "Table"),
        tr(l, "Início (UTC)", "Start (UTC)"),
        tr(l, "Entregas", "Deliveries"),
        tr(l, "Reentregas", "Redeliveries"),
        tr(l, "Taxa", "Rate"),
    );
    for p in d.series.iter().filter(|p| p.deliveries > 0) {
        let c = LiveCounts {
            intents: p.intents,
            redelivered_intents: p.redelivered_intents,
            ..LiveCounts::default()
        };
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
            utc_minute(p.start_ms),
            count(p.deliveries, l),
            count(p.redeliveries, l),
            c.duplicate_rate_pct()
                .map(|r| pct(r, l))
                .unwrap_or_else(|| "—".into())
        );
    }
    out.push_str("</tbody></table></details>");
}

fn rows_table(out: &mut String, d: &LiveData, l: Locale) {
    let _ = write!(
        out,
        "<h2>{}</h2><table class=\"live-rows\" id=\"live-rows\"><thead><tr>",
        tr(l, "Por tenant e tipo de ação", "By tenant and action type")
    );
    for h in [
        tr(l, "Tenant", "Tenant"),
        tr(l, "Ação", "Action"),
        tr(l, "Intenções", "Intents"),
        tr(l, "Entregas", "Deliveries"),
        tr(l, "Reentregas", "Redeliveries"),
        tr(l, "Taxa de duplicatas", "Duplicate rate"),
        tr(l, "Divergências", "Divergences"),
        tr(l, "Concluídas", "Completed"),
        tr(l, "Falharam", "Failed"),
        tr(l, "Incertas", "Uncertain"),
        tr(l, "Replays · 409 · 422", "Replays · 409 · 422"),
    ] {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    if d.rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"11\">{}</td></tr>",
            tr(
                l,
                "Nenhuma atividade na janela.",
                "No activity in the window."
            )
        );
    }
    for r in &d.rows {
        let c = &r.counts;
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} · {} · {}</td></tr>",
            esc(&r.tenant),
            esc(&r.action),
            count(c.intents, l),
            count(c.deliveries, l),
            count(c.redeliveries, l),
            esc(&rate_text(c, l)),
            count(c.divergences, l),
            count(c.actions_completed, l),
            count(c.actions_failed, l),
            count(c.actions_uncertain, l),
            count(c.http_replays, l),
            count(c.http_409, l),
            count(c.http_422, l),
        );
    }
    out.push_str("</tbody></table>");
}

/// The compact panel under the calculator.
pub fn panel_html(d: &LiveData, l: Locale) -> String {
    let mut out = String::from("<dl class=\"live-panel\">");
    let t = &d.totals;
    let mut item = |id: &str, k: &str, v: String| {
        let _ = write!(
            out,
            "<div id=\"{id}\"><dt>{}</dt><dd>{}</dd></div>",
            esc(k),
            esc(&v)
        );
    };
    item(
        "panel-intents",
        tr(l, "Intenções", "Intents"),
        count(t.intents, l),
    );
    item(
        "panel-rate",
        tr(l, "Taxa de duplicatas medida", "Measured duplicate rate"),
        rate_text(t, l),
    );
    item(
        "panel-divergences",
        tr(l, "Divergências", "Divergences"),
        count(t.divergences, l),
    );
    item(
        "panel-uncertain",
        tr(l, "Ações incertas agora", "Uncertain actions now"),
        count(d.uncertain, l),
    );
    out.push_str("</dl>");
    use_numbers_link(&mut out, d, l);
    let _ = write!(
        out,
        "<p><a href=\"/live?lang={}\" rel=\"external\">{}</a></p>",
        l.tag(),
        tr(l, "Abrir o monitor ao vivo", "Open the live monitor")
    );
    out
}

/// A text in both languages: the page's now, the other for `live.js`,
/// which switches it when the language changes in place.
fn both(l: Locale, pt: &str, en: &str) -> String {
    format!(
        "data-pt=\"{}\" data-en=\"{}\">{}",
        esc(pt),
        esc(en),
        esc(if l == Locale::EnUs { en } else { pt })
    )
}

/// The feed-status line `live.js` keeps current. Its texts travel as data
/// attributes, in both languages, so the script needs none of its own.
fn status_html(id: &str, l: Locale) -> String {
    let mut out =
        format!("<p id=\"{id}\" class=\"feed-status\" role=\"status\" data-state=\"connecting\"");
    for (state, pt, en) in [
        (
            "connecting",
            "conectando ao feed ao vivo…",
            "connecting to the live feed…",
        ),
        ("live", "ao vivo", "live"),
        ("reconnected", "ao vivo (reconectado)", "live (reconnected)"),
        (
            "stale",
            "dados desatualizados: sem notícias do servidor há mais de 5 s",
            "stale: no word from the server for over 5 s",
        ),
        (
            "disconnected",
            "desconectado: tentando reconectar…",
            "disconnected: trying to reconnect…",
        ),
        (
            "polling",
            "ao vivo (consultando a cada 2 s)",
            "live (polling every 2 s)",
        ),
        ("off", "sem feed ao vivo", "no live feed"),
    ] {
        let _ = write!(
            out,
            " data-pt-{state}=\"{}\" data-en-{state}=\"{}\"",
            esc(pt),
            esc(en)
        );
    }
    let _ = write!(
        out,
        ">{}</p>",
        tr(
            l,
            "conectando ao feed ao vivo…",
            "connecting to the live feed…"
        )
    );
    out
}

/// The whole `/live` page body: title, controls, feed status, numbers.
/// `feed` is empty when the viewer may not see traffic (then `numbers` is
/// the sign-in form or the reason).
pub fn page_html(controls: &str, numbers: &str, feed: &str, l: Locale) -> String {
    let mut out = format!(
        "<h1 {}</h1><div id=\"live-controls\">{controls}</div>",
        both(l, "Monitor de duplicatas ao vivo", "Live duplicate monitor")
    );
    if !feed.is_empty() {
        out.push_str(&status_html("live-status", l));
    }
    let _ = write!(
        out,
        "<div id=\"live-root\" class=\"live\" data-feed=\"{}\" data-status=\"live-status\">{numbers}</div>\
         <script src=\"/live.js\" defer></script>",
        esc(feed)
    );
    out
}

/// The calculator's panel: title, feed status, numbers.
pub fn panel_frame_html(numbers: &str, feed: &str, l: Locale) -> String {
    let mut out = format!(
        "<h2 id=\"live-panel-title\" {}</h2>",
        both(l, "Tráfego real (últimas 24 h)", "Real traffic (last 24 h)")
    );
    if !feed.is_empty() {
        out.push_str(&status_html("live-panel-status", l));
    }
    let _ = write!(
        out,
        "<div id=\"live-panel\" data-feed=\"{}\" data-status=\"live-panel-status\">{numbers}</div>\
         <script src=\"/live.js\" defer></script>",
        esc(feed)
    );
    out
}

/// The panel before the feed's first event (and, without JavaScript, for
/// good: with a link to the page that shows the numbers).
pub fn panel_waiting_html(l: Locale) -> String {
    format!(
        "<p class=\"note\">{} <a href=\"/live?lang={}\" rel=\"external\">{}</a></p>",
        tr(l, "Lendo o tráfego real…", "Reading real traffic…"),
        l.tag(),
        tr(l, "Abrir o monitor ao vivo", "Open the live monitor")
    )
}

/// What the panel and page say to a viewer who may not see traffic.
pub fn locked_html(l: Locale) -> String {
    format!(
        "<p class=\"live-locked\">{} <a href=\"/live?lang={}\" rel=\"external\">{}</a></p>",
        tr(
            l,
            "O tráfego real aparece aqui para quem entrar com um token.",
            "Real traffic shows here once you sign in with a token."
        ),
        l.tag(),
        tr(l, "Entrar", "Sign in")
    )
}

/// The sign-in form of `/live` (a token: admin, or a tenant's API token).
pub fn login_html(l: Locale, failed: bool) -> String {
    let mut out = String::new();
    if failed {
        let _ = write!(
            out,
            "<p class=\"field-error\" role=\"alert\">{}</p>",
            tr(
                l,
                "Token recusado: confira e tente de novo.",
                "Token refused: check it and try again."
            )
        );
    }
    let _ = write!(
        out,
        "<form class=\"live-login\" method=\"post\" action=\"/live/login\"><p>{}</p>\
         <label>{} <input type=\"password\" name=\"token\" autocomplete=\"current-password\" required></label>\
         <input type=\"hidden\" name=\"lang\" value=\"{}\"><button type=\"submit\">{}</button></form>",
        tr(
            l,
            "Este servidor não está só na máquina local: o monitor pede um token. O token de administração mostra todos os tenants; o token de API de um tenant mostra só o dele.",
            "This server is not loopback-only: the monitor asks for a token. The admin token shows every tenant; a tenant's API token shows only its own."
        ),
        tr(l, "Token", "Token"),
        l.tag(),
        tr(l, "Entrar", "Sign in")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(intents: i64, redelivered: i64) -> LiveCounts {
        LiveCounts {
            intents,
            redelivered_intents: redelivered,
            deliveries: intents + redelivered,
            redeliveries: redelivered,
            ..LiveCounts::default()
        }
    }

    #[test]
    fn the_rate_is_exact_and_absent_without_intents() {
        assert_eq!(
            totals(900, 27).duplicate_rate_pct(),
            Some(Decimal::new(300, 2))
        );
        assert_eq!(
            totals(3, 1).duplicate_rate_pct(),
            Some(Decimal::new(3333, 2))
        );
        assert_eq!(totals(0, 0).duplicate_rate_pct(), None);
    }

    #[test]
    fn use_these_numbers_scales_the_window_to_a_month() {
        // 1,000 intents in 24 h is 30,000 a month; 30 of them redelivered: 3%.
        let href = use_numbers_href(Window::Day, &totals(1_000, 30)).unwrap();
        assert_eq!(href, "/?v=1");
        let href = use_numbers_href(Window::Hour, &totals(10, 1)).unwrap();
        assert_eq!(href, "/?v=1&c=7200&d=10");
        assert_eq!(use_numbers_href(Window::Week, &totals(0, 0)), None);
    }

    #[test]
    fn the_monitor_escapes_what_tenants_wrote() {
        let d = LiveData {
            tenants: vec!["<b>x</b>".into()],
            rows: vec![LiveRow {
                tenant: "<b>x</b>".into(),
                action: "a&b".into(),
                counts: totals(2, 1),
            }],
            totals: totals(2, 1),
            use_numbers: use_numbers_href(Window::Day, &totals(2, 1)),
            ..LiveData::default()
        };
        let html = live_html(&d, Locale::EnUs);
        assert!(!html.contains("<b>x</b>"), "{html}");
        assert!(html.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(html.contains("a&amp;b"));
        assert!(html.contains("50.00% (1 of 2 intents)"), "{html}");
        assert!(panel_html(&d, Locale::PtBr).contains("50,00% (1 de 2 intenções)"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850, Locale::PtBr), "850 ms");
        assert_eq!(duration(90_000, Locale::PtBr), "1,5 min");
        assert_eq!(duration(2 * DAY, Locale::EnUs), "2 d");
    }
}
