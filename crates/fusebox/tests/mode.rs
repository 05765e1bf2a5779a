//! Every policy's modes: `enforce` (the default), `shadow` (decide and
//! report, let the call run) and `off` (admit everything, count nothing),
//! set in code or config and changed live.

use fusebox::{Bulkhead, CircuitBreaker, Listener, ManualClock, Mode, Rejected, State};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn breaker(clock: &ManualClock, mode: Mode) -> CircuitBreaker {
    CircuitBreaker::builder()
        .consecutive_failures(3)
        .open_for(Duration::from_millis(500))
        .half_open_probes(1)
        .mode(mode)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A script of calls: at each step the clock moves, then one call is made
/// whose outcome is `ok`. Returns, per step, whether the call ran.
fn drive(b: &CircuitBreaker, clock: &ManualClock, script: &[(u64, bool)]) -> Vec<bool> {
    script
        .iter()
        .map(|&(advance_ms, ok)| {
            clock.advance(Duration::from_millis(advance_ms));
            let mut ran = false;
            let _ = b.call(|| {
                ran = true;
                if ok {
                    Ok(())
                } else {
                    Err("down")
                }
            });
            ran
        })
        .collect()
}

fn script() -> Vec<(u64, bool)> {
    let mut s = Vec::new();
    // Healthy, then down for 2 s of calls every 100 ms, then healthy again.
    s.extend((0..5).map(|_| (100, true)));
    s.extend((0..20).map(|_| (100, false)));
    s.extend((0..20).map(|_| (100, true)));
    s
}

#[derive(Default)]
struct Log {
    transitions: Mutex<Vec<(State, State, Duration)>>,
    rejected: AtomicU64,
    shadowed: AtomicU64,
}

impl Listener for Log {
    fn on_transition(&self, t: &fusebox::Transition) {
        self.transitions.lock().unwrap().push((t.from, t.to, t.at));
    }
    fn on_rejected(&self, _: &Rejected) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }
    fn on_shadowed(&self, _: &Rejected) {
        self.shadowed.fetch_add(1, Ordering::Relaxed);
    }
}

fn logged(clock: &ManualClock, mode: Mode, log: &Arc<Log>) -> CircuitBreaker {
    CircuitBreaker::builder()
        .consecutive_failures(3)
        .open_for(Duration::from_millis(500))
        .mode(mode)
        .clock(clock.clone())
        .listener(Arc::clone(log))
        .build()
        .unwrap()
}

#[test]
fn a_shadow_breaker_runs_every_call_and_counts_what_it_would_have_rejected() {
    let (c1, c2) = (ManualClock::new(), ManualClock::new());
    let (enforce_log, shadow_log) = (Arc::new(Log::default()), Arc::new(Log::default()));
    let enforcing = logged(&c1, Mode::Enforce, &enforce_log);
    let shadow = logged(&c2, Mode::Shadow, &shadow_log);

    let ran_enforcing = drive(&enforcing, &c1, &script());
    let ran_shadow = drive(&shadow, &c2, &script());

    assert!(ran_shadow.iter().all(|r| *r), "shadow lets every call run");
    let refused = ran_enforcing.iter().filter(|r| !**r).count() as u64;
    assert!(refused > 0, "the enforcing twin did refuse calls");
    assert_eq!(shadow.snapshot().shadowed, refused);
    assert_eq!(shadow.snapshot().rejected, 0);
    assert_eq!(shadow_log.shadowed.load(Ordering::Relaxed), refused);
    assert_eq!(shadow_log.rejected.load(Ordering::Relaxed), 0);
    assert_eq!(enforcing.snapshot().rejected, refused);
    assert_eq!(enforcing.snapshot().shadowed, 0);
    // The calls let through count for nothing, so the shadow breaker moves
    // exactly as the enforcing one did: same transitions at the same times.
    assert_eq!(
        *shadow_log.transitions.lock().unwrap(),
        *enforce_log.transitions.lock().unwrap()
    );
    assert_eq!(shadow.state(), State::Closed);
}

