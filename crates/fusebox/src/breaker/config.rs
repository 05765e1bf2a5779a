//! Building a breaker: every setting, its default, and its validation.

use super::event::{Listener, OnTransition, Transition};
use super::policy::{OpenPeriod, TripPolicy, WindowSpec};
use super::state::Settings;
use super::CircuitBreaker;
use crate::clock::{nanos, Clock, MonotonicClock};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Largest count window accepted (one byte of memory per call).
const MAX_COUNT_WINDOW: usize = 10_000_000;
/// Largest number of time-window buckets accepted.
const MAX_BUCKETS: usize = 100_000;

/// A setting of a breaker that cannot work, found by [`Builder::build`].
///
/// It names the setting and the value given.
///
/// # Examples
///
/// ```
/// let err = fusebox::CircuitBreaker::builder().failure_rate(1.5).build().unwrap_err();
/// assert_eq!(err.field(), "failure_rate");
/// assert_eq!(
///     err.to_string(),
///     "invalid circuit breaker setting `failure_rate` = 1.5: must be in (0, 1]"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    field: &'static str,
    value: String,
    problem: &'static str,
}

impl ConfigError {
    fn new(field: &'static str, value: impl fmt::Debug, problem: &'static str) -> Self {
        ConfigError {
            field,
            value: format!("{value:?}"),
            problem,
        }
    }

    /// The builder method whose value is wrong (e.g. `"open_for"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .open_for(std::time::Duration::ZERO)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "open_for");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The value given, as written by `Debug`.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder().half_open_probes(0).build().unwrap_err();
    /// assert_eq!(err.value(), "0");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid circuit breaker setting `{}` = {}: {}",
            self.field, self.value, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}

/// Builds a [`CircuitBreaker`]. Start from [`CircuitBreaker::builder`].
///
/// Setters never fail; [`build`](Builder::build) checks everything at once
/// and names the first bad setting.
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | trip policy | `consecutive_failures(5)` when no policy is set |
/// | window of a rate policy | `count_window(100)`; a time window has `buckets(10)` |
/// | `min_calls` | 10, or the count window's size if smaller |
/// | `open_for` | 30 s, fixed |
/// | `half_open_probes` | 1 |
/// | `successes_to_close` | 1 |
/// | clock | [`MonotonicClock`] |
/// | listeners | none (no cost) |
///
/// Policies combine: with `consecutive_failures` and `failure_rate` both set,
/// the breaker trips on whichever is reached first.
///
/// # Examples
///
/// Resilience4j's usual shape: 50 % failures over the last 20 calls, once at
/// least 10 calls are in the window; calls over 2 s are slow, and 80 % slow
/// calls trip too.
///
/// ```
/// use fusebox::CircuitBreaker;
/// use std::time::Duration;
///
/// let breaker = CircuitBreaker::builder()
///     .name("reviews")
///     .failure_rate(0.5)
///     .count_window(20)
///     .min_calls(10)
///     .slow_calls(Duration::from_secs(2), 0.8)
///     .open_backoff(Duration::from_secs(5), 2.0, Duration::from_secs(60))
///     .half_open_probes(3)
///     .successes_to_close(3)
///     .build()?;
/// assert_eq!(breaker.name(), Some("reviews"));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use]
pub struct Builder {
    name: Option<String>,
    consecutive: Option<u32>,
    failure_rate: Option<f64>,
    count_window: Option<usize>,
    time_window: Option<Duration>,
    buckets: Option<usize>,
    min_calls: Option<u32>,
    slow: Option<(Duration, f64)>,
    open: Open,
    probes: u32,
    successes: u32,
    clock: Arc<dyn Clock>,
    listeners: Vec<Arc<dyn Listener>>,
}

#[derive(Debug, Clone, Copy)]
enum Open {
    Fixed(Duration),
    Backoff(Duration, f64, Duration),
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("consecutive_failures", &self.consecutive)
            .field("failure_rate", &self.failure_rate)
            .field("count_window", &self.count_window)
            .field("time_window", &self.time_window)
            .field("buckets", &self.buckets)
            .field("min_calls", &self.min_calls)
            .field("slow_calls", &self.slow)
            .field("open", &self.open)
            .field("half_open_probes", &self.probes)
            .field("successes_to_close", &self.successes)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: None,
            consecutive: None,
            failure_rate: None,
            count_window: None,
            time_window: None,
            buckets: None,
            min_calls: None,
            slow: None,
            open: Open::Fixed(Duration::from_secs(30)),
            probes: 1,
            successes: 1,
            clock: Arc::new(MonotonicClock),
            listeners: Vec::new(),
        }
    }
}

