//! Breaker sets: one breaker per key, bounded memory, eviction that never
//! forgets a sick key, live reconfigure; all on `ManualClock`.

use fusebox::set::BreakerSet;
use fusebox::{BreakerConfig, CircuitBreaker, Clock, ManualClock, State};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const IDLE: Duration = Duration::from_secs(60);

fn set(clock: &ManualClock, max_keys: usize) -> BreakerSet<String> {
    BreakerSet::builder(
        CircuitBreaker::builder()
            .consecutive_failures(2)
            .open_for(Duration::from_secs(3600))
            .clock(clock.clone()),
    )
    .name("hosts")
    .max_keys(max_keys)
    .idle_after(IDLE)
    .build()
    .unwrap()
}

fn fail(set: &BreakerSet<String>, key: &str, times: usize) {
    for _ in 0..times {
        let _ = set.call(key, || Err::<(), _>("reset"));
    }
}

#[test]
fn one_sick_key_opens_its_own_breaker_only() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 100);
    fail(&hosts, "h3", 2);
    for i in 0..10 {
        let key = format!("h{i}");
        let expected = if i == 3 { State::Open } else { State::Closed };
        assert_eq!(hosts.get(&*key).state(), expected, "{key}");
        if i != 3 {
            assert!(hosts.call(&*key, || Ok::<_, ()>(())).is_ok());
        }
    }
    assert_eq!(hosts.get("h3").name(), Some("hosts/h3"));
    assert_eq!(hosts.len(), 10);
}

#[test]
fn a_hundred_thousand_keys_never_hold_more_than_the_cap() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 1_000);
    for i in 0..100_000u32 {
        let _ = hosts.call(&*format!("k{i}"), || Ok::<_, ()>(()));
        if i % 1_000 == 0 {
            clock.advance(Duration::from_secs(1));
        }
        assert!(hosts.len() <= 1_000);
    }
    let (evicted, overflowed) = hosts.counts();
    assert!(evicted > 0, "idle breakers make room");
    assert!(
        overflowed > 0,
        "keys beyond the cap share the overflow breaker"
    );
    assert_eq!(hosts.len() as u64 + evicted, 100_000 - overflowed);
}

#[test]
fn a_full_set_shares_the_overflow_breaker_until_idle_breakers_make_room() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 2);
    let (a, b) = (hosts.get("a"), hosts.get("b"));
    drop((a, b));
    assert!(hosts.get("c").same_as(hosts.overflow()));
    clock.advance(IDLE);
    let c = hosts.get("c");
    assert!(!c.same_as(hosts.overflow()), "a and b were idle: evicted");
    assert_eq!(c.name(), Some("hosts/c"));
    assert_eq!(hosts.counts().0, 2);
}

#[test]
fn an_open_breaker_survives_eviction_pressure() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    fail(&hosts, "sick", 2);
    assert_eq!(hosts.get("sick").state(), State::Open);
    for round in 0..5 {
        for i in 0..50 {
            hosts.get(&*format!("r{round}-{i}"));
        }
        assert_eq!(hosts.len(), 10, "full: the sick one and nine new ones");
        clock.advance(IDLE * 2);
        assert_eq!(
            hosts.evict_idle(),
            9,
            "round {round}: every closed idle one"
        );
    }
    let sick = hosts.get("sick");
    assert!(!sick.same_as(hosts.overflow()));
    assert_eq!(sick.state(), State::Open, "not forgotten, not closed");
    assert!(hosts.call("sick", || Ok::<_, ()>(())).is_err());
}

#[test]
fn a_breaker_held_by_a_caller_or_a_permit_is_not_evicted() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    let handle = hosts.get("held");
    let permit = hosts.get("permit").try_acquire().unwrap();
    hosts.get("free");
    clock.advance(IDLE);
    assert_eq!(hosts.evict_idle(), 1);
    let mut keys: Vec<_> = hosts.snapshot().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, ["held", "permit"]);
    permit.success();
    drop(handle);
    assert_eq!(hosts.evict_idle(), 2);
    assert!(hosts.is_empty());
}

#[test]
fn a_recently_used_breaker_is_not_evicted() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    hosts.get("busy");
    hosts.get("quiet");
    clock.advance(IDLE / 2);
    hosts.get("busy");
    clock.advance(IDLE / 2);
    assert_eq!(hosts.evict_idle(), 1);
    assert_eq!(hosts.snapshot()[0].0, "busy");
}

