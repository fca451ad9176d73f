//! The dashboard's words in Brazilian Portuguese and US English, and the
//! locale preference every page reads.
//!
//! Strings are pairs in the code rather than message files: there are two
//! languages, both maintained by the people who write the screens, and a pair
//! next to its use cannot drift out of sync with it.

use idem_core::locale::{Currency, Locale};
use idem_core::scenario::{Field, Problem};
use leptos::prelude::*;

/// The page's locale, shared by every component through context.
#[derive(Clone, Copy)]
pub struct Prefs {
    /// The display locale; switching it reformats numbers in place.
    pub locale: RwSignal<Locale>,
}

/// The locale the server chose for this request (the `lang` query
/// parameter, else the `idem_lang` cookie, else pt-BR). The server provides
/// it; the browser reads the same choice back from `<html lang>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLocale(pub Locale);

/// The latest calendar day anywhere on Earth when the server rendered the
/// page (`YYYY-MM-DD`): a rate's date may not pass it. The browser reads
/// the same day back from `<html data-today>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Today(pub String);

/// The name of the cookie that keeps the locale choice.
pub const LOCALE_COOKIE: &str = "idem_lang";

/// A text in the page's language. Every such text on the pages is this one
/// component, so the wasm holds its reactive code once rather than once per
/// text (each closure is a type of its own, with its own code).
#[component]
pub fn T(
    /// The Portuguese text.
    pt: &'static str,
    /// The English text.
    en: &'static str,
) -> impl IntoView {
    let locale = expect_context::<Prefs>().locale;
    move || tr(locale.get(), pt, en)
}

/// Picks the Portuguese or the English text.
pub fn tr(locale: Locale, pt: &'static str, en: &'static str) -> &'static str {
    match locale {
        Locale::PtBr => pt,
        Locale::EnUs => en,
    }
}

/// A field's label.
pub fn field_label(f: Field, l: Locale) -> &'static str {
    match f {
        Field::Conversations => tr(l, "Conversas por mês", "Conversations per month"),
        Field::TokensIn => tr(l, "Tokens de entrada por chamada", "Input tokens per call"),
        Field::CachedShare => tr(
            l,
            "Parte da entrada servida do cache",
            "Share of input served from cache",
        ),
        Field::TokensOut => tr(
            l,
            "Tokens de saída por chamada (raciocínio incluído)",
            "Output tokens per call (reasoning included)",
        ),
        Field::Calls => tr(
            l,
            "Chamadas ao modelo por conversa",
            "Model calls per conversation",
        ),
        Field::PriceIn => tr(l, "Preço dos tokens de entrada", "Input token price"),
        Field::PriceCached => tr(
            l,
            "Preço dos tokens de entrada em cache",
            "Cached input token price",
        ),
        Field::PriceOut => tr(l, "Preço dos tokens de saída", "Output token price"),
        Field::Fx => tr(l, "Câmbio", "Exchange rate"),
        Field::Ticket => tr(
            l,
            "Receita por conversa resolvida",
            "Revenue per resolved conversation",
        ),
        Field::DuplicateRate => tr(
            l,
            "Conversas que repetem a chamada",
            "Conversations that repeat the call",
        ),
        Field::MoneyShare => tr(
            l,
            "Duplicatas que movem dinheiro",
            "Duplicates that move money",
        ),
        Field::AvgCharge => tr(l, "Valor médio da cobrança", "Average charge"),
        Field::OpsCost => tr(
            l,
            "Custo operacional por cobrança duplicada",
            "Operational cost per duplicated charge",
        ),
        Field::ClaimRate => tr(
            l,
            "Cobranças duplicadas que viram reclamação",
            "Duplicated charges that become a claim",
        ),
        Field::DupCacheShare => tr(
            l,
            "Parte da entrada de uma duplicata que acerta o cache",
            "Share of a duplicate's input that hits the cache",
        ),
    }
}

