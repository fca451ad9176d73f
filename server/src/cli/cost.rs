//! `idem cost`: the cost model on the command line.

use idem_core::cost::{self, CostInputs, CostOutputs, PriceUnit};
use idem_core::date::{format_date_words, read_typed_date, DateProblem};
use idem_core::locale::{
    currency_in_text, format_decimal, read_marking, read_number, Currency, Locale, Marking,
};
use idem_core::scenario::{Field, Kind, Problem, Scenario};
use rust_decimal::Decimal;
use std::process::ExitCode;

/// Options of `idem cost`. Numbers take `.` or `,` as the decimal mark;
/// percentages are percent numbers (3 means 3%).
#[derive(Debug, clap::Args)]
// A negative number is bad input to explain ("must not be negative"), not
// an unknown flag.
#[command(allow_negative_numbers = true)]
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
    /// Price of input tokens per --price-unit, in --price-currency.
    #[arg(long, required_unless_present = "model", conflicts_with = "model")]
    price_in: Option<String>,
    /// Price of output tokens per --price-unit, in --price-currency.
    #[arg(long, required_unless_present = "model", conflicts_with = "model")]
    price_out: Option<String>,
    /// Price of cached input tokens per --price-unit (default: 0).
    #[arg(long, conflicts_with = "model")]
    price_cached: Option<String>,
    /// What prices are quoted per: 1k or 1m tokens.
    #[arg(long, default_value = "1k", conflicts_with = "model")]
    price_unit: String,
    /// The currency of the token prices: any ISO 4217 code (BRL, USD, GBP, JPY…).
    #[arg(long, default_value = "BRL", conflicts_with = "model")]
    price_currency: String,
    /// Take the prices (USD per 1M, cached input included) of this model
    /// from the bundled price table (`idem prices` lists them).
    #[arg(long)]
    model: Option<String>,
    /// The currency of revenue, the risk block and every result.
    #[arg(long, default_value = "BRL")]
    revenue_currency: String,
    /// Exchange rate, the Brazilian way: one unit of the price currency in
    /// the revenue currency (US$ 1 = R$ 5,33 is `--fx 5,33`). Required when
    /// the two currencies differ. It is for the pair the command names:
    /// --price-currency, or with --model the table's US$, against
    /// --revenue-currency.
    #[arg(long)]
    fx: Option<String>,
    /// The day the exchange rate was quoted, printed with it: 2026-12-04,
    /// 4 Dec 2026, or dd/mm/aaaa with --locale pt-BR (numbers that read as
    /// two days are refused with both).
    #[arg(long, requires = "fx")]
    fx_date: Option<String>,
    /// Percentage of each call's input served from the provider's cache.
    #[arg(long, default_value = "0")]
    cached_share: String,
    /// Model calls per conversation (an average: 1.5 is fine).
    #[arg(long, default_value = "1")]
    calls: String,
    /// Percentage of a duplicated call's input that hits the provider's
    /// cache.
    #[arg(long, default_value = "0")]
    dup_cache_share: String,
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
    /// How to read the numbers given (`45.000` is 45000 in pt-BR, 45 in
    /// en) and how to print the table: pt-BR or en. Without it, a number
    /// the two read differently is refused, naming both readings.
    #[arg(long, value_parser = parse_locale)]
    locale: Option<Locale>,
    /// Print one JSON object of exact decimal strings.
    #[arg(long)]
    json: bool,
}

fn parse_locale(s: &str) -> Result<Locale, String> {
    Locale::from_tag(s).ok_or_else(|| format!("`{s}` is not pt-BR or en"))
}

