//! The tower middleware, driven through `tower-test` mocks.
//!
//! Time is a `ManualClock` for the breaker and tokio's paused clock for timers.
#![cfg(feature = "tower")]

use fusebox::tower::breaker::Classify;
use fusebox::tower::{BoxError, CircuitBreakerLayer};
use fusebox::{Cause, ManualClock, Outcome, Rejected, State};
use std::time::Duration;
use tokio_test::{assert_pending, assert_ready, assert_ready_err, assert_ready_ok, task};
use tower_test::mock;

const OPEN_FOR: Duration = Duration::from_secs(10);

/// Trips after two consecutive failures, stays open 10 s, one probe.
fn breaker(clock: &ManualClock) -> fusebox::CircuitBreaker {
    fusebox::CircuitBreaker::builder()
        .consecutive_failures(2)
        .open_for(OPEN_FOR)
        .half_open_probes(1)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[derive(Debug)]
struct Boom;
impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}
impl std::error::Error for Boom {}

/// Sends one request through `svc` and answers it on `handle` with `answer`.
async fn round_trip<S>(
    svc: &mut mock::Spawn<S>,
    handle: &mut mock::Handle<&'static str, &'static str>,
    answer: Result<&'static str, Boom>,
) -> Result<&'static str, BoxError>
where
    S: tower::Service<&'static str, Response = &'static str, Error = BoxError>,
{
    handle.allow(1);
    assert_ready_ok!(svc.poll_ready());
    let fut = svc.call("req");
    let (_, send) = handle
        .next_request()
        .await
        .expect("request reaches the mock");
    match answer {
        Ok(res) => send.send_response(res),
        Err(e) => send.send_error(e),
    }
    fut.await
}

/// Two failures through `svc` trip the breaker, and its open period
/// passes: the next call is its one probe.
async fn half_open<S>(
    svc: &mut mock::Spawn<S>,
    handle: &mut mock::Handle<&'static str, &'static str>,
    clock: &ManualClock,
) where
    S: tower::Service<&'static str, Response = &'static str, Error = BoxError>,
{
    for _ in 0..2 {
        round_trip(svc, handle, Err(Boom)).await.unwrap_err();
    }
    clock.advance(OPEN_FOR);
}

#[tokio::test]
async fn passes_through_while_closed_and_trips_on_failures() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));

    assert_eq!(
        round_trip(&mut svc, &mut handle, Ok("ok")).await.unwrap(),
        "ok"
    );
    let err = round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    assert!(err.is::<Boom>(), "the inner error passes through: {err}");
    assert_eq!(cb.state(), State::Closed);
    round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    assert_eq!(cb.state(), State::Open);
}

#[tokio::test]
async fn open_breaker_rejects_in_call_without_touching_the_inner_service() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) =
        mock::spawn_layer::<&str, &str, _>(CircuitBreakerLayer::new(cb.clone()));
    cb.force_open();

    // The inner service is not ready (no capacity allowed), yet poll_ready is
    // ready: the breaker is asked first, and its refusal needs no inner slot.
    handle.allow(0);
    assert_ready_ok!(svc.poll_ready());
    let err = svc.call("req").await.unwrap_err();
    let rejected = err.downcast_ref::<Rejected>().expect("a Rejected");
    assert_eq!(rejected.state(), State::ForcedOpen);
    assert!(
        handle.poll_request().is_pending(),
        "the inner service never saw the request"
    );
}

#[tokio::test]
async fn poll_ready_never_fails_while_open_and_rejection_says_when_to_return() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));
    round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    clock.advance(Duration::from_secs(4));

    for _ in 0..3 {
        assert_ready_ok!(svc.poll_ready());
        let err = svc.call("req").await.unwrap_err();
        let rejected = err.downcast_ref::<Rejected>().expect("a Rejected");
        assert_eq!(rejected.state(), State::Open);
        assert_eq!(rejected.retry_after(), Some(Duration::from_secs(6)));
    }
}

