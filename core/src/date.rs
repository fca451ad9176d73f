//! Calendar dates as people type and read them: `dd/mm/aaaa` in pt-BR,
//! `4 Dec 2026` in English, ISO `2026-12-04` in both. A typed date that
//! reads as two different days is refused with both readings, never
//! guessed (an English browser once stored `04/12/2026` as 12 April).

use crate::lang::Locale;
use crate::scenario::is_iso_date;

/// Why a typed date was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateProblem {
    /// Day and month could be either way round: both ISO readings.
    Ambiguous(String, String),
    /// The shape of a date, but no such day (`31/02/2026`).
    NoSuchDay,
    /// Not a date in any form this page reads.
    Unreadable,
    /// A day that has not begun anywhere yet (the latest day on Earth is
    /// given): a rate cannot have been quoted on it.
    AfterToday(String),
}

/// The latest calendar day anywhere on Earth at `unix_secs` (UTC+14, the
/// Line Islands), `YYYY-MM-DD`: a date after it has begun nowhere, while a
/// person a day ahead of the server's clock may rightly type tomorrow.
pub fn latest_today(unix_secs: i64) -> String {
    let (y, m, d) = civil_from_days((unix_secs + 14 * 3600).div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Year, month and day of a count of days since 1970-01-01, on the
/// proleptic Gregorian calendar (Howard Hinnant's days-to-civil).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Refuses an ISO date after `latest` (from [`latest_today`]): the dates
/// compare as text.
pub fn not_after(iso: &str, latest: &str) -> Result<(), DateProblem> {
    if !latest.is_empty() && iso > latest {
        Err(DateProblem::AfterToday(latest.to_owned()))
    } else {
        Ok(())
    }
}

const MONTHS: [[&str; 4]; 12] = [
    ["jan", "january", "jan", "janeiro"],
    ["feb", "february", "fev", "fevereiro"],
    ["mar", "march", "mar", "março"],
    ["apr", "april", "abr", "abril"],
    ["may", "may", "mai", "maio"],
    ["jun", "june", "jun", "junho"],
    ["jul", "july", "jul", "julho"],
    ["aug", "august", "ago", "agosto"],
    ["sep", "september", "set", "setembro"],
    ["oct", "october", "out", "outubro"],
    ["nov", "november", "nov", "novembro"],
    ["dec", "december", "dez", "dezembro"],
];

fn month_named(word: &str) -> Option<u32> {
    // Every month name is ASCII, so ASCII case folding is all a match
    // needs (and keeps Unicode's case tables out of the browser's wasm).
    let w = word.trim_end_matches('.').to_ascii_lowercase();
    let w = if w == "sept" { "sep".to_owned() } else { w };
    MONTHS
        .iter()
        .position(|names| names.contains(&w.as_str()))
        .map(|i| i as u32 + 1)
}

fn iso(y: u32, m: u32, d: u32) -> Option<String> {
    let s = format!("{y:04}-{m:02}-{d:02}");
    is_iso_date(&s).then_some(s)
}

fn number(t: &str, digits: std::ops::RangeInclusive<usize>) -> Option<u32> {
    (digits.contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

/// Reads a date typed on a page in `locale`, into `YYYY-MM-DD`.
///
/// Both languages take ISO (`2026-12-04`) and a month by name in either
/// language (`4 dez 2026`, `4 Dec 2026`, `Dec 4, 2026`). Numbers with
/// slashes (or dots) are day first in pt-BR, as the page says; in English,
/// where both orders are common, they are taken only when one order names
/// a day, and refused with both readings when both do.
pub fn read_typed_date(text: &str, locale: Locale) -> Result<String, DateProblem> {
    let s = text.trim();
    if s.len() > 40 {
        return Err(DateProblem::Unreadable);
    }
    if s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-' {
        return if is_iso_date(s) {
            Ok(s.to_owned())
        } else if s
            .bytes()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
        {
            Err(DateProblem::NoSuchDay)
        } else {
            Err(DateProblem::Unreadable)
        };
    }
    let parts: Vec<&str> = s.split(['/', '.']).collect();
    if parts.len() == 3 {
        let (Some(a), Some(b), Some(y)) = (
            number(parts[0], 1..=2),
            number(parts[1], 1..=2),
            number(parts[2], 4..=4),
        ) else {
            return Err(DateProblem::Unreadable);
        };
        let day_first = iso(y, b, a);
        return match locale {
            Locale::PtBr => day_first.ok_or(DateProblem::NoSuchDay),
            Locale::EnUs => match (day_first, iso(y, a, b)) {
                (Some(x), Some(z)) if x != z => Err(DateProblem::Ambiguous(x, z)),
                (Some(x), _) | (None, Some(x)) => Ok(x),
                (None, None) => Err(DateProblem::NoSuchDay),
            },
        };
    }
    // Words: "4 dez 2026", "4 de dezembro de 2026", "Dec 4, 2026".
    let words: Vec<&str> = s
        .split([' ', ','])
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("de"))
        .collect();
    if words.len() == 3 {
        let (d, m) = match (number(words[0], 1..=2), month_named(words[1])) {
            (Some(d), Some(m)) => (d, m),
            _ => match (month_named(words[0]), number(words[1], 1..=2)) {
                (Some(m), Some(d)) => (d, m),
                _ => return Err(DateProblem::Unreadable),
            },
        };
        let y = number(words[2], 4..=4).ok_or(DateProblem::Unreadable)?;
        return iso(y, m, d).ok_or(DateProblem::NoSuchDay);
    }
    Err(DateProblem::Unreadable)
}

fn split(iso: &str) -> Option<(u32, usize, u32)> {
    if !is_iso_date(iso) {
        return None;
    }
    let y = iso[..4].parse().ok()?;
    let m: usize = iso[5..7].parse().ok()?;
    let d = iso[8..].parse().ok()?;
    Some((y, m, d))
}

/// An English month name as it starts a word ("Dec", "December").
fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase())
        .into_iter()
        .chain(c)
        .collect()
}

