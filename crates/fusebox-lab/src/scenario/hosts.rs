//! A dependency of several hosts: `[downstream] hosts = N`, a fault's
//! `hosts = [..]` (numbered from 1), and what a strategy does with the hosts.
//!
//! Every strategy of such a scenario spreads its requests over the hosts.
//! Without `per_host` one guard stands in front of every host (requests go
//! round-robin); a fusebox strategy with `per_host = true` has one breaker
//! per host (the library's `fusebox::BreakerSet`), with `balance =
//! "round_robin"` (the default: a request bound for an open host fast-fails)
//! or `"pick"` (`BreakerSet::pick` among every host), and optionally
//! `outliers = { interval = "1s", ... }`: the set's outlier ejection (the
//! keys of `fusebox::set::Outliers`), run by the guard every `interval` of
//! the run's clock.

use super::duration::parse_value;
use super::error::{Ctx, ScenarioError};
use std::time::Duration;
use toml::Spanned;

/// Most hosts of a dependency.
pub const MAX_HOSTS: usize = 1000;

/// How a strategy spreads requests over the hosts: `balance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// `"round_robin"`: request after request, host after host, whatever
    /// their state.
    #[default]
    RoundRobin,
    /// `"pick"`: `BreakerSet::pick` among every host (two drawn at random,
    /// the healthier taken; open or ejected hosts are never taken).
    Pick,
}

impl Balance {
    /// The `balance` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Balance::RoundRobin => "round_robin",
            Balance::Pick => "pick",
        }
    }
}

/// `outliers = { .. }`: the settings of `fusebox::set::Outliers`, with its
/// defaults where a key is left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutlierSpec {
    /// `interval`.
    pub interval: Option<Duration>,
    /// `consecutive_failures`.
    pub consecutive_failures: Option<u32>,
    /// `stdev_factor`.
    pub stdev_factor: Option<f64>,
    /// `min_keys`.
    pub min_keys: Option<usize>,
    /// `request_volume`.
    pub request_volume: Option<u64>,
    /// `base_ejection`.
    pub base_ejection: Option<Duration>,
    /// `max_ejection`.
    pub max_ejection: Option<Duration>,
    /// `max_ejection_percent`.
    pub max_ejection_percent: Option<u32>,
}

impl OutlierSpec {
    /// The keys of `outliers`.
    pub const KEYS: [&'static str; 8] = [
        "interval",
        "consecutive_failures",
        "stdev_factor",
        "min_keys",
        "request_volume",
        "base_ejection",
        "max_ejection",
        "max_ejection_percent",
    ];

    /// The library's settings.
    pub fn outliers(&self) -> ::fusebox::set::Outliers {
        let mut o = ::fusebox::set::Outliers::default();
        if let Some(v) = self.interval {
            o = o.interval(v);
        }
        if let Some(v) = self.consecutive_failures {
            o = o.consecutive_failures(Some(v));
        }
        if let Some(v) = self.stdev_factor {
            o = o.stdev_factor(Some(v));
        }
        if let Some(v) = self.min_keys {
            o = o.min_keys(v);
        }
        if let Some(v) = self.request_volume {
            o = o.request_volume(v);
        }
        if let Some(v) = self.base_ejection {
            o = o.base_ejection(v);
        }
        if let Some(v) = self.max_ejection {
            o = o.max_ejection(v);
        }
        if let Some(v) = self.max_ejection_percent {
            o = o.max_ejection_percent(v);
        }
        o
    }

    /// `max_ejection_percent`, or the library's default (10).
    pub fn max_ejection_percent(&self) -> u32 {
        self.max_ejection_percent.unwrap_or(10)
    }

    /// Most hosts of `hosts` ejected at once: `max_ejection_percent` of
    /// them, at least one.
    pub fn most_ejected(&self, hosts: usize) -> usize {
        (hosts * self.max_ejection_percent() as usize / 100).max(1)
    }
}

/// What a strategy does with a dependency of several hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPolicy {
    /// `[downstream] hosts`.
    pub count: usize,
    /// `per_host`: one breaker per host (fusebox only) rather than one for all.
    pub per_host: bool,
    /// `balance`.
    pub balance: Balance,
    /// `outliers`: the breaker set's outlier ejection (with `per_host`).
    pub outliers: Option<OutlierSpec>,
}

/// The keys a strategy may have about hosts.
pub(super) const PER_HOST: &str = "per_host";
pub(super) const BALANCE: &str = "balance";
pub(super) const OUTLIERS: &str = "outliers";

/// A strategy's host keys, read before the scenario's `hosts` is known
/// ([`HostKeys::policy`] checks them against it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct HostKeys {
    per_host: Option<(bool, std::ops::Range<usize>)>,
    balance: Option<(Balance, std::ops::Range<usize>)>,
    outliers: Option<(OutlierSpec, std::ops::Range<usize>)>,
}