impl Builder {
    /// Names the breaker (for logs, metrics and registries).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().name("payments").build()?;
    /// assert_eq!(b.name(), Some("payments"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Trips after `n` failures in a row; any success resets the count.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, State};
    /// let b = CircuitBreaker::builder().consecutive_failures(2).build()?;
    /// let _ = b.call(|| Err::<(), _>(()));
    /// let _ = b.call(|| Ok::<_, ()>(()));
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Closed);
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn consecutive_failures(mut self, n: u32) -> Self {
        self.consecutive = Some(n);
        self
    }

    /// Trips when failures / calls in the window reach `rate` (in (0, 1]),
    /// once at least [`min_calls`](Builder::min_calls) calls are in it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, State};
    /// let b = CircuitBreaker::builder().failure_rate(0.5).count_window(4).min_calls(4).build()?;
    /// for ok in [true, false, true] {
    ///     let _ = b.call(|| if ok { Ok(()) } else { Err(()) });
    /// }
    /// assert_eq!(b.state(), State::Closed); // 3 calls: below min_calls
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Open); // 2 of 4 failed
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = Some(rate);
        self
    }

    /// Rates look at the last `n` calls (sliding: the oldest drops out).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().failure_rate(0.5).count_window(50).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn count_window(mut self, n: usize) -> Self {
        self.count_window = Some(n);
        self
    }

    /// Rates look at the calls of the last `span` of time, kept in
    /// [`buckets`](Builder::buckets) buckets (a call leaves the window when
    /// its whole bucket does).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .time_window(Duration::from_secs(10))
    ///     .buckets(20)
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn time_window(mut self, span: Duration) -> Self {
        self.time_window = Some(span);
        self
    }

    /// How many buckets a [`time_window`](Builder::time_window) has (default 10).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .time_window(Duration::from_secs(1))
    ///     .buckets(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets");
    /// ```
    pub fn buckets(mut self, n: usize) -> Self {
        self.buckets = Some(n);
        self
    }

    /// No rate trips the breaker before `m` calls are in the window.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .count_window(10)
    ///     .min_calls(20)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "min_calls");
    /// ```
    pub fn min_calls(mut self, m: u32) -> Self {
        self.min_calls = Some(m);
        self
    }

    /// A call taking at least `threshold` is slow; trips when slow calls /
    /// calls in the window reach `rate`. A slow success still returns its
    /// value. In half-open, a slow probe counts as a failed probe.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, State};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let b = CircuitBreaker::builder()
    ///     .slow_calls(Duration::from_millis(100), 1.0)
    ///     .count_window(2)
    ///     .min_calls(2)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// for _ in 0..2 {
    ///     let value = b.call(|| {
    ///         clock.advance(Duration::from_millis(150));
    ///         Ok::<_, ()>("late but fine")
    ///     });
    ///     assert_eq!(value.unwrap(), "late but fine");
    /// }
    /// assert_eq!(b.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn slow_calls(mut self, threshold: Duration, rate: f64) -> Self {
        self.slow = Some((threshold, rate));
        self
    }

    /// Stays open for `period` after each trip (replaces any backoff).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .open_for(std::time::Duration::from_millis(500))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn open_for(mut self, period: Duration) -> Self {
        self.open = Open::Fixed(period);
        self
    }

    /// Stays open for `initial` after the first trip, and `factor` times
    /// longer after each further trip without a close in between, at most
    /// `max`. A close resets it to `initial`. Replaces `open_for`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .open_backoff(Duration::from_secs(1), 2.0, Duration::from_secs(30))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn open_backoff(mut self, initial: Duration, factor: f64, max: Duration) -> Self {
        self.open = Open::Backoff(initial, factor, max);
        self
    }

    /// At most `k` calls are admitted at once in half-open (default 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().half_open_probes(3).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn half_open_probes(mut self, k: u32) -> Self {
        self.probes = k;
        self
    }

    /// Half-open closes after `s` successful probes (default 1); any failed
    /// probe reopens.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().successes_to_close(2).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn successes_to_close(mut self, s: u32) -> Self {
        self.successes = s;
        self
    }

    /// Reads time from `clock` (default [`MonotonicClock`]); tests use
    /// [`ManualClock`](crate::ManualClock).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().clock(fusebox::ManualClock::new()).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Calls `f` on every state change (see [`Listener`] for where it runs).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .on_transition(|t| eprintln!("breaker: {t}"))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn on_transition(self, f: impl Fn(&Transition) + Send + Sync + 'static) -> Self {
        self.listener(OnTransition(f))
    }

    /// Adds a listener; every listener added sees every event.
    ///
    /// # Examples
    ///
    /// ```
    /// struct Quiet;
    /// impl fusebox::Listener for Quiet {}
    /// let b = fusebox::CircuitBreaker::builder().listener(Quiet).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(mut self, listener: impl Listener) -> Self {
        self.listeners.push(Arc::new(listener));
        self
    }

    /// Checks every setting and builds the breaker.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that cannot work: a zero
    /// threshold, count or period, a rate outside (0, 1], both a count and a
    /// time window, a window or `min_calls` with no rate policy to use it,
    /// `min_calls` above the count window, a backoff factor below 1 or a
    /// backoff maximum below its start.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder().consecutive_failures(0).build().unwrap_err();
    /// assert_eq!(err.field(), "consecutive_failures");
    /// ```
    pub fn build(self) -> Result<CircuitBreaker, ConfigError> {
        let settings = self.settings()?;
        Ok(CircuitBreaker::from_parts(
            settings,
            self.clock,
            self.listeners.into_boxed_slice(),
            self.name,
        ))
    }

    fn settings(&self) -> Result<Settings, ConfigError> {
        let unit = |field, r: f64| {
            if r > 0.0 && r <= 1.0 {
                Ok(r)
            } else {
                Err(ConfigError::new(field, r, "must be in (0, 1]"))
            }
        };
        if self.consecutive == Some(0) {
            return Err(ConfigError::new(
                "consecutive_failures",
                0,
                "must be at least 1",
            ));
        }
        let failure_rate = self
            .failure_rate
            .map(|r| unit("failure_rate", r))
            .transpose()?;
        let slow = match self.slow {
            None => None,
            Some((d, r)) => {
                if d.is_zero() {
                    return Err(ConfigError::new(
                        "slow_calls",
                        d,
                        "the threshold must be above zero",
                    ));
                }
                Some((nanos(d), unit("slow_calls", r)?))
            }
        };
        let rated = failure_rate.is_some() || slow.is_some();
        let window = match (self.count_window, self.time_window) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "time_window",
                    self.time_window.unwrap_or_default(),
                    "set either count_window or time_window, not both",
                ))
            }
            (Some(n), None) => {
                if n == 0 {
                    return Err(ConfigError::new(
                        "count_window",
                        n,
                        "must hold at least 1 call",
                    ));
                }
                if n > MAX_COUNT_WINDOW {
                    return Err(ConfigError::new(
                        "count_window",
                        n,
                        "must be at most 10000000 calls",
                    ));
                }
                Some(WindowSpec::Count(n))
            }
            (None, Some(span)) => {
                let buckets = self.buckets.unwrap_or(10);
                if span.is_zero() {
                    return Err(ConfigError::new("time_window", span, "must be above zero"));
                }
                if buckets == 0 || buckets > MAX_BUCKETS {
                    return Err(ConfigError::new(
                        "buckets",
                        buckets,
                        "must be in 1..=100000",
                    ));
                }
                if nanos(span) < buckets as u64 {
                    return Err(ConfigError::new(
                        "buckets",
                        buckets,
                        "more buckets than nanoseconds in the time window",
                    ));
                }
                Some(WindowSpec::Time {
                    span: nanos(span),
                    buckets,
                })
            }
            (None, None) => rated.then_some(WindowSpec::Count(100)),
        };
        if self.buckets.is_some() && self.time_window.is_none() {
            return Err(ConfigError::new(
                "buckets",
                self.buckets.unwrap_or_default(),
                "only a time_window has buckets",
            ));
        }
        if !rated {
            if let Some(n) = self.count_window {
                return Err(ConfigError::new(
                    "count_window",
                    n,
                    "no failure_rate or slow_calls policy uses the window",
                ));
            }
            if let Some(d) = self.time_window {
                return Err(ConfigError::new(
                    "time_window",
                    d,
                    "no failure_rate or slow_calls policy uses the window",
                ));
            }
            if let Some(m) = self.min_calls {
                return Err(ConfigError::new(
                    "min_calls",
                    m,
                    "no failure_rate or slow_calls policy uses it",
                ));
            }
        }
        let min_calls = match (self.min_calls, window) {
            (Some(0), _) => return Err(ConfigError::new("min_calls", 0, "must be at least 1")),
            (Some(m), Some(WindowSpec::Count(n))) if m as usize > n => {
                return Err(ConfigError::new(
                    "min_calls",
                    m,
                    "above the count window's size: the breaker could never trip",
                ))
            }
            (Some(m), _) => u64::from(m),
            (None, Some(WindowSpec::Count(n))) => (n as u64).min(10),
            (None, _) => 10,
        };
        let consecutive = match (self.consecutive, rated) {
            (None, false) => Some(5),
            (c, _) => c,
        };
        let open = match self.open {
            Open::Fixed(d) => {
                if d.is_zero() {
                    return Err(ConfigError::new("open_for", d, "must be above zero"));
                }
                OpenPeriod::Fixed(nanos(d))
            }
            Open::Backoff(initial, factor, max) => {
                if initial.is_zero() {
                    return Err(ConfigError::new(
                        "open_backoff.initial",
                        initial,
                        "must be above zero",
                    ));
                }
                if !(factor >= 1.0 && factor.is_finite()) {
                    return Err(ConfigError::new(
                        "open_backoff.factor",
                        factor,
                        "must be a finite number >= 1",
                    ));
                }
                if max < initial {
                    return Err(ConfigError::new(
                        "open_backoff.max",
                        max,
                        "must be at least the initial period",
                    ));
                }
                OpenPeriod::Backoff {
                    initial: nanos(initial),
                    factor,
                    max: nanos(max),
                }
            }
        };
        if self.probes == 0 {
            return Err(ConfigError::new(
                "half_open_probes",
                0,
                "must be at least 1",
            ));
        }
        if self.successes == 0 {
            return Err(ConfigError::new(
                "successes_to_close",
                0,
                "must be at least 1",
            ));
        }
        Ok(Settings {
            policy: TripPolicy {
                consecutive,
                failure_rate,
                slow,
                window,
                min_calls,
            },
            open,
            probes: self.probes,
            successes: self.successes,
        })
    }
}
