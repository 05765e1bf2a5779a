//! The registry: configs from files (and their errors), first-use creation,
//! snapshots, manual control by name, tags, runtime reconfiguration.

use fusebox::registry::{
    BreakerConfig, Fusebox, FuseboxConfig, Observer, Policy, Reconfigured, Tags,
};
use fusebox::{Builder, CircuitBreaker, ManualClock, State};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn fail(b: &CircuitBreaker, n: usize) {
    for _ in 0..n {
        let _ = b.call(|| Err::<(), _>("down"));
    }
}

fn ok(b: &CircuitBreaker) {
    b.call(|| Ok::<_, ()>(())).unwrap();
}

#[test]
fn first_use_builds_from_named_config_or_defaults() {
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.consecutive_failures = Some(4);
    config.breakers.insert(
        "payments".into(),
        BreakerConfig {
            consecutive_failures: Some(2),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert!(fusebox.names().is_empty(), "nothing built before first use");

    let payments = fusebox.breaker("payments");
    let other = fusebox.breaker("other");
    fail(&payments, 2);
    fail(&other, 3);
    assert_eq!(payments.state(), State::Open, "own config: 2 failures");
    assert_eq!(other.state(), State::Closed, "defaults: 4 failures");
    fail(&other, 1);
    assert_eq!(other.state(), State::Open);
    assert_eq!(fusebox.names(), ["other", "payments"]);
    assert_eq!(fusebox.breaker("other").name(), Some("other"));
}

#[test]
fn snapshot_lists_every_breaker_with_state_counts_and_time() {
    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    let mut db = BreakerConfig {
        failure_rate: Some(0.5),
        count_window: Some(4),
        min_calls: Some(4),
        ..Default::default()
    };
    db.tags.insert("service".into(), "orders".into());
    config.breakers.insert("db".into(), db);
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();

    let db = fusebox.breaker("db");
    ok(&db);
    ok(&db);
    fail(&db, 1);
    fusebox.breaker("cache").force_open();
    clock.advance(Duration::from_secs(7));

    let all = fusebox.snapshot();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].name, "cache");
    assert_eq!(all[0].snapshot.state, State::ForcedOpen);
    assert_eq!(all[0].snapshot.since_transition, Duration::from_secs(7));
    assert_eq!(all[1].name, "db");
    assert_eq!(all[1].tags["service"], "orders");
    assert_eq!(all[1].snapshot.state, State::Closed);
    assert_eq!(all[1].snapshot.calls, 3);
    assert_eq!(all[1].snapshot.failures, 1);
    assert!((all[1].snapshot.failure_rate - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(all[1].snapshot.since_transition, Duration::from_secs(7));
}

#[test]
fn manual_control_by_name() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");

    fusebox.force_open("db").unwrap();
    assert_eq!(db.state(), State::ForcedOpen);
    assert!(db.call(|| Ok::<_, ()>(())).unwrap_err().is_rejected());

    fusebox.disable("db").unwrap();
    assert_eq!(db.state(), State::Disabled);
    fail(&db, 20);
    assert_eq!(db.state(), State::Disabled, "disabled never trips");

    fusebox.reset("db").unwrap();
    assert_eq!(db.state(), State::Closed);

    // Unknown names are errors and create nothing.
    assert_eq!(fusebox.force_open("bd").unwrap_err().name(), "bd");
    assert!(fusebox.disable("bd").is_err());
    assert!(fusebox.reset("bd").is_err());
    assert_eq!(fusebox.names(), ["db"]);
}

#[test]
fn tags_group_breakers() {
    let mut config = FuseboxConfig::default();
    config
        .defaults
        .breaker
        .tags
        .insert("team".into(), "core".into());
    for (name, service) in [
        ("pay-eu", "payments"),
        ("pay-us", "payments"),
        ("geo", "maps"),
    ] {
        let mut c = BreakerConfig::default();
        c.tags.insert("service".into(), service.into());
        config.breakers.insert(name.into(), c);
    }
    let fusebox = Fusebox::from_config(config).unwrap();
    for name in ["pay-us", "geo", "pay-eu", "plain"] {
        fusebox.breaker(name);
    }
    assert_eq!(fusebox.tagged("service", "payments"), ["pay-eu", "pay-us"]);
    assert_eq!(fusebox.tagged("service", "maps"), ["geo"]);
    assert_eq!(
        fusebox.tagged("team", "core"),
        ["geo", "pay-eu", "pay-us", "plain"],
        "defaults' tags are inherited"
    );
    assert_eq!(fusebox.tags("pay-eu")["team"], "core");
}

#[test]
fn reconfigure_closed_breaker_applies_now_and_loses_window() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    fail(&db, 3);
    assert_eq!(db.snapshot().consecutive_failures, 3);

    let r = fusebox
        .reconfigure(
            "db",
            BreakerConfig {
                consecutive_failures: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r, Reconfigured::Applied);
    let db2 = fusebox.breaker("db");
    assert_eq!(db2.snapshot().consecutive_failures, 0, "documented loss");
    fail(&db2, 2);
    assert_eq!(db2.state(), State::Open, "new threshold in force");
    assert_eq!(
        db.state(),
        State::Closed,
        "old handle keeps the old breaker"
    );
    assert_eq!(fusebox.config("db").consecutive_failures, Some(2));

    // Same effective config again: nothing changes.
    let same = BreakerConfig {
        consecutive_failures: Some(2),
        ..Default::default()
    };
    assert_eq!(
        fusebox.reconfigure("db", same).unwrap(),
        Reconfigured::Unchanged
    );
    assert_eq!(fusebox.breaker("db").state(), State::Open);
}

#[test]
fn reconfigure_open_breaker_waits_until_it_closes() {
    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.consecutive_failures = Some(1);
    config.defaults.breaker.open_for = Some(Duration::from_secs(10));
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    fail(&db, 1);
    assert_eq!(db.state(), State::Open);

    let new = BreakerConfig {
        consecutive_failures: Some(3),
        open_for: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    assert_eq!(
        fusebox.reconfigure("db", new).unwrap(),
        Reconfigured::Deferred
    );
    // Still the same (open) breaker: the dependency stays protected, and the
    // open period in progress keeps its 10 s.
    let current = fusebox.breaker("db");
    assert_eq!(current.state(), State::Open);
    assert_eq!(fusebox.config("db").consecutive_failures, Some(3));
    clock.advance(Duration::from_secs(10));
    assert_eq!(current.state(), State::HalfOpen);
    ok(&current); // probe succeeds: closes, and the new config takes over

    let next = fusebox.breaker("db");
    assert_eq!(next.state(), State::Closed);
    fail(&next, 2);
    assert_eq!(next.state(), State::Closed, "3 failures needed now");
    fail(&next, 1);
    assert_eq!(next.state(), State::Open);
    let rejected = next.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after(), Some(Duration::from_secs(60)));
}

#[test]
fn reconfigure_keeps_forced_open_and_disabled() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    fusebox.breaker("a").force_open();
    fusebox.breaker("b");
    fusebox.disable("b").unwrap();
    let new = BreakerConfig {
        half_open_probes: Some(2),
        ..Default::default()
    };
    assert_eq!(
        fusebox.reconfigure("a", new.clone()).unwrap(),
        Reconfigured::Applied
    );
    assert_eq!(
        fusebox.reconfigure("b", new).unwrap(),
        Reconfigured::Applied
    );
    assert_eq!(fusebox.breaker("a").state(), State::ForcedOpen);
    assert_eq!(fusebox.breaker("b").state(), State::Disabled);
}

