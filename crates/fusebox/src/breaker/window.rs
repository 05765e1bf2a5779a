//! Sliding windows of call outcomes: the last N calls (a ring) or the last T of
//! time (buckets). Both are lock-free and O(1) per call: they keep running
//! totals, adjusted by exactly what each record adds and what it pushes out.

use crate::sync::{stripe, AtomicI64, AtomicU64, AtomicU8, Ordering, Padded, STRIPES};

/// Totals of a window at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) calls: u64,
    pub(crate) failures: u64,
    pub(crate) slow: u64,
}

impl Totals {
    #[inline]
    pub(crate) fn failure_rate(&self) -> f64 {
        rate(self.failures, self.calls)
    }
    #[inline]
    pub(crate) fn slow_rate(&self) -> f64 {
        rate(self.slow, self.calls)
    }
}

#[inline]
fn rate(part: u64, calls: u64) -> f64 {
    if calls == 0 {
        0.0
    } else {
        (part.min(calls) as f64) / (calls as f64)
    }
}

/// Running totals, signed so that concurrent adjustments arriving in any order
/// never wrap; readers clamp at zero.
#[derive(Debug)]
struct Sums {
    calls: AtomicI64,
    failures: AtomicI64,
    slow: AtomicI64,
}

impl Sums {
    fn new() -> Self {
        Sums {
            calls: AtomicI64::new(0),
            failures: AtomicI64::new(0),
            slow: AtomicI64::new(0),
        }
    }
    // Relaxed everywhere in Sums: the totals are statistics; a decision taken on
    // them (a trip) is re-validated under the breaker's lock, and no other
    // memory is published through them.
    fn add(&self, calls: i64, failures: i64, slow: i64) {
        if calls != 0 {
            self.calls.fetch_add(calls, Ordering::Relaxed);
        }
        if failures != 0 {
            self.failures.fetch_add(failures, Ordering::Relaxed);
        }
        if slow != 0 {
            self.slow.fetch_add(slow, Ordering::Relaxed);
        }
    }
    fn read(&self) -> Totals {
        let clamp = |v: i64| u64::try_from(v).unwrap_or(0);
        Totals {
            calls: clamp(self.calls.load(Ordering::Relaxed)),
            failures: clamp(self.failures.load(Ordering::Relaxed)),
            slow: clamp(self.slow.load(Ordering::Relaxed)),
        }
    }
    fn clear(&self) {
        self.calls.store(0, Ordering::Relaxed);
        self.failures.store(0, Ordering::Relaxed);
        self.slow.store(0, Ordering::Relaxed);
    }
}

const CALL: u8 = 1;
const FAIL: u8 = 2;
const SLOW: u8 = 4;

fn bits(failed: bool, slow: bool) -> u8 {
    CALL | if failed { FAIL } else { 0 } | if slow { SLOW } else { 0 }
}

fn has(b: u8, bit: u8) -> i64 {
    i64::from(b & bit != 0)
}

/// The last `n` calls. Each record takes the next slot of a ring and swaps its
/// outcome in; the totals move by the difference between the new outcome and
/// the one it replaced, so old calls drop out exactly.
#[derive(Debug)]
pub(crate) struct CountWindow {
    slots: Box<[AtomicU8]>,
    next: AtomicU64,
    sums: Sums,
}

impl CountWindow {
    /// What [`new`](Self::new)`(n)` allocates beyond the struct itself:
    /// one byte per slot.
    pub(crate) const fn heap_bytes(n: usize) -> usize {
        n.saturating_mul(size_of::<AtomicU8>())
    }

    pub(crate) fn new(n: usize) -> Self {
        CountWindow {
            slots: (0..n).map(|_| AtomicU8::new(0)).collect(),
            next: AtomicU64::new(0),
            sums: Sums::new(),
        }
    }

    /// Whether the window is full of plain successes.
    #[inline]
    pub(crate) fn all_plain_successes(&self) -> bool {
        // The raw sums, as [`Sums::read`] would clamp them: a negative
        // failure or slow sum reads 0, a negative call sum is not `n`.
        // Relaxed: see `Sums`.
        let s = &self.sums;
        s.failures.load(Ordering::Relaxed) <= 0
            && s.slow.load(Ordering::Relaxed) <= 0
            && s.calls.load(Ordering::Relaxed) == self.slots.len() as i64
    }

    /// Takes the ring position of the next record.
    pub(crate) fn claim(&self) -> usize {
        // Relaxed: the index only has to be unique per record; the slot swap
        // in `record_at` carries no other data.
        (self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len() as u64) as usize
    }

