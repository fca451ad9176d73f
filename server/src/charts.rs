//! Every chart the product shows, drawn by plotters: the calculator's
//! three (annual loss × duplicate rate, the monthly breakdown, the ±20%
//! tornado), the comparison's annual loss per scenario, and the monitor's
//! deliveries and duplicate rate over time.
//!
//! One drawing per chart ([`Draw`]) goes to either backend: SVG to a
//! string (text stays SVG text, laid out with the shipped font's metrics
//! and shown in the reader's sans-serif), or RGB pixels encoded as PNG,
//! with text rasterized from DejaVu Sans (Bitstream Vera license, see
//! `server/fonts/LICENSE-DejaVu`), compiled into the binary so a server
//! needs no installed fonts.
//!
//! Numbers are formatted by `idem_core::locale` in the page's language;
//! money stays `Decimal` until it becomes a pixel position. Every chart
//! draws a bounded number of elements (at most a few dozen points or bars),
//! so one render is bounded in time and memory whatever the inputs.

use crate::figures::{CompareColumn, CompareTotal, Figure};
use app::charts::W;
use app::i18n::{field_label, tr, utc_minute};
use idem_core::cost::CostOutputs;
use idem_core::locale::{format_count, format_money, format_pct, Currency, Locale};
use idem_core::scenario::{annual_loss, loss_curve, Scenario};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use std::ops::RangeInclusive;
use std::sync::Once;

/// The font text is measured and rasterized with.
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
/// The family the drawings ask for (registered to [`FONT`]).
const FAMILY: &str = "sans-serif";

/// The widths a PNG may be drawn at.
pub const PNG_WIDTHS: RangeInclusive<u32> = 320..=2560;
/// A PNG's width when the address names none: twice the SVG's, sharp on a
/// slide.
pub const PNG_WIDTH: u32 = 1280;

const BLUE: RGBColor = RGBColor(0x1f, 0x5f, 0xbf);
const PALE_BLUE: RGBColor = RGBColor(0x6c, 0x8e, 0xbf);
const RED: RGBColor = RGBColor(0xb4, 0x23, 0x18);
const ORANGE: RGBColor = RGBColor(0xe0, 0x7a, 0x5f);
const INK: RGBColor = RGBColor(0x1c, 0x23, 0x30);
const MUTED: RGBColor = RGBColor(0x5b, 0x64, 0x72);
const GRID: RGBColor = RGBColor(0xe6, 0xe9, 0xef);

/// How a chart is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An SVG document, [`W`] units wide.
    Svg,
    /// A PNG this many pixels wide (within [`PNG_WIDTHS`]).
    Png(u32),
}

impl Format {
    /// The `Content-Type` of the encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Svg => "image/svg+xml; charset=utf-8",
            Format::Png(_) => "image/png",
        }
    }

    /// Reads `format` and `width` from an address: `svg` (the default) or
    /// `png`, whose width defaults to [`PNG_WIDTH`].
    pub fn parse(format: Option<&str>, width: Option<&str>) -> Result<Self, String> {
        match format.unwrap_or("svg") {
            "svg" if width.is_none() => Ok(Format::Svg),
            "svg" => Err("width applies to format=png only".into()),
            "png" => {
                let w = match width {
                    None => PNG_WIDTH,
                    Some(w) => w
                        .parse::<u32>()
                        .map_err(|_| format!("width={w:?} is not a whole number of pixels"))?,
                };
                if PNG_WIDTHS.contains(&w) {
                    Ok(Format::Png(w))
                } else {
                    Err(format!(
                        "width={w}: a PNG is {} to {} pixels wide",
                        PNG_WIDTHS.start(),
                        PNG_WIDTHS.end()
                    ))
                }
            }
            other => Err(format!("format={other:?}: use svg or png")),
        }
    }
}

/// A chart that could not be drawn (a plotters or PNG encoder error: a
/// defect, never the reader's input).
#[derive(Debug)]
pub struct ChartError(String);

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "chart: {}", self.0)
    }
}

impl std::error::Error for ChartError {}

impl From<String> for ChartError {
    fn from(why: String) -> Self {
        ChartError(why)
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A drawing, at any scale: `k` multiplies every length (1 for SVG).
trait Draw {
    fn figure(&self) -> &Figure;
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> DrawResult<DB>;
}

fn fonts() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            if plotters::style::register_font(FAMILY, style, FONT).is_err() {
                tracing::error!("the shipped chart font does not parse");
            }
        }
    });
}

