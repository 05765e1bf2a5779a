//! fusebox allocates nothing per call once a breaker is built: on the closed
//! path (every policy, success and failure), the open path, half-open probes,
//! every transition, the permit API, async calls, snapshots, manual control
//! and the bulkhead. A behavioural property, so a test, not a benchmark.
//!
//! Counts are per thread (see `fusebox_bench::alloc`), so tests running in
//! parallel do not disturb each other.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fusebox::{CircuitBreaker, Error, Listener, ManualClock, Outcome, State, Transition};
use fusebox_bench::alloc::{count, CountingAlloc};
use fusebox_bench::scenarios::{COUNT_100, MIXED, REFERENCE, SLOW, TIME_10S};
use fusebox_bench::subjects::{fusebox_builder, Spec};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const CALLS: usize = 2_000;

fn ok() -> Result<u64, u64> {
    Ok(std::hint::black_box(42))
}

fn err() -> Result<u64, u64> {
    Err(std::hint::black_box(1))
}

fn assert_no_allocations(what: &str, mut f: impl FnMut()) {
    // Warm up every path a round can take (the rounds below alternate):
    // thread-locals (the settings' lock-free reader registers this thread
    // once, on its first verdict), lazy statics, the first clock read.
    for _ in 0..10 {
        f();
    }
    let ((), n) = count(|| {
        for _ in 0..CALLS {
            f()
        }
    });
    assert_eq!(n, 0, "{what}: {n} allocations in {CALLS} rounds");
}

#[test]
fn the_counter_sees_allocations() {
    // The test below would pass vacuously if the allocator were not installed.
    let (v, n) = count(|| Box::new(std::hint::black_box(7u64)));
    assert_eq!(*v, 7);
    assert_eq!(n, 1);
}

#[test]
fn closed_path_of_every_policy_allocates_nothing() {
    for (name, spec) in [
        ("consecutive", REFERENCE),
        ("count_window", COUNT_100),
        ("time_window", TIME_10S),
        ("slow_calls", SLOW),
        (
            "count_window_10000",
            Spec::count_window(10_000, 0.5, Duration::from_secs(30)),
        ),
        (
            "time_window_100_buckets",
            Spec::time_window(Duration::from_secs(10), 100, 0.5, Duration::from_secs(30)),
        ),
    ] {
        let b = fusebox_builder(&spec).build().expect("valid");
        assert_no_allocations(&format!("{name}: success"), || {
            b.call(ok).expect("closed");
        });
        // One failure among successes never trips any of these policies.
        let mut i = 0u32;
        assert_no_allocations(&format!("{name}: 1 failure in 10"), || {
            i += 1;
            let r = b.call(if i.is_multiple_of(10) { err } else { ok });
            assert!(!matches!(r, Err(Error::Rejected(_))), "{name} tripped");
        });
        assert_no_allocations(&format!("{name}: call_with ignore"), || {
            let _ = b.call_with(|_| Outcome::Ignore, err);
        });
        assert_no_allocations(&format!("{name}: permit"), || {
            b.try_acquire().expect("closed").success();
        });
        assert_no_allocations(&format!("{name}: permit dropped"), || {
            drop(b.try_acquire().expect("closed"));
        });
        assert_no_allocations(&format!("{name}: snapshot and state"), || {
            assert_eq!(b.snapshot().state, State::Closed);
            assert_eq!(b.state(), State::Closed);
        });
    }
}

#[test]
fn open_path_allocates_nothing() {
    let clock = ManualClock::new();
    let b = fusebox_builder(&REFERENCE)
        .clock(clock.clone())
        .build()
        .expect("valid");
    for _ in 0..5 {
        let _ = b.call(err);
    }
    assert_eq!(b.state(), State::Open);
    assert_no_allocations("open: call", || {
        assert!(b.call(ok).unwrap_err().is_rejected());
    });
    assert_no_allocations("open: try_acquire", || {
        assert!(b.try_acquire().is_err());
    });
    b.force_open();
    assert_no_allocations("forced open: call", || {
        assert!(b.call(ok).unwrap_err().is_rejected());
    });
}

