//! The default clock is monotonic on one thread and across threads: a
//! reading taken after seeing another thread's reading is never earlier.
//! (Whether it reads the TSC or the OS clock, see `MonotonicClock`'s docs.)

use fusebox::{Clock, MonotonicClock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

#[test]
fn monotonic_clock_never_runs_backwards_across_threads() {
    const THREADS: usize = 4;
    const READS: usize = 200_000;
    let clock = MonotonicClock;
    // The latest reading any thread has published.
    let latest = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    let backwards = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                let mut mine = 0;
                for _ in 0..READS {
                    // Acquire: pairs with the AcqRel fetch_max below, so the
                    // reading below is taken after the published one was.
                    let seen = latest.load(Ordering::Acquire);
                    let t = clock.now_nanos();
                    if t < seen || t < mine {
                        backwards.fetch_add(1, Ordering::Relaxed);
                    }
                    mine = t;
                    latest.fetch_max(t, Ordering::AcqRel);
                }
            });
        }
    });
    assert_eq!(
        backwards.load(Ordering::Relaxed),
        0,
        "readings went backwards"
    );
    // And `now` agrees with `now_nanos`.
    let (a, b) = (clock.now_nanos(), clock.now());
    assert!(b.as_nanos() >= u128::from(a));
}
