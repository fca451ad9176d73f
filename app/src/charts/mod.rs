//! The charts as the calculator holds them: the server writes the figures
//! (image, caption, controls, table: `idem-server`'s `figures`) and draws
//! the images (its `charts`, with plotters). The browser only swaps the
//! figures' markup: as you type, the calculator fetches
//! `/charts/figures?<query>` and sets it, so the wasm carries no chart
//! code, not even the tables'.

use leptos::prelude::*;

/// Every chart's width in SVG units (a PNG may be drawn wider).
pub const W: u32 = 640;

/// The calculator's charts, by the name in their address.
pub const NAMES: [&str; 3] = ["loss", "breakdown", "tornado"];

/// The monitor's charts, by the name in their address
/// (`/live/charts/{name}.svg`).
pub const LIVE_NAMES: [&str; 2] = ["deliveries", "rate"];

/// The height of the monitor's charts.
pub const LIVE_HEIGHT: u32 = 240;

/// The calculator's charts.
#[component]
pub fn Charts(
    /// The figures' markup, as the server writes it.
    html: Signal<String>,
) -> impl IntoView {
    view! { <section class="charts" inner_html=move || html.get()></section> }
}