/// Keys used at random steps (some hot, some rare; a use is one `get` or a
/// burst of them, some of which read the clock), `evict_idle` at every
/// step: no breaker is ever evicted sooner than `idle_after` after its last
/// use, and none outlives it by more than an epoch (an eighth of
/// `idle_after`) and two steps.
#[test]
fn eviction_is_never_early_and_at_most_an_epoch_late() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 100);
    let step = IDLE / 10 + Duration::from_millis(7);
    let slack = IDLE / 8 + step * 2;
    let mut last_use: HashMap<String, Duration> = HashMap::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut draw = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut evicted = 0;
    for _ in 0..400 {
        for i in 0..12u64 {
            // Key i is used one step in 2 + 3i.
            let r = draw();
            if r % (2 + 3 * i) != 0 {
                continue;
            }
            let key = format!("k{i}");
            let gets = if r & (1 << 40) != 0 { 70 } else { 1 };
            for _ in 0..gets {
                hosts.get(&*key);
            }
            last_use.insert(key, clock.now());
        }
        clock.advance(step);
        evicted += hosts.evict_idle();
        let now = clock.now();
        let present: HashSet<String> = hosts.snapshot().into_iter().map(|(k, _)| k).collect();
        last_use.retain(|key, used| {
            let idle = now - *used;
            if present.contains(key) {
                assert!(idle < IDLE + slack, "{key} idle for {idle:?}, kept");
                true
            } else {
                assert!(idle >= IDLE, "{key} evicted after {idle:?} only");
                false
            }
        });
    }
    assert!(evicted > 50, "rare keys come and go: {evicted}");
}

/// Only `get`s on keys that have their breakers (one in 61 on a thread reads
/// the clock), no `evict_idle`: a new key on the full set still finds the
/// room of a key that went quiet.
#[test]
fn a_busy_full_set_makes_room_once_a_key_went_quiet() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 3);
    for step in 0..20 {
        for key in ["a", "b", "c"] {
            if key == "c" && step >= 5 {
                continue; // quiet from 0.5 x idle_after on
            }
            for _ in 0..100 {
                hosts.get(key);
            }
        }
        clock.advance(IDLE / 10);
    }
    let d = hosts.get("d");
    assert!(!d.same_as(hosts.overflow()), "c was idle: evicted");
    let mut keys: Vec<_> = hosts.snapshot().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, ["a", "b", "d"]);
}

/// After a time nobody used the set, its breakers are evicted by the
/// `evict_idle` an `idle_after` after the first.
#[test]
fn after_a_quiet_time_eviction_takes_at_most_two_sweeps() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    for _ in 0..200 {
        hosts.get("a");
        hosts.get("b");
    }
    clock.advance(IDLE * 5);
    let first = hosts.evict_idle();
    clock.advance(IDLE);
    assert_eq!(first + hosts.evict_idle(), 2);
    assert!(hosts.is_empty());
}

/// With an `idle_after` of zero, a closed breaker nobody holds is evicted
/// at once, however recently used; a held one is not.
#[test]
fn with_no_idle_time_every_closed_unheld_breaker_is_evictable_at_once() {
    let clock = ManualClock::new();
    let hosts: BreakerSet<String> =
        BreakerSet::builder(CircuitBreaker::builder().clock(clock.clone()))
            .max_keys(2)
            .idle_after(Duration::ZERO)
            .build()
            .unwrap();
    for _ in 0..100 {
        hosts.get("a");
    }
    let held = hosts.get("b");
    assert_eq!(hosts.evict_idle(), 1, "a, just used, goes");
    hosts.get("c");
    assert_eq!(hosts.len(), 2);
    // Full: a new key takes the place of c (unheld) at once, not of b.
    assert!(!hosts.get("d").same_as(hosts.overflow()));
    let mut keys: Vec<_> = hosts.snapshot().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(keys, ["b", "d"]);
    assert!(hosts.get("b").same_as(&held));
}

