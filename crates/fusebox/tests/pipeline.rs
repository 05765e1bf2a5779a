//! Pipeline: composition order, one error type, fallback reasons, sync
//! timeout, panics, cancellation, sharing, and no allocation per sync call.

use fusebox::retry::{Constant, ManualSleep, Retry};
use fusebox::{
    Bulkhead, Cause, CircuitBreaker, Clock, ManualClock, Outcome, Pipeline, PipelineError, State,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;
use std::time::Duration;

// ---- allocation counting (this thread only) ----

struct Counting;
thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

fn down() -> io::Error {
    io::Error::other("down")
}

fn breaker(clock: &ManualClock, failures: u32) -> CircuitBreaker {
    CircuitBreaker::builder()
        .consecutive_failures(failures)
        .open_for(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn retry_stops_at_the_open_breaker() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 3);
    let p = Pipeline::builder()
        .retry(
            Retry::builder()
                .max_attempts(10)
                .backoff(Constant::new(Duration::from_millis(1)))
                .sleeper(ManualSleep::new(clock.clone()))
                .build()
                .unwrap(),
        )
        .breaker(b.clone())
        .build();
    let mut runs = 0;
    let e = p
        .call(|| {
            runs += 1;
            Err::<(), _>(down())
        })
        .unwrap_err();
    assert_eq!(runs, 3, "three failures open the breaker; no more runs");
    assert_eq!(e.stopped_by(), "breaker");
    assert_eq!(b.state(), State::Open);
}

#[test]
fn retry_asked_to_wait_out_the_breaker_probes_after_retry_after() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 2);
    let sleeper = ManualSleep::new(clock.clone());
    let p = Pipeline::builder()
        .retry(
            Retry::builder()
                .max_attempts(4)
                .retry_rejections(true)
                .backoff(Constant::new(Duration::from_millis(10)))
                .sleeper(sleeper.clone())
                .build()
                .unwrap(),
        )
        .breaker(b.clone())
        .build();
    // Fails twice (the second failure, at 10 ms, opens it for 30 s); the
    // third attempt is rejected and the retry waits exactly the rest of the
    // open period, not the 10 ms backoff; the half-open probe succeeds.
    let mut runs = 0;
    let r = p.call(|| {
        runs += 1;
        if runs <= 2 {
            Err(down())
        } else {
            Ok(runs)
        }
    });
    assert_eq!(r.unwrap(), 3);
    assert_eq!(
        sleeper.sleeps(),
        vec![
            Duration::from_millis(10),
            Duration::from_millis(10),
            Duration::from_millis(29_990)
        ]
    );
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn full_bulkhead_gives_the_breaker_no_verdict() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let bulkhead = Bulkhead::new(1);
    let _held = bulkhead.try_acquire().unwrap();
    let p = Pipeline::builder()
        .breaker(b.clone())
        .bulkhead(bulkhead.clone())
        .build();
    let e = p.call(|| Ok::<_, io::Error>(())).unwrap_err();
    assert!(matches!(e, PipelineError::BulkheadFull(ref f) if f.limit() == 1));
    assert!(e.is_refusal());
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 0);
    assert_eq!(bulkhead.snapshot().rejected, 1);
}