/// A number flag; `money` is the currency of an amount flag, whose own
/// symbol or code may be typed with it (`--ticket "R$ 1,20"`,
/// `--price-in £2,40`). Another currency's is refused, naming the one the
/// flag is in.
fn num(
    flag: &'static str,
    text: &str,
    locale: Option<Locale>,
    money: Option<Currency>,
    percent: bool,
) -> Result<Decimal, String> {
    // A percentage may say so (`2,5%`); `%` after any other number is a
    // typo to point out, never a sign to drop.
    let text = match text.trim().strip_suffix('%') {
        Some(number) if percent => number,
        Some(_) => {
            return Err(format!(
            "--{flag}: `{text}` ends in %, but --{flag} is not a percentage: give the number alone"
        ))
        }
        None => text,
    };
    let number = match money.map(|c| (c, read_marking(text, c))) {
        None if idem_core::locale::thousands_shorthand(text).is_some() => {
            return Err(format!(
                "--{flag}: `{text}` is not a number: write it in digits ({})",
                idem_core::locale::thousands_shorthand(text).unwrap_or_default()
            ));
        }
        None if currency_in_text(text).is_some() => {
            return Err(format!(
                "--{flag}: `{text}` carries a currency symbol, but --{flag} is not an amount of money: give the number alone"
            ));
        }
        None | Some((_, Marking::None(_))) => text.to_owned(),
        Some((_, Marking::Matches(n))) => n,
        Some((c, Marking::Other(m))) => {
            return Err(format!(
                "--{flag}: `{m}` is not the currency of --{flag}, which is in {} ({}); give the number alone or in {}",
                c.name(Locale::EnUs),
                c.code(),
                c.code()
            ));
        }
    };
    let text = number.as_str();
    read_number(text.trim(), locale, money).map_err(|e| match e {
        idem_core::Error::AmbiguousNumber { .. } if locale.is_none() => {
            format!("--{flag}: {e}: say which with --locale pt-BR or --locale en")
        }
        // With a locale, only an amount in a currency of three decimals or
        // none is ambiguous: one of its readings is the currency's shape.
        idem_core::Error::AmbiguousNumber { .. } if money.is_some_and(|c| c.minor_units() == 0) => {
            format!(
                "--{flag}: {e}: {} has no decimals: write the whole amount with no mark ({}) or with this locale's thousands mark ({})",
                money.map_or("this currency", |c| c.code()),
                "1200",
                match locale {
                    Some(Locale::EnUs) => "1,200",
                    _ => "1.200",
                },
            )
        }
        idem_core::Error::AmbiguousNumber { .. } => format!(
            "--{flag}: {e}: in {} write the fils with this locale's decimal mark ({}), or group the thousands with three decimals after ({})",
            money.map_or("this currency", |c| c.code()),
            match locale {
                Some(Locale::EnUs) => "37.125",
                _ => "37,125",
            },
            match locale {
                Some(Locale::EnUs) => "37,125.000",
                _ => "37.125,000",
            },
        ),
        e => format!("--{flag}: {e}"),
    })
}

fn currency(flag: &'static str, text: &str) -> Result<Currency, String> {
    Currency::from_code(text).ok_or_else(|| match idem_core::currency::known_refusal(text) {
        Some(why) => format!("--{flag}: {why}"),
        None => format!(
            "--{flag}: `{}` is not an ISO 4217 currency code (BRL, USD, EUR, GBP, JPY…)",
            text.chars().take(16).collect::<String>()
        ),
    })
}

