//! The calculator's three charts. The page shows each as an image whose
//! address carries the scenario (`/charts/{name}.svg?<scenario query>`),
//! with its caption and a table (the accessible alternative); the server
//! draws the SVG. So the chart writers are compiled for the server only
//! (feature `ssr`) and the wasm carries just the captions and tables: as
//! you type, the image's address changes and the browser fetches the new
//! drawing.
//!
//! Text is SVG text (no font files), each image carries its own style, and
//! every text that goes in is escaped. Money stays `Decimal`; only pixel
//! positions are floats, rounded to a tenth of a pixel.

use crate::i18n::{field_label, tr, Prefs};
use crate::markup::esc;
use idem_core::cost::CostOutputs;
use idem_core::locale::{format_money, format_pct, Locale};
use idem_core::scenario::{annual_loss, loss_curve, sensitivity, Scenario};
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::fmt::Write;

/// Every chart's width in SVG units.
pub const W: f64 = 640.0;

/// The calculator's charts, by the name in their address.
pub const NAMES: [&str; 3] = ["loss", "breakdown", "tornado"];

/// What a chart writer writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode<'a> {
    /// The page's figure: the image at `/charts/{name}.svg?{query}`, the
    /// caption and the table.
    Page(&'a str),
    /// The standalone SVG document that address serves.
    #[cfg(feature = "ssr")]
    Svg,
}

/// A coordinate, to a tenth of a unit.
#[cfg(feature = "ssr")]
pub fn px(v: f64) -> String {
    format!("{:.1}", if v.is_finite() { v } else { 0.0 })
}

#[cfg(feature = "ssr")]
fn f(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(0.0)
}

/// The smallest "round" number (1, 2 or 5 times a power of ten) at or above
/// `v`, so axes end on a readable value.
#[cfg(feature = "ssr")]
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|k| k * mag)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * mag)
}

#[cfg(feature = "ssr")]
fn money0(v: f64, s: &Scenario, l: Locale) -> String {
    let d = Decimal::from_f64_retain(v.round()).unwrap_or_default();
    format_money(d, l, s.currency())
}

/// The three charts of a scenario.
#[component]
pub fn Charts(
    /// The scenario the charts draw.
    scenario: Scenario,
    /// Its outputs.
    outputs: CostOutputs,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    view! { <section class="charts" inner_html=move || charts_html(&scenario, &outputs, locale.get())></section> }
}

/// The charts' markup on the page: each chart's image, caption and table.
pub fn charts_html(s: &Scenario, o: &CostOutputs, l: Locale) -> String {
    let q = format!("{}&lang={}", s.to_query(), l.tag());
    let mut out = format!("<h2>{}</h2>", tr(l, "Gráficos", "Charts"));
    for name in NAMES {
        write_chart(&mut out, Mode::Page(&q), name, s, o, l);
    }
    out
}

/// One chart as a standalone SVG document (what `/charts/{name}.svg`
/// serves), or `None` for an unknown name.
#[cfg(feature = "ssr")]
pub fn chart_svg(name: &str, s: &Scenario, o: &CostOutputs, l: Locale) -> Option<String> {
    NAMES.contains(&name).then(|| {
        let mut out = String::new();
        write_chart(&mut out, Mode::Svg, name, s, o, l);
        out
    })
}

fn write_chart(out: &mut String, mode: Mode, name: &str, s: &Scenario, o: &CostOutputs, l: Locale) {
    match name {
        "loss" => loss_chart(out, mode, s, o, l),
        "breakdown" => breakdown_chart(out, mode, s, o, l),
        _ => tornado_chart(out, mode, s, o, l),
    }
}

/// The style a standalone chart carries (an image does not see the page's
/// stylesheet).
#[cfg(feature = "ssr")]
const SVG_STYLE: &str = "text{font-family:system-ui,sans-serif}\
.grid{stroke:#e6e9ef;stroke-width:1}.tick{fill:#5b6472;font-size:11px}\
.axis{fill:#5b6472;font-size:12px}.series{stroke:#1f5fbf;stroke-width:2.5}\
.marker{fill:#b42318}.marker-label,.value-label{fill:#1c2330;font-size:12px;font-weight:600}\
.bar{fill:#9db4d6}.bar-waste,.bar-claims,.bar-ops{fill:#e07a5f}.bar-useful{fill:#1f5fbf}\
.bar-swing{fill:#6c8ebf}.base{stroke:#1c2330;stroke-dasharray:4 3}";

