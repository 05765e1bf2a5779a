//! Time, as fusebox sees it: monotonic nanoseconds from a fixed origin.
//!
//! Every timing decision in fusebox (when an open breaker may probe, which
//! bucket a call falls in, whether a call was slow) reads time through a
//! [`Clock`]. Production code uses [`MonotonicClock`], which never jumps when
//! the wall clock is changed (seed 003's point). Tests and simulations use
//! [`ManualClock`] and move time by hand, so no test ever has to sleep.

use crate::sync::{Arc, AtomicU64, Ordering};
use std::fmt;
use std::time::Duration;
#[cfg(doc)]
use std::time::Instant;

/// A source of monotonic time.
///
/// `now()` returns the time elapsed since an origin fixed for the clock's whole
/// life. It should never go backwards. If it does (a clock set back, a
/// broken implementation), a breaker treats the jump as no time passing: its
/// own time carries on from the latest reading it had seen, shifted by the
/// size of the jump from then on, so open periods, windows and `retry_after`
/// keep their lengths. Call durations saturate at zero. Nothing panics.
///
/// # Examples
///
/// A clock that reads a shared counter:
///
/// ```
/// use fusebox::Clock;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// #[derive(Default)]
/// struct Ticks(AtomicU64);
///
/// impl Clock for Ticks {
///     fn now(&self) -> Duration {
///         Duration::from_millis(self.0.load(Ordering::Relaxed))
///     }
/// }
///
/// let clock = Ticks::default();
/// clock.0.store(1500, Ordering::Relaxed);
/// assert_eq!(clock.now(), Duration::from_millis(1500));
/// ```
pub trait Clock: Send + Sync + 'static {
    /// Time elapsed since this clock's origin.
    fn now(&self) -> Duration;

    /// [`now`](Clock::now) in whole nanoseconds, saturating at `u64::MAX`
    /// (about 584 years). The breaker reads time through this; a clock that
    /// counts nanoseconds anyway overrides it to skip the round trip
    /// through [`Duration`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.set(Duration::from_micros(1500));
    /// assert_eq!(clock.now_nanos(), 1_500_000);
    /// ```
    fn now_nanos(&self) -> u64 {
        nanos(self.now())
    }
}

/// The default clock: monotonic time from one origin per process.
///
/// Immune to wall-clock changes (NTP steps, manual changes, leap seconds).
///
/// # Source and precision
///
/// With the feature `quanta` (on by default), time comes from the
/// [`quanta`] crate (the clock of metrics-rs and moka): on x86-64 with an
/// invariant TSC (`constant_tsc` + `nonstop_tsc`, and `rdtscp`) a reading
/// is one `rdtsc` scaled to nanoseconds by a multiply and a shift,
/// calibrated once per process against the OS monotonic clock. The
/// calibration (usually 10-20 ms, never more than 200 ms) runs on a thread
/// of its own, started by the process's first reading; until it is done
/// (see [`MonotonicClock::calibrated`]) readings come from [`Instant`], and
/// the TSC's readings carry on from the last of them, so no call waits for
/// it. Should that thread not start, every reading comes from [`Instant`].
/// Precision is a few nanoseconds; the calibrated rate may drift from the
/// OS clock by parts per million, which no breaker setting can see. Where
/// the TSC cannot be trusted (no invariant TSC, which is also what a
/// hypervisor that does not pass it through reports), quanta reads the OS
/// monotonic clock instead: the same source and cost as [`Instant`]. On
/// aarch64 it reads the system counter. Like [`Instant`], it does not count
/// time the machine spends suspended.
///
/// Without the feature (`default-features = false`), time is
/// [`Instant::elapsed`] from a process-wide origin: `clock_gettime` through
/// the vDSO on Linux, 20-40 ns a reading on virtual machines.
///
/// With the TSC, readings taken on different cores can disagree by a
/// fraction of a microsecond (up to 0.6 µs measured on a 2-vCPU KVM guest):
/// a reading taken after seeing another thread's can be that much earlier.
/// `tests/clock.rs` bounds the step at 1 ms, the size a breaker treats as a
/// clock jump; a breaker absorbs smaller steps (a duration saturates at
/// zero, a bucket or an open period is off by that much) and shifts its own
/// time past larger ones (see [`Clock`]). std's [`Instant`] (the feature
/// off) is monotonic system-wide.
///
/// A breaker on this clock times its calls (for the slow-call rule and the
/// listeners' [`CallEvent::duration`](crate::CallEvent::duration)) on the
/// source's raw counter: with `quanta`, two `rdtsc` readings scaled once,
/// without the breaker's guard against a clock running backwards (a
/// duration saturates at zero instead). Every other decision reads the
/// breaker's guarded time.
///
/// [`quanta`]: https://docs.rs/quanta
///
/// # Examples
///
/// ```
/// use fusebox::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock;
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MonotonicClock;

