//! Adaptive throttling on virtual time (`ManualClock`): the client sends
//! about K x what the backend accepts, never refuses more than the cap,
//! counts a request before its call, and follows the backend back up.
#![cfg(feature = "throttle")]

use fusebox::throttle::{Throttle, ThrottleConfig};
use fusebox::{Clock, ManualClock};
use std::time::Duration;

/// A backend that accepts at most `capacity` calls per virtual second and
/// refuses the rest for load.
struct Backend {
    capacity: u32,
    second: u64,
    accepted: u32,
}

impl Backend {
    fn new(capacity: u32) -> Self {
        Backend {
            capacity,
            second: 0,
            accepted: 0,
        }
    }

    fn accepts(&mut self, now: Duration) -> bool {
        if now.as_secs() != self.second {
            self.second = now.as_secs();
            self.accepted = 0;
        }
        self.accepted < self.capacity && {
            self.accepted += 1;
            true
        }
    }
}

/// Sent and accepted calls, and refusals, of one virtual second at 1,000
/// attempts a second.
#[derive(Debug, Default, Clone, Copy)]
struct Second {
    sent: u32,
    accepted: u32,
    refused: u32,
}

fn run(
    throttle: &Throttle,
    clock: &ManualClock,
    backend: &mut Backend,
    seconds: u64,
) -> Vec<Second> {
    let mut out = Vec::new();
    for _ in 0..seconds {
        let mut s = Second::default();
        for _ in 0..1000 {
            clock.advance(Duration::from_millis(1));
            // Whatever the backend does, at every step.
            assert!(throttle.rejection_probability() <= throttle.config().max_rejection_value());
            match throttle.try_acquire() {
                Ok(permit) => {
                    s.sent += 1;
                    if backend.accepts(clock.now()) {
                        s.accepted += 1;
                        permit.accept();
                    } else {
                        permit.overload();
                    }
                }
                Err(refused) => {
                    assert!(refused.probability() <= throttle.config().max_rejection_value());
                    s.refused += 1;
                }
            }
        }
        out.push(s);
    }
    out
}

fn throttle(config: ThrottleConfig, clock: &ManualClock, seed: u64) -> Throttle {
    Throttle::builder()
        .config(config)
        .clock(clock.clone())
        .seed(seed)
        .build()
        .unwrap()
}

#[test]
fn the_client_sends_about_k_times_what_the_backend_accepts() {
    for (k, capacity) in [(2.0, 150), (1.5, 300), (3.0, 100)] {
        let clock = ManualClock::new();
        let t = throttle(ThrottleConfig::default().k(k), &clock, 11);
        let mut backend = Backend::new(capacity);
        let seconds = run(&t, &clock, &mut backend, 90);
        // Settled: the last 30 virtual seconds, one window.
        let tail = &seconds[60..];
        let sent: u32 = tail.iter().map(|s| s.sent).sum();
        let accepted: u32 = tail.iter().map(|s| s.accepted).sum();
        let ratio = f64::from(sent) / f64::from(accepted);
        assert!(
            (ratio - k).abs() <= 0.1 * k,
            "K = {k}, capacity {capacity}: sent {sent} / accepted {accepted} = {ratio:.3}"
        );
        assert_eq!(accepted, capacity * 30, "the backend is kept busy");
    }
}

#[test]
fn rejection_never_exceeds_the_cap_even_when_nothing_is_accepted() {
    for cap in [0.5, 0.8, 0.95] {
        let clock = ManualClock::new();
        let t = throttle(
            ThrottleConfig::default().max_rejection(cap).padding(0),
            &clock,
            5,
        );
        let seconds = run(&t, &clock, &mut Backend::new(0), 40);
        // (`run` checked the probability against the cap at every step.)
        assert!(t.rejection_probability() <= cap);
        for s in &seconds {
            assert_eq!(s.accepted, 0);
        }
        // Settled at the cap: refusals near cap x attempts, never far above.
        let refused: u32 = seconds[30..].iter().map(|s| s.refused).sum();
        let share = f64::from(refused) / 10_000.0;
        assert!(
            (share - cap).abs() < 0.03,
            "cap {cap}: refused share {share:.3}"
        );
        assert!((t.rejection_probability() - cap).abs() < 1e-9);
    }
}

