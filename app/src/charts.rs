//! The calculator's three charts as SVG components: rendered on the server,
//! identical after hydration (the same Rust draws both), with text as SVG
//! text (no font files, no raster), a caption, and a table alternative.
//!
//! Money stays `Decimal`; only pixel positions are floats, rounded to a
//! tenth of a pixel so the server's and the browser's markup agree.

use crate::i18n::{field_label, tr, Prefs};
use idem_core::cost::CostOutputs;
use idem_core::locale::{format_money, format_pct, Locale};
use idem_core::scenario::{annual_loss, loss_curve, sensitivity, Scenario};
use leptos::prelude::*;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

const W: f64 = 640.0;

fn px(v: f64) -> String {
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
pub fn Charts(scenario: Scenario, outputs: CostOutputs) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || {
        let l = locale.get();
        view! {
            <section class="charts">
                <h2>{tr(l, "Gráficos", "Charts")}</h2>
                {loss_chart(&scenario, &outputs, l)}
                {breakdown_chart(&scenario, &outputs, l)}
                {tornado_chart(&scenario, &outputs, l)}
            </section>
        }
    }
}

fn loss_chart(s: &Scenario, o: &CostOutputs, l: Locale) -> impl IntoView {
    let curve: Vec<(Decimal, Decimal)> = loss_curve(&s.inputs)
        .unwrap_or_default()
        .into_iter()
        .map(|(r, v)| (r, s.shown(v)))
        .collect();
    let (h, left, right, top, bottom) = (260.0, 96.0, 16.0, 16.0, 40.0);
    let max = curve.iter().map(|(_, v)| f(*v)).fold(0.0, f64::max);
    let ymax = nice_ceiling(max.max(f(s.shown(annual_loss(o)))));
    let x = |rate: f64| left + rate / 10.0 * (W - left - right);
    let y = |v: f64| top + (1.0 - v / ymax) * (h - top - bottom);
    let points = curve
        .iter()
        .map(|(r, v)| format!("{},{}", px(x(f(*r))), px(y(f(*v)))))
        .collect::<Vec<_>>()
        .join(" ");
    let rate = f(s.inputs.duplicate_rate_pct);
    let here = s.shown(annual_loss(o));
    let caption = format!(
        "{} {} {}",
        tr(
            l,
            "Perda anual conforme a taxa de duplicatas, de 0% a 10%. No cenário atual,",
            "Annual loss by duplicate rate, from 0% to 10%. In the current scenario,"
        ),
        format_pct(s.inputs.duplicate_rate_pct, l),
        match l {
            Locale::PtBr => format!(
                "de duplicatas custam {} por ano.",
                format_money(here, l, s.currency)
            ),
            Locale::EnUs => format!(
                "duplicates cost {} a year.",
                format_money(here, l, s.currency)
            ),
        }
    );
    let y_ticks = (0..=4)
        .map(|k| {
            let v = ymax * f64::from(k) / 4.0;
            view! {
                <line class="grid" x1=px(left) x2=px(W - right) y1=px(y(v)) y2=px(y(v))/>
                <text class="tick" x=px(left - 6.0) y=px(y(v) + 4.0) text-anchor="end">{money0(v, s, l)}</text>
            }
        })
        .collect_view();
    let x_ticks = (0..=5)
        .map(|k| {
            let r = f64::from(k * 2);
            view! {
                <text class="tick" x=px(x(r)) y=px(h - bottom + 16.0) text-anchor="middle">{format!("{}%", k * 2)}</text>
            }
        })
        .collect_view();
    let marker = (rate <= 10.0).then(|| {
        view! {
            <circle class="marker" cx=px(x(rate)) cy=px(y(f(here))) r="5"/>
            <text class="marker-label" x=px(x(rate) + 8.0) y=px(y(f(here)) - 8.0)>
                {format!("{} {}", tr(l, "você:", "you:"), format_money(here, l, s.currency))}
            </text>
        }
    });
    let off_chart = (rate > 10.0).then(|| {
        view! { <p class="note">{tr(l, "A taxa atual passa de 10% e fica fora do gráfico.", "The current rate is above 10% and off the chart.")}</p> }
    });
    let rows = curve
        .iter()
        .map(|(r, v)| view! { <tr><td>{format_pct(*r, l)}</td><td>{format_money(*v, l, s.currency)}</td></tr> })
        .collect_view();
    view! {
        <figure class="chart" id="chart-loss">
            <h3>{tr(l, "Perda anual × taxa de duplicatas", "Annual loss × duplicate rate")}</h3>
            <svg viewBox=format!("0 0 {W} {h}") role="img" aria-labelledby="chart-loss-title chart-loss-desc">
                <title id="chart-loss-title">{tr(l, "Perda anual × taxa de duplicatas", "Annual loss × duplicate rate")}</title>
                <desc id="chart-loss-desc">{caption.clone()}</desc>
                {y_ticks}
                {x_ticks}
                <polyline class="series" points=points fill="none"/>
                {marker}
                <text class="axis" x=px((left + W - right) / 2.0) y=px(h - 4.0) text-anchor="middle">{tr(l, "conversas que repetem a chamada", "conversations that repeat the call")}</text>
            </svg>
            <figcaption>{caption}</figcaption>
            {off_chart}
            <details>
                <summary>{tr(l, "Tabela", "Table")}</summary>
                <table>
                    <thead><tr><th scope="col">{tr(l, "Taxa", "Rate")}</th><th scope="col">{tr(l, "Perda anual", "Annual loss")}</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </details>
        </figure>
    }
}

