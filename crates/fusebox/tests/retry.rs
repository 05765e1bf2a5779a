//! Retry: attempts, backoff, predicate, refusals, timeouts, budget. All time is
//! manual (ManualSleep / ManualClock) or tokio's paused time.

use fusebox::retry::{
    Constant, DecorrelatedJitter, Exponential, FullJitter, ManualSleep, Retry, RetryBudget,
};
use fusebox::{Bulkhead, CircuitBreaker, Clock, Elapsed, ManualClock, State, TimeoutError};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn down() -> io::Error {
    io::Error::other("down")
}

#[test]
fn retries_until_success_with_backoff_delays() {
    let clock = ManualClock::new();
    let sleeper = ManualSleep::new(clock.clone());
    let retry = Retry::builder()
        .max_attempts(5)
        .backoff(Exponential::new(ms(10), 3.0, ms(100)).unwrap())
        .sleeper(sleeper.clone())
        .build()
        .unwrap();
    let mut n = 0;
    let r = retry.call(|| {
        n += 1;
        if n < 4 {
            Err(down())
        } else {
            Ok(n)
        }
    });
    assert_eq!(r.unwrap(), 4);
    assert_eq!(sleeper.sleeps(), vec![ms(10), ms(30), ms(90)]);
    assert_eq!(clock.now(), ms(130));
}

#[test]
fn stops_at_max_attempts_and_returns_last_error() {
    let retry = Retry::builder()
        .max_attempts(3)
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut n = 0;
    let r: Result<(), io::Error> = retry.call(|| {
        n += 1;
        Err(io::Error::other(format!("attempt {n}")))
    });
    assert_eq!(n, 3);
    assert_eq!(r.unwrap_err().to_string(), "attempt 3");
}

#[test]
fn stops_when_backoff_ends() {
    let retry = Retry::builder()
        .max_attempts(100)
        .backoff([ms(1), ms(2)].into_iter())
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut n = 0;
    let _ = retry.call(|| {
        n += 1;
        Err::<(), _>(down())
    });
    assert_eq!(n, 3);
}

#[test]
fn predicate_stops_non_retryable() {
    let retry = Retry::builder()
        .retry_if(|e: &io::Error| e.kind() == io::ErrorKind::ConnectionReset)
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut kinds = vec![io::ErrorKind::ConnectionReset, io::ErrorKind::NotFound].into_iter();
    let mut n = 0;
    let r: Result<(), _> = retry.call(|| {
        n += 1;
        Err(io::Error::from(kinds.next().unwrap()))
    });
    assert_eq!(n, 2);
    assert_eq!(r.unwrap_err().kind(), io::ErrorKind::NotFound);
}

#[test]
fn breaker_rejection_is_not_retried_by_default() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(2)
        .open_for(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    let sleeper = ManualSleep::new(clock.clone());
    let retry = Retry::builder()
        .max_attempts(5)
        .backoff(Constant::new(ms(1)))
        .sleeper(sleeper.clone())
        .build()
        .unwrap();
    let mut runs = 0;
    let r = retry.call(|| {
        breaker.call(|| {
            runs += 1;
            Err::<(), _>(down())
        })
    });
    // Two real failures open the breaker; the third attempt is rejected and
    // the loop stops there instead of spending attempts 4 and 5 on it.
    assert_eq!(runs, 2);
    assert!(r.unwrap_err().is_rejected());
    assert_eq!(sleeper.sleeps().len(), 2);
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn rejection_retried_when_asked_waits_retry_after() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::from_secs(7))
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = breaker.call(|| Err::<(), _>(down()));
    clock.advance(Duration::from_secs(2)); // 5 s of the open period left
    let sleeper = ManualSleep::new(clock.clone());
    let retry = Retry::builder()
        .max_attempts(3)
        .retry_rejections(true)
        .backoff(Constant::new(ms(50)))
        .sleeper(sleeper.clone())
        .build()
        .unwrap();
    let mut runs = 0;
    let r = retry.call(|| {
        breaker.call(|| {
            runs += 1;
            Ok::<_, io::Error>("probe ok")
        })
    });
    assert_eq!(r.unwrap(), "probe ok");
    assert_eq!(runs, 1);
    assert_eq!(sleeper.sleeps(), vec![Duration::from_secs(5)]);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn forced_open_is_never_retried() {
    let breaker = CircuitBreaker::builder().build().unwrap();
    breaker.force_open();
    let retry = Retry::builder()
        .retry_rejections(true)
        .sleeper(|_: Duration| panic!("must not sleep"))
        .build()
        .unwrap();
    let r = retry.call(|| breaker.call(|| Ok::<_, io::Error>(())));
    assert_eq!(
        r.unwrap_err().rejected().unwrap().state(),
        State::ForcedOpen
    );
}

