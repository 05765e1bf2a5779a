//! Outlier detection across a [`BreakerSet`](crate::BreakerSet): a key that
//! fails more than its peers is ejected (its breaker opened for an ejection
//! time that grows with each ejection), never more than a share of the keys
//! at once.

use crate::breaker::{CallEvent, CircuitBreaker, ConfigError, Listener, Outcome, Reason, State};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The defaults of [`Outliers`] (Envoy's outlier detection and gRPC's A50
/// use the same).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
const DEFAULT_BASE_EJECTION: Duration = Duration::from_secs(30);
const DEFAULT_MAX_EJECTION: Duration = Duration::from_secs(300);

/// Outlier detection for a [`BreakerSet`](crate::BreakerSet): which keys to
/// eject, for how long, and how many at most.
///
/// Every `interval`, on a timer the set does not own
/// ([`BreakerSet::detect_outliers`](crate::BreakerSet::detect_outliers), or
/// the future of
/// `BreakerSet::outlier_detection`
/// under feature `tokio`), never on the call path, a key is ejected when
///
/// - it failed `consecutive_failures` times in a row (default 5), or
/// - its success rate over the interval is below the keys' mean by more than
///   `stdev_factor` standard deviations (default 1.9), counted only over keys
///   with at least `request_volume` calls in the interval (default 100) and
///   only when at least `min_keys` keys have that many (default 5).
///
///   This is Envoy's and gRPC's rule, and it is relative: with one deviant
///   key among identical peers, the deviant's distance from the mean is
///   always `sqrt(n - 1)` standard deviations whatever its rate, so among
///   fewer than `stdev_factor² + 1` keys (4 at 1.9) it never ejects, and
///   among perfect peers a key with a single failure is an outlier. Keep
///   `min_keys` at 5 or more, and lean on the breakers' own rates and the
///   failures in a row for absolute limits.
///
/// An ejected key's breaker opens ([`Reason::Outlier`]) for `base_ejection`
/// (default 30 s) times the number of times the key was ejected, at most
/// `max_ejection` (default 300 s); then it lets a probe through as after any
/// trip and closes when the probe succeeds. Each interval a key passes
/// without failing takes one ejection off its count. A key ejected rejects
/// like any open breaker ([`Rejected`](crate::Rejected) with
/// `retry_after`), so a caller with several endpoints can pick another
/// ([`BreakerSet::pick`](crate::BreakerSet::pick)).
///
/// **At most `max_ejection_percent` of the set's keys are ejected at once**
/// (default 10 %, and always at least one): when every host fails, the
/// detector does not empty the set; each key's own breaker still trips on its
/// own rules. Only a closed breaker is ejected.
///
/// Detection hears every call of the set's breakers (a listener per key), so
/// a set with outlier detection leaves the breakers' fastest success paths.
///
/// # Examples
///
/// ```
/// use fusebox::set::Outliers;
/// use std::time::Duration;
///
/// let outliers = Outliers::default()
///     .consecutive_failures(Some(3))
///     .base_ejection(Duration::from_secs(10))
///     .max_ejection_percent(20);
/// assert_eq!(outliers.interval_value(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Outliers {
    interval: Duration,
    consecutive_failures: Option<u32>,
    stdev_factor: Option<f64>,
    min_keys: usize,
    request_volume: u64,
    base_ejection: Duration,
    max_ejection: Duration,
    max_ejection_percent: u32,
}

impl Default for Outliers {
    fn default() -> Self {
        Outliers {
            interval: DEFAULT_INTERVAL,
            consecutive_failures: Some(5),
            stdev_factor: Some(1.9),
            min_keys: 5,
            request_volume: 100,
            base_ejection: DEFAULT_BASE_EJECTION,
            max_ejection: DEFAULT_MAX_EJECTION,
            max_ejection_percent: 10,
        }
    }
}

