//! A value given to a swept parameter (`--param NAME=FROM..TO:STEP`).

use super::duration::format_duration;
use super::MAX_DURATION;
use std::fmt;
use std::time::Duration;

/// A value for a swept parameter: a duration, or a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamValue {
    /// Written with a unit, e.g. `0.5s`.
    Dur(Duration),
    /// Written as a plain number, e.g. `5` or `0.5`.
    Num(f64),
}

impl ParamValue {
    pub(super) fn count(self, name: &str, min: u32) -> Result<u32, String> {
        match self {
            ParamValue::Num(x) if x.fract() == 0.0 && x >= f64::from(min) && x <= 1e6 => {
                Ok(x as u32)
            }
            _ => Err(format!(
                "{name} must be a whole number in {min}..=1000000, not {self}"
            )),
        }
    }

    /// The value as a scenario file would write it: a duration string, a
    /// whole number, or a number.
    pub(crate) fn to_toml(self) -> toml::Value {
        match self {
            ParamValue::Dur(d) => toml::Value::String(format_duration(d)),
            ParamValue::Num(x) if x.fract() == 0.0 && x.abs() <= 9.0e15 => {
                toml::Value::Integer(x as i64)
            }
            ParamValue::Num(x) => toml::Value::Float(x),
        }
    }

    pub(crate) fn duration(self, name: &str) -> Result<Duration, String> {
        match self {
            ParamValue::Dur(d) if d <= MAX_DURATION => Ok(d),
            ParamValue::Dur(_) => Err(format!(
                "{name} = {self} is longer than the limit, a day (24h)"
            )),
            ParamValue::Num(_) => Err(format!(
                "{name} is a duration (write e.g. 0.5s), not {self}"
            )),
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Dur(d) => f.write_str(&format_duration(*d)),
            ParamValue::Num(x) => write!(f, "{x}"),
        }
    }
}
