//! What the tests that run an external program against the dashboard share
//! (this crate's fleet view test, and the lab's, which includes this file):
//! finding the program (skip with one line, or fail when CI requires it),
//! an output directory, and headless Chromium driven by
//! `ops/browser/dashboard.mjs` (playwright-core) on commands over a pipe.
#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The repository's `ops/` directory.
pub const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ops");

/// The variable `.ci/run` sets to make a missing Chromium a failure.
pub const REQUIRE_CHROMIUM: &str = "FUSEBOX_REQUIRE_CHROMIUM";

/// The path of `program` on `PATH`; `None` (after printing why) when it is
/// missing and the environment variable `require` is not `1`.
///
/// # Panics
///
/// When the program is missing and `require` is set to `1`.
pub fn external(program: &str, require: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip_unless_required(require, &format!("{program} not found ({install})"));
    }
    found
}

/// Prints why the test skips, or panics when `require` is set to `1`.
pub fn skip_unless_required(require: &str, message: &str) {
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{message}, and {require}=1 requires it");
    }
    eprintln!("skipping: {message}; set {require}=1 to make this a failure");
}

/// A fresh directory under the target dir, for a test's output.
pub fn out_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's output dir");
    dir
}

/// Serves `app` under `/dashboard` on a free loopback port, on the test's
/// tokio runtime; the page's URL.
pub async fn serve_dashboard(app: axum::Router) -> String {
    let app = axum::Router::new().nest("/dashboard", app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/dashboard", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let _ = axum::serve(listener, service).await;
    });
    url
}

/// Headless Chromium on one page, driven by `ops/browser/dashboard.mjs`
/// (its header lists the commands); killed when dropped.
pub struct Driver {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Driver {
    /// Opens `url` and waits until it shows `breaker`'s tile, live and
    /// styled; screenshots go to `shots`. `None` (after one line) when
    /// chromium, node or playwright-core is missing, unless
    /// `FUSEBOX_REQUIRE_CHROMIUM=1`.
    pub fn open(url: &str, shots: &Path, breaker: &str) -> Option<Driver> {
        let chromium = external("chromium", REQUIRE_CHROMIUM, "Debian package `chromium`")?;
        let node = external("node", REQUIRE_CHROMIUM, "Debian package `nodejs`")?;
        let dir = Path::new(OPS).join("browser");
        if !dir.join("node_modules/playwright-core").is_dir() {
            skip_unless_required(
                REQUIRE_CHROMIUM,
                "playwright-core not installed (run `npm ci` in ops/browser)",
            );
            return None;
        }
        // Debian's /usr/bin/chromium is a wrapper script; drive the binary.
        let binary = Path::new("/usr/lib/chromium/chromium");
        let chromium = if binary.is_file() {
            binary.to_path_buf()
        } else {
            chromium
        };
        let mut child = Command::new(node)
            .arg(dir.join("dashboard.mjs"))
            .arg(&chromium)
            .arg(url)
            .arg(shots)
            .arg(breaker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start node");
        let mut driver = Driver {
            input: child.stdin.take().expect("piped"),
            output: BufReader::new(child.stdout.take().expect("piped")),
            child,
        };
        assert_eq!(driver.line(), "loaded");
        Some(driver)
    }

    /// The driver's next line.
    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .expect("read from the driver");
        line.trim_end().to_owned()
    }

    /// Sends `command`; its answer.
    pub fn ask(&mut self, command: &str) -> String {
        writeln!(self.input, "{command}").expect("write to the driver");
        self.input.flush().expect("flush to the driver");
        self.line()
    }

    /// Waits (at most 1 s) until `breaker`'s tile shows `state`, then
    /// screenshots `shot`; how long it waited, in ms.
    ///
    /// # Panics
    ///
    /// When the tile did not show it within 1 s.
    pub fn expect(&mut self, breaker: &str, state: &str, shot: &str) -> u64 {
        let answer = self.ask(&format!("expect {breaker} {state} {shot}"));
        answer
            .strip_prefix(&format!("seen {state} "))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{answer}"))
    }

    /// Waits (at most 5 s) until the element `selector` has text containing
    /// `text`; its whole text then.
    ///
    /// # Panics
    ///
    /// When it did not.
    pub fn text(&mut self, selector: &str, text: &str) -> String {
        let answer = self.ask(&format!("text {text}\t{selector}"));
        answer
            .strip_prefix("text ")
            .unwrap_or_else(|| panic!("{selector} never showed {text:?}: {answer}"))
            .to_owned()
    }

    /// Waits (at most 5 s) until `n` elements match `selector`; how many
    /// match then.
    pub fn count(&mut self, selector: &str, n: usize) -> usize {
        let answer = self.ask(&format!("count {n}\t{selector}"));
        answer
            .strip_prefix("count ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{answer}"))
    }

    /// Ends the session: the page's console errors (a CSP violation is one),
    /// but those of a request refused with `allowed_status` (Chromium
    /// reports any failed request).
    pub fn console_errors(mut self, allowed_status: Option<u16>) -> Vec<String> {
        let answer = self.ask("done");
        let n: usize = answer
            .strip_prefix("console-errors ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{answer}"));
        (0..n)
            .map(|_| self.line())
            .filter(|e| allowed_status.is_none_or(|s| !e.contains(&format!("status of {s}"))))
            .collect()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