impl Outliers {
    /// How often detection runs (default 10 s); the success rates are taken
    /// over this interval.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().interval(std::time::Duration::from_secs(1));
    /// assert_eq!(o.interval_value(), std::time::Duration::from_secs(1));
    /// ```
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The interval in force.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::set::Outliers::default().interval_value().as_secs(), 10);
    /// ```
    pub fn interval_value(&self) -> Duration {
        self.interval
    }

    /// Failures in a row that eject a key (default `Some(5)`); `None` turns
    /// this check off.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().consecutive_failures(None);
    /// # let _ = o;
    /// ```
    pub fn consecutive_failures(mut self, failures: Option<u32>) -> Self {
        self.consecutive_failures = failures;
        self
    }

    /// Standard deviations under the mean success rate that eject a key
    /// (default `Some(1.9)`); `None` turns the success-rate check off.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().stdev_factor(Some(1.0));
    /// # let _ = o;
    /// ```
    pub fn stdev_factor(mut self, factor: Option<f64>) -> Self {
        self.stdev_factor = factor;
        self
    }

    /// Keys with enough calls needed before success rates are compared
    /// (default 5, at least 2).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().min_keys(3);
    /// # let _ = o;
    /// ```
    pub fn min_keys(mut self, keys: usize) -> Self {
        self.min_keys = keys;
        self
    }

    /// Calls in the interval a key needs for its success rate to count
    /// (default 100, at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().request_volume(20);
    /// # let _ = o;
    /// ```
    pub fn request_volume(mut self, calls: u64) -> Self {
        self.request_volume = calls;
        self
    }

    /// The first ejection's length (default 30 s); the n-th lasts n times
    /// as long, up to [`max_ejection`](Self::max_ejection).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().base_ejection(std::time::Duration::from_secs(5));
    /// # let _ = o;
    /// ```
    pub fn base_ejection(mut self, base: Duration) -> Self {
        self.base_ejection = base;
        self
    }

    /// The longest ejection (default 300 s, at least `base_ejection`).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().max_ejection(std::time::Duration::from_secs(60));
    /// # let _ = o;
    /// ```
    pub fn max_ejection(mut self, max: Duration) -> Self {
        self.max_ejection = max;
        self
    }

    /// The most keys ejected at once, in percent of the set's keys (default
    /// 10, from 1 to 100); at least one key may always be ejected.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = fusebox::set::Outliers::default().max_ejection_percent(50);
    /// # let _ = o;
    /// ```
    pub fn max_ejection_percent(mut self, percent: u32) -> Self {
        self.max_ejection_percent = percent;
        self
    }

    /// Checks every setting; the error names the first bad one.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, value: &dyn std::fmt::Debug, problem| {
            Err(ConfigError::of("breaker set", field, value, problem))
        };
        if self.interval.is_zero() {
            return bad(
                "outliers.interval",
                &self.interval,
                "must be more than zero",
            );
        }
        if self.consecutive_failures == Some(0) {
            return bad(
                "outliers.consecutive_failures",
                &0,
                "must be at least 1 (or None to turn the check off)",
            );
        }
        if let Some(f) = self.stdev_factor
            && !(f.is_finite() && f >= 0.0)
        {
            return bad(
                "outliers.stdev_factor",
                &f,
                "must be a finite number of at least 0",
            );
        }
        if self.min_keys < 2 {
            return bad(
                "outliers.min_keys",
                &self.min_keys,
                "must be at least 2 (a deviation needs two keys)",
            );
        }
        if self.request_volume == 0 {
            return bad("outliers.request_volume", &0, "must be at least 1");
        }
        if self.base_ejection.is_zero() {
            return bad(
                "outliers.base_ejection",
                &self.base_ejection,
                "must be more than zero",
            );
        }
        if self.max_ejection < self.base_ejection {
            return bad(
                "outliers.max_ejection",
                &self.max_ejection,
                "must be at least base_ejection",
            );
        }
        if !(1..=100).contains(&self.max_ejection_percent) {
            return bad(
                "outliers.max_ejection_percent",
                &self.max_ejection_percent,
                "must be from 1 to 100",
            );
        }
        Ok(())
    }

    /// Most keys ejected at once among `keys`.
    fn most_ejected(&self, keys: usize) -> usize {
        (keys * self.max_ejection_percent as usize / 100).max(1)
    }

    /// The ejection time of a key's `n`-th ejection.
    fn ejection(&self, n: u32) -> Duration {
        self.base_ejection
            .saturating_mul(n.max(1))
            .min(self.max_ejection)
    }
}

/// What detection keeps per key: the calls its breaker heard this interval
/// (as the breaker's listener) and its ejections.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    successes: AtomicU64,
    failures: AtomicU64,
    in_a_row: AtomicU32,
    /// Ejections not yet worked off (one per interval without failure).
    ejections: AtomicU32,
    /// The set's time the current ejection ends (0: none).
    ejected_until: AtomicU64,
}

impl Listener for Watch {
    fn on_call(&self, call: &CallEvent) {
        // Relaxed: statistics, read once per interval.
        match call.outcome {
            Outcome::Success => {
                self.successes.fetch_add(1, Ordering::Relaxed);
                self.in_a_row.store(0, Ordering::Relaxed);
            }
            Outcome::Failure => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                self.in_a_row.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Ignore => {}
        }
    }
}

impl Watch {
    /// This interval's failure rate, smoothed so that a key with few calls
    /// is not judged on them alone ((failures + 1) / (calls + 2)), in parts
    /// per million: lower is healthier.
    pub(crate) fn failure_score(&self) -> u64 {
        // Relaxed: statistics.
        let failures = self.failures.load(Ordering::Relaxed);
        let calls = failures.saturating_add(self.successes.load(Ordering::Relaxed));
        failures.saturating_add(1).saturating_mul(1_000_000) / calls.saturating_add(2)
    }

    /// Whether the key is ejected at `now`: its ejection has not ended and
    /// its breaker is still open.
    pub(crate) fn is_ejected(&self, breaker: &CircuitBreaker, now: u64) -> bool {
        self.ejected_until.load(Ordering::Relaxed) > now && breaker.state() == State::Open
    }
}

