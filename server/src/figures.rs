//! The charts as the pages show them: for each chart, a heading, the image
//! (whose address carries the scenario: `/charts/{name}.svg?<query>`), a
//! caption, the controls to copy the image's link or download it, and a
//! table (the accessible alternative). The server writes them into the
//! page's first render and at `/charts/figures?<query>` (what the
//! calculator fetches as you type), and [`crate::charts`] draws the images
//! with the same text as their title and description.

use crate::markup::scrolling;
use app::charts::{NAMES, W};
use app::i18n::{field_label, tr};
use idem_core::cost::CostOutputs;
use idem_core::locale::{format_money, format_pct, Locale};
use idem_core::scenario::{annual_loss, loss_curve, sensitivity, Scenario, Swing};
use maud::{html, Markup};
use rust_decimal::Decimal;

/// A chart's text: what the page shows around the image, and what the
/// image carries as its title and description.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The element id on the page.
    pub id: String,
    /// The heading (and the image's title).
    pub title: String,
    /// The caption (and the image's description and `alt`).
    pub caption: String,
    /// A note under the caption.
    pub note: Option<String>,
    /// The table's column heads.
    pub head: Vec<String>,
    /// The table's rows (the first cell heads its row).
    pub rows: Vec<Vec<String>>,
    /// The image's height at width [`W`].
    pub height: u32,
}

/// The height of the tornado chart, which has a bar per input in play.
pub fn tornado_height(bars: usize) -> u32 {
    bars as u32 * 30 + 90
}

/// The height of a chart of horizontal bars (breakdown, compare).
pub fn bars_height(bars: usize) -> u32 {
    bars as u32 * 40 + 80
}

/// The charts' markup on the page: each chart's image, caption, controls
/// and table.
pub fn charts_html(s: &Scenario, o: &CostOutputs, l: Locale) -> Markup {
    let q = format!("{}&lang={}", s.to_query(), l.tag());
    html! {
        h2 { (tr(l, "Gráficos", "Charts")) }
        @for name in NAMES {
            @if let Some(f) = figure(name, s, o, l) {
                (figure_html(&f, &format!("/charts/{name}.svg?{q}"), l))
            }
        }
    }
}

/// One figure: heading, image, controls, caption, note and table. `src` is
/// the image's address (SVG); the PNG is the same address with
/// `format=png`.
pub fn figure_html(f: &Figure, src: &str, l: Locale) -> Markup {
    let png = format!("{src}&format=png");
    let file = format!("idem-{}", f.id.trim_start_matches("chart-"));
    html! {
        figure class="chart" id=(f.id) {
            h3 { (f.title) }
            img src=(src) alt=(f.caption) width=(W) height=(f.height) decoding="async";
            p class="chart-actions" {
                button type="button" class="copy-image" data-copy=(src) {
                    (tr(l, "Copiar link da imagem", "Copy image link"))
                }
                " "
                a class="download" href=(src) download={ (file) ".svg" } {
                    (tr(l, "Baixar SVG", "Download SVG"))
                }
                " "
                a class="download" href=(png) download={ (file) ".png" } {
                    (tr(l, "Baixar PNG", "Download PNG"))
                }
            }
            figcaption { (f.caption) }
            @if let Some(n) = &f.note {
                p class="note" { (n) }
            }
            (table(l, &f.title, &f.head, &f.rows))
        }
    }
}

/// The figure's table, in a scroll box named after the figure (a page has
/// several, and each landmark needs its own name).
fn table(l: Locale, title: &str, head: &[String], rows: &[Vec<String>]) -> Markup {
    let label = format!("{}: {title}", tr(l, "Tabela", "Table"));
    html! {
        details {
            summary { (tr(l, "Tabela", "Table")) }
            (scrolling(&label, l, html! {
                table {
                    thead { tr { @for h in head { th scope="col" { (h) } } } }
                    tbody {
                        @for r in rows {
                            tr {
                                @for (i, cell) in r.iter().enumerate() {
                                    @if i == 0 { th scope="row" { (cell) } } @else { td { (cell) } }
                                }
                            }
                        }
                    }
                }
            }))
        }
    }
}

