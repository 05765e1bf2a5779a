//! The `kind = "fusebox"` strategy table: the library's breaker config
//! ([`BreakerConfig`]), read by the library's own deserialiser and checked by
//! its own [`BreakerConfig::validate`], under its own key names
//! (`consecutive_failures`, `failure_rate`, `count_window`, `time_window`,
//! `buckets`, `min_calls`, `slow_call_duration`, `slow_call_rate`, `open_for`,
//! `open_backoff`, `half_open_probes`, `successes_to_close`,
//! `half_open_max_wait`). The lab adds only its limit on durations (a day)
//! and where in the file a bad key is.

use super::duration;
use super::error::{Ctx, ScenarioError};
use super::param::ParamValue;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// A key of a strategy table: its name and its value, with where it was written.
pub(super) type Key<'a> = (&'a str, &'a Spanned<toml::Value>);

/// The library's breaker settings.
pub use ::fusebox::BreakerConfig;

fn read(keys: &[Key<'_>]) -> Result<BreakerConfig, toml::de::Error> {
    let table: toml::Table = keys
        .iter()
        .map(|(k, v)| (k.to_string(), v.get_ref().clone()))
        .collect();
    toml::Value::Table(table).try_into()
}

/// Every duration of `c`, by key.
fn durations(c: &BreakerConfig) -> [(&'static str, Option<Duration>); 7] {
    [
        ("failures_within", c.failures_within.map(|f| f.within)),
        ("time_window", c.time_window),
        ("slow_call_duration", c.slow_call_duration),
        ("open_for", c.open_for),
        ("open_backoff", c.open_backoff.map(|b| b.initial)),
        ("open_backoff", c.open_backoff.map(|b| b.max)),
        ("half_open_max_wait", c.half_open_max_wait),
    ]
}

/// Reads and validates a fusebox strategy's keys (all but `name` and `kind`).
pub(super) fn parse(
    ctx: &Ctx<'_>,
    table: &Range<usize>,
    keys: &[Key<'_>],
) -> Result<BreakerConfig, ScenarioError> {
    let span_of = |key: &str| {
        keys.iter()
            .find(|(k, _)| *k == key)
            .map_or(table.clone(), |(_, v)| v.span())
    };
    let config = read(keys).map_err(|all| {
        // Name the key at fault: the first that the library refuses alone.
        keys.iter()
            .find_map(|k| read(std::slice::from_ref(k)).err().map(|e| (k.0, e)))
            .map_or_else(
                || ctx.err(table.clone(), "strategy", all.message().to_string()),
                |(key, e)| {
                    ctx.err(
                        span_of(key),
                        &format!("strategy.{key}"),
                        e.message().trim().to_string(),
                    )
                },
            )
    })?;
    for (key, d) in durations(&config) {
        if let Some(Err(e)) = d.map(duration::check) {
            return Err(ctx.err(span_of(key), &format!("strategy.{key}"), e));
        }
    }
    config.validate().map_err(|e| {
        ctx.err(
            span_of(e.field()),
            &format!("strategy.{}", e.field()),
            e.to_string(),
        )
    })?;
    Ok(config)
}

/// Sets the library key `name` of a fusebox strategy for a sweep, if the
/// strategy has it: set in its file, or one every breaker has (`open_for`
/// unless it backs off, `half_open_probes`, `successes_to_close`).
/// `Ok(false)`: it has not. The library reads the value, as it would read
/// it in a file (any key it has, with its own types and checks), and the
/// lab adds its limit on durations.
pub(super) fn set_param(
    c: &mut BreakerConfig,
    name: &str,
    value: ParamValue,
) -> Result<bool, String> {
    let every_breaker = match name {
        "open_for" => c.open_backoff.is_none(),
        "half_open_probes" | "successes_to_close" => true,
        _ => false,
    };
    if !(c.is_set(name) || every_breaker) {
        return Ok(false);
    }
    let one: BreakerConfig =
        toml::Value::Table(toml::Table::from_iter([(name.to_owned(), value.to_toml())]))
            .try_into()
            .map_err(|e: toml::de::Error| format!("{name} = {value}: {}", e.message().trim()))?;
    let mut set = c.clone();
    set.set_from(&one);
    for (key, d) in durations(&set) {
        if let Some(Err(e)) = d.map(duration::check) {
            return Err(format!("{key} = {value} {e}"));
        }
    }
    // A value can contradict the strategy's other keys (`min_calls` above
    // `count_window`, say): the library rejects it here, as it would in a
    // file, rather than when the run builds the breaker.
    set.validate().map_err(|e| e.to_string())?;
    *c = set;
    Ok(true)
}
