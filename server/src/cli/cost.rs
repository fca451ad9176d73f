//! `idem cost`: the cost model on the command line.

use idem_core::cost::{self, CostInputs, CostOutputs, PriceUnit, RiskInputs};
use idem_core::locale::{
    format_count, format_money, format_pct, parse_decimal_any, Currency, Locale,
};
use rust_decimal::Decimal;
use std::process::ExitCode;

/// Options of `idem cost`. Numbers take `.` or `,` as the decimal mark;
/// percentages are percent numbers (3 means 3%).
#[derive(Debug, clap::Args)]
pub struct CostArgs {
    /// Conversations per month.
    #[arg(long)]
    conversations: String,
    /// Input tokens per model call.
    #[arg(long)]
    tokens_in: String,
    /// Output tokens per model call.
    #[arg(long)]
    tokens_out: String,
    /// Price of input tokens per --price-unit.
    #[arg(long)]
    price_in: String,
    /// Price of output tokens per --price-unit.
    #[arg(long)]
    price_out: String,
    /// What prices are quoted per: 1k or 1m tokens.
    #[arg(long, default_value = "1k")]
    price_unit: String,
    /// Revenue per resolved conversation.
    #[arg(long)]
    ticket: String,
    /// Percentage of conversations that repeat the call.
    #[arg(long)]
    duplicate_rate: String,
    /// Percentage of duplicated conversations that move money.
    #[arg(long, requires_all = ["avg_charge", "ops_cost", "claim_rate"])]
    money_share: Option<String>,
    /// Average charge amount.
    #[arg(long, requires = "money_share")]
    avg_charge: Option<String>,
    /// Operational cost per duplicated charge (support, reconciliation, refund).
    #[arg(long, requires = "money_share")]
    ops_cost: Option<String>,
    /// Percentage of duplicated charges that become a consumer claim (CDC art. 42).
    #[arg(long, requires = "money_share")]
    claim_rate: Option<String>,
    /// Print one JSON object of exact decimal strings.
    #[arg(long)]
    json: bool,
}

fn num(flag: &'static str, text: &str) -> Result<Decimal, String> {
    parse_decimal_any(text.trim().trim_end_matches('%')).map_err(|e| format!("--{flag}: {e}"))
}

fn inputs(a: &CostArgs) -> Result<CostInputs, String> {
    let risk = match (&a.money_share, &a.avg_charge, &a.ops_cost, &a.claim_rate) {
        (Some(m), Some(avg), Some(ops), Some(claim)) => Some(RiskInputs {
            money_share_pct: num("money-share", m)?,
            avg_charge: num("avg-charge", avg)?,
            ops_cost: num("ops-cost", ops)?,
            claim_rate_pct: num("claim-rate", claim)?,
        }),
        _ => None,
    };
    Ok(CostInputs {
        conversations: num("conversations", &a.conversations)?,
        tokens_in: num("tokens-in", &a.tokens_in)?,
        tokens_out: num("tokens-out", &a.tokens_out)?,
        price_in: num("price-in", &a.price_in)?,
        price_out: num("price-out", &a.price_out)?,
        price_unit: a
            .price_unit
            .parse::<PriceUnit>()
            .map_err(|e| format!("--{e}"))?,
        ticket: num("ticket", &a.ticket)?,
        duplicate_rate_pct: num("duplicate-rate", &a.duplicate_rate)?,
        risk,
    })
}

fn table(i: &CostInputs, o: &CostOutputs) -> String {
    let l = Locale::PtBr;
    let m = |d: Decimal| format_money(d, l, Currency::Brl);
    let n = |d: Decimal| format_count(d, l);
    let mut rows = vec![
        ("Custo por chamada", m(o.cost_per_call)),
        ("Receita do mês", m(o.monthly_revenue)),
        (
            "Conversas duplicadas",
            format!(
                "{} ({} de {})",
                n(o.duplicated_conversations),
                format_pct(i.duplicate_rate_pct, l),
                n(i.conversations)
            ),
        ),
        ("Token queimado por mês", m(o.monthly_token_waste)),
        (
            "Parcela da receita",
            o.waste_share_of_revenue_pct
                .map_or("—".into(), |p| format_pct(p, l)),
        ),
        ("Token queimado por ano", m(o.annual_token_waste)),
        (
            "Conversas a mais para empatar",
            o.break_even_conversations.map_or("—".into(), n),
        ),
    ];
    if let Some(r) = &o.risk {
        rows.extend([
            ("Cobranças duplicadas por mês", n(r.duplicated_charges)),
            (
                "Valor cobrado em dobro por mês",
                m(r.monthly_duplicated_amount),
            ),
            ("Custo operacional por mês", m(r.monthly_ops_cost)),
            (
                "Exposição a reclamações (CDC art. 42)",
                m(r.monthly_claim_exposure),
            ),
            ("Risco financeiro por mês", m(r.monthly_total_risk)),
            ("Risco financeiro por ano", m(r.annual_total_risk)),
            ("Custo total das duplicatas por ano", m(r.annual_total_cost)),
        ]);
    }
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// Runs the command: exit 0, or 2 with a message naming the bad input.
pub fn run(a: &CostArgs) -> ExitCode {
    let result = inputs(a).and_then(|i| {
        let o = cost::compute(&i).map_err(|e| format!("--{e}"))?;
        // Break-even is always reported, so a ticket of zero is an error here.
        o.break_even().map_err(|e| format!("--{e}"))?;
        Ok((i, o))
    });
    match result {
        Ok((i, o)) => {
            if a.json {
                // Every value an exact decimal string (rust_decimal's serde-str).
                match serde_json::to_string(&o) {
                    Ok(json) => println!("{json}"),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", table(&i, &o));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
