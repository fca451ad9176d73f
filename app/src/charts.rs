//! The calculator's three charts as SVG: rendered on the server, identical
//! after hydration (the same Rust draws both), with text as SVG text (no font
//! files, no raster), a caption, and a table alternative.
//!
//! The markup is written as a string and set as the section's inner HTML:
//! each SVG element as a typed view cost the release wasm about 55 KB
//! gzipped (a fifth of its budget) for markup that has no event handlers.
//! Every text that goes in is escaped.
//!
//! Money stays `Decimal`; only pixel positions are floats, rounded to a
//! tenth of a pixel so the server's and the browser's markup agree.

use crate::i18n::{field_label, tr, Prefs};
use crate::markup::esc;
use idem_core::cost::CostOutputs;
use idem_core::locale::{format_money, format_pct, Locale};
use idem_core::scenario::{annual_loss, loss_curve, sensitivity, Scenario};
use leptos::prelude::*;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::fmt::Write;

/// Every chart's width in SVG units.
pub const W: f64 = 640.0;

/// A coordinate, to a tenth of a unit (so server and browser agree).
pub fn px(v: f64) -> String {
    format!("{:.1}", if v.is_finite() { v } else { 0.0 })
}

fn f(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(0.0)
}

/// The smallest "round" number (1, 2 or 5 times a power of ten) at or above
/// `v`, so axes end on a readable value.
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

