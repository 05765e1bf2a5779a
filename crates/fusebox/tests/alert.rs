//! Alert conditions on a ManualClock: open too long, flapping, service down.

use fusebox::alert::{Alert, AlertConfig, AlertEvent, AlertStatus, Alerts};
use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
use fusebox::{CircuitBreaker, ManualClock, State};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MIN: Duration = Duration::from_secs(60);

fn trip(b: &CircuitBreaker) {
    while b.state() == State::Closed {
        let _ = b.call(|| Err::<(), _>("down"));
    }
}

fn breaker(alerts: &Alerts, clock: &ManualClock, name: &str, open_for: Duration) -> CircuitBreaker {
    CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(open_for)
        .clock(clock.clone())
        .listener(alerts.listener(name, None))
        .build()
        .unwrap()
}

fn kinds(events: &[AlertEvent]) -> Vec<(String, AlertStatus)> {
    events
        .iter()
        .map(|e| {
            let what = match &e.alert {
                Alert::OpenTooLong { name, .. } => format!("open_too_long {name}"),
                Alert::Flapping { name, .. } => format!("flapping {name}"),
                Alert::ServiceDown { service, .. } => format!("service_down {service}"),
                other => format!("{other:?}"),
            };
            (what, e.status)
        })
        .collect()
}

#[test]
fn defaults_are_seed_004s() {
    let c = AlertConfig::default();
    assert_eq!(c.open_longer_than, 5 * MIN);
    assert_eq!(c.flapping_transitions, 5);
    assert_eq!(c.flapping_window, 10 * MIN);
    assert_eq!(c.service_tag, "service");
}

#[test]
fn open_too_long_fires_at_the_threshold_and_resolves_on_close() {
    let clock = ManualClock::new();
    let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    // Open period 1 minute: the breaker cycles open -> half-open -> open
    // through failing probes, which is still one outage.
    let db = breaker(&alerts, &clock, "db", MIN);
    clock.advance(Duration::from_secs(30));
    trip(&db); // open at 0:30
    for _ in 0..4 {
        clock.advance(MIN);
        assert_eq!(db.state(), State::HalfOpen);
        let _ = db.call(|| Err::<(), _>("still down")); // probe fails: open again
        assert!(alerts.check().is_empty(), "at {:?}", clock_now(&clock));
    }
    // 4:30 open so far; fires at exactly 5:00 of openness (5:30 on the clock).
    clock.advance(MIN - Duration::from_millis(1));
    assert!(alerts.check().is_empty());
    clock.advance(Duration::from_millis(1));
    let events = alerts.check();
    assert_eq!(
        kinds(&events),
        [("open_too_long db".into(), AlertStatus::Firing)]
    );
    assert_eq!(events[0].at, Duration::from_secs(330));
    match &events[0].alert {
        Alert::OpenTooLong { open_for, .. } => assert_eq!(*open_for, 5 * MIN),
        other => panic!("{other:?}"),
    }
    assert_eq!(alerts.active().len(), 1);
    // Firing once, not on every check.
    clock.advance(MIN);
    assert!(alerts.check().is_empty());

    // Recovery: half-open, probe succeeds, closed -> resolved.
    assert_eq!(db.state(), State::HalfOpen);
    db.call(|| Ok::<_, ()>(())).unwrap();
    let events = alerts.check();
    assert_eq!(
        kinds(&events),
        [("open_too_long db".into(), AlertStatus::Resolved)]
    );
    assert!(alerts.active().is_empty());
}

fn clock_now(c: &ManualClock) -> Duration {
    use fusebox::Clock;
    c.now()
}

#[test]
fn open_shorter_than_the_threshold_never_fires() {
    let clock = ManualClock::new();
    let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    let db = breaker(&alerts, &clock, "db", MIN);
    trip(&db);
    clock.advance(4 * MIN);
    db.reset();
    clock.advance(10 * MIN);
    assert!(alerts.check().is_empty());
    // Forced open is an operator's choice, not an outage.
    db.force_open();
    clock.advance(60 * MIN);
    assert!(alerts.check().is_empty());
}

