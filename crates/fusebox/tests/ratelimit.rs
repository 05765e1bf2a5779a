//! Rate limiter (feature `ratelimit`): burst and refusal with `retry_after`
//! on a `ManualClock`, refill, modes (shadow, off, live change),
//! reconfiguration, the async deadline on tokio's paused time, the keyed
//! limiter's independence and bounded memory, the tower layer, and config
//! errors.

use fusebox::policy::Refusal;
use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig, RateLimited, RateLimiter};
use fusebox::{Cause, ManualClock, Mode, PolicyError};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

/// `per_second` calls a second, `burst` at once, on `clock`.
fn limiter(clock: &ManualClock, per_second: u32, burst: u32) -> RateLimiter {
    RateLimiter::builder()
        .config(RateLimitConfig::per_second(per_second).burst(burst))
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn a_burst_then_refusals_that_say_when_to_come_back() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 10, 3);
    for i in 0..3 {
        assert!(l.try_acquire().is_ok(), "call {i} of the burst");
    }
    let limited = l.try_acquire().unwrap_err();
    assert_eq!(limited.retry_after(), 100 * MS);
    assert_eq!(limited.to_string(), "rate limit exceeded");
    clock.advance(40 * MS);
    assert_eq!(l.try_acquire().unwrap_err().retry_after(), 60 * MS);
    let s = l.snapshot();
    assert_eq!((s.admitted, s.refused, s.shadowed), (3, 2, 0));
}

#[test]
fn the_rate_refills_with_time_and_never_beyond_the_burst() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 10, 3);
    for _ in 0..3 {
        l.try_acquire().unwrap();
    }
    clock.advance(99 * MS);
    assert!(
        l.try_acquire().is_err(),
        "one cell is due at 100 ms, not 99"
    );
    clock.advance(MS);
    assert!(l.try_acquire().is_ok());
    assert!(l.try_acquire().is_err());
    // A long quiet spell refills the bucket, but only to its size.
    clock.advance(Duration::from_secs(60));
    for i in 0..3 {
        assert!(l.try_acquire().is_ok(), "call {i} after the quiet spell");
    }
    assert_eq!(l.try_acquire().unwrap_err().retry_after(), 100 * MS);
}

#[test]
fn a_period_spaces_calls_below_one_a_second() {
    let clock = ManualClock::new();
    let l = RateLimiter::builder()
        .config(RateLimitConfig::every(Duration::from_secs(10)))
        .clock(clock.clone())
        .build()
        .unwrap();
    l.try_acquire().unwrap();
    assert_eq!(
        l.try_acquire().unwrap_err().retry_after(),
        Duration::from_secs(10)
    );
    clock.advance(Duration::from_secs(10));
    assert!(l.try_acquire().is_ok());
}

#[test]
fn call_runs_only_within_the_rate() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 1, 1);
    let mut runs = 0;
    assert_eq!(l.call(|| runs += 1), Ok(()));
    assert!(l.call(|| runs += 1).is_err());
    assert_eq!(runs, 1);
}

#[test]
fn shadow_lets_every_call_through_and_counts_what_it_would_have_refused() {
    let clock = ManualClock::new();
    let l = RateLimiter::builder()
        .config(RateLimitConfig::per_second(10).burst(3).mode(Mode::Shadow))
        .clock(clock.clone())
        .build()
        .unwrap();
    for i in 0..10 {
        assert!(l.try_acquire().is_ok(), "shadow refuses nothing (call {i})");
    }
    let s = l.snapshot();
    assert_eq!(s.mode, Mode::Shadow);
    assert_eq!((s.admitted, s.refused, s.shadowed), (3, 0, 7));
    // Shadow decides as enforcing would: one cell back after 100 ms.
    clock.advance(100 * MS);
    l.try_acquire().unwrap();
    l.try_acquire().unwrap();
    let s = l.snapshot();
    assert_eq!((s.admitted, s.shadowed), (4, 8));
}

#[test]
fn off_admits_everything_counts_nothing_and_spends_no_cell() {
    let clock = ManualClock::new();
    let l = RateLimiter::builder()
        .config(RateLimitConfig::per_second(10).burst(2).mode(Mode::Off))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..100 {
        assert!(l.try_acquire().is_ok());
    }
    let s = l.snapshot();
    assert_eq!((s.admitted, s.refused, s.shadowed), (0, 0, 0));
    l.set_mode(Mode::Enforce);
    assert!(l.try_acquire().is_ok());
    assert!(l.try_acquire().is_ok(), "the burst is intact after off");
    assert!(l.try_acquire().is_err());
}

