//! A fixed-size latency histogram: log-scale buckets (four per power of
//! two, so a quantile is known within 25 %), in two windows of
//! [`WINDOW`] samples that take turns, so old latencies age out. Recording
//! is two relaxed atomic adds; nothing is allocated after creation.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per window: four per power of two of microseconds, up to 2^40 us.
const BUCKETS: usize = 4 * 41;
/// Samples per window: the quantile reads the last one to two windows.
pub(super) const WINDOW: u64 = 1024;

pub(super) struct Histogram {
    windows: [[AtomicU32; BUCKETS]; 2],
    samples: AtomicU64,
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
        }
        self.windows[w][bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The latency below which a fraction `q` of the recent samples lie
    /// (the upper end of its bucket), once `min_samples` were recorded.
    pub(super) fn quantile(&self, q: f64, min_samples: u64) -> Option<Duration> {
        if self.samples.load(Ordering::Relaxed) < min_samples.max(1) {
            return None;
        }
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
                return Some(upper(b));
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
}
