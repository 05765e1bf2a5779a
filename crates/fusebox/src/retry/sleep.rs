//! Sleeping between attempts, injectable so tests never wait.

use crate::clock::ManualClock;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Blocks the calling thread for a while (sync retries).
///
/// Implemented for [`ThreadSleep`] (the default), [`ManualSleep`] (tests) and
/// any `Fn(Duration) + Send + Sync` closure.
///
/// # Examples
///
/// ```
/// use fusebox::retry::Sleep;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// let slept = AtomicU64::new(0);
/// let record = |d: Duration| { slept.fetch_add(d.as_millis() as u64, Ordering::Relaxed); };
/// record.sleep(Duration::from_millis(30));
/// assert_eq!(slept.load(Ordering::Relaxed), 30);
/// ```
pub trait Sleep: Send + Sync {
    /// Waits `d`.
    fn sleep(&self, d: Duration);
}

impl<F: Fn(Duration) + Send + Sync> Sleep for F {
    fn sleep(&self, d: Duration) {
        self(d)
    }
}

/// Sleeps with [`std::thread::sleep`].
///
/// # Examples
///
/// ```
/// use fusebox::retry::{Sleep, ThreadSleep};
/// ThreadSleep.sleep(std::time::Duration::from_micros(1));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSleep;

impl Sleep for ThreadSleep {
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A sleeper for tests and simulations: "sleeping" advances a
/// [`ManualClock`] at once and records the delay. Works for sync and async
/// retries.
///
/// Clones share the record.
///
/// # Examples
///
/// ```
/// use fusebox::retry::{ManualSleep, Sleep};
/// use fusebox::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let sleeper = ManualSleep::new(clock.clone());
/// sleeper.sleep(Duration::from_secs(3));
/// assert_eq!(clock.now(), Duration::from_secs(3));
/// assert_eq!(sleeper.sleeps(), vec![Duration::from_secs(3)]);
/// ```
#[derive(Clone)]
pub struct ManualSleep {
    clock: ManualClock,
    log: Arc<Mutex<Vec<Duration>>>,
}

impl ManualSleep {
    /// A sleeper that advances `clock`.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::retry::ManualSleep::new(fusebox::ManualClock::new());
    /// assert!(s.sleeps().is_empty());
    /// ```
    pub fn new(clock: ManualClock) -> Self {
        ManualSleep {
            clock,
            log: Arc::default(),
        }
    }

    /// Every delay slept so far, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{ManualSleep, Sleep};
    /// let s = fusebox::retry::ManualSleep::new(fusebox::ManualClock::new());
    /// s.sleep(std::time::Duration::from_millis(5));
    /// assert_eq!(s.sleeps().len(), 1);
    /// ```
    pub fn sleeps(&self) -> Vec<Duration> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, d: Duration) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(d);
        self.clock.advance(d);
    }
}

impl fmt::Debug for ManualSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualSleep")
            .field("clock", &self.clock)
            .field("sleeps", &self.sleeps().len())
            .finish()
    }
}

impl Sleep for ManualSleep {
    fn sleep(&self, d: Duration) {
        self.record(d);
    }
}

/// Waits asynchronously for a while (async retries). Runtime-agnostic: bring
/// your runtime's timer, or use `TokioSleep` (feature `tokio`).
///
/// # Examples
///
/// ```
/// use fusebox::retry::{AsyncSleep, ManualSleep};
/// use fusebox::{Clock, ManualClock};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = ManualClock::new();
/// let s = ManualSleep::new(clock.clone());
/// AsyncSleep::sleep(&s, Duration::from_secs(1)).await;
/// assert_eq!(clock.now(), Duration::from_secs(1));
/// # }
/// ```
pub trait AsyncSleep: Send + Sync {
    /// The future `sleep` returns.
    type Future: Future<Output = ()> + Send;
    /// A future that completes after `d`.
    fn sleep(&self, d: Duration) -> Self::Future;
}

impl AsyncSleep for ManualSleep {
    type Future = std::future::Ready<()>;
    fn sleep(&self, d: Duration) -> Self::Future {
        self.record(d);
        std::future::ready(())
    }
}

/// Sleeps with `tokio::time::sleep` (feature `tokio`): follows tokio's paused
/// time in tests.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use fusebox::retry::{AsyncSleep, TokioSleep};
/// use std::time::Duration;
/// let t0 = tokio::time::Instant::now();
/// TokioSleep.sleep(Duration::from_secs(60)).await; // instant with paused time
/// assert_eq!(t0.elapsed(), Duration::from_secs(60));
/// # }
/// ```
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleep;

#[cfg(feature = "tokio")]
impl AsyncSleep for TokioSleep {
    type Future = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Future {
        tokio::time::sleep(d)
    }
}
