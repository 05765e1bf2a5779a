//! The registry: configs from files (and their errors), configured names
//! built at once, snapshots, manual control by name, tags, live
//! reconfiguration and reload, dependencies and their pipelines.

use fusebox::registry::{
    BreakerEntry, DependencyConfig, Fusebox, FuseboxConfig, Observer, Reconfigured, RetryConfig,
    Tags,
};
use fusebox::{Backoff, BreakerConfig, Builder, CircuitBreaker, ManualClock, Pipeline, State};
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

fn entry(settings: BreakerConfig) -> BreakerEntry {
    BreakerEntry::from(settings)
}

#[test]
fn configured_names_are_built_at_once_others_on_first_use() {
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.settings.consecutive_failures = Some(4);
    config.breakers.insert(
        "payments".into(),
        entry(BreakerConfig {
            consecutive_failures: Some(2),
            ..Default::default()
        }),
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(
        fusebox.names(),
        ["payments"],
        "configured: built before any call"
    );
    assert_eq!(fusebox.snapshot()[0].snapshot.state, State::Closed);
    assert!(fusebox.force_open("payments").is_ok());
    fusebox.reset("payments").unwrap();

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
    let mut db = entry(BreakerConfig {
        failure_rate: Some(0.5),
        count_window: Some(4),
        min_calls: Some(4),
        ..Default::default()
    });
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
        let mut c = BreakerEntry::default();
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
fn named_tables_inherit_every_field_they_do_not_set() {
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.settings = BreakerConfig {
        failure_rate: Some(0.5),
        time_window: Some(Duration::from_secs(60)),
        min_calls: Some(20),
        ..Default::default()
    };
    config.breakers.insert(
        "db".into(),
        entry(BreakerConfig {
            failure_rate: Some(0.3),
            ..Default::default()
        }),
    );
    let fusebox = Fusebox::from_config(config).unwrap();
    let db = fusebox.breaker("db").config();
    assert_eq!(db.failure_rate, Some(0.3));
    assert_eq!(db.time_window, Some(Duration::from_secs(60)));
    assert_eq!(db.count_window, None);
    assert_eq!(db.min_calls, Some(20));
}

#[test]
fn reconfigure_changes_the_breaker_every_holder_has() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    let pipeline = Pipeline::builder().breaker(db.clone()).build();
    fail(&db, 3);
    assert_eq!(db.snapshot().consecutive_failures, 3);

    let r = fusebox
        .reconfigure(
            "db",
            BreakerConfig {
                consecutive_failures: Some(4),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r, Reconfigured::Applied);
    assert!(db.same_as(&fusebox.breaker("db")));
    assert_eq!(db.snapshot().consecutive_failures, 3, "counts kept");
    let _ = pipeline.call(|| Err::<(), _>(std::io::Error::other("down")));
    assert_eq!(
        db.state(),
        State::Open,
        "the pipeline's breaker: the 4th failure trips"
    );
    assert_eq!(fusebox.config("db").settings.consecutive_failures, Some(4));

    // Same effective settings again: nothing changes.
    let same = BreakerConfig {
        consecutive_failures: Some(4),
        ..Default::default()
    };
    assert_eq!(
        fusebox.reconfigure("db", same).unwrap(),
        Reconfigured::Unchanged
    );
    assert_eq!(db.state(), State::Open);
}

#[test]
fn reconfigure_an_open_breaker_finishes_its_period() {
    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    config.defaults.breaker.settings.consecutive_failures = Some(1);
    config.defaults.breaker.settings.open_for = Some(Duration::from_secs(10));
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    fail(&db, 1);
    let new = BreakerConfig {
        consecutive_failures: Some(3),
        open_for: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    assert_eq!(
        fusebox.reconfigure("db", new).unwrap(),
        Reconfigured::Applied
    );
    assert_eq!(db.state(), State::Open, "the dependency stays protected");
    clock.advance(Duration::from_secs(10));
    assert_eq!(db.state(), State::HalfOpen, "the 10 s period in progress");
    ok(&db);
    fail(&db, 2);
    assert_eq!(db.state(), State::Closed, "3 failures needed now");
    fail(&db, 1);
    let rejected = db.try_acquire().unwrap_err();
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
fn reconfigure_rejects_bad_config_and_changes_nothing() {
    let fusebox = Fusebox::builder()
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    let before = db.config();
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
    assert_eq!(db.config(), before);
    assert_eq!(fusebox.config("db"), BreakerEntry::default());
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
fn observers_see_each_breaker_once() {
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
        ["instrument db {}", "added db closed"],
        "changed in place: not built again"
    );
}

#[test]
fn reload_changes_adds_and_reports_removed_names() {
    let clock = ManualClock::new();
    let mut first = FuseboxConfig::default();
    first.breakers.insert(
        "db".into(),
        entry(BreakerConfig {
            consecutive_failures: Some(5),
            ..Default::default()
        }),
    );
    first
        .breakers
        .insert("legacy".into(), BreakerEntry::default());
    first.bulkheads.insert(
        "db".into(),
        fusebox::registry::BulkheadConfig {
            max_concurrent: Some(1),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(first)
        .clock(clock.clone())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    let legacy = fusebox.breaker("legacy");
    let pool = fusebox.bulkhead("db");
    let plain = fusebox.breaker("plain"); // from the defaults
    let _slot = pool.try_acquire().unwrap();

    let mut second = FuseboxConfig::default();
    second.defaults.breaker.settings.consecutive_failures = Some(2);
    let mut db_entry = entry(BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    });
    db_entry.tags.insert("service".into(), "orders".into());
    second.breakers.insert("db".into(), db_entry);
    second
        .breakers
        .insert("search".into(), BreakerEntry::default());
    second.bulkheads.insert(
        "db".into(),
        fusebox::registry::BulkheadConfig {
            max_concurrent: Some(2),
            ..Default::default()
        },
    );
    let report = fusebox.reload(second).unwrap();
    assert_eq!(report.added, ["search"]);
    assert_eq!(report.changed, ["db", "plain"]);
    assert_eq!(report.removed, ["legacy"]);

    fail(&db, 1);
    assert_eq!(db.state(), State::Open, "db follows the reload in place");
    assert_eq!(fusebox.tags("db")["service"], "orders");
    fail(&plain, 2);
    assert_eq!(
        plain.state(),
        State::Open,
        "defaults' names follow new defaults"
    );
    assert!(
        pool.try_acquire().is_ok(),
        "the bulkhead was resized in place"
    );
    assert!(
        legacy.same_as(&fusebox.breaker("legacy")),
        "removed: kept running"
    );
    assert_eq!(legacy.config().consecutive_failures, Some(5));
    assert!(fusebox.names().contains(&"search".to_string()));

    // A bad config changes nothing.
    let mut bad = FuseboxConfig::default();
    bad.defaults.breaker.settings.half_open_probes = Some(0);
    assert!(fusebox.reload(bad).is_err());
    assert_eq!(db.config().consecutive_failures, Some(1));
}

#[test]
fn dependencies_give_one_pipeline_per_name_that_follows_the_registry() {
    let mut config = FuseboxConfig::default();
    config.dependencies.insert(
        "inventory".into(),
        DependencyConfig {
            breaker: BreakerConfig {
                consecutive_failures: Some(2),
                ..Default::default()
            },
            bulkhead: Some(fusebox::registry::BulkheadConfig {
                max_concurrent: Some(1),
                ..Default::default()
            }),
            retry: Some(RetryConfig {
                max_attempts: Some(3),
                initial_backoff: Some(Duration::from_micros(1)),
                max_backoff: Some(Duration::from_micros(1)),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::from_config(config).unwrap();
    assert_eq!(fusebox.names(), ["inventory"]);
    assert_eq!(fusebox.bulkhead_snapshot()[0].name, "inventory");
    let p = fusebox.pipeline("inventory");
    let mut calls = 0;
    let r = p.call(|| {
        calls += 1;
        Err::<(), _>(std::io::Error::other("503"))
    });
    assert!(r.is_err());
    assert_eq!(
        calls, 2,
        "retried until the breaker opened after 2 failures"
    );
    assert_eq!(fusebox.breaker("inventory").state(), State::Open);
    fusebox.reset("inventory").unwrap();
    let slot = fusebox.bulkhead("inventory").try_acquire().unwrap();
    let e = p.call(|| Ok::<_, std::io::Error>(1)).unwrap_err();
    assert_eq!(e.stopped_by(), "bulkhead", "the registry's bulkhead");
    drop(slot);
    fusebox.force_open("inventory").unwrap();
    let e = fusebox
        .pipeline("inventory")
        .call(|| Ok::<_, std::io::Error>(1))
        .unwrap_err();
    assert_eq!(e.stopped_by(), "breaker");
}

#[test]
fn a_name_cannot_be_both_a_breaker_and_a_dependency() {
    let mut config = FuseboxConfig::default();
    config.breakers.insert("x".into(), BreakerEntry::default());
    config
        .dependencies
        .insert("x".into(), DependencyConfig::default());
    let err = Fusebox::from_config(config).unwrap_err();
    assert_eq!(err.key(), "breakers.x");
}

#[cfg(all(feature = "tower", feature = "tokio"))]
#[tokio::test]
async fn a_tower_layer_follows_the_registry_by_name() {
    use fusebox::tower::CircuitBreakerLayer;
    use tower::{Layer, Service, ServiceExt};
    let fusebox = Fusebox::new();
    let mut svc =
        CircuitBreakerLayer::new(fusebox.breaker("api")).layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::io::Error>(1)
        }));
    assert_eq!(svc.ready().await.unwrap().call(()).await.unwrap(), 1);
    fusebox.force_open("api").unwrap();
    let err = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(err.downcast_ref::<fusebox::Rejected>().is_some());
    fusebox.reset("api").unwrap();
    fusebox
        .reconfigure(
            "api",
            BreakerConfig {
                consecutive_failures: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    let mut failing =
        CircuitBreakerLayer::new(fusebox.breaker("api")).layer(tower::service_fn(|_: ()| async {
            Err::<u8, _>(std::io::Error::other("x"))
        }));
    let _ = failing.ready().await.unwrap().call(()).await;
    assert_eq!(
        fusebox.breaker("api").state(),
        State::Open,
        "1 failure: the new setting"
    );
    assert!(
        svc.ready().await.unwrap().call(()).await.is_err(),
        "the other layer follows too"
    );
}

#[test]
fn programmatic_config_errors_name_the_key() {
    let cases: Vec<(BreakerConfig, &str)> = vec![
        (
            BreakerConfig {
                failure_rate: Some(1.5),
                ..Default::default()
            },
            "failure_rate",
        ),
        (
            BreakerConfig {
                consecutive_failures: Some(0),
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
                open_backoff: Some(Backoff {
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
                half_open_max_wait: Some(Duration::ZERO),
                ..Default::default()
            },
            "half_open_max_wait",
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
        all.breakers.insert("x".into(), entry(config));
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
        let entry = config.breaker_config("payments");
        assert_eq!(entry.tags["service"], "payments");
        let pay = entry.settings;
        assert_eq!(pay.time_window, Some(Duration::from_secs(60)));
        assert_eq!(pay.slow_call_duration, Some(Duration::from_secs(2)));
        assert_eq!(pay.open_for, Some(Duration::from_secs(30)), "inherited");
        assert_eq!(pay.half_open_probes, Some(2), "inherited");
        let search = config.breaker_config("search").settings;
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
            // The key of an unknown setting, in the middle of a table.
            (
                "[breakers.db]\nfailure_rate = 0.5\npolicy = \"rolling_average\"\n",
                "breakers.db.policy",
                3,
                "unknown field `policy`",
            ),
            // A number too large for its key.
            (
                "[breakers.db]\nmin_calls = 3\ncount_window = 99999999999999999999999\n",
                "breakers.db.count_window",
                3,
                "",
            ),
            // A duplicate key.
            (
                "[breakers.db]\nopen_for = \"1s\"\nopen_for = \"2s\"\n",
                "breakers.db.open_for",
                3,
                "duplicate",
            ),
            // A missing companion key: the line of its own table, not the
            // next table's key of the same name.
            (
                "[breakers.a]\nslow_call_rate = 0.5\n\n[breakers.b]\nslow_call_duration = \"1s\"\nslow_call_rate = 0.5\n",
                "breakers.a.slow_call_duration",
                1,
                "missing",
            ),
            // A duration in the library's grammar that humans write.
            (
                "[breakers.db]\nopen_for = \"1.5.s\"\n",
                "breakers.db.open_for",
                2,
                "not a number",
            ),
            // A rate out of range.
            (
                "[breakers.db]\nfailure_rate = 1.5\n",
                "breakers.db.failure_rate",
                2,
                "1.5: must be in (0, 1]",
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
                "[breakers.db]\nfailure_rate = 0.5\ncount_window = 10\ntime_window = \"10s\"\n",
                "breakers.db.time_window",
                4,
                "not both",
            ),
            // A core rule, found after parsing.
            (
                "[breakers.db]\nconsecutive_failures = 3\ncount_window = 10\n",
                "breakers.db.count_window",
                3,
                "no failure_rate or slow_call_rate policy uses it",
            ),
            // A syntax error: the key of its line.
            (
                "[breakers.db]\nopen_for = \"10s\nx = 1\n",
                "breakers.db.open_for",
                2,
                "string",
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
    fn a_name_with_control_characters_or_none_is_refused() {
        let err = FuseboxConfig::from_toml("[breakers.\"a\\u0000b\\n\"]\nopen_for = \"1s\"\n")
            .unwrap_err();
        assert_eq!(err.key(), "breakers.a\\0b\\n", "{err}");
        assert!(err.message().contains("control character"), "{err}");
        let err = FuseboxConfig::from_toml("[bulkheads.\"\"]\nmax_concurrent = 1\n").unwrap_err();
        assert_eq!(err.key(), "bulkheads.", "{err}");
        let long = "x".repeat(fusebox::registry::MAX_NAME_LEN + 1);
        let err = FuseboxConfig::from_toml(&format!("[dependencies.{long}]\ntimeout = \"1s\"\n"))
            .unwrap_err();
        assert!(err.message().contains("1 to 128"), "{err}");
        assert!(FuseboxConfig::from_toml("[breakers.\"db-1.eu\"]\nopen_for = \"1s\"\n").is_ok());
    }

    #[test]
    fn files_are_bounded_in_size_and_depth() {
        // 200 KB of nested `[` took a YAML parser 41 s before a type error.
        let deep = "[".repeat(200_000);
        let err = FuseboxConfig::from_yaml(&deep).unwrap_err();
        assert!(err.message().contains("nested deeper than"), "{err}");
        assert_eq!(err.line(), Some(1));
        let err = FuseboxConfig::from_toml(&format!("x = {deep}")).unwrap_err();
        assert!(err.message().contains("nested deeper than"), "{err}");
        let big = format!("# {}\n", "x".repeat(fusebox::registry::MAX_SOURCE_BYTES));
        let err = FuseboxConfig::from_toml(&big).unwrap_err();
        assert!(err.message().contains("at most"), "{err}");
        // Brackets inside strings do not count.
        let quoted = format!("[breakers.db]\nopen_for = \"{}\"\n", "[".repeat(100));
        let err = FuseboxConfig::from_toml(&quoted).unwrap_err();
        assert_eq!(err.key(), "breakers.db.open_for", "{err}");
        // A quote inside a plain scalar opens no string: the brackets after
        // it are counted (this input took a YAML parser minutes).
        let sneaky = format!(
            "x: a\"b\na: {}1{}\n",
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        let err = FuseboxConfig::from_yaml(&sneaky).unwrap_err();
        assert!(err.message().contains("nested deeper than"), "{err}");
        assert_eq!(err.line(), Some(2));
        // Nor does a `#` inside a string hide the rest of its line.
        let hidden = format!(
            "t = {{ a = \"#\", b = {}1{} }}\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        let err = FuseboxConfig::from_toml(&hidden).unwrap_err();
        assert!(err.message().contains("nested deeper than"), "{err}");
        // A YAML value quoted after `- ` or `: ` is a string as before.
        let list = "x:\n  - \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"\n";
        let err = FuseboxConfig::from_yaml(list).unwrap_err();
        assert!(!err.message().contains("nested deeper than"), "{err}");
    }

    #[test]
    fn a_file_inherits_field_by_field_and_reloads_in_place() {
        let fusebox = Fusebox::from_config(
            FuseboxConfig::from_toml(
                r#"
[defaults.breaker]
failure_rate = 0.5
time_window = "60s"
min_calls = 20

[breakers.db]
failure_rate = 0.3
"#,
            )
            .unwrap(),
        )
        .unwrap();
        let db = fusebox.breaker("db");
        let c = db.config();
        assert_eq!(
            (c.failure_rate, c.time_window, c.min_calls),
            (Some(0.3), Some(Duration::from_secs(60)), Some(20))
        );
        fusebox
            .reload(
                FuseboxConfig::from_toml(
                    "[breakers.db]\nconsecutive_failures = 1\nopen_for = \"1m30s\"\n",
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(db.config().open_for, Some(Duration::from_secs(90)));
        fail(&db, 1);
        assert_eq!(db.state(), State::Open);
    }

    #[test]
    fn half_open_max_wait_from_toml_and_yaml_inherits_and_reloads_in_place() {
        let toml = r#"
[defaults.breaker]
half_open_max_wait = "5s"

[breakers.db]
consecutive_failures = 1
open_for = "10s"
"#;
        let config = FuseboxConfig::from_toml(toml).unwrap();
        let db = config.breaker_config("db").settings;
        assert_eq!(
            db.half_open_max_wait,
            Some(Duration::from_secs(5)),
            "inherited"
        );
        let yaml = "
defaults:
  breaker:
    half_open_max_wait: 5s
breakers:
  db:
    consecutive_failures: 1
    open_for: 10s
";
        assert_eq!(FuseboxConfig::from_yaml(yaml).unwrap(), config);

        let err =
            FuseboxConfig::from_toml("[breakers.db]\n\nhalf_open_max_wait = \"0s\"\n").unwrap_err();
        assert_eq!(err.key(), "breakers.db.half_open_max_wait", "{err}");
        assert_eq!(err.line(), Some(3), "{err}");
        assert!(err.message().contains("above zero"), "{err}");
        let err = FuseboxConfig::from_yaml("breakers:\n  db:\n    half_open_max_wait: -5s\n")
            .unwrap_err();
        assert_eq!(err.key(), "breakers.db.half_open_max_wait", "{err}");
        assert_eq!(err.line(), Some(3), "{err}");

        // The breaker the registry builds has the deadline ...
        let clock = ManualClock::new();
        let fusebox = Fusebox::builder()
            .config(config)
            .clock(clock.clone())
            .build()
            .unwrap();
        let b = fusebox.breaker("db");
        fail(&b, 1);
        clock.advance(Duration::from_secs(10));
        let _stuck = b.try_acquire().unwrap();
        clock.advance(Duration::from_secs(5));
        assert_eq!(b.try_acquire().unwrap_err().state(), State::Open);
        // ... and a reload that drops it puts the old behaviour back in place.
        fusebox
            .reload(
                FuseboxConfig::from_toml(
                    "[breakers.db]\nconsecutive_failures = 1\nopen_for = \"10s\"\n",
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(b.config().half_open_max_wait, None);
        clock.advance(Duration::from_secs(10));
        let _stuck = b.try_acquire().unwrap();
        clock.advance(Duration::from_secs(3600));
        assert_eq!(b.try_acquire().unwrap_err().state(), State::HalfOpen);
    }

    #[test]
    fn dependency_tables_from_a_file() {
        let config = FuseboxConfig::from_toml(
            r#"
[dependencies.inventory]
timeout = "300ms"
tags = { service = "inventory" }
breaker = { failure_rate = 0.5, count_window = 20 }
bulkhead = { max_concurrent = 10 }
retry = { max_attempts = 3, budget_ratio = 0.2 }
"#,
        )
        .unwrap();
        let fusebox = Fusebox::from_config(config).unwrap();
        assert_eq!(fusebox.tags("inventory")["service"], "inventory");
        assert_eq!(fusebox.bulkhead("inventory").limit(), 10);
        assert_eq!(fusebox.breaker("inventory").config().count_window, Some(20));
        let err =
            FuseboxConfig::from_toml("[dependencies.inventory]\nretry = { max_attempts = 0 }\n")
                .unwrap_err();
        assert_eq!(
            err.key(),
            "dependencies.inventory.retry.max_attempts",
            "{err}"
        );
        assert_eq!(err.line(), Some(2));
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
                "breakers:\n  db:\n    failure_rate: 0.5\n    policy: rolling_average\n",
                "breakers.db.policy",
                4,
                "unknown field `policy`",
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
    assert_eq!(
        fusebox.bulkhead_snapshot().len(),
        2,
        "the configured bulkhead existed before its first use"
    );
}

#[cfg(feature = "config")]
#[test]
fn bulkhead_config_errors_name_the_key() {
    let err = FuseboxConfig::from_toml("[bulkheads.db]\nmax_concurrent = -1\n").unwrap_err();
    assert_eq!(err.key(), "bulkheads.db.max_concurrent");
    assert_eq!(err.line(), Some(2));
    let err = FuseboxConfig::from_toml("[bulkheads.db]\nmax_wiat = \"1s\"\n").unwrap_err();
    assert_eq!(err.key(), "bulkheads.db.max_wiat");
}

#[cfg(feature = "config")]
#[test]
fn a_bulkhead_of_no_slots_is_refused_wherever_it_is_set() {
    // It would refuse every call for as long as the file is in force.
    let cases = [
        (
            "[bulkheads.db]\nmax_concurrent = 0\n",
            "bulkheads.db.max_concurrent",
            2,
        ),
        (
            "[defaults.bulkhead]\nmax_concurrent = 0\n",
            "defaults.bulkhead.max_concurrent",
            2,
        ),
        (
            "[dependencies.db]\nbulkhead = { max_concurrent = 0 }\n",
            "dependencies.db.bulkhead.max_concurrent",
            2,
        ),
    ];
    for (source, key, line) in cases {
        let err = FuseboxConfig::from_toml(source).unwrap_err();
        assert_eq!(err.key(), key, "{source}");
        assert_eq!(err.line(), Some(line), "{source}");
        assert!(err.message().contains("at least 1"), "{err}");
    }
    let err = FuseboxConfig::from_yaml("bulkheads:\n  db:\n    max_concurrent: 0\n").unwrap_err();
    assert_eq!(err.key(), "bulkheads.db.max_concurrent");
    assert_eq!(err.line(), Some(3));
    // Built by hand, the config is refused by the registry too, and by a reload.
    let mut config = FuseboxConfig::default();
    config.bulkheads.insert(
        "db".into(),
        fusebox::registry::BulkheadConfig {
            max_concurrent: Some(0),
            ..Default::default()
        },
    );
    assert_eq!(
        Fusebox::from_config(config.clone()).unwrap_err().key(),
        "bulkheads.db.max_concurrent"
    );
    let fusebox = Fusebox::new();
    assert!(fusebox.reload(config).is_err());
    assert!(fusebox.bulkhead_snapshot().is_empty());
    let one = FuseboxConfig::from_toml("[bulkheads.db]\nmax_concurrent = 1\n").unwrap();
    assert_eq!(one.bulkheads["db"].max_concurrent, Some(1));
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
    config.breakers.insert("slow".into(), entry(slow_only));
    config.breakers.insert(
        "rate".into(),
        entry(BreakerConfig {
            failure_rate: Some(0.5),
            count_window: Some(4),
            min_calls: Some(4),
            ..Default::default()
        }),
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

    let rate = fusebox.breaker("rate");
    ok(&rate);
    ok(&rate);
    fail(&rate, 1);
    assert_eq!(rate.state(), State::Closed);
    fail(&rate, 1);
    assert_eq!(rate.state(), State::Open, "2 of 4 = 0.5");
}

#[cfg(feature = "ratelimit")]
mod rate_limits {
    use super::*;
    use fusebox::policy::Inspect;
    use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    use fusebox::Mode;

    fn with_rate(per_second: u32, burst: u32, mode: Mode) -> FuseboxConfig {
        let mut config = FuseboxConfig::default();
        config.dependencies.insert(
            "partner".into(),
            DependencyConfig {
                rate_limit: Some(
                    RateLimitConfig::per_second(per_second)
                        .burst(burst)
                        .mode(mode),
                ),
                tags: Tags::from([("service".to_owned(), "partner".to_owned())]),
                ..Default::default()
            },
        );
        config
    }

    fn spend(limiter: &RateLimiter, n: usize) -> usize {
        (0..n).filter(|_| limiter.try_acquire().is_ok()).count()
    }

    #[test]
    fn the_pipeline_of_a_dependency_asks_its_rate_limit_inside_its_breaker() {
        let clock = ManualClock::new();
        let fusebox = Fusebox::builder()
            .config(with_rate(10, 1, Mode::Enforce))
            .clock(clock.clone())
            .build()
            .unwrap();
        let p = fusebox.pipeline("partner");
        let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
        assert_eq!(kinds, ["breaker", "rate_limiter"]);
        assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
        let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
        assert!(matches!(e, fusebox::PipelineError::RateLimited(_)));
        // The same limiter as the registry's: a reload to off lets calls through.
        fusebox.reload(with_rate(10, 1, Mode::Off)).unwrap();
        assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
        assert!(fusebox.pipeline("search").rate_limiter().is_none());
    }

    #[test]
    fn a_configured_rate_limit_is_built_with_the_registry_on_its_clock() {
        let clock = ManualClock::new();
        let fusebox = Fusebox::builder()
            .config(with_rate(10, 2, Mode::Enforce))
            .clock(clock.clone())
            .build()
            .unwrap();
        let all = fusebox.policies();
        let listed: Vec<_> = all.iter().map(|p| (p.kind, p.name.as_str())).collect();
        assert_eq!(
            listed,
            [("rate_limiter", "partner")],
            "built before the first use; no bulkhead configured"
        );
        assert_eq!(all[0].tags["service"], "partner");
        assert!(
            fusebox.rate_limiter("search").is_none(),
            "no rate limit, no limiter"
        );
        assert!(fusebox.policies().len() == 1, "asking for one builds none");

        let partner = fusebox.rate_limiter("partner").unwrap();
        assert_eq!(partner.name(), Some("partner"));
        assert_eq!(spend(&partner, 5), 2, "a burst of two");
        clock.advance(Duration::from_millis(100));
        assert_eq!(
            spend(&fusebox.rate_limiter("partner").unwrap(), 5),
            1,
            "the registry's clock refills the same limiter: one cell per 100 ms"
        );
        let refused = fusebox.policies()[0]
            .figures
            .iter()
            .find(|f| f.name == "refused")
            .map(|f| f.value);
        assert_eq!(refused, Some(7));
    }

    #[test]
    fn reload_reconfigures_the_same_limiter_in_place() {
        let clock = ManualClock::new();
        let fusebox = Fusebox::builder()
            .config(with_rate(10, 1, Mode::Shadow))
            .clock(clock.clone())
            .build()
            .unwrap();
        let partner = fusebox.rate_limiter("partner").unwrap();
        assert_eq!(spend(&partner, 4), 4, "shadow lets every call through");
        assert_eq!(partner.snapshot().shadowed, 3);

        // Shadow to enforce, same rate: the state is kept, no fresh burst.
        let report = fusebox.reload(with_rate(10, 1, Mode::Enforce)).unwrap();
        assert_eq!(report.changed, ["partner"]);
        assert!(report.added.is_empty() && report.removed.is_empty());
        assert_eq!(partner.mode(), Mode::Enforce, "the holder's handle follows");
        assert_eq!(spend(&partner, 3), 0, "enforced now, and still spent");

        // The same again: nothing changes.
        let report = fusebox.reload(with_rate(10, 1, Mode::Enforce)).unwrap();
        assert!(report.changed.is_empty(), "{report:?}");

        // A new rate: the same handle takes it.
        let report = fusebox.reload(with_rate(50, 5, Mode::Enforce)).unwrap();
        assert_eq!(report.changed, ["partner"]);
        assert_eq!(partner.config().per_second, Some(50));
        assert_eq!(spend(&partner, 10), 5, "the new burst");
        let again = fusebox.rate_limiter("partner").unwrap();
        assert_eq!(again.config(), partner.config());
        assert_eq!(again.snapshot(), partner.snapshot(), "one limiter");
    }

    #[test]
    fn an_invalid_rate_limit_in_a_reload_changes_nothing() {
        let fusebox = Fusebox::builder()
            .config(with_rate(10, 2, Mode::Enforce))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let partner = fusebox.rate_limiter("partner").unwrap();
        let mut bad = with_rate(0, 2, Mode::Shadow);
        bad.breakers.insert("other".into(), BreakerEntry::default());
        let err = fusebox.reload(bad).unwrap_err();
        assert_eq!(err.key(), "dependencies.partner.rate_limit.per_second");
        assert!(err.message().contains("must be at least 1"), "{err}");
        assert_eq!(partner.config().per_second, Some(10), "old settings stay");
        assert_eq!(partner.mode(), Mode::Enforce);
        assert!(
            fusebox.get("other").is_none(),
            "nothing of the bad config built"
        );
        assert_eq!(spend(&partner, 5), 2);
    }

    #[test]
    fn a_rate_limit_dropped_from_the_config_keeps_running_as_it_was() {
        let fusebox = Fusebox::builder()
            .config(with_rate(10, 2, Mode::Enforce))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let partner = fusebox.rate_limiter("partner").unwrap();
        let mut without = FuseboxConfig::default();
        without
            .dependencies
            .insert("partner".into(), DependencyConfig::default());
        let report = fusebox.reload(without.clone()).unwrap();
        assert_eq!(report.removed, ["partner"], "as for bulkheads");
        assert_eq!(partner.config().burst, Some(2), "kept as it was");
        assert!(
            fusebox.rate_limiter("partner").is_some(),
            "still held and listed, like a removed bulkhead"
        );
        // Reloaded again without it: not removed twice, not changed.
        let report = fusebox.reload(without).unwrap();
        assert!(report.removed.is_empty() && report.changed.is_empty());
        // And named again: reconfigured in place, not rebuilt.
        let report = fusebox.reload(with_rate(20, 4, Mode::Enforce)).unwrap();
        assert_eq!(
            (report.changed, report.added),
            (vec!["partner".to_string()], vec![])
        );
        assert_eq!(partner.config().burst, Some(4));
    }

    #[test]
    fn a_reload_that_adds_a_rate_limit_builds_it_and_tells_the_observers() {
        /// Name, kind and `service` tag of each policy told.
        type Told = (String, &'static str, String);
        #[derive(Clone, Default)]
        struct Seen(Arc<Mutex<Vec<Told>>>);
        impl Observer for Seen {
            fn policy_added(&self, name: &str, tags: &Tags, policy: Arc<dyn Inspect>) {
                let service = tags.get("service").cloned().unwrap_or_default();
                self.0
                    .lock()
                    .unwrap()
                    .push((name.to_owned(), policy.kind(), service));
            }
        }
        let seen = Seen::default();
        let fusebox = Fusebox::builder().observer(seen.clone()).build().unwrap();
        assert!(fusebox.rate_limiter("partner").is_none());
        let report = fusebox.reload(with_rate(10, 2, Mode::Enforce)).unwrap();
        assert_eq!(report.added, ["partner"]);
        assert_eq!(
            seen.0.lock().unwrap().as_slice(),
            [("partner".to_string(), "rate_limiter", "partner".to_string())],
            "told once, with its tags"
        );
        fusebox.rate_limiter("partner").unwrap();
        assert_eq!(seen.0.lock().unwrap().len(), 1, "once per name");
    }

    #[test]
    fn retagging_a_rate_limiter_shows_in_the_listing() {
        let fusebox = Fusebox::from_config(with_rate(10, 2, Mode::Enforce)).unwrap();
        let mut retagged = with_rate(10, 2, Mode::Enforce);
        if let Some(dep) = retagged.dependencies.get_mut("partner") {
            dep.tags.insert("team".into(), "checkout".into());
        }
        let report = fusebox.reload(retagged).unwrap();
        assert_eq!(report.changed, ["partner"], "tags changed, settings not");
        assert_eq!(fusebox.policies()[0].tags["team"], "checkout");
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_rate_limit_table_in_a_file() {
        let config = FuseboxConfig::from_toml(
            r#"
[dependencies.partner]
timeout = "300ms"
rate_limit = { per_second = 100, burst = 20, mode = "shadow" }

[dependencies.geocoder.rate_limit]
period = "2s"
"#,
        )
        .unwrap();
        assert_eq!(
            config.dependencies["partner"].rate_limit,
            Some(
                RateLimitConfig::per_second(100)
                    .burst(20)
                    .mode(Mode::Shadow)
            )
        );
        assert_eq!(
            config.dependencies["geocoder"].rate_limit,
            Some(RateLimitConfig::every(Duration::from_secs(2)))
        );
        let yaml = FuseboxConfig::from_yaml(
            "dependencies:\n  partner:\n    rate_limit:\n      per_second: 100\n      burst: 20\n      mode: shadow\n",
        )
        .unwrap();
        assert_eq!(
            yaml.dependencies["partner"].rate_limit,
            config.dependencies["partner"].rate_limit
        );
        let fusebox = Fusebox::from_config(config).unwrap();
        assert_eq!(
            fusebox.rate_limiter("partner").unwrap().mode(),
            Mode::Shadow
        );
        assert_eq!(
            fusebox.rate_limiter("geocoder").unwrap().config().burst,
            Some(1)
        );
    }

    #[cfg(feature = "config")]
    #[test]
    fn rate_limit_errors_name_the_dependency_and_the_key() {
        let cases = [
            (
                "[dependencies.partner]\nrate_limit = { per_second = 100, burst = 0 }\n",
                "dependencies.partner.rate_limit.burst",
                2,
                "must be at least 1",
            ),
            (
                "[dependencies.partner]\nrate_limit = { per_second = 100, burts = 3 }\n",
                "dependencies.partner.rate_limit.burts",
                2,
                "unknown field `burts`",
            ),
            (
                "[dependencies.partner]\nrate_limit = { per_second = 1, period = \"1s\" }\n",
                "dependencies.partner.rate_limit.period",
                2,
                "excludes `per_second`",
            ),
            (
                "[dependencies.partner]\nrate_limit = { burst = 3 }\n",
                "dependencies.partner.rate_limit.per_second",
                2,
                "must be set",
            ),
            (
                "[dependencies.partner]\nrate_limit = { per_second = 5, mode = \"loud\" }\n",
                "dependencies.partner.rate_limit.mode",
                2,
                "unknown variant `loud`",
            ),
            (
                "[dependencies.partner]\ntimeout = \"1s\"\n\n[dependencies.partner.rate_limit]\nper_second = -1\n",
                "dependencies.partner.rate_limit.per_second",
                5,
                "expected u32",
            ),
        ];
        for (source, key, line, problem) in cases {
            let err = FuseboxConfig::from_toml(source).unwrap_err();
            assert_eq!(err.key(), key, "{source}");
            assert_eq!(err.line(), Some(line), "{source}");
            assert!(err.message().contains(problem), "{source}: {err}");
            assert!(err.to_string().starts_with(key), "{err}");
        }
        let err = FuseboxConfig::from_yaml(
            "dependencies:\n  partner:\n    rate_limit:\n      per_second: 10\n      burst: 0\n",
        )
        .unwrap_err();
        assert_eq!(
            (err.key(), err.line()),
            ("dependencies.partner.rate_limit.burst", Some(5))
        );
    }
}

/// The file format of the registry's module docs parses and builds.
#[cfg(all(feature = "config", feature = "ratelimit"))]
#[test]
fn the_module_docs_file_example_parses() {
    let docs = include_str!("../src/registry/mod.rs");
    let start = docs.find("//! # The file").expect("the docs' file section");
    let block: String = docs[start..]
        .lines()
        .skip_while(|l| *l != "//! ```toml")
        .skip(1)
        .take_while(|l| *l != "//! ```")
        .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start_matches(' ')))
        .collect();
    assert!(block.contains("rate_limit"), "{block}");
    let config = FuseboxConfig::from_toml(&block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    let fusebox = Fusebox::from_config(config).unwrap();
    let partner = fusebox.rate_limiter("partner").unwrap();
    assert_eq!(partner.config().burst, Some(20));
    assert_eq!(partner.mode(), fusebox::Mode::Shadow);
    assert_eq!(fusebox.bulkhead("reviews").limit(), 8);
}

#[cfg(feature = "limit")]
mod limits {
    use super::*;
    use fusebox::limit::{Algorithm, LimitConfig};
    use fusebox::Mode;

    fn with_limit(limit: LimitConfig) -> FuseboxConfig {
        let mut config = FuseboxConfig::default();
        config.dependencies.insert(
            "search".into(),
            DependencyConfig {
                limit: Some(limit),
                bulkhead: Some(fusebox::registry::BulkheadConfig {
                    max_concurrent: Some(100),
                    ..Default::default()
                }),
                tags: Tags::from([("service".to_owned(), "search".to_owned())]),
                ..Default::default()
            },
        );
        config
    }

    #[test]
    fn the_pipeline_of_a_dependency_holds_its_limit_between_breaker_and_bulkhead() {
        let fusebox = Fusebox::builder()
            .config(with_limit(LimitConfig::default().initial(1)))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let listed: Vec<_> = fusebox
            .policies()
            .into_iter()
            .map(|p| (p.kind, p.name, p.tags["service"].clone()))
            .collect();
        assert_eq!(
            listed,
            [
                ("bulkhead", "search".to_string(), "search".to_string()),
                ("limit", "search".to_string(), "search".to_string())
            ],
            "built with the registry, tagged"
        );
        let p = fusebox.pipeline("search");
        let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
        assert_eq!(kinds, ["breaker", "limit", "bulkhead"]);
        // The pipeline's limit is the registry's: a slot taken through the
        // registry's handle fills the pipeline's limit of one.
        let slot = fusebox.limit("search").unwrap().try_acquire().unwrap();
        let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
        assert!(
            matches!(e, fusebox::PipelineError::LimitExceeded(_)),
            "{e:?}"
        );
        drop(slot);
        assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
        assert!(fusebox.limit("other").is_none());
        assert!(fusebox.pipeline("other").adaptive_limit().is_none());
    }

    #[test]
    fn reload_reconfigures_the_same_limit_in_place_and_refuses_a_bad_one() {
        let fusebox = Fusebox::builder()
            .config(with_limit(LimitConfig::default().initial(20)))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let search = fusebox.limit("search").unwrap();
        let held = search.try_acquire().unwrap();

        let report = fusebox
            .reload(with_limit(
                LimitConfig::new(Algorithm::Aimd).max(8).initial(8),
            ))
            .unwrap();
        assert_eq!(report.changed, ["search"]);
        assert_eq!(
            (search.limit(), search.config().algorithm),
            (8, Algorithm::Aimd)
        );
        assert_eq!(search.snapshot().in_flight, 1, "the call in flight is kept");
        let report = fusebox
            .reload(with_limit(
                LimitConfig::new(Algorithm::Aimd).max(8).initial(8),
            ))
            .unwrap();
        assert!(report.changed.is_empty(), "{report:?}");

        let err = fusebox
            .reload(with_limit(LimitConfig::default().min(0).mode(Mode::Off)))
            .unwrap_err();
        assert_eq!(err.key(), "dependencies.search.limit.min");
        assert_eq!(search.config().max, 8, "the settings in force stay");
        assert_eq!(search.mode(), Mode::Enforce);
        drop(held);
        assert_eq!(search.snapshot().in_flight, 0);
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_limit_table_in_a_file_and_its_errors() {
        let toml = "[dependencies.search]\nlimit = { algorithm = \"gradient2\", min = 2, max = 200, initial = 20 }\n";
        let config = FuseboxConfig::from_toml(toml).unwrap();
        let yaml = FuseboxConfig::from_yaml(
            "dependencies:\n  search:\n    limit:\n      algorithm: gradient2\n      min: 2\n      max: 200\n      initial: 20\n",
        )
        .unwrap();
        let want = LimitConfig::new(Algorithm::Gradient2)
            .min(2)
            .max(200)
            .initial(20);
        assert_eq!(config.dependencies["search"].limit, Some(want));
        assert_eq!(yaml.dependencies["search"].limit, Some(want));
        let fusebox = Fusebox::from_config(config).unwrap();
        assert_eq!(fusebox.limit("search").unwrap().config(), want);

        let cases = [
            (
                "limit = { algorithm = \"fast\" }",
                "dependencies.search.limit.algorithm",
                "unknown variant `fast`",
            ),
            (
                "limit = { maxx = 3 }",
                "dependencies.search.limit.maxx",
                "unknown field `maxx`",
            ),
            (
                "limit = { initial = 300 }",
                "dependencies.search.limit.initial",
                "invalid value 300",
            ),
            (
                "limit = { backoff = 1.5 }",
                "dependencies.search.limit.backoff",
                "invalid value 1.5",
            ),
        ];
        for (line, key, message) in cases {
            let err = FuseboxConfig::from_toml(&format!("[dependencies.search]\n{line}\n"))
                .and_then(Fusebox::from_config)
                .unwrap_err();
            assert_eq!(err.key(), key, "{line}: {err}");
            assert!(err.to_string().contains(message), "{line}: {err}");
        }
    }
}

#[cfg(feature = "throttle")]
mod throttles {
    use super::*;
    use fusebox::throttle::ThrottleConfig;

    fn with_throttle(throttle: ThrottleConfig) -> FuseboxConfig {
        let mut config = FuseboxConfig::default();
        config.dependencies.insert(
            "partner".into(),
            DependencyConfig {
                throttle: Some(throttle),
                ..Default::default()
            },
        );
        config
    }

    #[test]
    fn the_pipeline_counts_in_the_registrys_throttle_and_reload_keeps_the_counts() {
        let clock = ManualClock::new();
        let fusebox = Fusebox::builder()
            .config(with_throttle(ThrottleConfig::default()))
            .clock(clock.clone())
            .build()
            .unwrap();
        let p = fusebox.pipeline("partner");
        let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
        assert_eq!(kinds, ["breaker", "throttle"]);
        for _ in 0..3 {
            p.call(|| Ok::<_, std::io::Error>(())).unwrap();
        }
        let partner = fusebox.throttle("partner").unwrap();
        assert_eq!(
            (partner.snapshot().requests, partner.snapshot().accepts),
            (3, 3)
        );

        // k changes in place and the window's counts stay; a new window
        // starts empty.
        let report = fusebox
            .reload(with_throttle(ThrottleConfig::default().k(1.5)))
            .unwrap();
        assert_eq!(report.changed, ["partner"]);
        assert_eq!(partner.config().k_value(), 1.5);
        assert_eq!(partner.snapshot().requests, 3, "same window, counts kept");
        let report = fusebox
            .reload(with_throttle(ThrottleConfig::default().k(1.5)))
            .unwrap();
        assert!(report.changed.is_empty(), "{report:?}");
        fusebox
            .reload(with_throttle(
                ThrottleConfig::default()
                    .k(1.5)
                    .window(Duration::from_secs(10), 10),
            ))
            .unwrap();
        assert_eq!(partner.snapshot().requests, 0, "a new window starts empty");

        let err = fusebox
            .reload(with_throttle(ThrottleConfig::default().max_rejection(1.5)))
            .unwrap_err();
        assert_eq!(err.key(), "dependencies.partner.throttle.max_rejection");
        assert_eq!(
            partner.config().k_value(),
            1.5,
            "the settings in force stay"
        );

        // A running throttle keeps its bucket count: a reload asking for
        // another is refused before anything changes.
        let mut other =
            with_throttle(ThrottleConfig::default().window(Duration::from_secs(10), 20));
        other
            .breakers
            .insert("other".into(), BreakerEntry::default());
        let err = fusebox.reload(other).unwrap_err();
        assert_eq!(err.key(), "dependencies.partner.throttle.buckets");
        assert!(
            fusebox.get("other").is_none(),
            "nothing of that reload built"
        );
        assert_eq!(partner.config().k_value(), 1.5);
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_throttle_table_in_a_file_and_its_errors() {
        let config = FuseboxConfig::from_toml(
            "[dependencies.partner]\nthrottle = { k = 1.5, window = \"10s\", mode = \"shadow\" }\n",
        )
        .unwrap();
        let want = ThrottleConfig::default()
            .k(1.5)
            .window(Duration::from_secs(10), 10)
            .mode(fusebox::Mode::Shadow);
        assert_eq!(config.dependencies["partner"].throttle, Some(want));
        let fusebox = Fusebox::from_config(config).unwrap();
        assert_eq!(fusebox.throttle("partner").unwrap().config(), want);

        let cases = [
            ("throttle = { k = 0.5 }", "dependencies.partner.throttle.k"),
            ("throttle = { kk = 2 }", "dependencies.partner.throttle.kk"),
            (
                "throttle = { window = \"soon\" }",
                "dependencies.partner.throttle.window",
            ),
        ];
        for (line, key) in cases {
            let err = FuseboxConfig::from_toml(&format!("[dependencies.partner]\n{line}\n"))
                .and_then(Fusebox::from_config)
                .unwrap_err();
            assert_eq!(err.key(), key, "{line}: {err}");
        }
    }
}

/// A dependency's retry budget ages its deposits on the registry's clock:
/// a success's deposit pays for a retry until the budget's 10 s window has
/// passed on that clock, and not after.
#[test]
fn a_dependencys_retry_budget_runs_on_the_registrys_clock() {
    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    config.dependencies.insert(
        "inventory".into(),
        DependencyConfig {
            retry: Some(RetryConfig {
                max_attempts: Some(2),
                budget_ratio: Some(1.0),
                budget_min_per_second: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    let p = fusebox.pipeline("inventory");
    let budget = p.retry().and_then(|r| r.budget()).expect("a budget");
    budget.deposit();
    assert_eq!(budget.balance(), 1);
    clock.advance(Duration::from_secs(11));
    assert_eq!(
        budget.balance(),
        0,
        "the deposit aged out on the registry's clock"
    );
}