impl MonotonicClock {
    /// Whether readings come from the time-stamp counter's calibrated
    /// source yet (feature `quanta`, on by default): `false` from the
    /// process's start until the calibration that the first reading starts
    /// is done (10-200 ms, on a thread of its own; readings meanwhile come
    /// from std's `Instant`), `true` after. Always `true` without the
    /// feature. For a benchmark that wants to measure the steady state.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, MonotonicClock};
    /// use std::time::Duration;
    /// let _ = MonotonicClock.now(); // starts the calibration
    /// for _ in 0..200 {
    ///     if MonotonicClock::calibrated() {
    ///         break;
    ///     }
    ///     std::thread::sleep(Duration::from_millis(10));
    /// }
    /// ```
    pub fn calibrated() -> bool {
        source::calibrated()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now_nanos())
    }

    #[inline]
    fn now_nanos(&self) -> u64 {
        source::now_nanos()
    }
}

/// The time-stamp counter through quanta, calibrated off the call path: the
/// first reading starts the calibration on a thread of its own and every
/// reading until it is done comes from std's `Instant` (the [`os`]
/// source, whose origin is the process's first reading). The counter's
/// readings are then laid on the same line: std's reading at the moment
/// of the switch plus the counter's time since, so the breaker's time runs
/// on across the switch (off by the time between the two readings taken
/// for it, nanoseconds).
#[cfg(all(feature = "quanta", not(loom)))]
mod source {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    struct Tsc {
        clock: quanta::Clock,
        /// The counter's raw reading at the switch ...
        raw: u64,
        /// ... and std's reading taken right after it.
        at: u64,
        /// Nanoseconds per 2^[`SCALE_SHIFT`] ticks, as quanta's calibration
        /// scales them: a duration is scaled with one multiply and one
        /// shift (quanta's own scaling tests the delta's sign and its clock
        /// type first). Within one part in 2^37 of quanta's scaling (a
        /// counter of at most 8 GHz: at least 2^37 here); exact when quanta
        /// reads the OS clock (its ticks are then nanoseconds).
        per_ticks: u64,
    }

    /// See [`Tsc::per_ticks`].
    const SCALE_SHIFT: u32 = 40;

    impl Tsc {
        /// `ticks` of the counter in nanoseconds.
        #[inline(always)]
        fn scale(&self, ticks: u64) -> u64 {
            // Cannot overflow the u128; the result fits a u64 for the
            // first centuries of uptime.
            ((u128::from(ticks) * u128::from(self.per_ticks)) >> SCALE_SHIFT) as u64
        }
    }

    static TSC: OnceLock<Tsc> = OnceLock::new();

    /// Bit of a [`raw`] reading taken before the switch: the rest is a
    /// reading of std's clock, not of the counter (whose readings reach
    /// bit 63 after a century of uptime at 3 GHz).
    const STD: u64 = 1 << 63;