#[test]
fn the_mode_changes_live_for_every_clone() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 1, 1);
    let other = l.clone();
    l.try_acquire().unwrap();
    assert!(other.try_acquire().is_err());
    l.set_mode(Mode::Shadow);
    assert_eq!(other.mode(), Mode::Shadow);
    assert!(other.try_acquire().is_ok());
    l.set_mode(Mode::Enforce);
    assert!(
        other.try_acquire().is_err(),
        "the state survived the changes"
    );
    let s = other.snapshot();
    assert_eq!((s.admitted, s.refused, s.shadowed), (1, 2, 1));
}

#[test]
fn reconfigure_replaces_a_new_quota_and_keeps_an_unchanged_one() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 1, 1);
    l.try_acquire().unwrap();
    // The same quota, written another way: the state is kept.
    l.reconfigure(RateLimitConfig::every(Duration::from_secs(1)))
        .unwrap();
    assert!(l.try_acquire().is_err());
    assert_eq!(l.config().per_second, Some(1));
    // A new quota: a fresh limiter, its burst full.
    l.reconfigure(RateLimitConfig::per_second(5).burst(2).mode(Mode::Shadow))
        .unwrap();
    assert_eq!(l.mode(), Mode::Shadow);
    l.set_mode(Mode::Enforce);
    assert!(l.try_acquire().is_ok());
    assert!(l.try_acquire().is_ok());
    assert_eq!(l.try_acquire().unwrap_err().retry_after(), 200 * MS);
    let c = l.config();
    assert_eq!((c.per_second, c.burst), (Some(5), Some(2)));
    // A bad config is refused and changes nothing.
    let err = l
        .reconfigure(RateLimitConfig::per_second(5).burst(0))
        .unwrap_err();
    assert_eq!(err.field(), "burst");
    assert_eq!(l.config().burst, Some(2));
    // The counters carry on across the swaps.
    assert_eq!(l.snapshot().admitted, 3);
}

#[test]
fn the_refusal_is_a_fusebox_refusal() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 2, 1);
    l.try_acquire().unwrap();
    let limited = l.try_acquire().unwrap_err();
    assert_eq!(limited.policy(), "rate_limiter");
    assert_eq!(limited.label(), "rate_limited");
    assert_eq!(limited.summary(), "rate limited");
    assert_eq!(Refusal::retry_after(&limited), Some(500 * MS));
    let cause = limited.cause();
    assert!(matches!(cause, Cause::Refused(r) if r.policy() == "rate_limiter"));
    assert!(cause.is_refusal());
    assert_eq!(cause.to_string(), "rate limited");

    // Boxed, as on the tower path: still known as a refusal.
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(limited);
    let cause = boxed.cause();
    match cause {
        Cause::Refused(r) => {
            assert_eq!(r.policy(), "rate_limiter");
            assert_eq!(r.downcast_ref::<RateLimited>(), Some(&limited));
        }
        other => panic!("expected Cause::Refused, got {other:?}"),
    }
    assert_eq!(cause.label(), "rate_limited");
    assert_eq!(cause.retry_after(), Some(500 * MS));
    // ...and counted under its own label by the shared stats.
    assert!(fusebox::PolicyStats::CAUSES.contains(&"rate_limited"));
}

#[test]
fn handles_are_send_sync_and_cheap_to_share() {
    fn check<T: Send + Sync + 'static>() {}
    check::<RateLimiter>();
    check::<KeyedRateLimiter<String>>();
    check::<RateLimited>();
    check::<fusebox::ratelimit::RateLimitConfigError>();
}

// ---- config ----

