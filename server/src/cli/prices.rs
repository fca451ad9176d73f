//! `idem prices [QUERY]`: the bundled model price table on the command line.

use idem_core::locale::{format_decimal, Locale};
use std::process::ExitCode;

/// Options of `idem prices`.
#[derive(Debug, clap::Args)]
pub struct PricesArgs {
    /// Words every listed model's id, name or provider contains
    /// (`claude sonnet`, `openai/gpt-4.1`); all models when absent.
    query: Vec<String>,
    /// The most models to list.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Print JSON lines of exact decimal strings instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the command: exit 0 with the models found, 1 when none matched.
pub fn run(a: &PricesArgs) -> ExitCode {
    let table = crate::prices::table();
    let query = a.query.join(" ");
    let hits = table.search(&query, a.limit.max(1));
    if a.json {
        for m in &hits {
            let line = serde_json::json!({
                "id": m.id,
                "provider": m.provider_name,
                "name": m.name,
                "currency": "USD",
                "per": "1M tokens",
                "input": m.input.to_string(),
                "cached_input": m.cached.map(|c| c.to_string()),
                "output": m.output.to_string(),
                "tiered": m.tiered,
                "table_date": table.date,
            });
            println!("{line}");
        }
    } else {
        println!("# {}", table.source);
        println!("# USD por 1M tokens, preços em vigor em {}", table.date);
        let width = hits.iter().map(|m| m.id.len()).max().unwrap_or(0).max(5);
        println!(
            "{:<width$}  {:>10}  {:>10}  {:>10}",
            "model", "entrada", "cache", "saída"
        );
        let n = |d| format_decimal(d, Locale::PtBr, 2, 10);
        for m in &hits {
            println!(
                "{:<width$}  {:>10}  {:>10}  {:>10}{}",
                m.id,
                n(m.input),
                m.cached.map_or_else(|| "—".to_owned(), n),
                n(m.output),
                if m.tiered { "  (faixa base)" } else { "" }
            );
        }
    }
    if hits.is_empty() {
        eprintln!("no model in the price table matches `{query}`");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
