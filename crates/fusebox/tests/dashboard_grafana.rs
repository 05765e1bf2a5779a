//! Every query of `ops/grafana/fusebox.json` and every alert expression of
//! `ops/alerts.yml`, evaluated by a real Prometheus scraping breakers through
//! a fault: each returns series, with the values the fault must produce.
//!
//! Needs Debian's `prometheus` (skips with one line without it, unless
//! `FUSEBOX_REQUIRE_PROMETHEUS=1`). About 25 s of real time: Prometheus
//! scrapes real time.
#![cfg(all(feature = "dashboard", feature = "config"))]

mod dashboard_support;

use dashboard_support::{demo, external, out_dir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ops");

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

/// The test's timeline, in Unix seconds.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    start: f64,
    fault: f64,
    recovered: f64,
    end: f64,
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
    let p = [("name", "payments")];
    match key {
        "Breakers open now" => {
            assert!(
                r.max(&[], fault.0, fault.1) >= 2.0,
                "payments and search open: {r:#?}"
            );
            assert_eq!(r.last(&[], t), 0.0, "all closed at the end");
        }
        "Breaker state" => {
            let max = r.max(&p, fault.0, fault.1);
            assert!(
                (1.0..=2.0).contains(&max),
                "payments open or half open: {max}"
            );
            assert!(
                r.all(&p, healthy.0, healthy.1, |v| v == 0.0),
                "closed before: {r:#?}"
            );
            assert_eq!(r.last(&p, t), 0.0, "closed again at the end");
        }
        "Calls by outcome" => {
            assert!(
                r.max(
                    &[("name", "payments"), ("outcome", "success")],
                    healthy.0,
                    healthy.1
                ) > 10.0
            );
            assert!(
                r.max(
                    &[("name", "payments"), ("outcome", "failure")],
                    fault.0,
                    fault.1
                ) > 0.0
            );
            assert!(
                r.max(
                    &[("name", "payments"), ("outcome", "rejected")],
                    fault.0,
                    fault.1
                ) > 0.0
            );
        }
        "Rejections" => {
            assert!(r.max(&p, fault.0, fault.1) > 0.0);
            assert!(r.all(&p, healthy.0, healthy.1, |v| v == 0.0), "{r:#?}");
        }
        "Failure rate vs threshold/A" => {
            assert!(
                r.max(&p, fault.0, fault.1) >= 0.5,
                "crosses its threshold: {r:#?}"
            );
            assert!(r.all(&p, healthy.0, healthy.1, |v| v == 0.0));
        }
        "Failure rate vs threshold/B" => {
            assert!(r.all(&p, t.start, t.end, |v| v == 0.5), "{r:#?}");
            assert!(
                r.values(&[("name", "inventory")], t.start, t.end)
                    .is_empty(),
                "no threshold for a consecutive-failures breaker"
            );
        }
        "Slow-call rate vs threshold/A" => {
            assert!(
                r.max(&[("name", "search")], fault.0, fault.1) >= 0.5,
                "{r:#?}"
            );
        }
        "Slow-call rate vs threshold/B" => {
            assert!(
                r.all(&[("name", "search")], t.start, t.end, |v| v == 0.5),
                "{r:#?}"
            );
        }
        "Transitions" => {
            let trip = [("name", "payments"), ("from", "closed"), ("to", "open")];
            assert!(r.max(&trip, fault.0 - 1.0, fault.1) > 0.0, "{r:#?}");
            assert!(r.all(&trip, healthy.0, healthy.1, |v| v == 0.0));
        }
        "Time open (share of the last 5 minutes)" => {
            assert!(r.max(&p, fault.0, t.end) > 0.0);
            assert!(r.all(&p, healthy.0, healthy.1, |v| v == 0.0));
        }
        "Call duration p99" => {
            let s = [("name", "search")];
            // Quick (2 ms) before the fault: the median point, not the
            // maximum, since a loaded machine can stretch a few sleeps.
            let mut before = r.values(&s, healthy.0, healthy.1);
            assert!(!before.is_empty(), "{r:#?}");
            before.sort_by(f64::total_cmp);
            assert!(before[before.len() / 2] < 0.025, "quick before: {r:#?}");
            assert!(
                r.max(&s, fault.0, fault.1) >= 0.025,
                "30 ms calls during the fault: {r:#?}"
            );
        }
        "Services with every breaker open" => {
            let s = [("service", "payments")];
            assert_eq!(r.max(&s, fault.0, fault.1), 1.0);
            assert!(r.all(&s, healthy.0, healthy.1, |v| v == 0.0));
            assert_eq!(r.last(&s, t), 0.0);
        }
        "Bulkhead slots in use vs limit/A" => {
            assert!(
                r.all(&[("name", "search-pool")], t.start, t.end, |v| (0.0..=4.0)
                    .contains(&v))
            );
        }
        "Bulkhead slots in use vs limit/B" => {
            assert!(r.all(&[("name", "search-pool")], t.start, t.end, |v| v == 4.0));
        }
        "Bulkhead slots in use vs limit/C" | "Bulkhead rejections" => {
            // One caller never waits for, nor is refused, a slot of four.
            assert!(
                r.all(&[("name", "search-pool")], t.start, t.end, |v| v == 0.0),
                "{r:#?}"
            );
        }
        "alert FuseboxBreakerOpenTooLong" => {
            assert_eq!(r.max(&p, fault.0, fault.1), 1.0, "true while open");
            assert!(
                r.values(&p, healthy.0, healthy.1).is_empty(),
                "false before the fault"
            );
        }
        "alert FuseboxBreakerFlapping" => {
            assert!(
                r.max(&[("name", "inventory")], fault.0, t.end) > 5.0,
                "{r:#?}"
            );
            assert!(r
                .values(&[("name", "inventory")], healthy.0, healthy.1)
                .is_empty());
        }
        "alert FuseboxServiceDown" => {
            let s = [("service", "payments")];
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

trait JsonOrNull {
    async fn json_or_null(self) -> Value;
}

impl JsonOrNull for reqwest::Response {
    async fn json_or_null(self) -> Value {
        let text = self.text().await.unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

/// A port free on loopback right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

async fn query_range(
    client: &reqwest::Client,
    base: &str,
    expr: &str,
    t: &Timeline,
) -> Vec<Series> {
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
    let body = client.get(url).send().await.unwrap().text().await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_panel_and_alert_expression_returns_the_expected_series() {
    let exprs = expressions();
    let Some(prometheus) = external(
        "prometheus",
        "FUSEBOX_REQUIRE_PROMETHEUS",
        "Debian package `prometheus`",
    ) else {
        return;
    };
    let demo = demo::start(0, None, Duration::from_millis(500))
        .await
        .unwrap();
    let dir = out_dir("dashboard_grafana");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: fusebox\n    static_configs:\n      - targets: ['{}']\n",
            demo.addr
        ),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _server = Prometheus(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..100 {
        if let Ok(r) = client.get(format!("{base}/-/ready")).send().await {
            if r.status().is_success() {
                ready = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        ready,
        "prometheus not ready; see {}",
        dir.join("prometheus.log").display()
    );
    // Targets reach the scrape loop seconds after readiness (service
    // discovery updates are throttled): the timeline starts at the first scrape.
    let mut scraped = false;
    for _ in 0..100 {
        let url = reqwest::Url::parse_with_params(
            &format!("{base}/api/v1/query"),
            &[("query", "up{job=\"fusebox\"} == 1")],
        )
        .unwrap();
        if let Ok(r) = client.get(url).send().await {
            let v: Value = r.json_or_null().await;
            if v["data"]["result"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
            {
                scraped = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        scraped,
        "prometheus never scraped the demo; see {}",
        dir.join("prometheus.log").display()
    );

    let start = unix_now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let fault = unix_now();
    demo.fault.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let recovered = unix_now();
    demo.fault.store(false, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let t = Timeline {
        start,
        fault,
        recovered,
        end: unix_now(),
    };

    let mut checked = Vec::new();
    for (key, expr) in &exprs {
        let series = query_range(&client, &base, &substitute(expr), &t).await;
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
        let v = client.get(url).send().await.unwrap().json_or_null().await;
        let values: Vec<&str> = v["data"]
            .as_array()
            .unwrap_or_else(|| panic!("variable {variable}: {v}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let expected: &[&str] = match variable.as_str() {
            "service" | "name" => &["inventory", "payments", "search"],
            "bulkhead" => &["search-pool"],
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