fn render(chart: &impl Draw, format: Format) -> Result<Vec<u8>, ChartError> {
    fonts();
    let fig = chart.figure();
    let fail = |e: &dyn std::fmt::Display| ChartError(e.to_string());
    match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (W, fig.height)).into_drawing_area();
                chart.draw(&root, 1.0).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            Ok(accessible(svg, fig).into_bytes())
        }
        Format::Png(width) => {
            let k = f64::from(width) / f64::from(W);
            let height = (f64::from(fig.height) * k).round() as u32;
            let mut pixels = vec![0u8; width as usize * height as usize * 3];
            {
                let root =
                    BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
                chart.draw(&root, k).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            let mut out = Vec::new();
            let mut enc = png::Encoder::new(&mut out, width, height);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().map_err(|e| fail(&e))?;
            w.write_image_data(&pixels).map_err(|e| fail(&e))?;
            w.finish().map_err(|e| fail(&e))?;
            Ok(out)
        }
    }
}

/// Gives the SVG its accessible name and description (the page's heading
/// and caption) and the `img` role.
fn accessible(svg: String, fig: &Figure) -> String {
    let Some(open_end) = svg.find('>') else {
        return svg;
    };
    let (head, rest) = svg.split_at(open_end);
    let named = maud::html! { title { (fig.title) } desc { (fig.caption) } };
    format!("{head} role=\"img\">{}{}", named.into_string(), &rest[1..])
}

fn f(d: Decimal) -> f64 {
    d.to_f64().filter(|v| v.is_finite()).unwrap_or(0.0)
}

/// A length at scale `k`, in whole pixels.
fn px(k: f64, v: f64) -> u32 {
    (v * k).round().max(0.0) as u32
}

fn font(k: f64, size: f64, color: RGBColor) -> TextStyle<'static> {
    (FAMILY, size * k).into_font().color(&color)
}

/// An axis from zero to a round value just above the data: at most
/// `steps` equal steps of 1, 2, 2.5 or 5 times a power of ten (never finer
/// than `finest`, a cent or one count), ending on the first step at or
/// above `top`. Returns the end and every tick, zero included, so the last
/// tick is the end of the axis: R$ 5.940 gets 0 to 6.000 by 2.000, not an
/// axis to 10.000 with its upper half empty.
fn round_axis(top: f64, steps: usize, finest: f64) -> (f64, Vec<f64>) {
    let top = if top.is_finite() && top > 0.0 {
        top
    } else {
        finest
    };
    let step = nice_step((top / steps.max(1) as f64).max(finest));
    let n = (top / step - 1e-9).ceil().max(1.0) as usize;
    let end = n as f64 * step;
    (end, (0..=n).map(|i| i as f64 * step).collect())
}

/// The smallest step of 1, 2, 2.5 or 5 times a power of ten at or above
/// `raw` (positive and finite).
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    // The tolerance keeps a raw step of exactly 2000 from becoming 2500
    // through a last-bit error of the division.
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|c| c * mag)
        .find(|c| *c >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// Round ticks inside `lo..=hi` (an axis that does not start at zero, the
/// tornado's), at most `steps + 1` of them; none for an empty range.
fn inner_ticks(lo: f64, hi: f64, steps: usize) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return Vec::new();
    }
    let step = nice_step(span / steps.max(1) as f64);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A number axis whose ticks are exactly the ones given: labels where the
/// chart wants them (a round step, the middle of a bar's row), and no
/// unlabelled light lines. plotters' own `WithKeyPoints` over an `f64`
/// range lacks the value formatter its mesh asks for.
#[derive(Clone)]
struct Ticked {
    range: RangedCoordf64,
    ticks: Vec<f64>,
}