#[test]
fn reconfigure_reaches_every_breaker_and_the_ones_made_later() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    let old = hosts.get("old");
    let one = BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    };
    hosts.reconfigure(one).unwrap();
    fail(&hosts, "old", 1);
    assert_eq!(old.state(), State::Open);
    fail(&hosts, "new", 1);
    assert_eq!(hosts.get("new").state(), State::Open);
    assert_eq!(hosts.overflow().config().consecutive_failures, Some(1));

    let bad = BreakerConfig {
        failure_rate: Some(1.5),
        ..Default::default()
    };
    let err = hosts.reconfigure(bad).unwrap_err();
    assert_eq!(err.field(), "failure_rate");
    assert_eq!(
        hosts.get("later").config().consecutive_failures,
        Some(1),
        "nothing changed"
    );
}

#[test]
fn bad_settings_are_errors_naming_the_key() {
    let err = BreakerSet::<u8>::builder(CircuitBreaker::builder())
        .max_keys(0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_keys");
    assert!(err.to_string().contains("breaker set"), "{err}");
    let err = BreakerSet::<u8>::builder(CircuitBreaker::builder().half_open_probes(0))
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "half_open_probes");
}

/// Threads racing on overlapping keys: the cap holds, and a key has one
/// breaker while it is held.
#[test]
fn racing_callers_keep_the_cap_and_one_breaker_per_key() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 64);
    let pinned = hosts.get("pinned");
    std::thread::scope(|s| {
        for t in 0..4 {
            let hosts = hosts.clone();
            let pinned = pinned.clone();
            let clock = clock.clone();
            s.spawn(move || {
                for i in 0..5_000u32 {
                    let _ = hosts.call(&*format!("k{}", (i * 7 + t) % 200), || Ok::<_, ()>(()));
                    assert!(hosts.get("pinned").same_as(&pinned));
                    assert!(hosts.len() <= 64);
                    if i % 500 == 0 {
                        clock.advance(IDLE);
                    }
                }
            });
        }
    });
    assert!(hosts.len() <= 64);
}

/// Outlier detection: ejection on failures in a row and on a success rate
/// below the keys', at most `max_ejection_percent` of the keys at once,
/// ejection times that grow and are worked off, and `pick`.
mod outliers {
    use fusebox::set::{BreakerSet, Outliers};
    use fusebox::{CircuitBreaker, Error, ManualClock, Reason, State, Transition};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const INTERVAL: Duration = Duration::from_secs(10);
    const BASE: Duration = Duration::from_secs(30);

    /// A set whose own breakers trip only on a failure rate of 90 % over
    /// 1,000 calls, so what opens a key here is detection.
    fn hosts(
        clock: &ManualClock,
        outliers: Outliers,
    ) -> (BreakerSet<String>, Arc<Mutex<Vec<Transition>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let set = BreakerSet::builder(
            CircuitBreaker::builder()
                .failure_rate(0.9)
                .count_window(1_000)
                .min_calls(1_000)
                .clock(clock.clone())
                .on_transition(move |t: &Transition| log.lock().unwrap().push(*t)),
        )
        .name("hosts")
        .outliers(outliers.interval(INTERVAL).base_ejection(BASE))
        .build()
        .unwrap();
        (set, seen)
    }

    fn calls(set: &BreakerSet<String>, key: &str, n: usize, fail_every: usize) {
        for i in 0..n {
            let fail = fail_every != 0 && i % fail_every == 0;
            let _ = set.call(key, || if fail { Err("boom") } else { Ok(()) });
        }
    }

    fn ejected_now(set: &BreakerSet<String>, keys: &[String]) -> usize {
        keys.iter().filter(|k| set.is_ejected(k.as_str())).count()
    }