#[tokio::test]
async fn half_open_probe_closes_the_breaker() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));
    half_open(&mut svc, &mut handle, &clock).await;

    assert_eq!(
        round_trip(&mut svc, &mut handle, Ok("ok")).await.unwrap(),
        "ok"
    );
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test]
async fn dropped_response_future_in_half_open_releases_the_probe_slot() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));
    half_open(&mut svc, &mut handle, &clock).await;

    // The one probe is admitted and in flight...
    handle.allow(1);
    assert_ready_ok!(svc.poll_ready());
    let probe = svc.call("probe");
    let (_, _send) = handle.next_request().await.unwrap();
    // ...so a second caller is refused.
    let mut other = svc.clone();
    assert_ready_ok!(other.poll_ready());
    let err = other.call("second").await.unwrap_err();
    assert_eq!(
        err.downcast_ref::<Rejected>().unwrap().state(),
        State::HalfOpen
    );

    // The caller gives up on the probe: dropping its future frees the slot.
    drop(probe);
    assert_eq!(cb.state(), State::HalfOpen, "a dropped probe is no verdict");
    assert_eq!(
        round_trip(&mut svc, &mut handle, Ok("ok")).await.unwrap(),
        "ok"
    );
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test]
async fn permit_taken_by_poll_ready_is_released_when_the_service_is_dropped() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));
    half_open(&mut svc, &mut handle, &clock).await;

    // A clone takes the probe permit in poll_ready (the inner service is not
    // ready, so it waits there) and is then dropped without calling.
    let mut waiting = svc.clone();
    handle.allow(0);
    assert_pending!(waiting.poll_ready());
    assert!(
        cb.try_acquire().is_err(),
        "the probe slot is held by `waiting`"
    );
    drop(waiting);
    let probe = cb.try_acquire().expect("the probe slot came back");
    probe.success();
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test]
async fn a_clone_made_ready_and_never_called_holds_the_probe_until_dropped() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) = mock::spawn_layer(CircuitBreakerLayer::new(cb.clone()));
    half_open(&mut svc, &mut handle, &clock).await;

    // Ready (the inner service too) and then left idle: tower's contract
    // says a ready service has reserved what `call` needs, here the probe.
    let mut idle = svc.clone();
    handle.allow(1);
    assert_ready_ok!(idle.poll_ready());
    clock.advance(OPEN_FOR * 10);
    let mut other = svc.clone();
    assert_ready_ok!(other.poll_ready());
    let err = other.call("second").await.unwrap_err();
    assert_eq!(
        err.downcast_ref::<Rejected>().unwrap().state(),
        State::HalfOpen,
        "however long it waits, the probe is the idle clone's"
    );
    // Dropping the idle clone gives the probe back.
    drop(idle);
    assert_eq!(
        round_trip(&mut svc, &mut handle, Ok("ok")).await.unwrap(),
        "ok"
    );
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test]
async fn classifier_counts_5xx_and_errors_but_not_4xx() {
    let classify = |res: &Result<u16, BoxError>| match res {
        Ok(status) if *status >= 500 => Outcome::Failure,
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure,
    };
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let (mut svc, mut handle) =
        mock::spawn_layer::<&str, u16, _>(CircuitBreakerLayer::new(cb.clone()).classify(classify));

    let mut send = |status: Option<u16>| {
        handle.allow(1);
        assert_ready_ok!(svc.poll_ready());
        let mut fut = task::spawn(svc.call("req"));
        let (_, respond) = match handle.poll_request() {
            std::task::Poll::Ready(Some(r)) => r,
            _ => panic!("request did not reach the mock"),
        };
        match status {
            Some(s) => respond.send_response(s),
            None => respond.send_error(Boom),
        }
        assert_ready!(fut.poll())
    };

    for _ in 0..10 {
        assert_eq!(send(Some(404)).unwrap(), 404);
    }
    assert_eq!(cb.state(), State::Closed, "4xx never trip the breaker");
    assert_eq!(send(Some(503)).unwrap(), 503, "a 5xx is still returned");
    assert!(send(None).is_err());
    assert_eq!(
        cb.state(),
        State::Open,
        "5xx + transport error = 2 failures"
    );
}

#[test]
fn default_classifier_ignores_fusebox_refusals_from_further_in() {
    use fusebox::tower::breaker::DefaultClassifier;
    let cb = fusebox::CircuitBreaker::builder().build().unwrap();
    cb.force_open();
    let rejected = cb.try_acquire().unwrap_err();

    let boxed: Result<(), BoxError> = Err(Box::new(rejected));
    assert_eq!(DefaultClassifier.classify(&boxed), Outcome::Ignore);
    let bare: Result<(), Rejected> = Err(rejected);
    assert_eq!(DefaultClassifier.classify(&bare), Outcome::Ignore);
    let full = fusebox::Bulkhead::new(0).try_acquire().unwrap_err();
    let boxed_full: Result<(), BoxError> = Err(Box::new(full));
    assert_eq!(DefaultClassifier.classify(&boxed_full), Outcome::Ignore);
    let other: Result<(), BoxError> = Err(Box::new(Boom));
    assert_eq!(DefaultClassifier.classify(&other), Outcome::Failure);
    let ok: Result<(), BoxError> = Ok(());
    assert_eq!(DefaultClassifier.classify(&ok), Outcome::Success);
}

#[tokio::test]
async fn inner_poll_ready_error_passes_through() {
    let clock = ManualClock::new();
    let (mut svc, mut handle) =
        mock::spawn_layer::<&str, &str, _>(CircuitBreakerLayer::new(breaker(&clock)));
    handle.send_error(Boom);
    let err = assert_ready_err!(svc.poll_ready());
    assert!(err.is::<Boom>());
}

