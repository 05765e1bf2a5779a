//! The one duration grammar of fusebox: config files, lab scenarios, sweeps.
//!
//! A duration is one or more `<number><unit>` groups, largest unit first or
//! not, optionally separated by spaces: `250ms`, `1.5s`, `1m30s`, `2h`,
//! `1h 30m`. Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`, `d`. A number
//! may have a fraction (`0.25s`). `0` alone is zero. Negative values,
//! missing or unknown units and values beyond `u64::MAX` nanoseconds (about
//! 584 years) are errors that quote the input.
//!
//! # Examples
//!
//! ```
//! use fusebox::duration;
//! use std::time::Duration;
//!
//! assert_eq!(duration::parse("1m30s")?, Duration::from_secs(90));
//! assert_eq!(duration::parse("1.5s")?, Duration::from_millis(1500));
//! assert_eq!(duration::format(Duration::from_millis(90_500)), "1m30.5s");
//! assert_eq!(
//!     duration::parse("-3s").unwrap_err().to_string(),
//!     "invalid duration \"-3s\": durations cannot be negative"
//! );
//! # Ok::<(), fusebox::duration::DurationError>(())
//! ```

use std::fmt;
use std::time::Duration;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A string that is not a duration, with the reason.
///
/// # Examples
///
/// ```
/// let err = fusebox::duration::parse("5 parsecs").unwrap_err();
/// assert_eq!(err.input(), "5 parsecs");
/// assert!(err.to_string().contains("unknown unit \"parsecs\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    input: String,
    problem: String,
}

impl DurationError {
    fn new(input: &str, problem: impl Into<String>) -> Self {
        DurationError {
            input: input.to_owned(),
            problem: problem.into(),
        }
    }

    /// The text that was given.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::duration::parse("").unwrap_err().input(), "");
    /// ```
    pub fn input(&self) -> &str {
        &self.input
    }

    /// What is wrong with it, without the input.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::duration::parse("10").unwrap_err();
    /// assert_eq!(err.problem(), "missing unit after \"10\" (ns, us, ms, s, m, h or d)");
    /// ```
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid duration \"{}\": {}", self.input, self.problem)
    }
}

impl std::error::Error for DurationError {}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SEC,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3_600 * NANOS_PER_SEC,
        "d" => 86_400 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// Parses a duration in fusebox's grammar (see the [module docs](self)).
///
/// # Errors
///
/// A [`DurationError`] quoting the input: empty, negative, a number without
/// a unit, an unknown unit, or more than `u64::MAX` nanoseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(fusebox::duration::parse("2h")?, Duration::from_secs(7200));
/// assert_eq!(fusebox::duration::parse("250ms")?, Duration::from_millis(250));
/// assert!(fusebox::duration::parse("1.5.s").is_err());
/// # Ok::<(), fusebox::duration::DurationError>(())
/// ```
pub fn parse(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(DurationError::new(input, "empty"));
    }
    if s.starts_with('-') {
        return Err(DurationError::new(input, "durations cannot be negative"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total: u128 = 0;
    let mut rest = s;
    let too_long = || DurationError::new(input, "too long (at most about 584 years)");
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits_end];
        rest = rest[digits_end..].trim_start();
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = rest[unit_end..].trim_start();
        if number.is_empty() {
            return Err(DurationError::new(
                input,
                format!("expected a number before \"{unit}\""),
            ));
        }
        let (whole, frac) = match number.split_once('.') {
            Some((w, f)) => (w, f),
            None => (number, ""),
        };
        if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
            return Err(DurationError::new(
                input,
                format!("\"{number}\" is not a number"),
            ));
        }
        if unit.is_empty() {
            return Err(DurationError::new(
                input,
                format!("missing unit after \"{number}\" (ns, us, ms, s, m, h or d)"),
            ));
        }
        let Some(scale) = unit_nanos(unit) else {
            return Err(DurationError::new(
                input,
                format!("unknown unit \"{unit}\" (ns, us, ms, s, m, h or d)"),
            ));
        };
        let mut whole_value: u128 = 0;
        for d in whole.bytes() {
            whole_value = whole_value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(d - b'0')))
                .filter(|&v| v <= u128::from(u64::MAX))
                .ok_or_else(too_long)?;
        }
        // The fraction: digits past what the unit can resolve change nothing
        // (a day has 14 decimal digits of nanoseconds), so at most 18 count.
        let mut frac_value: u128 = 0;
        let mut frac_scale: u128 = 1;
        for d in frac.bytes().take(18) {
            frac_value = frac_value * 10 + u128::from(d - b'0');
            frac_scale *= 10;
        }
        let part = whole_value
            .checked_mul(scale)
            .and_then(|v| v.checked_add(frac_value * scale / frac_scale))
            .ok_or_else(too_long)?;
        total = total
            .checked_add(part)
            .filter(|&v| v <= u128::from(u64::MAX))
            .ok_or_else(too_long)?;
    }
    Ok(Duration::from_nanos(total as u64))
}

