//! Many threads, random outcomes: the invariants hold under real contention.

use fusebox::{CircuitBreaker, Listener, ManualClock, State, Transition};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

const THREADS: usize = 8;

/// A tiny deterministic RNG per thread (splitmix64).
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[derive(Default)]
struct Edges(Mutex<Vec<Transition>>);

impl Listener for Edges {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push(*t);
    }
}

fn legal(from: State, to: State) -> bool {
    use State::*;
    matches!(
        (from, to),
        (Closed, Open) | (Open, HalfOpen) | (HalfOpen, Open) | (HalfOpen, Closed)
    )
}

#[test]
fn half_open_never_admits_more_than_k_at_once() {
    for k in [1u32, 3] {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_millis(10))
            .half_open_probes(k)
            .clock(clock.clone())
            .build()
            .unwrap();
        b.call(|| Err::<(), _>(())).unwrap_err();
        clock.advance(Duration::from_millis(10));
        for _round in 0..200 {
            let admitted = AtomicUsize::new(0);
            let barrier = Barrier::new(THREADS);
            std::thread::scope(|s| {
                for _ in 0..THREADS {
                    s.spawn(|| {
                        barrier.wait();
                        let permit = b.try_acquire();
                        if permit.is_ok() {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        barrier.wait(); // hold every permit until all have tried
                        drop(permit); // released: the breaker stays half-open
                    });
                }
            });
            assert_eq!(admitted.load(Ordering::SeqCst), k as usize);
            assert_eq!(b.probes_in_flight(), 0, "a permit was lost");
            assert_eq!(b.state(), State::HalfOpen);
        }
    }
}

#[test]
fn random_outcomes_keep_the_state_machine_legal() {
    let clock = ManualClock::new();
    let edges = Arc::new(Edges::default());
    let b = CircuitBreaker::builder()
        .consecutive_failures(3)
        .open_for(Duration::from_millis(5))
        .half_open_probes(2)
        .successes_to_close(2)
        .clock(clock.clone())
        .listener(Arc::clone(&edges))
        .build()
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (b, clock) = (b.clone(), clock.clone());
            s.spawn(move || {
                let mut next = rng(t as u64 + 1);
                for i in 0..5_000u32 {
                    if i % 16 == 0 {
                        clock.advance(Duration::from_micros(250)); // time moves under everyone
                    }
                    match b.try_acquire() {
                        Ok(p) => match next() % 10 {
                            0..=3 => p.failure(),
                            4..=7 => p.success(),
                            8 => p.ignore(),
                            _ => drop(p),
                        },
                        Err(r) => assert_ne!(r.state(), State::Closed),
                    }
                }
            });
        }
    });
    assert_eq!(b.probes_in_flight(), 0, "a permit was lost");
    let log = edges.0.lock().unwrap();
    assert!(
        log.len() > 10,
        "the run should have moved the breaker: {}",
        log.len()
    );
    for t in log.iter() {
        assert!(legal(t.from, t.to), "illegal edge {t}");
    }
    // Transitions happen under one lock with increasing generations, so
    // sorted by time they must chain: each starts where the previous ended.
    let mut sorted: Vec<_> = log.clone();
    sorted.sort_by_key(|t| t.at);
    let opens = sorted.iter().filter(|t| t.to == State::Open).count();
    let half = sorted.iter().filter(|t| t.to == State::HalfOpen).count();
    assert!(half <= opens && opens <= half + 1);
    assert_eq!(b.snapshot().generation as usize, log.len());
}

#[test]
fn windowed_breaker_totals_stay_consistent_under_contention() {
    let b = CircuitBreaker::builder()
        .failure_rate(1.0) // never trips with mixed outcomes
        .count_window(64)
        .min_calls(64)
        .build()
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let b = b.clone();
            s.spawn(move || {
                let mut next = rng(t as u64 + 100);
                for i in 0..20_000u32 {
                    let fail = next() % 3 == 0 && i % 2 == 0;
                    let _ = b.call(|| if fail { Err(()) } else { Ok(()) });
                }
            });
        }
    });
    let s = b.snapshot();
    assert_eq!(s.state, State::Closed);
    assert_eq!(s.calls, 64, "a full window, exactly");
    assert!(s.failures <= 64);
    // Push every old outcome out single-threaded: the totals must be exact.
    for _ in 0..64 {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures), (64, 0));
}