fn owned(heads: &[&str]) -> Vec<String> {
    heads.iter().map(|h| (*h).to_owned()).collect()
}

/// A calculator chart's text, or `None` for an unknown name.
pub fn figure(name: &str, s: &Scenario, o: &CostOutputs, l: Locale) -> Option<Figure> {
    match name {
        "loss" => Some(loss_figure(s, o, l)),
        "breakdown" => Some(breakdown_figure(s, o, l)),
        "tornado" => Some(tornado_figure(s, o, l)),
        _ => None,
    }
}

fn loss_figure(s: &Scenario, o: &CostOutputs, l: Locale) -> Figure {
    let curve = loss_curve(&s.inputs).unwrap_or_default();
    let here = annual_loss(o);
    let money = |d: Decimal| format_money(d, l, s.currency());
    let rate = format_pct(s.inputs.duplicate_rate_pct, l);
    let caption = match l {
        Locale::PtBr => format!(
            "Perda anual conforme a taxa de duplicatas, de 0% a 10%. No cenário atual, {rate} de duplicatas custam {} por ano.",
            money(here)
        ),
        Locale::EnUs => format!(
            "Annual loss by duplicate rate, from 0% to 10%. In the current scenario, {rate} duplicates cost {} a year.",
            money(here)
        ),
    };
    let note = (s.inputs.duplicate_rate_pct > Decimal::TEN).then(|| {
        tr(
            l,
            "A taxa atual passa de 10% e fica fora do gráfico.",
            "The current rate is above 10% and off the chart.",
        )
        .to_owned()
    });
    Figure {
        id: "chart-loss".into(),
        title: tr(
            l,
            "Perda anual × taxa de duplicatas",
            "Annual loss × duplicate rate",
        )
        .into(),
        caption,
        note,
        head: owned(&[tr(l, "Taxa", "Rate"), tr(l, "Perda anual", "Annual loss")]),
        rows: curve
            .iter()
            .map(|(r, v)| vec![format_pct(*r, l), money(*v)])
            .collect(),
        height: 300,
    }
}

/// The breakdown's bars: key, label and monthly amount (`None` without the
/// risk inputs).
pub fn breakdown_bars(
    o: &CostOutputs,
    l: Locale,
) -> [(&'static str, &'static str, Option<Decimal>); 4] {
    let risk = o.risk.as_ref();
    [
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
    ]
}

/// What a bar without a value says.
pub fn no_risk_text(l: Locale) -> &'static str {
    tr(l, "sem dados de risco", "no risk inputs")
}

fn breakdown_figure(s: &Scenario, o: &CostOutputs, l: Locale) -> Figure {
    let bars = breakdown_bars(o, l);
    let shown = |v: Option<Decimal>| {
        v.map_or_else(
            || no_risk_text(l).to_owned(),
            |v| format_money(v, l, s.currency()),
        )
    };
    Figure {
        id: "chart-breakdown".into(),
        title: tr(l, "Composição mensal", "Monthly breakdown").into(),
        caption: tr(
            l,
            "O mês por categoria: o gasto útil com o modelo e o que as duplicatas custam (tokens, operação, reclamações).",
            "The month by category: useful model spend and what duplicates cost (tokens, operations, claims).",
        )
        .into(),
        note: None,
        head: owned(&[tr(l, "Categoria", "Category"), tr(l, "Por mês", "Per month")]),
        rows: bars
            .iter()
            .map(|(_, label, v)| vec![(*label).to_owned(), shown(*v)])
            .collect(),
        height: bars_height(bars.len()),
    }
}

/// The tornado's bars, widest swing first.
pub fn tornado_swings(s: &Scenario) -> Vec<Swing> {
    sensitivity(&s.inputs, Decimal::from(20)).unwrap_or_default()
}