/// Opens a chart: on the page, the figure with its heading and image; as
/// SVG, the document with its accessible name, description and style.
fn open(out: &mut String, mode: Mode, name: &str, title: &str, caption: &str, h: f64) {
    match mode {
        Mode::Page(q) => {
            let src = esc(&format!("/charts/{name}.svg?{q}"));
            // Whole pixels written as integers: formatting a float would
            // bring the float printer into the wasm (about 13 KB).
            let height = h as u32;
            let _ = write!(
                out,
                "<figure class=\"chart\" id=\"chart-{name}\"><h3>{t}</h3>\
                 <img src=\"{src}\" alt=\"{c}\" width=\"640\" height=\"{height}\" decoding=\"async\">",
                t = esc(title),
                c = esc(caption),
            );
        }
        #[cfg(feature = "ssr")]
        Mode::Svg => {
            let _ = write!(
                out,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {h}\" width=\"{W}\" height=\"{h}\" role=\"img\">\
                 <title>{t}</title><desc>{c}</desc><style>{SVG_STYLE}</style>\
                 <rect width=\"100%\" height=\"100%\" fill=\"#fff\"></rect>",
                t = esc(title),
                c = esc(caption),
            );
        }
    }
}

/// Closes a chart: on the page, the caption, a link to the image, an
/// optional note and the table; as SVG, the document.
fn close(
    out: &mut String,
    mode: Mode,
    caption: &str,
    note: Option<&str>,
    l: Locale,
    head: &[&str],
    rows: &[Vec<String>],
) {
    #[cfg(feature = "ssr")]
    if mode == Mode::Svg {
        out.push_str("</svg>");
        return;
    }
    #[cfg(not(feature = "ssr"))]
    let _ = mode; // only the page's figures exist in the browser build
    let _ = write!(out, "<figcaption>{}</figcaption>", esc(caption));
    if let Some(n) = note {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    table(out, l, head, rows);
    out.push_str("</figure>");
}

fn table(out: &mut String, l: Locale, head: &[&str], rows: &[Vec<String>]) {
    let _ = write!(
        out,
        "<details><summary>{}</summary><table><thead><tr>",
        tr(l, "Tabela", "Table")
    );
    for h in head {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                let _ = write!(out, "<td>{}</td>", esc(cell));
            } else {
                let _ = write!(out, "<th scope=\"row\">{}</th>", esc(cell));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></details>");
}

/// Opens a figure with an inline SVG: heading, the SVG's accessible name
/// and description. The live monitor's charts (drawn on the server, inline
/// in its markup) open and close their figures here.
#[cfg(feature = "ssr")]
pub fn open_figure(out: &mut String, id: &str, title: &str, caption: &str, h: f64) {
    let _ = write!(
        out,
        "<figure class=\"chart\" id=\"{id}\"><h3>{t}</h3>\
         <svg viewBox=\"0 0 {W} {h}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\">\
         <title id=\"{id}-title\">{t}</title><desc id=\"{id}-desc\">{c}</desc>",
        t = esc(title),
        c = esc(caption),
    );
}

/// Closes a figure [`open_figure`] opened, with its caption, an optional
/// note, and its table (the first cell of each row is its header).
#[cfg(feature = "ssr")]
pub fn close_figure(
    out: &mut String,
    caption: &str,
    note: Option<&str>,
    l: Locale,
    head: &[&str],
    rows: &[Vec<String>],
) {
    let _ = write!(out, "</svg><figcaption>{}</figcaption>", esc(caption));
    if let Some(n) = note {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    table(out, l, head, rows);
    out.push_str("</figure>");
}

/// An SVG text, escaped.
#[cfg(feature = "ssr")]
pub fn text(out: &mut String, class: &str, x: f64, y: f64, anchor: &str, body: &str) {
    let _ = write!(
        out,
        "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
        px(x),
        px(y),
        esc(body)
    );
}

fn loss_chart(out: &mut String, mode: Mode, s: &Scenario, o: &CostOutputs, l: Locale) {
    let curve: Vec<(Decimal, Decimal)> = loss_curve(&s.inputs).unwrap_or_default();
    let h = 260.0;
    let here = annual_loss(o);
    let off_chart = s.inputs.duplicate_rate_pct > Decimal::TEN;
    let money = |d: Decimal| format_money(d, l, s.currency());
    let caption = match l {
        Locale::PtBr => format!(
            "Perda anual conforme a taxa de duplicatas, de 0% a 10%. No cenário atual, {} de duplicatas custam {} por ano.",
            format_pct(s.inputs.duplicate_rate_pct, l),
            money(here)
        ),
        Locale::EnUs => format!(
            "Annual loss by duplicate rate, from 0% to 10%. In the current scenario, {} duplicates cost {} a year.",
            format_pct(s.inputs.duplicate_rate_pct, l),
            money(here)
        ),
    };
    let title = tr(
        l,
        "Perda anual × taxa de duplicatas",
        "Annual loss × duplicate rate",
    );
    open(out, mode, "loss", title, &caption, h);
    #[cfg(feature = "ssr")]
    if mode == Mode::Svg {
        let (left, right, top, bottom) = (96.0, 16.0, 16.0, 40.0);
        let max = curve.iter().map(|(_, v)| f(*v)).fold(f(here), f64::max);
        let ymax = nice_ceiling(max);
        let x = |rate: f64| left + rate / 10.0 * (W - left - right);
        let y = |v: f64| top + (1.0 - v / ymax) * (h - top - bottom);
        let rate = f(s.inputs.duplicate_rate_pct);
        for k in 0..=4 {
            let v = ymax * f64::from(k) / 4.0;
            let _ = write!(
                out,
                "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"></line>",
                px(left),
                px(W - right),
                px(y(v)),
                px(y(v))
            );
            text(out, "tick", left - 6.0, y(v) + 4.0, "end", &money0(v, s, l));
        }
        for k in 0..=5 {
            let r = f64::from(k * 2);
            text(
                out,
                "tick",
                x(r),
                h - bottom + 16.0,
                "middle",
                &format!("{}%", k * 2),
            );
        }
        let points = curve
            .iter()
            .map(|(r, v)| format!("{},{}", px(x(f(*r))), px(y(f(*v)))))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            out,
            "<polyline class=\"series\" fill=\"none\" points=\"{points}\"></polyline>"
        );
        if rate <= 10.0 {
            let (cx, cy) = (x(rate), y(f(here)));
            let _ = write!(
                out,
                "<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"5\"></circle>",
                px(cx),
                px(cy)
            );
            let label = format!("{} {}", tr(l, "você:", "you:"), money(here));
            text(out, "marker-label", cx + 8.0, cy - 8.0, "start", &label);
        }
        let axis = tr(
            l,
            "conversas que repetem a chamada",
            "conversations that repeat the call",
        );
        text(
            out,
            "axis",
            (left + W - right) / 2.0,
            h - 4.0,
            "middle",
            axis,
        );
    }
    let note = off_chart.then(|| {
        tr(
            l,
            "A taxa atual passa de 10% e fica fora do gráfico.",
            "The current rate is above 10% and off the chart.",
        )
    });
    let rows: Vec<Vec<String>> = curve
        .iter()
        .map(|(r, v)| vec![format_pct(*r, l), money(*v)])
        .collect();
    close(
        out,
        mode,
        &caption,
        note,
        l,
        &[tr(l, "Taxa", "Rate"), tr(l, "Perda anual", "Annual loss")],
        &rows,
    );
}

fn breakdown_chart(out: &mut String, mode: Mode, s: &Scenario, o: &CostOutputs, l: Locale) {
    let risk = o.risk.as_ref();
    let bars: [(&str, &str, Option<Decimal>); 4] = [
        (
            "useful",
            tr(l, "Gasto útil com o modelo", "Useful model spend"),
            Some(o.monthly_useful_spend),
        ),
        (
            "waste",
            tr(l, "Token queimado", "Tokens burnt"),
            Some(o.monthly_token_waste),
        ),
        (
            "ops",
            tr(l, "Custo operacional", "Operational cost"),
            risk.map(|r| r.monthly_ops_cost),
        ),
        (
            "claims",
            tr(l, "Exposição a reclamações", "Claim exposure"),
            risk.map(|r| r.monthly_claim_exposure),
        ),
    ];
    let row_h = 40.0;
    let h = row_h * bars.len() as f64 + 10.0;
    let not_given = tr(l, "sem dados de risco", "no risk inputs");
    let shown = |v: Option<Decimal>| {
        v.map_or_else(
            || not_given.to_owned(),
            |v| format_money(v, l, s.currency()),
        )
    };
    let caption = tr(
        l,
        "O mês por categoria: o gasto útil com o modelo e o que as duplicatas custam (tokens, operação, reclamações).",
        "The month by category: useful model spend and what duplicates cost (tokens, operations, claims).",
    );
    open(
        out,
        mode,
        "breakdown",
        tr(l, "Composição mensal", "Monthly breakdown"),
        caption,
        h,
    );
    #[cfg(feature = "ssr")]
    if mode == Mode::Svg {
        let (left, right) = (200.0, 150.0);
        let max = nice_ceiling(
            bars.iter()
                .filter_map(|(_, _, v)| v.map(f))
                .fold(0.0, f64::max),
        );
        for (i, (key, label, v)) in bars.iter().enumerate() {
            let top = 5.0 + row_h * i as f64;
            let width = v.map_or(0.0, |v| f(v) / max * (W - left - right));
            text(out, "tick", left - 8.0, top + 24.0, "end", label);
            let _ = write!(
            out,
            "<rect class=\"bar bar-{key}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"24\"></rect>",
            px(left),
            px(top + 8.0),
            px(width)
        );
            text(
                out,
                "value-label",
                left + width + 6.0,
                top + 24.0,
                "start",
                &shown(*v),
            );
        }
    }
    let rows: Vec<Vec<String>> = bars
        .iter()
        .map(|(_, label, v)| vec![(*label).to_owned(), shown(*v)])
        .collect();
    close(
        out,
        mode,
        caption,
        None,
        l,
        &[
            tr(l, "Categoria", "Category"),
            tr(l, "Por mês", "Per month"),
        ],
        &rows,
    );
}

fn tornado_chart(out: &mut String, mode: Mode, s: &Scenario, o: &CostOutputs, l: Locale) {
    let swings = sensitivity(&s.inputs, Decimal::from(20)).unwrap_or_default();
    let here = annual_loss(o);
    let row_h = 30.0;
    let h = row_h * swings.len() as f64 + 40.0;
    let money = |d: Decimal| format_money(d, l, s.currency());
    let caption = format!(
        "{} {}",
        tr(l, "Sensibilidade: a perda anual quando cada entrada varia 20% para menos e para mais, da maior variação para a menor. Linha vertical: o cenário atual,", "Sensitivity: annual loss when each input moves 20% down and up, widest swing first. Vertical line: the current scenario,"),
        format_money(here, l, s.currency())
    );
    open(
        out,
        mode,
        "tornado",
        tr(l, "Sensibilidade (±20%)", "Sensitivity (±20%)"),
        &caption,
        h,
    );
    #[cfg(feature = "ssr")]
    if mode == Mode::Svg {
        let base = f(here);
        let (left, right) = (250.0, 20.0);
        let lo = swings
            .iter()
            .map(|w| f(w.low.min(w.high)))
            .fold(base, f64::min);
        let hi = swings
            .iter()
            .map(|w| f(w.low.max(w.high)))
            .fold(base, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        let (lo, hi) = (lo - span * 0.05, hi + span * 0.05);
        let x = |v: f64| left + (v - lo) / (hi - lo) * (W - left - right);
        for (i, w) in swings.iter().enumerate() {
            let top = 10.0 + row_h * i as f64;
            let (a, b) = (f(w.low), f(w.high));
            let (x0, x1) = (x(a.min(b)), x(a.max(b)));
            text(
                out,
                "tick",
                left - 8.0,
                top + 19.0,
                "end",
                field_label(w.field, l),
            );
            let _ = write!(
            out,
            "<rect class=\"bar bar-swing\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"18\"></rect>",
            px(x0),
            px(top + 6.0),
            px((x1 - x0).max(1.0))
        );
        }
        let _ = write!(
            out,
            "<line class=\"base\" x1=\"{0}\" x2=\"{0}\" y1=\"4\" y2=\"{1}\"></line>",
            px(x(base)),
            px(h - 30.0)
        );
        text(
            out,
            "tick",
            x(base),
            h - 14.0,
            "middle",
            &format_money(here, l, s.currency()),
        );
    }
    let rows: Vec<Vec<String>> = swings
        .iter()
        .map(|w| {
            vec![
                field_label(w.field, l).to_owned(),
                money(w.low),
                money(w.high),
                money(w.width()),
            ]
        })
        .collect();
    close(
        out,
        mode,
        &caption,
        None,
        l,
        &[
            tr(l, "Entrada", "Input"),
            "−20%",
            "+20%",
            tr(l, "Variação", "Swing"),
        ],
        &rows,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ssr")]
    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_ceiling(5940.0), 10000.0);
        assert_eq!(nice_ceiling(1782.0), 2000.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(px(f64::INFINITY), "0.0");
    }

    #[test]
    fn the_page_shows_each_chart_as_an_image_with_its_table() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|_| unreachable!());
        let html = charts_html(&s, &o, Locale::PtBr);
        for name in NAMES {
            assert!(
                html.contains(&format!("<figure class=\"chart\" id=\"chart-{name}\">")),
                "{name}"
            );
            assert!(html.contains(&format!(
                "<img src=\"/charts/{name}.svg?v=2&amp;lang=pt-BR\""
            )));
        }
        assert_eq!(
            html.matches("<figure").count(),
            html.matches("</figure>").count()
        );
        assert_eq!(html.matches("<table>").count(), 3);
        assert!(!html.contains("<svg"), "no drawing on the page");
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn the_reference_charts_are_complete_and_escaped() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|_| unreachable!());
        for name in NAMES {
            let svg = chart_svg(name, &s, &o, Locale::PtBr).unwrap_or_default();
            assert!(
                svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
                "{name}"
            );
            assert!(svg.ends_with("</svg>"), "{name}");
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{name}");
        }
        let loss = chart_svg("loss", &s, &o, Locale::PtBr).unwrap_or_default();
        assert!(loss.contains("você: R$ 1.782,00"));
        assert!(chart_svg("pie", &s, &o, Locale::PtBr).is_none());
    }
}
