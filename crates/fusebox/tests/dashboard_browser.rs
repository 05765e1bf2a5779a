//! The live page in a real browser: headless Chromium (driven by
//! `ops/browser/dashboard.mjs`, playwright-core) follows a breaker through a
//! fault: the tile turns open within a second of the breaker opening and
//! closed within a second of it closing, the page's buttons act (token,
//! same origin), and the page logs no console error. Screenshots of each
//! state go to `target/tmp/dashboard_browser/`.
//!
//! Needs `chromium`, `node` and `npm ci` in `ops/browser` (skips with one
//! line without them, unless `FUSEBOX_REQUIRE_CHROMIUM=1`). Real time: a
//! browser runs on it.
#![cfg(feature = "dashboard")]

mod dashboard_support;

use dashboard_support::{demo, external, out_dir};
use fusebox::State;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const BROWSER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ops/browser");
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

/// Waits (real time, generous bound) until `name` is in `state`.
async fn until(fusebox: &fusebox::registry::Fusebox, name: &str, state: State) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while fusebox.breaker(name).state() != state {
        assert!(Instant::now() < deadline, "{name} never became {state:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_a_breaker_through_a_fault() {
    const REQUIRE: &str = "FUSEBOX_REQUIRE_CHROMIUM";
    let Some(chromium) = external("chromium", REQUIRE, "Debian package `chromium`") else {
        return;
    };
    let Some(node) = external("node", REQUIRE, "Debian package `nodejs`") else {
        return;
    };
    if !Path::new(BROWSER_DIR)
        .join("node_modules/playwright-core")
        .is_dir()
    {
        let message = "playwright-core not installed (run `npm ci` in ops/browser)";
        assert!(std::env::var(REQUIRE).as_deref() != Ok("1"), "{message}");
        eprintln!("skipping: {message}; set {REQUIRE}=1 to make this a failure");
        return;
    }
    // Debian's /usr/bin/chromium is a wrapper script; drive the binary.
    let binary = Path::new("/usr/lib/chromium/chromium");
    let chromium = if binary.is_file() {
        binary.to_path_buf()
    } else {
        chromium
    };

    let demo = demo::start(0, Some(TOKEN.into()), Duration::from_millis(200))
        .await
        .unwrap();
    let shots = out_dir("dashboard_browser");
    let mut child = Command::new(node)
        .arg(Path::new(BROWSER_DIR).join("dashboard.mjs"))
        .arg(&chromium)
        .arg(format!("http://{}/dashboard", demo.addr))
        .arg(&shots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut driver = Driver {
        input: child.stdin.take().unwrap(),
        output: BufReader::new(child.stdout.take().unwrap()),
        child,
    };
    let loaded = tokio::task::block_in_place(|| driver.line());
    assert_eq!(loaded, "loaded");

    let mut ask = |command: String| tokio::task::block_in_place(|| driver.ask(&command));
    let seen = |answer: &str, state: &str| {
        let ms: u64 = answer
            .strip_prefix(&format!("seen {state} "))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{answer}"));
        assert!(ms <= 1000, "{state} shown after {ms} ms");
    };
    seen(
        &ask("expect payments closed dashboard-closed".into()),
        "closed",
    );

    demo.fault.store(true, Ordering::Relaxed);
    until(&demo.fusebox, "payments", State::Open).await;
    seen(&ask("expect payments open dashboard-open".into()), "open");

    demo.fault.store(false, Ordering::Relaxed);
    until(&demo.fusebox, "payments", State::Closed).await;
    seen(
        &ask("expect payments closed dashboard-recovered".into()),
        "closed",
    );

    // The buttons: the page sends the token from its own origin.
    let answer = ask(format!("click inventory force_open {TOKEN}"));
    assert_eq!(answer, "clicked force_open: now forced_open");
    assert_eq!(demo.fusebox.breaker("inventory").state(), State::ForcedOpen);
    seen(
        &ask("expect inventory forced_open dashboard-forced-open".into()),
        "forced_open",
    );
    let answer = ask("click inventory reset wrong-token-0123456789".into());
    assert_eq!(answer, "clicked reset refused: wrong token");
    assert_eq!(demo.fusebox.breaker("inventory").state(), State::ForcedOpen);
    let answer = ask(format!("click inventory reset {TOKEN}"));
    assert!(answer.starts_with("clicked reset: now "), "{answer}");
    assert_ne!(demo.fusebox.breaker("inventory").state(), State::ForcedOpen);

    // A refused control answers 401, which Chromium reports as a console
    // error of the failed request; nothing else may.
    let answer = ask("done".into());
    let errors: Vec<String> = (0..answer
        .strip_prefix("console-errors ")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{answer}")))
        .map(|_| tokio::task::block_in_place(|| driver.line()))
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