fn inputs(a: &CostArgs) -> Result<(Scenario, Option<String>), String> {
    let l = a.locale;
    let pc = currency("price-currency", &a.price_currency)?;
    let rc = currency("revenue-currency", &a.revenue_currency)?;
    // Each field's flag, by the field table: a field with no flag here
    // does not build.
    let given = |f: Field| -> Option<&str> {
        match f {
            Field::Conversations => Some(&a.conversations),
            Field::TokensIn => Some(&a.tokens_in),
            Field::CachedShare => Some(&a.cached_share),
            Field::TokensOut => Some(&a.tokens_out),
            Field::Calls => Some(&a.calls),
            Field::PriceIn => Some(a.price_in.as_deref().unwrap_or("0")),
            Field::PriceCached => Some(a.price_cached.as_deref().unwrap_or("0")),
            Field::PriceOut => Some(a.price_out.as_deref().unwrap_or("0")),
            Field::Fx => a.fx.as_deref(),
            Field::Ticket => Some(&a.ticket),
            Field::DuplicateRate => Some(&a.duplicate_rate),
            Field::DupCacheShare => Some(&a.dup_cache_share),
            Field::MoneyShare => a.money_share.as_deref(),
            Field::AvgCharge => a.avg_charge.as_deref(),
            Field::OpsCost => a.ops_cost.as_deref(),
            Field::ClaimRate => a.claim_rate.as_deref(),
        }
    };
    let mut values = Vec::with_capacity(Field::ALL.len());
    for f in Field::ALL {
        let money = match f.kind() {
            Kind::Money if f.in_price_currency() => Some(pc),
            Kind::Money => Some(rc),
            _ => None,
        };
        let percent = f.kind() == Kind::Percent;
        values.push(
            given(f)
                .map(|t| num(f.flag(), t, l, money, percent))
                .transpose()?,
        );
    }
    let mut inputs = CostInputs {
        price_unit: a
            .price_unit
            .parse::<PriceUnit>()
            .map_err(|e| format!("--{e}"))?,
        price_currency: pc,
        revenue_currency: rc,
        ..CostInputs::reference()
    };
    Field::write_inputs(|f| values[f.index()], &mut inputs);
    let mut s = Scenario {
        inputs,
        ..Scenario::default()
    };
    let mut note = None;
    if let Some(id) = &a.model {
        let table = crate::prices::table();
        let m = table.get(id).ok_or_else(|| {
            let near: Vec<String> = table
                .search(id, 3)
                .into_iter()
                .map(|m| m.id.clone())
                .collect();
            if near.is_empty() {
                format!(
                    "--model: `{id}` is not in the price table (`idem prices QUERY` searches it)"
                )
            } else {
                format!(
                    "--model: `{id}` is not in the price table; did you mean {}?",
                    near.join(", ")
                )
            }
        })?;
        m.fill(&mut s, table.date);
        // The words in the output's language; the figures are the table's.
        let en = l == Some(Locale::EnUs);
        let w = |pt: &'static str, english: &'static str| if en { english } else { pt };
        note = Some(format!(
            "{} {} ({}) {} {}: US$ {} {}, US$ {} {}, US$ {} {}{}",
            w("Preços de", "Prices of"),
            m.id,
            m.name,
            w(
                "na tabela genai-prices de",
                "from the genai-prices table of"
            ),
            table.date,
            m.input,
            w("entrada", "input"),
            m.cached_or_input(),
            w("entrada em cache", "cached input"),
            m.output,
            w("saída por 1M tokens", "output per 1M tokens"),
            if m.tiered {
                w(
                    " (faixa base; prompts longos custam mais)",
                    " (base tier; long prompts cost more)",
                )
            } else {
                ""
            }
        ));
    }
    if s.inputs.price_currency == s.inputs.revenue_currency {
        if a.fx.is_some() {
            return Err(format!(
                "--fx: prices and revenue are both in {}; an exchange rate applies only when --price-currency differs from --revenue-currency",
                s.inputs.revenue_currency.code()
            ));
        }
    } else if s.inputs.fx.is_none() {
        return Err(format!(
            "--fx: required, prices are in {} and revenue in {} (US$ 1 = R$ 5,33 is --fx 5,33)",
            s.inputs.price_currency.code(),
            s.inputs.revenue_currency.code()
        ));
    }
    if let Some(d) = &a.fx_date {
        // ISO, a month by name, or numbers that read as one day only;
        // `04/12/2026` without --locale pt-BR reads two ways and is refused.
        let read = read_typed_date(d, l.unwrap_or(Locale::EnUs)).map_err(|p| match p {
            DateProblem::Ambiguous(x, y) => format!(
                "--fx-date: `{d}` reads as {} or {}: write {x} or {y}, or give --locale pt-BR for dd/mm/aaaa",
                format_date_words(&x, Locale::EnUs),
                format_date_words(&y, Locale::EnUs)
            ),
            DateProblem::NoSuchDay => format!("--fx-date: `{d}` is no such day"),
            DateProblem::Unreadable | DateProblem::AfterToday(_) => {
                format!("--fx-date: `{d}` is not a date: write the day as YYYY-MM-DD (year, month, day)")
            }
        })?;
        idem_core::date::not_after(&read, &crate::today::latest_today()).map_err(|_| {
            format!("--fx-date: `{d}` is after today: a rate is quoted on the day it is given or before")
        })?;
        s.fx_date = Some(read);
    }
    // The same precision rules as the calculator's fields: nothing typed is
    // rounded away.
    for f in Field::ALL {
        if let Some(v) = f.get(&s) {
            if let Err(p) = f.check_typed(v) {
                if p == Problem::TooPrecise {
                    return Err(format!(
                        "--{}: has more than {} decimal places, which the calculator does not keep",
                        flag_of(f),
                        f.kind().max_decimals()
                    ));
                }
            }
        }
    }
    Ok((s, note))
}