fn ticked(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Ticked {
    Ticked {
        range: range.into(),
        ticks,
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// An amount on an axis in the page's notation: whole units when every
/// tick of the axis is whole ("R$ 2.000", shorter, so five fit side by
/// side), else to the cent.
fn money_tick(v: f64, minor: bool, l: Locale, c: Currency) -> String {
    let d = Decimal::from_f64_retain(v)
        .unwrap_or_default()
        .round_dp(c.minor_units());
    // One writer for every amount: the currency's own minor unit when a
    // tick needs it, else whole units (never a label cut by bytes: a yen
    // or dinar label is not "…,00").
    if minor {
        format_money(d, l, c)
    } else {
        idem_core::locale::format_money_whole(d, l, c)
    }
}

/// Whether an axis's ticks need the currency's minor unit to be told apart.
fn needs_minor(ticks: &[f64], c: Currency) -> bool {
    ticks.iter().any(|t| {
        Decimal::from_f64_retain(*t)
            .unwrap_or_default()
            .round_dp(c.minor_units())
            .fract()
            != Decimal::ZERO
    })
}

fn pct_tick(v: f64, l: Locale) -> String {
    let d = Decimal::from_f64_retain(v).unwrap_or_default().round_dp(2);
    format_pct(d, l)
}

/// A label cut to what the label column holds (the table under the chart
/// has it whole).
fn short(label: &str) -> String {
    const MAX: usize = 34;
    if label.chars().count() <= MAX {
        label.to_owned()
    } else {
        let cut: String = label.chars().take(MAX - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

// ---------------------------------------------------------------------------
// The calculator's charts.

/// A calculator chart of a scenario, or `None` for an unknown name.
pub fn scenario_chart(
    name: &str,
    s: &Scenario,
    o: &CostOutputs,
    l: Locale,
    format: Format,
) -> Option<Result<Vec<u8>, ChartError>> {
    let figure = crate::figures::figure(name, s, o, l)?;
    let c = s.currency();
    Some(match name {
        "loss" => render(
            &Loss {
                curve: loss_curve(&s.inputs)
                    .unwrap_or_default()
                    .iter()
                    .map(|(r, v)| (f(*r), f(*v)))
                    .collect(),
                rate: f(s.inputs.duplicate_rate_pct),
                here: annual_loss(o),
                figure,
                l,
                c,
            },
            format,
        ),
        "breakdown" => render(
            &Bars {
                bars: crate::figures::breakdown_bars(o, l)
                    .iter()
                    .map(|(key, label, v)| Bar {
                        label: short(label),
                        value: v.map(f),
                        shown: v.map_or_else(
                            || crate::figures::no_risk_text(l).to_owned(),
                            |v| format_money(v, l, c),
                        ),
                        color: if *key == "useful" { BLUE } else { ORANGE },
                    })
                    .collect(),
                axis: tr(l, "por mês", "per month").to_owned(),
                figure,
                l,
                c,
            },
            format,
        ),
        _ => {
            let here = annual_loss(o);
            render(
                &Tornado {
                    swings: crate::figures::tornado_swings(s)
                        .iter()
                        .map(|w| (short(field_label(w.field, l)), f(w.low), f(w.high)))
                        .collect(),
                    base: f(here),
                    axis: format!(
                        "{} {}",
                        tr(
                            l,
                            "perda anual; linha: o cenário atual,",
                            "annual loss; line: the current scenario,"
                        ),
                        format_money(here, l, c)
                    ),
                    figure,
                    l,
                    c,
                },
                format,
            )
        }
    })
}

struct Loss {
    figure: Figure,
    curve: Vec<(f64, f64)>,
    rate: f64,
    here: Decimal,
    l: Locale,
    c: Currency,
}

impl Draw for Loss {
    fn figure(&self) -> &Figure {
        &self.figure
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> DrawResult<DB> {
        let (l, c) = (self.l, self.c);
        area.fill(&WHITE)?;
        let here = f(self.here);
        let top = self.curve.iter().map(|p| p.1).fold(here, f64::max);
        let (ymax, ticks) = round_axis(top, 5, 0.01);
        let cents = needs_minor(&ticks, c);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.figure.title, font(k, 18.0, INK))
            .margin(px(k, 10.0))
            .margin_right(px(k, 44.0))
            .x_label_area_size(px(k, 50.0))
            .y_label_area_size(px(k, 124.0))
            .build_cartesian_2d(0f64..10f64, ticked(0f64..ymax, ticks))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID.stroke_width(px(k, 1.0).max(1)))
            .axis_style(MUTED.stroke_width(px(k, 1.0).max(1)))
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&|v| pct_tick(*v, l))
            .y_label_formatter(&|v| money_tick(*v, cents, l, c))
            .label_style(font(k, 13.5, MUTED))
            .axis_desc_style(font(k, 14.5, MUTED))
            .x_desc(tr(
                l,
                "conversas que repetem a chamada",
                "conversations that repeat the call",
            ))
            .draw()?;
        chart.draw_series(LineSeries::new(
            self.curve.iter().copied(),
            BLUE.stroke_width(px(k, 2.5).max(1)),
        ))?;
        if (0.0..=10.0).contains(&self.rate) {
            let at = (self.rate, here);
            let label = format!(
                "{} {} ({})",
                tr(l, "você:", "you:"),
                format_money(self.here, l, c),
                format_pct(
                    Decimal::from_f64_retain(self.rate)
                        .unwrap_or_default()
                        .round_dp(6),
                    l
                )
            );
            // The label sits on the side with room.
            let (dx, anchor) = if self.rate > 5.0 {
                (-(px(k, 9.0) as i32), HPos::Right)
            } else {
                (px(k, 9.0) as i32, HPos::Left)
            };
            chart.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Circle::new((0, 0), px(k, 5.0), RED.filled())
                    + Text::new(
                        label,
                        (dx, -(px(k, 8.0) as i32)),
                        font(k, 14.5, INK).pos(Pos::new(anchor, VPos::Bottom)),
                    ),
            ))?;
        }
        Ok(())
    }
}

/// A chart of horizontal bars: money along x (its ticks chosen), one
/// labelled row per bar, row `r` spanning `r..r + 1` on y (the first bar
/// on the top row). Rows are plain numbers rather than plotters' segmented
/// coordinates, which give a single row no height at all.
type BarChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Ticked, Ticked>>;

/// What the bar charts (breakdown, tornado, comparison) share: the title,
/// the row labels on the left, the money axis and its gridlines.
struct Frame<'s> {
    title: &'s str,
    labels: &'s [&'s str],
    /// The label column's width at scale 1.
    label_width: f64,
    axis: &'s str,
    l: Locale,
    c: Currency,
}

