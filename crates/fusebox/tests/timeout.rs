//! Timeout: deadlines on paused time; Elapsed is distinct from the inner error;
//! a timed-out call is a breaker failure and is cancelled.
#![cfg(feature = "tokio")]

use fusebox::{timeout, CircuitBreaker, Elapsed, State, Timeout, TimeoutError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, Instant};

#[tokio::test(start_paused = true)]
async fn elapses_exactly_at_the_deadline() {
    let t0 = Instant::now();
    let r = timeout(Duration::from_millis(300), sleep(Duration::from_secs(10))).await;
    assert_eq!(r, Err(Elapsed::new(Duration::from_millis(300))));
    assert_eq!(t0.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn finishes_in_time() {
    let t0 = Instant::now();
    let r = timeout(Duration::from_millis(300), async {
        sleep(Duration::from_millis(299)).await;
        "ok"
    })
    .await;
    assert_eq!(r, Ok("ok"));
    assert_eq!(t0.elapsed(), Duration::from_millis(299));
}

#[tokio::test(start_paused = true)]
async fn elapsed_is_distinct_from_inner_error() {
    let t = Timeout::new(Duration::from_secs(1));
    let inner: Result<(), TimeoutError<&str>> = t.call(async { Err("boom") }).await;
    assert_eq!(inner, Err(TimeoutError::Inner("boom")));
    let late: Result<(), TimeoutError<&str>> = t
        .call(async {
            sleep(Duration::from_secs(2)).await;
            Err("boom")
        })
        .await;
    match late {
        Err(TimeoutError::Elapsed(e)) => assert_eq!(e.after(), Duration::from_secs(1)),
        other => panic!("expected Elapsed, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn timed_out_future_is_dropped() {
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = SetOnDrop(dropped.clone());
    let r = Timeout::new(Duration::from_millis(10))
        .run(async move {
            let _g = guard;
            std::future::pending::<()>().await
        })
        .await;
    assert!(r.is_err());
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn timeout_counts_as_breaker_failure() {
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(2)
        .build()
        .unwrap();
    let t = Timeout::new(Duration::from_millis(50));
    for _ in 0..2 {
        let r = breaker
            .call_async(|| {
                t.call(async {
                    sleep(Duration::from_secs(1)).await;
                    Ok::<_, std::io::Error>(())
                })
            })
            .await;
        let inner = r.unwrap_err().into_inner().expect("ran, not rejected");
        assert!(inner.is_elapsed());
    }
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn error_source_chain() {
    use std::error::Error as _;
    let io = std::io::Error::other("disk");
    let e: TimeoutError<std::io::Error> = TimeoutError::Inner(io);
    assert_eq!(e.source().unwrap().to_string(), "disk");
    let e: TimeoutError<std::io::Error> = TimeoutError::Elapsed(Elapsed::new(Duration::ZERO));
    assert!(e.source().is_none());
}

/// A future that is ready at its first poll never arms the timer: it runs
/// outside any runtime (where creating a tokio timer panics).
#[test]
fn a_ready_future_needs_no_timer() {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut fut = std::pin::pin!(timeout(Duration::from_millis(10), async { 7 }));
    assert_eq!(fut.as_mut().poll(&mut cx), std::task::Poll::Ready(Ok(7)));
    #[cfg(feature = "tower")]
    {
        use tower::{Layer, Service};
        let mut svc = fusebox::tower::TimeoutLayer::new(Duration::from_millis(10)).layer(
            tower::service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x + 1) }),
        );
        let mut call = std::pin::pin!(svc.call(1));
        match call.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(Ok(2)) => {}
            other => panic!("{other:?}"),
        }
    }
}

/// The deadline runs from the call, not from the first time the future
/// waits: a call polled 60 ms late with 70 ms of work left times out at
/// 100 ms.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn the_deadline_runs_from_the_call_not_from_the_first_wait() {
    use tower::{Layer, Service};
    let mut svc = fusebox::tower::TimeoutLayer::new(Duration::from_millis(100)).layer(
        tower::service_fn(|_: ()| async {
            sleep(Duration::from_millis(70)).await;
            Ok::<_, std::io::Error>(())
        }),
    );
    let start = Instant::now();
    let call = svc.call(());
    tokio::time::advance(Duration::from_millis(60)).await;
    let err = call.await.unwrap_err();
    assert!(err.downcast_ref::<Elapsed>().is_some(), "{err}");
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    // In time: answered, at 70 ms.
    let start = Instant::now();
    svc.call(()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(70));
}

/// A future that uses up the task's budget (tokio's coop) on every poll
/// still times out: the timer, polled under that budget, is refused, and
/// the clock decides.
#[tokio::test(start_paused = true)]
async fn a_future_that_uses_up_the_budget_still_times_out() {
    let busy = async {
        for i in 0..1_000_000u32 {
            if i == 1_000 {
                tokio::time::advance(Duration::from_millis(30)).await;
            }
            tokio::task::consume_budget().await;
        }
    };
    let start = Instant::now();
    assert_eq!(
        timeout(Duration::from_millis(20), busy).await,
        Err(Elapsed::new(Duration::from_millis(20)))
    );
    assert!(start.elapsed() >= Duration::from_millis(20));
}

/// A timeout past what an `Instant` holds is no timeout (as with
/// `tokio::time::timeout`): under paused time, an idle runtime does not
/// jump to a far-off timer and fire it.
#[tokio::test(start_paused = true)]
async fn a_timeout_too_long_to_hold_never_fires() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        // Long enough for the runtime to go idle first.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let _ = tx.send(5);
    });
    assert_eq!(timeout(Duration::MAX, rx).await, Ok(Ok(5)));
}