fn tornado_figure(s: &Scenario, o: &CostOutputs, l: Locale) -> Figure {
    let swings = tornado_swings(s);
    let here = annual_loss(o);
    let money = |d: Decimal| format_money(d, l, s.currency());
    Figure {
        id: "chart-tornado".into(),
        title: tr(l, "Sensibilidade (±20%)", "Sensitivity (±20%)").into(),
        caption: format!(
            "{} {}",
            tr(l, "Sensibilidade: a perda anual quando cada entrada varia 20% para menos e para mais, da maior variação para a menor. Linha vertical: o cenário atual,", "Sensitivity: annual loss when each input moves 20% down and up, widest swing first. Vertical line: the current scenario,"),
            money(here)
        ),
        note: None,
        head: owned(&[
            tr(l, "Entrada", "Input"),
            "−20%",
            "+20%",
            tr(l, "Variação", "Swing"),
        ]),
        rows: swings
            .iter()
            .map(|w| {
                vec![
                    field_label(w.field, l).to_owned(),
                    money(w.low),
                    money(w.high),
                    money(w.width()),
                ]
            })
            .collect(),
        height: tornado_height(swings.len()),
    }
}

/// One scenario of a comparison: its column label and annual loss (`Err`:
/// why it has none).
pub struct CompareColumn {
    /// The column's label (saved name or letter).
    pub label: String,
    /// Its annual loss, or why there is none.
    pub annual_loss: Result<Decimal, String>,
}

/// Which annual total a comparison's chart draws: the same one for every
/// scenario, so bars compare like with like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareTotal {
    /// The tokens the duplicates waste in a year (some scenario has no
    /// risk block, so this is the total every scenario has).
    TokenWaste,
    /// Tokens plus the financial risk in a year (every scenario has a
    /// risk block).
    WithRisk,
}

/// A comparison's columns for its chart, from the scenarios as the compare
/// page reads them, the currency they are drawn in (the first scenario's;
/// a column in another currency says so instead of a bar) and the total
/// drawn: with the risk only when every scenario has a risk block.
pub fn compare_columns(
    scenarios: &[(String, Result<Scenario, String>)],
    l: Locale,
) -> (
    Vec<CompareColumn>,
    idem_core::locale::Currency,
    CompareTotal,
) {
    let currency = scenarios
        .iter()
        .find_map(|(_, s)| s.as_ref().ok().map(Scenario::currency))
        .unwrap_or_default();
    let total = if scenarios
        .iter()
        .filter_map(|(_, s)| s.as_ref().ok())
        .all(|s| s.inputs.risk.is_some())
    {
        CompareTotal::WithRisk
    } else {
        CompareTotal::TokenWaste
    };
    let columns = scenarios
        .iter()
        .map(|(label, s)| CompareColumn {
            label: label.clone(),
            annual_loss: match s {
                Ok(s) if s.currency() != currency => Err(format!(
                    "{} {}",
                    tr(l, "em outra moeda:", "in another currency:"),
                    s.currency().code()
                )),
                Ok(s) => s
                    .compute()
                    .map(|o| match (total, &o.risk) {
                        (CompareTotal::WithRisk, Some(r)) => r.annual_total_cost,
                        _ => o.annual_token_waste,
                    })
                    .map_err(|e| e.to_string()),
                Err(why) => Err(why.clone()),
            },
        })
        .collect();
    (columns, currency, total)
}

