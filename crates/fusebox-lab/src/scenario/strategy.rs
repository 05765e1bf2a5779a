//! One `[[strategy]]` table -> a [`StrategySpec`]: what guards the call,
//! as data (the `guard` layer builds it).

use super::duration::{format_duration, Dur};
use super::error::{int_in, Ctx, ScenarioError};
use super::fusebox::{self, BreakerConfig};
use super::MAX_DURATION;
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// One `[[strategy]]`: a name for the report and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategySpec {
    /// `name`, shown in the report.
    pub name: String,
    /// `kind` and its parameters.
    pub kind: StrategyKind,
}

/// Every kind of strategy the lab can run. Parsed from a `[[strategy]]` table,
/// swept in [`StrategyKind::set_param`] and built in `guard::build`: adding a
/// kind means one variant here and one arm in each.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyKind {
    /// `kind = "none"`: every call goes to the downstream.
    None,
    /// `kind = "seed"`: seed 000's breaker, ported faithfully.
    Seed(SeedConfig),
    /// `kind = "fusebox"`: [`::fusebox::CircuitBreaker`], from the library's
    /// config (see [`super::fusebox`] for the lab's keys).
    Fusebox(BreakerConfig),
    /// `kind = "failsafe" | "recloser" | "tower-resilience"`: a peer crate
    /// (runs only with the cargo feature `peers`, in real mode).
    Peer(PeerConfig),
}

impl StrategyKind {
    /// The `kind` string of this strategy.
    pub fn as_str(&self) -> &'static str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::Seed(_) => "seed",
            StrategyKind::Fusebox(_) => "fusebox",
            StrategyKind::Peer(c) => c.peer.as_str(),
        }
    }
}

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
                "{name} must be a whole number >= {min}, not {self}"
            )),
        }
    }

    pub(super) fn duration(self, name: &str) -> Result<Duration, String> {
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

impl StrategyKind {
    /// Sets the strategy parameter `name` (a strategy key, as in scenario files)
    /// for a sweep. `Ok(false)`: this kind has no such parameter.
    pub fn set_param(&mut self, name: &str, value: ParamValue) -> Result<bool, String> {
        match (&mut *self, name) {
            (StrategyKind::Seed(c), "failures") => c.failures = value.count(name, 1)?,
            (StrategyKind::Seed(c), "open_for") => c.open_for = value.duration(name)?,
            (StrategyKind::Fusebox(c), _) => return fusebox::set_param(c, name, value),
            (StrategyKind::Peer(c), "failures") => c.failures = value.count(name, 1)?,
            (StrategyKind::Peer(c), "open_for") => c.open_for = value.duration(name)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Parameters of the `seed` strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedConfig {
    /// `failures`: consecutive failures that open the breaker.
    pub failures: u32,
    /// `open_for`: how long it stays open before one probe is let through.
    pub open_for: Duration,
}

/// The keys of one `[[strategy]]` table, before validation. Each kind takes
/// the keys it needs and rejects the others.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStrategy {
    name: Spanned<String>,
    kind: Spanned<String>,
    failures: Option<Spanned<i64>>,
    open_for: Option<Spanned<Dur>>,
    policy: Option<Spanned<String>>,
    rate: Option<Spanned<f64>>,
    window_calls: Option<Spanned<i64>>,
    window_time: Option<Spanned<Dur>>,
    min_calls: Option<Spanned<i64>>,
    probes: Option<Spanned<i64>>,
    successes: Option<Spanned<i64>>,
}

pub(super) fn need<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<Spanned<T>>,
    key: &str,
    kind: &str,
    table: Range<usize>,
) -> Result<&'a Spanned<T>, ScenarioError> {
    v.as_ref().ok_or_else(|| {
        ctx.err(
            table,
            &format!("strategy.{key}"),
            format!("missing: kind = \"{kind}\" needs `{key}`"),
        )
    })
}

impl RawStrategy {
    /// Every optional key that is present, with its span.
    fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let mut v = Vec::new();
        macro_rules! p {
            ($($f:ident),*) => {$(
                if let Some(x) = &self.$f { v.push((stringify!($f), x.span())); }
            )*};
        }
        p!(
            failures,
            open_for,
            policy,
            rate,
            window_calls,
            window_time,
            min_calls,
            probes,
            successes
        );
        v
    }

    pub(super) fn validate(
        &self,
        ctx: &Ctx<'_>,
        table: Range<usize>,
    ) -> Result<StrategySpec, ScenarioError> {
        let name = self.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(ctx.err(self.name.span(), "strategy.name", "must not be empty"));
        }
        let kind_str = self.kind.get_ref().as_str();
        let fusebox_keys;
        let (allowed, kind): (&[&str], StrategyKind) = match kind_str {
            "none" => (&[], StrategyKind::None),
            "seed" => {
                let f = need(ctx, &self.failures, "failures", kind_str, table.clone())?;
                let o = need(ctx, &self.open_for, "open_for", kind_str, table.clone())?;
                (
                    &["failures", "open_for"],
                    StrategyKind::Seed(SeedConfig {
                        failures: int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32,
                        open_for: o.get_ref().0,
                    }),
                )
            }
            "fusebox" => {
                let (keys, config) = fusebox::Table {
                    policy: &self.policy,
                    open_for: &self.open_for,
                    failures: &self.failures,
                    rate: &self.rate,
                    window_calls: &self.window_calls,
                    window_time: &self.window_time,
                    min_calls: &self.min_calls,
                    probes: &self.probes,
                    successes: &self.successes,
                }
                .parse(ctx, table.clone())?;
                fusebox_keys = keys;
                (&fusebox_keys[..], StrategyKind::Fusebox(config))
            }
            peer if Peer::parse(peer).is_some() => {
                let f = need(ctx, &self.failures, "failures", kind_str, table.clone())?;
                let o = need(ctx, &self.open_for, "open_for", kind_str, table.clone())?;
                (
                    &["failures", "open_for"],
                    StrategyKind::Peer(PeerConfig {
                        peer: Peer::parse(peer).expect("matched above"),
                        failures: int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32,
                        open_for: o.get_ref().0,
                    }),
                )
            }
            other => {
                return Err(ctx.err(
                    self.kind.span(),
                    "strategy.kind",
                    format!("{other:?} is not one of \"none\", \"seed\", \"fusebox\", \"failsafe\", \"recloser\", \"tower-resilience\""),
                ))
            }
        };
        for (key, span) in self.present() {
            if !allowed.contains(&key) {
                return Err(ctx.err(
                    span,
                    &format!("strategy.{key}"),
                    format!("does not apply to kind = \"{kind_str}\""),
                ));
            }
        }
        Ok(StrategySpec { name, kind })
    }
}

/// A peer crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// `kind = "failsafe"`.
    Failsafe,
    /// `kind = "recloser"`.
    Recloser,
    /// `kind = "tower-resilience"`.
    TowerResilience,
}

impl Peer {
    /// Every peer.
    pub const ALL: [Peer; 3] = [Peer::Failsafe, Peer::Recloser, Peer::TowerResilience];

    /// The `kind` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Peer::Failsafe => "failsafe",
            Peer::Recloser => "recloser",
            Peer::TowerResilience => "tower-resilience",
        }
    }

    /// The peer whose `kind` string is `kind`.
    pub fn parse(kind: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|p| p.as_str() == kind)
    }
}

/// Parameters of a peer strategy: the article's two.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerConfig {
    /// Which crate.
    pub peer: Peer,
    /// `failures`: consecutive failures that open the breaker.
    pub failures: u32,
    /// `open_for`: how long it stays open.
    pub open_for: Duration,
}
