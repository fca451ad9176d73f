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
    // All digits as one integer string, with the decimal point `scale`
    // places from the right; cents means shifting the point two places right.
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    let shift = 2 + exp - frac_part.len() as i64;
    let is_zero = digits.is_empty();
    if negative && !is_zero {
        return Err(AmountError::Negative);
    }
    if is_zero {
        return Ok(0);
    }
    let kept: &str = if shift >= 0 {
        digits
    } else {
        let drop = (-shift) as usize;
        if drop >= digits.len() {
            return Err(AmountError::BelowCent);
        }
        let (kept, dropped) = digits.split_at(digits.len() - drop);
        if dropped.bytes().any(|b| b != b'0') {
            return Err(AmountError::BelowCent);
        }
        kept
    };
    let zeros = shift.max(0) as usize;
    if kept.len() + zeros > 18 {
        return Err(AmountError::TooLarge);
    }
    let mut value: i64 = kept.parse().map_err(|_| AmountError::TooLarge)?;
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
