//! How far the default clock can run backwards between threads: a reading
//! taken after seeing another thread's reading is earlier by less than a
//! millisecond (the step a breaker treats as a clock jump; smaller steps it
//! absorbs, see `Clock`). On the TSC (feature `quanta`) readings on
//! different cores can disagree by a fraction of a microsecond; std's
//! `Instant` is monotonic system-wide.

use fusebox::{Clock, MonotonicClock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

/// The largest backward step tolerated between threads (1 ms).
const TOLERANCE_NANOS: u64 = 1_000_000;

#[test]
fn monotonic_clock_runs_backwards_across_threads_by_less_than_a_millisecond() {
    const THREADS: usize = 4;
    const READS: usize = 200_000;
    let clock = MonotonicClock;
    // The latest reading any thread has published.
    let latest = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    let worst = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..READS {
                    // Acquire: pairs with the AcqRel fetch_max below, so the
                    // reading below is taken after the published one was.
                    let seen = latest.load(Ordering::Acquire);
                    let t = clock.now_nanos();
                    worst.fetch_max(seen.saturating_sub(t), Ordering::Relaxed);
                    latest.fetch_max(t, Ordering::AcqRel);
                }
            });
        }
    });
    let worst = worst.load(Ordering::Relaxed);
    println!("largest backward step between threads: {worst} ns");
    assert!(
        worst < TOLERANCE_NANOS,
        "a reading was {worst} ns earlier than one seen before it"
    );
    // The clock moves, and `now` agrees with `now_nanos`.
    let (a, b) = (clock.now_nanos(), clock.now());
    assert!(b.as_nanos() >= u128::from(a));
    assert!(latest.load(Ordering::Relaxed) > 0);
}
