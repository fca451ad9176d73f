//! Rendering one chart: p50, p99 and max time and the output's size, for
//! every chart as SVG and as PNG (1280 px, the download's default). Memory
//! is bounded by construction: a PNG's pixel buffer is width × height × 3
//! bytes (1280 × 600 × 3 = 2.3 MB at most at that width), an SVG is a
//! string of a few kilobytes.
//!
//!     cargo bench -p idem-server --bench charts [-- ROUNDS]
//!
//! Percentiles, not means: a chart is drawn per request, so the slow tail
//! is what a reader waits for.

use app::charts::LIVE_HEIGHT;
use idem_core::locale::{Currency, Locale};
use idem_core::scenario::Scenario;
use idem_server::charts::{compare_chart, live_chart, scenario_chart, Format, SeriesPoint};
use idem_server::figures::Figure;
use rust_decimal::Decimal;
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn measure(name: &str, rounds: usize, mut render: impl FnMut() -> Vec<u8>) {
    for _ in 0..rounds / 10 + 1 {
        std::hint::black_box(render());
    }
    let mut times = Vec::with_capacity(rounds);
    let mut bytes = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let out = render();
        times.push(t.elapsed());
        bytes = out.len();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {name} | {:.2} | {:.2} | {:.2} | {} |",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(times[times.len() - 1]),
        bytes
    );
}

fn main() {
    let rounds: usize = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(200);
    let s = Scenario::default();
    let Ok(o) = s.compute() else {
        return;
    };
    let points: Vec<SeriesPoint> = (0..60)
        .map(|i| SeriesPoint {
            start_ms: 1_796_040_300_000 + i * 60_000,
            deliveries: 100 + i % 7,
            redeliveries: i % 4,
            intents: 97,
            redelivered_intents: i % 4,
        })
        .collect();
    let figure = Figure {
        id: "live".into(),
        title: "Entregas e reentregas por intervalo".into(),
        caption: "bench".into(),
        note: None,
        head: vec![],
        rows: vec![],
        height: LIVE_HEIGHT,
    };
    let columns: Vec<idem_server::figures::CompareColumn> = (0..4)
        .map(|i| idem_server::figures::CompareColumn {
            label: format!("Cenário {i}"),
            annual_loss: Ok(Decimal::from(1782 * i)),
        })
        .collect();
    println!("{rounds} renders each (after a warm-up), reference scenario, pt-BR:\n");
    println!("| chart | p50 ms | p99 ms | max ms | bytes |");
    println!("|---|---|---|---|---|");
    for (label, format) in [("svg", Format::Svg), ("png 1280", Format::Png(1280))] {
        for name in app::charts::NAMES {
            measure(&format!("{name} {label}"), rounds, || {
                scenario_chart(name, &s, &o, Locale::PtBr, format)
                    .and_then(Result::ok)
                    .unwrap_or_default()
            });
        }
        measure(&format!("compare (4 scenarios) {label}"), rounds, || {
            compare_chart(
                &columns,
                Currency::BRL,
                idem_server::figures::CompareTotal::TokenWaste,
                Locale::PtBr,
                format,
            )
            .unwrap_or_default()
        });
        for name in app::charts::LIVE_NAMES {
            measure(&format!("live {name} (60 points) {label}"), rounds, || {
                live_chart(name, figure.clone(), &points, false, Locale::PtBr, format)
                    .and_then(Result::ok)
                    .unwrap_or_default()
            });
        }
    }
}
