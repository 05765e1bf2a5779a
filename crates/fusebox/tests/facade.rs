//! The `metrics` facade observer, rendered through
//! `metrics-exporter-prometheus`, gives the same series as the
//! prometheus-client observer for the same calls.

use fusebox::facade::{MetricsFacade, DURATION_BUCKETS};
use fusebox::metrics::{encode_text, Metrics};
use fusebox::registry::Fusebox;
use fusebox::{Bulkhead, CircuitBreaker, Pipeline, PolicyStats};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;

/// `series{sorted labels}` -> value, for every `fusebox_` sample line.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || !line.starts_with("fusebox_") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut pairs: Vec<(String, String)> = labels
            .split("\",")
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').expect("label=value");
                let v = v.trim_matches('"');
                // Bucket bounds: "1" and "1.0" are the same bound.
                let v = match (k, v.parse::<f64>()) {
                    ("le", Ok(b)) => format!("{b}"),
                    _ => v.to_owned(),
                };
                (k.to_owned(), v)
            })
            .collect();
        pairs.sort();
        let labels: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        let value: f64 = value.parse().expect("a number");
        out.insert(format!("{name}{{{}}}", labels.join(",")), value);
    }
    out
}

fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("fusebox_call_duration_seconds".into()),
            &DURATION_BUCKETS,
        )
        .unwrap()
        .build_recorder()
}

fn assert_same(prom: &BTreeMap<String, f64>, facade: &BTreeMap<String, f64>) {
    let names = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(prom), names(facade), "the same series");
    for (series, v) in prom {
        let w = facade[series];
        if series.contains("_sum{") {
            // prometheus-client sums nanoseconds, the facade seconds.
            assert!((v - w).abs() < 1e-6, "{series}: {v} vs {w}");
        } else {
            assert_eq!(*v, w, "{series}");
        }
    }
}

