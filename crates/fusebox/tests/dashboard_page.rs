//! The dashboard page in headless Chromium for the policies it has no code
//! of its own for (ignored unless run with `--ignored`; then skipped, with
//! one line saying so, when Chromium is missing, unless
//! FUSEBOX_REQUIRE_CHROMIUM=1): an adaptive limit from a registry file
//! gets a tile whose gauges are drawn over time, one chart per unit (the
//! limit and the calls in flight; the two round-trip times in
//! microseconds). Screenshots in `target/tmp/dashboard_page/`.
#![cfg(all(feature = "dashboard", feature = "limit", feature = "config"))]

mod browser;

use fusebox::dashboard::Dashboard;
use fusebox::registry::{Fusebox, FuseboxConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium: run with -- --ignored"]
async fn a_limits_gauges_are_drawn_over_time() {
    let config = FuseboxConfig::from_toml(
        "[dependencies.search]\nlimit = { algorithm = \"aimd\", initial = 4, max = 50, window = \"50ms\", min_samples = 1 }\n",
    )
    .unwrap();
    let fusebox = Fusebox::from_config(config).unwrap();
    let limit = fusebox.limit("search").unwrap();
    // Calls keep the limit moving (AIMD grows it each window the slots
    // are busy) and some slots held.
    let stop = Arc::new(AtomicBool::new(false));
    let caller = {
        let (limit, stop) = (limit.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let held: Vec<_> = (0..3).filter_map(|_| limit.try_acquire().ok()).collect();
                std::thread::sleep(Duration::from_millis(5));
                for p in held {
                    p.success();
                }
            }
        })
    };
    let dashboard = Dashboard::builder(fusebox.clone())
        .interval(Duration::from_millis(100))
        .build()
        .unwrap();
    let url = browser::serve_dashboard(dashboard.router()).await;
    let shots = browser::out_dir("dashboard_page");
    let opened = tokio::task::block_in_place(|| browser::Driver::open(&url, &shots, "search"));
    let Some(mut driver) = opened else {
        stop.store(true, Ordering::Relaxed);
        return;
    };
    let tile = r#".tile[data-kind="limit"][data-name="search"]"#;
    let mut page = |f: &mut dyn FnMut(&mut browser::Driver) -> String| {
        tokio::task::block_in_place(|| f(&mut driver))
    };
    let counts = format!(r#"{tile} .chart.gauges[data-unit="count"]"#);
    let legend = page(&mut |d| d.text(&format!("{counts} .legend"), "in flight"));
    assert_eq!(legend, "limitin flight", "the count chart's lines");
    let rtt = format!(r#"{tile} .chart.gauges[data-unit="us"]"#);
    let legend = page(&mut |d| d.text(&format!("{rtt} .legend"), "sample rtt"));
    assert_eq!(
        legend, "baseline rttsample rtt",
        "the round-trip chart's lines"
    );
    let top = page(&mut |d| d.text(&format!("{rtt} .axis-y span"), "\u{b5}s"));
    assert!(top.ends_with(" \u{b5}s"), "{top}");
    // Two frames at least: a line per gauge in each chart.
    let lines = |d: &mut browser::Driver, chart: &str, series: &str| {
        d.count(&format!(r#"{chart} polyline[data-series="{series}"]"#), 1)
            .to_string()
    };
    for (chart, series) in [
        (&counts, "limit"),
        (&counts, "in flight"),
        (&rtt, "baseline rtt"),
        (&rtt, "sample rtt"),
    ] {
        assert_eq!(page(&mut |d| lines(d, chart, series)), "1", "{series}");
    }
    // The limit's axis follows it: its top is at least the limit now.
    let top: f64 = page(&mut |d| d.text(&format!("{counts} .axis-y span"), ""))
        .parse()
        .unwrap();
    assert!(
        top >= f64::from(limit.limit().min(50)) * 0.5,
        "axis top {top}"
    );
    let shot = page(&mut |d| d.ask(&format!("shotof dashboard-policy\t{tile}")));
    assert_eq!(shot, "shot");
    stop.store(true, Ordering::Relaxed);
    caller.join().unwrap();
    let errors = tokio::task::block_in_place(|| driver.console_errors(None));
    assert!(errors.is_empty(), "console errors: {errors:?}");
    eprintln!("screenshots in {}", shots.display());
}
