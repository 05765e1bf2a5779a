//! A fixed-size latency histogram: log-scale buckets (four per power of
//! two, so a quantile is known within 25 %), in two windows of
//! [`WINDOW`] samples that take turns, so old latencies age out. Recording
//! is two relaxed atomic adds; nothing is allocated after creation. A
//! quantile read per call ([`Histogram::cached_quantile`]) is worked out
//! once per [`REFRESH`] samples, not on every read.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per window: four per power of two of microseconds, up to 2^40 us.
const BUCKETS: usize = 4 * 41;
/// Samples per window: the quantile reads the last one to two windows.
pub(super) const WINDOW: u64 = 1024;
/// Samples between two workings-out of the cached quantile (and it is
/// worked out anew when a window starts over): a sixteenth of a window.
pub(super) const REFRESH: u64 = WINDOW / 16;

pub(super) struct Histogram {
    windows: [[AtomicU32; BUCKETS]; 2],
    samples: AtomicU64,
    /// The round (samples over [`REFRESH`]) of which [`cached`](Self::cached)
    /// is the quantile, plus one; 0 when it must be worked out (before the
    /// first time, after a window started over).
    cached_round: AtomicU64,
    /// The quantile of [`cached_quantile`](Self::cached_quantile) as last
    /// worked out, in nanoseconds.
    cached: AtomicU64,
}

/// The bucket of `us` microseconds: its power of two and the two bits
/// below the leading one.
fn bucket(us: u64) -> usize {
    let v = us.saturating_add(1).min(1 << 40);
    let e = 63 - v.leading_zeros() as usize;
    let m = if e >= 2 {
        (v >> (e - 2)) & 3
    } else {
        (v << (2 - e)) & 3
    } as usize;
    (e * 4 + m).min(BUCKETS - 1)
}

/// The largest latency bucket `b` holds.
fn upper(b: usize) -> Duration {
    let (e, m) = (b / 4, (b % 4) as u64);
    let v = ((5 + m) << e) >> 2;
    Duration::from_micros(v.saturating_sub(1))
}