    /// Whether a record of `failed`/`slow` at `i` would leave the slot as it
    /// is (a plain success replacing a plain success): then it need not be
    /// written at all. A racing writer of the same slot is ordered after us.
    pub(crate) fn unchanged(&self, i: usize, failed: bool, slow: bool) -> bool {
        // Relaxed: a hint; a stale read only sends the record down the full path.
        self.slots[i].load(Ordering::Relaxed) == bits(failed, slow)
    }

    /// Records one call at ring position `i` (from [`claim`](Self::claim));
    /// returns the totals if the record could have raised a rate or the call
    /// count.
    pub(crate) fn record_at(&self, i: usize, failed: bool, slow: bool) -> Option<Totals> {
        let new = bits(failed, slow);
        // Relaxed: the swap is atomic, so every outcome ever written is removed
        // from the totals exactly once, whatever the interleaving.
        let old = self.slots[i].swap(new, Ordering::Relaxed);
        if old == new {
            return None;
        }
        let d_calls = has(new, CALL) - has(old, CALL);
        let d_fail = has(new, FAIL) - has(old, FAIL);
        let d_slow = has(new, SLOW) - has(old, SLOW);
        self.sums.add(d_calls, d_fail, d_slow);
        (d_calls > 0 || d_fail > 0 || d_slow > 0).then(|| self.sums.read())
    }

    pub(crate) fn totals(&self) -> Totals {
        self.sums.read()
    }

    #[cfg(test)]
    fn record(&self, failed: bool, slow: bool) -> Option<Totals> {
        let i = self.claim();
        self.record_at(i, failed, slow)
    }

    pub(crate) fn clear(&self) {
        for s in self.slots.iter() {
            // Relaxed: clearing happens under the breaker's lock while no
            // closed-state permit of the new generation exists yet; the state
            // word's release store publishes it.
            s.store(0, Ordering::Relaxed);
        }
        self.sums.clear();
    }
}

/// How far a packed [`TimeWindow::head`] shifts the epoch above its bucket's
/// index: room for any index below the largest number of buckets a config
/// accepts. Packing is used when the bucket width is at least
/// `2^HEAD_SHIFT` ns (131 µs), which leaves the epoch (`now / width`, at most
/// `u64::MAX >> HEAD_SHIFT`) room above it whatever the time.
const HEAD_SHIFT: u32 = 17;
const HEAD_INDEX: u64 = (1 << HEAD_SHIFT) - 1;

/// One thread stripe's call counts: a running total and one count per bucket.
#[derive(Debug)]
struct StripeCalls {
    sum: AtomicI64,
    buckets: Box<[AtomicI64]>,
}

/// The calls of the last `width * n` of time, in `n` buckets.
///
/// Call counts are striped per thread (every call adds one, so a single
/// counter would bounce between cores on every call); failure and slow counts
/// are shared and, in a healthy system, read-mostly. A plain success whose
/// window holds no failure and no slow call cannot trip, so it never reads
/// the other threads' call counts.
#[derive(Debug)]
pub(crate) struct TimeWindow {
    width: u64,
    /// `width` when [`head`](Self::head) is packed (see [`HEAD_SHIFT`]), 0
    /// when it holds the epoch alone: the bound that a call's time is
    /// compared with to find itself in the head bucket, which 0 never
    /// satisfies.
    fast_width: u64,
    n: usize,
    /// The newest bucket epoch (`now / width`) seen so far: packed, that
    /// epoch shifted up by [`HEAD_SHIFT`] above its bucket's index, so that
    /// a call in the head bucket finds the index without a division.
    head: Padded<AtomicU64>,
    calls: Box<[Padded<StripeCalls>]>,
    /// Failures and slow calls per bucket (their `calls` fields are unused).
    buckets: Box<[Sums]>,
    sums: Padded<Sums>,
}

impl TimeWindow {
    /// What [`new`](Self::new)`(_, n)` allocates, the struct itself
    /// included (it is boxed): per stripe its padded header and one call
    /// count per bucket, and the failure and slow counts of every bucket.
    pub(crate) const fn heap_bytes(n: usize) -> usize {
        let per_stripe = size_of::<Padded<StripeCalls>>()
            .saturating_add(n.saturating_mul(size_of::<AtomicI64>()));
        size_of::<TimeWindow>()
            .saturating_add(STRIPES.saturating_mul(per_stripe))
            .saturating_add(n.saturating_mul(size_of::<Sums>()))
    }