#[test]
fn reconfigure_rejects_bad_config_and_keeps_running_breaker() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    let err = fusebox
        .reconfigure(
            "db",
            BreakerConfig {
                failure_rate: Some(0.0),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.key(), "breakers.db.failure_rate");
    db.force_open();
    assert_eq!(
        fusebox.breaker("db").state(),
        State::ForcedOpen,
        "same breaker"
    );
    assert_eq!(fusebox.config("db"), BreakerConfig::default());
}

#[test]
fn reconfigure_before_first_use_is_used_at_first_use() {
    let fusebox = Fusebox::new();
    let c = BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    };
    assert_eq!(fusebox.reconfigure("db", c).unwrap(), Reconfigured::Applied);
    let db = fusebox.breaker("db");
    fail(&db, 1);
    assert_eq!(db.state(), State::Open);
}

#[derive(Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Observer for Recorder {
    fn instrument(&self, name: &str, tags: &Tags, builder: Builder) -> Builder {
        self.0
            .lock()
            .unwrap()
            .push(format!("instrument {name} {tags:?}"));
        builder
    }
    fn breaker_added(&self, name: &str, _tags: &Tags, breaker: &CircuitBreaker) {
        self.0
            .lock()
            .unwrap()
            .push(format!("added {name} {}", breaker.state()));
    }
}

