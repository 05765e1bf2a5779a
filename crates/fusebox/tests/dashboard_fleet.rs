//! The dashboard's fleet view against a real `redis-server` started here on
//! a free loopback port (ignored unless run with `--ignored`; then skipped,
//! with one line saying so, when redis-server is missing, unless
//! FUSEBOX_REQUIRE_REDIS=1): the node's link (connected,
//! then disconnected since when), its id, and the fleet's state of each
//! shared breaker as another node trips it and an operator forces it open;
//! then the same on the page, in headless Chromium (skipped likewise
//! without it, unless FUSEBOX_REQUIRE_CHROMIUM=1).
#![cfg(all(feature = "dashboard", feature = "fleet"))]

mod browser;
mod dashboard_routes;

use axum::http::StatusCode;
use axum::Router;
use dashboard_routes::get;
use fusebox::dashboard::Dashboard;
use fusebox::fleet::{Fleet, LocalRedis};
use fusebox::registry::{Fusebox, FuseboxConfig};
use fusebox::{BreakerConfig, CircuitBreaker, State};
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NS: &str = "dashboard-fleet";

async fn node(redis: &LocalRedis, id: &str) -> Fleet {
    Fleet::builder()
        .redis_url(redis.url())
        .namespace(NS)
        .node(id)
        .sync_every(Duration::from_millis(50))
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap()
}