#[test]
fn sync_timeout_reports_late_answers_and_counts_a_failure() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let p = Pipeline::builder()
        .breaker(b.clone())
        .timeout(Duration::from_millis(100))
        .build();
    let c = clock.clone();
    let ok_in_time = p.call(|| {
        c.advance(Duration::from_millis(100));
        Ok::<_, io::Error>("fast")
    });
    assert_eq!(ok_in_time.unwrap(), "fast");
    let late = p.call(|| {
        c.advance(Duration::from_millis(101));
        Ok::<_, io::Error>("slow")
    });
    match late {
        Err(PipelineError::TimedOut(e)) => assert_eq!(e.after(), Duration::from_millis(100)),
        other => panic!("expected TimedOut, got {other:?}"),
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn fallback_gets_the_reason_of_each_policy() {
    let clock = ManualClock::new();
    let answer = |why: Cause<'_, io::Error>| Some(why.to_string());

    let open = breaker(&clock, 1);
    open.force_open();
    let p = Pipeline::builder().fallback(answer).breaker(open).build();
    assert_eq!(
        p.call(|| Ok("live".to_string())).unwrap(),
        "rejected by breaker"
    );

    let p = Pipeline::builder()
        .fallback(answer)
        .bulkhead(Bulkhead::new(0))
        .build();
    assert_eq!(p.call(|| Ok("live".to_string())).unwrap(), "bulkhead full");

    let c = clock.clone();
    let p = Pipeline::builder()
        .fallback(answer)
        .breaker(breaker(&clock, 5))
        .timeout(Duration::from_millis(1))
        .build();
    let r = p.call(|| {
        c.advance(Duration::from_millis(2));
        Ok("live".to_string())
    });
    assert_eq!(r.unwrap(), "timed out");

    let p = Pipeline::builder().fallback(answer).build();
    assert_eq!(p.call(|| Err(down())).unwrap(), "failed");
    assert_eq!(
        p.call(|| Ok::<_, io::Error>("live".to_string())).unwrap(),
        "live"
    );
}

#[test]
fn classify_ignores_client_errors() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let p = Pipeline::builder()
        .breaker(b.clone())
        .classify(|status: &u16| {
            if *status >= 500 {
                Outcome::Failure
            } else {
                Outcome::Ignore
            }
        })
        .build();
    for _ in 0..5 {
        let e = p.call(|| Err::<(), u16>(404)).unwrap_err();
        assert_eq!(e.into_inner(), Some(404));
    }
    assert_eq!(b.state(), State::Closed);
    let _ = p.call(|| Err::<(), u16>(502));
    assert_eq!(b.state(), State::Open);
}

#[test]
fn retry_predicate_sees_the_inner_error() {
    let p = Pipeline::builder()
        .retry(
            Retry::builder()
                .max_attempts(5)
                .retry_if(|e: &u16| *e == 503)
                .sleeper(|_: Duration| {})
                .build()
                .unwrap(),
        )
        .build();
    let mut codes = vec![503, 503, 400, 200].into_iter();
    let mut runs = 0;
    let r = p.call(|| {
        runs += 1;
        match codes.next().unwrap() {
            200 => Ok(()),
            c => Err(c),
        }
    });
    assert_eq!(r.unwrap_err().into_inner(), Some(400));
    assert_eq!(runs, 3);
}

#[test]
fn panic_counts_as_failure_and_frees_the_slot() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let bulkhead = Bulkhead::new(1);
    let p = Pipeline::builder()
        .breaker(b.clone())
        .bulkhead(bulkhead.clone())
        .build();
    let p2 = p.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _ = p2.call(|| -> Result<(), io::Error> { panic!("bug in the call") });
    }));
    assert!(r.is_err());
    assert_eq!(b.state(), State::Open);
    assert_eq!(bulkhead.snapshot().in_use, 0);
}

