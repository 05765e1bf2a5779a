//! fusebox as tower middleware inside an axum service.
//!
//! An axum app serves `/product/{id}`. Product and price are local; reviews
//! come from a remote reviews service, reached through a tower client stack:
//!
//! ```text
//! FallbackLayer -> RetryLayer -> CircuitBreakerLayer -> BulkheadLayer -> TimeoutLayer -> reviews client
//! ```
//!
//! The reviews service turns slow (2 s per call) for a while. The example
//! drives the app in-process (`tower::ServiceExt::oneshot`, no socket) and
//! prints each page with its latency and the breaker's state: a burst of 6
//! pages meets a bulkhead of 4 (2 pages are answered at once, without
//! reviews), the 4 admitted calls time out after 100 ms and open the breaker,
//! later pages are served at once with a placeholder, and after the open
//! period a probe finds the dependency healthy again and the breaker closes.
//!
//! Run: `cargo run -p fusebox --example tower_axum --features tower,tokio`

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::Request;
use axum::routing::get;
use axum::Router;
use fusebox::retry::{Constant, Retry};
use fusebox::tower::{
    BoxError, BulkheadLayer, CircuitBreakerLayer, FallbackLayer, RetryLayer, TimeoutLayer,
};
use fusebox::Cause;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::util::BoxCloneSyncService;
use tower::{service_fn, ServiceBuilder, ServiceExt};

/// The reviews client as the app sees it: any clone-able tower service.
type Reviews = BoxCloneSyncService<u32, String, BoxError>;

#[derive(Clone)]
struct App {
    reviews: Reviews,
}

/// The remote reviews service (simulated): 10 ms when healthy, 2 s when slow.
async fn remote_reviews(slow: Arc<AtomicBool>, id: u32) -> Result<String, BoxError> {
    let latency = if slow.load(Ordering::Relaxed) {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(10)
    };
    tokio::time::sleep(latency).await;
    Ok(format!("{} reviews, 4.{} stars", id * 3, id % 10))
}

async fn product_page(State(app): State<App>, Path(id): Path<u32>) -> String {
    let product = format!("product #{id}");
    let price = format!("{}.99 EUR", 10 + id);
    // `oneshot` waits for readiness and calls; the fallback makes it infallible
    // in practice, but a tower service may still fail, so handle it.
    let reviews = match app.reviews.oneshot(id).await {
        Ok(reviews) => reviews,
        Err(e) => format!("reviews error: {e}"),
    };
    format!("{product} | {price} | {reviews}")
}

/// The fallback: why the reviews are missing (the one fallback shape: a
/// `Cause` in, `Some(answer)` out).
fn placeholder(why: Cause<'_, BoxError>) -> Option<String> {
    let why = match why {
        Cause::Rejected(_) => "breaker open".to_string(),
        Cause::BulkheadFull(_) => "too many calls in flight".to_string(),
        Cause::TimedOut(_) => "timed out".to_string(),
        Cause::Failed(err) => format!("failed: {err}"),
        _ => "unknown".to_string(),
    };
    Some(format!("(reviews unavailable: {why})"))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let slow = Arc::new(AtomicBool::new(false));
    let breaker = fusebox::CircuitBreaker::builder()
        .name("reviews")
        .consecutive_failures(3)
        .open_for(Duration::from_millis(500))
        .on_transition(|t| println!("    [breaker {} -> {}: {:?}]", t.from, t.to, t.reason))
        .build()?;

    let client = {
        let slow = slow.clone();
        service_fn(move |id: u32| remote_reviews(slow.clone(), id))
    };
    // Retry the dependency's own errors once; not timeouts (the page would
    // wait twice as long) and never the breaker's or the bulkhead's refusals.
    let retry = Retry::builder()
        .max_attempts(2)
        .backoff(Constant::new(Duration::from_millis(20)))
        .retry_timeouts(false)
        .build()?;
    let reviews = ServiceBuilder::new()
        .layer(FallbackLayer::new(placeholder))
        .layer(RetryLayer::new(retry))
        .layer(CircuitBreakerLayer::new(breaker.clone()))
        .layer(BulkheadLayer::new(fusebox::Bulkhead::new(4)))
        .layer(TimeoutLayer::new(Duration::from_millis(100)))
        .service(client);
    let app = Router::new()
        .route("/product/{id}", get(product_page))
        .with_state(App {
            reviews: BoxCloneSyncService::new(reviews),
        });

    let start = Instant::now();
    let page = |id: u32| {
        let app = app.clone();
        let breaker = breaker.clone();
        async move {
            let t = Instant::now();
            let req = Request::get(format!("/product/{id}")).body(Body::empty())?;
            let res = app.oneshot(req).await?;
            let status = res.status();
            let body = axum::body::to_bytes(res.into_body(), 1 << 16).await?;
            println!(
                "t={:>5}ms  GET /product/{id:<2} -> {status} in {:>4}ms  [{}]  {}",
                start.elapsed().as_millis(),
                t.elapsed().as_millis(),
                breaker.state(),
                String::from_utf8_lossy(&body)
            );
            Ok::<_, BoxError>(())
        }
    };

    println!("reviews healthy:");
    for id in 1..=3 {
        page(id).await?;
    }
    println!("reviews slow (2 s per call; our timeout is 100 ms); a burst of 6 pages at once:");
    slow.store(true, Ordering::Relaxed);
    let mut burst = tokio::task::JoinSet::new();
    for id in 4..=9 {
        burst.spawn(page(id));
    }
    while let Some(done) = burst.join_next().await {
        done??;
    }
    println!("then one page at a time:");
    for id in 10..=12 {
        page(id).await?;
    }
    println!("reviews healthy again; waiting out the open period (500 ms)...");
    slow.store(false, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    for id in 13..=15 {
        page(id).await?;
    }
    println!(
        "\nevery page was served; while the breaker was open the pages took ~0 ms instead of the 100 ms timeout \
         (and instead of the 2 s an unguarded call would take)."
    );
    Ok(())
}