#[test]
fn bulkhead_full_retried_only_when_asked() {
    let bulkhead = Bulkhead::new(1);
    let held = bulkhead.try_acquire().unwrap();
    let no = Retry::builder()
        .max_attempts(4)
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut tries = 0;
    let r = no.call(|| {
        tries += 1;
        bulkhead.try_call(|| ())
    });
    assert!(r.is_err());
    assert_eq!(tries, 1);

    // Asked: retries, and the slot frees during the first wait.
    let slot = Arc::new(std::sync::Mutex::new(Some(held)));
    let yes = Retry::builder()
        .max_attempts(4)
        .retry_rejections(true)
        .backoff(Constant::new(ms(5)))
        .sleeper(move |_: Duration| drop(slot.lock().unwrap().take()))
        .build()
        .unwrap();
    let mut tries = 0;
    let r = yes.call(|| {
        tries += 1;
        bulkhead.try_call(|| "in")
    });
    assert_eq!(r.unwrap(), "in");
    assert_eq!(tries, 2);
}

#[test]
fn timeouts_retried_unless_switched_off() {
    let elapsed = || Err::<(), _>(TimeoutError::<io::Error>::Elapsed(Elapsed::new(ms(100))));
    let on = Retry::builder().sleeper(|_: Duration| {}).build().unwrap();
    let mut n = 0;
    let _ = on.call(|| {
        n += 1;
        elapsed()
    });
    assert_eq!(n, 3);
    let off = Retry::builder()
        .retry_timeouts(false)
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut n = 0;
    let _ = off.call(|| {
        n += 1;
        elapsed()
    });
    assert_eq!(n, 1);
}

#[test]
fn call_plain_accepts_any_error() {
    let retry = Retry::builder()
        .retry_if(|e: &&str| *e == "transient")
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let mut errs = vec!["transient", "fatal"].into_iter();
    let r: Result<(), &str> = retry.call_plain(|| Err(errs.next().unwrap()));
    assert_eq!(r, Err("fatal"));
}

#[test]
fn config_errors_name_the_field() {
    let e = Retry::builder().max_attempts(0).build().unwrap_err();
    assert_eq!((e.field(), e.value()), ("max_attempts", "0"));
    let e = Exponential::new(ms(1), f64::INFINITY, ms(2)).unwrap_err();
    assert_eq!((e.field(), e.value()), ("factor", "inf"));
    let e = DecorrelatedJitter::new(ms(3), ms(2)).unwrap_err();
    assert_eq!((e.field(), e.value()), ("base", "3ms"));
    let e = RetryBudget::builder().ratio(-0.1).build().unwrap_err();
    assert_eq!((e.field(), e.value()), ("ratio", "-0.1"));
    let e = RetryBudget::builder().window(ms(1)).build().unwrap_err();
    assert_eq!((e.field(), e.value()), ("window", "1ms"));
}

// ---- budget ----