    pub(crate) fn new(span: u64, n: usize) -> Self {
        let width = (span / n as u64).max(1);
        let packed = width > HEAD_INDEX && (n as u64) <= HEAD_INDEX + 1;
        TimeWindow {
            width,
            fast_width: if packed { width } else { 0 },
            n,
            head: Padded(AtomicU64::new(0)),
            calls: (0..STRIPES)
                .map(|_| {
                    Padded(StripeCalls {
                        sum: AtomicI64::new(0),
                        buckets: (0..n).map(|_| AtomicI64::new(0)).collect(),
                    })
                })
                .collect(),
            buckets: (0..n).map(|_| Sums::new()).collect(),
            sums: Padded(Sums::new()),
        }
    }

    /// [`head`](Self::head)'s word for `epoch`.
    #[inline]
    fn pack(&self, epoch: u64) -> u64 {
        if self.fast_width == 0 {
            epoch
        } else {
            (epoch << HEAD_SHIFT) | (epoch % self.n as u64)
        }
    }

    /// The epoch [`head`](Self::head)'s `word` holds.
    #[inline]
    fn unpack(&self, word: u64) -> u64 {
        if self.fast_width == 0 {
            word
        } else {
            word >> HEAD_SHIFT
        }
    }

    /// The bucket of a call at `now`: found in [`head`](Self::head)'s word
    /// while `now` lies in the head bucket; otherwise by dividing, moving
    /// the window first if `now` is past it.
    #[inline(always)]
    fn bucket(&self, now: u64) -> usize {
        // Relaxed: see `advance`.
        let word = self.head.0.load(Ordering::Relaxed);
        // The head bucket's start cannot overflow: the epoch was some
        // `now / width`. A time before it wraps to a large difference.
        let start = (word >> HEAD_SHIFT).wrapping_mul(self.fast_width);
        if now.wrapping_sub(start) < self.fast_width {
            return (word & HEAD_INDEX) as usize;
        }
        self.bucket_dividing(now)
    }

    /// [`bucket`](Self::bucket) outside the head bucket (or with `head`
    /// unpacked): when packed, the call that moves the window, and calls
    /// whose reading lags the head bucket's start.
    #[inline(never)]
    fn bucket_dividing(&self, now: u64) -> usize {
        let epoch = now / self.width;
        self.advance(epoch);
        (epoch % self.n as u64) as usize
    }

    /// Moves the window so that it ends at `epoch`, emptying the buckets that
    /// fell out of it. One thread wins each advance and empties the buckets; a
    /// record racing that emptying may be dropped (it lands in a bucket as the
    /// bucket is swapped to zero), in part (its call count emptied, its
    /// failure or slow count written after), never double counted.
    #[inline]
    fn advance(&self, epoch: u64) {
        // Relaxed: head only decides who empties which buckets; the buckets'
        // own atomic swaps keep the totals exact.
        let word = self.head.0.load(Ordering::Relaxed);
        if epoch > self.unpack(word) {
            self.advance_from(word, epoch);
        }
    }