fn breakdown_chart(s: &Scenario, o: &CostOutputs, l: Locale) -> impl IntoView {
    let risk = o.risk.as_ref();
    let bars: Vec<(&'static str, &'static str, Option<Decimal>)> = vec![
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
    let svg_bars = bars
        .iter()
        .enumerate()
        .map(|(i, (key, label, v))| {
            let top = 5.0 + row_h * i as f64;
            let width = v.map_or(0.0, |v| f(s.shown(v)) / max * (W - left - right));
            let text = v.map_or_else(|| not_given.to_owned(), |v| format_money(s.shown(v), l, s.currency));
            view! {
                <text class="tick" x=px(left - 8.0) y=px(top + 24.0) text-anchor="end">{*label}</text>
                <rect class=format!("bar bar-{key}") x=px(left) y=px(top + 8.0) width=px(width) height="24"/>
                <text class="value-label" x=px(left + width + 6.0) y=px(top + 24.0)>{text}</text>
            }
        })
        .collect_view();
    let caption = tr(
        l,
        "O mês por categoria: o gasto útil com o modelo e o que as duplicatas custam (tokens, operação, reclamações).",
        "The month by category: useful model spend and what duplicates cost (tokens, operations, claims).",
    );
    let rows = bars
        .iter()
        .map(|(_, label, v)| {
            let text = v.map_or_else(
                || not_given.to_owned(),
                |v| format_money(s.shown(v), l, s.currency),
            );
            view! { <tr><th scope="row">{*label}</th><td>{text}</td></tr> }
        })
        .collect_view();
    view! {
        <figure class="chart" id="chart-breakdown">
            <h3>{tr(l, "Composição mensal", "Monthly breakdown")}</h3>
            <svg viewBox=format!("0 0 {W} {h}") role="img" aria-labelledby="chart-breakdown-title chart-breakdown-desc">
                <title id="chart-breakdown-title">{tr(l, "Composição mensal", "Monthly breakdown")}</title>
                <desc id="chart-breakdown-desc">{caption}</desc>
                {svg_bars}
            </svg>
            <figcaption>{caption}</figcaption>
            <details>
                <summary>{tr(l, "Tabela", "Table")}</summary>
                <table>
                    <thead><tr><th scope="col">{tr(l, "Categoria", "Category")}</th><th scope="col">{tr(l, "Por mês", "Per month")}</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </details>
        </figure>
    }
}

fn tornado_chart(s: &Scenario, o: &CostOutputs, l: Locale) -> impl IntoView {
    let swings = sensitivity(&s.inputs, Decimal::from(20)).unwrap_or_default();
    let base = f(s.shown(annual_loss(o)));
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
    let bars = swings
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let top = 10.0 + row_h * i as f64;
            let (a, b) = (f(s.shown(w.low)), f(s.shown(w.high)));
            let (x0, x1) = (x(a.min(b)), x(a.max(b)));
            view! {
                <text class="tick" x=px(left - 8.0) y=px(top + 19.0) text-anchor="end">{field_label(w.field, l)}</text>
                <rect class="bar bar-swing" x=px(x0) y=px(top + 6.0) width=px((x1 - x0).max(1.0)) height="18"/>
            }
        })
        .collect_view();
    let caption = format!(
        "{} {}",
        tr(l, "Sensibilidade: a perda anual quando cada entrada varia 20% para menos e para mais, da maior variação para a menor. Linha vertical: o cenário atual,", "Sensitivity: annual loss when each input moves 20% down and up, widest swing first. Vertical line: the current scenario,"),
        format_money(s.shown(annual_loss(o)), l, s.currency)
    );
    let rows = swings
        .iter()
        .map(|w| {
            view! {
                <tr>
                    <th scope="row">{field_label(w.field, l)}</th>
                    <td>{format_money(s.shown(w.low), l, s.currency)}</td>
                    <td>{format_money(s.shown(w.high), l, s.currency)}</td>
                    <td>{format_money(s.shown(w.width()), l, s.currency)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <figure class="chart" id="chart-tornado">
            <h3>{tr(l, "Sensibilidade (±20%)", "Sensitivity (±20%)")}</h3>
            <svg viewBox=format!("0 0 {W} {h}") role="img" aria-labelledby="chart-tornado-title chart-tornado-desc">
                <title id="chart-tornado-title">{tr(l, "Sensibilidade (±20%)", "Sensitivity (±20%)")}</title>
                <desc id="chart-tornado-desc">{caption.clone()}</desc>
                {bars}
                <line class="base" x1=px(x(base)) x2=px(x(base)) y1="4" y2=px(h - 30.0)/>
                <text class="tick" x=px(x(base)) y=px(h - 14.0) text-anchor="middle">{format_money(s.shown(annual_loss(o)), l, s.currency)}</text>
            </svg>
            <figcaption>{caption}</figcaption>
            <details>
                <summary>{tr(l, "Tabela", "Table")}</summary>
                <table>
                    <thead><tr>
                        <th scope="col">{tr(l, "Entrada", "Input")}</th>
                        <th scope="col">"−20%"</th>
                        <th scope="col">"+20%"</th>
                        <th scope="col">{tr(l, "Variação", "Swing")}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </details>
        </figure>
    }
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
}