/// The acceptance test: the downstream always fails, N callers each
/// would retry up to 10 times; the budget caps the total load at
/// N x (1 + ratio) + the reserve.
#[test]
fn budget_caps_total_load_sequential_callers() {
    const N: u64 = 1000;
    let ratio = 0.2;
    let clock = ManualClock::new();
    let budget = RetryBudget::builder()
        .ratio(ratio)
        .min_per_second(1)
        .window(Duration::from_secs(1)) // reserve: 1 retry
        .clock(clock.clone())
        .build()
        .unwrap();
    let retry = Retry::builder()
        .max_attempts(10)
        .backoff(Constant::new(Duration::ZERO))
        .budget(budget.clone())
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let downstream_calls = AtomicU64::new(0);
    for _ in 0..N {
        let r: Result<(), io::Error> = retry.call(|| {
            downstream_calls.fetch_add(1, Ordering::Relaxed);
            Err(down())
        });
        assert!(r.is_err());
    }
    let total = downstream_calls.load(Ordering::Relaxed);
    let cap = (N as f64 * (1.0 + ratio)) as u64 + 1 /* reserve */;
    assert!(total <= cap, "total {total} > cap {cap}");
    // And the budget was actually spent (retries did happen): without it the
    // total would be 10 x N.
    assert!(total >= cap - 2, "total {total}: budget not used");
    assert!(budget.refused() > 0);
}

