//! `fusebox-lab run --serve ADDR`: Prometheus metrics of the lab's fusebox
//! breakers, served over HTTP while a real-mode run goes on.
//!
//! `GET /metrics` answers with the OpenMetrics text of
//! [`fusebox::metrics::Metrics`] (breaker state, calls by outcome, call
//! durations, transitions, rates); `GET /breakers` with a JSON list of the
//! breakers' snapshots. Each run's breaker is named `SCENARIO/STRATEGY`.
//!
//! The server is a plain `std::net` loop on one thread (one short request at
//! a time is all a scraper needs); it stops when the [`Server`] is dropped.

use fusebox::metrics::Metrics;
use fusebox::{Builder, CircuitBreaker, ConfigError};
use prometheus_client::registry::Registry;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server exports; set once per process by [`start`].
struct Exporter {
    registry: Registry,
    metrics: Metrics,
    /// The breakers built so far, by name, for `/breakers`.
    breakers: Mutex<Vec<(String, CircuitBreaker)>>,
}

static EXPORTER: OnceLock<Arc<Exporter>> = OnceLock::new();

thread_local! {
    /// The run this thread is doing (`SCENARIO/STRATEGY`): a run builds its
    /// breaker on the thread that runs it, so the name goes with the thread.
    static RUN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the data consistent; ignore poison.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn exporter() -> &'static Arc<Exporter> {
    EXPORTER.get_or_init(|| {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        Arc::new(Exporter {
            registry,
            metrics,
            breakers: Mutex::new(Vec::new()),
        })
    })
}

/// Names the breakers this thread builds from now on (`SCENARIO/STRATEGY`,
/// one per run). Only named breakers are exported.
pub fn set_run(name: String) {
    RUN.with(|r| *r.borrow_mut() = Some(name));
}

/// Builds a lab breaker: instrumented and exported when serving and the
/// thread has a run name, plain otherwise.
pub fn build(builder: Builder) -> Result<CircuitBreaker, ConfigError> {
    let (Some(e), Some(name)) = (EXPORTER.get(), RUN.with(|r| r.borrow().clone())) else {
        return builder.build();
    };
    let breaker = e.metrics.build(&name, builder)?;
    let mut all = lock(&e.breakers);
    all.retain(|(n, _)| *n != name);
    all.push((name, breaker.clone()));
    Ok(breaker)
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// The address it listens on (with the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Relaxed: the accept loop only needs to see it eventually, and the
        // connection below wakes it up to look.
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts exporting: from now on [`build`] instruments breakers, and `addr`
/// serves `/metrics` and `/breakers`.
pub fn start(addr: SocketAddr) -> io::Result<Server> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let exporter = Arc::clone(exporter());
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("fusebox-lab-serve".into())
        .spawn(move || {
            for conn in listener.incoming() {
                // Relaxed: see `Drop`.
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(stream) = conn {
                    // A client that breaks off mid-request only loses its own answer.
                    let _ = handle(stream, &exporter);
                }
            }
        })?;
    Ok(Server {
        addr,
        stop,
        thread: Some(thread),
    })
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn handle(stream: TcpStream, e: &Exporter) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes the answer.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET", "/metrics") => {
            let mut text = String::new();
            match prometheus_client::encoding::text::encode(&mut text, &e.registry) {
                Ok(()) => ("200 OK", OPENMETRICS, text),
                Err(_) => (
                    "500 Internal Server Error",
                    "text/plain",
                    "encoding failed\n".into(),
                ),
            }
        }
        ("GET", "/breakers") => ("200 OK", "application/json", breakers_json(e)),
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "try /metrics or /breakers\n".into(),
        ),
        _ => ("405 Method Not Allowed", "text/plain", "only GET\n".into()),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

fn breakers_json(e: &Exporter) -> String {
    let list: Vec<serde_json::Value> = lock(&e.breakers)
        .iter()
        .map(|(name, b)| {
            let s = b.snapshot();
            serde_json::json!({
                "name": name,
                "state": s.state.as_str(),
                "failure_rate": s.failure_rate,
                "slow_call_rate": s.slow_call_rate,
                "calls": s.calls,
                "failures": s.failures,
                "rejected": s.rejected,
                "seconds_in_state": s.since_transition.as_secs_f64(),
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{self, Mode, Outcome};
    use crate::scenario::Scenario;
    use std::collections::BTreeMap;
    use std::io::Read;

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
            .find_map(|l| l.strip_prefix("Content-Type: "))
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
policy = "consecutive"
failures = 3
open_for = "150ms"
probes = 1
"#;

    /// One test: the exporter is process-wide.
    #[test]
    fn serves_metrics_over_http_during_a_real_run() {
        let server = start("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = server.local_addr();

        let (status, _, _) = get(addr, "/nope");
        assert!(status.contains("404"), "{status}");

        let scenario = Scenario::parse("serve-test.toml", SCENARIO).unwrap();
        let name = format!("{}/{}", scenario.name, scenario.strategies[0].name);
        let run_name = name.clone();
        let runner = std::thread::spawn(move || {
            set_run(run_name);
            run::run(&scenario, &scenario.strategies[0], Mode::Real)
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
}
