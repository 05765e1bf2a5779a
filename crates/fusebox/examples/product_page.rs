//! Seed 001's product page, async.
//!
//! A product-detail handler gets the product and its price locally (fast) and
//! the reviews from a separate reviews service. One day the reviews service
//! does not die, it gets slow: 5 s per call instead of 30 ms. Unprotected,
//! every page then waits 5 s, and the pages pile up until the service falls
//! over, even for users who only wanted the price.
//!
//! Here the reviews call goes through a `fusebox::Pipeline`: outermost first,
//! a fallback (show the page without reviews, and say why), a breaker (failure
//! rate over the last calls), a bulkhead (at most 8 review calls in flight,
//! never queue) and a timeout (300 ms). Users keep arriving (one page every 10 ms) while the
//! reviews service is healthy, then slow, then healthy again. The example
//! prints a line per 250 ms window: pages served, how many had reviews, why
//! the others did not, and how long pages took.
//!
//! Run: `cargo run -p fusebox --example product_page --features tokio`

use fusebox::pipeline::AllErrors;
use fusebox::retry::{AnyError, DefaultBackoff};
use fusebox::{Bulkhead, Cause, CircuitBreaker, GuardedFuture, Pipeline};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUN: Duration = Duration::from_millis(2500);
const ARRIVAL_EVERY: Duration = Duration::from_millis(10);
const SLOW_FROM: Duration = Duration::from_millis(500);
const SLOW_UNTIL: Duration = Duration::from_millis(1500);
const WINDOW: Duration = Duration::from_millis(250);

/// Why a page was shown without reviews.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    BulkheadFull,
    BreakerOpen,
    TimedOut,
    Failed,
}

/// What the page shows in the reviews box.
enum Reviews {
    Shown(Vec<String>),
    Missing(Missing),
}

/// The reviews service: 30 ms when healthy, 5 s while slow.
async fn fetch_reviews(start: Instant, id: u64) -> Result<Reviews, String> {
    let slow = (SLOW_FROM..SLOW_UNTIL).contains(&start.elapsed());
    let latency = if slow {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(30)
    };
    tokio::time::sleep(latency).await;
    Ok(Reviews::Shown(vec![
        format!("great product #{id}"),
        "fast shipping".into(),
    ]))
}

/// The fallback: no reviews beats no page. It is told why.
fn without_reviews(why: Cause<'_, String>) -> Option<Reviews> {
    Some(Reviews::Missing(match why {
        Cause::Rejected(_) => Missing::BreakerOpen,
        Cause::BulkheadFull(_) => Missing::BulkheadFull,
        Cause::TimedOut(_) => Missing::TimedOut,
        _ => Missing::Failed,
    }))
}

/// The pipeline's type, with a `fn` fallback so it can be named and shared.
type Fallback = fn(Cause<'_, String>) -> Option<Reviews>;
type ReviewsPipeline = Pipeline<DefaultBackoff, AnyError, Fallback, AllErrors>;

struct Page {
    at: Duration,
    took: Duration,
    missing: Option<Missing>,
    html: String,
}

/// The handler: local data, plus reviews or the fallback.
async fn product_page(reviews: &ReviewsPipeline, start: Instant, id: u64) -> Page {
    let t = Instant::now();
    let product = format!("product #{id}");
    let price = format!("{}.99 EUR", 10 + id % 90);
    // One attempt through the pipeline, read like seed 002's decorator.
    let (reviews, missing) = match fetch_reviews(start, id).guarded(reviews).await {
        Ok(Reviews::Shown(list)) => (format!("{} reviews", list.len()), None),
        Ok(Reviews::Missing(why)) => (format!("reviews unavailable ({why:?})"), Some(why)),
        // The fallback always answers; still, a page never fails for its reviews.
        Err(e) => (format!("reviews unavailable ({e})"), Some(Missing::Failed)),
    };
    Page {
        at: t - start,
        took: t.elapsed(),
        missing,
        html: format!("{product} | {price} | {reviews}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), fusebox::ConfigError> {
    let start = Instant::now();
    let breaker = CircuitBreaker::builder()
        .name("reviews")
        .failure_rate(0.5)
        .count_window(20)
        .min_calls(5)
        .open_for(Duration::from_millis(300))
        .on_transition(move |t| {
            let at = start.elapsed().as_millis();
            println!(
                "  t={at:>4}ms  breaker {} -> {}: {:?}",
                t.from, t.to, t.reason
            )
        })
        .build()?;
    let reviews: Arc<ReviewsPipeline> = Arc::new(
        Pipeline::builder()
            .fallback(without_reviews as Fallback)
            .breaker(breaker)
            .bulkhead(Bulkhead::new(8))
            .timeout(Duration::from_millis(300))
            .build(),
    );
    println!(
        "one page every {ARRIVAL_EVERY:?} for {RUN:?}; reviews take 5 s from {SLOW_FROM:?} to {SLOW_UNTIL:?}, else 30 ms\n"
    );

    let pages = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = tokio::task::JoinSet::new();
    let mut id = 0;
    while start.elapsed() < RUN {
        let (reviews, pages) = (reviews.clone(), pages.clone());
        tasks.spawn(async move {
            let page = product_page(&reviews, start, id).await;
            pages.lock().unwrap().push(page);
        });
        id += 1;
        tokio::time::sleep_until((start + ARRIVAL_EVERY * id as u32).into()).await;
    }
    while tasks.join_next().await.is_some() {}

    let mut pages = std::mem::take(&mut *pages.lock().unwrap());
    pages.sort_by_key(|p| p.at);
    println!("\n  window     pages  reviews  bulkhead-full  breaker-open  timed-out  slowest page  last page");
    let mut from = Duration::ZERO;
    while from < RUN {
        let w: Vec<&Page> = pages
            .iter()
            .filter(|p| p.at >= from && p.at < from + WINDOW)
            .collect();
        let count = |m: Option<Missing>| w.iter().filter(|p| p.missing == m).count();
        let slowest = w.iter().map(|p| p.took).max().unwrap_or_default();
        println!(
            "  {:>4}-{:<4}ms {:>4} {:>8} {:>14} {:>13} {:>10} {:>13.0?}  {}",
            from.as_millis(),
            (from + WINDOW).as_millis(),
            w.len(),
            count(None),
            count(Some(Missing::BulkheadFull)),
            count(Some(Missing::BreakerOpen)),
            count(Some(Missing::TimedOut)),
            slowest,
            w.last().map(|p| p.html.as_str()).unwrap_or(""),
        );
        from += WINDOW;
    }
    let slowest = pages.iter().map(|p| p.took).max().unwrap_or_default();
    println!(
        "\n{} pages, every one with product and price; the slowest took {slowest:.0?} (the reviews service took 5 s)",
        pages.len()
    );
    Ok(())
}
