//! One `[[strategy]]` table -> a [`StrategySpec`]: what guards the call,
//! as data (the `guard` layer builds it).
//!
//! Every kind takes the library's key names: `kind = "fusebox"` any key of
//! [`::fusebox::BreakerConfig`] (read and validated by the library, see
//! [`super::fusebox`]), plus `max_concurrent` (a bulkhead) and `rate_limit`
//! (a rate limiter, the keys of [`::fusebox::ratelimit::RateLimitConfig`]),
//! `limit`, `throttle`, `hedge` ([`HedgeConfig`]: the settings of
//! [`::fusebox::hedge::Hedge`]'s builder, checked by it) and
//! `retry_budget` ([`RetryBudgetConfig`]: those of
//! [`::fusebox::retry::RetryBudget`]'s builder, checked by it);
//! `seed` and the peers the two the article's breaker has,
//! `consecutive_failures` and `open_for`.

use super::duration::{self, parse_value};
use super::error::{Ctx, ScenarioError};
use super::fusebox::{self, BreakerConfig, Key};
use super::hosts;
use super::param::ParamValue;
use serde::Deserialize;
use std::collections::BTreeMap;
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
    /// `max_concurrent` (`kind = "fusebox"` only): a bulkhead of this many
    /// slots in front of the breaker, from the same registry (the library's
    /// [`::fusebox::registry::BulkheadConfig`] key). A call that finds every
    /// slot taken is rejected without waiting and counts as a fast fail.
    pub max_concurrent: Option<usize>,
    /// `rate_limit` (`kind = "fusebox"` only), e.g. `rate_limit = {
    /// per_second = 40, burst = 5 }`: a rate limiter in front of the
    /// downstream, from the same registry (the library's
    /// [`RateLimitConfig`](::fusebox::ratelimit::RateLimitConfig), read by
    /// its own deserialiser and checked by its own validation), on the
    /// run's clock. A call over the rate is refused at once and counts as a
    /// fast fail; in shadow mode it goes through.
    pub rate_limit: Option<::fusebox::ratelimit::RateLimitConfig>,
    /// `limit` (`kind = "fusebox"` only), e.g. `limit = { algorithm =
    /// "vegas", max = 100 }`: an adaptive concurrency limit in front of the
    /// downstream (the library's
    /// [`LimitConfig`](::fusebox::limit::LimitConfig), read by its own
    /// deserialiser and checked by its own validation), on the run's clock.
    /// A call over the limit is refused at once and counts as a fast fail;
    /// an answer is a sample of its round-trip time, a timeout or a
    /// server's refusal as overloaded (`reject_after`) a drop.
    pub limit: Option<::fusebox::limit::LimitConfig>,
    /// `throttle` (`kind = "fusebox"` only), e.g. `throttle = { k = 2.0,
    /// window = "10s" }`: adaptive throttling in front of everything else
    /// (the library's [`ThrottleConfig`](::fusebox::throttle::ThrottleConfig),
    /// read by its own deserialiser and checked by its own validation), on
    /// the run's clock with a fixed seed. A refused request counts as a fast
    /// fail; an answer is an accept, an error or a timeout an overload.
    pub throttle: Option<::fusebox::throttle::ThrottleConfig>,
    /// A dependency of several hosts (`[downstream] hosts`): how the
    /// strategy spreads requests over them and guards each (`per_host`,
    /// `balance`, `outliers`); `None` for one host.
    pub hosts: Option<super::hosts::HostPolicy>,
    /// `hedge` (`kind = "fusebox"` only), e.g. `hedge = { delay = "p95",
    /// max_extra = 1 }`: an attempt still running after the delay is sent
    /// again, the first success answers and the others are cancelled
    /// (virtual mode only).
    pub hedge: Option<HedgeConfig>,
    /// `timeout` (any kind), e.g. `timeout = "250ms"`: this strategy's
    /// client gives up on a call after this long, in place of `[client]
    /// timeout` (a breaker with a timeout beside strategies without one).
    pub timeout: Option<Duration>,
    /// `retry_budget` (`kind = "fusebox"` only), e.g. `retry_budget = {
    /// ratio = 0.1, min_per_second = 1 }`: the `[client] retries` of this
    /// strategy are made only while the library's
    /// [`RetryBudget`](::fusebox::retry::RetryBudget) allows: each request
    /// deposits `ratio` of a retry, each retry takes one; a retry refused
    /// leaves the request with its failure.
    pub retry_budget: Option<RetryBudgetConfig>,
}