/// A field's one-line help: what it counts and in what unit (written by
/// the server only, in both languages).
#[cfg(feature = "ssr")]
pub fn field_help(f: Field, l: Locale) -> &'static str {
    match f {
        Field::Conversations => tr(
            l,
            "Conversas resolvidas num mês; um número inteiro.",
            "Conversations resolved in a month; a whole number.",
        ),
        Field::Calls => tr(
            l,
            "Chamadas ao modelo numa conversa, em média (1,5 vale).",
            "Model calls in one conversation, on average (1.5 is fine).",
        ),
        Field::TokensIn => tr(
            l,
            "Tokens enviados ao modelo em cada chamada, os do cache incluídos.",
            "Tokens sent to the model in each call, cached ones included.",
        ),
        Field::CachedShare => tr(
            l,
            "Percentual da entrada que o provedor serve do cache de prompt.",
            "Percent of the input the provider serves from its prompt cache.",
        ),
        Field::TokensOut => tr(
            l,
            "Tokens que o modelo gera em cada chamada, raciocínio incluído.",
            "Tokens the model generates in each call, reasoning included.",
        ),
        Field::PriceIn => tr(
            l,
            "O que o contrato cobra pela entrada, na moeda e unidade escolhidas.",
            "What the contract charges for input, in the chosen currency and unit.",
        ),
        Field::PriceCached => tr(
            l,
            "O preço da entrada servida do cache (costuma ser 10% da entrada).",
            "The price of input served from the cache (often 10% of input).",
        ),
        Field::PriceOut => tr(
            l,
            "O que o contrato cobra pela saída, na moeda e unidade escolhidas.",
            "What the contract charges for output, in the chosen currency and unit.",
        ),
        Field::Fx => tr(
            l,
            "Quanto vale 1 unidade da moeda dos preços na moeda da receita.",
            "What 1 unit of the price currency is worth in the revenue currency.",
        ),
        Field::Ticket => tr(
            l,
            "Receita de uma conversa resolvida, na moeda da receita.",
            "Revenue from one resolved conversation, in the revenue currency.",
        ),
        Field::DuplicateRate => tr(
            l,
            "Percentual de conversas em que a chamada final roda de novo.",
            "Percent of conversations whose closing call runs again.",
        ),
        Field::DupCacheShare => tr(
            l,
            "Percentual da entrada de uma repetição que ainda está no cache.",
            "Percent of a repeated call's input still in the cache.",
        ),
        Field::MoneyShare => tr(
            l,
            "Percentual das duplicatas que cobram o cliente.",
            "Percent of duplicates that charge the customer.",
        ),
        Field::AvgCharge => tr(
            l,
            "Valor médio de uma cobrança, na moeda da receita.",
            "Average amount of one charge, in the revenue currency.",
        ),
        Field::OpsCost => tr(
            l,
            "Suporte, conciliação e estorno de cada cobrança em dobro.",
            "Support, reconciliation and refund of each double charge.",
        ),
        Field::ClaimRate => tr(
            l,
            "Percentual das cobranças em dobro que viram reclamação.",
            "Percent of double charges that become a claim.",
        ),
    }
}

/// What to fix, in the reader's language.
pub fn problem_text(p: Problem, l: Locale) -> &'static str {
    match p {
        Problem::Negative => tr(l, "não pode ser negativo", "cannot be negative"),
        Problem::NotWhole => tr(l, "precisa ser um número inteiro", "must be a whole number"),
        Problem::AboveHundred => tr(
            l,
            "é uma porcentagem: no máximo 100",
            "is a percentage: 100 at most",
        ),
        Problem::Zero => tr(l, "precisa ser maior que zero", "must be above zero"),
        Problem::NotANumber => tr(l, "digite um número", "type a number"),
        Problem::RiskIncomplete => tr(
            l,
            "preencha os quatro campos de risco financeiro, ou deixe os quatro vazios",
            "fill in all four financial-risk fields, or leave all four empty",
        ),
        Problem::TooLarge => tr(
            l,
            "grande demais para calcular com exatidão",
            "too large to compute exactly",
        ),
        Problem::TooPrecise => tr(
            l,
            "tem mais casas decimais do que o cálculo guarda: arredonde você mesmo",
            "has more decimal places than the calculation keeps: round it yourself",
        ),
        Problem::RateRequired => tr(
            l,
            "informe o câmbio: preços e receita estão em moedas diferentes",
            "enter the exchange rate: prices and revenue are in different currencies",
        ),
        Problem::WrongCurrency => tr(
            l,
            "este campo não é um valor em dinheiro: apague o símbolo de moeda e digite só o número",
            "this field is not an amount of money: remove the currency sign and type the number alone",
        ),
    }
}