#[test]
fn no_allocation_per_sync_call() {
    let clock = ManualClock::new();
    let stats = fusebox::PolicyStats::new();
    let p = Pipeline::builder()
        .fallback(|_why: Cause<'_, u32>| Some(0u64))
        .retry(
            Retry::builder()
                .max_attempts(3)
                .backoff(Constant::new(Duration::ZERO))
                .sleeper(|_: Duration| {})
                .build()
                .unwrap(),
        )
        .breaker(breaker(&clock, 1_000_000))
        .bulkhead(Bulkhead::new(8))
        .timeout(Duration::from_secs(1))
        .stats(stats.clone())
        .build();
    // Warm up (lazy statics, thread-locals).
    let _ = p.call(|| Ok::<u64, u32>(1));
    let before = allocs();
    let mut sum = 0;
    for i in 0..1000u64 {
        sum += p
            .call(|| if i % 3 == 0 { Err(7u32) } else { Ok(i) })
            .unwrap();
    }
    let after = allocs();
    assert!(sum > 0);
    assert_eq!(after - before, 0, "allocations on the sync path");
    // The counters counted without allocating: every third call fails three
    // times and falls back.
    let s = stats.snapshot();
    assert_eq!(s.calls, 1001);
    assert_eq!(s.attempts, 1001 + 2 * 334);
    assert_eq!(s.fallbacks, [0, 0, 0, 334]);
}

#[test]
fn pipeline_is_clone_send_sync_and_shared() {
    fn check<T: Clone + Send + Sync + 'static>(_: &T) {}
    let clock = ManualClock::new();
    let b = breaker(&clock, 1_000);
    let p = Pipeline::builder()
        .fallback_value(0u32)
        .breaker(b.clone())
        .bulkhead(Bulkhead::new(4))
        .build();
    check(&p);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || {
                (0..100)
                    .map(|i| p.call(|| Ok::<u32, io::Error>(i)).unwrap())
                    .sum::<u32>()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 4950);
    }
    assert_eq!(b.snapshot().calls, 0, "consecutive policy keeps no window");
    assert_eq!(clock.now(), Duration::ZERO);
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;
    use std::future::Future;
    use std::sync::Arc;
    use tokio::time::{sleep, Instant};

    #[tokio::test(start_paused = true)]
    async fn async_timeout_cancels_and_trips() {
        let b = CircuitBreaker::builder()
            .consecutive_failures(2)
            .build()
            .unwrap();
        let p = Pipeline::builder()
            .breaker(b.clone())
            .timeout(Duration::from_millis(50))
            .build();
        let t0 = Instant::now();
        for _ in 0..2 {
            let e = p
                .call_async(|| async {
                    sleep(Duration::from_secs(10)).await;
                    Ok::<_, io::Error>(())
                })
                .await
                .unwrap_err();
            assert_eq!(e.stopped_by(), "timeout");
        }
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
        assert_eq!(b.state(), State::Open);
    }

    #[tokio::test(start_paused = true)]
    async fn async_retry_with_backoff_then_fallback() {
        let p = Pipeline::builder()
            .fallback(|why: Cause<'_, io::Error>| Some(format!("fallback after: {why}")))
            .retry(
                Retry::builder()
                    .max_attempts(3)
                    .backoff(Constant::new(Duration::from_secs(1)))
                    .build()
                    .unwrap(),
            )
            .build();
        let t0 = Instant::now();
        let mut runs = 0;
        let r = p
            .call_async(|| {
                runs += 1;
                async { Err::<String, _>(down()) }
            })
            .await;
        assert_eq!(r.unwrap(), "fallback after: failed");
        assert_eq!(runs, 3);
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn async_bulkhead_waits_then_refuses() {
        let bulkhead = Bulkhead::builder(1)
            .max_wait(Duration::from_millis(30))
            .build();
        let p = Pipeline::builder().bulkhead(bulkhead.clone()).build();
        let p2 = p.clone();
        let long = tokio::spawn(async move {
            p2.call_async(|| async {
                sleep(Duration::from_millis(100)).await;
                Ok::<_, io::Error>("long")
            })
            .await
        });
        tokio::task::yield_now().await;
        let t0 = Instant::now();
        let e = p
            .call_async(|| async { Ok::<_, io::Error>("short") })
            .await
            .unwrap_err();
        assert!(matches!(e, PipelineError::BulkheadFull(_)));
        assert_eq!(t0.elapsed(), Duration::from_millis(30));
        assert_eq!(long.await.unwrap().unwrap(), "long");
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_half_open_probe_frees_the_probe_slot() {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap();
        let bulkhead = Bulkhead::new(1);
        let p = Pipeline::builder()
            .breaker(b.clone())
            .bulkhead(bulkhead.clone())
            .build();
        let _ = p.call(|| Err::<(), _>(down()));
        clock.advance(Duration::from_secs(1));
        assert_eq!(b.state(), State::HalfOpen);

        // The probe starts and is dropped mid-call.
        let mut probe = Box::pin(p.call_async(|| sleep(Duration::from_secs(60)).then_ok()));
        struct Noop;
        impl std::task::Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = std::task::Waker::from(Arc::new(Noop));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(probe.as_mut().poll(&mut cx).is_pending());
        assert_eq!(bulkhead.snapshot().in_use, 1);
        drop(probe);
        assert_eq!(bulkhead.snapshot().in_use, 0);
        // No verdict: still half-open, and the probe slot is free again.
        assert_eq!(b.state(), State::HalfOpen);
        let r = p.call_async(|| async { Ok::<_, io::Error>("probe") }).await;
        assert_eq!(r.unwrap(), "probe");
        assert_eq!(b.state(), State::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn async_panic_counts_as_failure_and_frees_the_slot() {
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .build()
            .unwrap();
        let bulkhead = Bulkhead::new(1);
        let p = Pipeline::builder()
            .breaker(b.clone())
            .bulkhead(bulkhead.clone())
            .build();
        let task = tokio::spawn(async move {
            p.call_async(|| async {
                tokio::task::yield_now().await;
                if true {
                    panic!("bug in the async call");
                }
                Ok::<(), io::Error>(())
            })
            .await
        });
        assert!(task.await.unwrap_err().is_panic());
        assert_eq!(b.state(), State::Open);
        assert_eq!(bulkhead.snapshot().in_use, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn run_async_is_one_attempt() {
        let p = Pipeline::builder()
            .retry(
                Retry::builder()
                    .max_attempts(5)
                    .backoff(Constant::new(Duration::ZERO))
                    .build()
                    .unwrap(),
            )
            .build();
        let e = p
            .run_async(async { Err::<(), _>(down()) })
            .await
            .unwrap_err();
        assert_eq!(e.stopped_by(), "call");
    }

    #[test]
    fn async_call_future_is_send() {
        fn send<T: Send>(_: T) {}
        let p = Pipeline::builder()
            .breaker(CircuitBreaker::builder().build().unwrap())
            .bulkhead(Bulkhead::new(1))
            .timeout(Duration::from_secs(1))
            .build();
        send(p.call_async(|| async { Ok::<_, io::Error>(1) }));
    }

    trait ThenOk: Future<Output = ()> + Sized {
        fn then_ok(self) -> impl Future<Output = Result<(), io::Error>> {
            async move {
                self.await;
                Ok(())
            }
        }
    }
    impl<F: Future<Output = ()>> ThenOk for F {}
}

// ---- `.guarded(&policy)` ----

mod guarded {
    use super::*;
    #[allow(unused_imports)]
    use fusebox::{GuardedAsyncFn, GuardedFn, GuardedFuture};

    fn get_price(id: u32) -> Result<f64, io::Error> {
        if id == 0 {
            Err(io::Error::other("no such product"))
        } else {
            Ok(f64::from(id) + 0.99)
        }
    }

    #[test]
    fn sync_closure_guarded_by_each_policy() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        assert_eq!((|| get_price(18)).guarded(&b).unwrap(), 18.99);
        assert!((|| get_price(0))
            .guarded(&b)
            .unwrap_err()
            .into_inner()
            .is_some());
        // The failure opened the breaker: the next call is rejected.
        assert!((|| get_price(18)).guarded(&b).unwrap_err().is_rejected());

        let full = Bulkhead::new(0);
        assert_eq!(
            (|| get_price(1)).guarded(&full).unwrap_err().stopped_by(),
            "bulkhead"
        );

        let retry = Retry::builder().sleeper(|_: Duration| {}).build().unwrap();
        let mut n = 0;
        let r = (|| {
            n += 1;
            get_price(0)
        })
        .guarded(&retry);
        assert!(r.is_err());
        assert_eq!(n, 3);

        let p = Pipeline::builder().fallback_value(0.0).build();
        assert_eq!((|| get_price(0)).guarded(&p).unwrap(), 0.0);
    }

    #[cfg(feature = "tokio")]
    mod with_tokio {
        use super::*;
        use fusebox::Timeout;

        async fn fetch_reviews(id: u32) -> Result<Vec<String>, io::Error> {
            tokio::time::sleep(Duration::from_millis(u64::from(id))).await;
            Ok(vec![format!("review {id}")])
        }

        #[tokio::test(start_paused = true)]
        async fn futures_and_async_closures() {
            let t = Timeout::new(Duration::from_millis(50));
            assert!(fetch_reviews(10).guarded(&t).await.is_ok());
            assert!(fetch_reviews(60)
                .guarded(&t)
                .await
                .unwrap_err()
                .is_elapsed());

            let p = Pipeline::builder()
                .timeout(Duration::from_millis(50))
                .retry(
                    Retry::builder()
                        .backoff(Constant::new(Duration::from_millis(1)))
                        .build()
                        .unwrap(),
                )
                .build();
            // A future: one attempt, then timed out.
            let e = fetch_reviews(60).guarded(&p).await.unwrap_err();
            assert_eq!(e.stopped_by(), "timeout");
            // A closure: retried; the third attempt is fast enough.
            let mut delays = vec![60, 70, 5].into_iter();
            let r = (|| fetch_reviews(delays.next().unwrap())).guarded(&p).await;
            assert_eq!(r.unwrap(), vec!["review 5".to_string()]);

            let b = CircuitBreaker::builder().build().unwrap();
            assert!(fetch_reviews(1).guarded(&b).await.is_ok());
            assert!((|| fetch_reviews(1)).guarded(&b).await.is_ok());
            assert!((|| get_price(2)).guarded(&b).is_ok());
        }

        #[test]
        fn guarded_futures_are_send() {
            fn send<T: Send>(_: &T) {}
            let p = Pipeline::builder()
                .breaker(CircuitBreaker::builder().build().unwrap())
                .bulkhead(Bulkhead::new(1))
                .timeout(Duration::from_secs(1))
                .build();
            let f = fetch_reviews(1).guarded(&p);
            send(&f);
            let g = (|| fetch_reviews(1)).guarded(&p);
            send(&g);
        }
    }
}

// ---- ordered stages ----

fn in_use(bulkheads: &[Bulkhead]) -> Vec<usize> {
    bulkheads.iter().map(|b| b.snapshot().in_use).collect()
}

/// `b`, then `n` bulkheads of one slot each, as stages in that order: more
/// stages than one frame holds.
fn long_list(
    b: &CircuitBreaker,
    n: usize,
) -> (
    fusebox::pipeline::PipelineBuilder<
        fusebox::retry::DefaultBackoff,
        fusebox::retry::AnyError,
        fusebox::pipeline::NoFallback,
        fusebox::pipeline::AllErrors,
    >,
    Vec<Bulkhead>,
) {
    let bulkheads: Vec<Bulkhead> = (0..n).map(|_| Bulkhead::new(1)).collect();
    let builder = bulkheads
        .iter()
        .fold(Pipeline::builder().stage(b.clone()), |p, bh| {
            p.stage(bh.clone())
        });
    (builder, bulkheads)
}

#[test]
fn named_setters_place_policies_in_the_documented_order() {
    let clock = ManualClock::new();
    let p = Pipeline::builder()
        .bulkhead(Bulkhead::new(2))
        .breaker(breaker(&clock, 3))
        .bulkhead(Bulkhead::new(5)) // replaces the first bulkhead
        .build();
    let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
    assert_eq!(kinds, ["breaker", "bulkhead"]);
    assert_eq!(p.bulkhead().unwrap().limit(), 5);
}

#[test]
fn stages_run_in_the_order_given_and_an_outer_full_bulkhead_spares_the_breaker() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let full = Bulkhead::new(0);
    let p = Pipeline::builder()
        .stage(full.clone())
        .stage(b.clone())
        .build();
    let e = p.call(|| Err::<(), _>(down())).unwrap_err();
    assert!(matches!(e, PipelineError::BulkheadFull(_)));
    assert_eq!(b.state(), State::Closed);
    assert_eq!(full.snapshot().rejected, 1);
}

/// More stages than one frame holds: the rest nest, and every stage is
/// settled whatever happens inside.
#[test]
fn a_long_list_of_stages_settles_every_one() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let (builder, bulkheads) = long_list(&b, 6);
    let p = builder.build();
    assert_eq!(p.stages().len(), 7);

    assert_eq!(p.call(|| Ok::<_, io::Error>(3)).unwrap(), 3);
    assert_eq!(in_use(&bulkheads), [0; 6]);

    // Every slot is held while the call runs.
    let seen = p.call(|| Ok::<_, io::Error>(in_use(&bulkheads))).unwrap();
    assert_eq!(seen, [1; 6]);

    // A panic deep inside: the breaker counts a failure, every slot is back.
    let p2 = p.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _ = p2.call(|| -> Result<(), io::Error> { panic!("bug in the call") });
    }));
    assert!(r.is_err());
    assert_eq!(in_use(&bulkheads), [0; 6]);
    assert_eq!(b.state(), State::Open);
}

/// A refusal from a stage in the nested part of a long list is seen by the
/// breaker outside as no verdict, and frees what the outer stages hold.
#[test]
fn a_refusal_deep_in_a_long_list_gives_the_breaker_no_verdict() {
    let clock = ManualClock::new();
    let b = breaker(&clock, 1);
    let (builder, open) = long_list(&b, 5);
    let p = builder.stage(Bulkhead::new(0)).build();
    for _ in 0..3 {
        let e = p.call(|| Err::<(), _>(down())).unwrap_err();
        assert!(matches!(e, PipelineError::BulkheadFull(_)));
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(in_use(&open), [0; 5]);
}

#[cfg(feature = "ratelimit")]
mod rate_limited {
    use super::*;
    use fusebox::ratelimit::{RateLimitConfig, RateLimiter};

    fn limiter(clock: &ManualClock) -> RateLimiter {
        RateLimiter::builder()
            .config(RateLimitConfig::per_second(1).burst(1))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    #[test]
    fn the_rate_limiter_sits_inside_the_breaker_and_outside_the_bulkhead() {
        let clock = ManualClock::new();
        let p = Pipeline::builder()
            .bulkhead(Bulkhead::new(1))
            .rate_limiter(limiter(&clock))
            .breaker(breaker(&clock, 1))
            .build();
        let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
        assert_eq!(kinds, ["breaker", "rate_limiter", "bulkhead"]);
    }

    #[test]
    fn a_call_over_the_rate_is_refused_takes_no_slot_and_gives_the_breaker_no_verdict() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        let bh = Bulkhead::new(1);
        let p = Pipeline::builder()
            .breaker(b.clone())
            .rate_limiter(limiter(&clock))
            .bulkhead(bh.clone())
            .build();
        assert!(p.call(|| Ok::<_, io::Error>(())).is_ok());
        let e = p.call(|| Err::<(), _>(down())).unwrap_err();
        let PipelineError::RateLimited(r) = &e else {
            panic!("expected RateLimited, got {e:?}");
        };
        assert_eq!(r.retry_after(), Duration::from_secs(1));
        assert_eq!(e.stopped_by(), "rate_limiter");
        assert!(e.is_refusal());
        assert_eq!(b.state(), State::Closed); // a refusal is not a failure
        assert_eq!(bh.snapshot().in_use, 0);
        clock.advance(Duration::from_secs(1));
        assert!(p.call(|| Ok::<_, io::Error>(())).is_ok());
    }

    #[test]
    fn two_rate_limiters_in_the_order_given() {
        let clock = ManualClock::new();
        let (outer, inner) = (limiter(&clock), limiter(&clock));
        let p = Pipeline::builder()
            .stage(outer.clone())
            .stage(inner.clone())
            .build();
        assert!(p.call(|| Ok::<_, io::Error>(())).is_ok());
        assert!(p.call(|| Ok::<_, io::Error>(())).is_err());
        // The outer one refused the second call: the inner one was not asked.
        assert!(inner.try_acquire().is_err());
        clock.advance(Duration::from_secs(1));
        assert!(inner.try_acquire().is_ok());
        assert!(outer.try_acquire().is_ok());
    }
}

#[cfg(feature = "tokio")]
mod long_async {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_long_list_of_stages_runs_async_and_settles_every_one() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        let (builder, bulkheads) = long_list(&b, 6);
        let p = builder.timeout(Duration::from_secs(1)).build();
        let seen = p
            .call_async(|| async { Ok::<_, io::Error>(in_use(&bulkheads)) })
            .await
            .unwrap();
        assert_eq!(seen, [1; 6]);
        assert_eq!(in_use(&bulkheads), [0; 6]);

        // A late attempt: the deepest timeout cancels it, the breaker trips.
        let e = p
            .call_async(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<Vec<usize>, io::Error>(Vec::new())
            })
            .await
            .unwrap_err();
        assert!(matches!(e, PipelineError::TimedOut(_)));
        assert_eq!(b.state(), State::Open);
        assert_eq!(in_use(&bulkheads), [0; 6]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_call_through_a_long_list_frees_every_slot_without_a_verdict() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        let (builder, bulkheads) = long_list(&b, 6);
        let p = builder.build();
        let call = p.call_async(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Err::<(), _>(down())
        });
        let r = tokio::time::timeout(Duration::from_millis(10), call).await;
        assert!(r.is_err()); // cancelled while running
        assert_eq!(in_use(&bulkheads), [0; 6]);
        assert_eq!(b.state(), State::Closed);
    }
}