/// `retry_budget = { ratio = 0.1, min_per_second = 1, window = "10s" }`:
/// the settings of a [`::fusebox::retry::RetryBudget`]; a key left out
/// takes the library's default (0.2, 10, 10 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudgetConfig {
    /// `ratio`: retries allowed per request, on average.
    pub ratio: Option<f64>,
    /// `min_per_second`: retries a second always allowed.
    pub min_per_second: Option<u32>,
    /// `window`: how long deposits and retries count.
    pub window: Option<Duration>,
}

impl RetryBudgetConfig {
    /// The library's budget with these settings, on `clock`.
    ///
    /// # Errors
    ///
    /// What the library's builder refuses (checked when the scenario was
    /// read, so a run does not see it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::RetryBudgetConfig;
    ///
    /// let c = RetryBudgetConfig { ratio: Some(0.1), min_per_second: Some(0), window: None };
    /// let budget = c.build(fusebox::ManualClock::new())?;
    /// for _ in 0..10 {
    ///     budget.deposit(); // ten requests pay for one retry
    /// }
    /// assert!(budget.try_withdraw());
    /// assert!(!budget.try_withdraw());
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn build(
        &self,
        clock: impl ::fusebox::Clock,
    ) -> Result<::fusebox::retry::RetryBudget, ::fusebox::retry::RetryConfigError> {
        let mut b = ::fusebox::retry::RetryBudget::builder().clock(clock);
        if let Some(r) = self.ratio {
            b = b.ratio(r);
        }
        if let Some(n) = self.min_per_second {
            b = b.min_per_second(n);
        }
        if let Some(w) = self.window {
            b = b.window(w);
        }
        b.build()
    }
}

/// `hedge = { delay = "p95", max_extra = 1, min_samples = 100 }`: the
/// settings of a [`::fusebox::hedge::Hedge`]; a key left out takes the
/// library's default (`p95`, 1, 100).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeConfig {
    /// `delay`: `"50ms"` (a duration, the library's grammar: a fixed
    /// delay) or `"p95"` (a quantile of the latencies of recent successful
    /// calls, `"p99.9"` too).
    pub delay: Option<::fusebox::hedge::Delay>,
    /// `max_extra`: the most extra attempts per call (1..=100).
    pub max_extra: Option<u32>,
    /// `min_samples`: the successful calls a quantile delay needs before
    /// the first hedge.
    pub min_samples: Option<u64>,
}

impl HedgeConfig {
    /// The library's hedge with these settings (a fresh histogram).
    ///
    /// # Errors
    ///
    /// What the library's builder refuses (checked when the scenario was
    /// read, so a run does not see it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::Delay;
    /// use fusebox_lab::scenario::HedgeConfig;
    ///
    /// let c = HedgeConfig { delay: Some(Delay::Quantile(0.95)), max_extra: None, min_samples: Some(10) };
    /// let hedge = c.build()?;
    /// assert_eq!((hedge.delay(), hedge.max_extra()), (Delay::Quantile(0.95), 1));
    /// assert_eq!(hedge.current_delay(), None); // no samples yet
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(&self) -> Result<::fusebox::hedge::Hedge, ::fusebox::ConfigError> {
        let mut b = ::fusebox::hedge::Hedge::builder();
        if let Some(d) = self.delay {
            b = b.delay(d);
        }
        if let Some(n) = self.max_extra {
            b = b.max_extra(n);
        }
        if let Some(n) = self.min_samples {
            b = b.min_samples(n);
        }
        b.build()
    }
}

/// Every kind of strategy the lab can run. Parsed from a `[[strategy]]`
/// table, swept in [`StrategyKind::set_param`] and built in `guard::build`:
/// adding a kind means one variant here and one arm in each.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyKind {
    /// `kind = "none"`: every call goes to the downstream.
    None,
    /// `kind = "seed"`: seed 000's breaker, ported faithfully.
    Seed(SeedConfig),
    /// `kind = "fusebox"`: [`::fusebox::CircuitBreaker`], from the library's config.
    Fusebox(Box<BreakerConfig>),
    /// `kind = "failsafe" | "recloser" | "tower-resilience"`: a peer crate
    /// (runs only with the cargo feature `peers`, in real mode).
    Peer(PeerConfig),
}