/// The comparison chart's text.
pub fn compare_figure(
    columns: &[CompareColumn],
    currency: idem_core::locale::Currency,
    total: CompareTotal,
    l: Locale,
) -> Figure {
    let (title, caption, head) = match total {
        CompareTotal::TokenWaste => (
            tr(l, "Desperdício anual de tokens por cenário", "Annual token waste per scenario"),
            tr(
                l,
                "O desperdício anual com tokens de cada cenário, lado a lado (o total que todos os cenários têm: nem todos preenchem o risco financeiro); o primeiro é a base da comparação.",
                "Each scenario's annual token waste, side by side (the total every scenario has: not all fill in the financial risk); the first is the comparison's base.",
            ),
            tr(l, "Desperdício anual de tokens", "Annual token waste"),
        ),
        CompareTotal::WithRisk => (
            tr(l, "Custo anual total (tokens + risco) por cenário", "Annual total cost (tokens + risk) per scenario"),
            tr(
                l,
                "O custo anual total de cada cenário, tokens mais risco financeiro, lado a lado; o primeiro é a base da comparação.",
                "Each scenario's annual total cost, tokens plus financial risk, side by side; the first is the comparison's base.",
            ),
            tr(l, "Custo anual total", "Annual total cost"),
        ),
    };
    Figure {
        id: "chart-compare".into(),
        title: title.into(),
        caption: caption.into(),
        note: None,
        head: owned(&[tr(l, "Cenário", "Scenario"), head]),
        rows: columns
            .iter()
            .map(|c| {
                vec![
                    c.label.clone(),
                    match &c.annual_loss {
                        Ok(d) => format_money(*d, l, currency),
                        Err(why) => why.clone(),
                    },
                ]
            })
            .collect(),
        height: bars_height(columns.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_shows_each_chart_as_an_image_with_its_controls_and_table() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|_| unreachable!());
        let html = charts_html(&s, &o, Locale::PtBr).into_string();
        for name in NAMES {
            assert!(
                html.contains(&format!("<figure class=\"chart\" id=\"chart-{name}\">")),
                "{name}"
            );
            let src = format!("/charts/{name}.svg?v=2&amp;lang=pt-BR");
            assert!(html.contains(&format!("<img src=\"{src}\"")), "{name}");
            assert!(html.contains(&format!("data-copy=\"{src}\"")), "{name}");
            assert!(
                html.contains(&format!(
                    "href=\"{src}&amp;format=png\" download=\"idem-{name}.png\""
                )),
                "{name}"
            );
        }
        assert_eq!(
            html.matches("<figure").count(),
            html.matches("</figure>").count()
        );
        assert_eq!(html.matches("<table>").count(), 3);
        assert!(!html.contains("<svg"), "no drawing on the page");
        let en = charts_html(&s, &o, Locale::EnUs).into_string();
        assert!(en.contains("Copy image link") && en.contains("Download PNG"));
        // Every text is escaped, in content and in attributes.
        let hostile = "<a href=\"x\">&'";
        let f = Figure {
            id: hostile.to_owned(),
            title: hostile.to_owned(),
            caption: hostile.to_owned(),
            note: Some(hostile.to_owned()),
            head: vec![hostile.to_owned()],
            rows: vec![vec![hostile.to_owned(), hostile.to_owned()]],
            height: 1,
        };
        let m = figure_html(&f, hostile, Locale::EnUs).into_string();
        assert!(!m.contains("<a href"), "{m}");
        assert_eq!(
            m.matches("&lt;a href=&quot;x&quot;&gt;&amp;'").count(),
            15,
            "{m}"
        );
    }

    #[test]
    fn the_figures_say_what_the_reference_scenario_gives() {
        let s = Scenario::default();
        let o = s.compute().unwrap_or_else(|_| unreachable!());
        let loss = figure("loss", &s, &o, Locale::PtBr).unwrap_or_else(|| unreachable!());
        assert!(loss
            .caption
            .contains("3,00% de duplicatas custam R$ 1.782,00 por ano"));
        assert_eq!(loss.rows.len(), 21);
        assert!(loss.note.is_none());
        let tornado = figure("tornado", &s, &o, Locale::EnUs).unwrap_or_else(|| unreachable!());
        assert_eq!(tornado.height, tornado_height(tornado.rows.len()));
        assert!(figure("pie", &s, &o, Locale::PtBr).is_none());
    }
}