/// Why a link is not a scenario, in the reader's language: the same words
/// the calculator puts under each field (server only).
#[cfg(feature = "ssr")]
pub fn query_error_text(e: &idem_core::scenario::QueryError, l: Locale) -> String {
    use idem_core::scenario::QueryError;
    match e {
        QueryError::Fields(p) => {
            p.0.iter()
                .map(|(f, p)| format!("{}: {}", field_label(*f, l), problem_text(*p, l)))
                .collect::<Vec<_>>()
                .join(" · ")
        }
        QueryError::Version(v) => match l {
            Locale::PtBr => format!(
                "a versão de link «{}» não é lida por este servidor (ele lê as versões 1 e {})",
                clip(v),
                idem_core::scenario::VERSION
            ),
            Locale::EnUs => e.to_string(),
        },
        QueryError::Unit(u) => match l {
            Locale::PtBr => format!("a unidade de preço «{}» não é 1k nem 1m", clip(u)),
            Locale::EnUs => e.to_string(),
        },
        QueryError::Currency(c) => currency_refusal(c, l),
        QueryError::Model(m) => match l {
            Locale::PtBr => format!(
                "«{}» não é o identificador de um modelo da tabela de preços",
                clip(m)
            ),
            Locale::EnUs => e.to_string(),
        },
        QueryError::Date(d) => match l {
            Locale::PtBr => format!(
                "a data do câmbio «{}» não é uma data escrita AAAA-MM-DD",
                clip(d)
            ),
            Locale::EnUs => e.to_string(),
        },
        QueryError::Duplicate(k) => match l {
            Locale::PtBr => format!(
                "«{}» aparece mais de uma vez no link: deixe uma só",
                clip(k)
            ),
            Locale::EnUs => e.to_string(),
        },
    }
}

/// At most 16 characters of what a link carried, for a message.
fn clip(s: &str) -> String {
    s.chars().take(16).collect()
}

/// Why a currency code in a link cannot be used, in the reader's language;
/// a withdrawn one names the currency that replaced it and since when.
pub fn currency_refusal(code: &str, l: Locale) -> String {
    match (idem_core::currency::withdrawn(code), l) {
        (Some(w), Locale::PtBr) => format!(
            "a moeda {} foi retirada de circulação: {} a substituiu em {}",
            w.code,
            w.successor,
            idem_core::date::format_date(w.since, l)
        ),
        (Some(w), Locale::EnUs) => format!(
            "{} is a withdrawn currency: {} replaced it on {}",
            w.code,
            w.successor,
            idem_core::date::format_date(w.since, l)
        ),
        (None, Locale::PtBr) if idem_core::currency::fund(code).is_some() => format!(
            "«{}» é um código de fundo ou de liquidação, não uma moeda em que se paga: {}",
            clip(code),
            idem_core::currency::fund(code)
                .and_then(|f| f.paid_in)
                .map(|c| format!("use {c}"))
                .unwrap_or_else(|| "escolha a moeda do contrato".to_owned())
        ),
        (None, Locale::EnUs) if idem_core::currency::fund(code).is_some() => {
            idem_core::currency::not_a_currency(code).replace('`', "")
        }
        (None, Locale::PtBr) => format!("«{}» não é um código de moeda ISO 4217", clip(code)),
        (None, Locale::EnUs) => format!("“{}” is not an ISO 4217 currency code", clip(code)),
    }
}

