//! Currencies: every ISO 4217 currency with minor units, its name and
//! symbols in both page languages, and how a symbol typed in a number is
//! told apart from the number.
//!
//! The codes and minor units are ISO's (the `iso_currency` crate's list);
//! names and symbols are CLDR's; `scripts/currency-table` writes them into
//! one table, the only one the code reads (the browser's wasm carries no
//! crate for it), and a test checks it against the crate code by code.
//! Nothing here is a hand-kept list.

use crate::lang::Locale;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[rustfmt::skip] // generated: scripts/currency-table writes it
mod cldr;

/// An ISO 4217 currency a contract can be priced in: one with minor units
/// (funds, metals and the testing codes are not).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency(u8);

impl Currency {
    /// Brazilian real, the default.
    pub const BRL: Currency = Currency(cldr::BRL);
    /// US dollar.
    pub const USD: Currency = Currency(cldr::USD);
    /// Euro.
    pub const EUR: Currency = Currency(cldr::EUR);

    /// Reads an ISO code, case-insensitively; `None` for anything that is
    /// not a current currency with minor units (a [`withdrawn`] one is not:
    /// a contract priced today cannot be in it).
    pub fn from_code(s: &str) -> Option<Self> {
        let code = s.trim();
        if code.len() != 3 || !code.is_ascii() {
            return None;
        }
        let code = code.to_ascii_uppercase();
        if withdrawn(&code).is_some() {
            return None;
        }
        let (mut lo, mut hi) = (0, cldr::COUNT);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cldr::CODES[3 * mid..3 * mid + 3].cmp(code.as_str()) {
                std::cmp::Ordering::Equal => return u8::try_from(mid).ok().map(Currency),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The ISO 4217 code.
    pub fn code(self) -> &'static str {
        let i = self.index();
        &cldr::CODES[3 * i..3 * i + 3]
    }

    /// How many decimal places the currency's amounts have (JPY 0, BRL 2,
    /// KWD 3).
    pub fn minor_units(self) -> u32 {
        u32::from(cldr::MINOR_UNITS[self.index()])
    }

    /// The currency's entry in one of the table's columns (only from_code
    /// and the constants make a Currency, so there always is one).
    fn entry(self, column: &'static str) -> &'static str {
        column.split('|').nth(self.index()).unwrap_or_default()
    }

    /// The currency's name in `locale` ("Libra esterlina", "British Pound").
    pub fn name(self, locale: Locale) -> &'static str {
        self.entry(match locale {
            Locale::PtBr => cldr::NAMES_PT,
            Locale::EnUs => cldr::NAMES_EN,
        })
    }

    /// The symbol written before amounts in `locale` ("R$", "US$", "$",
    /// "£", "JP¥"; the code where CLDR has no symbol, "ARS").
    pub fn symbol(self, locale: Locale) -> &'static str {
        let s = self.entry(match locale {
            Locale::PtBr => cldr::SYMBOLS_PT,
            Locale::EnUs => cldr::SYMBOLS_EN,
        });
        if s.is_empty() {
            self.code()
        } else {
            s
        }
    }

    /// Every spelling a person may type before a number of this currency:
    /// the code, both languages' symbols and the narrow one ("$" for the
    /// peso as much as for the dollar).
    pub fn spellings(self) -> Vec<&'static str> {
        let narrow = self.entry(cldr::SYMBOLS_NARROW);
        let mut all = vec![
            self.code(),
            self.symbol(Locale::EnUs),
            self.symbol(Locale::PtBr),
            if narrow.is_empty() {
                self.code()
            } else {
                narrow
            },
        ];
        all.extend(
            LOCAL_SPELLINGS
                .iter()
                .filter(|(code, _)| *code == self.code())
                .map(|(_, s)| *s),
        );
        all
    }

    /// Every current currency, by code (the withdrawn ones left out).
    pub fn all() -> impl Iterator<Item = Currency> {
        Currency::table().filter(|c| withdrawn(c.code()).is_none())
    }

    /// Every currency of the table, withdrawn ones included.
    pub(crate) fn table() -> impl Iterator<Item = Currency> {
        (0..cldr::COUNT).filter_map(|i| u8::try_from(i).ok().map(Currency))
    }
}