impl StrategySpec {
    /// The open period a trip of this strategy carries to the other replicas
    /// of a fleet (virtual mode): fixed, or an error saying why not.
    pub fn fleet_open_for(&self) -> Result<Option<Duration>, String> {
        match &self.kind {
            StrategyKind::None => Ok(None),
            StrategyKind::Seed(c) => Ok(Some(c.open_for)),
            StrategyKind::Peer(c) => Ok(Some(c.open_for)),
            StrategyKind::Fusebox(c) if c.open_backoff.is_some() => Err(format!(
                "strategy {:?}: a fleet scenario with sharing = \"fleet\" needs a fixed open period \
                 (open_for), not open_backoff",
                self.name
            )),
            StrategyKind::Fusebox(c) => Ok(Some(c.open_for.unwrap_or(Duration::from_secs(30)))),
        }
    }
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

impl StrategyKind {
    /// Sets the strategy key `name` (the library's key names, as in scenario
    /// files) for a sweep. `Ok(false)`: this strategy has no such key.
    pub fn set_param(&mut self, name: &str, value: ParamValue) -> Result<bool, String> {
        let (failures, open_for) = match (self, name) {
            (StrategyKind::Seed(c), "consecutive_failures") => {
                c.failures = value.count(name, 1)?;
                (c.failures, c.open_for)
            }
            (StrategyKind::Seed(c), "open_for") => {
                c.open_for = value.duration(name)?;
                (c.failures, c.open_for)
            }
            (StrategyKind::Peer(c), "consecutive_failures") => {
                c.failures = value.count(name, 1)?;
                (c.failures, c.open_for)
            }
            (StrategyKind::Peer(c), "open_for") => {
                c.open_for = value.duration(name)?;
                (c.failures, c.open_for)
            }
            (StrategyKind::Fusebox(c), _) => return fusebox::set_param(c, name, value),
            _ => return Ok(false),
        };
        check_article(failures, open_for).map_err(|e| e.to_string())?;
        Ok(true)
    }
}

/// Parameters of the `seed` strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedConfig {
    /// `consecutive_failures`: failures in a row that open the breaker.
    pub failures: u32,
    /// `open_for`: how long it stays open before one probe is let through.
    pub open_for: Duration,
}

/// The keys of one `[[strategy]]` table, each with where it was written.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(super) struct RawStrategy(BTreeMap<String, Spanned<toml::Value>>);

fn string<'a>(
    ctx: &Ctx<'_>,
    table: &Range<usize>,
    key: &str,
    v: Option<&'a Spanned<toml::Value>>,
) -> Result<&'a str, ScenarioError> {
    let v = v.ok_or_else(|| {
        ctx.err(
            table.clone(),
            &format!("strategy.{key}"),
            format!("missing: every [[strategy]] needs `{key}`"),
        )
    })?;
    v.get_ref()
        .as_str()
        .ok_or_else(|| ctx.err(v.span(), &format!("strategy.{key}"), "must be a string"))
}

/// The article's breaker's two settings, checked by the library's one
/// validation (an `open_for` of zero, say, is refused as it is for fusebox).
fn check_article(failures: u32, open_for: Duration) -> Result<(), ::fusebox::ConfigError> {
    ::fusebox::BreakerConfig {
        consecutive_failures: Some(failures),
        open_for: Some(open_for),
        ..Default::default()
    }
    .validate()
}

