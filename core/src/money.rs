//! Money as integer cents, parsed from decimal text (never from a float).

use crate::error::AmountError;
use std::fmt;

/// An amount of money in integer cents (non-negative for amounts that enter
/// a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cents(i64);

impl Cents {
    /// The integer number of cents.
    pub fn get(self) -> i64 {
        self.0
    }

    /// Parses an amount's decimal text (`"10"`, `"10.00"`, `10.0`, `1e3`,
    /// surrounding whitespace allowed) into exact cents. A negative amount,
    /// a non-zero digit below the cent, or anything else that is not a
    /// plain decimal number is refused: money is never rounded silently.
    pub fn parse(text: &str) -> Result<Self, AmountError> {
        parse_cents(text).map(Cents)
    }
}

impl fmt::Display for Cents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

fn parse_cents(text: &str) -> Result<i64, AmountError> {
    parse_minor(text, 2)
}

/// An amount in a currency's smallest unit (`digits` decimals: 0 for the
/// yen, 2 for the real, 3 for the dinar, 4 for the UF), read from a JSON
/// number's or a decimal string's text: `12.345` with 3 digits is 12345.
/// A non-zero digit below the unit is refused ([`AmountError::BelowCent`]),
/// never rounded.
pub fn parse_minor(text: &str, digits: u32) -> Result<i64, AmountError> {
    let bad = || AmountError::NotANumber(text.to_owned());
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(bad());
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // Clamp absurd exponents instead of overflowing: anything this
            // large is refused below anyway (too large or below the cent).
            let magnitude: i64 = digits.parse().unwrap_or(i64::MAX / 4).min(1 << 40);
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    // The amount is the digit sequence int_part ++ frac_part with the
    // decimal point `frac_part.len()` places from the right; cents shift it
    // two places right (plus the exponent). Walk the digits without joining
    // them into a new string.
    let all = || int_part.bytes().chain(frac_part.bytes());
    let total = int_part.len() + frac_part.len();
    let leading_zeros = all().take_while(|&b| b == b'0').count();
    let significant = total - leading_zeros;
    if significant == 0 {
        return Ok(0);
    }
    if negative {
        return Err(AmountError::Negative);
    }
    let shift = i64::from(digits) + exp - frac_part.len() as i64;
    // Digits kept before the point moves past them; the rest must be zeros.
    let kept = if shift >= 0 {
        significant
    } else {
        let drop = (-shift) as usize;
        if drop >= significant {
            return Err(AmountError::BelowCent);
        }
        if all().skip(total - drop).any(|b| b != b'0') {
            return Err(AmountError::BelowCent);
        }
        significant - drop
    };
    let zeros = shift.max(0) as usize;
    if kept + zeros > 18 {
        return Err(AmountError::TooLarge);
    }
    let mut value: i64 = 0;
    for b in all().skip(leading_zeros).take(kept) {
        value = value * 10 + i64::from(b - b'0');
    }
    for _ in 0..zeros {
        value = value.checked_mul(10).ok_or(AmountError::TooLarge)?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Result<i64, AmountError> {
        Cents::parse(s).map(Cents::get)
    }

    #[test]
    fn spellings_of_ten() {
        for s in [
            "10", "10.0", "10.00", "10.000", " 10 ", "1e1", "1.0E+1", "+10", "10.", "0010",
        ] {
            assert_eq!(c(s), Ok(1000), "{s}");
        }
        assert_eq!(c(".5"), Ok(50));
        assert_eq!(c("57760.760"), Ok(5776076));
        assert_eq!(c("-0"), Ok(0));
        assert_eq!(c("0.00"), Ok(0));
        assert_eq!(c("1e-2"), Ok(1));
    }

    #[test]
    fn refusals() {
        assert_eq!(c("10.001"), Err(AmountError::BelowCent));
        assert_eq!(c("1e-3"), Err(AmountError::BelowCent));
        assert_eq!(c("-1"), Err(AmountError::Negative));
        assert_eq!(c("1e30"), Err(AmountError::TooLarge));
        assert_eq!(c("1e99999999999999999999"), Err(AmountError::TooLarge));
        for s in [
            "", ".", "abc", "1,00", "NaN", "inf", "1_000", "1e", "--1", "1.2.3",
        ] {
            assert!(matches!(c(s), Err(AmountError::NotANumber(_))), "{s}");
        }
    }
}