impl Frame<'_> {
    fn draw<'a, DB: DrawingBackend>(
        &self,
        area: &'a DrawingArea<DB, Shift>,
        k: f64,
        x: std::ops::Range<f64>,
        x_ticks: Vec<f64>,
    ) -> Result<BarChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
        let (l, c) = (self.l, self.c);
        let n = self.labels.len().max(1);
        let cents = needs_minor(&x_ticks, c);
        // A label's tick at the middle of its row.
        let centers = (0..n).map(|r| r as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(area)
            .caption(self.title, font(k, 18.0, INK))
            .margin(px(k, 10.0))
            .margin_right(px(k, 44.0))
            .x_label_area_size(px(k, 48.0))
            .y_label_area_size(px(k, self.label_width))
            .build_cartesian_2d(ticked(x, x_ticks), ticked(0f64..n as f64, centers))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID.stroke_width(px(k, 1.0).max(1)))
            .axis_style(MUTED.stroke_width(px(k, 1.0).max(1)))
            .x_label_formatter(&|v| money_tick(*v, cents, l, c))
            .y_label_formatter(&|v| {
                // Row r (from the bottom) holds label n − 1 − r.
                let r = v.floor().max(0.0) as usize;
                n.checked_sub(r + 1)
                    .and_then(|i| self.labels.get(i))
                    .copied()
                    .unwrap_or("")
                    .to_owned()
            })
            .label_style(font(k, 13.5, INK))
            .axis_desc_style(font(k, 14.5, MUTED))
            .x_desc(self.axis)
            .draw()?;
        Ok(chart)
    }
}

/// One horizontal bar from `from` to `to` on `row`, filling the middle
/// `1 − 2 × gap` of the row's height whatever that height is in pixels.
fn bar(from: f64, to: f64, row: usize, color: RGBColor, gap: f64) -> Rectangle<(f64, f64)> {
    let r = row as f64;
    Rectangle::new([(from, r + gap), (to, r + 1.0 - gap)], color.filled())
}

/// One horizontal bar.
struct Bar {
    label: String,
    /// `None`: no value (the bar is absent, `shown` says why).
    value: Option<f64>,
    shown: String,
    color: RGBColor,
}

/// Horizontal bars from zero, a label on the left and the amount at the
/// bar's end: the breakdown and the comparison.
struct Bars {
    figure: Figure,
    bars: Vec<Bar>,
    axis: String,
    l: Locale,
    c: Currency,
}

impl Draw for Bars {
    fn figure(&self) -> &Figure {
        &self.figure
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> DrawResult<DB> {
        let (l, c) = (self.l, self.c);
        area.fill(&WHITE)?;
        let n = self.bars.len().max(1);
        let top = self.bars.iter().filter_map(|b| b.value).fold(0.0, f64::max);
        // The amount written after the longest bar ("R$ 165.000,00") takes
        // up to a third of the plot's width at 640 px, so the longest bar
        // ends by two thirds; the axis then ends on the first round tick.
        let (xmax, ticks) = round_axis(top * 1.5, 4, 0.01);
        let row = |i: usize| n - 1 - i; // the first bar on top
        let labels: Vec<&str> = self.bars.iter().map(|b| b.label.as_str()).collect();
        let frame = Frame {
            title: &self.figure.title,
            labels: &labels,
            label_width: 220.0,
            axis: &self.axis,
            l,
            c,
        };
        let mut chart = frame.draw(area, k, 0f64..xmax, ticks)?;
        chart.draw_series(
            self.bars
                .iter()
                .enumerate()
                .filter_map(|(i, b)| Some(bar(0.0, b.value?, row(i), b.color, 0.2))),
        )?;
        chart.draw_series(self.bars.iter().enumerate().map(|(i, b)| {
            EmptyElement::at((b.value.unwrap_or(0.0), row(i) as f64 + 0.5))
                + Text::new(
                    b.shown.clone(),
                    (px(k, 6.0) as i32, 0),
                    font(k, 14.5, INK).pos(Pos::new(HPos::Left, VPos::Center)),
                )
        }))?;
        Ok(())
    }
}

struct Tornado {
    figure: Figure,
    /// Label, loss at −20%, loss at +20%.
    swings: Vec<(String, f64, f64)>,
    base: f64,
    axis: String,
    l: Locale,
    c: Currency,
}

impl Draw for Tornado {
    fn figure(&self) -> &Figure {
        &self.figure
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> DrawResult<DB> {
        let (l, c) = (self.l, self.c);
        area.fill(&WHITE)?;
        let n = self.swings.len().max(1);
        let lo = self
            .swings
            .iter()
            .map(|s| s.1.min(s.2))
            .fold(self.base, f64::min);
        let hi = self
            .swings
            .iter()
            .map(|s| s.1.max(s.2))
            .fold(self.base, f64::max);
        let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
        // A loss is never negative: the margin below the bars stops at
        // zero, so no tick reads a negative amount (a scenario with no
        // duplicates once showed "R$ -0,05").
        let floor = if lo >= 0.0 { 0.0 } else { f64::NEG_INFINITY };
        let (lo, hi) = ((lo - span * 0.05).max(floor), hi + span * 0.05);
        let row = |i: usize| n - 1 - i;
        let labels: Vec<&str> = self.swings.iter().map(|s| s.0.as_str()).collect();
        let frame = Frame {
            title: &self.figure.title,
            labels: &labels,
            label_width: 250.0,
            axis: &self.axis,
            l,
            c,
        };
        let mut chart = frame.draw(area, k, lo..hi, inner_ticks(lo, hi, 4))?;
        chart.draw_series(
            self.swings
                .iter()
                .enumerate()
                .map(|(i, s)| bar(s.1.min(s.2), s.1.max(s.2), row(i), PALE_BLUE, 0.15)),
        )?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(self.base, 0.0), (self.base, n as f64)],
            INK.stroke_width(px(k, 1.5).max(1)),
        )))?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The comparison.