impl HostKeys {
    /// Reads `per_host`, `balance` and `outliers` of a `kind` strategy.
    pub(super) fn read(
        ctx: &Ctx<'_>,
        kind: &str,
        per_host: Option<&Spanned<toml::Value>>,
        balance: Option<&Spanned<toml::Value>>,
        outliers: Option<&Spanned<toml::Value>>,
    ) -> Result<HostKeys, ScenarioError> {
        let fusebox_only = |key: &str, v: &Spanned<toml::Value>| {
            ctx.err(
                v.span(),
                &format!("strategy.{key}"),
                format!(
                    "does not apply to kind = \"{kind}\" (a breaker per host goes with kind = \"fusebox\")"
                ),
            )
        };
        let mut keys = HostKeys::default();
        if let Some(v) = per_host {
            if kind != "fusebox" {
                return Err(fusebox_only(PER_HOST, v));
            }
            let b = v
                .get_ref()
                .as_bool()
                .ok_or_else(|| ctx.err(v.span(), "strategy.per_host", "must be true or false"))?;
            keys.per_host = Some((b, v.span()));
        }
        if let Some(v) = balance {
            if kind != "fusebox" {
                return Err(fusebox_only(BALANCE, v));
            }
            let b = match v.get_ref().as_str() {
                Some("round_robin") => Balance::RoundRobin,
                Some("pick") => Balance::Pick,
                _ => {
                    return Err(ctx.err(
                        v.span(),
                        "strategy.balance",
                        format!("{} is not one of \"round_robin\", \"pick\"", v.get_ref()),
                    ))
                }
            };
            keys.balance = Some((b, v.span()));
        }
        if let Some(v) = outliers {
            if kind != "fusebox" {
                return Err(fusebox_only(OUTLIERS, v));
            }
            keys.outliers = Some((outlier_spec(ctx, v)?, v.span()));
        }
        Ok(keys)
    }

    /// The strategy's policy for a dependency of `hosts` hosts (`None` for
    /// one host); an error names the key that needs more hosts or `per_host`.
    pub(super) fn policy(
        &self,
        ctx: &Ctx<'_>,
        hosts: usize,
    ) -> Result<Option<HostPolicy>, ScenarioError> {
        let per_host = self.per_host.as_ref().is_some_and(|(b, _)| *b);
        if hosts < 2 {
            let first = [
                (PER_HOST, self.per_host.as_ref().map(|p| p.1.clone())),
                (BALANCE, self.balance.as_ref().map(|p| p.1.clone())),
                (OUTLIERS, self.outliers.as_ref().map(|p| p.1.clone())),
            ]
            .into_iter()
            .find_map(|(k, s)| s.map(|s| (k, s)));
            if let Some((key, span)) = first {
                return Err(ctx.err(
                    span,
                    &format!("strategy.{key}"),
                    "needs a dependency of several hosts ([downstream] hosts = 2 or more)",
                ));
            }
            return Ok(None);
        }
        if !per_host {
            for (key, span) in [
                (BALANCE, self.balance.as_ref().map(|p| p.1.clone())),
                (OUTLIERS, self.outliers.as_ref().map(|p| p.1.clone())),
            ] {
                if let Some(span) = span {
                    return Err(ctx.err(
                        span,
                        &format!("strategy.{key}"),
                        "needs per_host = true (one breaker for every host balances round-robin)",
                    ));
                }
            }
        }
        Ok(Some(HostPolicy {
            count: hosts,
            per_host,
            balance: self.balance.as_ref().map_or(Balance::default(), |b| b.0),
            outliers: self.outliers.as_ref().map(|o| o.0.clone()),
        }))
    }
}

/// `outliers = { .. }`: each key checked alone, then together by the library.
fn outlier_spec(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<OutlierSpec, ScenarioError> {
    let err = |key: &str, message: String| {
        let key = if key.is_empty() {
            "strategy.outliers".to_string()
        } else {
            format!("strategy.outliers.{key}")
        };
        ctx.err(v.span(), &key, message)
    };
    let Some(table) = v.get_ref().as_table() else {
        return Err(err(
            "",
            format!(
                "must be a table such as {{ interval = \"1s\", base_ejection = \"5s\" }}, not {}",
                v.get_ref()
            ),
        ));
    };
    let mut spec = OutlierSpec::default();
    for (key, value) in table {
        let duration = || {
            value
                .as_str()
                .ok_or_else(|| "must be a duration such as \"1s\"".to_string())
                .and_then(parse_value)
                .map_err(|e| err(key, e))
        };
        let count = |max: i64| match value.as_integer() {
            Some(n) if (0..=max).contains(&n) => Ok(n),
            _ => Err(err(
                key,
                format!("{value} is not a whole number in 0..={max}"),
            )),
        };
        match key.as_str() {
            "interval" => spec.interval = Some(duration()?),
            "base_ejection" => spec.base_ejection = Some(duration()?),
            "max_ejection" => spec.max_ejection = Some(duration()?),
            "consecutive_failures" => spec.consecutive_failures = Some(count(1_000_000)? as u32),
            "min_keys" => spec.min_keys = Some(count(MAX_HOSTS as i64)? as usize),
            "request_volume" => spec.request_volume = Some(count(1_000_000_000)? as u64),
            "max_ejection_percent" => spec.max_ejection_percent = Some(count(100)? as u32),
            "stdev_factor" => {
                let f = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|n| n as f64))
                    .ok_or_else(|| err(key, format!("{value} is not a number")))?;
                spec.stdev_factor = Some(f);
            }
            other => {
                return Err(err(
                    other,
                    format!(
                        "is not a key of outliers (its keys: {})",
                        OutlierSpec::KEYS.join(", ")
                    ),
                ))
            }
        }
    }
    // The library's one validation, on a set built for nothing else.
    ::fusebox::BreakerSet::<usize>::builder(::fusebox::CircuitBreaker::builder())
        .outliers(spec.outliers())
        .build()
        .map_err(|e| {
            let field = e.field().strip_prefix("outliers.").unwrap_or(e.field());
            err(field, format!("{} {}", e.value(), e.problem()))
        })?;
    Ok(spec)
}
