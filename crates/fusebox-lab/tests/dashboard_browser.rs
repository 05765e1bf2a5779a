//! The live page in a real browser: headless Chromium (driven by
//! `ops/browser/dashboard.mjs`, playwright-core) on the `/dashboard` of
//! `fusebox-lab run --serve` through the faults of `scenarios/dashboard.toml`:
//! the breaker's tile turns open within a second of the breaker opening and
//! closed within a second of it closing; after the run the page's buttons act
//! (token, same origin) and refuse a wrong token; the page logs no console
//! error (a CSP violation would be one). Screenshots of each state go to
//! `target/tmp/dashboard_browser/`.
//!
//! Needs `chromium`, `node` and `npm ci` in `ops/browser` (ignored unless run
//! with `--ignored`; then skips with one line without them, unless `FUSEBOX_REQUIRE_CHROMIUM=1`). Real time: a
//! browser and the lab run on it (about 35 s).

mod served;

use reqwest::blocking::Client;
use served::browser::{out_dir, Driver};
use served::{Lab, BREAKER};
use std::time::{Duration, Instant};

const TOKEN: &str = "browser-test-token-0123456789";

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
#[ignore = "needs Chromium: run with -- --ignored"]
fn the_page_follows_a_lab_run_through_its_faults() {
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
    let url = format!("http://{}/dashboard", lab.addr);
    let Some(mut driver) = Driver::open(&url, &shots, BREAKER) else {
        return;
    };

    // The page was shown a state change `ago` ms before it was asked.
    let mut expect = |state: &str, ago: u64, shot: &str| {
        let ms = driver.expect(BREAKER, state, shot);
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
    expect("closed", 0, "dashboard-closed");
    let ago = until(&lab, &client, "open");
    expect("open", ago, "dashboard-open");
    let ago = until(&lab, &client, "closed");
    expect("closed", ago, "dashboard-recovered");
    // The trend: values under the pointer, in one unit per chart, the
    // threshold labelled.
    let readout = driver.ask(&format!("hover {BREAKER} dashboard-trend"));
    assert!(
        readout.starts_with("readout ")
            && readout.contains("calls/s")
            && readout.contains("failure "),
        "{readout}"
    );
    let axis = driver.text(
        &format!(r#".tile[data-name="{BREAKER}"] .chart.load .axis-y"#),
        "/s",
    );
    // The scale, a number per second, on top of a 0.
    let (top, bottom) = axis.split_once("/s").unwrap_or_else(|| panic!("{axis}"));
    assert!(
        top.parse::<f64>().is_ok_and(|v| v > 0.0) && bottom == "0",
        "{axis}"
    );
    // The first threshold label is the failure rate's, at the scenario's 50 %.
    let label = driver.text(
        &format!(r#".tile[data-name="{BREAKER}"] .mark-label"#),
        "trips",
    );
    assert_eq!(label, "failure trips 50%");

    // After the run, the buttons: the page sends the token from its own origin.
    lab.wait_done(Duration::from_secs(60));
    let answer = driver.ask(&format!("click {BREAKER} force_open {TOKEN}"));
    assert_eq!(answer, "clicked force_open: now forced_open");
    assert_eq!(lab.state(&client).unwrap().0, "forced_open");
    // Logged with the caller's address (the browser's, on loopback).
    let logged = lab.line_with("dashboard control applied", Duration::from_secs(10));
    assert!(
        logged.contains("caller=127.0.0.1:") && logged.contains("action=\"force_open\""),
        "{logged}"
    );
    assert!(driver.expect(BREAKER, "forced_open", "dashboard-forced-open") <= 1000);
    let answer = driver.ask(&format!("click {BREAKER} reset wrong-token-0123456789"));
    assert_eq!(answer, "clicked reset refused: wrong token");
    assert_eq!(lab.state(&client).unwrap().0, "forced_open");
    let logged = lab.line_with("dashboard control refused", Duration::from_secs(10));
    assert!(
        logged.contains("wrong token") && !logged.contains("wrong-token-0123456789"),
        "{logged}"
    );
    let answer = driver.ask(&format!("click {BREAKER} reset {TOKEN}"));
    assert_eq!(answer, "clicked reset: now closed");
    assert_eq!(lab.state(&client).unwrap().0, "closed");

    // A refused control answers 401, which Chromium reports as a console
    // error of the failed request; nothing else may (a CSP violation is a
    // console error too).
    let errors = driver.console_errors(Some(401));
    assert!(errors.is_empty(), "console errors: {errors:?}");
    for shot in [
        "dashboard-closed",
        "dashboard-open",
        "dashboard-recovered",
        "dashboard-trend",
        "dashboard-forced-open",
    ] {
        assert!(
            shots.join(format!("{shot}.png")).is_file(),
            "no screenshot {shot}"
        );
    }
    eprintln!("screenshots in {}", shots.display());
}