/// The comparison's chart: annual loss per scenario, in the first
/// scenario's currency.
pub fn compare_chart(
    columns: &[CompareColumn],
    currency: Currency,
    total: CompareTotal,
    l: Locale,
    format: Format,
) -> Result<Vec<u8>, ChartError> {
    let figure = crate::figures::compare_figure(columns, currency, total, l);
    render(
        &Bars {
            bars: columns
                .iter()
                .enumerate()
                .map(|(i, col)| Bar {
                    label: short(&col.label),
                    value: col.annual_loss.as_ref().ok().map(|d| f(*d)),
                    shown: match &col.annual_loss {
                        Ok(d) => format_money(*d, l, currency),
                        Err(why) => why.clone(),
                    },
                    color: if i == 0 { BLUE } else { ORANGE },
                })
                .collect(),
            axis: tr(l, "perda anual", "annual loss").to_owned(),
            figure,
            l,
            c: currency,
        },
        format,
    )
}

// ---------------------------------------------------------------------------
// The monitor.

/// One bucket of the monitor's series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesPoint {
    /// Bucket start, ms since the epoch (UTC).
    pub start_ms: i64,
    /// Deliveries.
    pub deliveries: i64,
    /// Redeliveries.
    pub redeliveries: i64,
    /// Intents recorded.
    pub intents: i64,
    /// Intents that got their second delivery.
    pub redelivered_intents: i64,
}

impl SeriesPoint {
    /// The bucket's duplicate rate in percent (0 without intents).
    pub fn rate_pct(&self) -> f64 {
        if self.intents > 0 {
            self.redelivered_intents as f64 * 100.0 / self.intents as f64
        } else {
            0.0
        }
    }
}

/// A monitor chart ([`app::charts::LIVE_NAMES`]) over the series, with the
/// page's figure text, or `None` for an unknown name. `daily`: label the
/// time axis by day (the 7- and 30-day windows) instead of by hour.
pub fn live_chart(
    name: &str,
    figure: Figure,
    series: &[SeriesPoint],
    daily: bool,
    l: Locale,
    format: Format,
) -> Option<Result<Vec<u8>, ChartError>> {
    let lines = match name {
        "deliveries" => vec![
            (
                tr(l, "entregas", "deliveries"),
                series.iter().map(|p| p.deliveries as f64).collect(),
                BLUE,
            ),
            (
                tr(l, "reentregas", "redeliveries"),
                series.iter().map(|p| p.redeliveries as f64).collect(),
                RED,
            ),
        ],
        "rate" => vec![(
            tr(l, "taxa de duplicatas", "duplicate rate"),
            series
                .iter()
                .map(SeriesPoint::rate_pct)
                .collect::<Vec<f64>>(),
            RED,
        )],
        _ => return None,
    };
    Some(render(
        &Lines {
            figure,
            times: series.iter().map(|p| p.start_ms).collect(),
            lines,
            percent: name == "rate",
            daily,
            l,
        },
        format,
    ))
}