#[test]
fn flapping_needs_more_than_n_edges_within_the_window() {
    let clock = ManualClock::new();
    let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    let db = breaker(&alerts, &clock, "db", Duration::from_secs(1));
    let cycle = || {
        trip(&db); // closed -> open: 1 edge
        clock.advance(Duration::from_secs(1));
        db.call(|| Ok::<_, ()>(())).unwrap(); // half-open -> closed: 1 edge
        clock.advance(MIN);
    };
    // Two full cycles and a trip: 5 edges, not more than 5.
    cycle();
    cycle();
    trip(&db);
    assert!(alerts.check().is_empty(), "5 edges is not flapping");
    clock.advance(Duration::from_secs(1));
    db.call(|| Ok::<_, ()>(())).unwrap(); // 6th edge
    let events = alerts.check();
    assert_eq!(
        kinds(&events),
        [("flapping db".into(), AlertStatus::Firing)]
    );
    match &events[0].alert {
        Alert::Flapping { transitions, .. } => assert_eq!(*transitions, 6),
        other => panic!("{other:?}"),
    }
    // The first edge (at 0) leaves the 10-minute window at 10:00; the count
    // drops to 5 and the alert resolves.
    clock.set(10 * MIN - Duration::from_millis(1));
    assert!(alerts.check().is_empty());
    clock.set(10 * MIN);
    let events = alerts.check();
    assert_eq!(
        kinds(&events),
        [("flapping db".into(), AlertStatus::Resolved)]
    );
}

#[test]
fn probing_during_one_outage_is_not_flapping() {
    let clock = ManualClock::new();
    let config = AlertConfig {
        open_longer_than: 60 * MIN,
        ..Default::default()
    };
    let alerts = Alerts::new(config, clock.clone());
    let db = breaker(&alerts, &clock, "db", Duration::from_secs(1));
    trip(&db);
    for _ in 0..20 {
        clock.advance(Duration::from_secs(1));
        let _ = db.call(|| Err::<(), _>("down")); // open -> half-open -> open
    }
    assert!(alerts.check().is_empty());
}

#[test]
fn flapping_is_seen_at_the_transition_without_a_check() {
    let clock = ManualClock::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let config = AlertConfig {
        flapping_transitions: 2,
        ..Default::default()
    };
    let alerts =
        Alerts::new(config, clock.clone()).on_event(move |e| sink.lock().unwrap().push(e.clone()));
    let db = breaker(&alerts, &clock, "db", Duration::from_secs(1));
    trip(&db);
    db.reset();
    assert!(seen.lock().unwrap().is_empty());
    trip(&db); // third edge
    assert_eq!(
        kinds(&seen.lock().unwrap()),
        [("flapping db".into(), AlertStatus::Firing)]
    );
    // check() still reports it once.
    assert_eq!(alerts.check().len(), 1);
    assert!(alerts.check().is_empty());
}

