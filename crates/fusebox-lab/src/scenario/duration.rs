//! Durations in scenario files and `--param` values: `"150ms"`, `"1.5s"`,
//! `"1m30s"`, in the library's one grammar ([`fusebox::duration`]), and at
//! most a day.

use super::MAX_DURATION;
use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// A duration written as a string, at most [`MAX_DURATION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_value(&s).map(Dur).map_err(serde::de::Error::custom)
    }
}

/// Parses a duration in the library's grammar ([`fusebox::duration::parse`]).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    fusebox::duration::parse(s).map_err(|e| e.to_string())
}

/// A duration as a scenario key or a swept value may hold it: parsed by
/// [`parse_duration`] and at most [`MAX_DURATION`] (a day).
pub fn parse_value(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    check(d).map_err(|e| format!("duration {s:?} {e}"))?;
    Ok(d)
}

/// Whether `d` is within the lab's limit for any duration.
pub fn check(d: Duration) -> Result<(), String> {
    if d > MAX_DURATION {
        return Err("is longer than the limit, a day (24h)".into());
    }
    Ok(())
}

/// Writes a duration the way scenario files do (`"150ms"`, `"1.5s"`), by
/// [`fusebox::duration::format`].
pub fn format_duration(d: Duration) -> String {
    fusebox::duration::format(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_grammar_with_the_day_limit() {
        assert_eq!(parse_value("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_value("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_value("24h"), Ok(MAX_DURATION));
        assert!(parse_value("25h").unwrap_err().contains("24h"));
        assert!(parse_value("-3s").unwrap_err().contains("negative"));
        assert!(parse_value("150").is_err());
        for d in ["150ms", "1.5s", "2s", "250us"] {
            let parsed = parse_value(d).unwrap();
            assert_eq!(format_duration(parsed), d);
        }
    }
}