#[test]
fn bad_settings_name_the_field_the_value_and_the_problem() {
    let mut both = RateLimitConfig::per_second(10);
    both.period = Some(Duration::from_secs(1));
    let mut neither = RateLimitConfig::per_second(10);
    neither.per_second = None;
    let cases = [
        (RateLimitConfig::per_second(0), "per_second", "0"),
        (
            RateLimitConfig::per_second(2_000_000_000),
            "per_second",
            "2000000000",
        ),
        (RateLimitConfig::per_second(10).burst(0), "burst", "0"),
        (RateLimitConfig::every(Duration::ZERO), "period", "0ns"),
        (both, "period", "1s"),
        (neither, "per_second", "None"),
        (
            RateLimitConfig::every(Duration::from_secs(3600)).burst(1_000_000),
            "burst",
            "1000000",
        ),
    ];
    for (config, field, value) in cases {
        let err = config.validate().unwrap_err();
        assert_eq!((err.field(), err.value()), (field, value), "{config:?}");
        assert!(
            err.to_string().starts_with(&format!(
                "invalid rate limiter setting `{field}` = {value}: "
            )),
            "{err}"
        );
        assert_eq!(
            RateLimiter::new(config).unwrap_err(),
            err,
            "the builder validates the same way"
        );
    }
    assert_eq!(
        RateLimitConfig::per_second(0)
            .validate()
            .unwrap_err()
            .to_string(),
        "invalid rate limiter setting `per_second` = 0: must be at least 1"
    );
    let err = KeyedRateLimiter::<u32>::builder()
        .config(RateLimitConfig::per_second(1))
        .max_keys(0)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid rate limiter setting `max_keys` = 0: must be at least 1"
    );
}

// ---- async: waiting within a deadline ----

/// A clock that reads tokio's (pausable) clock, so the limiter and tokio's
/// timers agree on time.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone)]
struct TokioClock(tokio::time::Instant);

#[cfg(feature = "tokio")]
impl fusebox::Clock for TokioClock {
    fn now(&self) -> Duration {
        tokio::time::Instant::now() - self.0
    }
}