    /// std's reading; the first one starts the calibration.
    #[cold]
    #[inline(never)]
    fn before_switch() -> u64 {
        static STARTED: AtomicBool = AtomicBool::new(false);
        let now = super::os::now_nanos();
        // Relaxed: only one thread may spawn; nothing else rides on it.
        if !STARTED.swap(true, Ordering::Relaxed) {
            // Should the thread not start (a sandbox without threads),
            // every reading stays on std's clock.
            let _ = std::thread::Builder::new()
                .name("fusebox-clock".into())
                .spawn(|| {
                    // Blocks for the calibration (10-200 ms) when there is
                    // an invariant TSC; returns at once otherwise (quanta
                    // reads the OS clock then).
                    let clock = quanta::Clock::new();
                    let per_ticks = clock.delta_as_nanos(0, 1 << SCALE_SHIFT);
                    let raw = clock.raw();
                    let at = super::os::now_nanos();
                    let _ = TSC.set(Tsc {
                        clock,
                        raw,
                        at,
                        per_ticks,
                    });
                });
        }
        now
    }

    #[inline]
    pub(super) fn now_nanos() -> u64 {
        match TSC.get() {
            Some(t) => {
                // The counter first: nothing to keep across its call but `t`.
                let now = t.clock.raw();
                // Cannot overflow: both are nanoseconds of this process's life.
                // Saturating: a core whose counter is behind the one that
                // took `raw` reads the switch's time.
                t.at + t.scale(now.saturating_sub(t.raw))
            }
            None => before_switch(),
        }
    }

    /// The raw counter (TSC ticks), unscaled; before the switch, std's
    /// reading tagged [`STD`].
    #[inline]
    pub(crate) fn raw() -> u64 {
        match TSC.get() {
            Some(t) => t.clock.raw(),
            None => before_switch() | STD,
        }
    }

    /// Nanoseconds from the [`raw`] reading `start` to now, 0 if now is
    /// not later.
    #[inline]
    pub(crate) fn since(start: u64) -> u64 {
        match TSC.get() {
            Some(t) if start & STD == 0 => t.scale(t.clock.raw().saturating_sub(start)),
            _ => now_nanos().saturating_sub(start & !STD),
        }
    }

    /// Whether readings come from the counter yet (the calibration is done).
    pub(super) fn calibrated() -> bool {
        TSC.get().is_some()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_duration_is_scaled_as_quanta_scales_it() {
            let clock = quanta::Clock::new();
            let t = Tsc {
                per_ticks: clock.delta_as_nanos(0, 1 << SCALE_SHIFT),
                clock,
                raw: 0,
                at: 0,
            };
            for ticks in [
                0,
                1,
                3,
                1_000,
                3_000_000,
                1 << 32,
                3_600_000_000_000,
                1 << 50,
            ] {
                let ours = t.scale(ticks);
                let quanta = t.clock.delta_as_nanos(0, ticks);
                // One part in 2^37, and the two roundings.
                let bound = quanta / (1 << 37) + 2;
                assert!(
                    ours.abs_diff(quanta) <= bound,
                    "{ticks} ticks: {ours} ns, quanta says {quanta} ns"
                );
            }
        }
    }
}

/// std's `Instant`, measured from one origin per process: the default
/// clock's source without `quanta`, and with it until the counter is
/// calibrated.
mod os {
    use std::sync::OnceLock;
    use std::time::Instant;

    pub(super) fn now_nanos() -> u64 {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        super::nanos(ORIGIN.get_or_init(Instant::now).elapsed())
    }
}

/// std's `Instant` alone (see [`os`]).
#[cfg(not(all(feature = "quanta", not(loom))))]
mod source {
    pub(super) use super::os::now_nanos;

    /// [`now_nanos`]: std's clock has no cheaper reading.
    #[inline]
    pub(crate) fn raw() -> u64 {
        now_nanos()
    }

    /// Nanoseconds from the [`raw`] reading `start` to now, 0 if now is
    /// not later.
    #[inline]
    pub(crate) fn since(start: u64) -> u64 {
        now_nanos().saturating_sub(start)
    }

    /// Nothing to calibrate.
    pub(super) fn calibrated() -> bool {
        true
    }
}