/// A date as the page shows it: `04/12/2026` in pt-BR, `4 Dec 2026` in
/// English (a form no reader takes the wrong way round). Text that is not
/// an ISO date comes back as it is.
pub fn format_date(iso: &str, locale: Locale) -> String {
    let Some((y, m, d)) = split(iso) else {
        return iso.to_owned();
    };
    match locale {
        Locale::PtBr => format!("{d:02}/{m:02}/{y}"),
        Locale::EnUs => {
            format!("{d} {} {y}", capitalized(MONTHS[m - 1][0]))
        }
    }
}

/// A date in words, for a message that must leave no doubt:
/// `4 de dezembro de 2026`, `4 December 2026`.
pub fn format_date_words(iso: &str, locale: Locale) -> String {
    let Some((y, m, d)) = split(iso) else {
        return iso.to_owned();
    };
    match locale {
        Locale::PtBr => format!("{d} de {} de {y}", MONTHS[m - 1][3]),
        Locale::EnUs => {
            format!("{d} {} {y}", capitalized(MONTHS[m - 1][1]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PT: Locale = Locale::PtBr;
    const EN: Locale = Locale::EnUs;

    #[test]
    fn brazilian_dates_are_day_first() {
        assert_eq!(
            read_typed_date("04/12/2026", PT).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("4/12/2026", PT).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("4 dez 2026", PT).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("4 de dezembro de 2026", PT).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("2026-12-04", PT).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("12/31/2026", PT),
            Err(DateProblem::NoSuchDay)
        );
        assert_eq!(
            read_typed_date("31/02/2026", PT),
            Err(DateProblem::NoSuchDay)
        );
        assert_eq!(
            read_typed_date("2026-02-30", PT),
            Err(DateProblem::NoSuchDay)
        );
        assert_eq!(
            read_typed_date("04/12/26", PT),
            Err(DateProblem::Unreadable)
        );
        assert_eq!(read_typed_date("ontem", PT), Err(DateProblem::Unreadable));
        assert_eq!(format_date("2026-12-04", PT), "04/12/2026");
        assert_eq!(format_date_words("2026-12-04", PT), "4 de dezembro de 2026");
    }

    #[test]
    fn english_dates_that_read_two_ways_are_refused_with_both() {
        assert_eq!(
            read_typed_date("04/12/2026", EN),
            Err(DateProblem::Ambiguous(
                "2026-12-04".into(),
                "2026-04-12".into()
            ))
        );
        // One order names no day: the other is the only reading.
        assert_eq!(
            read_typed_date("12/31/2026", EN).as_deref(),
            Ok("2026-12-31")
        );
        assert_eq!(
            read_typed_date("31/12/2026", EN).as_deref(),
            Ok("2026-12-31")
        );
        // Same day either way.
        assert_eq!(
            read_typed_date("05/05/2026", EN).as_deref(),
            Ok("2026-05-05")
        );
        assert_eq!(
            read_typed_date("4 Dec 2026", EN).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("Dec 4, 2026", EN).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("December 4, 2026", EN).as_deref(),
            Ok("2026-12-04")
        );
        assert_eq!(
            read_typed_date("30 Feb 2026", EN),
            Err(DateProblem::NoSuchDay)
        );
        assert_eq!(
            read_typed_date("13/13/2026", EN),
            Err(DateProblem::NoSuchDay)
        );
        assert_eq!(format_date("2026-12-04", EN), "4 Dec 2026");
        assert_eq!(format_date_words("2026-04-12", EN), "12 April 2026");
        // What the page shows reads back as the same day in its language.
        for iso in ["2026-12-04", "2024-02-29", "2026-01-31"] {
            for l in [PT, EN] {
                assert_eq!(read_typed_date(&format_date(iso, l), l).as_deref(), Ok(iso));
            }
        }
    }

    #[test]
    fn a_day_that_has_begun_nowhere_is_after_today() {
        // 2026-12-06 10:00 UTC: already 2026-12-07 at UTC+14.
        let t = 1_796_551_200;
        assert_eq!(latest_today(t), "2026-12-07");
        // 09:59 UTC: still the 6th at UTC+14.
        assert_eq!(latest_today(t - 60), "2026-12-06");
        assert_eq!(latest_today(0), "1970-01-01");
        assert_eq!(latest_today(951_782_400), "2000-02-29");
        assert_eq!(not_after("2026-12-07", "2026-12-07"), Ok(()));
        assert_eq!(
            not_after("2026-12-08", "2026-12-07"),
            Err(DateProblem::AfterToday("2026-12-07".into()))
        );
        assert_eq!(not_after("2999-01-01", ""), Ok(()));
    }

    #[test]
    fn the_reference_rates_date_is_written_as_every_date() {
        use crate::scenario::{reference_date, reference_date_shown};
        for l in [Locale::PtBr, Locale::EnUs] {
            assert_eq!(format_date(reference_date(), l), reference_date_shown(l));
        }
    }
}