#[test]
fn same_series_as_the_prometheus_observer() {
    let recorder = recorder();
    let handle = recorder.handle();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let mut registry = Registry::default();
    let prom = Metrics::new(&mut registry);
    let facade = MetricsFacade::new();
    let fusebox = Fusebox::builder()
        .observer(prom.clone())
        .observer(facade.clone())
        .config(
            fusebox::registry::FuseboxConfig::from_toml(
                "[breakers.db]\nconsecutive_failures = 2\n\
                 [breakers.db.tags]\nservice = \"orders\"\n\
                 [bulkheads.reviews]\nmax_concurrent = 1\n",
            )
            .unwrap(),
        )
        .build()
        .unwrap();

    let db = fusebox.breaker("db");
    for _ in 0..3 {
        db.call(|| Ok::<_, std::io::Error>(())).unwrap();
    }
    for _ in 0..2 {
        let _ = db.call(|| Err::<(), _>(std::io::Error::other("down")));
    }
    assert!(db.call(|| Ok::<_, std::io::Error>(())).is_err(), "open");
    fusebox.breaker("cache").force_open();

    let reviews = fusebox.bulkhead("reviews");
    let _slot = reviews.try_acquire().unwrap();
    assert!(reviews.try_acquire().is_err());

    let stats = PolicyStats::new();
    prom.track_stats("search", &stats, None);
    facade.track_stats("search", &stats, None);
    let p = Pipeline::builder().fallback_value(0).stats(stats).build();
    let _ = p.call(|| Err::<u8, _>(std::io::Error::other("down")));

    facade.sample();
    let from_prom = parse(&encode_text(&registry));
    let from_facade = parse(&handle.render());
    assert_same(&from_prom, &from_facade);

    // Spot checks of what the comparison covers.
    let get = |k: &str| from_facade[k];
    assert_eq!(
        get(r#"fusebox_calls_total{name="db",outcome="success"}"#),
        3.0
    );
    assert_eq!(
        get(r#"fusebox_calls_total{name="db",outcome="failure"}"#),
        2.0
    );
    assert_eq!(
        get(r#"fusebox_calls_total{name="db",outcome="rejected"}"#),
        1.0
    );
    assert_eq!(get(r#"fusebox_circuit_state{name="db",state="open"}"#), 1.0);
    assert_eq!(
        get(r#"fusebox_circuit_state{name="cache",state="forced_open"}"#),
        1.0
    );
    assert_eq!(
        get(r#"fusebox_transitions_total{from="closed",name="db",to="open"}"#),
        1.0
    );
    assert_eq!(
        get(r#"fusebox_breaker_info{name="db",service="orders"}"#),
        1.0
    );
    assert_eq!(get(r#"fusebox_bulkhead_in_use{name="reviews"}"#), 1.0);
    assert_eq!(
        get(r#"fusebox_bulkhead_rejections_total{name="reviews"}"#),
        1.0
    );
    assert_eq!(
        get(r#"fusebox_call_duration_seconds_count{name="db"}"#),
        5.0
    );
    assert_eq!(
        get(r#"fusebox_fallbacks_total{cause="failed",name="search"}"#),
        1.0
    );
    assert_eq!(
        get(r#"fusebox_policy_mode{mode="enforce",name="reviews",policy="bulkhead"}"#),
        1.0
    );

    // Later changes: a state change is written at once, figures at the
    // next sample.
    fusebox.reset("db").unwrap();
    drop(_slot);
    let now = parse(&handle.render());
    assert_eq!(
        now[r#"fusebox_circuit_state{name="db",state="closed"}"#],
        1.0
    );
    assert_eq!(now[r#"fusebox_circuit_state{name="db",state="open"}"#], 0.0);
    assert_eq!(now[r#"fusebox_bulkhead_in_use{name="reviews"}"#], 1.0);
    facade.sample();
    let sampled = parse(&handle.render());
    assert_eq!(sampled[r#"fusebox_bulkhead_in_use{name="reviews"}"#], 0.0);
    assert_same(&parse(&encode_text(&registry)), &sampled);
}

#[test]
fn names_past_the_limit_add_up_under_other() {
    let recorder = recorder();
    let handle = recorder.handle();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let facade = MetricsFacade::with_max_names(1);
    let a = facade.build("a", CircuitBreaker::builder()).unwrap();
    let b = facade.build("b", CircuitBreaker::builder()).unwrap();
    let c = facade.build("c", CircuitBreaker::builder()).unwrap();
    for breaker in [&a, &b, &c] {
        breaker.call(|| Ok::<_, std::io::Error>(())).unwrap();
    }
    c.force_open();
    facade.track_bulkhead("d", &Bulkhead::new(2));
    facade.track_bulkhead("e", &Bulkhead::new(3));
    facade.sample();

    let m = parse(&handle.render());
    assert_eq!(m[r#"fusebox_calls_total{name="a",outcome="success"}"#], 1.0);
    assert_eq!(
        m[r#"fusebox_calls_total{name="other",outcome="success"}"#],
        2.0
    );
    assert_eq!(
        m[r#"fusebox_circuit_state{name="other",state="closed"}"#],
        1.0
    );
    assert_eq!(
        m[r#"fusebox_circuit_state{name="other",state="forced_open"}"#],
        1.0
    );
    assert_eq!(m[r#"fusebox_bulkhead_limit{name="other"}"#], 5.0);
    let names: std::collections::BTreeSet<&str> = m
        .keys()
        .filter_map(|k| k.split("name=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["a", "other"]);
}

#[test]
fn a_mode_left_reads_zero() {
    let recorder = recorder();
    let handle = recorder.handle();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let facade = MetricsFacade::new();
    let reviews = Bulkhead::new(2);
    facade.track_bulkhead("reviews", &reviews);
    facade.sample();
    reviews.set_mode(fusebox::Mode::Shadow);
    facade.sample();
    let m = parse(&handle.render());
    let mode = |mode: &str| {
        m[&format!(r#"fusebox_policy_mode{{mode="{mode}",name="reviews",policy="bulkhead"}}"#)]
    };
    assert_eq!((mode("enforce"), mode("shadow")), (0.0, 1.0));
}
