//! What a rate limiter counts, and the one place its [`Mode`] acts on a
//! decision (shared by the direct and the keyed limiter).

use super::RateLimited;
use crate::sync::{AtomicU64, Ordering};
use crate::Mode;
use std::time::Duration;

/// Calls admitted, refused, and let through by shadow mode.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    admitted: AtomicU64,
    refused: AtomicU64,
    shadowed: AtomicU64,
}

/// What the limiter's quota said about one call.
pub(crate) enum Verdict {
    /// Within the rate: a cell was taken.
    Conforms,
    /// Over the rate: the next call would conform after this long.
    Exceeds(Duration),
}

impl Counters {
    /// Applies `mode` to the verdict `check` gives (not asked at all when
    /// the mode is off), counts the outcome, and says whether the call may
    /// run.
    #[inline]
    pub(crate) fn decide(
        &self,
        mode: Mode,
        check: impl FnOnce() -> Verdict,
    ) -> Result<(), RateLimited> {
        if mode == Mode::Off {
            return Ok(());
        }
        // Relaxed (every counter): read only by snapshots.
        match (check(), mode) {
            (Verdict::Conforms, _) => {
                self.admitted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            (Verdict::Exceeds(_), Mode::Shadow) => {
                self.shadowed.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            (Verdict::Exceeds(wait), _) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(RateLimited::new(wait))
            }
        }
    }

    pub(crate) fn snapshot(&self, mode: Mode) -> RateLimitSnapshot {
        // Relaxed: a best-effort reading for monitoring.
        RateLimitSnapshot {
            mode,
            admitted: self.admitted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            shadowed: self.shadowed.load(Ordering::Relaxed),
        }
    }
}

/// A reading of a rate limiter's counters, from
/// [`RateLimiter::snapshot`](super::RateLimiter::snapshot).
///
/// Counted since the limiter was built, across reconfigurations; nothing is
/// counted while the mode is [`Mode::Off`].
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// use fusebox::Mode;
///
/// let limiter = RateLimiter::builder()
///     .config(RateLimitConfig::per_second(1).mode(Mode::Shadow))
///     .clock(fusebox::ManualClock::new())
///     .build()?;
/// assert!(limiter.try_acquire().is_ok());
/// assert!(limiter.try_acquire().is_ok()); // over the rate, but shadow lets it run
/// let s = limiter.snapshot();
/// assert_eq!((s.admitted, s.refused, s.shadowed), (1, 0, 1));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimitSnapshot {
    /// The mode in force when the snapshot was taken.
    pub mode: Mode,
    /// Calls within the rate (each took a cell).
    pub admitted: u64,
    /// Calls refused with [`RateLimited`] (mode enforce).
    pub refused: u64,
    /// Calls over the rate that ran anyway because the mode was shadow:
    /// what enforcing would have refused.
    pub shadowed: u64,
}

impl RateLimitSnapshot {
    /// The snapshot as figures: `admitted`, `refused` and `shadowed`.
    pub(super) fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        vec![
            Figure::counter("admitted", "Calls within the rate", self.admitted),
            Figure::counter("refused", "Calls refused by a rate limiter", self.refused),
            Figure::counter(
                "shadowed",
                "Calls over the rate that ran anyway (shadow mode)",
                self.shadowed,
            ),
        ]
    }
}
