//! loom model of the bulkhead: never more than the limit in flight, no permit
//! lost, and no waiter asleep while a slot is free.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p fusebox --release --test loom_bulkhead`
#![cfg(loom)]

use fusebox::Bulkhead;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// Two threads race `try_call` on a bulkhead of one: at most one inside at a
/// time, and afterwards every slot is back.
#[test]
fn try_call_never_exceeds_limit() {
    loom::model(|| {
        let b = Bulkhead::new(1);
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, inside) = (b.clone(), inside.clone());
                thread::spawn(move || {
                    b.try_call(|| {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= 1, "{n} calls inside a bulkhead of 1");
                        inside.fetch_sub(1, Ordering::SeqCst);
                    })
                    .is_ok()
                })
            })
            .collect();
        let admitted = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert!(admitted >= 1);
        let s = b.snapshot();
        assert_eq!(s.in_use, 0, "a permit was lost");
        assert_eq!(s.rejected as usize, 2 - admitted);
        // The slot is usable again.
        assert!(b.try_acquire().is_ok());
    });
}

/// Limit two, three threads: never three inside. Three threads make a large
/// state space, so preemptions are bounded (as tokio's own models do).
#[test]
fn limit_two_three_threads() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let b = Bulkhead::new(2);
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (b, inside) = (b.clone(), inside.clone());
                thread::spawn(move || {
                    let _ = b.try_call(|| {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= 2, "{n} calls inside a bulkhead of 2");
                        inside.fetch_sub(1, Ordering::SeqCst);
                    });
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(b.snapshot().in_use, 0, "a permit was lost");
    });
}

/// A blocking waiter and a releasing holder: the waiter always gets the slot
/// (loom's `wait_timeout` never times out, so a lost wake-up is a deadlock that
/// loom reports).
#[test]
fn waiter_is_woken_by_release() {
    loom::model(|| {
        let b = Bulkhead::builder(1)
            .max_wait(Duration::from_secs(3600))
            .build();
        let held = b.try_acquire().unwrap();
        let b2 = b.clone();
        let waiter = thread::spawn(move || b2.acquire().map(drop).is_ok());
        drop(held);
        assert!(waiter.join().unwrap(), "the waiter gave up");
        assert_eq!(b.snapshot().in_use, 0, "a permit was lost");
    });
}

/// A waiter, a releasing holder and a barging `try_call` at once: whoever
/// takes the freed slot, the waiter is woken in the end (a barger's release
/// wakes it too), the limit holds and nothing leaks.
#[test]
fn waiter_survives_a_barging_caller() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let b = Bulkhead::builder(1)
            .max_wait(Duration::from_secs(3600))
            .build();
        let inside = Arc::new(AtomicUsize::new(0));
        let held = b.try_acquire().unwrap();
        let (b2, in2) = (b.clone(), inside.clone());
        let waiter = thread::spawn(move || {
            b2.call(|| {
                assert_eq!(in2.fetch_add(1, Ordering::SeqCst), 0, "limit exceeded");
                in2.fetch_sub(1, Ordering::SeqCst);
            })
            .is_ok()
        });
        let (b3, in3) = (b.clone(), inside.clone());
        let barger = thread::spawn(move || {
            let _ = b3.try_call(|| {
                assert_eq!(in3.fetch_add(1, Ordering::SeqCst), 0, "limit exceeded");
                in3.fetch_sub(1, Ordering::SeqCst);
            });
        });
        drop(held);
        barger.join().unwrap();
        assert!(waiter.join().unwrap(), "the waiter gave up");
        assert_eq!(b.snapshot().in_use, 0, "a permit was lost");
    });
}
