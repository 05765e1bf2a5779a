//! `run --serve`: the library's metrics of the lab's breakers over real HTTP,
//! during a run and after it.

use fusebox_lab::cli::serve::{router, Exported, Server, OPENMETRICS};
use fusebox_lab::engine::{self, Mode, Outcome};
use fusebox_lab::scenario::Scenario;
mod served;

use served::Lab;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One sample of the exposition: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses OpenMetrics text as prometheus-client writes it (comments,
/// `name{k="v",...} value` lines, `# EOF`).
fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    let mut eof = false;
    for line in text.lines() {
        if eof {
            return Err(format!("after # EOF: {line}"));
        }
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (name, labels, value) = match line.find('{') {
            Some(open) => {
                let close = line.rfind('}').ok_or("no }")?;
                let mut labels = BTreeMap::new();
                let mut rest = &line[open + 1..close];
                while !rest.is_empty() {
                    let (k, v) = rest.split_once("=\"").ok_or("no =\"")?;
                    // Label values here never contain quotes.
                    let end = v.find('"').ok_or("unterminated")?;
                    labels.insert(k.trim_start_matches(',').to_owned(), v[..end].to_owned());
                    rest = v[end + 1..].trim_start_matches(',');
                }
                (&line[..open], labels, line[close + 1..].trim())
            }
            None => {
                let (n, v) = line.split_once(' ').ok_or("no value")?;
                (n, BTreeMap::new(), v.trim())
            }
        };
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse::<f64>().map_err(|e| format!("{line}: {e}"))?,
        };
        out.push((name.to_owned(), labels, value));
    }
    if !eof {
        return Err("no # EOF".into());
    }
    Ok(out)
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples
        .iter()
        .find(|(n, l, _)| n == name && *l == want)
        .map(|s| s.2)
}

/// GET `path` over real HTTP; returns (status line, content type, body).
fn get(addr: SocketAddr, path: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(": ")?;
            k.eq_ignore_ascii_case("content-type").then_some(v)
        })
        .unwrap_or("")
        .to_owned();
    (status, content_type, body.to_owned())
}

const SCENARIO: &str = r#"
name = "serve-test"
duration = "800ms"
rate = 100.0
workers = 4
window = "200ms"

[downstream]
latency = "2ms"
[[downstream.faults]]
from = "100ms"
until = "500ms"
latency = "5ms"
outcome = "error"

[[strategy]]
name = "fusebox"
kind = "fusebox"
consecutive_failures = 3
open_for = "150ms"
half_open_probes = 1
"#;

#[test]
fn serves_metrics_over_http_during_a_real_run() {
    let exported = Exported::new();
    let server = Server::start(
        "127.0.0.1:0".parse().unwrap(),
        router(exported.clone()).unwrap(),
    )
    .unwrap();
    let addr = server.local_addr();

    let (status, _, _) = get(addr, "/nope");
    assert!(status.contains("404"), "{status}");

    let scenario = Scenario::parse("serve-test.toml", SCENARIO).unwrap();
    let name = format!("{}/{}", scenario.name, scenario.strategies[0].name);
    let breakers = exported.breakers.clone();
    let runner = std::thread::spawn(move || {
        engine::run(
            &scenario,
            &scenario.strategies[0],
            Mode::Real,
            Some(&breakers),
        )
        .unwrap()
    });

    // Scrape while the run goes on.
    let mut scrapes = Vec::new();
    while !runner.is_finished() {
        let (status, content_type, body) = get(addr, "/metrics");
        assert!(status.contains("200"), "{status}");
        assert_eq!(content_type, OPENMETRICS);
        scrapes.push(parse(&body).unwrap_or_else(|e| panic!("{e}:\n{body}")));
        std::thread::sleep(Duration::from_millis(20));
    }
    let result = runner.join().unwrap();
    let (_, _, body) = get(addr, "/metrics");
    let last = parse(&body).unwrap();

    assert!(
        scrapes.len() >= 5,
        "scraped {} times during the run",
        scrapes.len()
    );
    // Some scrape during the run saw the breaker of this run.
    let during = scrapes
        .iter()
        .filter(|s| {
            value(
                s,
                "fusebox_circuit_state",
                &[("name", &name), ("state", "closed")],
            )
            .is_some()
        })
        .count();
    assert!(
        during > 0,
        "the run's breaker was exported during the run; last scrape:\n{body}"
    );
    // Exactly one state is 1 in every scrape that has the breaker.
    for s in scrapes.iter().chain([&last]) {
        let ones: f64 = ["closed", "open", "half_open", "forced_open", "disabled"]
            .iter()
            .filter_map(|st| {
                value(
                    s,
                    "fusebox_circuit_state",
                    &[("name", &name), ("state", st)],
                )
            })
            .sum();
        assert!(ones == 0.0 || ones == 1.0, "{ones}");
    }

    // The final numbers match what the run recorded.
    let calls = |outcome: &str| {
        value(
            &last,
            "fusebox_calls_total",
            &[("name", &name), ("outcome", outcome)],
        )
        .unwrap()
    };
    let ok = result
        .calls
        .iter()
        .filter(|c| Outcome::of(c.result) == Outcome::Ok)
        .count();
    let failed = result.calls.len() - ok;
    let fast_fail = result
        .requests
        .iter()
        .filter(|r| r.outcome == Outcome::FastFail)
        .count();
    assert!(
        failed >= 3 && fast_fail > 0,
        "the fault tripped the breaker"
    );
    assert_eq!(calls("success"), ok as f64);
    assert_eq!(calls("failure"), failed as f64);
    assert_eq!(calls("rejected"), fast_fail as f64);
    let trips = result
        .transitions
        .iter()
        .filter(|t| t.from == "closed" && t.to == "open")
        .count();
    assert!(trips >= 1);
    assert_eq!(
        value(
            &last,
            "fusebox_transitions_total",
            &[("name", &name), ("from", "closed"), ("to", "open")]
        ),
        Some(trips as f64)
    );

    let (status, content_type, body) = get(addr, "/breakers");
    assert!(status.contains("200"));
    assert_eq!(content_type, "application/json");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json[0]["name"], name.as_str());
    assert!(json[0]["calls"].is_u64(), "{json}");
    drop(server);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err(),
        "stopped"
    );
}