/// Polls `GET /api/fleet` every 5 ms for up to 5 s until `ok` holds;
/// returns the last answer (the caller asserts on it).
async fn fleet_until(router: &Router, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, body) = get(router, "/api/fleet").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if ok(&body) || Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Node web-1: a registry sharing every breaker it builds (payments trips
/// at the first failure and stays open 30 s), and its dashboard's builder
/// with the fleet.
async fn web1(
    redis: &LocalRedis,
    builder: fn(Fusebox) -> fusebox::dashboard::DashboardBuilder,
) -> (Fusebox, fusebox::dashboard::DashboardBuilder) {
    let fleet = node(redis, "web-1").await;
    let mut config = FuseboxConfig::default();
    config.breakers.insert(
        "payments".into(),
        BreakerConfig {
            consecutive_failures: Some(1),
            open_for: Some(Duration::from_secs(30)),
            ..Default::default()
        }
        .into(),
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .fleet(fleet.clone())
        .build()
        .unwrap();
    let dashboard = builder(fusebox.clone()).fleet(fleet);
    (fusebox, dashboard)
}

/// Node web-2's payments breaker, shared, tripped: the fleet's opens.
async fn trip_from_web2(redis: &LocalRedis) -> (Fleet, CircuitBreaker, fusebox::fleet::Membership) {
    let web2 = node(redis, "web-2").await;
    let theirs = CircuitBreaker::builder()
        .name("payments")
        .consecutive_failures(1)
        .open_for(Duration::from_secs(30))
        .build()
        .unwrap();
    let membership = web2.share(&theirs).await.unwrap();
    let _ = theirs.call(|| Err::<(), _>("down"));
    assert_eq!(theirs.state(), State::Open);
    (web2, theirs, membership)
}

fn payments_state(fleet: &Value) -> &str {
    fleet["breakers"]
        .as_array()
        .and_then(|a| a.iter().find(|b| b["name"] == "payments"))
        .and_then(|b| b["fleet_state"].as_str())
        .unwrap_or("not shared")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server and Chromium: run with -- --ignored"]
async fn the_fleet_view_follows_the_link_and_each_shared_breakers_fleet_state() {
    let Some(mut redis) = LocalRedis::start_or_skip("the dashboard's fleet view") else {
        return;
    };
    let (fusebox, dashboard) = web1(&redis, Dashboard::builder).await;
    let local = fusebox.breaker("payments");
    fusebox.breaker("local-only-name-is-shared-too");
    let dashboard = dashboard.manual().build().unwrap();
    let router = dashboard.router();

    let view = fleet_until(&router, |f| {
        f["connected"] == true && payments_state(f) == "closed"
    })
    .await;
    assert_eq!(view["connected"], true, "{view}");
    assert_eq!(view["node"], "web-1");
    assert_eq!(view["namespace"], NS);
    assert_eq!(view["disconnected_since_unix_ms"], Value::Null);
    assert_eq!(payments_state(&view), "closed", "{view}");
    let names: Vec<&str> = view["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local-only-name-is-shared-too", "payments"]);
    // No Redis address in what may be exposed.
    assert!(
        !view.to_string().contains(&redis.port().to_string()),
        "{view}"
    );

    // Node web-2 trips its own payments breaker: the fleet's breaker opens,
    // and web-1's view says so, with what remains of the open period.
    let (web2, _theirs, _membership) = trip_from_web2(&redis).await;
    let view = fleet_until(&router, |f| payments_state(f) == "open").await;
    assert_eq!(payments_state(&view), "open", "{view}");
    let payments = view["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "payments")
        .unwrap();
    let left = payments["open_remaining_ms"].as_u64().unwrap();
    assert!((20_000..=30_000).contains(&left), "{view}");
    assert_eq!(local.state(), State::Open, "the local breaker follows");
    // The frame the page and the stream get carries the same view.
    dashboard.sample();
    let (_, state) = get(&router, "/api/state").await;
    assert_eq!(payments_state(&state["frame"]["fleet"]), "open", "{state}");

    // An operator forces it open for the whole fleet, then resets it.
    web2.force_open("payments").await.unwrap();
    let view = fleet_until(&router, |f| payments_state(f) == "forced_open").await;
    assert_eq!(payments_state(&view), "forced_open", "{view}");
    web2.reset("payments").await.unwrap();
    let view = fleet_until(&router, |f| payments_state(f) == "closed").await;
    assert_eq!(payments_state(&view), "closed", "{view}");

    // Redis goes away: web-1 says since when it is disconnected.
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    redis.kill();
    let view = fleet_until(&router, |f| f["connected"] == false).await;
    assert_eq!(view["connected"], false, "{view}");
    let since = view["disconnected_since_unix_ms"].as_u64().unwrap();
    assert!(
        since + 1_000 >= before && since <= before + 5_000,
        "{since} vs {before}"
    );
    assert!(view["disconnected_for_ms"].as_u64().is_some(), "{view}");
    assert!(view["disconnects"].as_u64().unwrap() >= 1, "{view}");
}

#[tokio::test]
async fn without_a_fleet_there_is_no_fleet_view() {
    let dashboard = Dashboard::builder(Fusebox::new()).manual().build().unwrap();
    let router = dashboard.router();
    let (status, body) = get(&router, "/api/fleet").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"].as_str().unwrap().contains("no fleet"),
        "{body}"
    );
    let (_, state) = get(&router, "/api/state").await;
    assert!(state["frame"].get("fleet").is_none(), "{state}");
}

/// The page shows the fleet bar (node, connected, then disconnected since)
/// and the fleet's state on the shared breaker's tile, with no console
/// error. Screenshots in `target/tmp/dashboard_fleet/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server and Chromium: run with -- --ignored"]
async fn the_page_shows_the_fleet() {
    let Some(mut redis) = LocalRedis::start_or_skip("the dashboard's fleet page") else {
        return;
    };
    let (fusebox, dashboard) = web1(&redis, Dashboard::builder).await;
    fusebox.breaker("payments");
    let dashboard = dashboard
        .interval(Duration::from_millis(100))
        .build()
        .unwrap();
    let url = browser::serve_dashboard(dashboard.router()).await;
    let shots = browser::out_dir("dashboard_fleet");
    let opened = tokio::task::block_in_place(|| browser::Driver::open(&url, &shots, "payments"));
    let Some(mut driver) = opened else {
        return;
    };
    let mut page = |f: &mut dyn FnMut(&mut browser::Driver) -> String| {
        tokio::task::block_in_place(|| f(&mut driver))
    };
    let bar = page(&mut |d| d.text("#fleet", "connected"));
    assert!(
        bar.contains("fleet dashboard-fleet") && bar.contains("node web-1"),
        "{bar}"
    );
    assert!(!bar.contains("disconnected"), "{bar}");
    let tile = r#".tile[data-name="payments"] .fleet-state"#;
    let line = page(&mut |d| d.text(tile, "fleet: closed"));
    assert_eq!(line, "fleet: closed");

    let _web2 = trip_from_web2(&redis).await;
    page(&mut |d| d.expect("payments", "open", "dashboard-fleet").to_string());
    let line = page(&mut |d| d.text(tile, "fleet: open"));
    assert!(
        line.starts_with("fleet: open (") && line.ends_with("s left)"),
        "{line}"
    );

    redis.kill();
    let bar = page(&mut |d| d.text("#fleet", "disconnected since"));
    assert!(bar.contains("node web-1"), "{bar}");
    page(&mut |d| d.ask("shot dashboard-fleet-disconnected"));
    let errors = tokio::task::block_in_place(|| driver.console_errors(None));
    assert!(errors.is_empty(), "console errors: {errors:?}");
    eprintln!("screenshots in {}", shots.display());
}
