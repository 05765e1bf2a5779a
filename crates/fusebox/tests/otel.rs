//! The OpenTelemetry observer through the SDK's in-memory exporter (the
//! breaker's state, calls by outcome, a bulkhead figure) and through the
//! OpenTelemetry Prometheus exporter (the same series, labels and values
//! as the Prometheus observer for the same calls).

use fusebox::metrics::{encode_text, Metrics};
use fusebox::otel::OtelMetrics;
use fusebox::registry::{Fusebox, FuseboxConfig};
use fusebox::CircuitBreaker;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, PeriodicReader, SdkMeterProvider, Temporality,
};
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};

/// One collected data point: instrument name, sorted attributes, value.
type Points = BTreeMap<(String, Vec<(String, String)>), f64>;

struct Collected {
    points: Points,
    /// Instrument name -> (unit, is a monotonic sum, is a histogram).
    instruments: BTreeMap<String, (String, bool, bool)>,
}

fn attrs<'a>(it: impl Iterator<Item = &'a KeyValue>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = it
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect();
    v.sort();
    v
}

fn collect(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> Collected {
    exporter.reset();
    provider.force_flush().unwrap();
    let mut points = Points::new();
    let mut instruments = BTreeMap::new();
    for rm in exporter.get_finished_metrics().unwrap() {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                let name = m.name().to_owned();
                let mut put = |a: Vec<(String, String)>, v: f64| {
                    points.insert((name.clone(), a), v);
                };
                let (sum, histogram) = match m.data() {
                    AggregatedMetrics::U64(MetricData::Sum(s)) => {
                        for p in s.data_points() {
                            put(attrs(p.attributes()), p.value() as f64);
                        }
                        (s.is_monotonic(), false)
                    }
                    AggregatedMetrics::F64(MetricData::Gauge(g)) => {
                        for p in g.data_points() {
                            put(attrs(p.attributes()), p.value());
                        }
                        (false, false)
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            put(attrs(p.attributes()), p.count() as f64);
                        }
                        (false, true)
                    }
                    other => panic!("{name}: unexpected {other:?}"),
                };
                instruments.insert(name, (m.unit().to_owned(), sum, histogram));
            }
        }
    }
    Collected {
        points,
        instruments,
    }
}

fn point(c: &Collected, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut l: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.sort();
    *c.points
        .get(&(name.to_owned(), l.clone()))
        .unwrap_or_else(|| panic!("no {name}{l:?} in {:?}", c.points.keys()))
}

fn setup() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporterBuilder::new()
        .with_temporality(Temporality::Cumulative)
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    (provider, exporter)
}