/// A breaker clock that reads tokio's (pausable) clock, so back-pressure
/// timers and the breaker agree on time.
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
#[tokio::test(start_paused = true)]
async fn back_pressure_waits_while_open_and_wakes_when_a_probe_may_go() {
    let cb = fusebox::CircuitBreaker::builder()
        .consecutive_failures(2)
        .open_for(OPEN_FOR)
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .unwrap();
    let layer = CircuitBreakerLayer::new(cb.clone()).back_pressure();
    let (mut svc, mut handle) = mock::spawn_layer(layer);
    round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    round_trip(&mut svc, &mut handle, Err(Boom))
        .await
        .unwrap_err();
    assert_eq!(cb.state(), State::Open);

    handle.allow(1);
    assert_pending!(
        svc.poll_ready(),
        "no error, no rejection: pending while open"
    );
    tokio::time::sleep(OPEN_FOR - Duration::from_millis(1)).await;
    assert!(!svc.is_woken(), "not woken before the open period ends");
    assert_pending!(svc.poll_ready());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(
        svc.is_woken(),
        "the timer wakes the task when a probe may go"
    );
    assert_ready_ok!(svc.poll_ready());
    let fut = svc.call("probe");
    let (_, send) = handle.next_request().await.unwrap();
    send.send_response("ok");
    assert_eq!(fut.await.unwrap(), "ok");
    assert_eq!(cb.state(), State::Closed);
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn back_pressure_waits_for_a_busy_probe_slot_without_spinning() {
    use fusebox::tower::breaker::BACK_PRESSURE_MIN_WAIT;
    let cb = fusebox::CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(OPEN_FOR)
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .unwrap();
    cb.try_acquire().unwrap().failure();
    tokio::time::advance(OPEN_FOR).await;
    let probe = cb.try_acquire().expect("the one probe slot");
    assert_eq!(cb.state(), State::HalfOpen);

    let (mut svc, mut handle) =
        mock::spawn_layer::<&str, &str, _>(CircuitBreakerLayer::new(cb.clone()).back_pressure());
    handle.allow(1);
    assert_pending!(svc.poll_ready(), "half-open, slot taken: wait");
    assert!(!svc.is_woken());
    probe.success(); // the probe closes the breaker
    tokio::time::advance(BACK_PRESSURE_MIN_WAIT).await;
    assert!(svc.is_woken(), "checked again after the minimum wait");
    assert_ready_ok!(svc.poll_ready());
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn back_pressure_still_rejects_a_forced_open_breaker() {
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    cb.force_open();
    let (mut svc, _handle) =
        mock::spawn_layer::<&str, &str, _>(CircuitBreakerLayer::new(cb).back_pressure());
    assert_ready_ok!(svc.poll_ready());
    let err = svc.call("req").await.unwrap_err();
    assert_eq!(
        err.downcast_ref::<Rejected>().unwrap().state(),
        State::ForcedOpen
    );
}

mod fallback {
    use super::*;
    use fusebox::tower::FallbackLayer;

    #[tokio::test]
    async fn success_passes_untouched_and_failure_is_replaced_with_the_reason() {
        let layer = FallbackLayer::new(|why: Cause<'_, BoxError>| {
            Some(if why.downcast_ref::<Boom>().is_some() {
                "fallback:boom"
            } else {
                "fallback:other"
            })
        });
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(layer);
        assert_eq!(
            round_trip(&mut svc, &mut handle, Ok("real")).await.unwrap(),
            "real"
        );
        assert_eq!(
            round_trip(&mut svc, &mut handle, Err(Boom)).await.unwrap(),
            "fallback:boom"
        );
    }

    #[tokio::test]
    async fn fallback_may_let_the_error_through() {
        let layer = FallbackLayer::new(|why: Cause<'_, BoxError>| match why {
            Cause::Rejected(_) => Some("degraded"),
            _ => None,
        });
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(layer);
        let err = round_trip(&mut svc, &mut handle, Err(Boom))
            .await
            .unwrap_err();
        assert!(err.is::<Boom>());
    }

    #[tokio::test]
    async fn async_fallback_runs_after_the_failure() {
        let (backup, mut backup_handle) = mock::pair::<&'static str, &'static str>();
        let layer = FallbackLayer::with_future(move |_why: Cause<'_, BoxError>| {
            let backup = backup.clone();
            Some(async move {
                use tower::ServiceExt;
                backup.oneshot("from-backup").await
            })
        });
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(layer);
        handle.allow(1);
        backup_handle.allow(1);
        assert_ready_ok!(svc.poll_ready());
        let mut fut = task::spawn(svc.call("req"));
        assert_pending!(fut.poll());
        let (_, send) = handle.next_request().await.unwrap();
        send.send_error(Boom);
        assert_pending!(fut.poll(), "waiting on the backup now");
        let (req, send) = backup_handle.next_request().await.unwrap();
        assert_eq!(req, "from-backup");
        send.send_response("backup answer");
        assert_eq!(assert_ready_ok!(fut.poll()), "backup answer");
    }

    #[tokio::test]
    async fn fallback_answers_a_breaker_rejection() {
        let clock = ManualClock::new();
        let cb = breaker(&clock);
        cb.force_open();
        let stack = tower::ServiceBuilder::new()
            .layer(FallbackLayer::new(|why: Cause<'_, BoxError>| {
                let Cause::Rejected(r) = why else {
                    panic!("a rejection")
                };
                Some(format!("cached ({})", r.state()))
            }))
            .layer(CircuitBreakerLayer::new(cb))
            .into_inner();
        let (mut svc, _handle) = mock::spawn_layer::<&str, String, _>(stack);
        assert_ready_ok!(svc.poll_ready());
        assert_eq!(svc.call("req").await.unwrap(), "cached (forced_open)");
    }
}