    #[test]
    fn failures_in_a_row_eject_a_key_which_rejects_with_retry_after_then_probes_back() {
        let clock = ManualClock::new();
        let (set, log) = hosts(&clock, Outliers::default());
        calls(&set, "a", 20, 0);
        calls(&set, "b", 5, 1); // 5 failures in a row
        assert_eq!(set.detect_outliers(), vec!["b".to_string()]);
        assert_eq!(set.ejections(), 1);
        match set.call("b", || Ok::<(), &str>(())) {
            Err(Error::Rejected(r)) => assert_eq!(r.retry_after(), Some(BASE)),
            other => panic!("an ejected key rejects: {other:?}"),
        }
        assert!(
            set.call("a", || Ok::<(), &str>(())).is_ok(),
            "another key is untouched"
        );
        let t = *log.lock().unwrap().last().unwrap();
        assert_eq!((t.from, t.to), (State::Closed, State::Open));
        assert_eq!(t.reason, Reason::Outlier { ejected_for: BASE });
        assert_eq!(t.reason.as_str(), "outlier");
        // After the ejection a probe goes through and closes the breaker.
        clock.advance(BASE);
        assert!(!set.is_ejected("b"));
        assert!(set.call("b", || Ok::<(), &str>(())).is_ok());
        assert_eq!(set.get("b").state(), State::Closed);
        // Ejected again at once: the second ejection lasts twice as long.
        calls(&set, "b", 5, 1);
        assert_eq!(set.detect_outliers(), vec!["b".to_string()]);
        match set.call("b", || Ok::<(), &str>(())) {
            Err(Error::Rejected(r)) => assert_eq!(r.retry_after(), Some(2 * BASE)),
            other => panic!("ejected again: {other:?}"),
        }
    }