#[test]
fn breaker_state_calls_and_bulkhead_figures() {
    let (provider, exporter) = setup();
    let otel = OtelMetrics::new(&provider.meter("fusebox"));
    let mut registry = Registry::default();
    let prom = Metrics::new(&mut registry);
    let config = FuseboxConfig::from_toml(
        "[breakers.db]\nconsecutive_failures = 2\n\
         [breakers.db.tags]\nservice = \"orders\"\n\
         [bulkheads.reviews]\nmax_concurrent = 2\n",
    )
    .unwrap();
    let fusebox = Fusebox::builder()
        .config(config)
        .observer(otel.clone())
        .observer(prom)
        .build()
        .unwrap();

    let db = fusebox.breaker("db");
    for _ in 0..3 {
        db.call(|| Ok::<_, std::io::Error>(())).unwrap();
    }
    for _ in 0..2 {
        let _ = db.call(|| Err::<(), _>(std::io::Error::other("down")));
    }
    assert!(db.call(|| Ok::<_, std::io::Error>(())).is_err());
    let reviews = fusebox.bulkhead("reviews");
    let _slot = reviews.try_acquire().unwrap();

    let c = collect(&provider, &exporter);
    let db_ = [("name", "db")];
    let calls = |outcome| point(&c, "fusebox_calls", &[("name", "db"), ("outcome", outcome)]);
    assert_eq!(
        (calls("success"), calls("failure"), calls("rejected")),
        (3.0, 2.0, 1.0)
    );
    let state = |s| point(&c, "fusebox_circuit_state", &[("name", "db"), ("state", s)]);
    assert_eq!((state("open"), state("closed")), (1.0, 0.0));
    assert_eq!(
        point(
            &c,
            "fusebox_transitions",
            &[("name", "db"), ("from", "closed"), ("to", "open")]
        ),
        1.0
    );
    assert_eq!(
        point(
            &c,
            "fusebox_transitions",
            &[("name", "db"), ("from", "half_open"), ("to", "closed")]
        ),
        0.0
    );
    assert_eq!(point(&c, "fusebox_call_duration", &db_), 5.0);
    assert_eq!(c.instruments["fusebox_call_duration"].0, "s");
    assert_eq!(
        point(
            &c,
            "fusebox_breaker_info",
            &[("name", "db"), ("service", "orders")]
        ),
        1.0
    );
    assert_eq!(
        point(&c, "fusebox_bulkhead_in_use", &[("name", "reviews")]),
        1.0
    );
    assert_eq!(
        point(&c, "fusebox_bulkhead_limit", &[("name", "reviews")]),
        2.0
    );
    assert!(
        c.instruments["fusebox_bulkhead_rejections"].1,
        "a counter figure is a sum"
    );
    assert_eq!(
        point(
            &c,
            "fusebox_policy_mode",
            &[
                ("name", "reviews"),
                ("policy", "bulkhead"),
                ("mode", "enforce")
            ]
        ),
        1.0
    );

    // Read at collection time: the slot given back, the breaker reset.
    drop(_slot);
    fusebox.reset("db").unwrap();
    let c = collect(&provider, &exporter);
    assert_eq!(
        point(&c, "fusebox_bulkhead_in_use", &[("name", "reviews")]),
        0.0
    );
    assert_eq!(
        point(
            &c,
            "fusebox_circuit_state",
            &[("name", "db"), ("state", "closed")]
        ),
        1.0
    );

    // The names the Prometheus exporters derive (a counter's `_total`,
    // unit `s` as `_seconds`) are the Prometheus observer's families.
    let families: BTreeSet<String> = encode_text(&registry)
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect();
    let derived: BTreeSet<String> = c
        .instruments
        .iter()
        .map(|(name, (unit, _, _))| match unit.as_str() {
            "s" => format!("{name}_seconds"),
            _ => name.clone(),
        })
        .collect();
    let extra: Vec<&String> = derived.difference(&families).collect();
    assert!(extra.is_empty(), "not Prometheus families: {extra:?}");
    for f in [
        "fusebox_calls",
        "fusebox_call_duration_seconds",
        "fusebox_circuit_state",
        "fusebox_bulkhead_in_use",
        "fusebox_bulkhead_rejections",
    ] {
        assert!(derived.contains(f), "{f}");
    }
}

#[test]
fn names_past_the_limit_add_up_under_other() {
    let (provider, exporter) = setup();
    let otel = OtelMetrics::with_max_names(&provider.meter("fusebox"), 1);
    let a = otel.build("a", CircuitBreaker::builder()).unwrap();
    let b = otel.build("b", CircuitBreaker::builder()).unwrap();
    let c = otel.build("c", CircuitBreaker::builder()).unwrap();
    for breaker in [&a, &b, &c] {
        breaker.call(|| Ok::<_, std::io::Error>(())).unwrap();
    }
    c.force_open();
    otel.track_bulkhead("d", &fusebox::Bulkhead::new(2));
    otel.track_bulkhead("e", &fusebox::Bulkhead::new(3));
    let got = collect(&provider, &exporter);
    let calls = |n| {
        point(
            &got,
            "fusebox_calls",
            &[("name", n), ("outcome", "success")],
        )
    };
    assert_eq!((calls("a"), calls("other")), (1.0, 2.0));
    let state = |s| {
        point(
            &got,
            "fusebox_circuit_state",
            &[("name", "other"), ("state", s)],
        )
    };
    assert_eq!((state("closed"), state("forced_open")), (1.0, 1.0));
    assert_eq!(
        point(&got, "fusebox_bulkhead_limit", &[("name", "other")]),
        5.0
    );
    let names: BTreeSet<&str> = got
        .points
        .keys()
        .flat_map(|(_, l)| {
            l.iter()
                .filter(|(k, _)| k == "name")
                .map(|(_, v)| v.as_str())
        })
        .collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["a", "other"]);
}