mod bulkhead {
    use super::*;
    use fusebox::tower::BulkheadLayer;
    use fusebox::BulkheadFull;

    #[tokio::test]
    async fn full_bulkhead_refuses_in_call_and_never_queues() {
        let bulkhead = fusebox::Bulkhead::new(2);
        let (mut svc, mut handle) =
            mock::spawn_layer::<&str, &str, _>(BulkheadLayer::new(bulkhead.clone()));
        handle.allow(3);

        // Two calls in flight take both slots.
        assert_ready_ok!(svc.poll_ready());
        let first = svc.call("1");
        assert_ready_ok!(svc.poll_ready());
        let second = svc.call("2");
        assert_eq!(bulkhead.snapshot().in_use, 2);

        // The third is ready at once and refused at once: no waiting.
        assert_ready_ok!(svc.poll_ready());
        let err = svc.call("3").await.unwrap_err();
        let full = err.downcast_ref::<BulkheadFull>().expect("a BulkheadFull");
        assert_eq!(full.limit(), 2);
        assert_eq!(bulkhead.snapshot().rejected, 1);

        // Only the two admitted requests reached the inner service.
        let (r1, s1) = handle.next_request().await.unwrap();
        let (r2, s2) = handle.next_request().await.unwrap();
        assert_eq!((r1, r2), ("1", "2"));
        assert!(handle.poll_request().is_pending());

        // A completed call frees its slot; a dropped future frees its slot.
        s1.send_response("one");
        assert_eq!(first.await.unwrap(), "one");
        assert_eq!(bulkhead.snapshot().in_use, 1);
        drop(second);
        drop(s2);
        assert_eq!(bulkhead.snapshot().in_use, 0);
        assert_eq!(
            round_trip(&mut svc, &mut handle, Ok("again"))
                .await
                .unwrap(),
            "again"
        );
    }

    #[tokio::test]
    async fn slot_is_taken_before_inner_readiness_and_freed_with_the_service() {
        let bulkhead = fusebox::Bulkhead::new(1);
        let (mut svc, mut handle) =
            mock::spawn_layer::<&str, &str, _>(BulkheadLayer::new(bulkhead.clone()));
        handle.allow(0);
        assert_pending!(
            svc.poll_ready(),
            "waits for the inner service, holding the slot"
        );
        assert_eq!(bulkhead.snapshot().in_use, 1);

        // Another clone finds the bulkhead full and is refused, not queued.
        let mut other = svc.clone();
        assert_ready_ok!(other.poll_ready());
        assert!(other.call("x").await.unwrap_err().is::<BulkheadFull>());

        drop(svc);
        assert_eq!(bulkhead.snapshot().in_use, 0);
    }

    #[tokio::test]
    async fn breaker_outside_a_full_bulkhead_does_not_count_it_as_a_failure() {
        let clock = ManualClock::new();
        let cb = breaker(&clock);
        let bulkhead = fusebox::Bulkhead::new(0);
        let stack = tower::ServiceBuilder::new()
            .layer(CircuitBreakerLayer::new(cb.clone()))
            .layer(BulkheadLayer::new(bulkhead))
            .into_inner();
        let (mut svc, _handle) = mock::spawn_layer::<&str, &str, _>(stack);
        for _ in 0..10 {
            assert_ready_ok!(svc.poll_ready());
            assert!(svc.call("x").await.unwrap_err().is::<BulkheadFull>());
        }
        assert_eq!(
            cb.state(),
            State::Closed,
            "a full bulkhead is not the dependency failing"
        );
    }
}

#[cfg(feature = "tokio")]
mod timeout {
    use super::*;
    use fusebox::tower::TimeoutLayer;
    use fusebox::Elapsed;

    const LIMIT: Duration = Duration::from_millis(100);

    #[tokio::test(start_paused = true)]
    async fn answer_in_time_passes_and_late_answer_is_elapsed() {
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(TimeoutLayer::new(LIMIT));
        handle.allow(2);

        assert_ready_ok!(svc.poll_ready());
        let mut fast = task::spawn(svc.call("fast"));
        let (_, send) = handle.next_request().await.unwrap();
        tokio::time::advance(LIMIT - Duration::from_millis(1)).await;
        send.send_response("in time");
        assert_eq!(assert_ready_ok!(fast.poll()), "in time");

        assert_ready_ok!(svc.poll_ready());
        let mut slow = task::spawn(svc.call("slow"));
        let (_, _send) = handle.next_request().await.unwrap();
        tokio::time::advance(LIMIT - Duration::from_millis(1)).await;
        assert_pending!(slow.poll());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(slow.is_woken());
        let err = assert_ready_err!(slow.poll());
        assert!(err.is::<Elapsed>(), "got {err}");
    }