/// Writes `d` in the grammar [`parse`] reads, shortest form first:
/// `"250ms"`, `"1.5s"`, `"1m30s"`, `"2h"`. `parse(&format(d)) == d` for any
/// `d` up to `u64::MAX` nanoseconds.
///
/// # Examples
///
/// ```
/// use fusebox::duration::{format, parse};
/// use std::time::Duration;
/// assert_eq!(format(Duration::from_secs(7200)), "2h");
/// assert_eq!(format(Duration::from_micros(1500)), "1500us");
/// let d = Duration::from_nanos(3_723_000_000_001);
/// assert_eq!(parse(&format(d)).unwrap(), d);
/// ```
pub fn format(d: Duration) -> String {
    let n = d.as_nanos();
    if n == 0 {
        return "0s".to_owned();
    }
    if n < NANOS_PER_SEC {
        return if n % 1_000_000 == 0 {
            format!("{}ms", n / 1_000_000)
        } else if n % 1_000 == 0 {
            format!("{}us", n / 1_000)
        } else {
            format!("{n}ns")
        };
    }
    let hours = n / (3_600 * NANOS_PER_SEC);
    let minutes = n / (60 * NANOS_PER_SEC) % 60;
    let sub_minute = n % (60 * NANOS_PER_SEC);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if sub_minute > 0 {
        let secs = sub_minute / NANOS_PER_SEC;
        let frac = sub_minute % NANOS_PER_SEC;
        if frac == 0 {
            out.push_str(&format!("{secs}s"));
        } else {
            let digits = format!("{frac:09}");
            out.push_str(&format!("{secs}.{}s", digits.trim_end_matches('0')));
        }
    }
    out
}

/// Serde adapters for durations as strings in this grammar (feature `config`).
#[cfg(feature = "config")]
pub(crate) mod serde_str {
    use serde::de::{Deserializer, Error, Visitor};
    use serde::Serializer;
    use std::fmt;
    use std::time::Duration;

    struct V;
    impl Visitor<'_> for V {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration string such as \"250ms\", \"1.5s\" or \"1m30s\"")
        }
        fn visit_str<E: Error>(self, s: &str) -> Result<Duration, E> {
            super::parse(s).map_err(E::custom)
        }
    }

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_str(V)
    }

    /// The same for `Option<Duration>` fields (absent stays `None`).
    pub(crate) mod option {
        use serde::{Deserializer, Serializer};
        use std::time::Duration;

        pub(crate) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_grammar() {
        let ok = [
            ("250ms", Duration::from_millis(250)),
            ("1.5s", Duration::from_millis(1500)),
            ("1m30s", Duration::from_secs(90)),
            ("1h 30m", Duration::from_secs(5400)),
            ("2h", Duration::from_secs(7200)),
            ("1d", Duration::from_secs(86_400)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            (" 10us ", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
            (".5s", Duration::from_millis(500)),
            ("0.000000001s", Duration::from_nanos(1)),
        ];
        for (s, d) in ok {
            assert_eq!(parse(s), Ok(d), "{s}");
        }
        let bad = [
            ("", "empty"),
            ("-3s", "negative"),
            ("10", "missing unit"),
            ("5 parsecs", "unknown unit \"parsecs\""),
            ("1.5.s", "not a number"),
            ("s", "expected a number"),
            ("1sec", "unknown unit \"sec\""),
            ("94522879700260684295381835.999999999999h", "too long"),
            ("18446744074s", "too long"),
        ];
        for (s, problem) in bad {
            let err = parse(s).unwrap_err();
            assert!(err.to_string().contains(problem), "{s}: {err}");
            assert_eq!(err.input(), s);
        }
        assert_eq!(parse("18446744073s").unwrap().as_secs(), 18_446_744_073);
    }

    proptest::proptest! {
        #[test]
        fn format_round_trips(n in 0u64..=u64::MAX) {
            let d = Duration::from_nanos(n);
            proptest::prop_assert_eq!(parse(&format(d)), Ok(d));
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }
}
