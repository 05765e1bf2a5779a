//! Retry budget: retries limited to a fraction of recent calls.

use super::RetryConfigError;
use crate::clock::{nanos, Clock, MonotonicClock};
use crate::sync::{lock, Mutex};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Thousandths of a retry token: deposits are fractions of a token.
const MILLI: i64 = 1000;
/// Buckets in the sliding window.
const BUCKETS: usize = 10;

/// Retries limited to a fraction of recent calls, as Finagle's `RetryBudget`
/// and Envoy's retry budgets do, so retries cannot multiply the load on a
/// failing dependency.
///
/// Every call deposits `ratio` of a token; every retry withdraws one whole
/// token and is refused when there is none. Deposits and withdrawals count for
/// `window` (a sliding window of ten buckets) and then expire, so the budget
/// follows recent traffic. A floor of `min_per_second` retries per second is
/// always available (a reserve of `min_per_second * window` tokens per
/// window), so a service with little traffic can still retry at all.
///
/// Over any window, retries are at most `ratio * calls + min_per_second *
/// window`: when the dependency is down and every call fails, the load it sees
/// is at most `(1 + ratio)` times the calls plus that small constant, however
/// many attempts each caller would like.
///
/// Clones share one budget: give one budget to every caller of a dependency.
///
/// # Default
///
/// `ratio` 0.2, `min_per_second` 10, `window` 10 s, the [`MonotonicClock`].
///
/// # Examples
///
/// ```
/// use fusebox::retry::RetryBudget;
/// use fusebox::ManualClock;
/// use std::time::Duration;
///
/// let budget = RetryBudget::builder()
///     .ratio(0.1)
///     .min_per_second(0)
///     .clock(ManualClock::new())
///     .build()?;
/// for _ in 0..20 {
///     budget.deposit(); // 20 calls...
/// }
/// assert!(budget.try_withdraw()); // ...pay for 2 retries
/// assert!(budget.try_withdraw());
/// assert!(!budget.try_withdraw());
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<Inner>,
}

struct Inner {
    clock: Box<dyn Clock>,
    ratio: f64,
    min_per_second: u32,
    window: Duration,
    deposit: i64,
    reserve: i64,
    bucket_nanos: u64,
    ring: Mutex<Ring>,
}

struct Ring {
    /// Net milli-tokens per bucket (deposits minus withdrawals).
    slots: [i64; BUCKETS],
    /// Index (time / bucket length) of the newest bucket.
    head: u64,
    /// Retries refused since the budget was built.
    refused: u64,
}

/// Builds a [`RetryBudget`]; from [`RetryBudget::builder`].
///
/// # Default
///
/// `ratio` 0.2, `min_per_second` 10, `window` 10 s, the [`MonotonicClock`].
///
/// # Examples
///
/// ```
/// use fusebox::retry::RetryBudget;
/// use std::time::Duration;
/// let budget = RetryBudget::builder()
///     .ratio(0.2)
///     .min_per_second(5)
///     .window(Duration::from_secs(10))
///     .build()?;
/// assert_eq!(budget.balance(), 50); // the reserve: 5/s over 10 s
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct BudgetBuilder {
    ratio: f64,
    min_per_second: u32,
    window: Duration,
    clock: Box<dyn Clock>,
}

impl fmt::Debug for BudgetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BudgetBuilder")
            .field("ratio", &self.ratio)
            .field("min_per_second", &self.min_per_second)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl BudgetBuilder {
    /// Retries allowed per call: 0.2 means one retry per five calls.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::retry::RetryBudget::builder().ratio(-1.0).build().unwrap_err();
    /// assert_eq!(e.field(), "ratio");
    /// ```
    pub fn ratio(mut self, ratio: f64) -> Self {
        self.ratio = ratio;
        self
    }

    /// Retries per second always allowed, whatever the traffic.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::retry::RetryBudget::builder().min_per_second(0).build()?;
    /// assert_eq!(b.balance(), 0);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn min_per_second(mut self, min_per_second: u32) -> Self {
        self.min_per_second = min_per_second;
        self
    }

    /// How long deposits and withdrawals count (at least 10 ms; seconds in
    /// practice).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = fusebox::retry::RetryBudget::builder().window(Duration::ZERO).build().unwrap_err();
    /// assert_eq!(e.field(), "window");
    /// ```
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The clock that ages deposits (a [`ManualClock`](crate::ManualClock) in tests).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::retry::RetryBudget::builder().clock(fusebox::ManualClock::new()).build();
    /// assert!(b.is_ok());
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Checks the settings and builds the budget.
    ///
    /// # Errors
    ///
    /// [`RetryConfigError`] naming `ratio` (not finite or negative) or
    /// `window` (under 10 ms, or over about 584 years).
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::retry::RetryBudget::builder().ratio(f64::NAN).build().unwrap_err();
    /// assert_eq!(e.to_string(), "invalid retry setting `ratio` = NaN: must be a finite number >= 0");
    /// ```
    pub fn build(self) -> Result<RetryBudget, RetryConfigError> {
        if !(self.ratio.is_finite() && self.ratio >= 0.0) {
            return Err(RetryConfigError::new(
                "ratio",
                self.ratio.to_string(),
                "must be a finite number >= 0",
            ));
        }
        let window_nanos = nanos(self.window);
        if self.window < Duration::from_millis(10) || window_nanos == u64::MAX {
            return Err(RetryConfigError::new(
                "window",
                format!("{:?}", self.window),
                "must be at least 10ms",
            ));
        }
        // Rounded to whole milli-tokens; a ratio too large for i64 saturates.
        let deposit = (self.ratio * MILLI as f64).round() as i64;
        let reserve = (f64::from(self.min_per_second) * self.window.as_secs_f64() * MILLI as f64)
            .round() as i64;
        Ok(RetryBudget {
            inner: Arc::new(Inner {
                clock: self.clock,
                ratio: self.ratio,
                min_per_second: self.min_per_second,
                window: self.window,
                deposit,
                reserve,
                bucket_nanos: (window_nanos / BUCKETS as u64).max(1),
                ring: Mutex::new(Ring {
                    slots: [0; BUCKETS],
                    head: 0,
                    refused: 0,
                }),
            }),
        })
    }
}

