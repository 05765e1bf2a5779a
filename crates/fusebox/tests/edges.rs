//! Edges found by probing the breaker as an SRE would: extreme settings and
//! clocks that misbehave. Each test failed before its fix.

use fusebox::{CircuitBreaker, Clock, ManualClock, State};
use std::time::Duration;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn an_endless_open_period_still_has_a_retry_after() {
    // `None` means forced open; an open period of Duration::MAX used to
    // collide with the "no retry_after" sentinel.
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::MAX)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    b.try_acquire().unwrap().failure();
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::Open);
    assert!(r.retry_after().unwrap() > Duration::from_secs(500 * 365 * 86_400));
    b.force_open();
    assert_eq!(b.try_acquire().unwrap_err().retry_after(), None);
}

#[test]
fn a_time_window_keeps_expiring_after_the_clock_jumps_back() {
    let clock = ManualClock::new();
    clock.set(secs(5 * 3600));
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .time_window(secs(10))
        .min_calls(1_000)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..219 {
        b.try_acquire().unwrap().success();
    }
    clock.set(Duration::ZERO); // 5 h back
    assert_eq!(b.snapshot().calls, 219, "a jump back is no time passing");
    clock.advance(secs(200));
    assert_eq!(b.snapshot().calls, 0, "the window expired 200 s later");
}

#[test]
fn an_open_period_keeps_its_length_after_the_clock_jumps_back() {
    let clock = ManualClock::new();
    clock.set(secs(10 * 3600));
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.try_acquire().unwrap().failure();
    clock.set(Duration::ZERO);
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.retry_after(), Some(secs(30)), "not 36 030 s");
    clock.advance(secs(30));
    assert_eq!(b.state(), State::HalfOpen);
}

/// A clock whose next reading is one taken earlier, once: what the
/// breaker sees when a thread reads the clock, is descheduled, and goes on
/// after another thread has read a later time.
#[derive(Debug, Clone)]
struct LateOnce {
    clock: ManualClock,
    late: std::sync::Arc<std::sync::Mutex<Option<Duration>>>,
}

impl Clock for LateOnce {
    fn now(&self) -> Duration {
        let late = self.late.lock().unwrap_or_else(|e| e.into_inner()).take();
        late.unwrap_or_else(|| self.clock.now())
    }
}

#[test]
fn a_late_reading_is_not_the_clock_jumping_back() {
    let manual = ManualClock::new();
    manual.set(secs(10));
    let clock = LateOnce {
        clock: manual.clone(),
        late: Default::default(),
    };
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.try_acquire().unwrap().failure(); // open until 40 s
    *clock.late.lock().unwrap() = Some(secs(1)); // read before the 10 s
    let r = b.try_acquire().unwrap_err();
    assert_eq!(
        r.retry_after(),
        Some(secs(30)),
        "the late reading read again"
    );
    assert_eq!(b.try_acquire().unwrap_err().retry_after(), Some(secs(30)));
    manual.advance(secs(29));
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.retry_after(), Some(secs(1)), "no time was added");
    manual.advance(secs(1));
    assert_eq!(b.state(), State::HalfOpen);
    // A clock that stays back is still a jump: the open period keeps its
    // length (see `an_open_period_keeps_its_length_after_the_clock_jumps_back`).
    b.try_acquire().unwrap().failure(); // open until 70 s
    manual.set(secs(5));
    assert_eq!(b.try_acquire().unwrap_err().retry_after(), Some(secs(30)));
}

#[test]
fn settings_that_could_never_trip_or_close_are_refused() {
    let cases = [
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .time_window(secs(10))
                .min_calls(u32::MAX)
                .build(),
            "min_calls",
        ),
        (
            CircuitBreaker::builder()
                .successes_to_close(u32::MAX)
                .build(),
            "successes_to_close",
        ),
        (
            CircuitBreaker::builder().half_open_probes(u32::MAX).build(),
            "half_open_probes",
        ),
        (
            CircuitBreaker::builder()
                .consecutive_failures(u32::MAX)
                .build(),
            "consecutive_failures",
        ),
    ];
    for (r, field) in cases {
        let e = r.unwrap_err();
        assert_eq!(e.field(), field, "{e}");
        assert_eq!(e.problem(), "must be at most 10000000");
    }
}

/// An uncapped backoff doubles until the period reaches what the clock can
/// count (`u64::MAX` nanoseconds from the clock's origin, about 584 years);
/// it never shrinks on the way. (A clock already near the end of its count
/// cannot hold a period longer than what is left of it: the period then ends
/// with the count. The test stops before that.)
#[test]
fn an_uncapped_backoff_never_shortens_the_open_period() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_backoff(Duration::from_millis(1), 2.0, Duration::MAX)
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut last = Duration::ZERO;
    for trip in 0..80 {
        b.try_acquire().unwrap().failure();
        let period = b.try_acquire().unwrap_err().retry_after().unwrap();
        assert!(period >= last, "trip {trip}: {period:?} < {last:?}");
        if trip < 40 {
            assert_eq!(period, Duration::from_millis(1 << trip), "trip {trip}");
        }
        last = period;
        if clock.now() + period > Duration::from_nanos(1 << 63) {
            break;
        }
        clock.advance(period);
        assert_eq!(b.state(), State::HalfOpen);
    }
    assert!(last >= Duration::from_secs(1 << 32), "{last:?}");
}

/// Found by the reference model: a stale verdict took a ring position of the
/// count window before its generation was checked, so a later call pushed out
/// a call still among the last n.
#[test]
fn a_stale_verdict_takes_no_place_in_a_count_window() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.3)
        .count_window(3)
        .build()
        .unwrap(); // min_calls 3
    let stale = b.try_acquire().unwrap();
    b.reset();
    let _ = b.call(|| Ok::<_, ()>(()));
    stale.success();
    let _ = b.call(|| Err::<(), _>(()));
    let _ = b.call(|| Ok::<_, ()>(()));
    assert_eq!(b.snapshot().calls, 3);
    assert_eq!(
        b.state(),
        State::Open,
        "1 of the last 3 failed: 33 % >= 30 %"
    );
}

/// A probe that fails while another is still out ends the half-open
/// period: the other one no longer counts as in flight, and the next
/// half-open period admits its probes afresh.
#[test]
fn a_probe_still_out_when_another_fails_is_not_in_flight_once_open() {
    let clock = fusebox::ManualClock::new();
    let b = fusebox::CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(std::time::Duration::from_secs(1))
        .half_open_probes(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    b.try_acquire().unwrap().failure();
    clock.advance(std::time::Duration::from_secs(1));
    let (first, second) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
    assert_eq!(b.probes_in_flight(), 2);
    first.failure();
    assert_eq!(b.state(), fusebox::State::Open);
    assert_eq!(b.probes_in_flight(), 0, "the half-open period is over");
    second.success(); // stale: changes nothing
    assert_eq!(b.state(), fusebox::State::Open);
    clock.advance(std::time::Duration::from_secs(1));
    let (a, c) = (b.try_acquire().unwrap(), b.try_acquire().unwrap());
    assert_eq!(b.probes_in_flight(), 2);
    a.success();
    c.success();
    assert_eq!(b.state(), fusebox::State::Closed);
    assert_eq!(b.probes_in_flight(), 0);
}
