//! Hedging (feature `tokio`): when an attempt is slower than most, send
//! another and take the first answer.
//!
//! A tail of slow answers (a garbage-collecting replica, a cold cache, a
//! lost packet) costs a caller its p99 even when the dependency is healthy.
//! A [`Hedge`] starts the call; if it has not answered after the hedge
//! delay, it starts the same call again (up to `max_extra` times), takes the
//! first success and drops the rest. A dropped attempt is cancelled: a
//! breaker inside it releases its permit without a verdict, a bulkhead its
//! slot.
//!
//! The delay is fixed, or a quantile of the latencies of recent successful
//! calls ([`Delay::Quantile`]: `0.95` hedges the slowest 5 %), read from a
//! fixed-size histogram (no allocation per call; no hedge before
//! `min_samples` calls). Extra attempts can spend from a [`RetryBudget`],
//! the one a retry spends from, so hedges and retries together stay within
//! one ratio of the traffic: a spent budget stops new hedges and never
//! cancels one in flight.
//!
//! Only a call that may run twice should be hedged (an idempotent read);
//! errors are not hedged (that is a retry's job): an attempt that fails
//! while no other is running ends the call with its error.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use fusebox::hedge::{Delay, Hedge};
//! use std::time::Duration;
//!
//! let hedge = Hedge::builder().delay(Delay::Fixed(Duration::from_millis(50))).build().unwrap();
//! let mut attempt = 0;
//! let answer = hedge
//!     .call(|| {
//!         attempt += 1;
//!         let slow = attempt == 1; // the first replica stalls
//!         async move {
//!             let took = if slow { 5_000 } else { 10 };
//!             tokio::time::sleep(Duration::from_millis(took)).await;
//!             Ok::<_, std::io::Error>(attempt)
//!         }
//!     })
//!     .await;
//! assert_eq!(answer.unwrap(), 2); // the hedge answered at 60 ms
//! assert_eq!(hedge.stats().hedges, 1);
//! # }
//! ```

mod histogram;

use crate::retry::RetryBudget;
use histogram::Histogram;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;

/// When a hedge is sent.
///
/// # Examples
///
/// ```
/// use fusebox::hedge::Delay;
/// let p95 = Delay::Quantile(0.95);
/// assert_ne!(p95, Delay::Fixed(std::time::Duration::from_millis(100)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Delay {
    /// After this long without an answer.
    Fixed(Duration),
    /// After the latency below which this fraction of recent successful
    /// calls answered (in `(0, 1)`), once `min_samples` are known.
    Quantile(f64),
}

/// A bad hedge setting: which, and why.
///
/// # Examples
///
/// ```
/// let err = fusebox::hedge::Hedge::builder().max_extra(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid hedge setting `max_extra` = 0: must be at least 1");
/// ```
pub type HedgeConfigError = crate::ConfigError;

/// Sends a call again when it is slow, and takes the first answer; see the
/// [module docs](self).
///
/// Cheap to clone: clones share the latency histogram and the counters.
///
/// # Examples
///
/// ```
/// let hedge = fusebox::hedge::Hedge::builder().build()?;
/// assert_eq!(hedge.max_extra(), 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Hedge {
    inner: Arc<Inner>,
}

struct Inner {
    delay: Delay,
    max_extra: u32,
    min_samples: u64,
    budget: Option<RetryBudget>,
    deposits: bool,
    latencies: Histogram,
    calls: AtomicU64,
    hedges: AtomicU64,
    won_by_hedge: AtomicU64,
    refused_by_budget: AtomicU64,
}

/// Builds a [`Hedge`]; from [`Hedge::builder`].
///
/// # Default
///
/// - `delay`: [`Delay::Quantile(0.95)`](Delay::Quantile)
/// - `max_extra`: 1
/// - `min_samples`: 100
/// - no budget
///
/// # Examples
///
/// ```
/// use fusebox::hedge::{Delay, Hedge};
/// let hedge = Hedge::builder().delay(Delay::Quantile(0.9)).max_extra(2).min_samples(20).build()?;
/// assert_eq!(hedge.delay(), Delay::Quantile(0.9));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    delay: Delay,
    max_extra: u32,
    min_samples: u64,
    budget: Option<RetryBudget>,
    deposits: bool,
}

