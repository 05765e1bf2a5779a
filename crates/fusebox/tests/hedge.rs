//! Hedging on tokio's paused clock: when a hedge goes out, which answer
//! wins, what is cancelled, the budget, and a breaker inside the attempts.
#![cfg(feature = "tokio")]

use fusebox::hedge::{Delay, Hedge};
use fusebox::retry::RetryBudget;
use fusebox::{CircuitBreaker, State};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn fixed(delay: u64) -> Hedge {
    Hedge::builder()
        .delay(Delay::Fixed(ms(delay)))
        .build()
        .unwrap()
}

/// Sets its flag when dropped before it finished.
struct Cancelled(Arc<AtomicUsize>, bool);
impl Drop for Cancelled {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An attempt that answers `Ok(n)` after `took`, counting cancellations.
async fn answer(n: usize, took: Duration, cancelled: Arc<AtomicUsize>) -> Result<usize, String> {
    let mut guard = Cancelled(cancelled, false);
    sleep(took).await;
    guard.1 = true;
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_is_hedged_and_the_first_answer_wins() {
    let hedge = fixed(100);
    let cancelled = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut n = 0;
    let r = hedge
        .call(|| {
            n += 1;
            let took = if n == 1 { ms(5_000) } else { ms(10) };
            answer(n, took, cancelled.clone())
        })
        .await;
    assert_eq!(r, Ok(2));
    assert_eq!(start.elapsed(), ms(110));
    assert_eq!(
        cancelled.load(Ordering::Relaxed),
        1,
        "the slow one is dropped"
    );
    let s = hedge.stats();
    assert_eq!((s.calls, s.hedges, s.won_by_hedge), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_call_faster_than_the_delay_is_not_hedged() {
    let hedge = fixed(100);
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut n = 0;
    let r = hedge
        .call(|| {
            n += 1;
            answer(n, ms(99), cancelled.clone())
        })
        .await;
    assert_eq!(r, Ok(1));
    assert_eq!(n, 1);
    assert_eq!(hedge.stats().hedges, 0);
}

#[tokio::test(start_paused = true)]
async fn the_primary_can_still_win_after_a_hedge_went_out() {
    let hedge = fixed(100);
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut n = 0;
    let r = hedge
        .call(|| {
            n += 1;
            let took = if n == 1 { ms(150) } else { ms(1_000) };
            answer(n, took, cancelled.clone())
        })
        .await;
    assert_eq!(r, Ok(1));
    assert_eq!(cancelled.load(Ordering::Relaxed), 1, "the hedge is dropped");
    assert_eq!(hedge.stats().won_by_hedge, 0);
}

#[tokio::test(start_paused = true)]
async fn up_to_max_extra_hedges_one_delay_apart() {
    let hedge = Hedge::builder()
        .delay(Delay::Fixed(ms(100)))
        .max_extra(2)
        .build()
        .unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut n = 0;
    let r = hedge
        .call(|| {
            n += 1;
            let took = if n == 3 { ms(10) } else { ms(10_000) };
            answer(n, took, cancelled.clone())
        })
        .await;
    assert_eq!(r, Ok(3));
    assert_eq!(start.elapsed(), ms(210));
    assert_eq!(cancelled.load(Ordering::Relaxed), 2);
    assert_eq!(hedge.stats().hedges, 2);
}

#[tokio::test(start_paused = true)]
async fn an_error_is_not_hedged_but_a_hedge_in_flight_may_still_answer() {
    let hedge = fixed(100);
    let r: Result<(), &str> = hedge.call(|| async { Err("refused") }).await;
    assert_eq!(r, Err("refused"));
    assert_eq!(hedge.stats().hedges, 0);

    let mut n = 0;
    let r = hedge
        .call(|| {
            n += 1;
            let first = n == 1;
            async move {
                if first {
                    sleep(ms(150)).await;
                    Err("reset")
                } else {
                    sleep(ms(100)).await;
                    Ok(2)
                }
            }
        })
        .await;
    assert_eq!(
        r,
        Ok(2),
        "the first failed while the hedge ran: the hedge answers"
    );
}

#[tokio::test(start_paused = true)]
async fn a_quantile_delay_waits_for_samples_then_hedges_the_tail() {
    let hedge = Hedge::builder()
        .delay(Delay::Quantile(0.9))
        .min_samples(20)
        .build()
        .unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    assert_eq!(hedge.current_delay(), None);
    for _ in 0..20 {
        let _ = hedge.call(|| answer(0, ms(10), cancelled.clone())).await;
    }
    let delay = hedge.current_delay().unwrap();
    assert!(delay >= ms(10) && delay < ms(13), "{delay:?}");
    assert_eq!(hedge.stats().hedges, 0, "no hedge while learning");
    let mut n = 0;
    let start = Instant::now();
    let r = hedge
        .call(|| {
            n += 1;
            let took = if n == 1 { ms(2_000) } else { ms(10) };
            answer(n, took, cancelled.clone())
        })
        .await;
    assert_eq!(r, Ok(2));
    assert!(start.elapsed() < ms(30), "{:?}", start.elapsed());
}

/// The quantile delay is worked out again as answers come (not on every
/// call): it follows latencies that rise, and that fall back once the slow
/// answers age out of the histogram.
#[tokio::test(start_paused = true)]
async fn a_quantile_delay_follows_a_change_of_latencies() {
    let hedge = Hedge::builder()
        .delay(Delay::Quantile(0.9))
        .min_samples(20)
        .build()
        .unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let delay_in = |low: u64, high: u64| {
        let d = hedge.current_delay().unwrap();
        assert!(
            d >= ms(low) && d < ms(high),
            "{d:?}, not in {low}..{high} ms"
        );
    };
    for _ in 0..20 {
        let _ = hedge.call(|| answer(0, ms(10), cancelled.clone())).await;
    }
    delay_in(10, 13);
    // Slower: every attempt takes 40 ms (hedged, the first still wins).
    for _ in 0..120 {
        let r = hedge.call(|| answer(0, ms(40), cancelled.clone())).await;
        assert_eq!(r, Ok(0));
    }
    delay_in(40, 50);
    assert!(
        hedge.stats().hedges > 0,
        "hedged at the old delay meanwhile"
    );
    // Fast again: the 40 ms answers age out within two windows.
    for _ in 0..2_100 {
        let _ = hedge.call(|| answer(0, ms(10), cancelled.clone())).await;
    }
    delay_in(10, 13);
}

#[tokio::test(start_paused = true)]
async fn a_spent_budget_stops_new_hedges_and_cancels_none_in_flight() {
    let budget = RetryBudget::builder()
        .ratio(0.25)
        .min_per_second(0)
        .build()
        .unwrap();
    let hedge = Hedge::builder()
        .delay(Delay::Fixed(ms(10)))
        .budget(budget)
        .build()
        .unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let mut hedged_answers = 0;
    for _ in 0..5 {
        let mut n = 0;
        let r = hedge
            .call(|| {
                n += 1;
                // The first is slow; a hedge answers later still, so a
                // hedge in flight is never cut short by the budget.
                let took = if n == 1 { ms(100) } else { ms(50) };
                answer(n, took, cancelled.clone())
            })
            .await;
        if r == Ok(2) {
            hedged_answers += 1;
        }
    }
    let s = hedge.stats();
    assert!(s.hedges >= 1 && s.hedges < 5, "{s:?}");
    assert_eq!(s.refused_by_budget, 5 - s.hedges);
    assert_eq!(
        hedged_answers, s.hedges,
        "every hedge sent ran to its answer"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_attempt_releases_its_breaker_permit_without_a_verdict() {
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(1)
        .build()
        .unwrap();
    let hedge = fixed(100);
    for _ in 0..3 {
        let mut n = 0;
        let r = hedge
            .call(|| {
                n += 1;
                let took = if n == 1 { ms(5_000) } else { ms(10) };
                breaker.call_async(move || async move {
                    sleep(took).await;
                    Ok::<_, std::io::Error>(())
                })
            })
            .await;
        assert!(r.is_ok());
    }
    let s = breaker.snapshot();
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(s.failures, 0, "a dropped attempt is not a failure");
}

#[test]
fn bad_settings_name_the_key() {
    let e = Hedge::builder()
        .delay(Delay::Quantile(0.0))
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "delay");
    let e = Hedge::builder()
        .delay(Delay::Fixed(Duration::ZERO))
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "delay");
    assert!(e.to_string().contains("hedge"), "{e}");
    let e = Hedge::builder().max_extra(0).build().unwrap_err();
    assert_eq!(e.field(), "max_extra");
}
