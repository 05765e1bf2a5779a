//! An axum storefront calling a flaky inventory service with reqwest, behind
//! fusebox's standard HTTP stack (total timeout, retry with budget, breaker,
//! bulkhead, attempt timeout), a fallback and Prometheus metrics, configured
//! by one TOML entry.
//!
//! The example starts the inventory service and the storefront on loopback,
//! then asks the storefront for stock: first while the inventory is flaky
//! (every fifth answer is a 503, every seventh hangs: the retries and the
//! attempt timeout hide both), then while it is down (the fallback answers,
//! then the breaker opens and answers come at once). Each answer is read
//! to the end of its body inside the stack (`send_bytes`), so a body that
//! stalls is a timeout and a failure, like a hang before the headers. Last
//! it prints the storefront's `/metrics`: series for every policy.
//!
//! The protection is the TOML entry (`CONFIG`) and the lines between the
//! `protection` markers: 5 lines of TOML and 28 of Rust, counted by
//! `tests/http_standard.rs` (at most 12 and 30).
//!
//! Run: `cargo run -p fusebox --example http_standard --all-features`

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

// protection: toml
const CONFIG: &str = r#"
[dependencies.inventory]
timeout = "200ms"
breaker = { failure_rate = 0.5, count_window = 20, min_calls = 10, open_for = "30s" }
bulkhead = { max_concurrent = 16 }
retry = { max_attempts = 3, initial_backoff = "10ms", budget_ratio = 0.1, budget_min_per_second = 1 }
"#;
// end protection

// protection: rust
use fusebox::registry::{Fusebox, FuseboxConfig};
use fusebox::{http::Standard, metrics::Metrics, Cause};
// end protection
use prometheus_client::registry::Registry;

#[derive(Clone)]
struct Storefront {
    client: reqwest::Client,
    inventory_url: String,
    // protection: rust
    inventory: Standard,
    registry: Arc<Registry>,
    // end protection
}

// protection: rust
fn protect(config: &str) -> Result<(Standard, Registry), Box<dyn std::error::Error>> {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let fusebox = Fusebox::builder()
        .config(FuseboxConfig::from_toml(config)?)
        .observer(metrics.clone())
        .build()?;
    let inventory = Standard::from_registry(&fusebox, "inventory").build();
    metrics.track_standard(&inventory);
    Ok((inventory, registry))
}
// end protection

async fn stock(State(app): State<Storefront>, Path(sku): Path<u32>) -> String {
    let url = format!("{}/stock/{sku}", app.inventory_url);
    // protection: rust
    // The whole response, body included, inside the timeouts and the breaker.
    let answer = app.inventory.send_bytes(app.client.get(url)).await;
    let answer = answer.map(|r| String::from_utf8_lossy(r.body()).into_owned());
    let fallback = |why: Cause<_>| Some(format!("stock unknown ({why})"));
    app.inventory
        .recover(answer, fallback)
        .unwrap_or_else(|e| e.to_string())
    // end protection
}

// protection: rust
async fn metrics(State(app): State<Storefront>) -> String {
    fusebox::metrics::encode_text(&app.registry)
}
// end protection

/// The flaky inventory service: every fifth request is a 503, every seventh
/// hangs for a second; when `down`, every request is a 500.
async fn inventory_service(down: Arc<AtomicBool>) -> Result<String, std::io::Error> {
    let hits = Arc::new(AtomicU32::new(0));
    let app = Router::new().route(
        "/stock/{sku}",
        get(move |Path(sku): Path<u32>| {
            let n = hits.fetch_add(1, Ordering::Relaxed) + 1;
            let down = down.load(Ordering::Relaxed);
            async move {
                if down {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "down".to_string());
                }
                if n % 5 == 0 {
                    return (StatusCode::SERVICE_UNAVAILABLE, "busy".to_string());
                }
                if n % 7 == 0 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                (StatusCode::OK, format!("{} in stock", sku % 7 + 1))
            }
        }),
    );
    serve(app).await
}

/// Serves `app` on a free loopback port; returns its base URL.
async fn serve(app: Router) -> Result<String, std::io::Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// Runs the whole scenario; returns the storefront's answers and its
/// `/metrics` text.
pub async fn run() -> Result<(Vec<String>, String), Box<dyn std::error::Error>> {
    let down = Arc::new(AtomicBool::new(false));
    let inventory_url = inventory_service(down.clone()).await?;
    // protection: rust
    let (inventory, registry) = protect(CONFIG)?;
    // end protection
    let app = Storefront {
        client: reqwest::Client::new(),
        inventory_url,
        // protection: rust
        inventory,
        registry: Arc::new(registry),
        // end protection
    };
    let client = app.client.clone();
    let storefront = serve(
        Router::new()
            .route("/stock/{sku}", get(stock))
            // protection: rust
            .route("/metrics", get(metrics))
            // end protection
            .with_state(app),
    )
    .await?;

    let mut answers = Vec::new();
    for sku in 0..24 {
        if sku == 12 {
            down.store(true, Ordering::Relaxed);
        }
        let page = client
            .get(format!("{storefront}/stock/{sku}"))
            .send()
            .await?;
        answers.push(format!("sku {sku:2}: {}", page.text().await?));
    }
    let metrics = client.get(format!("{storefront}/metrics")).send().await?;
    Ok((answers, metrics.text().await?))
}

#[allow(dead_code)] // the test includes this file for `run`
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (answers, metrics) = run().await?;
    for a in &answers {
        println!("{a}");
    }
    println!("\n/metrics (fusebox series of `inventory`):");
    for line in metrics.lines() {
        if line.starts_with("fusebox_") && line.contains(r#"name="inventory""#) {
            println!("{line}");
        }
    }
    Ok(())
}
