//! Every query of `ops/grafana/fusebox.json` and every alert expression of
//! `ops/alerts.yml`, evaluated by a real Prometheus scraping `fusebox-lab run
//! --serve` through the faults of `scenarios/dashboard.toml`: each returns
//! series, with the values the faults must produce.
//!
//! Needs Debian's `prometheus` (ignored unless run with `--ignored`; then
//! skips with one line without it, unless
//! `FUSEBOX_REQUIRE_PROMETHEUS=1`). About 35 s of real time: the lab runs
//! and Prometheus scrapes in real time.

mod served;

use reqwest::blocking::Client;
use serde_json::Value;
use served::browser::OPS;
use served::{free_port, unix_now, Lab, Prometheus, BREAKER};
use std::collections::BTreeMap;
use std::time::Duration;

/// One series of a range query: its labels and its `(time, value)` points.
#[derive(Debug)]
struct Series {
    labels: BTreeMap<String, String>,
    points: Vec<(f64, f64)>,
}

/// A query's series, with what the checks ask of them.
#[derive(Debug)]
struct Result {
    what: String,
    series: Vec<Series>,
}

/// The test's timeline, in Unix seconds: the run's start, its first fault
/// (and when it was over), the end of its last, the end of the test.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    start: f64,
    fault: f64,
    recovered: f64,
    last_fault_over: f64,
    end: f64,
}

impl Timeline {
    /// The scenario's times (seconds since the run's start) from the
    /// lab's start, read from the scenario file itself.
    fn of(started: f64, end: f64) -> Timeline {
        let scenario =
            fusebox_lab::scenario::Scenario::load(std::path::Path::new(served::SCENARIO))
                .expect("the shipped scenario loads");
        let faults = &scenario.downstream.faults;
        let at = |d: Duration| started + d.as_secs_f64();
        Timeline {
            start: started,
            fault: at(faults[0].from),
            recovered: at(faults[0].until),
            last_fault_over: at(faults[faults.len() - 1].until),
            end,
        }
    }
}