impl Builder {
    /// When to send a hedge.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::{Delay, Hedge};
    /// let h = Hedge::builder().delay(Delay::Fixed(std::time::Duration::from_millis(20))).build()?;
    /// assert_eq!(h.current_delay(), Some(std::time::Duration::from_millis(20)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn delay(mut self, delay: Delay) -> Self {
        self.delay = delay;
        self
    }

    /// The most extra attempts per call (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::hedge::Hedge::builder().max_extra(2).build()?.max_extra(), 2);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn max_extra(mut self, max_extra: u32) -> Self {
        self.max_extra = max_extra;
        self
    }

    /// How many successful calls a quantile delay needs before the first
    /// hedge.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = fusebox::hedge::Hedge::builder().min_samples(10).build()?;
    /// assert_eq!(h.current_delay(), None); // nothing known yet: no hedge
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn min_samples(mut self, min_samples: u64) -> Self {
        self.min_samples = min_samples;
        self
    }

    /// Each extra attempt withdraws one retry from `budget`, and each call
    /// deposits into it (as a retry's calls do).
    ///
    /// # Examples
    ///
    /// ```
    /// let budget = fusebox::retry::RetryBudget::builder().build()?;
    /// let h = fusebox::hedge::Hedge::builder().budget(budget).build()?;
    /// assert!(h.budget().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.budget = Some(budget);
        self.deposits = true;
        self
    }

    /// As [`budget`](Self::budget), for a budget that a retry around the
    /// hedge already deposits into for each call: the hedge only
    /// withdraws, so calls are not counted twice.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Retry, RetryBudget};
    /// let budget = RetryBudget::builder().build()?;
    /// let retry = Retry::builder().budget(budget.clone()).build()?;
    /// let hedge = fusebox::hedge::Hedge::builder().shared_budget(budget).build()?;
    /// # let _ = (retry, hedge);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared_budget(mut self, budget: RetryBudget) -> Self {
        self.budget = Some(budget);
        self.deposits = false;
        self
    }

    /// Builds the hedge.
    ///
    /// # Errors
    ///
    /// `max_extra` of 0, a quantile outside `(0, 1)`, a fixed delay of 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::{Delay, Hedge};
    /// let err = Hedge::builder().delay(Delay::Quantile(1.0)).build().unwrap_err();
    /// assert_eq!(err.field(), "delay");
    /// ```
    pub fn build(self) -> Result<Hedge, HedgeConfigError> {
        let bad = |field, value: &dyn fmt::Debug, problem| {
            Err(crate::ConfigError::of("hedge", field, value, problem))
        };
        if self.max_extra == 0 {
            return bad("max_extra", &0, "must be at least 1");
        }
        match self.delay {
            Delay::Quantile(q) if !(q > 0.0 && q < 1.0) => {
                return bad("delay", &self.delay, "a quantile must be in (0, 1)");
            }
            Delay::Fixed(d) if d.is_zero() => {
                return bad("delay", &self.delay, "must be more than zero");
            }
            _ => {}
        }
        Ok(Hedge {
            inner: Arc::new(Inner {
                delay: self.delay,
                max_extra: self.max_extra,
                min_samples: self.min_samples,
                budget: self.budget,
                deposits: self.deposits,
                latencies: Histogram::new(),
                calls: AtomicU64::new(0),
                hedges: AtomicU64::new(0),
                won_by_hedge: AtomicU64::new(0),
                refused_by_budget: AtomicU64::new(0),
            }),
        })
    }
}

/// What a [`Hedge`] has done so far.
///
/// # Examples
///
/// ```
/// let s = fusebox::hedge::Hedge::builder().build()?.stats();
/// assert_eq!((s.calls, s.hedges, s.won_by_hedge, s.refused_by_budget), (0, 0, 0, 0));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeStats {
    /// Calls made.
    pub calls: u64,
    /// Extra attempts sent.
    pub hedges: u64,
    /// Calls whose answer came from an extra attempt.
    pub won_by_hedge: u64,
    /// Extra attempts not sent because the budget was spent.
    pub refused_by_budget: u64,
}

