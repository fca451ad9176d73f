//! Locale-aware number reading and writing (pt-BR by default, en-US), shared
//! by the CLI and the dashboard so both print the same "R$ 1.782,00".

use crate::Error;
use rust_decimal::{Decimal, RoundingStrategy};

pub use crate::currency::{read_marking, Currency, Marking};
pub use crate::lang::Locale;

fn group(int_digits: &str, sep: char) -> String {
    let n = int_digits.len();
    let mut out = String::with_capacity(n + n / 3);
    for (i, c) in int_digits.chars().enumerate() {
        if i > 0 && (n - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// Writes a decimal with the locale's separators, rounded half away from
/// zero to at most `max_frac` places and padded to at least `min_frac`.
pub fn format_decimal(d: Decimal, locale: Locale, min_frac: u32, max_frac: u32) -> String {
    let (dec, grp) = locale.separators();
    let mut r = d
        .round_dp_with_strategy(max_frac, RoundingStrategy::MidpointAwayFromZero)
        .normalize();
    if r.scale() < min_frac {
        r.rescale(min_frac);
    }
    let s = r.abs().to_string();
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let mut out = String::new();
    if r.is_sign_negative() && !r.is_zero() {
        out.push('-');
    }
    out.push_str(&group(int, grp));
    if !frac.is_empty() {
        out.push(dec);
        out.push_str(frac);
    }
    out
}

/// A number already written in `locale`, with the currency's symbol where
/// that locale puts it ("R$ 1", "£1", "ARS 1").
pub fn with_symbol(number: String, locale: Locale, currency: Currency) -> String {
    let symbol = currency.symbol(locale);
    // CLDR's spacing: a symbol that ends in a letter ("ARS", "CHF") keeps
    // a space from the digits in English too.
    let spaced = locale == Locale::PtBr || symbol.ends_with(|c: char| c.is_alphabetic());
    if spaced {
        format!("{symbol} {number}")
    } else {
        format!("{symbol}{number}")
    }
}

/// An amount of money to the currency's minor unit ("R$ 148,50",
/// "¥1,782", "KWD 1.250"), rounded half away from zero; the exact value
/// goes in formulas' tooltips and the CSV.
pub fn format_money(d: Decimal, locale: Locale, currency: Currency) -> String {
    let minor = currency.minor_units();
    with_symbol(format_decimal(d, locale, minor, minor), locale, currency)
}

/// An amount of money in whole units of its currency ("R$ 5.000",
/// "¥5,000,000", "BHD 10,000"), rounded half away from zero: a chart's
/// axis when no tick needs the minor unit. The same writer as
/// [`format_money`], with no decimals, whatever the currency's minor unit.
pub fn format_money_whole(d: Decimal, locale: Locale, currency: Currency) -> String {
    with_symbol(format_decimal(d, locale, 0, 0), locale, currency)
}

/// A unit cost (one model call): the minor unit always shown, finer
/// digits kept up to four places, since a call costs fractions of a cent
/// (R$ 0,165 stays R$ 0,165).
pub fn format_unit_cost(d: Decimal, locale: Locale, currency: Currency) -> String {
    let minor = currency.minor_units();
    with_symbol(
        format_decimal(d, locale, minor, minor.max(4)),
        locale,
        currency,
    )
}

/// A price as it was typed: every decimal the field keeps (up to ten), so
/// a formula repeats exactly the number that went in ("US$ 0,30").
pub fn format_price(d: Decimal, locale: Locale, currency: Currency) -> String {
    with_symbol(
        format_decimal(d, locale, currency.minor_units(), 10),
        locale,
        currency,
    )
}

/// A count, rounded half away from zero to a whole number and grouped
/// ("30.000"; an expected 900,5 duplicates reads "901").
pub fn format_count(d: Decimal, locale: Locale) -> String {
    format_decimal(d, locale, 0, 0)
}

/// The currency whose code or symbol a typed amount carries ("US$ 3",
/// "$3", "€ 2", "R$ 1,20", "£2,40", "3 JPY"), if any: the first currency,
/// by code, that spells its marking that way (a bare "$" reads as the US
/// dollar's).
pub fn currency_in_text(text: &str) -> Option<Currency> {
    if matches!(read_marking(text, Currency::USD), Marking::Matches(_)) {
        return Some(Currency::USD);
    }
    Currency::all().find(|c| matches!(read_marking(text, *c), Marking::Matches(_)))
}

/// A percentage with two decimals ("0,41%").
pub fn format_pct(d: Decimal, locale: Locale) -> String {
    format!("{}%", format_decimal(d, locale, 2, 2))
}

fn valid_grouping(int: &str, sep: char) -> bool {
    let mut parts = int.split(sep);
    let first = parts.next().unwrap_or("");
    let first_ok = (1..=3).contains(&first.len()) && !(first.starts_with('0'));
    first_ok && parts.all(|p| p.len() == 3)
}

/// Reads a number as a person of `locale` types it: pt-BR takes
/// `1.234,56` and `1234,56` (and `1234.56`, whose dot cannot be grouping);
/// en-US takes `1,234.56` and `1234.56`. Spaces and a leading currency
/// symbol are ignored. Anything else is refused with a hint.
pub fn parse_decimal(input: &str, locale: Locale) -> Result<Decimal, Error> {
    let fail = |hint: &str| Error::Number {
        input: input.to_owned(),
        hint: if hint.is_empty() {
            String::new()
        } else {
            format!(": {hint}")
        },
    };
    let mut s = plain_signs(
        &input
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>(),
    );
    s = s.replace('%', "");
    if let Some(c) = currency_in_text(&s) {
        if let Marking::Matches(number) = read_marking(&s, c) {
            s = number.chars().filter(|c| !c.is_whitespace()).collect();
        }
    }
    if s.is_empty() {
        return Err(fail("type a number"));
    }
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b.to_owned()),
        None => (false, s.clone()),
    };
    if !body
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
    {
        return Err(fail("only digits, `.` and `,` are allowed"));
    }
    // Half-typed (`48,`, `48.`): the decimals the mark announces are
    // missing, and reading it as 48 would be a guess.
    if let Some(mark) = body.chars().last().filter(|c| matches!(c, '.' | ',')) {
        return Err(fail(&format!(
            "it ends in `{mark}`: type the digits after it, or leave the mark out"
        )));
    }
    let (dec, grp) = locale.separators();
    let has_dec = body.contains(dec);
    let has_grp = body.contains(grp);
    let (int, frac) = if has_dec {
        if body.matches(dec).count() > 1 {
            return Err(fail(&format!("`{dec}` marks decimals and may appear once")));
        }
        let (int, frac) = body.split_once(dec).unwrap_or((&body, ""));
        if frac.contains(grp) {
            return Err(fail(&format!(
                "`{grp}` cannot come after the decimal mark `{dec}`"
            )));
        }
        if has_grp && !valid_grouping(int, grp) {
            return Err(fail(&format!(
                "thousands are grouped in threes with `{grp}`"
            )));
        }
        (int.replace(grp, ""), frac.to_owned())
    } else if has_grp {
        if valid_grouping(&body, grp) {
            (body.replace(grp, ""), String::new())
        } else if body.matches(grp).count() == 1 {
            // Not a valid grouping, so the only reading left is a decimal
            // mark typed in the other convention ("1234.56" in pt-BR).
            let (i, f) = body.split_once(grp).unwrap_or((&body, ""));
            (i.to_owned(), f.to_owned())
        } else {
            return Err(fail(&format!(
                "thousands are grouped in threes with `{grp}`"
            )));
        }
    } else {
        (body.clone(), String::new())
    };
    if int.is_empty() && frac.is_empty() {
        return Err(fail("type a number"));
    }
    let text = format!(
        "{}{}.{}",
        if neg { "-" } else { "" },
        if int.is_empty() { "0" } else { &int },
        if frac.is_empty() { "0" } else { &frac }
    );
    Decimal::from_str_exact(&text).map_err(|_| fail("it has too many digits"))
}

/// Reads a number written with either convention, for command-line flags:
/// with both marks the last one is the decimal mark; a lone `,` is a decimal
/// mark; a lone `.` is a decimal mark.
pub fn parse_decimal_any(input: &str) -> Result<Decimal, Error> {
    let s = input.trim();
    let last_comma = s.rfind(',');
    let last_dot = s.rfind('.');
    let locale = match (last_comma, last_dot) {
        (Some(c), Some(d)) if c > d => Locale::PtBr,
        (Some(_), None) if s.matches(',').count() == 1 => Locale::PtBr,
        (Some(_), None) => Locale::EnUs,
        (None, Some(_)) if s.matches('.').count() > 1 => Locale::PtBr,
        _ => Locale::EnUs,
    };
    parse_decimal(s, locale)
}

/// Reads a number given where no page says which locale it is in (a
/// command-line flag). With `locale`, as that locale reads it. Without one,
/// a form the two locales read differently is refused with both readings:
/// one kind of mark only, each mark followed by exactly three digits, after
/// a first group of one to three digits not starting with 0 (`45.000`,
/// `1.234`, `1,500`, `1.234.567`; pt-BR reads the mark as a thousands
/// separator, en-US as the decimal point or not at all). Any other form is
/// read as [`parse_decimal_any`] reads it (`45000`, `0,015`, `1,20`,
/// `1.5`, `1.234,56`).
pub fn parse_decimal_flag(input: &str, locale: Option<Locale>) -> Result<Decimal, Error> {
    if let Some(l) = locale {
        return parse_decimal(input, l);
    }
    let signed = plain_signs(input.trim());
    let body = signed.trim_start_matches('-');
    let marks: Vec<char> = body.chars().filter(|c| matches!(c, '.' | ',')).collect();
    let one_kind = marks.first().filter(|m| marks.iter().all(|c| c == *m));
    if let Some(&mark) = one_kind {
        if body.chars().all(|c| c.is_ascii_digit() || c == mark) && valid_grouping(body, mark) {
            let reading = |l: Locale| match parse_decimal(input, l) {
                Ok(d) => d.normalize().to_string(),
                Err(_) => "no number".to_owned(),
            };
            return Err(Error::AmbiguousNumber {
                input: input.to_owned(),
                pt_br: reading(Locale::PtBr),
                en_us: reading(Locale::EnUs),
            });
        }
    }
    parse_decimal_any(input)
}

/// A count written in thousands (`25k`, `25 mil`): its digits, so a
/// refusal can say what to type (`25000`). Never read as the number: `k`
/// is also a currency's sign (the kyat's, the kina's).
pub fn thousands_shorthand(text: &str) -> Option<String> {
    let t = text.trim();
    let digits = t
        .strip_suffix(['k', 'K'])
        .or_else(|| t.strip_suffix("mil"))?
        .trim_end();
    (!digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("{digits}000"))
}

/// A number as other scripts and typesetting write it: the minus sign
/// (U+2212) and accounting parentheses `(37.125)` read as `-`, so the field
/// says it cannot be negative instead of calling the marks a currency;
/// Arabic-Indic digits (`٣٧`, `۳۷`), which a pasted Gulf invoice carries,
/// read as the digits they are.
fn plain_signs(s: &str) -> String {
    let s: String = s.chars().map(crate::currency::ascii_digit).collect();
    match s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => {
            let mut negative = String::from("-");
            negative.push_str(inner.trim());
            negative
        }
        None => s,
    }
}