    #[test]
    fn ejections_are_worked_off_by_intervals_without_failure() {
        let clock = ManualClock::new();
        let (set, _) = hosts(&clock, Outliers::default());
        for round in 1..=2u32 {
            calls(&set, "b", 5, 1);
            assert_eq!(set.detect_outliers().len(), 1);
            clock.advance(BASE * round);
            assert!(set.call("b", || Ok::<(), &str>(())).is_ok(), "probe");
        }
        // Two ejections to work off: two quiet rounds.
        for _ in 0..2 {
            calls(&set, "b", 10, 0);
            clock.advance(INTERVAL);
            assert!(set.detect_outliers().is_empty());
        }
        calls(&set, "b", 5, 1);
        assert_eq!(set.detect_outliers().len(), 1);
        match set.call("b", || Ok::<(), &str>(())) {
            Err(Error::Rejected(r)) => assert_eq!(r.retry_after(), Some(BASE), "back to the base"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_success_rate_below_the_peers_is_ejected_and_the_peers_are_not() {
        let clock = ManualClock::new();
        let (set, _) = hosts(&clock, Outliers::default().consecutive_failures(None));
        for i in 0..10 {
            // Peers fail 1 call in 50 to 1 in 41 (some spread); h7 one in 3.
            let every = if i == 7 { 3 } else { 50 - i };
            calls(&set, &format!("h{i}"), 200, every);
        }
        assert_eq!(set.detect_outliers(), vec!["h7".to_string()]);
        // With fewer keys of enough volume than min_keys, rates are not compared.
        clock.advance(BASE * 2);
        let (few, _) = hosts(&clock, Outliers::default().consecutive_failures(None));
        for i in 0..4 {
            let every = if i == 2 { 3 } else { 50 };
            calls(&few, &format!("h{i}"), 200, every);
        }
        calls(&few, "quiet", 99, 0); // under request_volume: not counted
        assert!(few.detect_outliers().is_empty());
    }

    #[test]
    fn when_every_key_fails_no_more_than_the_ejection_cap_is_out_at_once() {
        for (keys, percent, cap) in [(10, 10, 1), (10, 30, 3), (25, 20, 5), (3, 10, 1)] {
            let clock = ManualClock::new();
            let (set, _) = hosts(&clock, Outliers::default().max_ejection_percent(percent));
            let names: Vec<String> = (0..keys).map(|i| format!("h{i}")).collect();
            let mut most = 0;
            for _round in 0..40 {
                for k in &names {
                    calls(&set, k, 10, 1);
                }
                set.detect_outliers();
                let out = ejected_now(&set, &names);
                assert!(out <= cap, "{out} of {keys} ejected, cap {cap}");
                most = most.max(out);
                clock.advance(INTERVAL);
            }
            assert_eq!(most, cap, "the cap is reached: every key fails");
            assert!(
                set.ejections() > cap as u64,
                "ejections rotate over the keys"
            );
        }
    }

    #[test]
    fn a_breaker_open_on_its_own_is_not_ejected_nor_counted_against_the_cap() {
        let clock = ManualClock::new();
        let (set, _) = hosts(&clock, Outliers::default());
        calls(&set, "a", 5, 1);
        set.get("a").force_open();
        calls(&set, "b", 5, 1);
        assert_eq!(set.detect_outliers(), vec!["b".to_string()]);
        assert!(!set.is_ejected("a"));
        assert_eq!(set.get("a").state(), State::ForcedOpen);
    }

    #[test]
    fn pick_takes_no_open_or_ejected_key_and_probes_a_recovering_one() {
        let clock = ManualClock::new();
        let (set, _) = hosts(&clock, Outliers::default());
        let names: Vec<String> = (0..5).map(|i| format!("h{i}")).collect();
        calls(&set, "h1", 5, 1);
        assert_eq!(set.detect_outliers(), vec!["h1".to_string()]);
        set.get("h3").force_open();
        let mut picked = [0usize; 5];
        for _ in 0..1_000 {
            let k = set.pick(&names).unwrap();
            picked[names.iter().position(|n| n == k).unwrap()] += 1;
        }
        assert_eq!((picked[1], picked[3]), (0, 0), "{picked:?}");
        for i in [0, 2, 4] {
            assert!(picked[i] > 200, "healthy keys share the picks: {picked:?}");
        }
        // The ejection over, h1 is half open: it is taken (for its probe)
        // as soon as it is drawn, and not while its probe is out.
        clock.advance(BASE);
        let first = (0..20).find(|_| set.pick(&names) == Some(&names[1]));
        assert!(first.is_some(), "a recovering key gets its probe");
        let probe = set.get("h1").try_acquire().unwrap();
        assert!((0..200).all(|_| set.pick(&names) != Some(&names[1])));
        probe.success();
        assert_eq!(set.get("h1").state(), State::Closed);
        // Nothing may be taken: None.
        let all_open: Vec<String> = vec!["h3".into()];
        assert_eq!(set.pick(&all_open), None);
        assert_eq!(set.pick(&[]), None);
    }

    #[test]
    fn bad_outlier_settings_fail_the_build_naming_the_setting() {
        let err = BreakerSet::<String>::builder(CircuitBreaker::builder())
            .outliers(Outliers::default().max_ejection_percent(0))
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "outliers.max_ejection_percent");
        assert!(err.to_string().contains("from 1 to 100"), "{err}");
    }

    #[test]
    fn without_outlier_detection_nothing_is_ejected() {
        let clock = ManualClock::new();
        let set = BreakerSet::<String>::builder(CircuitBreaker::builder().clock(clock.clone()))
            .build()
            .unwrap();
        calls(&set, "a", 50, 1);
        assert!(set.detect_outliers().is_empty());
        assert_eq!(set.ejections(), 0);
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn the_detection_future_runs_every_interval_and_ends_with_the_set() {
        let set =
            BreakerSet::<String>::builder(CircuitBreaker::builder().consecutive_failures(100))
                .outliers(Outliers::default().interval(INTERVAL))
                .build()
                .unwrap();
        let task = tokio::spawn(set.outlier_detection());
        calls(&set, "b", 5, 1);
        tokio::time::sleep(INTERVAL / 2).await;
        assert!(!set.is_ejected("b"), "not before the first interval");
        tokio::time::sleep(INTERVAL).await;
        assert!(set.is_ejected("b"));
        drop(set);
        tokio::time::sleep(INTERVAL * 2).await;
        assert!(task.is_finished(), "the future ends once the set is gone");
    }
}

/// A listener may call the set again (here: make a new key's breaker) from
/// a transition that reading a state tells it of: the set never holds its
/// lock while its breakers' listeners run.
#[test]
fn a_listener_may_call_the_set_from_a_transition_the_set_made_it_hear() {
    use std::sync::{Arc, OnceLock};
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let clock = ManualClock::new();
        let me: Arc<OnceLock<BreakerSet<String>>> = Arc::new(OnceLock::new());
        let inner = Arc::clone(&me);
        let made = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = Arc::clone(&made);
        let hosts = BreakerSet::builder(
            CircuitBreaker::builder()
                .consecutive_failures(1)
                .open_for(Duration::from_secs(1))
                .clock(clock.clone())
                .on_transition(move |_: &fusebox::Transition| {
                    // A new key each time: the set must take its write lock.
                    let n = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Some(set) = inner.get() {
                        let _ = set.get(&*format!("made-by-a-listener-{n}"));
                    }
                }),
        )
        .build()
        .unwrap();
        let _ = me.set(hosts.clone());
        let keys = ["a".to_string()];
        for read in 0..3 {
            fail(&hosts, "a", 1);
            clock.advance(Duration::from_secs(1)); // the next read of "a" goes half open
            match read {
                0 => drop(hosts.pick(&keys)),
                1 => drop(hosts.snapshot()),
                _ => drop(fusebox::policy::Inspect::figures(&hosts)),
            }
            let _ = hosts.call("a", || Ok::<_, ()>(())); // the probe closes it
        }
        done.send((hosts.len(), made.load(std::sync::atomic::Ordering::Relaxed)))
            .unwrap();
    });
    let (keys, heard) = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("the set deadlocked under a listener");
    assert!(heard >= 6, "{heard} transitions heard");
    assert!(keys >= 4, "{keys} keys");
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn call_async_goes_through_the_keys_own_breaker_and_is_send() {
    let clock = ManualClock::new();
    let hosts = set(&clock, 10);
    for _ in 0..2 {
        let _ = hosts
            .call_async("h1", || async { Err::<(), _>("reset") })
            .await;
    }
    assert_eq!(hosts.get("h1").state(), State::Open);
    let moved = hosts.clone();
    let answer =
        tokio::spawn(async move { moved.call_async("h2", || async { Ok::<_, &str>(2) }).await })
            .await
            .unwrap();
    assert_eq!(answer.unwrap(), 2);
    assert!(hosts
        .call_async("h1", || async { Ok::<_, &str>(1) })
        .await
        .unwrap_err()
        .is_rejected());
}

/// `pick` judges failure rates, not counts, and takes a disabled breaker
/// as a closed one.
#[test]
fn pick_prefers_the_lower_failure_rate_and_takes_a_disabled_key() {
    use fusebox::set::Outliers;
    let clock = ManualClock::new();
    let hosts: BreakerSet<String> = BreakerSet::builder(
        CircuitBreaker::builder()
            .failure_rate(0.99)
            .count_window(2_000)
            .min_calls(2_000)
            .clock(clock.clone()),
    )
    .outliers(
        Outliers::default()
            .consecutive_failures(None)
            .stdev_factor(None),
    )
    .build()
    .unwrap();
    // "busy": 10 failures in 1,000 calls; "new": 5 of 5.
    for i in 0..1_000 {
        let _ = hosts.call("busy", || if i % 100 == 0 { Err(()) } else { Ok(()) });
    }
    for _ in 0..5 {
        let _ = hosts.call("new", || Err::<(), _>(()));
    }
    let pair = ["busy".to_string(), "new".to_string()];
    for _ in 0..100 {
        assert_eq!(hosts.pick(&pair).map(String::as_str), Some("busy"));
    }
    let only = ["off".to_string()];
    hosts.get("off").disable();
    assert_eq!(
        hosts.pick(&only).map(String::as_str),
        Some("off"),
        "disabled admits everything"
    );
}

/// A listener told of an ejection may read the set's settings.
#[test]
fn a_listener_may_read_the_outlier_settings_during_detection() {
    use fusebox::set::Outliers;
    use std::sync::{Arc, OnceLock};
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let me: Arc<OnceLock<BreakerSet<String>>> = Arc::new(OnceLock::new());
        let inner = Arc::clone(&me);
        let hosts = BreakerSet::builder(
            CircuitBreaker::builder()
                .consecutive_failures(100)
                .on_transition(move |_: &fusebox::Transition| {
                    if let Some(set) = inner.get() {
                        assert!(set.outliers().is_some());
                        let _ = set.detect_outliers(); // a round is running: returns at once
                    }
                }),
        )
        .outliers(Outliers::default().consecutive_failures(Some(2)))
        .build()
        .unwrap();
        let _ = me.set(hosts.clone());
        fail(&hosts, "a", 2);
        done.send(hosts.detect_outliers()).unwrap();
    });
    let ejected = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("detection deadlocked");
    assert_eq!(ejected, vec!["a".to_string()]);
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_detection_interval_too_long_for_the_timer_ends_the_future_without_a_panic() {
    use fusebox::set::Outliers;
    let hosts = BreakerSet::<String>::builder(CircuitBreaker::builder())
        .outliers(Outliers::default().interval(Duration::MAX))
        .build()
        .unwrap();
    let task = tokio::spawn(hosts.outlier_detection());
    task.await.expect("no panic in the detection task");
    drop(hosts);
}
