#![allow(dead_code)] // each test file uses part of it
//! `fusebox-lab run --serve` as a child process, for the tests that point an
//! external program (Prometheus, Chromium) at it; with what the dashboard's
//! tests share (`browser`: finding a program, driving Chromium).

#[path = "../../../fusebox/tests/browser/mod.rs"]
pub mod browser;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The shipped scenario the dashboard's tests follow: three faults and more
/// (see its comments).
pub const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/dashboard.toml");
/// Its one breaker (and bulkhead), as the lab names it: `SCENARIO/STRATEGY`.
pub const BREAKER: &str = "dashboard/fusebox";

/// A port free on loopback right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Now, in Unix seconds (Prometheus's time).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs_f64()
}

/// `fusebox-lab run -q --serve ADDR --linger 120s` of [`SCENARIO`] (the
/// binary cargo built for this test), killed when dropped.
pub struct Lab {
    child: Child,
    /// Where it serves.
    pub addr: SocketAddr,
    /// When it said it serves (the run starts right after), Unix seconds.
    pub started: f64,
    lines: Receiver<String>,
}

impl Lab {
    /// Starts the lab on `addr` (port 0: any) with [`SCENARIO`] and waits
    /// for its first line; `token` enables the dashboard's controls.
    pub fn start(addr: SocketAddr, token: Option<&str>) -> Lab {
        Lab::run(addr, Path::new(SCENARIO), &[], token)
    }

    /// [`Lab::start`] with another scenario file and more arguments of `run`.
    pub fn run(
        addr: SocketAddr,
        scenario: &Path,
        args: &[&std::ffi::OsStr],
        token: Option<&str>,
    ) -> Lab {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fusebox-lab"));
        command
            .args([
                "run",
                "-q",
                "--serve",
                &addr.to_string(),
                "--linger",
                "120s",
            ])
            .args(args)
            .arg(scenario)
            .env_remove("FUSEBOX_LAB_CONTROL_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("FUSEBOX_LAB_CONTROL_TOKEN", token);
        }
        let mut child = command.spawn().expect("start fusebox-lab");
        let stderr = BufReader::new(child.stderr.take().expect("piped"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the lab says where it serves");
        let started = unix_now();
        let addr = first
            .strip_prefix("serving metrics on http://")
            .and_then(|r| r.split_once("/metrics"))
            .and_then(|(addr, _)| addr.parse().ok())
            .unwrap_or_else(|| panic!("not the line expected: {first}"));
        Lab {
            child,
            addr,
            started,
            lines,
        }
    }

    /// Waits (at most `timeout`) for the lab to say its run is over (any
    /// `--json` report is written by then).
    pub fn wait_done(&self, timeout: Duration) {
        self.line_with("runs done", timeout);
    }

    /// Waits (at most `timeout`) for a line of the lab's stderr containing
    /// `text`; the line.
    pub fn line_with(&self, text: &str, timeout: Duration) -> String {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("the lab wrote no {text:?} within {timeout:?}: {e}"),
            }
        }
    }

    /// GET `path` on the lab, as JSON.
    pub fn json(&self, client: &reqwest::blocking::Client, path: &str) -> serde_json::Value {
        let body = client
            .get(format!("http://{}{path}", self.addr))
            .send()
            .and_then(|r| r.text())
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }

    /// [`BREAKER`]'s state and seconds in it, from `/breakers`.
    pub fn state(&self, client: &reqwest::blocking::Client) -> Option<(String, f64)> {
        let list = self.json(client, "/breakers");
        list.as_array()?
            .iter()
            .find(|b| b["name"] == BREAKER)
            .map(|b| {
                (
                    b["state"].as_str().unwrap_or_default().to_owned(),
                    b["seconds_in_state"].as_f64().unwrap_or_default(),
                )
            })
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real Prometheus on a free loopback port scraping `jobs` (name, target
/// `HOST:PORT`, metrics path) every second (or as set), with its data and log in the
/// test's output directory; killed when dropped.
pub struct Prometheus {
    child: Child,
    /// `http://127.0.0.1:PORT`, its API's base.
    pub base: String,
    log: std::path::PathBuf,
    client: reqwest::blocking::Client,
}

impl Prometheus {
    /// Starts Prometheus for the test `test` and waits until it is ready.
    /// `None` (after one line) when Debian's `prometheus` is missing,
    /// unless `FUSEBOX_REQUIRE_PROMETHEUS=1`.
    pub fn start(test: &str, jobs: &[(&str, String, &str)]) -> Option<Prometheus> {
        Prometheus::start_every(test, "1s", jobs)
    }

    /// [`Prometheus::start`] scraping every `interval` (`"15s"`).
    pub fn start_every(
        test: &str,
        interval: &str,
        jobs: &[(&str, String, &str)],
    ) -> Option<Prometheus> {
        let binary = browser::external(
            "prometheus",
            "FUSEBOX_REQUIRE_PROMETHEUS",
            "Debian package `prometheus`",
        )?;
        let dir = browser::out_dir(test);
        let mut config = format!(
            "global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\nscrape_configs:\n"
        );
        for (job, target, path) in jobs {
            config.push_str(&format!(
                "  - job_name: {job}\n    metrics_path: {path}\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        let config_file = dir.join("prometheus.yml");
        std::fs::write(&config_file, config).expect("write prometheus.yml");
        let port = free_port();
        let log = dir.join("prometheus.log");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create prometheus.log"))
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            client: reqwest::blocking::Client::new(),
        };
        p.until("ready", || {
            p.client
                .get(format!("{}/-/ready", p.base))
                .send()
                .is_ok_and(|r| r.status().is_success())
        });
        Some(p)
    }

    /// Waits (up to 30 s) until `ok` holds, or panics naming `what` and the log.
    pub fn until(&self, what: &str, ok: impl Fn() -> bool) {
        for _ in 0..150 {
            if ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus never {what}; see {}", self.log.display());
    }

    /// GET `path` with `params` of the API as JSON (`null` when it fails).
    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> serde_json::Value {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.base), params)
            .expect("a valid URL");
        let text = self
            .client
            .get(url)
            .send()
            .and_then(|r| r.text())
            .unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
    }

    /// The instant vector of `query` (`[]` when it fails).
    pub fn query(&self, query: &str) -> Vec<serde_json::Value> {
        self.get("/api/v1/query", &[("query", query)])["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until `job`'s scrape loop runs (`up` has a sample: targets
    /// reach the loop seconds after readiness).
    pub fn wait_scraping(&self, job: &str) {
        let query = format!("up{{job=\"{job}\"}}");
        self.until("scraped", || !self.query(&query).is_empty());
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
