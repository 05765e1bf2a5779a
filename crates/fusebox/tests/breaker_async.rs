//! `call_async`: admission on first poll, cancellation, panics.

use fusebox::{CircuitBreaker, Error, ManualClock, State};
use std::time::Duration;

fn tripped(probes: u32) -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::from_millis(100))
        .half_open_probes(probes)
        .clock(clock.clone())
        .build()
        .unwrap();
    b.call(|| Err::<(), _>(())).unwrap_err();
    clock.advance(Duration::from_millis(100));
    (b, clock)
}

#[tokio::test]
async fn cancelled_async_probe_frees_its_slot() {
    let (b, _) = tripped(1);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let b2 = b.clone();
    let task = tokio::spawn(async move {
        b2.call_async(|| async move {
            started_tx.send(()).unwrap();
            std::future::pending::<Result<(), ()>>().await
        })
        .await
    });
    started_rx.await.unwrap();
    assert_eq!(b.probes_in_flight(), 1);
    assert!(b.try_acquire().is_err(), "the only probe slot is taken");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(b.probes_in_flight(), 0);
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "a cancelled probe decides nothing"
    );
    b.call_async(|| async { Ok::<_, ()>(()) }).await.unwrap();
    assert_eq!(b.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn timed_out_probe_is_released_by_drop() {
    let (b, _) = tripped(1);
    let slow = b.call_async(|| async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<_, ()>(())
    });
    assert!(tokio::time::timeout(Duration::from_secs(1), slow)
        .await
        .is_err());
    assert_eq!(b.probes_in_flight(), 0);
    assert_eq!(b.state(), State::HalfOpen);
}

#[tokio::test]
async fn async_outcomes_count() {
    let (b, clock) = tripped(1);
    let r = b.call_async(|| async { Err::<(), _>("still down") }).await;
    assert!(matches!(r, Err(Error::Inner("still down"))));
    assert_eq!(b.state(), State::Open);
    let r = b.call_async(|| async { Ok::<_, ()>(()) }).await;
    assert!(r.unwrap_err().is_rejected());
    clock.advance(Duration::from_millis(100));
    assert_eq!(b.call_async(|| async { Ok::<_, ()>(5) }).await.unwrap(), 5);
    assert_eq!(b.state(), State::Closed);
}

#[tokio::test]
async fn never_polled_future_is_never_admitted() {
    let (b, _) = tripped(1);
    let fut = b.call_async(|| async { Ok::<_, ()>(()) });
    assert_eq!(b.probes_in_flight(), 0);
    drop(fut);
    assert!(b.try_acquire().is_ok());
}

#[tokio::test]
async fn panic_while_polling_counts_as_failure() {
    let (b, _) = tripped(1);
    let b2 = b.clone();
    let r = tokio::spawn(async move {
        b2.call_async(|| async {
            if true {
                panic!("user bug in a probe");
            }
            Ok::<(), ()>(())
        })
        .await
    })
    .await;
    assert!(r.unwrap_err().is_panic());
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.probes_in_flight(), 0);
}