#[test]
fn a_request_counts_before_its_call_ends_even_when_calls_outlive_the_window() {
    let clock = ManualClock::new();
    let t = throttle(
        ThrottleConfig::default()
            .window(Duration::from_secs(1), 10)
            .padding(0),
        &clock,
        9,
    );
    // Calls that hang for 2 s, longer than the 1 s window: no answer yet.
    let mut hanging = Vec::new();
    for _ in 0..500 {
        clock.advance(Duration::from_millis(1));
        if let Ok(permit) = t.try_acquire() {
            hanging.push(permit);
        }
    }
    let s = t.snapshot();
    assert_eq!(s.requests, 500, "every request counted at admission");
    assert_eq!(s.accepts, 0);
    assert!(
        t.rejection_probability() >= 0.79,
        "refusing before any answer came: {}",
        t.rejection_probability()
    );
    assert!(s.refused > 300, "{s:?}");
    // The answers arrive late, all accepts, after the requests left the
    // window: the throttle refuses nothing any more.
    clock.advance(Duration::from_millis(1500));
    for permit in hanging {
        permit.accept();
    }
    assert_eq!(t.snapshot().requests, 0);
    assert_eq!(t.rejection_probability(), 0.0);
}

#[test]
fn it_follows_the_backend_back_up_within_two_windows() {
    let clock = ManualClock::new();
    let t = throttle(
        ThrottleConfig::default().window(Duration::from_secs(10), 10),
        &clock,
        3,
    );
    let mut sick = Backend::new(50);
    let during = run(&t, &clock, &mut sick, 20);
    assert!(during[19].refused > 800, "{:?}", during[19]);
    let mut healed = Backend::new(u32::MAX);
    let after = run(&t, &clock, &mut healed, 30);
    let refused: Vec<u32> = after.iter().map(|s| s.refused).collect();
    // The refused requests of the sick period leave the window as it
    // slides: refusals fall, and within two windows none is left.
    let healed_at = refused.iter().position(|&r| r == 0).expect("recovers");
    assert!(healed_at <= 20, "{refused:?}");
    assert!(refused[healed_at..].iter().all(|&r| r == 0), "{refused:?}");
    assert!(
        refused[1] > refused[6] && refused[6] > refused[healed_at - 1],
        "{refused:?}"
    );
    assert_eq!(after[29].sent, 1000);
}