/// The two keys of the article's breaker (`seed` and the peers).
fn article_keys(
    ctx: &Ctx<'_>,
    table: &Range<usize>,
    kind: &str,
    keys: &[Key<'_>],
) -> Result<(u32, Duration), ScenarioError> {
    let get = |key: &str| {
        keys.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                ctx.err(
                    table.clone(),
                    &format!("strategy.{key}"),
                    format!("missing: kind = \"{kind}\" needs `{key}`"),
                )
            })
    };
    let f = get("consecutive_failures")?;
    let failures = match f.get_ref().as_integer() {
        Some(n) if (1..=1_000_000).contains(&n) => n as u32,
        _ => {
            return Err(ctx.err(
                f.span(),
                "strategy.consecutive_failures",
                format!("{} is not a whole number in 1..=1000000", f.get_ref()),
            ))
        }
    };
    let o = get("open_for")?;
    let open_for = o
        .get_ref()
        .as_str()
        .ok_or_else(|| "must be a duration such as \"500ms\"".to_string())
        .and_then(parse_value)
        .map_err(|e| ctx.err(o.span(), "strategy.open_for", e))?;
    check_article(failures, open_for).map_err(|e| {
        let span = if e.field() == "open_for" {
            o.span()
        } else {
            f.span()
        };
        ctx.err(
            span,
            &format!("strategy.{}", e.field()),
            format!("{} {}", e.value(), e.problem()),
        )
    })?;
    Ok((failures, open_for))
}

/// The keys every strategy has.
const NAME: &str = "name";
const KIND: &str = "kind";

/// The key of a fusebox strategy's bulkhead.
const MAX_CONCURRENT: &str = "max_concurrent";