#[test]
fn a_shadow_breaker_still_probes_one_call_at_a_time() {
    let clock = ManualClock::new();
    let b = breaker(&clock, Mode::Shadow);
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>("down"));
    }
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_millis(500));
    let probe = b.try_acquire().expect("the probe");
    assert_eq!(b.state(), State::HalfOpen);
    // The one probe slot is taken: the next call is shadowed, not a probe,
    // so its failure does not reopen the breaker.
    let extra = b.try_acquire().expect("shadow lets it through");
    extra.failure();
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.snapshot().shadowed, 1);
    probe.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn an_off_breaker_admits_everything_and_counts_nothing() {
    let clock = ManualClock::new();
    let log = Arc::new(Log::default());
    let b = logged(&clock, Mode::Off, &log);
    for _ in 0..50 {
        assert_eq!(
            b.call(|| Err::<(), _>("down")).unwrap_err().to_string(),
            "down"
        );
    }
    let s = b.snapshot();
    assert_eq!((s.state, s.consecutive_failures), (State::Closed, 0));
    assert_eq!((s.rejected, s.shadowed), (0, 0));
    assert!(log.transitions.lock().unwrap().is_empty());
    // Back to enforce: it counts from here.
    b.set_mode(Mode::Enforce);
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>("down"));
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn set_mode_changes_an_open_breaker_in_place() {
    let clock = ManualClock::new();
    let b = breaker(&clock, Mode::Enforce);
    let held = b.clone();
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>("down"));
    }
    assert!(held.call(|| Ok::<_, &str>(())).is_err());
    b.set_mode(Mode::Shadow);
    assert_eq!(held.mode(), Mode::Shadow);
    assert!(held.call(|| Ok::<_, &str>(())).is_ok());
    b.set_mode(Mode::Enforce);
    let err = held.call(|| Ok::<_, &str>(())).unwrap_err();
    assert!(err.is_rejected());
    // The mode is part of the settings: reconfigure carries it.
    b.reconfigure(b.config().builder().mode(Mode::Off)).unwrap();
    assert_eq!(held.mode(), Mode::Off);
    assert_eq!(b.config().mode, Some(Mode::Off));
}

#[test]
fn a_shadow_bulkhead_lets_calls_over_its_limit_and_counts_them() {
    let b = Bulkhead::builder(2).mode(Mode::Shadow).build();
    let permits: Vec<_> = (0..5).map(|_| b.try_acquire().unwrap()).collect();
    let s = b.snapshot();
    assert_eq!((s.in_use, s.rejected, s.shadowed), (5, 0, 3));
    drop(permits);
    assert_eq!(b.snapshot().in_use, 0, "every permit gives its slot back");
    // call/try_call take the same path.
    let _a = b.try_acquire().unwrap();
    let _b = b.try_acquire().unwrap();
    assert_eq!(b.call(|| 7), Ok(7));
    assert_eq!(b.try_call(|| 8), Ok(8));
    assert_eq!(b.snapshot().shadowed, 5);
}

#[test]
fn an_off_bulkhead_refuses_and_counts_nothing_and_enforce_refuses_again() {
    let b = Bulkhead::builder(1).mode(Mode::Off).build();
    let held: Vec<_> = (0..10).map(|_| b.try_acquire().unwrap()).collect();
    let s = b.snapshot();
    assert_eq!((s.in_use, s.rejected, s.shadowed), (10, 0, 0));
    drop(held);
    assert_eq!(b.snapshot().in_use, 0);
    b.set_mode(Mode::Enforce);
    let _one = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    assert_eq!(b.snapshot().rejected, 1);
}

