//! Durations in scenario files and `--param` values: `"150ms"`, `"1.5s"`.
//!
//! [`parse_duration`] is the lab's one duration grammar (to be replaced by
//! the library's `fusebox::duration::parse` when it lands: one function to swap).

use super::MAX_DURATION;
use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// A duration written as a string: `"150ms"`, `"1.5s"`, `"2s"`, `"250us"`, `"1m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_value(&s).map(Dur).map_err(serde::de::Error::custom)
    }
}

/// A duration as a scenario key or a swept value may hold it: parsed by
/// [`parse_duration`] and at most [`MAX_DURATION`] (a day).
pub fn parse_value(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d > MAX_DURATION {
        return Err(format!(
            "duration {s:?} is longer than the limit, a day (24h)"
        ));
    }
    Ok(d)
}

/// Parses `"150ms"`, `"1.5s"`, `"0.1s"`, `"2m"` exactly (decimal, no float rounding).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "duration {s:?} is negative (write e.g. \"150ms\" or \"1.5s\")"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration {s:?} has no unit (write e.g. \"150ms\" or \"1.5s\")"))?;
    let (num, unit) = t.split_at(split);
    let unit_ns: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => {
            return Err(format!(
                "duration {s:?}: unknown unit {other:?} (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(format!("duration {s:?}: not a number"));
    }
    let bad = || format!("duration {s:?} is out of range");
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let mut nanos = int.checked_mul(unit_ns).ok_or_else(bad)?;
    let mut scale = unit_ns;
    for c in frac.chars() {
        scale /= 10;
        if scale == 0 {
            if c != '0' {
                return Err(format!("duration {s:?} is finer than a nanosecond"));
            }
            continue;
        }
        nanos += u128::from(c.to_digit(10).ok_or_else(bad)?) * scale;
    }
    let nanos = u64::try_from(nanos).map_err(|_| bad())?;
    Ok(Duration::from_nanos(nanos))
}

/// Formats a duration the way scenario files write it (`"150ms"`, `"1.5s"`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".into()
    } else if ns % 1_000_000 != 0 {
        format!("{}us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}s", ns as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("150").is_err());
        assert!(parse_duration("1.5x").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
        assert!(parse_duration("-3s").unwrap_err().contains("negative"));
        assert!(parse_value("25h").unwrap_err().contains("24h"));
        assert_eq!(parse_value("24h"), Ok(MAX_DURATION));
        for d in ["150ms", "1.5s", "2s", "0s", "250us"] {
            let parsed = parse_duration(d).unwrap();
            assert_eq!(parse_duration(&format_duration(parsed)), Ok(parsed));
        }
    }
}
