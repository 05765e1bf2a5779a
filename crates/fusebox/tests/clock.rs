//! How far the default clock can run backwards between threads: a reading
//! taken after seeing another thread's reading is earlier by less than a
//! millisecond (the step a breaker treats as a clock jump; smaller steps it
//! absorbs, see `Clock`). On the TSC (feature `quanta`) readings on
//! different cores can disagree by a fraction of a microsecond; std's
//! `Instant` is monotonic system-wide.

use fusebox::{CallEvent, CircuitBreaker, Clock, Listener, MonotonicClock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

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

/// Records the duration of every call it hears of.
#[derive(Clone, Default)]
struct Durations(Arc<std::sync::Mutex<Vec<Duration>>>);

impl Listener for Durations {
    fn on_call(&self, call: &CallEvent) {
        self.0.lock().unwrap().push(call.duration);
    }
}

/// Spins (no sleep) until the default clock has moved by `d`.
fn spin_for(d: Duration) {
    let start = MonotonicClock.now();
    while MonotonicClock.now() - start < d {
        std::hint::spin_loop();
    }
}

/// With the default clock a breaker times its calls on the clock's raw
/// counter (the TSC with `quanta`), scaled once per call: the duration a
/// listener hears and the slow-call rule judges still covers the call, on
/// the closed path and on a probe.
#[test]
fn call_durations_on_the_default_clock_cover_the_call() {
    const LONG: Duration = Duration::from_millis(2);
    let heard = Durations::default();
    let b = CircuitBreaker::builder()
        .slow_calls(LONG, 1.0)
        .count_window(2)
        .min_calls(2)
        .open_for(Duration::from_millis(1))
        .listener(heard.clone())
        .build()
        .unwrap();
    b.call(|| Ok::<(), ()>(())).unwrap(); // fast
    let before = MonotonicClock.now();
    b.call(|| {
        spin_for(LONG);
        Ok::<(), ()>(())
    })
    .unwrap();
    let outside = MonotonicClock.now() - before;
    {
        let d = heard.0.lock().unwrap();
        assert!(d[1] >= LONG, "a {LONG:?} call heard as {:?}", d[1]);
        // Timed inside the interval measured around it (give or take the
        // tolerated step between cores): nanoseconds, not raw ticks.
        let tolerance = Duration::from_nanos(TOLERANCE_NANOS);
        assert!(
            d[1] <= outside + tolerance,
            "{:?} heard, {outside:?} around it",
            d[1]
        );
        assert!(d[0] < d[1], "{:?} then {:?}", d[0], d[1]);
    }
    let s = b.snapshot();
    assert_eq!((s.calls, s.slow_calls), (2, 1), "the long call was slow");
    b.call(|| {
        spin_for(LONG);
        Ok::<(), ()>(())
    })
    .unwrap();
    assert_eq!(b.state(), fusebox::State::Open, "2 of 2 slow");
    spin_for(Duration::from_millis(1));
    b.call(|| {
        spin_for(LONG);
        Ok::<(), ()>(())
    })
    .unwrap(); // the probe: slow, so the breaker opens again
    assert!(heard.0.lock().unwrap()[3] >= LONG);
    assert_eq!(b.state(), fusebox::State::Open, "a slow probe reopens");
}

/// The open path on the default clock (which decides a refusal without the
/// look at the last reading seen that admissions make) gives the exact rest
/// of the open period: between the readings taken around it, to the
/// nanosecond, up to the cores' disagreement.
#[test]
fn refusals_on_the_default_clock_give_the_rest_of_the_open_period() {
    let open_for = Duration::from_secs(30);
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(open_for)
        .build()
        .unwrap();
    let clock = MonotonicClock;
    let before_trip = clock.now();
    breaker.try_acquire().unwrap().failure();
    let after_trip = clock.now();
    for _ in 0..1000 {
        let before = clock.now();
        let rejected = breaker.try_acquire().unwrap_err();
        let after = clock.now();
        let rest = rejected.retry_after().expect("open, not forced open");
        // The period ends between `before_trip + open_for` and
        // `after_trip + open_for`; the refusal read the clock between
        // `before` and `after`.
        let tolerance = Duration::from_nanos(TOLERANCE_NANOS);
        assert!(
            rest <= (after_trip + open_for).saturating_sub(before) + tolerance,
            "{rest:?} is more than the rest of the period"
        );
        assert!(
            rest + tolerance >= (before_trip + open_for).saturating_sub(after),
            "{rest:?} is less than the rest of the period"
        );
    }
    assert_eq!(breaker.snapshot().rejected, 1000);
}