    #[tokio::test(start_paused = true)]
    async fn breaker_outside_counts_timeouts_as_failures() {
        let clock = ManualClock::new();
        let cb = breaker(&clock);
        let stack = tower::ServiceBuilder::new()
            .layer(CircuitBreakerLayer::new(cb.clone()))
            .layer(TimeoutLayer::new(LIMIT))
            .into_inner();
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(stack);
        for _ in 0..2 {
            handle.allow(1);
            assert_ready_ok!(svc.poll_ready());
            let call = svc.call("never answered");
            let (_, _send) = handle.next_request().await.unwrap();
            assert!(call.await.unwrap_err().is::<Elapsed>());
        }
        assert_eq!(cb.state(), State::Open);
        assert_ready_ok!(svc.poll_ready());
        assert!(svc.call("x").await.unwrap_err().is::<Rejected>());
    }
}

/// Compile-time contract: layers are `Clone + Send + Sync`; services and
/// response futures are `Send` (and `Sync` where the inner parts are).
#[allow(dead_code)]
fn contracts() {
    use fusebox::tower::breaker::CircuitBreaker;
    use fusebox::tower::bulkhead::Bulkhead;
    use fusebox::tower::fallback::Fallback;
    use fusebox::tower::{breaker, bulkhead, fallback};
    use fusebox::tower::{BulkheadLayer, FallbackLayer};
    type Inner = mock::Mock<(), ()>;
    type InnerFut = mock::future::ResponseFuture<()>;
    type Fb = fallback::FromFn<fn(fusebox::Cause<'_, BoxError>) -> Option<()>>;

    fn layer<T: Clone + Send + Sync + 'static>() {}
    fn service<T: Send + Sync + 'static>() {}
    fn future<T: Send + 'static>() {}

    layer::<CircuitBreakerLayer>();
    layer::<BulkheadLayer>();
    layer::<FallbackLayer<Fb>>();
    service::<CircuitBreaker<Inner>>();
    service::<Bulkhead<Inner>>();
    service::<Fallback<Inner, Fb>>();
    future::<breaker::future::ResponseFuture<InnerFut, breaker::DefaultClassifier>>();
    future::<bulkhead::future::ResponseFuture<InnerFut>>();
    future::<fallback::future::ResponseFuture<InnerFut, Fb>>();
    #[cfg(feature = "tokio")]
    {
        use fusebox::tower::timeout::{self, Timeout};
        use fusebox::tower::TimeoutLayer;
        layer::<TimeoutLayer>();
        service::<Timeout<Inner>>();
        future::<timeout::future::ResponseFuture<InnerFut>>();
    }
}

#[tokio::test]
async fn a_panicking_inner_future_counts_as_a_failure() {
    use tower::{Service, ServiceExt};
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let inner = tower::service_fn(|fail: bool| async move {
        if fail {
            panic!("the inner future panics");
        }
        Ok::<_, BoxError>(())
    });
    let mut svc = tower::Layer::layer(&CircuitBreakerLayer::new(cb.clone()), inner);
    for _ in 0..2 {
        let fut = svc.ready().await.unwrap().call(true);
        let joined = tokio::spawn(fut).await;
        assert!(joined.unwrap_err().is_panic());
    }
    assert_eq!(cb.state(), State::Open, "two panics = two failures");
}

#[cfg(feature = "tokio")]
mod retry {
    use super::*;
    use fusebox::tower::RetryLayer;
    use tokio::time::Instant;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A retry policy with `attempts` tries and `backoff` delays.
    fn retry<B>(
        attempts: u32,
        backoff: B,
    ) -> fusebox::retry::RetryBuilder<B, fusebox::retry::AnyError>
    where
        B: Iterator<Item = Duration> + Clone,
    {
        fusebox::retry::Retry::builder()
            .max_attempts(attempts)
            .backoff(backoff)
    }

    #[tokio::test(start_paused = true)]
    async fn retries_after_each_backoff_delay_until_success() {
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(RetryLayer::new(
            retry(4, [ms(10), ms(20), ms(40)].into_iter())
                .build()
                .unwrap(),
        ));
        handle.allow(10);
        assert_ready_ok!(svc.poll_ready());
        let t0 = Instant::now();
        let fut = tokio::spawn(svc.call("req"));

        let mut seen = Vec::new();
        for answer in [Err(Boom), Err(Boom), Ok("third time")] {
            let (req, send) = handle.next_request().await.unwrap();
            seen.push((req, t0.elapsed()));
            match answer {
                Ok(r) => send.send_response(r),
                Err(e) => send.send_error(e),
            }
        }
        assert_eq!(fut.await.unwrap().unwrap(), "third time");
        assert_eq!(seen, vec![("req", ms(0)), ("req", ms(10)), ("req", ms(30))]);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts_with_the_last_error() {
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(RetryLayer::new(
            retry(3, std::iter::repeat(ms(5))).build().unwrap(),
        ));
        handle.allow(10);
        assert_ready_ok!(svc.poll_ready());
        let fut = tokio::spawn(svc.call("req"));
        for _ in 0..3 {
            let (_, send) = handle.next_request().await.unwrap();
            send.send_error(Boom);
        }
        assert!(fut.await.unwrap().unwrap_err().is::<Boom>());
        tokio::time::sleep(ms(100)).await;
        assert!(handle.poll_request().is_pending(), "no fourth attempt");
    }

    /// A service that counts its clones and fails every call.
    struct Counted(std::sync::Arc<std::sync::atomic::AtomicU32>);

    impl Clone for Counted {
        fn clone(&self) -> Self {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Counted(self.0.clone())
        }
    }

    impl tower::Service<&'static str> for Counted {
        type Response = &'static str;
        type Error = Boom;
        type Future = std::future::Ready<Result<&'static str, Boom>>;

        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Boom>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: &'static str) -> Self::Future {
            std::future::ready(Err(Boom))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn clones_the_service_for_retries_only_when_a_retry_is_allowed() {
        use tower::{Layer, Service, ServiceExt};
        for (attempts, clones) in [(1, 0), (2, 1)] {
            let count = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let layer = RetryLayer::new(retry(attempts, std::iter::repeat(ms(1))).build().unwrap());
            let mut svc = layer.layer(Counted(count.clone()));
            let err = svc.ready().await.unwrap().call("req").await.unwrap_err();
            assert!(err.is::<Boom>());
            assert_eq!(
                count.load(std::sync::atomic::Ordering::Relaxed),
                clones,
                "{attempts} attempt(s)"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn predicate_decides_what_is_retried() {
        let layer = RetryLayer::new(
            retry(3, [ms(1); 2].into_iter())
                .retry_if(|e: &BoxError| !e.is::<Boom>())
                .build()
                .unwrap(),
        );
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(layer);
        handle.allow(10);
        assert_ready_ok!(svc.poll_ready());
        let fut = tokio::spawn(svc.call("req"));
        let (_, send) = handle.next_request().await.unwrap();
        send.send_error(Boom);
        assert!(fut.await.unwrap().unwrap_err().is::<Boom>());
        assert!(handle.poll_request().is_pending(), "Boom is not retryable");
    }

    #[tokio::test(start_paused = true)]
    async fn breaker_inside_stops_the_retries_once_it_opens() {
        let clock = ManualClock::new();
        let cb = breaker(&clock); // opens after 2 failures
        let stack = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                retry(10, std::iter::repeat(ms(1))).build().unwrap(),
            ))
            .layer(CircuitBreakerLayer::new(cb.clone()))
            .into_inner();
        let (mut svc, mut handle) = mock::spawn_layer::<&str, &str, _>(stack);
        handle.allow(10);
        assert_ready_ok!(svc.poll_ready());
        let fut = tokio::spawn(svc.call("req"));
        for _ in 0..2 {
            let (_, send) = handle.next_request().await.unwrap();
            send.send_error(Boom);
        }
        let err = fut.await.unwrap().unwrap_err();
        assert!(
            err.is::<Rejected>(),
            "the open breaker ends the retries: {err}"
        );
        assert!(
            handle.poll_request().is_pending(),
            "2 calls reached the dependency, not 10"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_are_retried_only_when_asked_and_not_before_retry_after() {
        let cb = fusebox::CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_secs(10))
            .clock(TokioClock(Instant::now()))
            .build()
            .unwrap();
        cb.try_acquire().unwrap().failure();
        assert_eq!(cb.state(), State::Open);
        let inner = tower::service_fn(|()| async { Ok::<_, BoxError>("fresh") });

        use tower::{Service, ServiceExt};
        let breaker_layer = CircuitBreakerLayer::new(cb.clone());
        let mut plain = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                retry(3, [ms(1); 2].into_iter()).build().unwrap(),
            ))
            .layer(breaker_layer.clone())
            .service(inner);
        let t0 = Instant::now();
        let err = plain.ready().await.unwrap().call(()).await.unwrap_err();
        assert!(err.is::<Rejected>());
        assert_eq!(t0.elapsed(), Duration::ZERO, "not retried, no wait");

        let mut asked = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                retry(3, [ms(1); 2].into_iter())
                    .retry_rejections(true)
                    .build()
                    .unwrap(),
            ))
            .layer(breaker_layer)
            .service(inner);
        let t0 = Instant::now();
        assert_eq!(
            asked.ready().await.unwrap().call(()).await.unwrap(),
            "fresh"
        );
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(10),
            "waited retry_after, not 1 ms"
        );

        cb.force_open();
        let t0 = Instant::now();
        let err = asked.ready().await.unwrap().call(()).await.unwrap_err();
        assert_eq!(
            err.downcast_ref::<Rejected>().unwrap().state(),
            State::ForcedOpen
        );
        assert_eq!(t0.elapsed(), Duration::ZERO, "forced open is never retried");
    }

    #[tokio::test(start_paused = true)]
    async fn budget_caps_the_extra_load_on_a_dead_dependency() {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        use tower::{Service, ServiceExt};
        const CALLERS: u64 = 200;
        const RATIO: f64 = 0.2;
        let budget = fusebox::retry::RetryBudget::builder()
            .ratio(RATIO)
            .min_per_second(0)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        let dead = {
            let calls = calls.clone();
            tower::service_fn(move |()| {
                calls.fetch_add(1, Ordering::Relaxed);
                async { Err::<(), BoxError>(Box::new(Boom)) }
            })
        };
        // Every caller would like 5 attempts.
        let layer = RetryLayer::new(
            retry(5, [Duration::ZERO; 4].into_iter())
                .budget(budget.clone())
                .build()
                .unwrap(),
        );
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CALLERS {
            let mut svc = tower::Layer::layer(&layer, dead.clone());
            tasks.spawn(async move { svc.ready().await?.call(()).await });
        }
        while let Some(r) = tasks.join_next().await {
            assert!(r.unwrap().unwrap_err().is::<Boom>());
        }
        let total = calls.load(Ordering::Relaxed);
        let cap = (CALLERS as f64 * (1.0 + RATIO)).ceil() as u64 + 1;
        assert!(
            total <= cap,
            "{total} calls for {CALLERS} callers; cap {cap}"
        );
        assert!(total > CALLERS, "the budget allowed some retries: {total}");
        assert!(budget.refused() > 0);
    }

    #[tokio::test(start_paused = true)]
    async fn timeouts_are_retried_unless_told_not_to() {
        use fusebox::tower::TimeoutLayer;
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        use tower::{Service, ServiceExt};
        let calls = Arc::new(AtomicU32::new(0));
        let stuck = {
            let calls = calls.clone();
            tower::service_fn(move |()| {
                calls.fetch_add(1, Ordering::Relaxed);
                std::future::pending::<Result<(), BoxError>>()
            })
        };
        for (again, expected) in [(true, 3), (false, 1)] {
            calls.store(0, Ordering::Relaxed);
            let mut svc = tower::ServiceBuilder::new()
                .layer(RetryLayer::new(
                    retry(3, [ms(1); 2].into_iter())
                        .retry_timeouts(again)
                        .build()
                        .unwrap(),
                ))
                .layer(TimeoutLayer::new(ms(50)))
                .service(stuck.clone());
            let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
            assert!(err.is::<fusebox::Elapsed>());
            assert_eq!(calls.load(Ordering::Relaxed), expected);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn full_bulkhead_is_retried_only_when_asked() {
        use fusebox::tower::BulkheadLayer;
        use tower::{Service, ServiceExt};
        let bulkhead = fusebox::Bulkhead::new(1);
        let held = bulkhead.try_acquire().unwrap();
        let inner = tower::service_fn(|()| async { Ok::<_, BoxError>("in") });
        let mut plain = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                retry(3, [ms(5); 2].into_iter()).build().unwrap(),
            ))
            .layer(BulkheadLayer::new(bulkhead.clone()))
            .service(inner);
        assert!(plain
            .ready()
            .await
            .unwrap()
            .call(())
            .await
            .unwrap_err()
            .is::<fusebox::BulkheadFull>());
        assert_eq!(bulkhead.snapshot().rejected, 1, "one attempt only");

        let mut asked = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                retry(3, [ms(5); 2].into_iter())
                    .retry_rejections(true)
                    .build()
                    .unwrap(),
            ))
            .layer(BulkheadLayer::new(bulkhead.clone()))
            .service(inner);
        let call = tokio::spawn(asked.ready().await.unwrap().call(()));
        // Attempts at 0 ms and 5 ms are refused; the slot frees at 7 ms; the
        // attempt at 10 ms gets in.
        tokio::time::sleep(ms(7)).await;
        drop(held);
        assert_eq!(call.await.unwrap().unwrap(), "in");
        assert_eq!(bulkhead.snapshot().rejected, 1 + 2);
    }
}