/// The binary serving one run of [`SCENARIO`], as the README runs it:
/// started, its address read from its first line, waited for until the run
/// is over (the JSON report is written by then).
struct ServedRun {
    /// Killed when the run is dropped (after its directory is removed).
    _lab: Lab,
    addr: SocketAddr,
    report: serde_json::Value,
    dir: std::path::PathBuf,
}

impl ServedRun {
    fn start(tag: &str) -> ServedRun {
        ServedRun::of(tag, SCENARIO)
    }

    /// [`ServedRun::start`] of the scenario `text`.
    fn of(tag: &str, text: &str) -> ServedRun {
        let dir =
            std::env::temp_dir().join(format!("fusebox-lab-serve-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scenario = dir.join("serve-test.toml");
        std::fs::write(&scenario, text).unwrap();
        let json = dir.join("out.json");
        let any = "127.0.0.1:0".parse().unwrap();
        let lab = Lab::run(any, &scenario, &["--json".as_ref(), json.as_os_str()], None);
        lab.wait_done(Duration::from_secs(60));
        let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        ServedRun {
            addr: lab.addr,
            _lab: lab,
            report,
            dir,
        }
    }

    /// The fusebox strategy's figures in the JSON report.
    fn fusebox(&self) -> &serde_json::Value {
        &self.report["strategies"][0]
    }
}

impl Drop for ServedRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The binary keeps serving after the run ends: the whole run's series are
/// still there to scrape, and the live dashboard too.
#[test]
fn the_binary_keeps_serving_after_the_run() {
    let run = ServedRun::start("plain");
    let addr = run.addr;
    let (status, _, body) = get(addr, "/status");
    assert!(status.contains("200"), "{status}");
    let progress: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(progress["finished"], true, "{body}");

    let (status, content_type, body) = get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(content_type, OPENMETRICS);
    let samples = parse(&body).unwrap_or_else(|e| panic!("{e}:\n{body}"));
    let fusebox = run.fusebox();
    let name = "serve-test/fusebox";
    let calls = |outcome: &str| {
        value(
            &samples,
            "fusebox_calls_total",
            &[("name", name), ("outcome", outcome)],
        )
        .unwrap_or_else(|| panic!("no {outcome} calls:\n{body}"))
    };
    let failed = fusebox["downstream_call_failures"].as_f64().unwrap();
    assert!(failed >= 3.0, "the fault tripped the breaker");
    assert_eq!(calls("failure"), failed);
    assert_eq!(
        calls("success"),
        fusebox["downstream_calls"].as_f64().unwrap() - failed
    );
    assert_eq!(calls("rejected"), fusebox["fast_fails"].as_f64().unwrap());
    let trips = fusebox["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["from"] == "closed" && t["to"] == "open")
        .count();
    assert_eq!(
        value(
            &samples,
            "fusebox_transitions_total",
            &[("name", name), ("from", "closed"), ("to", "open")]
        ),
        Some(trips as f64)
    );
    let (_, _, body) = get(addr, "/breakers");
    let breakers: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(breakers[0]["name"], name);

    // The library's live dashboard, over the same registry.
    let (status, content_type, body) = get(addr, "/dashboard");
    assert!(status.contains("200"), "{status}");
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(body.contains("<html"), "{body}");
    let (status, _, body) = get(addr, "/dashboard/api/state");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains(name), "{body}");
}

/// A real-mode fleet sharing through Redis exports each replica's breaker
/// as `SCENARIO/STRATEGY/replica-N` (in `/breakers`, `/metrics` and the
/// dashboard), and the fleet still shares them: the report has transitions
/// the fleet made. Skipped with one line without `redis-server`, unless
/// `FUSEBOX_REQUIRE_REDIS=1`.
#[test]
#[ignore = "needs redis-server: run with -- --ignored"]
fn a_served_fleet_lists_its_replicas() {
    if fusebox::fleet::LocalRedis::start_or_skip("the served real-mode fleet").is_none() {
        return;
    }
    // 3 replicas at 33 req/s each; the first to fail 3 calls in a row
    // opens the others through Redis.
    let text = SCENARIO
        .replace("name = \"serve-test\"", "name = \"fleet3\"")
        .replace(
            "[downstream]",
            "[fleet]\nreplicas = 3\nsharing = \"fleet\"\nredis = \"local\"\n\n[downstream]",
        );
    assert!(
        text.contains("[fleet]") && text.contains("fleet3"),
        "{text}"
    );
    let run = ServedRun::of("fleet", &text);
    let (_, _, body) = get(run.addr, "/breakers");
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    names.sort_unstable();
    let replicas = [
        "fleet3/fusebox/replica-1",
        "fleet3/fusebox/replica-2",
        "fleet3/fusebox/replica-3",
    ];
    assert_eq!(names, replicas, "{body}");
    let (_, _, body) = get(run.addr, "/metrics");
    let samples = parse(&body).unwrap_or_else(|e| panic!("{e}:\n{body}"));
    let fleet = &run.fusebox()["fleet"];
    for (i, name) in replicas.iter().enumerate() {
        let failures = value(
            &samples,
            "fusebox_calls_total",
            &[("name", name), ("outcome", "failure")],
        );
        let json = fleet["replicas"][i]["failing_calls"].as_f64();
        assert_eq!(failures, json, "{name}");
    }
    // Shared all the same: the fleet opened some replica.
    assert!(
        fleet["total"]["remote_transitions"].as_u64().unwrap() > 0,
        "{fleet}"
    );
    let (_, _, body) = get(run.addr, "/dashboard/api/state");
    for name in replicas {
        assert!(body.contains(name), "{name}: {body}");
    }
}

/// A real Prometheus server scraping every 15 s (its usual interval) and
/// started only after the run is over still collects the whole run's
/// series: the lab keeps serving. Needs Debian's `prometheus`; skipped with
/// one line when it is missing, unless `FUSEBOX_REQUIRE_PROMETHEUS=1`.
#[test]
#[ignore = "needs Prometheus: run with -- --ignored"]
fn a_prometheus_scraping_every_15s_collects_the_whole_run() {
    let run = ServedRun::start("prometheus");
    let Some(prometheus) = served::Prometheus::start_every(
        "serve_prometheus",
        "15s",
        &[("lab", run.addr.to_string(), "/metrics")],
    ) else {
        return;
    };
    let query = "fusebox_calls_total{name=\"serve-test/fusebox\",outcome=\"failure\"}";
    let want = run.fusebox()["downstream_call_failures"].as_f64().unwrap();
    let started = std::time::Instant::now();
    let got = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no sample within 60 s (4 scrape intervals)"
        );
        std::thread::sleep(Duration::from_millis(500));
        if let Some(v) = prometheus
            .query(query)
            .first()
            .and_then(|r| r["value"][1].as_str().map(str::to_owned))
        {
            break v.parse::<f64>().unwrap();
        }
    };
    assert_eq!(got, want, "Prometheus holds the run's failing calls");
}

/// The dashboard's controls take the token in FUSEBOX_LAB_CONTROL_TOKEN; a
/// token too short to guard them is refused before any run, naming the
/// variable (exit code 2, as for any bad input).
#[test]
fn a_short_control_token_is_refused_naming_the_variable() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .args(["run", "-q", "--serve", "127.0.0.1:0", "--linger", "1s"])
        .env("FUSEBOX_LAB_CONTROL_TOKEN", "short")
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("FUSEBOX_LAB_CONTROL_TOKEN") && stderr.contains("shorter than"),
        "{stderr}"
    );
}