#[derive(Debug, Default)]
struct Quiet;

impl Listener for Quiet {
    fn on_transition(&self, t: &Transition) {
        std::hint::black_box(t);
    }
}

#[test]
fn transitions_and_probes_allocate_nothing() {
    // Trip, cool down, probe: success closes, failure reopens. Every round
    // goes through Closed -> Open -> HalfOpen -> (Closed | Open) and back.
    for (name, spec, failures) in [("consecutive", REFERENCE, 5), ("count_window", MIXED, 20)] {
        let clock = ManualClock::new();
        let b = fusebox_builder(&spec)
            .clock(clock.clone())
            .listener(Quiet)
            .on_transition(|t| {
                std::hint::black_box(t);
            })
            .build()
            .expect("valid");
        let open_for = spec.open_for;
        let mut round = 0u32;
        assert_no_allocations(&format!("{name}: trip / probe cycle"), || {
            round += 1;
            if b.state() != State::Closed {
                b.reset();
            }
            for _ in 0..failures {
                let _ = b.call(err);
            }
            assert_eq!(b.state(), State::Open, "{name}: did not trip");
            assert!(b.call(ok).is_err());
            clock.advance(open_for);
            if round.is_multiple_of(2) {
                b.call(ok).expect("probe admitted");
                assert_eq!(b.state(), State::Closed);
            } else {
                let _ = b.call(err);
                assert_eq!(b.state(), State::Open);
            }
        });
    }
}

#[test]
fn async_calls_allocate_nothing() {
    let b = fusebox_builder(&COUNT_100).build().expect("valid");
    let mut cx = Context::from_waker(Waker::noop());
    assert_no_allocations("call_async", || {
        let fut = pin!(b.call_async(|| async { ok() }));
        match fut.poll(&mut cx) {
            Poll::Ready(r) => {
                r.expect("closed");
            }
            Poll::Pending => panic!("a ready future must complete at once"),
        }
    });
    assert_no_allocations("call_async dropped before polling", || {
        drop(b.call_async(|| async { ok() }));
    });
}

#[test]
fn building_may_allocate_but_the_breaker_stays_usable() {
    // Control for the tests above: building does allocate (the window), so
    // a zero there is not the allocator failing to count.
    let (b, n) = count(|| {
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(1_000)
            .build()
            .expect("valid")
    });
    assert!(n > 0, "building a breaker with a window allocated nothing?");
    assert!(b.call(ok).is_ok());
}

#[test]
fn bulkhead_allocates_nothing() {
    let b = fusebox::Bulkhead::new(4);
    assert_no_allocations("bulkhead try_acquire + release", || {
        drop(b.try_acquire().expect("free"));
    });
    assert_no_allocations("bulkhead try_call", || {
        b.try_call(ok).expect("free").expect("ok");
    });
    let held: Vec<_> = (0..4).map(|_| b.try_acquire().expect("free")).collect();
    assert_no_allocations("bulkhead full", || {
        assert!(b.try_acquire().is_err());
    });
    drop(held);
}

#[test]
fn sync_pipeline_and_instrumented_breakers_allocate_nothing() {
    use fusebox_bench::harness::{Load, Verdict};
    use fusebox_bench::subjects::Stack;
    for stack in [
        Stack::PipelineSync,
        Stack::Metrics(REFERENCE),
        Stack::Metrics(COUNT_100),
        Stack::Metrics(TIME_10S),
        Stack::MetricsEveryCall(COUNT_100),
    ] {
        let s = stack.build();
        let mut r = s.runner(1);
        assert_no_allocations(&format!("{stack:?}"), || {
            let b = r.run(1, Load::AllOk);
            assert_eq!(b.tally.ok, 1, "{stack:?}: {:?}", Verdict::Ok);
        });
    }
}