    /// [`advance`](Self::advance) once the window has to move: at most
    /// once per bucket width.
    #[cold]
    #[inline(never)]
    fn advance_from(&self, mut word: u64, epoch: u64) {
        while epoch > self.unpack(word) {
            match self.head.0.compare_exchange_weak(
                word,
                self.pack(epoch),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let head = self.unpack(word);
                    let n = self.n as u64;
                    let first = (head + 1).max(epoch.saturating_sub(n - 1));
                    for e in first..=epoch {
                        let i = (e % n) as usize;
                        // Take each count out of its bucket and out of the totals.
                        for stripe in self.calls.iter() {
                            let c = stripe.0.buckets[i].swap(0, Ordering::Relaxed);
                            stripe.0.sum.fetch_sub(c, Ordering::Relaxed);
                        }
                        let b = &self.buckets[i];
                        let f = b.failures.swap(0, Ordering::Relaxed);
                        let s = b.slow.swap(0, Ordering::Relaxed);
                        self.sums.0.add(0, -f, -s);
                    }
                    return;
                }
                Err(w) => word = w,
            }
        }
    }

    fn calls(&self) -> u64 {
        // Relaxed: statistics (see `Sums`).
        let total: i64 = self
            .calls
            .iter()
            .map(|s| s.0.sum.load(Ordering::Relaxed))
            .sum();
        u64::try_from(total).unwrap_or(0)
    }

    /// Records one call; returns the totals unless the window holds no
    /// failure and no slow call, or `may_trip` says that totals of at least
    /// this thread stripe's calls, with the window's failures and slow
    /// calls, cannot trip (then nothing can trip: the window's calls are
    /// at least the stripe's, and its rates at most the bound's).
    #[inline]
    pub(crate) fn record(
        &self,
        now: u64,
        failed: bool,
        slow: bool,
        may_trip: impl Fn(&Totals) -> bool,
    ) -> Option<Totals> {
        let i = self.bucket(now);
        let mine = &self.calls[stripe() % STRIPES].0;
        // Totals first, bucket second: an emptying racing us then subtracts at
        // most what was added, so the totals never dip below the buckets' sum.
        // Relaxed: statistics (see `Sums`).
        mine.sum.fetch_add(1, Ordering::Relaxed);
        mine.buckets[i].fetch_add(1, Ordering::Relaxed);
        let (f, s) = (i64::from(failed), i64::from(slow));
        if failed || slow {
            self.sums.0.add(0, f, s);
            self.buckets[i].add(0, f, s);
        }
        // Relaxed: statistics (see `Sums`). Failures and slow calls first:
        // without either nothing can trip, and the call counts are not read.
        if self.sums.0.failures.load(Ordering::Relaxed) <= 0
            && self.sums.0.slow.load(Ordering::Relaxed) <= 0
        {
            return None;
        }
        let sums = self.sums.0.read();
        // This stripe's calls are never below zero (a record adds to the
        // stripe's sum before its bucket, an emptying takes out what it
        // found in the bucket), so they bound the window's from below.
        let bound = Totals {
            calls: u64::try_from(mine.sum.load(Ordering::Relaxed)).unwrap_or(0),
            ..sums
        };
        if !may_trip(&bound) {
            return None; // the other stripes need not be read
        }
        Some(Totals {
            calls: self.calls(),
            ..sums
        })
    }

    pub(crate) fn totals(&self, now: u64) -> Totals {
        self.advance(now / self.width);
        Totals {
            calls: self.calls(),
            ..self.sums.0.read()
        }
    }

    pub(crate) fn clear(&self) {
        for stripe in self.calls.iter() {
            for b in stripe.0.buckets.iter() {
                b.store(0, Ordering::Relaxed);
            }
            stripe.0.sum.store(0, Ordering::Relaxed);
        }
        for b in self.buckets.iter() {
            b.clear();
        }
        self.sums.0.clear();
    }
}

/// The window a rate policy looks at.
#[derive(Debug)]
pub(crate) enum Window {
    Count(CountWindow),
    Time(Box<TimeWindow>),
}

impl Window {
    /// Claims what a record needs before the generation check: the ring
    /// position of a count window. `None` when the record would change
    /// nothing (and may be skipped without the check).
    #[inline]
    pub(crate) fn claim(&self, failed: bool, slow: bool) -> Option<usize> {
        match self {
            Window::Count(w) => {
                if !failed && !slow && w.all_plain_successes() {
                    // Every slot holds a plain success: whichever one this
                    // success replaces, the ring reads the same. No write.
                    return None;
                }
                let i = w.claim();
                (!w.unchanged(i, failed, slow)).then_some(i)
            }
            Window::Time(_) => Some(0),
        }
    }

    /// Records one call at `claim` (a count window's) or `now` (a time
    /// window's); the totals to judge, if any (see [`TimeWindow::record`]
    /// for `may_trip`).
    #[inline]
    pub(crate) fn record(
        &self,
        claim: usize,
        now: u64,
        failed: bool,
        slow: bool,
        may_trip: impl Fn(&Totals) -> bool,
    ) -> Option<Totals> {
        match self {
            Window::Count(w) => w.record_at(claim, failed, slow),
            Window::Time(w) => w.record(now, failed, slow, may_trip),
        }
    }
    pub(crate) fn totals(&self, now: u64) -> Totals {
        match self {
            Window::Count(w) => w.totals(),
            Window::Time(w) => w.totals(now),
        }
    }
    pub(crate) fn clear(&self) {
        match self {
            Window::Count(w) => w.clear(),
            Window::Time(w) => w.clear(),
        }
    }
    /// Whether a plain success (not failed, not slow) would change nothing:
    /// a count window full of plain successes (see [`Window::claim`]).
    #[inline]
    pub(crate) fn plain_success_is_noop(&self) -> bool {
        matches!(self, Window::Count(w) if w.all_plain_successes())
    }