impl Default for Currency {
    fn default() -> Self {
        Currency::BRL
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Serialize for Currency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Currency::from_code(&text).ok_or_else(|| serde::de::Error::custom(not_a_currency(&text)))
    }
}

/// A currency ISO 4217 has withdrawn: its code, the currency that
/// replaced it and the day it stopped being the country's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Withdrawn {
    /// The withdrawn code (`HRK`).
    pub code: &'static str,
    /// The code of the currency that replaced it (`EUR`).
    pub successor: &'static str,
    /// The day it was replaced, ISO 8601 (`2023-01-01`).
    pub since: &'static str,
}

/// Codes the bundled ISO list still carries but whose currency has been
/// replaced (ISO 4217 list three, or a changeover already in force): a
/// figure in one of them would be in money nobody pays with, so links,
/// the CLI and the selects refuse them, naming the successor.
const WITHDRAWN: [Withdrawn; 8] = [
    // Bulgaria adopted the euro on 2026-01-01.
    Withdrawn {
        code: "BGN",
        successor: "EUR",
        since: "2026-01-01",
    },
    // Cuba's monetary unification ended the convertible peso.
    Withdrawn {
        code: "CUC",
        successor: "CUP",
        since: "2021-01-01",
    },
    // Croatia adopted the euro on 2023-01-01.
    Withdrawn {
        code: "HRK",
        successor: "EUR",
        since: "2023-01-01",
    },
    // Zimbabwe Gold replaced the Zimbabwe dollar.
    Withdrawn {
        code: "ZWL",
        successor: "ZWG",
        since: "2024-09-01",
    },
    // Sierra Leone's redenomination (1 SLE = 1,000 SLL): an amount in the
    // old leone is a thousand times the new one's, the very mistake this
    // refusal prevents.
    Withdrawn {
        code: "SLL",
        successor: "SLE",
        since: "2022-07-01",
    },
    // Earlier redenominations a pasted contract may still name: the
    // bolívar fuerte, the ouguiya and the dobra before theirs.
    Withdrawn {
        code: "VEF",
        successor: "VES",
        since: "2018-08-20",
    },
    Withdrawn {
        code: "MRO",
        successor: "MRU",
        since: "2018-01-01",
    },
    Withdrawn {
        code: "STD",
        successor: "STN",
        since: "2018-01-01",
    },
];

/// How invoices and contracts write some currencies where CLDR's symbols
/// (for the two locales idem speaks) do not: the Gulf dinars' and rials'
/// local abbreviations, the yen's kanji and full-width sign, which a
/// pasted Japanese invoice carries, and Chile's UF.
const LOCAL_SPELLINGS: [(&str, &str); 9] = [
    ("BHD", "BD"),
    ("KWD", "KD"),
    ("OMR", "RO"),
    ("JOD", "JD"),
    ("TND", "DT"),
    ("JPY", "円"),
    ("JPY", "\u{ffe5}"),
    ("CNY", "元"),
    // Chile's contracts write the Unidad de Fomento as UF.
    ("CLF", "UF"),
];

/// A code ISO lists with minor units that is a fund or a settlement code,
/// not money a contract is paid in: `CHW` (WIR franc) for `CHF`, `USN`
/// (next-day dollars) for `USD`. `scripts/currency-table` leaves them out
/// of the table (its FUNDS), so no reader takes them; this list says why.
/// The indexed units of account contracts are written in (`CLF`, `COU`,
/// `MXV`, `UYI`, `UYW`) are not here: they are computed with their own
/// digits (CLF 4, UYI 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fund {
    /// The fund's code (`CHW`).
    pub code: &'static str,
    /// What it is, in English.
    pub what: &'static str,
    /// The currency a price in it is paid in, if any (`CHF`).
    pub paid_in: Option<&'static str>,
}