impl Result {
    /// The points of the series whose labels include all of `matching`,
    /// between `from` and `to` (inclusive).
    fn values(&self, matching: &[(&str, &str)], from: f64, to: f64) -> Vec<f64> {
        let series: Vec<&Series> = self
            .series
            .iter()
            .filter(|s| {
                matching
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(t, v)| *t >= from && *t <= to && !v.is_nan())
            .map(|(_, v)| *v)
            .collect()
    }

    fn max(&self, matching: &[(&str, &str)], from: f64, to: f64) -> f64 {
        let v = self.values(matching, from, to);
        assert!(
            !v.is_empty(),
            "{}: no point for {matching:?} in [{from}, {to}]: {self:#?}",
            self.what
        );
        v.into_iter().fold(f64::NEG_INFINITY, f64::max)
    }

    fn last(&self, matching: &[(&str, &str)], t: &Timeline) -> f64 {
        let v = self.values(matching, t.end - 3.0, t.end);
        *v.last()
            .unwrap_or_else(|| panic!("{}: no point for {matching:?} at the end", self.what))
    }

    fn all(&self, matching: &[(&str, &str)], from: f64, to: f64, ok: impl Fn(f64) -> bool) -> bool {
        let v = self.values(matching, from, to);
        !v.is_empty() && v.into_iter().all(ok)
    }
}

/// What each panel's and alert's result must show: one entry per panel
/// title and alert name, so a panel added without a check fails the test.
fn check(key: &str, r: &Result, t: &Timeline) {
    let healthy = (t.start + 2.0, t.fault - 1.0);
    let fault = (t.fault, t.recovered + 1.0);
    let b = [("name", BREAKER)];
    let s = [("service", "dashboard")];
    match key {
        "Breakers open now" => {
            assert!(r.max(&[], fault.0, fault.1) >= 1.0, "open: {r:#?}");
            assert!(r.all(&[], healthy.0, healthy.1, |v| v == 0.0), "{r:#?}");
            assert_eq!(r.last(&[], t), 0.0, "all closed at the end");
        }
        "Breaker state" => {
            let max = r.max(&b, fault.0, fault.1);
            assert!((1.0..=2.0).contains(&max), "open or half open: {max}");
            assert!(
                r.all(&b, healthy.0, healthy.1, |v| v == 0.0),
                "closed before: {r:#?}"
            );
            assert_eq!(r.last(&b, t), 0.0, "closed again at the end");
        }
        "Calls by outcome" => {
            let outcome = |o| [("name", BREAKER), ("outcome", o)];
            // 50 calls a second, all successes while healthy.
            assert!(
                r.max(&outcome("success"), healthy.0, healthy.1) > 25.0,
                "{r:#?}"
            );
            assert!(r.max(&outcome("failure"), fault.0, fault.1) > 0.0, "{r:#?}");
            assert!(
                r.max(&outcome("rejected"), fault.0, fault.1) > 0.0,
                "{r:#?}"
            );
        }
        "Rejections" => {
            assert!(r.max(&b, fault.0, fault.1) > 0.0);
            assert!(r.all(&b, healthy.0, healthy.1, |v| v == 0.0), "{r:#?}");
        }
        "Failure rate vs threshold/A" => {
            assert!(
                r.max(&b, fault.0, fault.1) >= 0.5,
                "crosses its threshold: {r:#?}"
            );
            assert!(r.all(&b, healthy.0, healthy.1, |v| v == 0.0), "{r:#?}");
        }
        "Failure rate vs threshold/B" | "Slow-call rate vs threshold/B" => {
            assert!(r.all(&b, t.start, t.end, |v| v == 0.5), "{r:#?}");
        }
        "Slow-call rate vs threshold/A" => {
            assert!(r.max(&b, fault.0, fault.1) >= 0.5, "{r:#?}");
            // Under the threshold before the fault (a loaded machine can
            // stretch a 2 ms call past 20 ms now and then).
            assert!(r.all(&b, healthy.0, healthy.1, |v| v < 0.5), "{r:#?}");
        }
        "Transitions" => {
            let trip = [("name", BREAKER), ("from", "closed"), ("to", "open")];
            assert!(r.max(&trip, fault.0 - 1.0, fault.1) > 0.0, "{r:#?}");
            assert!(r.all(&trip, healthy.0, healthy.1, |v| v == 0.0));
        }
        "Time open (share of the last 5 minutes)" => {
            assert!(r.max(&b, fault.0, t.end) > 0.0);
            assert!(r.all(&b, healthy.0, healthy.1, |v| v == 0.0));
        }
        "Call duration p99" => {
            // Quick (2 ms) before the fault: the median point, not the
            // maximum, since a loaded machine can stretch a few sleeps.
            let mut before = r.values(&b, healthy.0, healthy.1);
            assert!(!before.is_empty(), "{r:#?}");
            before.sort_by(f64::total_cmp);
            assert!(before[before.len() / 2] < 0.025, "quick before: {r:#?}");
            assert!(
                r.max(&b, fault.0, fault.1) >= 0.025,
                "30 ms calls during the fault: {r:#?}"
            );
        }
        "Services with every breaker open" => {
            assert_eq!(r.max(&s, fault.0, fault.1), 1.0);
            assert!(r.all(&s, healthy.0, healthy.1, |v| v == 0.0));
            assert_eq!(r.last(&s, t), 0.0);
        }
        "Bulkhead slots in use vs limit/A" => {
            assert!(
                r.all(&b, t.start, t.end, |v| (0.0..=8.0).contains(&v)),
                "{r:#?}"
            );
        }
        "Bulkhead slots in use vs limit/B" => {
            assert!(r.all(&b, t.start, t.end, |v| v == 8.0), "{r:#?}");
        }
        "Bulkhead slots in use vs limit/C" | "Bulkhead rejections" => {
            // As many slots as workers: no call waits for, nor is refused, one.
            assert!(r.all(&b, t.start, t.end, |v| v == 0.0), "{r:#?}");
        }
        "alert FuseboxBreakerOpenTooLong" => {
            assert_eq!(r.max(&b, fault.0, fault.1), 1.0, "true while open");
            assert!(
                r.values(&b, healthy.0, healthy.1).is_empty(),
                "false before the fault"
            );
        }
        "alert FuseboxBreakerFlapping" => {
            assert!(
                r.max(&b, t.last_fault_over + 1.0, t.end) > 5.0,
                "true once the faults are over: {r:#?}"
            );
            assert!(r.values(&b, healthy.0, healthy.1).is_empty());
        }
        "alert FuseboxServiceDown" => {
            assert_eq!(r.max(&s, fault.0, fault.1), 1.0);
            assert!(r.values(&s, healthy.0, healthy.1).is_empty());
        }
        other => panic!("no check for {other:?}: add one to this test"),
    }
}

/// `(key, expr)` of every panel query (key `title`, or `title/refId` for a
/// panel with several) and every alert (key `alert <name>`).
fn expressions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(format!("{OPS}/grafana/fusebox.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("ops/grafana/fusebox.json is JSON");
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            continue;
        }
        let title = panel["title"].as_str().unwrap();
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "panel {title:?} has no query");
        for target in targets {
            let key = if targets.len() == 1 {
                title.to_owned()
            } else {
                format!("{title}/{}", target["refId"].as_str().unwrap())
            };
            out.push((key, target["expr"].as_str().unwrap().to_owned()));
        }
    }
    let text = std::fs::read_to_string(format!("{OPS}/alerts.yml")).unwrap();
    let alerts: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).expect("ops/alerts.yml is YAML");
    for group in alerts["groups"].as_sequence().unwrap() {
        for rule in group["rules"].as_sequence().unwrap() {
            out.push((
                format!("alert {}", rule["alert"].as_str().unwrap()),
                rule["expr"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// The dashboard's template variables: `(name, label, series selector)` of
/// each `label_values(selector, label)` query.
fn variables() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(format!("{OPS}/grafana/fusebox.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let query = v["query"].as_str().unwrap();
            let args = query
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .unwrap_or_else(|| panic!("variable {}: not label_values(..): {query}", v["name"]));
            let (selector, label) = args.rsplit_once(',').unwrap();
            (
                v["name"].as_str().unwrap().to_owned(),
                label.trim().to_owned(),
                substitute(selector.trim()),
            )
        })
        .collect()
}

/// Grafana's variables as "All" and its rate interval as four scrapes.
fn substitute(expr: &str) -> String {
    let out = expr
        .replace("$__rate_interval", "4s")
        .replace("\"$name\"", "\".*\"")
        .replace("\"$service\"", "\".*\"")
        .replace("\"$bulkhead\"", "\".*\"");
    assert!(
        !out.contains('$'),
        "a variable the test does not know in {expr}"
    );
    out
}

/// GET `url` as JSON (`null` when it fails).
fn get_json(client: &Client, url: reqwest::Url) -> Value {
    let text = client
        .get(url)
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn query_range(client: &Client, base: &str, expr: &str, t: &Timeline) -> Vec<Series> {
    let url = reqwest::Url::parse_with_params(
        &format!("{base}/api/v1/query_range"),
        &[
            ("query", expr),
            ("start", &format!("{:.3}", t.start)),
            ("end", &format!("{:.3}", t.end)),
            ("step", "1"),
        ],
    )
    .unwrap();
    let body = client.get(url).send().and_then(|r| r.text()).unwrap();
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["status"], "success", "{expr}: {body}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Series {
            labels: s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect(),
            points: s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_f64().unwrap(),
                        p[1].as_str().unwrap().parse().unwrap(),
                    )
                })
                .collect(),
        })
        .collect()
}

