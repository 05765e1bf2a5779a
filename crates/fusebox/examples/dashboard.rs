//! The live dashboard and `/metrics` nested into an axum app, over a
//! registry whose downstreams fail on a schedule: a demo to look at, with
//! the controls on. (The dashboard's browser and Prometheus tests follow a
//! lab run instead: `crates/fusebox-lab/tests/dashboard_*.rs`.)
//!
//! ```sh
//! cargo run -p fusebox --features dashboard --example dashboard -- --port 8080 --for 60s
//! # open http://127.0.0.1:8080/dashboard  (controls token: printed at start)
//! ```
//!
//! Three breakers, each tagged `service=<name>`, called about 50 times a
//! second; during a fault (4 s healthy, then 8 s of fault, repeating):
//! `payments` fails every call (failure-rate breaker, trips at 50%),
//! `inventory` fails in bursts (consecutive failures, trips and recovers
//! several times: it flaps), `search` answers slowly (slow-call breaker).

use fusebox::dashboard::{Controls, Dashboard};
use fusebox::metrics::Metrics;
use fusebox::registry::{BreakerEntry, BulkheadConfig, Fusebox, FuseboxConfig, Tags};
use fusebox::BreakerConfig;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running demo: its address, its registry and the fault switch.
struct Demo {
    addr: SocketAddr,
    fusebox: Fusebox,
    fault: Arc<AtomicBool>,
}

fn tags(service: &str) -> Tags {
    Tags::from([("service".to_owned(), service.to_owned())])
}

/// The registry's config: what each breaker trips on.
fn config() -> FuseboxConfig {
    let entry = |service: &str, settings: BreakerConfig| BreakerEntry {
        settings,
        tags: tags(service),
    };
    let mut config = FuseboxConfig::default();
    let b = &mut config.breakers;
    b.insert(
        "payments".into(),
        entry(
            "payments",
            BreakerConfig {
                failure_rate: Some(0.5),
                count_window: Some(20),
                min_calls: Some(10),
                open_for: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        ),
    );
    b.insert(
        "inventory".into(),
        entry(
            "inventory",
            BreakerConfig {
                consecutive_failures: Some(3),
                open_for: Some(Duration::from_millis(300)),
                ..Default::default()
            },
        ),
    );
    b.insert(
        "search".into(),
        entry(
            "search",
            BreakerConfig {
                slow_call_duration: Some(Duration::from_millis(20)),
                slow_call_rate: Some(0.5),
                count_window: Some(10),
                min_calls: Some(5),
                open_for: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        ),
    );
    config.bulkheads.insert(
        "search-pool".into(),
        BulkheadConfig {
            max_concurrent: Some(4),
            tags: tags("search"),
            ..Default::default()
        },
    );
    config
}

/// What a downstream does on one call, `fault_ms` into a fault (`None`:
/// healthy): `Err` is a failure; the delay is how long it takes.
fn downstream(name: &str, fault_ms: Option<u128>) -> (Duration, Result<(), &'static str>) {
    let quick = Duration::from_millis(2);
    match (name, fault_ms) {
        (_, None) => (quick, Ok(())),
        ("payments", Some(_)) => (quick, Err("payments: 503")),
        // Bursts of errors 400 ms long every second: trips, recovers, trips.
        ("inventory", Some(t)) if t % 1000 < 400 => (quick, Err("inventory: reset")),
        ("search", Some(_)) => (Duration::from_millis(30), Ok(())),
        _ => (quick, Ok(())),
    }
}

/// Starts the server on `127.0.0.1:port` (0: any free port) and the callers;
/// `token` enables the dashboard's controls. The fault is off until
/// `fault` is set.
async fn start(
    port: u16,
    token: Option<String>,
    interval: Duration,
) -> Result<Demo, Box<dyn std::error::Error>> {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let fusebox = Fusebox::builder()
        .config(config())
        .observer(metrics.clone())
        .build()?;
    let controls = token.map_or_else(Controls::off, Controls::token);
    let dashboard = Dashboard::builder(fusebox.clone())
        .metrics(metrics)
        .controls(controls)
        .interval(interval)
        .build()?;

    let registry = Arc::new(Mutex::new(registry));
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let registry = registry.clone();
                async move {
                    let mut body = String::new();
                    let registry = registry.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = prometheus_client::encoding::text::encode(&mut body, &registry);
                    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
                    ([(axum::http::header::CONTENT_TYPE, content_type)], body)
                }
            }),
        )
        // `nest_service`: the page at /dashboard and /dashboard/.
        .nest_service("/dashboard", dashboard.router());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        let _ = axum::serve(listener, service).await;
    });

    let fault = Arc::new(AtomicBool::new(false));
    for name in ["payments", "inventory", "search"] {
        let (fusebox, fault) = (fusebox.clone(), fault.clone());
        tokio::spawn(async move {
            let pool = fusebox.bulkhead("search-pool");
            let mut fault_began: Option<std::time::Instant> = None;
            loop {
                // Relaxed: a switch read on each call; nothing else rides on it.
                fault_began = match (fault.load(Ordering::Relaxed), fault_began) {
                    (false, _) => None,
                    (true, None) => Some(std::time::Instant::now()),
                    (true, began) => began,
                };
                let fault_ms = fault_began.map(|t| t.elapsed().as_millis());
                let (delay, result) = downstream(name, fault_ms);
                let _slot = if name == "search" {
                    pool.try_acquire().ok()
                } else {
                    None
                };
                let _ = fusebox
                    .breaker(name)
                    .call_async(|| async move {
                        tokio::time::sleep(delay).await;
                        result
                    })
                    .await;
                tokio::time::sleep(Duration::from_millis(18)).await;
            }
        });
    }
    Ok(Demo {
        addr,
        fusebox,
        fault,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut run_for = Duration::from_secs(6);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--port" => {
                port = value
                    .parse()
                    .map_err(|e| format!("--port {value:?}: {e}"))?
            }
            "--for" => {
                let secs = value.trim_end_matches('s');
                run_for = Duration::from_secs(
                    secs.parse()
                        .map_err(|e| format!("--for {value:?}: {e} (e.g. 60s)"))?,
                );
            }
            _ => return Err(format!("unknown argument {arg:?} (--port N, --for 60s)").into()),
        }
    }
    let token = "demo-token-0123456789".to_owned();
    let demo = start(port, Some(token.clone()), Duration::from_millis(500)).await?;
    println!(
        "dashboard: http://{}/dashboard (controls token: {token})",
        demo.addr
    );
    println!("metrics:   http://{}/metrics", demo.addr);
    let end = tokio::time::Instant::now() + run_for;
    let mut cycle = tokio::time::interval(Duration::from_secs(4));
    cycle.tick().await;
    let mut phase = 0u32;
    while tokio::time::Instant::now() < end {
        tokio::select! {
            _ = cycle.tick() => {
                phase += 1;
                // 4 s healthy, 8 s of fault.
                demo.fault.store(phase % 3 != 0, Ordering::Relaxed);
            }
            _ = tokio::time::sleep_until(end) => break,
        }
    }
    let open = demo
        .fusebox
        .snapshot()
        .into_iter()
        .filter(|b| b.snapshot.state != fusebox::State::Closed)
        .count();
    println!("done: {open} breaker(s) not closed at the end");
    Ok(())
}
