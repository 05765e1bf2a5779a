//! Fallback: the value replaces refused or failed calls, with the right reason.

use fusebox::{Bulkhead, Cause, CircuitBreaker, Elapsed, Fallback, PolicyError, TimeoutError};
use std::io;
use std::time::Duration;

/// A fallback that answers with the reason, so tests can read it.
fn why<E>() -> Fallback<impl Fn(Cause<'_, E>) -> Option<String> + Clone> {
    Fallback::new(|c: Cause<'_, E>| Some(format!("fallback: {c}")))
}

#[test]
fn reason_rejected_by_breaker() {
    let breaker = CircuitBreaker::builder().build().unwrap();
    breaker.force_open();
    let mut ran = false;
    let r = why().call(|| {
        breaker.call(|| {
            ran = true;
            Ok::<_, io::Error>("live".to_string())
        })
    });
    assert_eq!(r.unwrap(), "fallback: rejected by breaker");
    assert!(!ran);
}

#[test]
fn reason_bulkhead_full() {
    let bulkhead = Bulkhead::new(0);
    let r = why().call(|| bulkhead.try_call(|| "live".to_string()));
    assert_eq!(r.unwrap(), "fallback: bulkhead full");
}

#[test]
fn reason_timed_out() {
    let r = why().call(|| {
        Err::<String, _>(TimeoutError::<io::Error>::Elapsed(Elapsed::new(
            Duration::from_secs(1),
        )))
    });
    assert_eq!(r.unwrap(), "fallback: timed out");
}

#[test]
fn reason_failed_sees_the_error() {
    let fb = Fallback::new(|c: Cause<'_, io::Error>| match c {
        Cause::Failed(e) => Some(format!("failed with {e}")),
        _ => None,
    });
    let breaker = CircuitBreaker::builder().build().unwrap();
    let r = fb.call(|| breaker.call(|| Err::<String, _>(io::Error::other("503"))));
    assert_eq!(r.unwrap(), "failed with 503");
}

#[test]
fn success_passes_through_untouched() {
    let fb = Fallback::value("fallback");
    assert_eq!(fb.call(|| Ok::<_, io::Error>("live")).unwrap(), "live");
}

#[test]
fn none_lets_the_original_error_through() {
    // Cache miss: nothing to serve, the caller sees the rejection itself.
    let breaker = CircuitBreaker::builder().build().unwrap();
    breaker.force_open();
    let empty_cache = Fallback::new(|_why| None::<String>);
    let r = empty_cache.call(|| breaker.call(|| Ok::<_, io::Error>("live".to_string())));
    assert!(r.unwrap_err().is_rejected());
}

#[test]
fn boxed_errors_are_downcast_to_the_policy() {
    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let full: BoxError = Box::new(Bulkhead::new(0).try_acquire().unwrap_err());
    assert!(matches!(full.cause(), Cause::BulkheadFull(b) if b.limit() == 0));
    let elapsed: BoxError = Box::new(Elapsed::new(Duration::from_millis(5)));
    assert_eq!(elapsed.cause().to_string(), "timed out");
    let breaker = CircuitBreaker::builder().build().unwrap();
    breaker.force_open();
    let rejected: BoxError = Box::new(breaker.try_acquire().unwrap_err());
    assert!(rejected.cause().is_refusal());
    let other: BoxError = "plain".into();
    assert!(matches!(other.cause(), Cause::Failed(e) if e.to_string() == "plain"));
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;
    use fusebox::fallback::or_else_async;
    use fusebox::Timeout;

    #[tokio::test(start_paused = true)]
    async fn async_timeout_gets_timed_out_reason() {
        let t = Timeout::new(Duration::from_millis(100));
        let r = why()
            .call_async(t.call(async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok::<_, io::Error>("live".to_string())
            }))
            .await;
        assert_eq!(r.unwrap(), "fallback: timed out");
    }

    #[tokio::test(start_paused = true)]
    async fn async_backup_service() {
        let breaker = CircuitBreaker::builder().build().unwrap();
        breaker.force_open();
        let r = or_else_async(
            breaker.call_async(|| async { Ok::<_, io::Error>("primary") }),
            |e| async move {
                if e.cause().is_refusal() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok("backup")
                } else {
                    Err(e)
                }
            },
        )
        .await;
        assert_eq!(r.unwrap(), "backup");
    }
}
