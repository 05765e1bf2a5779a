//! Breaker sets: one breaker per key, bounded memory, eviction that never
//! forgets a sick key, live reconfigure; all on `ManualClock`.

use fusebox::set::BreakerSet;
use fusebox::{BreakerConfig, CircuitBreaker, ManualClock, State};
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
