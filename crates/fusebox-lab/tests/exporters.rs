//! One real-time lab run observed by fusebox's three metrics exporters at
//! once: prometheus-client ([`Metrics`]), OpenTelemetry ([`OtelMetrics`],
//! through the SDK's Prometheus exporter) and the `metrics` facade
//! ([`MetricsFacade`], through metrics-exporter-prometheus), each served at
//! its own path and scraped by a real Prometheus as its own job. Every
//! `fusebox_` series has the same value in the three jobs, and the breaker's
//! state and transitions are the run's.
//!
//! Needs Debian's `prometheus` (ignored unless run with `--ignored`; then
//! skips with one line without it, unless `FUSEBOX_REQUIRE_PROMETHEUS=1`).
//! About 10 s of real time.

mod served;

use axum::http::header;
use axum::routing::get;
use axum::Router;
use fusebox::facade::{MetricsFacade, DURATION_BUCKETS};
use fusebox::metrics::Metrics;
use fusebox::otel::OtelMetrics;
use fusebox_lab::cli::serve::{Server, OPENMETRICS};
use fusebox_lab::engine::{self, Mode};
use fusebox_lab::guard::Breakers;
use fusebox_lab::scenario::Scenario;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use served::Prometheus;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const SCENARIO: &str = r#"
name = "exporters"
duration = "4s"
rate = 50.0
workers = 4
queue = 0
window = "1s"

[downstream]
latency = "2ms"
[[downstream.faults]]
from = "1s"
until = "2s"
latency = "2ms"
outcome = "error"

[[strategy]]
name = "fusebox"
kind = "fusebox"
failure_rate = 0.5
count_window = 20
min_calls = 10
open_for = "500ms"
max_concurrent = 4
"#;

/// The jobs, each an exporter's path.
const JOBS: [(&str, &str); 3] = [
    ("prometheus_client", "/prometheus-client"),
    ("opentelemetry", "/opentelemetry"),
    ("facade", "/facade"),
];

/// `name{sorted labels}` -> value for every `fusebox_` series `job` has now,
/// without the labels the scrape and the OpenTelemetry exporter add.
fn series(prometheus: &Prometheus, job: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for sample in prometheus.query(&format!("{{__name__=~\"fusebox_.+\",job=\"{job}\"}}")) {
        let metric = sample["metric"].as_object().expect("a metric");
        let name = metric["__name__"].as_str().expect("a name");
        let mut labels: Vec<String> = metric
            .iter()
            .filter(|(k, _)| {
                !matches!(k.as_str(), "__name__" | "job" | "instance")
                    && !k.starts_with("otel_scope_")
            })
            .map(|(k, v)| {
                let v = v.as_str().expect("a label value");
                // Bucket bounds: "1" and "1.0" are the same bound.
                let v = match (k.as_str(), v.parse::<f64>()) {
                    ("le", Ok(b)) => format!("{b}"),
                    _ => v.to_owned(),
                };
                format!("{k}={v:?}")
            })
            .collect();
        labels.sort();
        let value = sample["value"][1].as_str().expect("a value");
        out.insert(
            format!("{name}{{{}}}", labels.join(",")),
            value.parse().expect("a number"),
        );
    }
    out
}

#[test]
#[ignore = "needs Prometheus: run with -- --ignored"]
fn three_exporters_of_one_run_agree_in_a_real_prometheus() {
    let port = served::free_port();
    let target = format!("127.0.0.1:{port}");
    let jobs: Vec<(&str, String, &str)> = JOBS
        .iter()
        .map(|(job, path)| (*job, target.clone(), *path))
        .collect();
    let Some(prometheus) = Prometheus::start("exporters", &jobs) else {
        return;
    };

    // The three observers on one registry.
    let mut client_registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::new(&mut client_registry);
    let otel_registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(otel_registry.clone())
        .without_target_info()
        .build()
        .unwrap();
    let provider = SdkMeterProvider::builder().with_reader(exporter).build();
    let otel = OtelMetrics::new(&provider.meter("fusebox"));
    // The lab's workers are threads of their own: a global recorder.
    let facade_handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("fusebox_call_duration_seconds".into()),
            &DURATION_BUCKETS,
        )
        .unwrap()
        .install_recorder()
        .expect("the test binary's one global recorder");
    let facade = MetricsFacade::new();
    let sampled = facade.clone();
    let breakers = Breakers::shared(|b| b.observer(metrics).observer(otel).observer(facade));

    let client_registry = Arc::new(client_registry);
    let router = Router::new()
        .route(
            JOBS[0].1,
            get(move || {
                let registry = Arc::clone(&client_registry);
                async move {
                    let mut text = String::new();
                    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
                    ([(header::CONTENT_TYPE, OPENMETRICS)], text)
                }
            }),
        )
        .route(
            JOBS[1].1,
            get(move || {
                let registry = otel_registry.clone();
                async move {
                    use prometheus::Encoder;
                    let mut text = Vec::new();
                    prometheus::TextEncoder::new()
                        .encode(&registry.gather(), &mut text)
                        .unwrap();
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        String::from_utf8(text).unwrap(),
                    )
                }
            }),
        )
        .route(
            JOBS[2].1,
            get(move || {
                let handle = facade_handle.clone();
                // The facade writes what it reads from snapshots (rates,
                // thresholds, info, policy figures) when sampled: right
                // before each render.
                sampled.sample();
                async move {
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        handle.render(),
                    )
                }
            }),
        );
    let server = Server::start(target.parse().unwrap(), router).expect("serve the exporters");
    for (job, _) in JOBS {
        prometheus.wait_scraping(job);
    }

    let scenario = Scenario::parse("exporters.toml", SCENARIO).expect("the scenario");
    let run = engine::run(
        &scenario,
        &scenario.strategies[0],
        Mode::Real,
        Some(&breakers),
    )
    .expect("a real-mode run");
    let opened = run
        .transitions
        .iter()
        .filter(|t| (t.from, t.to) == ("closed", "open"))
        .count();
    assert!(
        opened >= 1,
        "the fault opens the breaker: {:?}",
        run.transitions
    );
    assert_eq!(run.transitions.last().map(|t| t.to), Some("closed"));

    // A scrape of every job after the run (scrapes every second; the
    // values no longer move).
    std::thread::sleep(Duration::from_secs(3));
    let [client, otel, facade] = JOBS.map(|(job, _)| series(&prometheus, job));
    server.stop();

    let breaker = "exporters/fusebox";
    let state = format!("fusebox_circuit_state{{name={breaker:?},state=\"closed\"}}");
    let open = format!("fusebox_transitions_total{{from=\"closed\",name={breaker:?},to=\"open\"}}");
    for (job, got) in [
        ("prometheus_client", &client),
        ("opentelemetry", &otel),
        ("facade", &facade),
    ] {
        assert_eq!(got.get(&state), Some(&1.0), "{job}: {state} in {got:#?}");
        assert_eq!(
            got.get(&open),
            Some(&(opened as f64)),
            "{job}: {open} in {got:#?}"
        );
    }
    let keys = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
    for (job, other) in [("opentelemetry", &otel), ("facade", &facade)] {
        assert_eq!(
            keys(&client),
            keys(other),
            "{job}: the same series as prometheus-client"
        );
        for (series, v) in &client {
            let w = other[series];
            if series.contains("_sum{") {
                assert!((v - w).abs() < 1e-6, "{job}: {series}: {v} vs {w}");
            } else {
                assert_eq!(*v, w, "{job}: {series}");
            }
        }
    }
}