/// The default clock's readings for durations, where only differences
/// matter: with quanta, the raw counter, scaled once per duration rather
/// than once per reading, and without the breaker's guard against a clock
/// running backwards (a duration saturates at zero instead).
pub(crate) use source::{raw as raw_now, since as raw_since};

/// Measures one duration on a clock: the default clock's raw counter
/// (see [`raw_now`]) when `clock` is `None`, else that clock's time.
#[derive(Clone, Copy)]
pub(crate) enum Stopwatch<'a> {
    /// Started at this raw reading of the default clock.
    Raw(u64),
    /// Started at this reading of a custom clock (nanoseconds).
    On(&'a dyn Clock, u64),
}

impl<'a> Stopwatch<'a> {
    /// Starts now on `clock` (`None`: the default clock).
    #[inline]
    pub(crate) fn start(clock: Option<&'a dyn Clock>) -> Self {
        match clock {
            None => Stopwatch::Raw(raw_now()),
            Some(c) => Stopwatch::On(c, c.now_nanos()),
        }
    }

    /// Whether more than `limit` has passed since the start.
    #[inline]
    pub(crate) fn exceeded(&self, limit: Duration) -> bool {
        let elapsed = match *self {
            Stopwatch::Raw(start) => raw_since(start),
            Stopwatch::On(c, start) => c.now_nanos().saturating_sub(start),
        };
        elapsed > nanos(limit)
    }
}

/// A clock that only moves when told to.
///
/// Clones share one time: advance any of them and all see it, from any thread.
/// Starts at zero.
///
/// # Examples
///
/// ```
/// use fusebox::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let seen_by_breaker = clock.clone();
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(seen_by_breaker.now(), Duration::from_millis(250));
/// clock.set(Duration::from_secs(2));
/// assert_eq!(seen_by_breaker.now(), Duration::from_secs(2));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A new clock reading zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves time forward by `by` (saturating at about 584 years).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_secs(1));
    /// clock.advance(Duration::from_millis(500));
    /// assert_eq!(clock.now(), Duration::from_millis(1500));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = nanos(by);
        // Relaxed: the clock is a single value; callers that need ordering with
        // other memory get it from their own synchronisation.
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the time to `to`. Setting it backwards breaks the [`Clock`]
    /// promise; a breaker treats the jump as no time passing (see
    /// [`Clock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.set(Duration::from_millis(743));
    /// assert_eq!(clock.now(), Duration::from_millis(743));
    /// ```
    pub fn set(&self, to: Duration) {
        // Relaxed: see `advance`.
        self.nanos.store(nanos(to), Ordering::Relaxed);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.now()).finish()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now_nanos())
    }

    fn now_nanos(&self) -> u64 {
        // Relaxed: see `advance`.
        self.nanos.load(Ordering::Relaxed)
    }
}

/// Nanoseconds in `d`, saturating at `u64::MAX` (about 584 years).
#[inline]
pub(crate) fn nanos(d: Duration) -> u64 {
    // In u64 arithmetic (no u128 product): this is on every clock reading.
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

#[cfg(all(test, feature = "quanta", not(loom)))]
mod switch_tests {
    use super::{raw_now, raw_since, source, MonotonicClock};
    use std::time::Duration;

    #[test]
    fn readings_run_on_across_the_switch_to_the_counter() {
        let first = source::now_nanos(); // starts the calibration, if no test did
        let start = raw_now();
        let mut last = first;
        for _ in 0..400 {
            if MonotonicClock::calibrated() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            let now = source::now_nanos();
            assert!(now >= last, "{now} < {last} before the switch");
            last = now;
        }
        assert!(MonotonicClock::calibrated(), "calibrated within 2 s");
        let after = source::now_nanos();
        // At most the cores' disagreement (see `MonotonicClock`) backwards.
        assert!(after + 1_000_000 >= last, "{after} ran back from {last}");
        std::thread::sleep(Duration::from_millis(20));
        // A duration started on either source is measured across the switch.
        let took = raw_since(start);
        assert!(took >= 20_000_000, "{took} ns cover the 20 ms slept");
        assert!(source::now_nanos() - first >= took - 1_000_000);
    }
}