impl RetryBudget {
    /// A builder with the defaults (ratio 0.2, 10 retries/s floor, 10 s window).
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().build()?;
    /// assert_eq!(budget.ratio(), 0.2);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn builder() -> BudgetBuilder {
        BudgetBuilder {
            ratio: 0.2,
            min_per_second: 10,
            window: Duration::from_secs(10),
            clock: Box::new(MonotonicClock),
        }
    }

    /// Records one call (not a retry): adds `ratio` of a token.
    ///
    /// [`Retry`](super::Retry) does this once per call it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().ratio(1.0).min_per_second(0).build()?;
    /// budget.deposit();
    /// assert_eq!(budget.balance(), 1);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn deposit(&self) {
        let inner = &*self.inner;
        let now = inner.bucket_of(inner.clock.now());
        let mut ring = lock(&inner.ring);
        let i = ring.advance(now);
        ring.slots[i] = ring.slots[i].saturating_add(inner.deposit);
    }

    /// Takes one retry token if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().min_per_second(0).build()?;
    /// assert!(!budget.try_withdraw());
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn try_withdraw(&self) -> bool {
        let inner = &*self.inner;
        let now = inner.bucket_of(inner.clock.now());
        let mut ring = lock(&inner.ring);
        let i = ring.advance(now);
        if inner.reserve.saturating_add(ring.sum()) >= MILLI {
            ring.slots[i] -= MILLI;
            true
        } else {
            ring.refused += 1;
            false
        }
    }

    /// Whole retries available right now.
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().min_per_second(2).build()?;
    /// assert_eq!(budget.balance(), 20); // 2/s over the 10 s window
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn balance(&self) -> u64 {
        let inner = &*self.inner;
        let now = inner.bucket_of(inner.clock.now());
        let mut ring = lock(&inner.ring);
        ring.advance(now);
        u64::try_from(inner.reserve.saturating_add(ring.sum()) / MILLI).unwrap_or(0)
    }

    /// Retries refused for lack of budget since the budget was built.
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().min_per_second(0).build()?;
    /// let _ = budget.try_withdraw();
    /// assert_eq!(budget.refused(), 1);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn refused(&self) -> u64 {
        lock(&self.inner.ring).refused
    }

    /// The configured ratio.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::retry::RetryBudget::builder().ratio(0.5).build()?;
    /// assert_eq!(b.ratio(), 0.5);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn ratio(&self) -> f64 {
        self.inner.ratio
    }
}

impl Inner {
    fn bucket_of(&self, now: Duration) -> u64 {
        nanos(now) / self.bucket_nanos
    }
}

impl Ring {
    /// Moves the head to bucket `now` (clearing expired buckets) and returns
    /// its slot. A clock that went backwards writes into the newest bucket.
    fn advance(&mut self, now: u64) -> usize {
        if now > self.head {
            let gap = now - self.head;
            if gap >= BUCKETS as u64 {
                self.slots = [0; BUCKETS];
            } else {
                for k in 1..=gap {
                    self.slots[((self.head + k) % BUCKETS as u64) as usize] = 0;
                }
            }
            self.head = now;
        }
        (self.head % BUCKETS as u64) as usize
    }

    fn sum(&self) -> i64 {
        self.slots.iter().fold(0i64, |a, s| a.saturating_add(*s))
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("ratio", &self.inner.ratio)
            .field("min_per_second", &self.inner.min_per_second)
            .field("window", &self.inner.window)
            .field("balance", &self.balance())
            .finish()
    }
}