#[test]
fn observers_see_every_build() {
    let rec = Recorder::default();
    let log = rec.0.clone();
    let fusebox = Fusebox::builder().observer(rec).build().unwrap();
    fusebox.breaker("db");
    fusebox.breaker("db");
    let c = BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    };
    fusebox.reconfigure("db", c).unwrap();
    assert_eq!(
        log.lock().unwrap().as_slice(),
        [
            "instrument db {}",
            "added db closed",
            "instrument db {}",
            "added db closed"
        ]
    );
}

#[test]
fn programmatic_config_errors_name_the_key() {
    let cases: Vec<(BreakerConfig, &str)> = vec![
        (
            BreakerConfig {
                policy: Some(Policy::ConsecutiveFailures),
                failure_rate: Some(0.5),
                ..Default::default()
            },
            "failure_rate",
        ),
        (
            BreakerConfig {
                policy: Some(Policy::FailureRate),
                consecutive_failures: Some(3),
                ..Default::default()
            },
            "consecutive_failures",
        ),
        (
            BreakerConfig {
                slow_call_duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
            "slow_call_rate",
        ),
        (
            BreakerConfig {
                open_for: Some(Duration::from_secs(1)),
                open_backoff: Some(fusebox::registry::Backoff {
                    initial: Duration::from_secs(1),
                    factor: 2.0,
                    max: Duration::from_secs(8),
                }),
                ..Default::default()
            },
            "open_backoff",
        ),
        (
            BreakerConfig {
                open_for: Some(Duration::ZERO),
                ..Default::default()
            },
            "open_for",
        ),
        (
            BreakerConfig {
                failure_rate: Some(0.5),
                count_window: Some(10),
                time_window: Some(Duration::from_secs(10)),
                ..Default::default()
            },
            "time_window",
        ),
    ];
    for (config, key) in cases {
        let mut all = FuseboxConfig::default();
        all.breakers.insert("x".into(), config);
        let err = Fusebox::from_config(all).unwrap_err();
        assert_eq!(err.key(), format!("breakers.x.{key}"), "{err}");
        assert_eq!(err.line(), None);
    }
}

// --- files -------------------------------------------------------------------

#[cfg(feature = "config")]
mod files {
    use super::*;

    const GOOD_TOML: &str = r#"
[defaults.breaker]
open_for = "30s"
half_open_probes = 2

[breakers.payments]
policy = "failure_rate"
failure_rate = 0.5
time_window = "1m"
buckets = 6
min_calls = 20
slow_call_duration = "2s"
slow_call_rate = 0.8
tags = { service = "payments" }

[breakers.search]
consecutive_failures = 3
open_backoff = { initial = "500ms", factor = 2, max = "5m" }

[bulkheads.payments]
max_concurrent = 16
max_wait = "10ms"
"#;

    #[test]
    fn toml_config_loads_and_merges() {
        let config = FuseboxConfig::from_toml(GOOD_TOML).unwrap();
        let pay = config.breaker_config("payments");
        assert_eq!(pay.policy, Some(Policy::FailureRate));
        assert_eq!(pay.time_window, Some(Duration::from_secs(60)));
        assert_eq!(pay.slow_call_duration, Some(Duration::from_secs(2)));
        assert_eq!(pay.open_for, Some(Duration::from_secs(30)), "inherited");
        assert_eq!(pay.half_open_probes, Some(2), "inherited");
        assert_eq!(pay.tags["service"], "payments");
        let search = config.breaker_config("search");
        assert_eq!(search.open_for, None, "open_backoff replaces open_for");
        let backoff = search.open_backoff.unwrap();
        assert_eq!(backoff.initial, Duration::from_millis(500));
        assert_eq!(backoff.factor, 2.0);
        assert_eq!(backoff.max, Duration::from_secs(300));
        assert_eq!(config.bulkheads["payments"].max_concurrent, Some(16));

        let fusebox = Fusebox::builder()
            .config(config)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let search = fusebox.breaker("search");
        fail(&search, 3);
        assert_eq!(
            search.try_acquire().unwrap_err().retry_after(),
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn yaml_config_loads_the_same() {
        let yaml = r#"
defaults:
  breaker:
    open_for: 30s
    half_open_probes: 2
breakers:
  payments:
    policy: failure_rate
    failure_rate: 0.5
    time_window: 1m
    buckets: 6
    min_calls: 20
    slow_call_duration: 2s
    slow_call_rate: 0.8
    tags:
      service: payments
  search:
    consecutive_failures: 3
    open_backoff: { initial: 500ms, factor: 2, max: 5m }
bulkheads:
  payments:
    max_concurrent: 16
    max_wait: 10ms
"#;
        assert_eq!(
            FuseboxConfig::from_yaml(yaml).unwrap(),
            FuseboxConfig::from_toml(GOOD_TOML).unwrap()
        );
    }

    /// (source, key, line, words the message must contain)
    fn toml_cases() -> Vec<(&'static str, &'static str, usize, &'static str)> {
        vec![
            // A typo in a key.
            (
                "[breakers.db]\nconsecutive_failures = 3\nopen_fro = \"10s\"\n",
                "breakers.db.open_fro",
                3,
                "unknown field `open_fro`",
            ),
            // A typo in a table name.
            (
                "[breaker.db]\nopen_for = \"10s\"\n",
                "breaker",
                1,
                "unknown field `breaker`",
            ),
            // A negative duration.
            (
                "[breakers.db]\n\nopen_for = \"-10s\"\n",
                "breakers.db.open_for",
                3,
                "negative",
            ),
            // Not a duration.
            (
                "[defaults.breaker]\nopen_for = \"ten seconds\"\n",
                "defaults.breaker.open_for",
                2,
                "invalid duration",
            ),
            // A number where a duration string is expected.
            (
                "[breakers.db]\ntime_window = 30\n",
                "breakers.db.time_window",
                2,
                "duration string",
            ),
            // An unknown policy.
            (
                "[breakers.db]\npolicy = \"rolling_average\"\n",
                "breakers.db.policy",
                2,
                "unknown variant `rolling_average`",
            ),
            // A rate out of range.
            (
                "[breakers.db]\nfailure_rate = 1.5\n",
                "breakers.db.failure_rate",
                2,
                "rate",
            ),
            // A negative count.
            (
                "[breakers.db]\nconsecutive_failures = -3\n",
                "breakers.db.consecutive_failures",
                2,
                "-3",
            ),
            // Contradicting keys, found after parsing.
            (
                "[breakers.db]\npolicy = \"consecutive_failures\"\nconsecutive_failures = 3\nfailure_rate = 0.5\n",
                "breakers.db.failure_rate",
                4,
                "policy",
            ),
            // A core rule, found after parsing.
            (
                "[breakers.db]\nconsecutive_failures = 3\ncount_window = 10\n",
                "breakers.db.count_window",
                3,
                "count_window",
            ),
            // A syntax error.
            (
                "[breakers.db]\nopen_for = \"10s\nx = 1\n",
                "",
                2,
                "",
            ),
        ]
    }

    #[test]
    fn toml_errors_name_key_and_line() {
        for (src, key, line, words) in toml_cases() {
            let err = FuseboxConfig::from_toml(src).unwrap_err();
            assert_eq!(err.key(), key, "{src:?} -> {err}");
            assert_eq!(err.line(), Some(line), "{src:?} -> {err}");
            assert!(err.message().contains(words), "{src:?} -> {err}");
            let shown = err.to_string();
            assert!(shown.contains(&format!("line {line}")), "{shown}");
            assert!(shown.contains(key), "{shown}");
        }
    }

    #[test]
    fn yaml_errors_name_key_and_line() {
        let cases = [
            (
                "breakers:\n  db:\n    open_fro: 10s\n",
                "breakers.db.open_fro",
                3,
                "unknown field `open_fro`",
            ),
            (
                "breakers:\n  db:\n    open_for: -10s\n",
                "breakers.db.open_for",
                3,
                "negative",
            ),
            (
                "breakers:\n  db:\n    policy: rolling_average\n",
                "breakers.db.policy",
                3,
                "unknown variant `rolling_average`",
            ),
            (
                "defaults:\n  breaker:\n    slow_call_rate: 0.5\n",
                "defaults.breaker.slow_call_duration",
                2, // absent: the line of its table
                "missing",
            ),
        ];
        for (src, key, line, words) in cases {
            let err = FuseboxConfig::from_yaml(src).unwrap_err();
            assert_eq!(err.key(), key, "{src:?} -> {err}");
            assert_eq!(err.line(), Some(line), "{src:?} -> {err}");
            assert!(err.message().contains(words), "{src:?} -> {err}");
            assert!(
                !err.message().contains(" at line ") && !err.message().starts_with("breakers"),
                "line and key are not repeated in the message: {err}"
            );
        }
    }
}

#[test]
fn bulkheads_by_name_from_config() {
    let mut config = FuseboxConfig::default();
    config.defaults.bulkhead.max_concurrent = Some(3);
    let mut reviews = fusebox::registry::BulkheadConfig {
        max_concurrent: Some(1),
        max_wait: Some(Duration::from_millis(5)),
        ..Default::default()
    };
    reviews.tags.insert("service".into(), "reviews".into());
    config.bulkheads.insert("reviews".into(), reviews);
    let fusebox = Fusebox::from_config(config).unwrap();

    let r = fusebox.bulkhead("reviews");
    assert_eq!(r.limit(), 1);
    assert_eq!(r.max_wait(), Duration::from_millis(5));
    assert_eq!(fusebox.bulkhead("other").limit(), 3, "defaults");

    let slot = fusebox.bulkhead("reviews").try_acquire().unwrap();
    assert!(r.try_acquire().is_err(), "same bulkhead: full");
    let all = fusebox.bulkhead_snapshot();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].name, "reviews");
    assert_eq!(all[1].tags["service"], "reviews");
    assert_eq!(
        (
            all[1].snapshot.in_use,
            all[1].snapshot.limit,
            all[1].snapshot.rejected
        ),
        (1, 1, 1)
    );
    drop(slot);
    assert_eq!(fusebox.bulkhead_snapshot()[1].snapshot.in_use, 0);
    assert!(fusebox.names().is_empty(), "bulkheads are not breakers");
}

#[cfg(feature = "config")]
#[test]
fn bulkhead_config_errors_name_the_key() {
    let err = FuseboxConfig::from_toml("[bulkheads.db]\nmax_concurrent = -1\n").unwrap_err();
    assert_eq!(err.key(), "bulkheads.db.max_concurrent");
    assert_eq!(err.line(), Some(2));
    let err = FuseboxConfig::from_toml("[bulkheads.db]\nmax_wiat = \"1s\"\n").unwrap_err();
    assert_eq!(err.key(), "bulkheads.db.max_wiat");
    let ok = FuseboxConfig::from_toml("[bulkheads.db]\nmax_concurrent = 0\n").unwrap();
    assert_eq!(
        ok.bulkheads["db"].max_concurrent,
        Some(0),
        "0 sheds everything"
    );
}

#[test]
fn slow_calls_alone_and_policy_defaults() {
    let clock = ManualClock::new();
    // Only a slow-call rule: failures alone never trip it.
    let slow_only = BreakerConfig {
        slow_call_duration: Some(Duration::from_millis(100)),
        slow_call_rate: Some(0.5),
        count_window: Some(4),
        min_calls: Some(4),
        ..Default::default()
    };
    let mut config = FuseboxConfig::default();
    config.breakers.insert("slow".into(), slow_only);
    config.breakers.insert(
        "rate".into(),
        BreakerConfig {
            policy: Some(Policy::FailureRate),
            count_window: Some(4),
            min_calls: Some(4),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    let slow = fusebox.breaker("slow");
    fail(&slow, 4);
    assert_eq!(slow.state(), State::Closed, "fast failures are not slow");
    for _ in 0..2 {
        let p = slow.try_acquire().unwrap();
        clock.advance(Duration::from_millis(150));
        p.success();
    }
    assert_eq!(slow.state(), State::Open, "slow calls trip it");

    // policy = failure_rate without a rate: 0.5.
    let rate = fusebox.breaker("rate");
    ok(&rate);
    ok(&rate);
    fail(&rate, 1);
    assert_eq!(rate.state(), State::Closed);
    fail(&rate, 1);
    assert_eq!(rate.state(), State::Open, "2 of 4 = 0.5");
}