#[test]
fn budget_caps_total_load_concurrent_callers() {
    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 250;
    let clock = ManualClock::new();
    let budget = RetryBudget::builder()
        .ratio(0.1)
        .min_per_second(2)
        .window(Duration::from_secs(1)) // reserve: 2 retries
        .clock(clock.clone())
        .build()
        .unwrap();
    let retry = Retry::builder()
        .max_attempts(5)
        .backoff(Constant::new(Duration::ZERO))
        .budget(budget)
        .sleeper(|_: Duration| {})
        .build()
        .unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (retry, calls) = (retry.clone(), calls.clone());
            std::thread::spawn(move || {
                for _ in 0..PER_THREAD {
                    let _ = retry.call(|| {
                        calls.fetch_add(1, Ordering::Relaxed);
                        Err::<(), _>(down())
                    });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let n = THREADS * PER_THREAD;
    let total = calls.load(Ordering::Relaxed);
    let cap = (n as f64 * 1.1) as u64 + 2;
    assert!(total <= cap, "total {total} > cap {cap}");
    assert!(total > n, "no retry at all");
}

#[test]
fn budget_deposits_expire_after_the_window() {
    let clock = ManualClock::new();
    let budget = RetryBudget::builder()
        .ratio(0.5)
        .min_per_second(0)
        .window(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..10 {
        budget.deposit();
    }
    assert_eq!(budget.balance(), 5);
    clock.advance(Duration::from_secs(5));
    assert_eq!(budget.balance(), 5, "still inside the window");
    clock.advance(Duration::from_secs(5));
    assert_eq!(budget.balance(), 0, "expired");
}

#[test]
fn budget_withdrawals_expire_too_so_the_floor_refills() {
    let clock = ManualClock::new();
    let budget = RetryBudget::builder()
        .ratio(0.0)
        .min_per_second(3)
        .window(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        assert!(budget.try_withdraw());
    }
    assert!(!budget.try_withdraw());
    clock.advance(Duration::from_secs(1));
    assert!(budget.try_withdraw(), "a new window, a new floor");
}

// ---- backoff ----

#[test]
fn exponential_caps_and_never_overflows() {
    let b = Exponential::new(Duration::from_secs(1), 1e6, Duration::from_secs(60)).unwrap();
    let v: Vec<_> = b.take(5).collect();
    assert_eq!(v[0], Duration::from_secs(1));
    assert!(v[1..].iter().all(|d| *d == Duration::from_secs(60)));
    let huge = Exponential::doubling(Duration::MAX, Duration::MAX);
    assert_eq!(huge.take(3).count(), 3);
}

#[test]
fn jitter_clones_get_distinct_streams_but_replay_from_seed() {
    let template = FullJitter::with_seed(Constant::new(Duration::from_secs(1)), 42);
    let a: Vec<_> = template.clone().take(8).collect();
    let b: Vec<_> = template.clone().take(8).collect();
    assert_ne!(a, b, "two calls must not share a jitter sequence");
    let again = FullJitter::with_seed(Constant::new(Duration::from_secs(1)), 42);
    let a2: Vec<_> = again.clone().take(8).collect();
    let b2: Vec<_> = again.clone().take(8).collect();
    assert_eq!((a, b), (a2, b2));
}

#[test]
fn full_jitter_spreads_over_the_range() {
    let d = Duration::from_millis(1000);
    let v: Vec<_> = FullJitter::with_seed(Constant::new(d), 1)
        .take(1000)
        .collect();
    assert!(v.iter().all(|x| *x <= d));
    let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / 1000.0;
    assert!((0.4..0.6).contains(&mean), "mean {mean}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn exponential_stays_in_range(init in 0u64..10_000, factor in 1.0f64..10.0, max in 0u64..100_000) {
            let (init, max) = (ms(init), ms(max));
            for d in Exponential::new(init, factor, max).unwrap().take(40) {
                prop_assert!(d <= max);
                prop_assert!(d >= init.min(max));
            }
        }

        #[test]
        fn full_jitter_stays_under_inner(seed: u64, init in 0u64..10_000, max in 0u64..100_000) {
            let inner = Exponential::doubling(ms(init), ms(max));
            for (d, cap) in FullJitter::with_seed(inner, seed).zip(inner).take(40) {
                prop_assert!(d <= cap);
            }
        }

        #[test]
        fn decorrelated_stays_in_range(seed: u64, base in 0u64..1_000, extra in 0u64..100_000) {
            let (base, max) = (ms(base), ms(base + extra));
            for d in DecorrelatedJitter::with_seed(base, max, seed).unwrap().take(40) {
                prop_assert!(base <= d && d <= max);
            }
        }
    }
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;
    use fusebox::Timeout;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn async_retry_waits_on_paused_time() {
        let retry = Retry::builder()
            .max_attempts(4)
            .backoff(Exponential::doubling(
                Duration::from_secs(1),
                Duration::from_secs(60),
            ))
            .build()
            .unwrap();
        let t0 = Instant::now();
        let mut n = 0;
        let r = retry
            .call_async(|| {
                n += 1;
                async { Err::<(), _>(down()) }
            })
            .await;
        assert!(r.is_err());
        assert_eq!(n, 4);
        assert_eq!(t0.elapsed(), Duration::from_secs(1 + 2 + 4));
    }

    #[tokio::test(start_paused = true)]
    async fn async_retry_of_timeouts() {
        let retry = Retry::builder()
            .max_attempts(3)
            .backoff(Constant::new(ms(10)))
            .build()
            .unwrap();
        let t = Timeout::new(ms(100));
        let mut n = 0u32;
        let r = retry
            .call_async(|| {
                n += 1;
                let slow = n < 3;
                t.call(async move {
                    if slow {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Ok::<_, io::Error>(n)
                })
            })
            .await;
        assert_eq!(r.unwrap(), 3);
    }
}

#[test]
fn policies_are_send_sync() {
    fn check<T: Clone + Send + Sync + 'static>(_: &T) {}
    check(&Retry::builder().build().unwrap());
    check(&RetryBudget::builder().build().unwrap());
    check(&ManualSleep::new(ManualClock::new()));
    let with_closure = Retry::builder()
        .retry_if(|e: &io::Error| e.kind() == io::ErrorKind::TimedOut)
        .backoff(DecorrelatedJitter::new(ms(1), ms(10)).unwrap())
        .build()
        .unwrap();
    check(&with_closure);
}