#[test]
fn time_window_counts_every_call_from_every_thread() {
    let b = CircuitBreaker::builder()
        .failure_rate(1.0)
        .time_window(Duration::from_secs(60))
        .min_calls(1_000_000) // never trips: only the counting is under test
        .clock(ManualClock::new()) // time stands still: no bucket expires
        .build()
        .unwrap();
    let failures = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (b, failures) = (b.clone(), &failures);
            s.spawn(move || {
                let mut next = rng(t as u64 + 7);
                for _ in 0..5_000 {
                    let fail = next() % 4 == 0;
                    if fail {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = b.call(|| if fail { Err(()) } else { Ok(()) });
                }
            });
        }
    });
    let s = b.snapshot();
    assert_eq!(s.calls, (THREADS * 5_000) as u64);
    assert_eq!(s.failures, failures.load(Ordering::Relaxed) as u64);
}

/// Rare failures over a count window that is mostly full of plain
/// successes, so that successes keep marking it full while failures clear
/// the mark, and reconfigures swap the window's shape underneath: whatever
/// the interleaving, no stale mark survives. Afterwards single-threaded
/// calls slide through the window exactly: a failure counts, and the
/// window's size in successes pushes it out.
#[test]
fn full_window_marks_never_outlive_failures_or_reconfigures() {
    let shape = |n: usize| {
        CircuitBreaker::builder()
            .failure_rate(1.0) // never trips with mixed outcomes
            .count_window(n)
            .min_calls(n as u32)
    };
    let b = shape(16).build().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..THREADS)
            .map(|t| {
                let b = b.clone();
                s.spawn(move || {
                    let mut next = rng(t as u64 + 300);
                    for _ in 0..20_000u32 {
                        let fail = next() % 200 == 0;
                        let _ = b.call(|| if fail { Err(()) } else { Ok(()) });
                    }
                })
            })
            .collect();
        let (b, stop) = (b.clone(), &stop);
        s.spawn(move || {
            let mut n = 16;
            while !stop.load(Ordering::Relaxed) {
                n = if n == 16 { 17 } else { 16 };
                b.reconfigure(shape(n)).unwrap();
                std::thread::yield_now();
            }
        });
        for c in callers {
            c.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let n = b.config().count_window.unwrap();
    assert_eq!(b.state(), State::Closed);
    // A stale mark would let these settle unrecorded, leaving the window
    // short of calls or holding an old failure.
    for _ in 0..n {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures), (n as u64, 0), "the last {n} calls");
    b.call(|| Err::<(), _>(())).unwrap_err();
    assert_eq!(b.snapshot().failures, 1, "the failure is counted");
    for _ in 0..n {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    let s = b.snapshot();
    assert_eq!(
        (s.calls, s.failures),
        (n as u64, 0),
        "pushed out by {n} calls"
    );
}

/// Breakers of equal settings share them: threads that build, reconfigure,
/// fail and drop breakers of a few settings at once each see their own
/// breaker keep the settings they gave it and trip at its own threshold.
#[test]
fn breakers_sharing_settings_keep_their_own_settings_and_counts() {
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut next = rng(t as u64 + 41);
                let clock = ManualClock::new();
                let make = |n: u32| {
                    CircuitBreaker::builder()
                        .consecutive_failures(n)
                        .clock(clock.clone())
                };
                barrier.wait();
                let mut kept = Vec::new();
                for _ in 0..300 {
                    let n = 1 + (next() % 4) as u32;
                    let b = make(n).build().unwrap();
                    // Half the time, to other settings (perhaps equal ones).
                    let n = if next() % 2 == 0 {
                        let m = 1 + (next() % 4) as u32;
                        b.reconfigure(make(m)).unwrap();
                        m
                    } else {
                        n
                    };
                    assert_eq!(b.config().consecutive_failures, Some(n));
                    for i in 1..=n {
                        assert_eq!(b.state(), State::Closed, "{i} of {n} failures");
                        let _ = b.call(|| Err::<(), _>(()));
                    }
                    assert_eq!(b.state(), State::Open, "{n} failures trip it");
                    // Some are kept alive a while, the rest dropped at once.
                    if next() % 3 == 0 {
                        kept.push((b, n));
                    }
                }
                for (b, n) in &kept {
                    assert_eq!(b.config().consecutive_failures, Some(*n));
                    assert_eq!(b.state(), State::Open);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