    #[inline]
    pub(crate) fn needs_time(&self) -> bool {
        matches!(self, Window::Time(_))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn count_window_forgets_old_calls() {
        let w = CountWindow::new(3);
        w.record(true, false);
        w.record(true, false);
        w.record(false, false);
        assert_eq!(
            w.totals(),
            Totals {
                calls: 3,
                failures: 2,
                slow: 0
            }
        );
        w.record(false, true); // pushes out the first failure
        w.record(false, false); // and the second
        assert_eq!(
            w.totals(),
            Totals {
                calls: 3,
                failures: 0,
                slow: 1
            }
        );
        w.clear();
        assert_eq!(w.totals(), Totals::default());
    }

    #[test]
    fn plain_success_over_plain_success_reports_nothing() {
        let w = CountWindow::new(1);
        assert!(w.record(false, false).is_some());
        assert!(w.record(false, false).is_none());
        assert!(w.record(true, false).is_some());
    }

    #[test]
    fn time_window_expires_buckets() {
        // 1 s in 10 buckets of 100 ms.
        let ms = 1_000_000;
        let w = TimeWindow::new(1_000 * ms, 10);
        w.record(0, true, false, |_| true);
        w.record(50 * ms, false, false, |_| true);
        w.record(950 * ms, true, true, |_| true);
        assert_eq!(
            w.totals(950 * ms),
            Totals {
                calls: 3,
                failures: 2,
                slow: 1
            }
        );
        // At 1.0 s the first bucket [0, 100 ms) has left the window.
        assert_eq!(
            w.totals(1_000 * ms),
            Totals {
                calls: 1,
                failures: 1,
                slow: 1
            }
        );
        // A long silence empties everything.
        assert_eq!(w.totals(60_000 * ms), Totals::default());
        w.record(60_000 * ms, false, false, |_| true);
        assert_eq!(w.totals(60_000 * ms).calls, 1);
    }

    /// A window packed (buckets of at least 131 µs) or not (narrower) keeps
    /// the same totals as a plain list of the calls it holds: a call at
    /// `t` is in the window at `now` while `t / width` is one of the last
    /// `n` epochs up to `now / width`.
    #[test]
    fn time_window_totals_match_a_list_of_calls_packed_or_not() {
        for (span, n) in [
            (10_000_000_000u64, 10usize), // 1 s buckets: packed
            (1_310_720, 10),              // exactly 2^17 ns: packed
            (1_310_710, 10),              // 1 ns narrower: divides
            (1_000, 7),                   // 142 ns buckets: divides
            (3_000_000_000, 1),           // one bucket
        ] {
            let w = TimeWindow::new(span, n);
            assert_eq!(w.fast_width != 0, w.width >= 1 << HEAD_SHIFT, "{span}/{n}");
            let width = w.width;
            let mut calls: Vec<(u64, bool)> = Vec::new();
            let (mut now, mut x) = (5 * width / 2, 0x9E37_79B9_7F4A_7C15u64);
            for _ in 0..3_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly within a bucket, sometimes exactly onto the next
                // bucket's start or its last nanosecond, a few buckets on,
                // now and then past the whole window.
                now += match x % 100 {
                    0 => width * (n as u64 + 3),
                    1..=9 => width * (x % 4),
                    10..=14 => width - now % width,
                    15..=19 => (width - now % width).saturating_sub(1),
                    _ => x % (width / 8 + 1),
                };
                let failed = x % 7 == 0;
                w.record(now, failed, false, |_| true);
                calls.push((now, failed));
                let e = now / width;
                let held = calls
                    .iter()
                    .filter(|(t, _)| t / width + (n as u64) > e)
                    .collect::<Vec<_>>();
                let want = Totals {
                    calls: held.len() as u64,
                    failures: held.iter().filter(|(_, f)| *f).count() as u64,
                    slow: 0,
                };
                assert_eq!(w.totals(now), want, "{span}/{n} at {now}");
            }
        }
    }

    #[test]
    fn time_window_judges_a_bound_before_reading_every_stripe() {
        let ms = 1_000_000;
        let w = TimeWindow::new(1_000 * ms, 10);
        assert!(
            w.record(0, false, false, |_| true).is_none(),
            "no failure yet"
        );
        w.record(0, true, false, |_| true);
        let seen = std::cell::Cell::new(None);
        let told = w.record(ms, false, false, |bound| {
            seen.set(Some(*bound));
            false
        });
        assert_eq!(told, None, "the bound cannot trip: nothing to judge");
        let bound = seen.get().expect("asked");
        assert_eq!((bound.failures, bound.slow), (1, 0));
        assert!((1..=3).contains(&bound.calls), "{bound:?}");
        assert_eq!(
            w.record(2 * ms, false, true, |_| true),
            Some(Totals {
                calls: 4,
                failures: 1,
                slow: 1
            })
        );
    }
}