struct Lines {
    figure: Figure,
    times: Vec<i64>,
    lines: Vec<(&'static str, Vec<f64>, RGBColor)>,
    percent: bool,
    daily: bool,
    l: Locale,
}

impl Draw for Lines {
    fn figure(&self) -> &Figure {
        &self.figure
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> DrawResult<DB> {
        let l = self.l;
        area.fill(&WHITE)?;
        let n = self.times.len();
        let top = self
            .lines
            .iter()
            .flat_map(|(_, v, _)| v.iter().copied())
            .fold(0.0, f64::max);
        let (ymax, ticks) = if self.percent {
            round_axis(top.min(100.0), 5, 0.01)
        } else {
            round_axis(top, 5, 1.0)
        };
        let xmax = (n.max(2) - 1) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.figure.title, font(k, 18.0, INK))
            .margin(px(k, 10.0))
            .margin_right(px(k, 44.0))
            .x_label_area_size(px(k, 46.0))
            .y_label_area_size(px(k, 72.0))
            .build_cartesian_2d(0f64..xmax, ticked(0f64..ymax, ticks))?;
        let time = |v: &f64| {
            let i = v.round().max(0.0) as usize;
            self.times.get(i).map_or_else(String::new, |ms| {
                let t = utc_minute(*ms); // "2026-11-30 14:05 UTC"
                if self.daily {
                    t.get(5..10).unwrap_or("").to_owned()
                } else {
                    t.get(11..16).unwrap_or("").to_owned()
                }
            })
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID.stroke_width(px(k, 1.0).max(1)))
            .axis_style(MUTED.stroke_width(px(k, 1.0).max(1)))
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&time)
            .y_label_formatter(&|v| {
                if self.percent {
                    pct_tick(*v, l)
                } else {
                    format_count(Decimal::from_f64_retain(v.round()).unwrap_or_default(), l)
                }
            })
            .label_style(font(k, 13.5, MUTED))
            .axis_desc_style(font(k, 14.5, MUTED))
            .x_desc(tr(l, "início do intervalo (UTC)", "bucket start (UTC)"))
            .draw()?;
        for (name, values, color) in &self.lines {
            let color = *color;
            let width = px(k, 2.0).max(1);
            chart
                .draw_series(LineSeries::new(
                    values.iter().enumerate().map(|(i, v)| (i as f64, *v)),
                    color.stroke_width(width),
                ))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(width))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(font(k, 13.5, INK))
            .background_style(WHITE.mix(0.85))
            .border_style(GRID)
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An axis label is written by the same writer as every other amount,
    /// in the currency's own digits: never cut by bytes (a yen axis read
    /// `¥5,000,` for ¥5,000,000; a dinar one `BHD 10,000.`).
    #[test]
    fn money_ticks_keep_every_currency_s_digits() {
        let cur = |code: &str| Currency::from_code(code).unwrap();
        let cases = [
            // (value, currency, locale, whole units, with the minor unit)
            (5_000_000.0, "JPY", Locale::EnUs, "¥5,000,000", "¥5,000,000"),
            (
                5_000_000.0,
                "JPY",
                Locale::PtBr,
                "JP¥ 5.000.000",
                "JP¥ 5.000.000",
            ),
            (2_500_000.0, "KRW", Locale::EnUs, "₩2,500,000", "₩2,500,000"),
            (6000.0, "BRL", Locale::PtBr, "R$ 6.000", "R$ 6.000,00"),
            (6000.0, "USD", Locale::EnUs, "$6,000", "$6,000.00"),
            (
                10_000.0,
                "BHD",
                Locale::EnUs,
                "BHD 10,000",
                "BHD 10,000.000",
            ),
            (0.125, "BHD", Locale::PtBr, "BHD 0", "BHD 0,125"),
            (12.5, "CLF", Locale::EnUs, "CLF 13", "CLF 12.5000"),
        ];
        for (v, code, l, whole, minor) in cases {
            let c = cur(code);
            assert_eq!(money_tick(v, false, l, c), whole, "{code} {l:?}");
            assert_eq!(money_tick(v, true, l, c), minor, "{code} {l:?}");
        }
        // Whether an axis needs the minor unit, in the currency's digits.
        assert!(!needs_minor(&[0.0, 2000.0, 4000.0], cur("JPY")));
        assert!(needs_minor(&[0.0, 0.125, 0.25], cur("BHD")));
        assert!(
            !needs_minor(&[0.0, 0.5, 1.0], cur("JPY")),
            "no yen has a fraction to show"
        );
        assert!(needs_minor(&[0.0, 0.5, 1.0], cur("BRL")));
    }