/// One round of detection at `now` over every key of a set (each with its
/// breaker and watch); the keys it ejected. Starts the next interval's
/// counts.
pub(crate) fn detect<K: Clone>(
    outliers: &Outliers,
    keys: &[(K, CircuitBreaker, Arc<Watch>)],
    now: u64,
) -> Vec<K> {
    struct Round {
        index: usize,
        calls: u64,
        rate: f64,
        in_a_row: u32,
        ejected: bool,
    }
    let rounds: Vec<Round> = keys
        .iter()
        .enumerate()
        .map(|(index, (_, breaker, w))| {
            // Relaxed: statistics; a call counted between the two swaps goes
            // to the next interval.
            let successes = w.successes.swap(0, Ordering::Relaxed);
            let failures = w.failures.swap(0, Ordering::Relaxed);
            let ejected = w.is_ejected(breaker, now);
            if !ejected && failures == 0 {
                let _ = w
                    .ejections
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            }
            let calls = successes + failures;
            Round {
                index,
                calls,
                rate: if calls == 0 {
                    1.0
                } else {
                    successes as f64 / calls as f64
                },
                in_a_row: w.in_a_row.load(Ordering::Relaxed),
                ejected,
            }
        })
        .collect();
    let mut room = outliers
        .most_ejected(keys.len())
        .saturating_sub(rounds.iter().filter(|r| r.ejected).count());
    // Candidates, worst first: failures in a row, then low success rates.
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    if let Some(limit) = outliers.consecutive_failures {
        candidates.extend(
            rounds
                .iter()
                .filter(|r| r.in_a_row >= limit)
                .map(|r| (-f64::from(r.in_a_row), r.index)),
        );
    }
    if let Some(factor) = outliers.stdev_factor {
        let counted: Vec<&Round> = rounds
            .iter()
            .filter(|r| r.calls >= outliers.request_volume)
            .collect();
        if counted.len() >= outliers.min_keys {
            let n = counted.len() as f64;
            let mean = counted.iter().map(|r| r.rate).sum::<f64>() / n;
            let var = counted.iter().map(|r| (r.rate - mean).powi(2)).sum::<f64>() / n;
            let floor = mean - factor * var.sqrt();
            candidates.extend(
                counted
                    .iter()
                    .filter(|r| r.rate < floor)
                    .map(|r| (r.rate, r.index)),
            );
        }
    }
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ejected = Vec::new();
    for (_, index) in candidates {
        if room == 0 {
            break;
        }
        let ((key, breaker, w), round) = (&keys[index], &rounds[index]);
        if round.ejected || breaker.state() != State::Closed {
            continue; // already out, or its own breaker decided
        }
        let n = w.ejections.load(Ordering::Relaxed).saturating_add(1);
        let time = outliers.ejection(n);
        if !breaker.open_for(time, Reason::Outlier { ejected_for: time }) {
            continue; // opened meanwhile
        }
        w.ejections.store(n, Ordering::Relaxed);
        w.ejected_until.store(
            now.saturating_add(crate::clock::nanos(time)),
            Ordering::Relaxed,
        );
        w.in_a_row.store(0, Ordering::Relaxed);
        ejected.push(key.clone());
        room -= 1;
    }
    ejected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_one_key_may_be_ejected_and_ejections_grow_to_the_cap() {
        let o = Outliers::default();
        assert_eq!(o.most_ejected(3), 1);
        assert_eq!(o.most_ejected(10), 1);
        assert_eq!(o.most_ejected(25), 2);
        assert_eq!(o.ejection(1), Duration::from_secs(30));
        assert_eq!(o.ejection(4), Duration::from_secs(120));
        assert_eq!(o.ejection(50), Duration::from_secs(300));
    }

    #[test]
    fn each_bad_setting_is_named() {
        let cases = [
            (
                Outliers::default().interval(Duration::ZERO),
                "outliers.interval",
            ),
            (
                Outliers::default().consecutive_failures(Some(0)),
                "outliers.consecutive_failures",
            ),
            (
                Outliers::default().stdev_factor(Some(f64::NAN)),
                "outliers.stdev_factor",
            ),
            (
                Outliers::default().stdev_factor(Some(-1.0)),
                "outliers.stdev_factor",
            ),
            (Outliers::default().min_keys(1), "outliers.min_keys"),
            (
                Outliers::default().request_volume(0),
                "outliers.request_volume",
            ),
            (
                Outliers::default().base_ejection(Duration::ZERO),
                "outliers.base_ejection",
            ),
            (
                Outliers::default().max_ejection(Duration::from_secs(1)),
                "outliers.max_ejection",
            ),
            (
                Outliers::default().max_ejection_percent(0),
                "outliers.max_ejection_percent",
            ),
            (
                Outliers::default().max_ejection_percent(101),
                "outliers.max_ejection_percent",
            ),
        ];
        for (o, field) in cases {
            assert_eq!(o.validate().unwrap_err().field(), field);
        }
        assert!(Outliers::default().validate().is_ok());
    }
}