#[test]
fn clones_share_their_counts_and_threads_lose_no_request() {
    let clock = ManualClock::new();
    let t = throttle(ThrottleConfig::default(), &clock, 1);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    if let Ok(p) = t.try_acquire() {
                        p.accept();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let s = t.snapshot();
    // One bucket (the clock does not move): no reset races, exact counts.
    assert_eq!(s.requests, 40_000);
    assert_eq!(s.accepts, 40_000);
    assert_eq!(s.refused, 0);
}

#[test]
fn shadow_decides_as_enforce_and_refuses_nothing_off_counts_nothing() {
    use fusebox::Mode;
    let clock = ManualClock::new();
    let config = ThrottleConfig::default().padding(0);
    let enforce = throttle(config, &clock, 21);
    let shadow = throttle(config.mode(Mode::Shadow), &clock, 21);
    // The backend refuses everything: the same draws, the same decisions.
    for _ in 0..2000 {
        clock.advance(Duration::from_millis(1));
        let refused = match enforce.try_acquire() {
            Ok(p) => {
                p.overload();
                false
            }
            Err(_) => true,
        };
        let before = shadow.snapshot().shadowed;
        shadow
            .try_acquire()
            .expect("shadow mode refuses nothing")
            .overload();
        assert_eq!(shadow.snapshot().shadowed - before, u64::from(refused));
    }
    let (e, s) = (enforce.snapshot(), shadow.snapshot());
    assert!(e.refused > 1000, "{e:?}");
    assert_eq!((s.refused, s.shadowed), (0, e.refused));
    assert_eq!(s.requests, e.requests);

    // Off: admits and counts nothing, verdicts included; back on, it counts.
    shadow.set_mode(Mode::Off);
    let requests = shadow.snapshot().requests;
    for _ in 0..100 {
        shadow.try_acquire().unwrap().accept();
    }
    assert_eq!(shadow.snapshot().requests, requests);
    assert_eq!(shadow.snapshot().accepts, 0);
    shadow.set_mode(Mode::Enforce);
    assert_eq!(shadow.mode(), Mode::Enforce);
    drop(shadow.try_acquire());
    assert_eq!(shadow.snapshot().requests, requests + 1, "counted again");
}

/// As a pipeline stage: what counts as an accept (a success, an error the
/// classifier ignores) and what does not (a failure, a timeout, a refusal
/// from a stage inside), the refusal the pipeline returns, and the place in
/// the default order (inside the breaker, outside the bulkhead).
#[test]
fn in_a_pipeline_answers_are_accepts_failures_are_not_and_inside_refusals_are_taken_back() {
    use fusebox::pipeline::Stage;
    use fusebox::{Bulkhead, CircuitBreaker, Outcome, Pipeline, PipelineError};
    let clock = ManualClock::new();
    let t = throttle(ThrottleConfig::default(), &clock, 7);
    let full = Bulkhead::new(0);
    let p = Pipeline::builder()
        .bulkhead(Bulkhead::new(4))
        .throttle(t.clone())
        .breaker(
            CircuitBreaker::builder()
                .clock(clock.clone())
                .mode(fusebox::Mode::Off) // never trips: the throttle decides below
                .build()
                .unwrap(),
        )
        .classify(|e: &&str| {
            if *e == "404" {
                Outcome::Ignore
            } else {
                Outcome::Failure
            }
        })
        .build();
    let kinds: Vec<_> = p.stages().iter().map(Stage::kind).collect();
    assert_eq!(kinds, ["breaker", "throttle", "bulkhead"]);
    assert!(p.throttle().is_some());
    assert!(p.call(|| Ok::<_, &str>(())).is_ok());
    let _ = p.call(|| Err::<(), _>("404"));
    let _ = p.call(|| Err::<(), _>("503"));
    let s = t.snapshot();
    assert_eq!(
        (s.requests, s.accepts),
        (3, 2),
        "a success and a 404 are accepts, a 503 is not"
    );
    // A refusal from a stage inside: the dependency never judged it, so the
    // request is taken back (neither a request nor an accept).
    let inside = Pipeline::builder()
        .throttle(t.clone())
        .bulkhead(full)
        .build();
    let e = inside.call(|| Ok::<_, &str>(())).unwrap_err();
    assert!(matches!(e, PipelineError::BulkheadFull(_)));
    let s = t.snapshot();
    assert_eq!((s.requests, s.accepts), (3, 2));
    // Failures only: the throttle refuses, with its own error.
    let mut throttled = 0;
    for _ in 0..200 {
        if let Err(PipelineError::Throttled(r)) = p.call(|| Err::<(), _>("503")) {
            throttled += 1;
            assert_eq!(PipelineError::<&str>::Throttled(r).stopped_by(), "throttle");
        }
        clock.advance(Duration::from_millis(10));
    }
    assert!(throttled > 50, "{throttled} of 200 refused");
}

/// A hedge's cancelled loser is taken back, so hedging a healthy
/// dependency does not raise the throttle's rejection probability.
#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_cancelled_hedge_is_taken_back_and_refuses_nothing() {
    use fusebox::hedge::{Delay, Hedge};
    use fusebox::{Pipeline, PipelineError};
    let clock = ManualClock::new();
    let t = throttle(ThrottleConfig::default().k(1.5), &clock, 3);
    let p = Pipeline::builder()
        .hedge(
            Hedge::builder()
                .delay(Delay::Fixed(Duration::from_millis(10)))
                .build()
                .unwrap(),
        )
        .throttle(t.clone())
        .build();
    let mut refused = 0;
    for _ in 0..100 {
        let mut attempt = 0;
        let r = p
            .call_async(|| {
                attempt += 1;
                let took = if attempt == 1 { 50 } else { 1 }; // every first attempt is slow
                async move {
                    tokio::time::sleep(Duration::from_millis(took)).await;
                    Ok::<_, std::io::Error>(())
                }
            })
            .await;
        refused += u32::from(matches!(r, Err(PipelineError::Throttled(_))));
    }
    let s = t.snapshot();
    assert_eq!(refused, 0);
    assert_eq!(
        (s.requests, s.accepts),
        (100, 100),
        "every loser taken back: {s:?}"
    );
    assert_eq!(t.rejection_probability(), 0.0);
}