fn money0(v: f64, s: &Scenario, l: Locale) -> String {
    let d = Decimal::from_f64_retain(v.round()).unwrap_or_default();
    format_money(d, l, s.currency)
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

/// The charts' markup.
pub fn charts_html(s: &Scenario, o: &CostOutputs, l: Locale) -> String {
    let mut out = format!("<h2>{}</h2>", tr(l, "Gráficos", "Charts"));
    loss_chart(&mut out, s, o, l);
    breakdown_chart(&mut out, s, o, l);
    tornado_chart(&mut out, s, o, l);
    out
}

/// Opens a figure: heading, the SVG's accessible name and description.
/// The one chart writer: the calculator's charts and the live monitor's
/// (drawn on the server) both open and close their figures here.
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

/// Closes a figure with its caption, an optional note, and its table
/// (the first cell of each row is its header).
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
            if i == 0 {
                let _ = write!(out, "<th scope=\"row\">{}</th>", esc(cell));
            } else {
                let _ = write!(out, "<td>{}</td>", esc(cell));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></details></figure>");
}

/// An SVG text, escaped.
pub fn text(out: &mut String, class: &str, x: f64, y: f64, anchor: &str, body: &str) {
    let _ = write!(
        out,
        "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
        px(x),
        px(y),
        esc(body)
    );
}

fn loss_chart(out: &mut String, s: &Scenario, o: &CostOutputs, l: Locale) {
    let curve: Vec<(Decimal, Decimal)> = loss_curve(&s.inputs)
        .unwrap_or_default()
        .into_iter()
        .map(|(r, v)| (r, s.shown(v)))
        .collect();
    let (h, left, right, top, bottom) = (260.0, 96.0, 16.0, 16.0, 40.0);
    let here = s.shown(annual_loss(o));
    let max = curve.iter().map(|(_, v)| f(*v)).fold(f(here), f64::max);
    let ymax = nice_ceiling(max);
    let x = |rate: f64| left + rate / 10.0 * (W - left - right);
    let y = |v: f64| top + (1.0 - v / ymax) * (h - top - bottom);
    let rate = f(s.inputs.duplicate_rate_pct);
    let money = |d: Decimal| format_money(d, l, s.currency);
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
    open_figure(out, "chart-loss", title, &caption, h);
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
    let note = (rate > 10.0).then(|| {
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
    close_figure(
        out,
        &caption,
        note,
        l,
        &[tr(l, "Taxa", "Rate"), tr(l, "Perda anual", "Annual loss")],
        &rows,
    );
}

fn breakdown_chart(out: &mut String, s: &Scenario, o: &CostOutputs, l: Locale) {
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
    let (row_h, left, right) = (40.0, 200.0, 150.0);
    let h = row_h * bars.len() as f64 + 10.0;
    let max = nice_ceiling(
        bars.iter()
            .filter_map(|(_, _, v)| v.map(|v| f(s.shown(v))))
            .fold(0.0, f64::max),
    );
    let not_given = tr(l, "sem dados de risco", "no risk inputs");
    let shown = |v: Option<Decimal>| {
        v.map_or_else(
            || not_given.to_owned(),
            |v| format_money(s.shown(v), l, s.currency),
        )
    };
    let caption = tr(
        l,
        "O mês por categoria: o gasto útil com o modelo e o que as duplicatas custam (tokens, operação, reclamações).",
        "The month by category: useful model spend and what duplicates cost (tokens, operations, claims).",
    );
    open_figure(
        out,
        "chart-breakdown",
        tr(l, "Composição mensal", "Monthly breakdown"),
        caption,
        h,
    );
    for (i, (key, label, v)) in bars.iter().enumerate() {
        let top = 5.0 + row_h * i as f64;
        let width = v.map_or(0.0, |v| f(s.shown(v)) / max * (W - left - right));
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
    let rows: Vec<Vec<String>> = bars
        .iter()
        .map(|(_, label, v)| vec![(*label).to_owned(), shown(*v)])
        .collect();
    close_figure(
        out,
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

fn tornado_chart(out: &mut String, s: &Scenario, o: &CostOutputs, l: Locale) {
    let swings = sensitivity(&s.inputs, Decimal::from(20)).unwrap_or_default();
    let here = s.shown(annual_loss(o));
    let base = f(here);
    let (row_h, left, right) = (30.0, 250.0, 20.0);
    let h = row_h * swings.len() as f64 + 40.0;
    let lo = swings
        .iter()
        .map(|w| f(s.shown(w.low.min(w.high))))
        .fold(base, f64::min);
    let hi = swings
        .iter()
        .map(|w| f(s.shown(w.low.max(w.high))))
        .fold(base, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let (lo, hi) = (lo - span * 0.05, hi + span * 0.05);
    let x = |v: f64| left + (v - lo) / (hi - lo) * (W - left - right);
    let money = |d: Decimal| format_money(s.shown(d), l, s.currency);
    let caption = format!(
        "{} {}",
        tr(l, "Sensibilidade: a perda anual quando cada entrada varia 20% para menos e para mais, da maior variação para a menor. Linha vertical: o cenário atual,", "Sensitivity: annual loss when each input moves 20% down and up, widest swing first. Vertical line: the current scenario,"),
        format_money(here, l, s.currency)
    );
    open_figure(
        out,
        "chart-tornado",
        tr(l, "Sensibilidade (±20%)", "Sensitivity (±20%)"),
        &caption,
        h,
    );
    for (i, w) in swings.iter().enumerate() {
        let top = 10.0 + row_h * i as f64;
        let (a, b) = (f(s.shown(w.low)), f(s.shown(w.high)));
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
        &format_money(here, l, s.currency),
    );
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
    close_figure(
        out,
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

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_ceiling(5940.0), 10000.0);
        assert_eq!(nice_ceiling(1782.0), 2000.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(px(f64::INFINITY), "0.0");
    }

    #[test]
    fn the_reference_charts_are_complete_and_escaped() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|_| unreachable!());
        let html = charts_html(&s, &o, Locale::PtBr);
        for id in ["chart-loss", "chart-breakdown", "chart-tornado"] {
            assert!(
                html.contains(&format!("<figure class=\"chart\" id=\"{id}\">")),
                "{id}"
            );
        }
        assert!(html.contains("você: R$ 1.782,00"));
        assert_eq!(
            html.matches("<figure").count(),
            html.matches("</figure>").count()
        );
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(!html.contains("NaN") && !html.contains("inf"));
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