/// How a number that could not be read should be typed instead.
pub fn number_hint(l: Locale) -> &'static str {
    tr(
        l,
        "não é um número: use vírgula para decimais, como 1.234,56 ou 1234,56",
        "is not a number: use a point for decimals, as in 1,234.56 or 1234.56",
    )
}

/// A currency as the selector lists it: code, name and symbol in the
/// reader's language ("GBP — Libra esterlina (£)").
pub fn currency_name(c: Currency, l: Locale) -> String {
    let symbol = c.symbol(l);
    if symbol == c.code() {
        format!("{} — {}", c.code(), c.name(l))
    } else {
        format!("{} — {} ({symbol})", c.code(), c.name(l))
    }
}

/// A currency marking typed in a number field that is not the field's
/// currency: names the currency the field expects.
pub fn wrong_currency_text(typed: &str, expected: Currency, l: Locale) -> String {
    let typed: String = typed.chars().take(12).collect();
    match l {
        Locale::PtBr => format!(
            "«{typed}» não é a moeda deste campo: ele está em {} ({}); troque a moeda do bloco ou apague «{typed}»",
            expected.name(l),
            expected.code()
        ),
        Locale::EnUs => format!(
            "“{typed}” is not this field's currency: it is in {} ({}); change the block's currency or remove “{typed}”",
            expected.name(l),
            expected.code()
        ),
    }
}

/// What is wrong with a typed date, in the reader's language, naming both
/// readings when there are two.
pub fn date_problem_text(p: &idem_core::date::DateProblem, l: Locale) -> String {
    use idem_core::date::{format_date, format_date_words, DateProblem};
    match p {
        DateProblem::Ambiguous(a, b) => match l {
            Locale::PtBr => format!(
                "data ambígua: pode ser {} ou {}; escreva o mês por extenso (4 dez 2026) ou 2026-12-04",
                format_date_words(a, l),
                format_date_words(b, l)
            ),
            Locale::EnUs => format!(
                "ambiguous date: it reads {} or {}; write the month as a word (4 Dec 2026) or 2026-12-04",
                format_date_words(a, l),
                format_date_words(b, l)
            ),
        },
        DateProblem::NoSuchDay => tr(
            l,
            "esse dia não existe: use dd/mm/aaaa, como 04/12/2026",
            "no such day: write it as 4 Dec 2026 or 2026-12-04",
        )
        .to_owned(),
        DateProblem::Unreadable => tr(
            l,
            "data inválida: use dd/mm/aaaa, como 04/12/2026",
            "not a date: write it as 4 Dec 2026 or 2026-12-04",
        )
        .to_owned(),
        DateProblem::AfterToday(latest) => format!(
            "{} {}",
            tr(
                l,
                "data futura: um câmbio é cotado até hoje,",
                "a future date: a rate is quoted on or before today,"
            ),
            format_date(latest, l)
        ),
    }
}

/// A date from Unix milliseconds, as `2026-11-30 14:05 UTC`: the same text
/// on the server and in the browser, whatever their time zones.
pub fn utc_minute(ms: i64) -> String {
    let (y, m, d, h, mi, _) = civil_utc(ms);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02} UTC")
}

/// The same instant to the second: `2026-11-30 14:05:09 UTC`.
pub fn utc_second(ms: i64) -> String {
    let (y, m, d, h, mi, s) = civil_utc(ms);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// The same instant for a `<time datetime>`: `2026-11-30T14:05:09Z`.
pub fn iso_utc(ms: i64) -> String {
    let (y, m, d, h, mi, s) = civil_utc(ms);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Year, month, day, hour, minute and second in UTC of Unix milliseconds.
fn civil_utc(ms: i64) -> (i64, i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = idem_core::date::civil_from_days(days);
    (y, m, d, rem / 3600, (rem % 3600) / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(utc_minute(1_796_040_300_000), "2026-11-30 12:05 UTC");
        assert_eq!(utc_second(1_796_040_309_999), "2026-11-30 12:05:09 UTC");
        assert_eq!(iso_utc(1_796_040_309_999), "2026-11-30T12:05:09Z");
    }
}