#[test]
#[ignore = "needs Prometheus: run with -- --ignored"]
fn every_panel_and_alert_expression_returns_the_expected_series() {
    let exprs = expressions();
    // Prometheus first, scraping the lab's address before the lab is there
    // (down): once its scrape loop runs, the lab starts, and the first
    // scrape comes within a second, before the first fault.
    let lab_port = free_port();
    let Some(prometheus) = Prometheus::start(
        "dashboard_grafana",
        &[("fusebox", format!("127.0.0.1:{lab_port}"), "/metrics")],
    ) else {
        return;
    };
    prometheus.wait_scraping("fusebox");
    let base = prometheus.base.clone();
    let client = Client::new();

    let lab = Lab::start(format!("127.0.0.1:{lab_port}").parse().unwrap(), None);
    lab.wait_done(Duration::from_secs(90));
    // Two more scrapes of the closed breaker.
    std::thread::sleep(Duration::from_secs(3));
    let t = Timeline::of(lab.started, unix_now());

    let mut checked = Vec::new();
    for (key, expr) in &exprs {
        let series = query_range(&client, &base, &substitute(expr), &t);
        let result = Result {
            what: format!("{key}: {expr}"),
            series,
        };
        assert!(
            result.series.iter().any(|s| !s.points.is_empty()),
            "{key} returns nothing: {expr}"
        );
        check(key, &result, &t);
        checked.push(key.as_str());
    }
    // The template variables list what the panels filter on.
    for (variable, label, selector) in variables() {
        let url = reqwest::Url::parse_with_params(
            &format!("{base}/api/v1/label/{label}/values"),
            &[("match[]", selector.as_str())],
        )
        .unwrap();
        let v = get_json(&client, url);
        let values: Vec<&str> = v["data"]
            .as_array()
            .unwrap_or_else(|| panic!("variable {variable}: {v}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let expected: &[&str] = match variable.as_str() {
            "service" => &["dashboard"],
            "name" | "bulkhead" => &[BREAKER],
            other => panic!("no check for variable {other:?}: add one to this test"),
        };
        assert_eq!(values, expected, "variable {variable}");
    }
    eprintln!(
        "checked {} expressions and the variables: {}",
        checked.len(),
        checked.join(", ")
    );
}