/// The one reader of a typed number, for every surface (the calculator's
/// fields, the command line's flags, idem's MCP tools): as `locale` reads
/// it, or, with no locale, as [`parse_decimal_flag`] does (a form the two
/// locales read differently is refused with both readings).
///
/// `money`, the field's currency when it is an amount, adds the rule
/// three-decimal currencies need (BHD, KWD, OMR, JOD, TND, …): one mark
/// followed by exactly three digits (`37.125`) is a whole amount in one
/// notation and dinars and fils in the other, and in those currencies both
/// are everyday amounts, so where the locale reads the mark as grouping the
/// form is refused with both readings ([`Error::AmbiguousNumber`]) rather
/// than read a thousand times off. The same text with the locale's decimal
/// mark (`37,125` in pt-BR) is read as typed.
pub fn read_number(
    input: &str,
    locale: Option<Locale>,
    money: Option<Currency>,
) -> Result<Decimal, Error> {
    let Some(l) = locale else {
        return parse_decimal_flag(input, None);
    };
    read_in(input, l, money)
}

/// [`read_number`] with a locale: what the calculator page links (the
/// browser's build carries no reader it does not use).
pub fn read_in(input: &str, l: Locale, money: Option<Currency>) -> Result<Decimal, Error> {
    // One mark followed by exactly three digits reads as thousands in one
    // notation and as decimals in the other. For most currencies the
    // locale decides; where one reading is the currency's own shape it is
    // refused instead: in a three-decimal currency the grouping mark
    // (`37.125` dinars on the Portuguese page), in one without decimals the
    // decimal mark (`1,200` yen on the Portuguese page, 1.2 yen here).
    let (dec, grp) = l.separators();
    let suspect = match money.map(Currency::minor_units) {
        Some(3) => Some(grp),
        Some(0) => Some(dec),
        _ => None,
    };
    if let Some(mark) = suspect {
        let body: String = input
            .chars()
            .filter(|ch| ch.is_ascii_digit() || matches!(ch, '.' | ','))
            .collect();
        let one_mark = body.matches(['.', ',']).count() == 1 && body.contains(mark);
        if one_mark && valid_grouping(&body, mark) {
            let reading = |l: Locale| match parse_decimal(&body, l) {
                Ok(d) => d.normalize().to_string(),
                Err(_) => String::new(),
            };
            return Err(Error::AmbiguousNumber {
                input: input.trim().to_owned(),
                pt_br: reading(Locale::PtBr),
                en_us: reading(Locale::EnUs),
            });
        }
    }
    parse_decimal(input, l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn a_flag_number_two_locales_read_apart_needs_a_locale() {
        for (text, pt, en) in [
            ("45.000", "45000", "45"),
            ("12.000", "12000", "12"),
            ("1.234", "1234", "1.234"),
            ("1,500", "1.5", "1500"),
            ("1.234.567", "1234567", "no number"),
        ] {
            assert_eq!(
                parse_decimal_flag(text, None).unwrap_err().to_string(),
                format!("`{text}` reads {pt} in pt-BR but {en} in en-US"),
            );
        }
        assert_eq!(
            parse_decimal_flag("45.000", Some(Locale::PtBr)).unwrap(),
            Decimal::from(45_000)
        );
        assert_eq!(
            parse_decimal_flag("45.000", Some(Locale::EnUs)).unwrap(),
            Decimal::from(45)
        );
        assert_eq!(
            parse_decimal_flag("1.234.567", Some(Locale::PtBr)).unwrap(),
            Decimal::from(1_234_567)
        );
        assert!(parse_decimal_flag("1.234.567", Some(Locale::EnUs)).is_err());
        // Forms only one reading fits keep working without a locale.
        for (text, want) in [
            ("45000", "45000"),
            ("0,015", "0.015"),
            ("0.075", "0.075"),
            ("1,20", "1.2"),
            ("1.5", "1.5"),
            ("1.234,56", "1234.56"),
            ("1,234.56", "1234.56"),
            ("5,33", "5.33"),
            ("3", "3"),
        ] {
            assert_eq!(
                parse_decimal_flag(text, None).unwrap(),
                Decimal::from_str(want).unwrap(),
                "{text}"
            );
        }
    }

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn formats() {
        assert_eq!(
            format_money(d("1782"), Locale::PtBr, Currency::BRL),
            "R$ 1.782,00"
        );
        assert_eq!(
            format_money(d("148.5"), Locale::PtBr, Currency::BRL),
            "R$ 148,50"
        );
        assert_eq!(
            format_unit_cost(d("0.165"), Locale::PtBr, Currency::BRL),
            "R$ 0,165"
        );
        assert_eq!(
            format_money(d("59.4139"), Locale::PtBr, Currency::BRL),
            "R$ 59,41"
        );
        assert_eq!(
            format_money(d("4950.165"), Locale::PtBr, Currency::BRL),
            "R$ 4.950,17"
        );
        assert_eq!(format_count(d("360.08"), Locale::PtBr), "360");
        assert_eq!(format_count(d("900.5"), Locale::PtBr), "901");
        assert_eq!(
            format_price(d("0.0000125"), Locale::PtBr, Currency::USD),
            "US$ 0,0000125"
        );
        assert_eq!(currency_in_text("$3"), Some(Currency::USD));
        assert_eq!(currency_in_text("US$ 3"), Some(Currency::USD));
        assert_eq!(currency_in_text("R$ 3"), Some(Currency::BRL));
        assert_eq!(currency_in_text("€3"), Some(Currency::EUR));
        assert_eq!(currency_in_text("3,00"), None);
        assert_eq!(
            format_money(d("1782"), Locale::EnUs, Currency::USD),
            "$1,782.00"
        );
        assert_eq!(format_pct(d("0.4125"), Locale::PtBr), "0,41%");
        assert_eq!(format_count(d("30000"), Locale::PtBr), "30.000");
        assert_eq!(format_count(d("1234567"), Locale::EnUs), "1,234,567");
        assert_eq!(
            format_decimal(d("-1234.5"), Locale::PtBr, 2, 2),
            "-1.234,50"
        );
    }

    #[test]
    fn parses_as_the_locale_implies() {
        let pt = Locale::PtBr;
        assert_eq!(parse_decimal("1.234,56", pt).unwrap(), d("1234.56"));
        assert_eq!(parse_decimal("1234,56", pt).unwrap(), d("1234.56"));
        assert_eq!(parse_decimal("1234.56", pt).unwrap(), d("1234.56"));
        assert_eq!(parse_decimal("30.000", pt).unwrap(), d("30000"));
        assert_eq!(parse_decimal("0,015", pt).unwrap(), d("0.015"));
        assert_eq!(parse_decimal("0.015", pt).unwrap(), d("0.015"));
        assert_eq!(parse_decimal("R$ 1,20", pt).unwrap(), d("1.2"));
        let en = Locale::EnUs;
        assert_eq!(parse_decimal("1,234.56", en).unwrap(), d("1234.56"));
        assert_eq!(parse_decimal("1234.56", en).unwrap(), d("1234.56"));
        assert_eq!(parse_decimal("30,000", en).unwrap(), d("30000"));
        for bad in ["", "abc", "1,2,3,4.5.6", "1.2,3.4", "12,34,56"] {
            assert!(
                parse_decimal(bad, pt).is_err() || parse_decimal(bad, en).is_err(),
                "{bad}"
            );
        }
        assert!(parse_decimal("1.23.4", pt).is_err());
    }

    #[test]
    fn a_half_typed_number_is_refused_on_every_reading() {
        for text in ["48,", "48.", "1.234,", "-3.", "R$ 48,"] {
            for l in [Locale::PtBr, Locale::EnUs] {
                let e = parse_decimal(text, l).unwrap_err().to_string();
                assert!(e.contains("ends in"), "{text} {l:?}: {e}");
            }
            assert!(parse_decimal_flag(text, None).is_err(), "{text}");
        }
    }

    #[test]
    fn three_decimal_amounts_in_the_other_notation_are_refused_not_misread() {
        let bhd = Currency::from_code("BHD").unwrap();
        let brl = Currency::BRL;
        let pt = Some(Locale::PtBr);
        let en = Some(Locale::EnUs);
        // The locale's own decimal mark: read as typed.
        assert_eq!(read_number("37,125", pt, Some(bhd)).unwrap(), d("37.125"));
        assert_eq!(read_number("37.125", en, Some(bhd)).unwrap(), d("37.125"));
        assert_eq!(read_number("BD 1.250", en, Some(bhd)).unwrap(), d("1.25"));
        // Unambiguous grouping: read.
        assert_eq!(
            read_number("1.234,500", pt, Some(bhd)).unwrap(),
            d("1234.5")
        );
        assert_eq!(
            read_number("1.234.567", pt, Some(bhd)).unwrap(),
            d("1234567")
        );
        assert_eq!(read_number("37125", pt, Some(bhd)).unwrap(), d("37125"));
        // The mark the locale groups with, three digits after it: refused
        // with both readings, on both pages.
        for (text, l) in [("37.125", pt), ("37,125", en), ("BD 37.125", pt)] {
            match read_number(text, l, Some(bhd)).unwrap_err() {
                Error::AmbiguousNumber { pt_br, en_us, .. } => {
                    let mut both = [pt_br, en_us];
                    both.sort();
                    assert_eq!(both, ["37.125", "37125"], "{text}");
                }
                e => panic!("{text}: {e}"),
            }
        }
        // Two-decimal money and counts keep the locale's reading.
        assert_eq!(read_number("1.200", pt, Some(brl)).unwrap(), d("1200"));
        assert_eq!(read_number("30.000", pt, None).unwrap(), d("30000"));
        // No locale: the flag rule, money or not.
        assert!(read_number("37.125", None, Some(bhd)).is_err());
        assert_eq!(
            read_number("37.1250", None, Some(bhd)).unwrap(),
            d("37.125")
        );
    }

    #[test]
    fn command_line_numbers() {
        assert_eq!(parse_decimal_any("0,015").unwrap(), d("0.015"));
        assert_eq!(parse_decimal_any("0.015").unwrap(), d("0.015"));
        assert_eq!(parse_decimal_any("1.234,5").unwrap(), d("1234.5"));
        assert_eq!(parse_decimal_any("1,234.5").unwrap(), d("1234.5"));
        assert_eq!(parse_decimal_any("3").unwrap(), d("3"));
    }
}