impl Histogram {
    pub(super) fn new() -> Self {
        Histogram {
            windows: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU32::new(0))),
            samples: AtomicU64::new(0),
            cached_round: AtomicU64::new(0),
            cached: AtomicU64::new(0),
        }
    }

    pub(super) fn record(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let n = self.samples.fetch_add(1, Ordering::Relaxed);
        let w = ((n / WINDOW) % 2) as usize;
        if n % WINDOW == 0 && n > 0 {
            // The older window starts over (a racing record may land in it
            // just before: an estimate, not an account).
            for cell in &self.windows[w] {
                cell.store(0, Ordering::Relaxed);
            }
            self.cached_round.store(0, Ordering::Relaxed); // worked out anew
        }
        self.windows[w][bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The latency below which a fraction `q` of the recent samples lie
    /// (the upper end of its bucket), once `min_samples` were recorded.
    #[cfg(test)]
    pub(super) fn quantile(&self, q: f64, min_samples: u64) -> Option<Duration> {
        if self.samples.load(Ordering::Relaxed) < min_samples.max(1) {
            return None;
        }
        self.quantile_bucket(q).map(upper)
    }

    /// [`quantile`](Self::quantile), worked out again only when the samples
    /// reached a new multiple of [`REFRESH`] since it last was, or a window
    /// started over (and at the first read after `min_samples`): it lags
    /// the samples by fewer than [`REFRESH`]. For one `q` per histogram
    /// (the hedge's).
    #[inline]
    pub(super) fn cached_quantile(&self, q: f64, min_samples: u64) -> Option<Duration> {
        let round = self.samples.load(Ordering::Relaxed) / REFRESH + 1;
        // Acquire: with the round, its quantile (or a later one, as good:
        // any is a quantile worked out after `min_samples`).
        if self.cached_round.load(Ordering::Acquire) == round {
            return Some(Duration::from_nanos(self.cached.load(Ordering::Relaxed)));
        }
        self.work_out(q, min_samples)
    }

    #[cold]
    #[inline(never)]
    fn work_out(&self, q: f64, min_samples: u64) -> Option<Duration> {
        let n = self.samples.load(Ordering::Relaxed);
        if n < min_samples.max(1) {
            return None;
        }
        let quantile = upper(self.quantile_bucket(q)?);
        self.cached
            .store(crate::clock::nanos(quantile), Ordering::Relaxed);
        self.cached_round.store(n / REFRESH + 1, Ordering::Release);
        Some(quantile)
    }

    /// The bucket in which the quantile `q` of the recent samples lies.
    fn quantile_bucket(&self, q: f64) -> Option<usize> {
        let count = |b: usize| {
            u64::from(self.windows[0][b].load(Ordering::Relaxed))
                + u64::from(self.windows[1][b].load(Ordering::Relaxed))
        };
        let total: u64 = (0..BUCKETS).map(count).sum();
        let target = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for b in 0..BUCKETS {
            seen += count(b);
            if seen >= target {
                return Some(b);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_its_values_within_a_quarter() {
        for us in [0u64, 1, 2, 3, 7, 10, 99, 1_000, 12_345, 1_000_000] {
            let up = upper(bucket(us)).as_micros() as u64;
            assert!(up >= us, "{us}: {up}");
            assert!(up as f64 <= (us as f64 + 1.0) * 1.25 + 1.0, "{us}: {up}");
        }
    }

    #[test]
    fn quantiles_follow_the_samples_and_old_windows_age_out() {
        let h = Histogram::new();
        assert_eq!(h.quantile(0.5, 1), None);
        for i in 0..100u64 {
            h.record(Duration::from_millis(if i < 95 { 10 } else { 1_000 }));
        }
        let p50 = h.quantile(0.5, 100).unwrap();
        assert!(
            p50 >= Duration::from_millis(10) && p50 < Duration::from_millis(13),
            "{p50:?}"
        );
        let p99 = h.quantile(0.99, 100).unwrap();
        assert!(p99 >= Duration::from_millis(1_000), "{p99:?}");
        assert_eq!(h.quantile(0.5, 101), None, "too few samples");
        // Three windows of 50 ms: the 10 ms samples are gone.
        for _ in 0..3 * WINDOW {
            h.record(Duration::from_millis(50));
        }
        let p01 = h.quantile(0.01, 1).unwrap();
        assert!(p01 >= Duration::from_millis(50), "{p01:?}");
    }

    #[test]
    fn the_cached_quantile_lags_by_fewer_than_refresh_samples() {
        let h = Histogram::new();
        let ms = Duration::from_millis;
        for _ in 0..99 {
            h.record(ms(10));
        }
        assert_eq!(h.cached_quantile(0.5, 100), None, "before min_samples");
        h.record(ms(10));
        let p50 = h.cached_quantile(0.5, 100).unwrap();
        assert_eq!(Some(p50), h.quantile(0.5, 100), "at once at min_samples");
        // The median moves to 1 s; the cache follows within REFRESH samples.
        let mut moved_after = None;
        for i in 1..=200u64 {
            h.record(ms(1_000));
            let cached = h.cached_quantile(0.5, 100).unwrap();
            if cached == h.quantile(0.5, 100).unwrap() && cached >= ms(1_000) {
                moved_after.get_or_insert(i);
            }
            if i > 100 + REFRESH {
                assert!(cached >= ms(1_000), "{i}: {cached:?}");
            }
        }
        assert!(moved_after.unwrap() <= 100 + REFRESH, "{moved_after:?}");
        // A window starting over is seen by the next read.
        let h = Histogram::new();
        for i in 0..WINDOW * 2 {
            h.record(ms(if i < WINDOW { 1_000 } else { 10 }));
        }
        assert!(h.cached_quantile(0.9, 1).unwrap() >= ms(1_000));
        h.record(ms(10)); // the window of 1 s starts over
        assert!(h.cached_quantile(0.9, 1).unwrap() < ms(13));
    }
}