#[tokio::test]
async fn a_future_dropped_by_an_unrelated_panic_is_released_not_failed() {
    use tower::{Service, ServiceExt};
    let clock = ManualClock::new();
    let cb = breaker(&clock);
    let inner = tower::service_fn(|()| std::future::pending::<Result<(), BoxError>>());
    let mut svc = tower::Layer::layer(&CircuitBreakerLayer::new(cb.clone()), inner);
    for _ in 0..3 {
        let fut = svc.ready().await.unwrap().call(());
        let task = tokio::spawn(async move {
            let _in_flight = fut;
            panic!("the caller panics; its request is dropped while unwinding");
        });
        assert!(task.await.unwrap_err().is_panic());
    }
    assert_eq!(cb.snapshot().consecutive_failures, 0);
    assert_eq!(
        cb.state(),
        State::Closed,
        "three dropped calls are no failures"
    );
}

#[cfg(feature = "tokio")]
mod hedge {
    use fusebox::hedge::{Delay, Hedge};
    use fusebox::tower::{BoxError, CircuitBreakerLayer, HedgeLayer};
    use fusebox::CircuitBreaker;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use tower::{service_fn, Layer, Service, ServiceExt};

    /// A replica whose first request stalls for 10 s and whose others take 10 ms.
    fn replica(
        sent: Arc<AtomicU32>,
    ) -> impl Service<u32, Response = u32, Error = std::io::Error, Future = impl Send>
           + Clone
           + Send
           + 'static {
        service_fn(move |x: u32| {
            let first = sent.fetch_add(1, Ordering::Relaxed) == 0;
            async move {
                let took = if first { 10_000 } else { 10 };
                tokio::time::sleep(Duration::from_millis(took)).await;
                Ok(x)
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_request_is_hedged_and_the_dropped_attempt_releases_its_breaker_permit() {
        let hedge = Hedge::builder()
            .delay(Delay::Fixed(Duration::from_millis(100)))
            .build()
            .unwrap();
        let breaker = CircuitBreaker::builder()
            .consecutive_failures(1)
            .build()
            .unwrap();
        let sent = Arc::new(AtomicU32::new(0));
        let mut svc = HedgeLayer::new(hedge.clone())
            .layer(CircuitBreakerLayer::new(breaker.clone()).layer(replica(sent.clone())));
        let started = tokio::time::Instant::now();
        let answer: Result<u32, BoxError> = svc.ready().await.unwrap().call(7).await;
        assert_eq!(answer.unwrap(), 7);
        assert_eq!(started.elapsed(), Duration::from_millis(110));
        assert_eq!(sent.load(Ordering::Relaxed), 2);
        assert_eq!(hedge.stats().won_by_hedge, 1);
        let s = breaker.snapshot();
        assert_eq!(
            (s.failures, s.state),
            (0, fusebox::State::Closed),
            "the cancelled attempt is no failure"
        );
        assert_eq!(breaker.probes_in_flight(), 0);
        // A quick request is not hedged.
        let answer = svc.ready().await.unwrap().call(8).await.unwrap();
        assert_eq!((answer, sent.load(Ordering::Relaxed)), (8, 3));
        assert_eq!(hedge.stats().hedges, 1);
    }
}

#[cfg(all(feature = "tokio", feature = "limit", feature = "throttle"))]
mod admission {
    use fusebox::limit::{AdaptiveLimit, LimitConfig, LimitExceeded};
    use fusebox::throttle::{Throttle, ThrottleConfig};
    use fusebox::tower::{AdaptiveLimitLayer, BoxError, ThrottleLayer, TimeoutLayer};
    use std::time::Duration;
    use tower::{service_fn, Layer, Service, ServiceExt};

    /// Answers `x` after `x` ms; fails for 0.
    fn backend() -> impl Service<
        u64,
        Response = u64,
        Error = std::io::Error,
        Future = impl std::future::Future<Output = Result<u64, std::io::Error>> + Send,
    > + Clone {
        service_fn(|x: u64| async move {
            tokio::time::sleep(Duration::from_millis(x)).await;
            if x == 0 {
                Err(std::io::Error::other("refused"))
            } else {
                Ok(x)
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_limit_hears_answers_drops_on_timeouts_and_releases_dropped_calls() {
        let limit = AdaptiveLimit::new(LimitConfig::default().initial(2)).unwrap();
        let mut svc = AdaptiveLimitLayer::new(limit.clone())
            .layer(TimeoutLayer::new(Duration::from_millis(100)).layer(backend()));
        assert_eq!(svc.ready().await.unwrap().call(5).await.unwrap(), 5);
        let _ = svc.ready().await.unwrap().call(0).await.unwrap_err(); // an error: no sample
        let e: BoxError = svc.ready().await.unwrap().call(500).await.unwrap_err();
        assert!(e.is::<fusebox::Elapsed>());
        let s = limit.snapshot();
        assert_eq!((s.admitted, s.dropped, s.in_flight), (3, 1, 0), "{s:?}");
        // A call in flight holds its place; dropped, it gives it back.
        let a = svc.ready().await.unwrap().call(50);
        let b = svc.ready().await.unwrap().call(50);
        assert_eq!(limit.snapshot().in_flight, 2);
        let refused = svc.ready().await.unwrap().call(1).await.unwrap_err();
        assert!(refused.is::<LimitExceeded>(), "{refused}");
        drop((a, b));
        assert_eq!(limit.snapshot().in_flight, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_throttle_counts_answers_as_accepts_errors_as_none_and_takes_back_cancelled_calls()
    {
        let throttle = Throttle::new(ThrottleConfig::default()).unwrap();
        let mut svc = ThrottleLayer::new(throttle.clone()).layer(backend());
        assert_eq!(svc.ready().await.unwrap().call(3).await.unwrap(), 3);
        let _ = svc.ready().await.unwrap().call(0).await.unwrap_err();
        drop(svc.ready().await.unwrap().call(3)); // cancelled: taken back
        let s = throttle.snapshot();
        assert_eq!((s.requests, s.accepts), (2, 1));
    }
}