#[cfg(feature = "tokio")]
fn tokio_limiter(per_second: u32, burst: u32) -> RateLimiter {
    RateLimiter::builder()
        .config(RateLimitConfig::per_second(per_second).burst(burst))
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .unwrap()
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_wait_that_fits_the_deadline_waits_exactly_until_the_cell_is_due() {
    let l = tokio_limiter(10, 1);
    l.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    l.acquire_async(150 * MS).await.unwrap();
    assert_eq!(t0.elapsed(), 100 * MS);
    let s = l.snapshot();
    assert_eq!((s.admitted, s.refused), (2, 0));
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_wait_past_the_deadline_is_refused_at_once() {
    let l = tokio_limiter(10, 1);
    l.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    let limited = l.acquire_async(99 * MS).await.unwrap_err();
    assert_eq!(t0.elapsed(), Duration::ZERO, "no sleep before refusing");
    assert_eq!(limited.retry_after(), 100 * MS);
    assert_eq!(l.snapshot().refused, 1);
    // A zero budget never waits.
    assert!(l.acquire_async(Duration::ZERO).await.is_err());
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_waiter_beaten_to_its_cell_is_refused_when_the_next_would_miss_its_deadline() {
    let l = tokio_limiter(10, 1);
    l.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    // Both are due at 100 ms; one gets the cell, the other would need 200 ms.
    let (a, b) = tokio::join!(l.acquire_async(150 * MS), l.acquire_async(150 * MS));
    assert_eq!(
        [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{a:?} {b:?}"
    );
    assert_eq!(
        t0.elapsed(),
        100 * MS,
        "refused on waking, not at its deadline"
    );
    let limited = a.err().or(b.err()).unwrap();
    assert_eq!(limited.retry_after(), 100 * MS);
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn shadow_never_waits_and_off_never_asks() {
    let l = tokio_limiter(10, 1);
    l.set_mode(Mode::Shadow);
    l.try_acquire().unwrap();
    let t0 = tokio::time::Instant::now();
    l.acquire_async(Duration::from_secs(1)).await.unwrap();
    l.acquire_async(MS).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    let s = l.snapshot();
    // Both calls were over the rate (neither took a cell): shadowed, even
    // the one enforcing would only have made wait.
    assert_eq!((s.admitted, s.shadowed), (1, 2));
    l.set_mode(Mode::Off);
    l.acquire_async(Duration::ZERO).await.unwrap();
    assert_eq!((l.snapshot().admitted, l.snapshot().shadowed), (1, 2));
}

// ---- keyed ----

fn keyed<K: std::hash::Hash + Eq + Clone>(
    clock: &ManualClock,
    per_second: u32,
    burst: u32,
    max_keys: usize,
) -> KeyedRateLimiter<K> {
    KeyedRateLimiter::builder()
        .config(RateLimitConfig::per_second(per_second).burst(burst))
        .max_keys(max_keys)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn keys_have_independent_buckets() {
    let clock = ManualClock::new();
    let l = keyed::<&str>(&clock, 10, 2, 100);
    l.try_acquire(&"acme").unwrap();
    l.try_acquire(&"acme").unwrap();
    assert_eq!(l.try_acquire(&"acme").unwrap_err().retry_after(), 100 * MS);
    l.try_acquire(&"globex").unwrap();
    l.try_acquire(&"globex").unwrap();
    assert!(l.try_acquire(&"globex").is_err());
    clock.advance(50 * MS);
    assert_eq!(l.try_acquire(&"acme").unwrap_err().retry_after(), 50 * MS);
    assert!(l.try_acquire(&"initech").is_ok());
    let s = l.snapshot();
    assert_eq!((s.limits.admitted, s.limits.refused, s.keys), (5, 3, 3));
    assert_eq!((s.overflowed, s.sweeps), (0, 0));
}

#[test]
fn keyed_modes_shadow_and_off() {
    let clock = ManualClock::new();
    let l = keyed::<u8>(&clock, 1, 1, 100);
    l.set_mode(Mode::Shadow);
    for _ in 0..3 {
        assert!(l.try_acquire(&1).is_ok());
    }
    l.set_mode(Mode::Off);
    for k in 2..50 {
        assert!(l.try_acquire(&k).is_ok());
    }
    let s = l.snapshot();
    assert_eq!((s.limits.admitted, s.limits.shadowed), (1, 2));
    assert_eq!(s.keys, 1, "off adds no key");
}

#[test]
fn a_full_map_sweeps_refilled_keys_then_shares_the_overflow_bucket() {
    let clock = ManualClock::new();
    let l = keyed::<u32>(&clock, 10, 1, 2);
    l.try_acquire(&1).unwrap();
    l.try_acquire(&2).unwrap();
    // Full, and neither key has refilled: key 3 shares the overflow bucket
    // (fresh, so this first call is admitted), and so does key 4, refused.
    assert!(l.try_acquire(&3).is_ok());
    let limited = l.try_acquire(&4).unwrap_err();
    assert_eq!(limited.retry_after(), 100 * MS);
    // Tracked keys keep their own buckets meanwhile.
    assert!(l.try_acquire(&1).is_err());
    let s = l.snapshot();
    assert_eq!((s.keys, s.overflowed), (2, 2));
    assert_eq!(s.sweeps, 1, "swept once; the second miss was too soon");

    // Once keys 1 and 2 have refilled, the next new key sweeps them out and
    // gets a bucket of its own.
    clock.advance(200 * MS);
    assert!(l.try_acquire(&4).is_ok());
    assert!(l.try_acquire(&5).is_ok());
    let s = l.snapshot();
    assert_eq!((s.keys, s.overflowed, s.sweeps), (2, 2, 2));
    assert!(
        l.try_acquire(&4).is_err(),
        "key 4 has its own, spent, bucket"
    );
}

#[test]
fn a_million_distinct_keys_stay_within_max_keys_without_any_cleanup_call() {
    const MAX: usize = 10_000;
    const KEYS: u64 = 1_000_000;
    let clock = ManualClock::new();
    // 10 a second, burst 1: a key refills 100 ms after its last call.
    let l = keyed::<u64>(&clock, 10, 1, MAX);
    let mut most = 0;
    for k in 0..KEYS {
        // One new key per microsecond: a million keys in one second.
        clock.advance(Duration::from_micros(1));
        let _ = l.try_acquire(&k);
        if k % 1000 == 0 {
            most = most.max(l.len());
        }
    }
    most = most.max(l.len());
    let s = l.snapshot();
    assert!(most <= MAX, "at most {MAX} keys, saw {most}");
    assert_eq!(s.limits.admitted + s.limits.refused, KEYS);
    // Amortised: sweeps at most once per 100 ms of the one second (plus
    // the first), not once per key.
    assert!(s.sweeps <= 11, "{} sweeps", s.sweeps);
    // Keys older than 100 ms were swept for new ones: far more than MAX
    // keys got a bucket of their own over the second.
    assert!(s.keys > 0 && s.overflowed < KEYS - MAX as u64, "{s:?}");
    assert!(s.limits.admitted > 2 * MAX as u64, "{s:?}");
}

#[test]
fn a_million_distinct_keys_at_one_instant_share_one_overflow_bucket() {
    const MAX: usize = 10_000;
    const KEYS: u64 = 1_000_000;
    let clock = ManualClock::new();
    let l = keyed::<u64>(&clock, 10, 1, MAX);
    for k in 0..KEYS {
        let _ = l.try_acquire(&k);
    }
    let s = l.snapshot();
    assert_eq!(s.keys, MAX);
    assert_eq!(s.overflowed, KEYS - MAX as u64);
    // Each tracked key once, plus one call on the (burst 1) overflow bucket.
    assert_eq!(s.limits.admitted, MAX as u64 + 1);
    assert_eq!(s.sweeps, 1, "time did not move: one sweep, then none");
}

// ---- tower ----

#[cfg(feature = "tower")]
mod tower_layer {
    use super::*;
    use fusebox::ratelimit::RateLimitLayer;
    use fusebox::tower::{BoxError, CircuitBreakerLayer};
    use fusebox::State;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tower::{service_fn, Layer, Service, ServiceExt};

    /// A service that counts its calls and fails when asked to.
    fn counting(
        calls: &Arc<AtomicUsize>,
    ) -> impl Service<bool, Response = &'static str, Error = BoxError> + Clone {
        let calls = Arc::clone(calls);
        service_fn(move |fail: bool| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if fail {
                    Err::<&'static str, BoxError>("downstream failed".into())
                } else {
                    Ok("ok")
                }
            }
        })
    }

    #[tokio::test]
    async fn the_layer_refuses_with_a_boxed_rate_limited_and_spares_the_service() {
        let clock = ManualClock::new();
        let l = limiter(&clock, 2, 1);
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = RateLimitLayer::new(l.clone()).layer(counting(&calls));

        assert_eq!(svc.ready().await.unwrap().call(false).await.unwrap(), "ok");
        let err = svc.ready().await.unwrap().call(false).await.unwrap_err();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the refused call never ran"
        );
        let limited = err.downcast_ref::<RateLimited>().expect("a RateLimited");
        assert_eq!(limited.retry_after(), 500 * MS);
        let cause = err.cause();
        assert!(cause.is_refusal());
        assert!(matches!(cause, Cause::Refused(r) if r.policy() == "rate_limiter"));
        assert_eq!(cause.stopped_by(), "rate_limiter");

        clock.advance(500 * MS);
        assert_eq!(svc.ready().await.unwrap().call(false).await.unwrap(), "ok");
        let s = l.snapshot();
        assert_eq!((s.admitted, s.refused), (2, 1));
    }

    #[tokio::test]
    async fn shadow_mode_lets_the_layer_through_and_counts() {
        let clock = ManualClock::new();
        let l = limiter(&clock, 1, 1);
        l.set_mode(Mode::Shadow);
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = RateLimitLayer::new(l.clone()).layer(counting(&calls));
        for _ in 0..5 {
            svc.ready().await.unwrap().call(false).await.unwrap();
        }
        assert_eq!(calls.load(Ordering::SeqCst), 5);
        let s = l.snapshot();
        assert_eq!((s.admitted, s.shadowed, s.refused), (1, 4, 0));
    }

    #[tokio::test]
    async fn a_breaker_outside_the_layer_does_not_count_rate_limit_refusals_as_failures() {
        let clock = ManualClock::new();
        let breaker = fusebox::CircuitBreaker::builder()
            .consecutive_failures(2)
            .open_for(Duration::from_secs(30))
            .clock(clock.clone())
            .build()
            .unwrap();
        let l = limiter(&clock, 1, 1);
        let calls = Arc::new(AtomicUsize::new(0));
        let mut svc = CircuitBreakerLayer::new(breaker.clone())
            .layer(RateLimitLayer::new(l.clone()).layer(counting(&calls)));

        svc.ready().await.unwrap().call(false).await.unwrap();
        for _ in 0..10 {
            let err = svc.ready().await.unwrap().call(false).await.unwrap_err();
            assert!(err.is::<RateLimited>(), "{err}");
        }
        assert_eq!(l.snapshot().refused, 10);
        assert_eq!(breaker.state(), State::Closed, "refusals are not failures");
        let s = breaker.snapshot();
        assert_eq!((s.failures, s.consecutive_failures), (0, 0));

        // The control: two real failures through the same stack do trip it.
        clock.advance(Duration::from_secs(1));
        svc.ready().await.unwrap().call(true).await.unwrap_err();
        clock.advance(Duration::from_secs(1));
        svc.ready().await.unwrap().call(true).await.unwrap_err();
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn the_service_keeps_tower_s_shape() {
        let clock = ManualClock::new();
        let l = limiter(&clock, 1, 1);
        let layer: RateLimitLayer = l.clone().into();
        let mut svc = layer.layer(5u8);
        assert_eq!(*svc.get_ref(), 5);
        *svc.get_mut() = 6;
        assert_eq!(svc.limiter().config().per_second, Some(1));
        assert_eq!(svc.into_inner(), 6);
    }
}