#[cfg(feature = "tokio")]
mod hedged {
    use super::*;
    use fusebox::hedge::{Delay, Hedge};
    use fusebox::retry::RetryBudget;

    #[tokio::test(start_paused = true)]
    async fn each_hedged_attempt_passes_the_stages_and_a_dropped_one_is_no_failure() {
        let clock = ManualClock::new();
        let b = breaker(&clock, 1);
        let bh = Bulkhead::new(2);
        let hedge = Hedge::builder()
            .delay(Delay::Fixed(Duration::from_millis(50)))
            .build()
            .unwrap();
        let p = Pipeline::builder()
            .hedge(hedge.clone())
            .breaker(b.clone())
            .bulkhead(bh.clone())
            .build();
        let mut n = 0;
        let seen = std::sync::Mutex::new(Vec::new());
        let r = p
            .call_async(|| {
                n += 1;
                let first = n == 1;
                let (bh, seen) = (bh.clone(), &seen);
                async move {
                    let took = if first { 5_000 } else { 10 };
                    tokio::time::sleep(Duration::from_millis(took)).await;
                    seen.lock().unwrap().push(bh.snapshot().in_use);
                    Ok::<_, io::Error>(n)
                }
            })
            .await;
        assert!(r.is_ok());
        assert_eq!(*seen.lock().unwrap(), [2], "both attempts held a slot");
        assert_eq!(bh.snapshot().in_use, 0);
        assert_eq!(
            b.state(),
            State::Closed,
            "the dropped attempt is not a failure"
        );
        assert_eq!(hedge.stats().won_by_hedge, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_hedge_each_attempt_and_share_one_budget() {
        let budget = RetryBudget::builder()
            .ratio(1.0)
            .min_per_second(0)
            .build()
            .unwrap();
        let retry = Retry::builder()
            .max_attempts(2)
            .backoff(Constant::new(Duration::ZERO))
            .budget(budget.clone())
            .build()
            .unwrap();
        let hedge = Hedge::builder()
            .delay(Delay::Fixed(Duration::from_millis(50)))
            .shared_budget(budget.clone())
            .build()
            .unwrap();
        let p = Pipeline::builder()
            .retry(retry)
            .hedge(hedge.clone())
            .build();
        let mut n = 0;
        let r = p
            .call_async(|| {
                n += 1;
                let k = n;
                async move {
                    // 1: slow, then fails; 2: the hedge, fails at once; 3: a
                    // retry would answer.
                    match k {
                        1 => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            Err(down())
                        }
                        2 => Err(down()),
                        _ => Ok(k),
                    }
                }
            })
            .await;
        // The call deposited one retry; the hedge spent it, so the retry
        // after both attempts failed was refused: one account for both.
        assert!(matches!(r, Err(PipelineError::Failed(_))));
        assert_eq!(n, 2);
        assert_eq!(hedge.stats().hedges, 1);
        assert_eq!(budget.refused(), 1);
    }
}
