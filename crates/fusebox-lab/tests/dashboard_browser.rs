//! The live page in a real browser: headless Chromium (driven by
//! `ops/browser/dashboard.mjs`, playwright-core) on the `/dashboard` of
//! `fusebox-lab run --serve` through the faults of `scenarios/dashboard.toml`:
//! the breaker's tile turns open within a second of the breaker opening and
//! closed within a second of it closing; after the run the page's buttons act
//! (token, same origin) and refuse a wrong token; the page logs no console
//! error (a CSP violation would be one). Screenshots of each state go to
//! `target/tmp/dashboard_browser/`.
//!
//! Needs `chromium`, `node` and `npm ci` in `ops/browser` (skips with one
//! line without them, unless `FUSEBOX_REQUIRE_CHROMIUM=1`). Real time: a
//! browser and the lab run on it (about 35 s).

mod served;

use reqwest::blocking::Client;
use served::{external, out_dir, skip_unless_required, Lab, BREAKER, OPS};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "browser-test-token-0123456789";

struct Driver {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Driver {
    fn line(&mut self) -> String {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .expect("read from the driver");
        line.trim_end().to_owned()
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.input, "{command}").expect("write to the driver");
        self.input.flush().expect("flush to the driver");
        self.line()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls the lab (real time, generous bound) until its breaker is in
/// `state`; returns how long ago it changed, in ms.
fn until(lab: &Lab, client: &Client, state: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((now, seconds)) = lab.state(client) {
            if now == state {
                return (seconds * 1000.0) as u64;
            }
        }
        assert!(Instant::now() < deadline, "{BREAKER} never became {state}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_page_follows_a_lab_run_through_its_faults() {
    const REQUIRE: &str = "FUSEBOX_REQUIRE_CHROMIUM";
    let Some(chromium) = external("chromium", REQUIRE, "Debian package `chromium`") else {
        return;
    };
    let Some(node) = external("node", REQUIRE, "Debian package `nodejs`") else {
        return;
    };
    let browser_dir = Path::new(OPS).join("browser");
    if !browser_dir.join("node_modules/playwright-core").is_dir() {
        skip_unless_required(
            REQUIRE,
            "playwright-core not installed (run `npm ci` in ops/browser)",
        );
        return;
    }
    // Debian's /usr/bin/chromium is a wrapper script; drive the binary.
    let binary = Path::new("/usr/lib/chromium/chromium");
    let chromium = if binary.is_file() {
        binary.to_path_buf()
    } else {
        chromium
    };

    let lab = Lab::start("127.0.0.1:0".parse().unwrap(), Some(TOKEN));
    let client = Client::new();
    // The page's policy, over real HTTP: no inline script or style.
    let page = client
        .get(format!("http://{}/dashboard", lab.addr))
        .send()
        .unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("style-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let shots = out_dir("dashboard_browser");
    let mut child = Command::new(node)
        .arg(browser_dir.join("dashboard.mjs"))
        .arg(&chromium)
        .arg(format!("http://{}/dashboard", lab.addr))
        .arg(&shots)
        .arg(BREAKER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut driver = Driver {
        input: child.stdin.take().unwrap(),
        output: BufReader::new(child.stdout.take().unwrap()),
        child,
    };
    assert_eq!(driver.line(), "loaded");

    // The page was shown a state change `ago` ms before it was asked.
    let expect = |driver: &mut Driver, state: &str, ago: u64, shot: &str| {
        let answer = driver.ask(&format!("expect {BREAKER} {state} {shot}"));
        let ms: u64 = answer
            .strip_prefix(&format!("seen {state} "))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{answer}"));
        assert!(
            ago + ms <= 1000,
            "{state} shown {} ms after the change",
            ago + ms
        );
    };
    // Whenever the page loaded (Chromium can take seconds to start), the
    // breaker's next closed spell (shown within a second of asking: it may
    // have begun before the page loaded), the next fault and the recovery.
    until(&lab, &client, "closed");
    expect(&mut driver, "closed", 0, "dashboard-closed");
    let ago = until(&lab, &client, "open");
    expect(&mut driver, "open", ago, "dashboard-open");
    let ago = until(&lab, &client, "closed");
    expect(&mut driver, "closed", ago, "dashboard-recovered");

    // After the run, the buttons: the page sends the token from its own origin.
    lab.wait_done(Duration::from_secs(60));
    let answer = driver.ask(&format!("click {BREAKER} force_open {TOKEN}"));
    assert_eq!(answer, "clicked force_open: now forced_open");
    assert_eq!(lab.state(&client).unwrap().0, "forced_open");
    expect(&mut driver, "forced_open", 0, "dashboard-forced-open");
    let answer = driver.ask(&format!("click {BREAKER} reset wrong-token-0123456789"));
    assert_eq!(answer, "clicked reset refused: wrong token");
    assert_eq!(lab.state(&client).unwrap().0, "forced_open");
    let answer = driver.ask(&format!("click {BREAKER} reset {TOKEN}"));
    assert_eq!(answer, "clicked reset: now closed");
    assert_eq!(lab.state(&client).unwrap().0, "closed");

    // A refused control answers 401, which Chromium reports as a console
    // error of the failed request; nothing else may (a CSP violation is a
    // console error too).
    let answer = driver.ask("done");
    let errors: Vec<String> = (0..answer
        .strip_prefix("console-errors ")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{answer}")))
        .map(|_| driver.line())
        .collect();
    let unexpected: Vec<&String> = errors
        .iter()
        .filter(|e| !e.contains("status of 401"))
        .collect();
    assert!(unexpected.is_empty(), "console errors: {unexpected:?}");
    for shot in [
        "dashboard-closed",
        "dashboard-open",
        "dashboard-recovered",
        "dashboard-forced-open",
    ] {
        assert!(
            shots.join(format!("{shot}.png")).is_file(),
            "no screenshot {shot}"
        );
    }
    eprintln!("screenshots in {}", shots.display());
}