#[test]
fn service_down_when_every_tagged_breaker_is_open() {
    let clock = ManualClock::new();
    let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.settings.consecutive_failures = Some(1);
    config.defaults.breaker.settings.open_for = Some(MIN);
    for (name, service) in [
        ("pay-eu", "payments"),
        ("pay-us", "payments"),
        ("geo", "maps"),
    ] {
        let mut c = BreakerEntry::default();
        c.tags.insert("service".into(), service.into());
        config.breakers.insert(name.into(), c);
    }
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .observer(alerts.clone())
        .build()
        .unwrap();
    let (eu, us, geo) = (
        fusebox.breaker("pay-eu"),
        fusebox.breaker("pay-us"),
        fusebox.breaker("geo"),
    );
    let untagged = fusebox.breaker("misc");

    trip(&eu);
    trip(&untagged);
    assert!(
        alerts.check().is_empty(),
        "one of two payments breakers open"
    );
    trip(&us);
    let events = alerts.check();
    assert_eq!(
        kinds(&events),
        [("service_down payments".into(), AlertStatus::Firing)]
    );
    match &events[0].alert {
        Alert::ServiceDown { breakers, .. } => assert_eq!(breakers, &["pay-eu", "pay-us"]),
        other => panic!("{other:?}"),
    }
    // Half-open still counts as down.
    clock.advance(MIN);
    assert_eq!(eu.state(), State::HalfOpen);
    assert!(alerts.check().is_empty());
    // One recovers: resolved.
    eu.call(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(
        kinds(&alerts.check()),
        [("service_down payments".into(), AlertStatus::Resolved)]
    );
    // A forced-open breaker does not make its service "down".
    geo.force_open();
    assert!(alerts.check().is_empty());
}

#[test]
fn event_display_is_readable() {
    let e = AlertEvent {
        alert: Alert::ServiceDown {
            service: "payments".into(),
            breakers: vec!["pay-eu".into(), "pay-us".into()],
        },
        status: AlertStatus::Firing,
        at: Duration::ZERO,
    };
    assert_eq!(
        e.to_string(),
        "firing: every circuit breaker of service payments is open (pay-eu, pay-us)"
    );
}

/// A million transitions and nobody calls `check`: the alerts keep a bounded
/// queue (the newest events, the rest counted as dropped) and a bounded
/// history per breaker. Before the bound, every event was queued (500,000
/// here) and every transition time within the flapping window kept.
#[test]
fn memory_stays_bounded_when_check_is_never_called() {
    let clock = ManualClock::new();
    let raised = Arc::new(Mutex::new(0u64));
    let count = raised.clone();
    let config = AlertConfig {
        flapping_transitions: 1,
        flapping_window: Duration::from_millis(1),
        ..Default::default()
    };
    let alerts = Alerts::new(config, clock.clone()).on_event(move |_| *count.lock().unwrap() += 1);
    let db = breaker(&alerts, &clock, "db", MIN);
    let mut transitions = 0u64;
    let mut most = 0;
    while transitions < 1_000_000 {
        // closed -> open, open -> closed at one instant: flapping fires; a
        // millisecond later both edges have left the window, and the next
        // trip resolves it.
        trip(&db);
        db.reset();
        clock.advance(Duration::from_millis(1));
        transitions += 2;
        most = most.max(alerts.footprint());
    }
    let raised = *raised.lock().unwrap();
    assert!(raised >= 999_000, "every cycle fires or resolves: {raised}");
    assert_eq!(alerts.pending(), Alerts::MAX_PENDING);
    assert_eq!(alerts.dropped(), raised - Alerts::MAX_PENDING as u64);
    // One breaker: at most 2 kept edges, 1 entry, 1 active alert.
    assert!(
        most <= Alerts::MAX_PENDING + 4,
        "the alerts held {most} items"
    );
    // What check returns is the newest events, oldest first, ending with
    // the one check itself raised (at 500 s the last edges have left the
    // window); the queue is empty after.
    let events = alerts.check();
    assert_eq!(events.len(), Alerts::MAX_PENDING);
    assert!(events.windows(2).all(|p| p[0].at <= p[1].at));
    assert_eq!(
        kinds(&events[events.len() - 2..]),
        [
            ("flapping db".into(), AlertStatus::Firing),
            ("flapping db".into(), AlertStatus::Resolved)
        ]
    );
    assert_eq!(events[events.len() - 2].at, Duration::from_millis(499_999));
    assert_eq!(events[events.len() - 1].at, Duration::from_secs(500));
    assert_eq!(alerts.pending(), 0);
}

/// Transitions arriving faster than the flapping window forgets them: only
/// `flapping_transitions + 1` are kept, and the alert still fires exactly
/// when the count first exceeds the threshold, with that count.
#[test]
fn flapping_history_is_capped_at_the_threshold_plus_one() {
    let clock = ManualClock::new();
    let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    let db = breaker(&alerts, &clock, "db", MIN);
    for _ in 0..2 {
        trip(&db);
        db.reset();
    }
    trip(&db); // 5 edges
    assert!(alerts.check().is_empty());
    db.reset(); // 6th
    let events = alerts.check();
    match &events[..] {
        [AlertEvent {
            alert: Alert::Flapping { transitions, .. },
            status: AlertStatus::Firing,
            ..
        }] => assert_eq!(*transitions, 6),
        other => panic!("{other:?}"),
    }
    for _ in 0..100_000 {
        trip(&db);
        db.reset();
    }
    assert!(alerts.check().is_empty(), "still the same flapping");
    // 6 kept edges + 1 breaker + 1 active alert.
    assert_eq!(alerts.footprint(), 8);
    match &alerts.active()[..] {
        [Alert::Flapping { transitions, .. }] => assert_eq!(*transitions, 6),
        other => panic!("{other:?}"),
    }
}