    #[test]
    fn axes_end_on_the_first_round_tick_above_the_data() {
        // The reference's loss curve tops at 12 × 30.000 × 10% × 0,165.
        assert_eq!(
            round_axis(5940.0, 5, 0.01),
            (6000.0, vec![0.0, 2000.0, 4000.0, 6000.0])
        );
        assert_eq!(
            round_axis(165_000.0, 4, 0.01),
            (
                200_000.0,
                vec![0.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0]
            )
        );
        // Exactly on a tick: that tick ends the axis.
        assert_eq!(round_axis(2000.0, 4, 0.01).0, 2000.0);
        assert_eq!(round_axis(9.0, 4, 0.01).0, 10.0);
        assert_eq!(round_axis(2.3, 4, 1.0), (3.0, vec![0.0, 1.0, 2.0, 3.0]));
        // Nothing to show: an axis of one finest step, never 0..0 or NaN.
        assert_eq!(round_axis(0.0, 4, 0.01), (0.01, vec![0.0, 0.01]));
        assert_eq!(round_axis(f64::NAN, 4, 1.0), (1.0, vec![0.0, 1.0]));
        assert_eq!(round_axis(f64::INFINITY, 4, 1.0).0, 1.0);
        assert_eq!(
            inner_ticks(1400.0, 2200.0, 4),
            vec![1400.0, 1600.0, 1800.0, 2000.0, 2200.0]
        );
        assert!(inner_ticks(5.0, 5.0, 4).is_empty());
        assert!(inner_ticks(f64::NAN, 5.0, 4).is_empty());
        // Every axis: ends at or above the data, at most one step above.
        for top in [0.37, 1.0, 12.5, 148.5, 1782.0, 99_999.0, 3.3e7] {
            let (end, ticks) = round_axis(top, 4, 0.01);
            let step = ticks[1] - ticks[0];
            assert!(end >= top && end - step < top, "{top}: {ticks:?}");
            assert!(ticks.len() <= 6, "{top}: {ticks:?}");
            assert_eq!(ticks.last(), Some(&end));
        }
    }

    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_owned())
            .collect()
    }

    fn svg(name: &str, s: &Scenario, l: Locale) -> String {
        let o = s.compute().unwrap_or_else(|e| panic!("{e}"));
        let body = scenario_chart(name, s, &o, l, Format::Svg)
            .unwrap_or_else(|| panic!("{name}"))
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(body).unwrap_or_default()
    }

    #[test]
    fn the_reference_loss_chart_marks_its_point_with_page_language_labels() {
        let s = Scenario::default();
        let pt = svg("loss", &s, Locale::PtBr);
        let t = texts(&pt);
        assert!(t.contains(&"você: R$ 1.782,00 (3,00%)".to_owned()), "{t:?}");
        // The curve tops at 12 × 30.000 × 10% × R$ 0,165 = R$ 5.940: the
        // axis ends on the first round tick above it.
        for tick in ["0,00%", "10,00%", "R$ 0", "R$ 2.000", "R$ 6.000"] {
            assert!(t.contains(&tick.to_owned()), "{tick} in {t:?}");
        }
        // The marker: a red circle where 3% meets R$ 1.782 on the axes.
        let doc = roxmltree::Document::parse(&pt).unwrap_or_else(|e| panic!("{e}"));
        let circles: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle"))
            .collect();
        assert_eq!(circles.len(), 1);
        assert_eq!(circles[0].attribute("fill"), Some("#B42318"));
        let svg_root = doc.root_element();
        assert_eq!(svg_root.attribute("role"), Some("img"));
        assert!(
            svg_root
                .children()
                .any(|n| n.has_tag_name("desc")
                    && n.text().is_some_and(|d| d.contains("R$ 1.782,00")))
        );
        let en = texts(&svg("loss", &s, Locale::EnUs));
        assert!(en.contains(&"you: R$1,782.00 (3.00%)".to_owned()), "{en:?}");
        assert!(en.contains(&"R$6,000".to_owned()), "{en:?}");
        assert!(!en.contains(&"R$8,000".to_owned()), "{en:?}");
        assert!(en.contains(&"conversations that repeat the call".to_owned()));
    }

    #[test]
    fn every_chart_is_well_formed_in_both_encodings() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|e| panic!("{e}"));
        for name in app::charts::NAMES {
            for l in [Locale::PtBr, Locale::EnUs] {
                let t = texts(&svg(name, &s, l));
                assert!(
                    t.iter().all(|x| !x.contains("NaN") && !x.contains("inf")),
                    "{name}"
                );
            }
            let png = scenario_chart(name, &s, &o, Locale::PtBr, Format::Png(800))
                .unwrap_or_else(|| panic!("{name}"))
                .unwrap_or_else(|e| panic!("{e}"));
            let decoder = png::Decoder::new(png.as_slice());
            let reader = decoder.read_info().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(reader.info().width, 800, "{name}");
        }
        let b = texts(&svg("breakdown", &s, Locale::PtBr));
        assert!(b.contains(&"R$ 148,50".to_owned()), "{b:?}");
        assert!(b.contains(&"sem dados de risco".to_owned()), "{b:?}");
        assert!(scenario_chart("pie", &s, &o, Locale::PtBr, Format::Svg).is_none());
    }

    #[test]
    fn huge_and_zero_inputs_draw_without_garbage() {
        for q in [
            "v=2&c=9999999999999&ti=99999999&pi=999999",
            "v=2&d=0",
            "v=2&c=0",
            "v=2&d=100",
        ] {
            let s = Scenario::from_query(q.split('&').filter_map(|kv| kv.split_once('=')))
                .unwrap_or_else(|e| panic!("{q}: {e}"));
            for name in app::charts::NAMES {
                let t = texts(&svg(name, &s, Locale::PtBr));
                assert!(
                    t.iter().all(|x| !x.contains("NaN") && !x.contains("inf")),
                    "{q} {name}"
                );
            }
        }
    }

    #[test]
    fn the_comparison_and_the_monitor_draw_their_series() {
        let cols = vec![
            CompareColumn {
                label: "A".into(),
                annual_loss: Ok(Decimal::from(1782)),
            },
            CompareColumn {
                label: "com idem".into(),
                annual_loss: Ok(Decimal::ZERO),
            },
            CompareColumn {
                label: "C".into(),
                annual_loss: Err("link inválido".into()),
            },
        ];
        let body = compare_chart(
            &cols,
            Currency::BRL,
            CompareTotal::TokenWaste,
            Locale::PtBr,
            Format::Svg,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let t = texts(&String::from_utf8(body).unwrap_or_default());
        for want in ["A", "com idem", "R$ 1.782,00", "R$ 0,00", "link inválido"] {
            assert!(t.contains(&want.to_owned()), "{want} in {t:?}");
        }
        // One scenario alone: its bar has height, sits in the plot, and the
        // axis ends on the first round tick past the bar and its amount
        // (R$ 165.000 × 1,5 = R$ 247.500 → 300.000 by 100.000, four
        // steps at most so the labels fit side by side).
        let one = vec![CompareColumn {
            label: "Referência".into(),
            annual_loss: Ok(Decimal::from(165_000)),
        }];
        let svg = String::from_utf8(
            compare_chart(
                &one,
                Currency::BRL,
                CompareTotal::TokenWaste,
                Locale::PtBr,
                Format::Svg,
            )
            .unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_default();
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{e}"));
        let bars: Vec<(f64, f64)> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#1F5FBF"))
            .map(|n| {
                let num = |a| {
                    n.attribute(a)
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(-1.0)
                };
                (num("width"), num("height"))
            })
            .collect();
        assert_eq!(bars.len(), 1, "{svg}");
        assert!(bars[0].0 > 100.0 && bars[0].1 > 12.0, "{bars:?}");
        let t = texts(&svg);
        for want in ["Referência", "R$ 165.000,00", "R$ 300.000", "R$ 100.000"] {
            assert!(t.contains(&want.to_owned()), "{want} in {t:?}");
        }
        assert!(
            !t.iter().any(|x| x == "R$ 400.000" || x == "R$ 250.000"),
            "{t:?}"
        );
        let points: Vec<SeriesPoint> = (0..24)
            .map(|i| SeriesPoint {
                start_ms: 1_796_040_300_000 + i * 3_600_000,
                deliveries: 10 + i,
                redeliveries: i % 3,
                intents: 10,
                redelivered_intents: i % 3,
            })
            .collect();
        let figure = Figure {
            id: "live-chart-rate".into(),
            title: "Taxa".into(),
            caption: "c".into(),
            note: None,
            head: vec![],
            rows: vec![],
            height: app::charts::LIVE_HEIGHT,
        };
        let body = live_chart(
            "rate",
            figure.clone(),
            &points,
            false,
            Locale::PtBr,
            Format::Svg,
        )
        .unwrap_or_else(|| panic!("rate"))
        .unwrap_or_else(|e| panic!("{e}"));
        let t = texts(&String::from_utf8(body).unwrap_or_default());
        assert!(t.contains(&"12:05".to_owned()), "{t:?}");
        assert!(t.contains(&"20,00%".to_owned()), "{t:?}");
        assert!(live_chart(
            "pie",
            figure.clone(),
            &points,
            false,
            Locale::PtBr,
            Format::Svg
        )
        .is_none());
        // No points: an empty frame, not a panic.
        assert!(live_chart(
            "deliveries",
            figure,
            &[],
            true,
            Locale::EnUs,
            Format::Png(320)
        )
        .is_some_and(|r| r.is_ok()));
    }

    #[test]
    fn formats_and_widths_are_read_strictly() {
        assert_eq!(Format::parse(None, None), Ok(Format::Svg));
        assert_eq!(Format::parse(Some("png"), None), Ok(Format::Png(PNG_WIDTH)));
        assert_eq!(
            Format::parse(Some("png"), Some("800")),
            Ok(Format::Png(800))
        );
        // Each refusal says which rule the address broke.
        let refused = |format, width| Format::parse(format, width).unwrap_err();
        assert_eq!(
            refused(Some("png"), Some("99999")),
            "width=99999: a PNG is 320 to 2560 pixels wide"
        );
        assert_eq!(
            refused(Some("png"), Some("-1")),
            "width=\"-1\" is not a whole number of pixels"
        );
        assert_eq!(refused(Some("gif"), None), "format=\"gif\": use svg or png");
        assert_eq!(
            refused(Some("svg"), Some("800")),
            "width applies to format=png only"
        );
    }
}