impl Hedge {
    /// A builder with the defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = fusebox::hedge::Hedge::builder().build()?;
    /// assert_eq!(h.delay(), fusebox::hedge::Delay::Quantile(0.95));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder {
            delay: Delay::Quantile(0.95),
            max_extra: 1,
            min_samples: 100,
            budget: None,
            deposits: false,
        }
    }

    /// The delay setting.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = fusebox::hedge::Hedge::builder().build()?;
    /// assert!(matches!(h.delay(), fusebox::hedge::Delay::Quantile(_)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn delay(&self) -> Delay {
        self.inner.delay
    }

    /// The most extra attempts per call.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::hedge::Hedge::builder().build()?.max_extra(), 1);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn max_extra(&self) -> u32 {
        self.inner.max_extra
    }

    /// The budget extra attempts spend from, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::hedge::Hedge::builder().build()?.budget().is_none());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.inner.budget.as_ref()
    }

    /// How long a call may go unanswered before a hedge is sent now, or
    /// `None` while a quantile delay has too few samples (no hedging yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::{Delay, Hedge};
    /// use std::time::Duration;
    /// let h = Hedge::builder().delay(Delay::Fixed(Duration::from_millis(5))).build()?;
    /// assert_eq!(h.current_delay(), Some(Duration::from_millis(5)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn current_delay(&self) -> Option<Duration> {
        match self.inner.delay {
            Delay::Fixed(d) => Some(d),
            Delay::Quantile(q) => self.inner.latencies.quantile(q, self.inner.min_samples),
        }
    }

    /// Records a successful attempt's latency, for callers that run the
    /// attempts themselves (a simulator, a custom client) and ask
    /// [`current_delay`](Self::current_delay) when to hedge;
    /// [`call`](Self::call) records its own. Only the attempt that answered
    /// counts (from its own start), as in `call`; the counters of
    /// [`stats`](Self::stats) are `call`'s and do not move.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::{Delay, Hedge};
    /// use std::time::Duration;
    ///
    /// let hedge = Hedge::builder().delay(Delay::Quantile(0.95)).min_samples(20).build()?;
    /// for _ in 0..20 {
    ///     assert_eq!(hedge.current_delay(), None); // too few samples: no hedge yet
    ///     hedge.record(Duration::from_millis(10));
    /// }
    /// let delay = hedge.current_delay().unwrap();
    /// assert!(delay >= Duration::from_millis(10) && delay < Duration::from_millis(13));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn record(&self, latency: Duration) {
        self.inner.latencies.record(latency);
    }

    /// The counters.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::hedge::Hedge::builder().build()?.stats().calls, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn stats(&self) -> HedgeStats {
        let i = &*self.inner;
        HedgeStats {
            calls: i.calls.load(Ordering::Relaxed),
            hedges: i.hedges.load(Ordering::Relaxed),
            won_by_hedge: i.won_by_hedge.load(Ordering::Relaxed),
            refused_by_budget: i.refused_by_budget.load(Ordering::Relaxed),
        }
    }

    /// Runs the futures `f` makes: the first now, another each time the
    /// delay passes without an answer (up to `max_extra`, while the budget
    /// allows), and answers with the first success; the attempts still
    /// running are dropped. An attempt that fails is not replaced; the call
    /// fails with the last error once no attempt is left running.
    ///
    /// # Errors
    ///
    /// The error of the last attempt to fail, when none succeeded.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future drops every attempt in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let hedge = fusebox::hedge::Hedge::builder().build().unwrap();
    /// let r = hedge.call(|| async { Err::<(), _>("refused") }).await;
    /// assert_eq!(r, Err("refused")); // errors are not hedged
    /// # }
    /// ```
    pub async fn call<T, E, F, Fut>(&self, mut f: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let inner = &*self.inner;
        inner.calls.fetch_add(1, Ordering::Relaxed);
        if inner.deposits {
            if let Some(b) = &inner.budget {
                b.deposit();
            }
        }
        let delay = self.current_delay();
        let start = Instant::now();
        let mut first = std::pin::pin!(f());
        let mut first_running = true;
        // Extra attempts are boxed only when sent: no allocation per call.
        let mut extra: Vec<(Instant, Pin<Box<Fut>>)> = Vec::new();
        let mut sent = 0;
        let mut timer = std::pin::pin!(tokio::time::sleep(delay.unwrap_or_default()));
        let mut armed = delay.is_some();
        let mut last_error = None;
        std::future::poll_fn(|cx| {
            if first_running {
                if let Poll::Ready(r) = first.as_mut().poll(cx) {
                    first_running = false;
                    match r {
                        Ok(v) => {
                            inner.latencies.record(start.elapsed());
                            return Poll::Ready(Ok(v));
                        }
                        Err(e) => last_error = Some(e),
                    }
                }
            }
            let mut i = 0;
            while let Some((began, attempt)) = extra.get_mut(i) {
                match attempt.as_mut().poll(cx) {
                    Poll::Pending => i += 1,
                    Poll::Ready(r) => {
                        let began = *began;
                        drop(extra.swap_remove(i));
                        match r {
                            Ok(v) => {
                                inner.latencies.record(began.elapsed());
                                inner.won_by_hedge.fetch_add(1, Ordering::Relaxed);
                                return Poll::Ready(Ok(v));
                            }
                            Err(e) => last_error = Some(e),
                        }
                    }
                }
            }
            // A hedge goes out when the delay passes while an attempt is
            // still running (errors are not hedged).
            let running = first_running || !extra.is_empty();
            if running && armed && timer.as_mut().poll(cx).is_ready() {
                armed = false;
                let allowed = match &inner.budget {
                    None => true,
                    Some(b) => b.try_withdraw(),
                };
                if !allowed {
                    inner.refused_by_budget.fetch_add(1, Ordering::Relaxed);
                } else {
                    sent += 1;
                    inner.hedges.fetch_add(1, Ordering::Relaxed);
                    extra.push((Instant::now(), Box::pin(f())));
                    if sent < inner.max_extra {
                        if let Some(d) = delay {
                            timer.as_mut().reset(Instant::now() + d);
                            armed = true;
                        }
                    }
                    // Poll the new attempt (and the timer) now, so that
                    // they register their wake-ups.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
            }
            match (running, last_error.take()) {
                (false, Some(e)) => Poll::Ready(Err(e)),
                (_, e) => {
                    last_error = e;
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl fmt::Debug for Hedge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedge")
            .field("delay", &self.inner.delay)
            .field("max_extra", &self.inner.max_extra)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// The hedge's figures, for observers (`Metrics::track_policy` exports
/// them as `fusebox_hedge_{figure}`): the counters `calls`, `hedges`,
/// `won_by_hedge` and `refused_by_budget`, and the gauge `delay_us`, the
/// hedge delay in force in microseconds (0 while a quantile delay waits for
/// samples: no hedging yet).
///
/// # Examples
///
/// ```
/// use fusebox::hedge::{Delay, Hedge};
/// use fusebox::policy::Inspect;
/// let h = Hedge::builder().delay(Delay::Fixed(std::time::Duration::from_millis(20))).build()?;
/// let delay = h.figures().into_iter().find(|f| f.name == "delay_us").unwrap();
/// assert_eq!((h.kind(), delay.value), ("hedge", 20_000));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl crate::policy::Inspect for Hedge {
    fn kind(&self) -> &'static str {
        "hedge"
    }

    fn mode(&self) -> crate::policy::Mode {
        crate::policy::Mode::Enforce
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let s = self.stats();
        let delay = self
            .current_delay()
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        vec![
            Figure::counter("calls", "Calls made", s.calls),
            Figure::counter("hedges", "Extra attempts sent", s.hedges),
            Figure::counter(
                "won_by_hedge",
                "Calls answered by an extra attempt",
                s.won_by_hedge,
            ),
            Figure::counter(
                "refused_by_budget",
                "Extra attempts not sent because the budget was spent",
                s.refused_by_budget,
            ),
            Figure::gauge(
                "delay_us",
                "The hedge delay in force, in microseconds (0: not hedging yet)",
                delay,
            ),
        ]
    }
}