#[test]
fn a_blocking_shadow_bulkhead_does_not_wait() {
    let b = Bulkhead::builder(1)
        .max_wait(Duration::from_secs(60))
        .mode(Mode::Shadow)
        .build();
    let _held = b.try_acquire().unwrap();
    // Would wait a minute when enforcing; shadow lets it run at once.
    assert!(b.acquire().is_ok());
    assert_eq!(b.snapshot().shadowed, 1);
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn an_async_shadow_bulkhead_does_not_wait() {
    let b = Bulkhead::builder(1)
        .max_wait(Duration::from_secs(60))
        .mode(Mode::Shadow)
        .build();
    let _held = b.try_acquire().unwrap();
    let start = tokio::time::Instant::now();
    assert!(b.acquire_async().await.is_ok());
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(b.snapshot().shadowed, 1);
}

#[cfg(feature = "config")]
mod files {
    use super::*;
    use fusebox::registry::{Fusebox, FuseboxConfig};

    const SHADOW: &str = r#"
[breakers.db]
consecutive_failures = 1
open_for = "10s"
mode = "shadow"

[bulkheads.reviews]
max_concurrent = 1
mode = "shadow"
"#;

    #[test]
    fn a_registry_entry_moves_from_shadow_to_enforce_by_reload_in_place() {
        let fusebox = Fusebox::builder()
            .config(FuseboxConfig::from_toml(SHADOW).unwrap())
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let db = fusebox.breaker("db");
        let reviews = fusebox.bulkhead("reviews");
        assert_eq!((db.mode(), reviews.mode()), (Mode::Shadow, Mode::Shadow));

        let _ = db.call(|| Err::<(), _>("down"));
        assert_eq!(db.state(), State::Open);
        assert!(db.call(|| Ok::<_, &str>(())).is_ok(), "shadow: let through");
        let _slot = reviews.try_acquire().unwrap();
        assert!(reviews.try_acquire().is_ok(), "shadow: let through");

        fusebox
            .reload(FuseboxConfig::from_toml(&SHADOW.replace("shadow", "enforce")).unwrap())
            .unwrap();
        // The same handles, now enforcing.
        assert_eq!((db.mode(), reviews.mode()), (Mode::Enforce, Mode::Enforce));
        assert!(db.call(|| Ok::<_, &str>(())).unwrap_err().is_rejected());
        assert!(reviews.try_acquire().is_err());
        assert_eq!(db.snapshot().shadowed, 1);
        assert_eq!(reviews.snapshot().shadowed, 1);
    }

    #[test]
    fn an_unknown_mode_is_an_error_naming_the_key() {
        let err = FuseboxConfig::from_toml("[breakers.db]\nmode = \"loud\"\n").unwrap_err();
        assert_eq!(err.key(), "breakers.db.mode", "{err}");
        assert!(err.to_string().contains("loud"), "{err}");
        let err = FuseboxConfig::from_toml("[bulkheads.r]\nmode = \"strict\"\n").unwrap_err();
        assert_eq!(err.key(), "bulkheads.r.mode", "{err}");
    }
}

#[derive(Default)]
struct Durations(Mutex<Vec<Duration>>);

impl Listener for Durations {
    fn on_call(&self, c: &fusebox::CallEvent) {
        self.0.lock().unwrap().push(c.duration);
    }
}

#[test]
fn calls_let_through_by_shadow_or_off_are_timed() {
    let clock = ManualClock::new();
    let heard = Arc::new(Durations::default());
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::from_secs(60))
        .mode(Mode::Shadow)
        .clock(clock.clone())
        .listener(Arc::clone(&heard))
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
    let slow_call = |ms| {
        b.call(|| {
            clock.advance(Duration::from_millis(ms));
            Ok::<_, &str>(())
        })
    };
    slow_call(250).unwrap(); // shadowed
    b.set_mode(Mode::Off);
    slow_call(400).unwrap(); // off
    let heard = heard.0.lock().unwrap();
    assert_eq!(
        heard[1..],
        [Duration::from_millis(250), Duration::from_millis(400)]
    );
}

#[test]
fn switching_a_full_bulkhead_to_shadow_releases_its_waiters() {
    let b = Bulkhead::builder(1)
        .max_wait(Duration::from_secs(60))
        .build();
    let _held = b.try_acquire().unwrap();
    let waiter = {
        let b = b.clone();
        std::thread::spawn(move || b.call(|| "ran"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while b.snapshot().waiting == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the caller never waited"
        );
        std::thread::yield_now();
    }
    b.set_mode(Mode::Shadow);
    // Woken by the switch, not by the end of its minute.
    assert_eq!(waiter.join().unwrap(), Ok("ran"));
    let s = b.snapshot();
    assert_eq!((s.rejected, s.shadowed), (0, 1));
}

#[cfg(feature = "config")]
#[test]
fn a_breakers_own_config_names_its_mode() {
    use fusebox::registry::{Fusebox, FuseboxConfig};
    let fusebox = Fusebox::from_config(
        FuseboxConfig::from_toml(
            "[defaults.breaker]\nmode = \"shadow\"\n[breakers.db]\nmode = \"enforce\"\n",
        )
        .unwrap(),
    )
    .unwrap();
    let db = fusebox.breaker("db");
    assert_eq!(db.mode(), Mode::Enforce);
    assert_eq!(db.config().mode, Some(Mode::Enforce));
    // Its own config, fed back, over the shadow default: still enforcing.
    let mut config = db.config();
    config.consecutive_failures = Some(2);
    fusebox.reconfigure("db", config).unwrap();
    assert_eq!(db.mode(), Mode::Enforce);
    assert_eq!(db.config().consecutive_failures, Some(2));
}