/// `series{sorted labels}` -> value, for every `fusebox_` sample line, without
/// the OpenTelemetry exporter's scope labels.
fn parse_text(text: &str) -> BTreeMap<String, f64> {
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
                let v = match (k, v.parse::<f64>()) {
                    ("le", Ok(b)) => format!("{b}"),
                    _ => v.to_owned(),
                };
                (k.to_owned(), v)
            })
            .filter(|(k, _)| !k.starts_with("otel_scope_"))
            .collect();
        pairs.sort();
        let labels: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        out.insert(
            format!("{name}{{{}}}", labels.join(",")),
            value.parse().expect("a number"),
        );
    }
    out
}

#[test]
fn through_the_prometheus_exporter_the_names_of_the_prometheus_observer() {
    use prometheus::{Encoder, TextEncoder};
    let otel_registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(otel_registry.clone())
        .without_target_info()
        .build()
        .unwrap();
    let provider = SdkMeterProvider::builder().with_reader(exporter).build();
    let otel = OtelMetrics::new(&provider.meter("fusebox"));
    let mut registry = Registry::default();
    let prom = Metrics::new(&mut registry);
    let config = FuseboxConfig::from_toml(
        "[breakers.db]\nconsecutive_failures = 2\n\
         [breakers.db.tags]\nservice = \"orders\"\n\
         [bulkheads.reviews]\nmax_concurrent = 1\n",
    )
    .unwrap();
    let fusebox = Fusebox::builder()
        .config(config)
        .observer(otel.clone())
        .observer(prom.clone())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    db.call(|| Ok::<_, std::io::Error>(())).unwrap();
    for _ in 0..2 {
        let _ = db.call(|| Err::<(), _>(std::io::Error::other("down")));
    }
    assert!(db.call(|| Ok::<_, std::io::Error>(())).is_err());
    fusebox.breaker("cache").force_open();
    let reviews = fusebox.bulkhead("reviews");
    let _slot = reviews.try_acquire().unwrap();
    assert!(reviews.try_acquire().is_err());
    let stats = fusebox::PolicyStats::new();
    prom.track_stats("search", &stats, None);
    otel.track_stats("search", &stats, None);
    let p = fusebox::Pipeline::builder()
        .fallback_value(0)
        .stats(stats)
        .build();
    let _ = p.call(|| Err::<u8, _>(std::io::Error::other("down")));

    let mut text = Vec::new();
    TextEncoder::new()
        .encode(&otel_registry.gather(), &mut text)
        .unwrap();
    let from_otel = parse_text(&String::from_utf8(text).unwrap());
    // A breaker with no call yet has no duration histogram point in
    // OpenTelemetry; prometheus-client shows it empty.
    let mut from_prom = parse_text(&encode_text(&registry));
    from_prom
        .retain(|k, _| !(k.starts_with("fusebox_call_duration") && k.contains("name=\"cache\"")));
    let keys = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&from_prom), keys(&from_otel), "the same series");
    for (series, v) in &from_prom {
        let w = from_otel[series];
        if series.contains("_sum{") {
            assert!((v - w).abs() < 1e-6, "{series}: {v} vs {w}");
        } else {
            assert_eq!(*v, w, "{series}");
        }
    }
    assert_eq!(
        from_otel[r#"fusebox_calls_total{name="db",outcome="failure"}"#],
        2.0
    );
    assert_eq!(
        from_otel[r#"fusebox_circuit_state{name="db",state="open"}"#],
        1.0
    );
    assert_eq!(
        from_otel[r#"fusebox_bulkhead_rejections_total{name="reviews"}"#],
        1.0
    );
}