/// `max_concurrent`: a whole number of slots, 1 to 10 000, on a fusebox strategy.
fn max_concurrent(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<usize, ScenarioError> {
    let at = |message: String| ctx.err(v.span(), &format!("strategy.{MAX_CONCURRENT}"), message);
    if kind != "fusebox" {
        return Err(at(format!(
            "does not apply to kind = \"{kind}\" (a bulkhead goes with kind = \"fusebox\")"
        )));
    }
    match v.get_ref().as_integer() {
        Some(n @ 1..=10_000) => Ok(n as usize),
        _ => Err(at(format!(
            "must be a whole number of slots from 1 to 10000, not {}",
            v.get_ref()
        ))),
    }
}

/// The key of a strategy's own client timeout.
const TIMEOUT: &str = "timeout";

/// `timeout`: a duration above zero, at most a day.
fn timeout(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<Duration, ScenarioError> {
    let at = |message: String| ctx.err(v.span(), &format!("strategy.{TIMEOUT}"), message);
    let d = v
        .get_ref()
        .as_str()
        .ok_or_else(|| format!("must be a duration such as \"250ms\", not {}", v.get_ref()))
        .and_then(parse_value)
        .map_err(at)?;
    if d.is_zero() {
        return Err(at("must be > 0".into()));
    }
    Ok(d)
}

/// The key of a fusebox strategy's adaptive limit.
const LIMIT: &str = "limit";

/// `limit`: a table of the library's adaptive limit keys, on a fusebox
/// strategy. An error names the key inside it (`strategy.limit.max`).
fn limit(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<::fusebox::limit::LimitConfig, ScenarioError> {
    let policy = PolicyTable {
        key: LIMIT,
        what: "an adaptive limit",
        example: "{ algorithm = \"vegas\", max = 100 }",
    };
    let config: ::fusebox::limit::LimitConfig = policy.read(ctx, kind, v)?;
    config
        .validate()
        .map_err(|e| policy.err(ctx, v, e.field(), e.to_string()))?;
    Ok(config)
}

/// The key of a fusebox strategy's throttle.
const THROTTLE: &str = "throttle";

/// `throttle`: a table of the library's throttle keys, on a fusebox
/// strategy. An error names the key inside it (`strategy.throttle.k`).
fn throttle(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<::fusebox::throttle::ThrottleConfig, ScenarioError> {
    let policy = PolicyTable {
        key: THROTTLE,
        what: "a throttle",
        example: "{ k = 2.0, window = \"10s\" }",
    };
    let config: ::fusebox::throttle::ThrottleConfig = policy.read(ctx, kind, v)?;
    config
        .validate()
        .map_err(|e| policy.err(ctx, v, e.field(), e.to_string()))?;
    Ok(config)
}

/// The key of a fusebox strategy's rate limiter.
const RATE_LIMIT: &str = "rate_limit";

/// `rate_limit`: a table of the library's rate limiter keys, on a fusebox
/// strategy. An error names the key inside it (`strategy.rate_limit.burst`).
fn rate_limit(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<::fusebox::ratelimit::RateLimitConfig, ScenarioError> {
    let policy = PolicyTable {
        key: RATE_LIMIT,
        what: "a rate limiter",
        example: "{ per_second = 40, burst = 5 }",
    };
    let config: ::fusebox::ratelimit::RateLimitConfig = policy.read(ctx, kind, v)?;
    if let Some(Err(e)) = config.period.map(duration::check) {
        return Err(policy.err(ctx, v, "period", e));
    }
    config
        .validate()
        .map_err(|e| policy.err(ctx, v, e.field(), e.to_string()))?;
    Ok(config)
}

/// The key of a fusebox strategy's hedge.
const HEDGE: &str = "hedge";

/// Most extra attempts a hedge may send per call.
const MAX_HEDGES: i64 = 100;

/// Largest `min_samples` of a hedge.
const MAX_MIN_SAMPLES: i64 = 1_000_000_000;

/// `hedge`: a table of a hedge's settings, on a fusebox strategy. An error
/// names the key inside it (`strategy.hedge.delay`).
fn hedge(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<HedgeConfig, ScenarioError> {
    let policy = PolicyTable {
        key: HEDGE,
        what: "a hedge",
        example: "{ delay = \"p95\", max_extra = 1 }",
    };
    let table = policy.table(ctx, kind, v)?;
    let err = |inner: &str, message: String| policy.err(ctx, v, inner, message);
    let mut config = HedgeConfig {
        delay: None,
        max_extra: None,
        min_samples: None,
    };
    for (key, value) in table {
        let whole = |lo: i64, hi: i64| match value.as_integer() {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(err(
                key,
                format!("must be a whole number from {lo} to {hi}, not {value}"),
            )),
        };
        match key.as_str() {
            "delay" => config.delay = Some(hedge_delay(value).map_err(|e| err(key, e))?),
            "max_extra" => config.max_extra = Some(whole(1, MAX_HEDGES)? as u32),
            "min_samples" => config.min_samples = Some(whole(0, MAX_MIN_SAMPLES)? as u64),
            _ => {
                return Err(err(
                    key,
                    "unknown key (a hedge's keys: delay, max_extra, min_samples)".into(),
                ))
            }
        }
    }
    config.build().map_err(|e| err(e.field(), e.to_string()))?;
    Ok(config)
}

/// The key of a fusebox strategy's retry budget.
const RETRY_BUDGET: &str = "retry_budget";

/// Largest `min_per_second` of a retry budget.
const MAX_RETRIES_PER_SECOND: i64 = 1_000_000;

/// `retry_budget`: a table of a retry budget's settings, on a fusebox
/// strategy. An error names the key inside it (`strategy.retry_budget.ratio`).
fn retry_budget(
    ctx: &Ctx<'_>,
    kind: &str,
    v: &Spanned<toml::Value>,
) -> Result<RetryBudgetConfig, ScenarioError> {
    let policy = PolicyTable {
        key: RETRY_BUDGET,
        what: "a retry budget",
        example: "{ ratio = 0.1, min_per_second = 1 }",
    };
    let table = policy.table(ctx, kind, v)?;
    let err = |inner: &str, message: String| policy.err(ctx, v, inner, message);
    let mut config = RetryBudgetConfig {
        ratio: None,
        min_per_second: None,
        window: None,
    };
    for (key, value) in table {
        match key.as_str() {
            "ratio" => {
                config.ratio = Some(match value {
                    toml::Value::Float(x) => *x,
                    toml::Value::Integer(n) => *n as f64,
                    other => {
                        return Err(err(
                            key,
                            format!(
                                "must be a number of retries per request such as 0.1, not {other}"
                            ),
                        ))
                    }
                })
            }
            "min_per_second" => {
                config.min_per_second = Some(match value.as_integer() {
                    Some(n) if (0..=MAX_RETRIES_PER_SECOND).contains(&n) => n as u32,
                    _ => {
                        return Err(err(
                            key,
                            format!(
                                "must be a whole number of retries a second from 0 to \
                                 {MAX_RETRIES_PER_SECOND}, not {value}"
                            ),
                        ))
                    }
                })
            }
            "window" => {
                let d = value
                    .as_str()
                    .ok_or_else(|| format!("must be a duration such as \"10s\", not {value}"))
                    .and_then(parse_value)
                    .map_err(|e| err(key, e))?;
                config.window = Some(d);
            }
            _ => {
                return Err(err(
                    key,
                    "unknown key (a retry budget's keys: ratio, min_per_second, window)".into(),
                ))
            }
        }
    }
    config
        .build(::fusebox::ManualClock::new())
        .map_err(|e| err(e.field(), e.to_string()))?;
    Ok(config)
}

/// A hedge's `delay`: `"p95"` (a quantile, above p0 and below p100) or a
/// duration above zero.
fn hedge_delay(v: &toml::Value) -> Result<::fusebox::hedge::Delay, String> {
    use ::fusebox::hedge::Delay;
    let usage =
        || format!("must be a quantile such as \"p95\" or a duration such as \"50ms\", not {v}");
    let s = v.as_str().ok_or_else(usage)?.trim();
    if let Some(p) = s.strip_prefix('p') {
        return match p.parse::<f64>() {
            Ok(x) if x > 0.0 && x < 100.0 => Ok(Delay::Quantile(x / 100.0)),
            Ok(_) => Err(format!("{s:?}: a quantile is above p0 and below p100")),
            Err(_) => Err(usage()),
        };
    }
    let d = duration::parse_duration(s).map_err(|e| format!("{} ({e})", usage()))?;
    duration::check(d).map_err(|e| format!("{s:?} {e}"))?;
    if d.is_zero() {
        return Err(format!("{s:?} must be more than zero"));
    }
    Ok(Delay::Fixed(d))
}

/// A fusebox strategy's table of one library policy's keys (`rate_limit`,
/// `limit`), read by the library's own deserialiser.
struct PolicyTable {
    key: &'static str,
    /// The policy, with its article: "a rate limiter".
    what: &'static str,
    example: &'static str,
}

impl PolicyTable {
    /// An error naming `strategy.KEY` or `strategy.KEY.inner`.
    fn err(
        &self,
        ctx: &Ctx<'_>,
        v: &Spanned<toml::Value>,
        inner: &str,
        message: String,
    ) -> ScenarioError {
        let key = if inner.is_empty() {
            format!("strategy.{}", self.key)
        } else {
            format!("strategy.{}.{inner}", self.key)
        };
        ctx.err(v.span(), &key, message)
    }

    /// The table, on a fusebox strategy only.
    fn table<'v>(
        &self,
        ctx: &Ctx<'_>,
        kind: &str,
        v: &'v Spanned<toml::Value>,
    ) -> Result<&'v toml::Table, ScenarioError> {
        if kind != "fusebox" {
            let message = format!(
                "does not apply to kind = \"{kind}\" ({} goes with kind = \"fusebox\")",
                self.what
            );
            return Err(self.err(ctx, v, "", message));
        }
        v.get_ref().as_table().ok_or_else(|| {
            let message = format!(
                "must be a table such as {}, not {}",
                self.example,
                v.get_ref()
            );
            self.err(ctx, v, "", message)
        })
    }

    /// The table as the policy's config, on a fusebox strategy only; a bad
    /// value names its key: the first the library refuses alone.
    fn read<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &Ctx<'_>,
        kind: &str,
        v: &Spanned<toml::Value>,
    ) -> Result<T, ScenarioError> {
        let table = self.table(ctx, kind, v)?;
        let read = |t: toml::Table| toml::Value::Table(t).try_into::<T>();
        read(table.clone()).map_err(|all| {
            table
                .iter()
                .find_map(|(k, value)| {
                    read(toml::Table::from_iter([(k.clone(), value.clone())]))
                        .err()
                        .map(|e| self.err(ctx, v, k, e.message().trim().to_string()))
                })
                .unwrap_or_else(|| self.err(ctx, v, "", all.message().trim().to_string()))
        })
    }
}

impl RawStrategy {
    /// Checks the keys against the kind and builds the spec.
    pub(super) fn validate(
        &self,
        ctx: &Ctx<'_>,
        table: Range<usize>,
    ) -> Result<StrategySpec, ScenarioError> {
        let name = string(ctx, &table, "name", self.0.get("name"))?.trim();
        if name.is_empty() {
            let span = self.0.get("name").map_or(table.clone(), |v| v.span());
            return Err(ctx.err(span, "strategy.name", "must not be empty"));
        }
        let kind_str = string(ctx, &table, "kind", self.0.get("kind"))?;
        let keys: Vec<Key<'_>> = self
            .0
            .iter()
            .filter(|(k, _)| {
                ![
                    NAME,
                    KIND,
                    MAX_CONCURRENT,
                    RATE_LIMIT,
                    LIMIT,
                    THROTTLE,
                    HEDGE,
                    TIMEOUT,
                    RETRY_BUDGET,
                ]
                .contains(&k.as_str())
                    && ![hosts::PER_HOST, hosts::BALANCE, hosts::OUTLIERS].contains(&k.as_str())
            })
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let max_concurrent = self
            .0
            .get(MAX_CONCURRENT)
            .map(|v| max_concurrent(ctx, kind_str, v))
            .transpose()?;
        let rate_limit = self
            .0
            .get(RATE_LIMIT)
            .map(|v| rate_limit(ctx, kind_str, v))
            .transpose()?;
        let limit = self
            .0
            .get(LIMIT)
            .map(|v| limit(ctx, kind_str, v))
            .transpose()?;
        let throttle = self
            .0
            .get(THROTTLE)
            .map(|v| throttle(ctx, kind_str, v))
            .transpose()?;
        let hedge = self
            .0
            .get(HEDGE)
            .map(|v| hedge(ctx, kind_str, v))
            .transpose()?;
        let timeout = self.0.get(TIMEOUT).map(|v| timeout(ctx, v)).transpose()?;
        let retry_budget = self
            .0
            .get(RETRY_BUDGET)
            .map(|v| retry_budget(ctx, kind_str, v))
            .transpose()?;
        let article: &[&str] = &["consecutive_failures", "open_for"];
        let (allowed, kind): (&[&str], StrategyKind) = match kind_str {
            "none" => (&[], StrategyKind::None),
            "seed" => {
                let (failures, open_for) = article_keys(ctx, &table, kind_str, &keys)?;
                (
                    article,
                    StrategyKind::Seed(SeedConfig { failures, open_for }),
                )
            }
            // The library checks its own keys, and names any it does not know.
            "fusebox" => (
                &::fusebox::BreakerConfig::KEYS,
                StrategyKind::Fusebox(Box::new(fusebox::parse(ctx, &table, &keys)?)),
            ),
            peer if Peer::parse(peer).is_some() => {
                let (failures, open_for) = article_keys(ctx, &table, kind_str, &keys)?;
                (
                    article,
                    StrategyKind::Peer(PeerConfig {
                        peer: Peer::parse(peer).expect("matched above"),
                        failures,
                        open_for,
                    }),
                )
            }
            other => {
                let span = self.0.get("kind").map_or(table.clone(), |v| v.span());
                return Err(ctx.err(
                    span,
                    "strategy.kind",
                    format!("{other:?} is not one of \"none\", \"seed\", \"fusebox\", \"failsafe\", \"recloser\", \"tower-resilience\""),
                ));
            }
        };
        for (key, v) in &keys {
            if !allowed.contains(key) {
                return Err(ctx.err(
                    v.span(),
                    &format!("strategy.{key}"),
                    format!(
                        "does not apply to kind = \"{kind_str}\" (its keys: {})",
                        if allowed.is_empty() {
                            "none".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                ));
            }
        }
        Ok(StrategySpec {
            name: name.to_string(),
            kind,
            max_concurrent,
            rate_limit,
            limit,
            throttle,
            hosts: None,
            hedge,
            timeout,
            retry_budget,
        })
    }

    /// The strategy's `per_host`, `balance` and `outliers`, checked against
    /// its kind (the scenario's `hosts` checks the rest).
    pub(super) fn host_keys(&self, ctx: &Ctx<'_>) -> Result<hosts::HostKeys, ScenarioError> {
        let kind = self
            .0
            .get(KIND)
            .and_then(|v| v.get_ref().as_str())
            .unwrap_or("");
        hosts::HostKeys::read(
            ctx,
            kind,
            self.0.get(hosts::PER_HOST),
            self.0.get(hosts::BALANCE),
            self.0.get(hosts::OUTLIERS),
        )
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
    /// `consecutive_failures`: failures in a row that open the breaker.
    pub failures: u32,
    /// `open_for`: how long it stays open.
    pub open_for: Duration,
}