const FUNDS: [Fund; 5] = [
    Fund {
        code: "BOV",
        what: "a Bolivian fund code (Mvdol)",
        paid_in: Some("BOB"),
    },
    Fund {
        code: "CHE",
        what: "a complementary currency's code (WIR euro)",
        paid_in: Some("EUR"),
    },
    Fund {
        code: "CHW",
        what: "a complementary currency's code (WIR franc)",
        paid_in: Some("CHF"),
    },
    Fund {
        code: "USN",
        what: "a settlement code (next-day US dollars)",
        paid_in: Some("USD"),
    },
    Fund {
        code: "XAD",
        what: "the Arab Monetary Fund's unit of account",
        paid_in: None,
    },
];

/// The fund behind `code` (any case), if it is one.
pub fn fund(code: &str) -> Option<Fund> {
    let code = code.trim();
    FUNDS
        .into_iter()
        .find(|f| f.code.eq_ignore_ascii_case(code))
}

/// The withdrawal of `code` (any case), if ISO has withdrawn it.
pub fn withdrawn(code: &str) -> Option<Withdrawn> {
    let code = code.trim();
    WITHDRAWN
        .into_iter()
        .find(|w| w.code.eq_ignore_ascii_case(code))
}

/// Why `code` is not a currency a contract can be in, in English: a
/// withdrawn one names its successor.
pub fn not_a_currency(code: &str) -> String {
    let shown: String = code.chars().take(16).collect();
    match withdrawn(code) {
        Some(w) => format!(
            "`{}` is a withdrawn currency: {} replaced it on {}",
            w.code, w.successor, w.since
        ),
        None => match fund(code) {
            Some(Fund {
                code,
                what,
                paid_in: Some(c),
            }) => format!("`{code}` is {what}, not a currency prices are paid in: use {c}"),
            Some(Fund { code, what, .. }) => {
                format!("`{code}` is {what}, not a currency prices are paid in")
            }
            None => format!("`{shown}` is not an ISO 4217 currency code"),
        },
    }
}

/// Why `code` names money no contract can be priced in, when it is a code
/// ISO knows (withdrawn, or a fund): [`not_a_currency`]'s sentence. `None`
/// for a code ISO never had, which each surface words its own way.
pub fn known_refusal(code: &str) -> Option<String> {
    (withdrawn(code).is_some() || fund(code).is_some()).then(|| not_a_currency(code))
}

/// `c` as ASCII when it is a minus sign or an Arabic-Indic digit.
pub(crate) fn ascii_digit(c: char) -> char {
    match u32::from(c) {
        0x2212 => '-',
        d @ 0x0660..=0x0669 => char::from(b'0' + (d - 0x0660) as u8),
        d @ 0x06F0..=0x06F9 => char::from(b'0' + (d - 0x06F0) as u8),
        _ => c,
    }
}

/// What a currency marking typed in a number field says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marking<'a> {
    /// No currency: just the number.
    None(&'a str),
    /// The field's own currency, spelled one of its ways; the number
    /// without it.
    Matches(String),
    /// Another currency's spelling (or letters that are none): the text
    /// that is not the number.
    Other(String),
}