/// The command-line flag of a field.
fn flag_of(f: Field) -> &'static str {
    f.flag()
}

/// The results as a table, labelled and formatted in `l`: the page's rows
/// (`app::calculator::rows`), so the words and figures are the page's.
fn table(s: &Scenario, o: &CostOutputs, l: Locale) -> String {
    let i = &s.inputs;
    let t = |pt: &'static str, en: &'static str| if l == Locale::PtBr { pt } else { en };
    let mut lines: Vec<(String, String)> = Vec::new();
    if let (Some(fx), true) = (i.fx, i.price_currency != i.revenue_currency) {
        lines.push((
            t("Câmbio", "Exchange rate").to_owned(),
            app::calculator::rate_value(
                i.price_currency,
                i.revenue_currency,
                fx,
                s.fx_date.as_deref(),
                l,
            ),
        ));
    }
    for r in app::calculator::rows(s, o, l) {
        // A count shown whole says the exact expected value beside it
        // (313 for 312,5), as the page's note does.
        let exact = idem_core::scenario::parse_canonical(&r.exact)
            .filter(|d| r.unit.len() != 3 && r.unit != "%" && !d.fract().is_zero())
            .map(|d| {
                format!(
                    " ({} {})",
                    t("valor esperado", "expected value"),
                    format_decimal(d, l, 0, 10)
                )
            })
            .unwrap_or_default();
        lines.push((r.label.to_owned(), format!("{}{exact}", r.value)));
    }
    let width = lines
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out: String = lines
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect();
    if let Some(r) = &i.risk {
        // The page's words, so the caveat says the same everywhere.
        out.push_str(&format!(
            "\n{}\n",
            app::calculator::claim_caveat(r.claim_rate_pct, l, i.revenue_currency)
        ));
    }
    out
}

/// The line `idem cost` writes on stderr when the prices look quoted per
/// the other unit (the figures stand; exit 0).
fn unit_warning(s: &Scenario, o: &CostOutputs, l: Locale) -> Option<String> {
    idem_core::scenario::unit_warning(s, o)
        .map(|w| idem_core::scenario::unit_warning_text(w, s, o, l))
}

/// Runs the command: exit 0, or 2 with a message naming the bad input.
pub fn run(a: &CostArgs) -> ExitCode {
    let result = inputs(a).and_then(|(s, note)| {
        let o = cost::compute(&s.inputs).map_err(|e| format!("--{e}"))?;
        // Break-even is always reported, so a ticket of zero is an error here.
        o.break_even().map_err(|e| format!("--{e}"))?;
        Ok((s, o, note))
    });
    match result {
        Ok((s, o, note)) => {
            let l = a.locale.unwrap_or(Locale::PtBr);
            let rate = idem_core::scenario::rate_inverted(&s)
                .then(|| idem_core::scenario::rate_warning_text(&s, l));
            for w in unit_warning(&s, &o, l).into_iter().chain(rate) {
                eprintln!(
                    "{} {w}",
                    if l == Locale::PtBr {
                        "aviso:"
                    } else {
                        "warning:"
                    }
                );
            }
            if a.json {
                let v = idem_core::scenario::estimate_json(&s, &o);
                println!("{v}");
            } else {
                if let Some(n) = note {
                    println!("{n}\n");
                }
                print!("{}", table(&s, &o, l));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
