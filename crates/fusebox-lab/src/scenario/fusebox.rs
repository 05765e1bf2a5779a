//! The `kind = "fusebox"` strategy table -> the library's breaker config.
//!
//! This file is the only place that knows the lab's own fusebox keys
//! (`policy = "consecutive" | "rate-count" | "rate-time"`, `failures`, `rate`,
//! `window_calls`, `window_time`, `min_calls`, `probes`, `successes`,
//! `open_for`): it maps them onto the library's [`BreakerConfig`], which then
//! validates them. When the library's config deserialises itself, this file
//! becomes a serde call and the key map below goes away.

use super::duration::Dur;
use super::error::{int_in, Ctx, ScenarioError};
use super::strategy::{need, ParamValue};
use std::ops::Range;
use toml::Spanned;

/// The library's breaker settings, with the registry's key names.
pub use fusebox::registry::BreakerConfig;

/// The keys of a `kind = "fusebox"` table (the other kinds' keys are
/// rejected by the caller).
pub(super) struct Table<'a> {
    pub(super) policy: &'a Option<Spanned<String>>,
    pub(super) open_for: &'a Option<Spanned<Dur>>,
    pub(super) failures: &'a Option<Spanned<i64>>,
    pub(super) rate: &'a Option<Spanned<f64>>,
    pub(super) window_calls: &'a Option<Spanned<i64>>,
    pub(super) window_time: &'a Option<Spanned<Dur>>,
    pub(super) min_calls: &'a Option<Spanned<i64>>,
    pub(super) probes: &'a Option<Spanned<i64>>,
    pub(super) successes: &'a Option<Spanned<i64>>,
}

/// The lab key for a library key (as named in a library error).
fn lab_key(library_key: &str) -> &str {
    match library_key {
        "consecutive_failures" => "failures",
        "failure_rate" => "rate",
        "count_window" => "window_calls",
        "time_window" | "buckets" => "window_time",
        "half_open_probes" => "probes",
        "successes_to_close" => "successes",
        other => other,
    }
}

/// Keys every policy takes.
const COMMON: [&str; 4] = ["policy", "open_for", "probes", "successes"];

impl Table<'_> {
    /// The keys this table's policy allows, and the library config.
    pub(super) fn parse(
        &self,
        ctx: &Ctx<'_>,
        table: Range<usize>,
    ) -> Result<(Vec<&'static str>, BreakerConfig), ScenarioError> {
        let kind = "fusebox";
        let p = need(ctx, self.policy, "policy", kind, table.clone())?;
        let o = need(ctx, self.open_for, "open_for", kind, table.clone())?;
        let count = |v: &Option<Spanned<i64>>, key: &str| match v {
            Some(v) => int_in(ctx, v, &format!("strategy.{key}"), 1, 1_000_000).map(Some),
            None => Ok(None),
        };
        let mut config = BreakerConfig {
            open_for: Some(o.get_ref().0),
            half_open_probes: Some(count(self.probes, "probes")?.unwrap_or(1) as u32),
            successes_to_close: Some(count(self.successes, "successes")?.unwrap_or(1) as u32),
            ..BreakerConfig::default()
        };
        let rate = |config: &mut BreakerConfig| -> Result<(), ScenarioError> {
            let r = need(ctx, self.rate, "rate", kind, table.clone())?;
            let x = *r.get_ref();
            if !(x > 0.0 && x <= 1.0) {
                return Err(ctx.err(r.span(), "strategy.rate", format!("{x} is not in (0, 1]")));
            }
            config.failure_rate = Some(x);
            config.min_calls = count(self.min_calls, "min_calls")?.map(|m| m as u32);
            Ok(())
        };
        let mut allowed = COMMON.to_vec();
        match p.get_ref().as_str() {
            "consecutive" => {
                let f = need(
                    ctx,
                    self.failures,
                    "failures",
                    "fusebox\", policy = \"consecutive",
                    table.clone(),
                )?;
                allowed.push("failures");
                config.consecutive_failures =
                    Some(int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32);
            }
            "rate-count" => {
                let w = need(
                    ctx,
                    self.window_calls,
                    "window_calls",
                    "fusebox\", policy = \"rate-count",
                    table.clone(),
                )?;
                allowed.extend(["rate", "window_calls", "min_calls"]);
                rate(&mut config)?;
                config.count_window =
                    Some(int_in(ctx, w, "strategy.window_calls", 1, 10_000_000)? as usize);
            }
            "rate-time" => {
                let w = need(
                    ctx,
                    self.window_time,
                    "window_time",
                    "fusebox\", policy = \"rate-time",
                    table.clone(),
                )?;
                allowed.extend(["rate", "window_time", "min_calls"]);
                rate(&mut config)?;
                config.time_window = Some(w.get_ref().0);
            }
            other => {
                return Err(ctx.err(
                    p.span(),
                    "strategy.policy",
                    format!(
                        "{other:?} is not one of \"consecutive\", \"rate-count\", \"rate-time\""
                    ),
                ))
            }
        }
        // The library validates the whole configuration now, so a bad one is
        // an input error naming the key rather than a failure during the run.
        if let Err(e) = config.validate() {
            let key = lab_key(e.key());
            let span = match key {
                "failures" => self.failures.as_ref().map(|s| s.span()),
                "rate" => self.rate.as_ref().map(|s| s.span()),
                "window_calls" => self.window_calls.as_ref().map(|s| s.span()),
                "window_time" => self.window_time.as_ref().map(|s| s.span()),
                "min_calls" => self.min_calls.as_ref().map(|s| s.span()),
                "probes" => self.probes.as_ref().map(|s| s.span()),
                "successes" => self.successes.as_ref().map(|s| s.span()),
                "open_for" => Some(o.span()),
                _ => None,
            };
            return Err(ctx.err(
                span.unwrap_or(table),
                &format!("strategy.{key}"),
                e.message().to_string(),
            ));
        }
        Ok((allowed, config))
    }
}

/// Sets the lab key `name` of a fusebox strategy for a sweep.
/// `Ok(false)`: this strategy's policy has no such key.
pub(super) fn set_param(
    c: &mut BreakerConfig,
    name: &str,
    value: ParamValue,
) -> Result<bool, String> {
    // A rate policy is one with a failure rate; the others count failures in a row.
    let rate_policy = c.failure_rate.is_some();
    match name {
        "open_for" => c.open_for = Some(value.duration(name)?),
        "probes" => c.half_open_probes = Some(value.count(name, 1)?),
        "successes" => c.successes_to_close = Some(value.count(name, 1)?),
        // As in scenario files, `min_calls` belongs to the rate policies only.
        "min_calls" if rate_policy => c.min_calls = Some(value.count(name, 1)?),
        "failures" if !rate_policy => c.consecutive_failures = Some(value.count(name, 1)?),
        "rate" if rate_policy => match value {
            ParamValue::Num(x) if x > 0.0 && x <= 1.0 => c.failure_rate = Some(x),
            _ => return Err(format!("rate must be in (0, 1], not {value}")),
        },
        "window_calls" if c.count_window.is_some() => {
            c.count_window = Some(value.count(name, 1)? as usize)
        }
        "window_time" if c.time_window.is_some() => c.time_window = Some(value.duration(name)?),
        _ => return Ok(false),
    }
    // A value can contradict the strategy's other keys (`min_calls` above
    // `window_calls`, say): reject it here, as loading the scenario would,
    // rather than when the run builds the breaker.
    c.validate()
        .map_err(|e| format!("{}: {}", lab_key(e.key()), e.message()))?;
    Ok(true)
}