/// Splits a typed amount into its currency marking and its number: what
/// is neither a digit, a separator, a sign, a space nor `%` is the marking
/// (`£2,40` → `£`; `US$ 3` → `US$`; `3 JPY` → `JPY`). The marking matches
/// `expected` when it is one of its spellings, case-insensitively.
pub fn read_marking(text: &str, expected: Currency) -> Marking<'_> {
    // The minus sign and accounting parentheses are a negative number's,
    // never a currency's.
    let is_number = |c: char| {
        let c = ascii_digit(c);
        // The Arabic decimal and thousands separators are a number's too:
        // refused as such (which one a locale means is not guessed).
        c.is_ascii_digit()
            || matches!(
                c,
                '.' | ',' | '-' | '+' | '%' | '(' | ')' | '\u{66b}' | '\u{66c}'
            )
    };
    let marking: String = text
        .chars()
        .filter(|c| !is_number(*c) && !c.is_whitespace())
        .collect();
    if marking.is_empty() {
        return Marking::None(text);
    }
    let number: String = text
        .chars()
        .filter(|c| is_number(*c) || c.is_whitespace())
        .collect();
    let matches = expected
        .spellings()
        .iter()
        .any(|s| s.eq_ignore_ascii_case(&marking));
    if matches {
        Marking::Matches(number.trim().to_owned())
    } else {
        Marking::Other(marking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_iso_currency_with_minor_units_has_names_and_symbols() {
        let mut known = 0;
        for n in 0..1000u16 {
            let Some(c) = iso_currency::Currency::from_numeric(n) else {
                continue;
            };
            let Some(ours) = Currency::table().find(|o| o.code() == c.code()) else {
                assert!(
                    c.exponent().is_none() || fund(c.code()).is_some(),
                    "{} has minor units",
                    c.code()
                );
                continue;
            };
            known += 1;
            assert_eq!(ours.code(), c.code());
            assert_eq!(
                Some(ours.minor_units()),
                c.exponent().map(u32::from),
                "{}",
                c.code()
            );
            for l in [Locale::PtBr, Locale::EnUs] {
                assert!(!ours.name(l).is_empty(), "{}", c.code());
                assert!(!ours.symbol(l).is_empty(), "{}", c.code());
            }
        }
        assert_eq!(known, Currency::table().count());
        assert!(known > 150, "{known}");
        let codes: Vec<&str> = Currency::table().map(Currency::code).collect();
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "sorted by code");
        for column in [
            cldr::NAMES_EN,
            cldr::NAMES_PT,
            cldr::SYMBOLS_EN,
            cldr::SYMBOLS_PT,
            cldr::SYMBOLS_NARROW,
        ] {
            assert_eq!(column.split('|').count(), cldr::COUNT);
        }
        assert_eq!(Currency::BRL.code(), "BRL");
        assert_eq!(Currency::USD.code(), "USD");
        assert_eq!(Currency::EUR.code(), "EUR");
    }

    #[test]
    fn a_withdrawn_currency_is_refused_naming_its_successor() {
        // Some are still in the generated table (it needs refusing them);
        // the older ones are not (their refusal names the successor).
        let in_table = WITHDRAWN
            .iter()
            .filter(|w| Currency::table().any(|c| c.code() == w.code))
            .count();
        assert!(in_table >= 5, "{in_table}");
        for w in WITHDRAWN {
            assert_eq!(Currency::from_code(w.code), None);
            assert_eq!(Currency::from_code(&w.code.to_lowercase()), None);
            assert!(Currency::all().all(|c| c.code() != w.code));
            assert!(
                Currency::from_code(w.successor).is_some(),
                "{}",
                w.successor
            );
            assert!(crate::scenario::is_iso_date(w.since), "{}", w.since);
        }
        assert_eq!(
            not_a_currency("hrk"),
            "`HRK` is a withdrawn currency: EUR replaced it on 2023-01-01"
        );
        assert_eq!(
            not_a_currency("SLL"),
            "`SLL` is a withdrawn currency: SLE replaced it on 2022-07-01"
        );
        for (old, new) in [("VEF", "VES"), ("MRO", "MRU"), ("STD", "STN")] {
            assert!(
                not_a_currency(old).contains(&format!("{new} replaced it")),
                "{old}"
            );
        }
        assert_eq!(
            not_a_currency("XYZ"),
            "`XYZ` is not an ISO 4217 currency code"
        );
        let refused = serde_json::from_str::<Currency>(r#""CUC""#).unwrap_err();
        assert!(refused.to_string().contains("CUP replaced it"), "{refused}");
    }

    #[test]
    fn funds_are_refused_and_units_of_account_computed_with_their_digits() {
        for f in FUNDS {
            // ISO gives each minor units; the table leaves them out.
            let iso = iso_currency::Currency::from_code(f.code).and_then(|c| c.exponent());
            assert!(iso.is_some(), "{}", f.code);
            assert!(Currency::table().all(|c| c.code() != f.code), "{}", f.code);
            assert_eq!(Currency::from_code(f.code), None);
            assert!(Currency::all().all(|c| c.code() != f.code));
            if let Some(c) = f.paid_in {
                assert!(Currency::from_code(c).is_some(), "{c}");
            }
        }
        assert_eq!(
            not_a_currency("chw"),
            "`CHW` is a complementary currency's code (WIR franc), not a currency prices are paid in: use CHF"
        );
        assert!(not_a_currency("XAD").ends_with("not a currency prices are paid in"));
        // Indexed units contracts are written in keep their own digits.
        for (code, digits) in [("CLF", 4), ("UYW", 4), ("UYI", 0), ("COU", 2), ("MXV", 2)] {
            assert_eq!(
                Currency::from_code(code).map(Currency::minor_units),
                Some(digits),
                "{code}"
            );
        }
    }

    #[test]
    fn minor_units_names_and_symbols() {
        let c = |s| Currency::from_code(s).unwrap();
        assert_eq!(c("JPY").minor_units(), 0);
        assert_eq!(c("CLP").minor_units(), 0);
        assert_eq!(c("brl").minor_units(), 2);
        assert_eq!(c("KWD").minor_units(), 3);
        assert_eq!(c("BHD").minor_units(), 3);
        assert_eq!(c("GBP").name(Locale::PtBr), "Libra esterlina");
        assert_eq!(c("GBP").name(Locale::EnUs), "British Pound");
        assert_eq!(Currency::USD.symbol(Locale::PtBr), "US$");
        assert_eq!(Currency::USD.symbol(Locale::EnUs), "$");
        assert_eq!(Currency::BRL.symbol(Locale::EnUs), "R$");
        assert_eq!(c("ARS").symbol(Locale::EnUs), "ARS");
        for bad in ["XTS", "XXX", "XAU", "ABC", "", "BR", "BRLL", "R$", "ＢＲＬ"] {
            assert_eq!(Currency::from_code(bad), None, "{bad}");
        }
        let json = serde_json::to_string(&c("GBP")).unwrap();
        assert_eq!(json, "\"GBP\"");
        assert_eq!(
            serde_json::from_str::<Currency>("\"jpy\"").unwrap(),
            c("JPY")
        );
        assert!(serde_json::from_str::<Currency>("\"XYZ\"").is_err());
    }

    #[test]
    fn markings() {
        let gbp = Currency::from_code("GBP").unwrap();
        assert_eq!(read_marking("£2,40", gbp), Marking::Matches("2,40".into()));
        assert_eq!(
            read_marking("2,40 gbp", gbp),
            Marking::Matches("2,40".into())
        );
        assert_eq!(read_marking("2,40", gbp), Marking::None("2,40"));
        assert_eq!(read_marking("US$ 3", gbp), Marking::Other("US$".into()));
        assert_eq!(
            read_marking("US$ 3", Currency::USD),
            Marking::Matches("3".into())
        );
        assert_eq!(
            read_marking("$3", Currency::USD),
            Marking::Matches("3".into())
        );
        assert_eq!(
            read_marking("€1", Currency::EUR),
            Marking::Matches("1".into())
        );
        assert_eq!(
            read_marking("€1", Currency::BRL),
            Marking::Other("€".into())
        );
        assert_eq!(
            read_marking("R$ 1,20", Currency::BRL),
            Marking::Matches("1,20".into())
        );
        let ars = Currency::from_code("ARS").unwrap();
        assert_eq!(
            read_marking("$ 1.500", ars),
            Marking::Matches("1.500".into())
        );
        assert_eq!(read_marking("1,2x", ars), Marking::Other("x".into()));
    }
}
