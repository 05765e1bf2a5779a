//! A blocking thread pool, the setting of seed 001: a product page served by
//! a fixed pool of worker threads, whose reviews come from a dependency that
//! turns slow for a while.
//!
//! The same traffic runs twice, once unprotected and once with a bulkhead (at
//! most 2 workers inside the reviews call) and a breaker (3 failures in a row
//! open it for 200 ms) and a fallback ("reviews unavailable"). A blocking call
//! cannot be interrupted, so no timeout here can give a stuck thread back: the
//! bulkhead limits how many threads can get stuck, and the breaker stops
//! sending threads into the slow call at all.
//!
//! Run: `cargo run -p fusebox --example blocking`

use fusebox::{Bulkhead, CircuitBreaker, Error};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const RATE_PER_SEC: u64 = 200;
const RUN: Duration = Duration::from_millis(1500);
/// The reviews dependency is slow between these two instants.
const SLOW_FROM: Duration = Duration::from_millis(300);
const SLOW_UNTIL: Duration = Duration::from_millis(1000);
/// How long the reviews client blocks before its own socket timeout fires.
const SLOW_CALL: Duration = Duration::from_millis(300);
const FAST_CALL: Duration = Duration::from_millis(5);

/// The reviews dependency: fast and fine, or (while slow) blocking until the
/// client's socket timeout fires.
fn fetch_reviews(start: Instant, id: u64) -> Result<String, String> {
    let t = start.elapsed();
    if (SLOW_FROM..SLOW_UNTIL).contains(&t) {
        thread::sleep(SLOW_CALL);
        Err("read timed out after 300ms".to_string())
    } else {
        thread::sleep(FAST_CALL);
        Ok(format!("{} reviews", id % 50))
    }
}

#[derive(Default)]
struct Tally {
    pages: AtomicU64,
    with_reviews: AtomicU64,
    failed: AtomicU64,
    bulkhead_full: AtomicU64,
    breaker_open: AtomicU64,
    reviews_calls: AtomicU64,
    latencies: Mutex<Vec<Duration>>,
}

struct Guards {
    bulkhead: Bulkhead,
    breaker: CircuitBreaker,
}

/// Renders one product page: product and price are local, reviews are not.
fn product_page(start: Instant, id: u64, guards: Option<&Guards>, tally: &Tally) -> String {
    let product = format!("product #{id}");
    let price = format!("{}.99 EUR", 10 + id % 90);
    let reviews = match guards {
        None => {
            tally.reviews_calls.fetch_add(1, Ordering::Relaxed);
            fetch_reviews(start, id)
        }
        Some(g) => match g.bulkhead.try_call(|| {
            g.breaker.call(|| {
                tally.reviews_calls.fetch_add(1, Ordering::Relaxed);
                fetch_reviews(start, id)
            })
        }) {
            Ok(Ok(reviews)) => Ok(reviews),
            Ok(Err(Error::Rejected(_))) => {
                tally.breaker_open.fetch_add(1, Ordering::Relaxed);
                Err("reviews unavailable (breaker open)".to_string())
            }
            Ok(Err(Error::Inner(e))) => Err(e),
            Err(_full) => {
                tally.bulkhead_full.fetch_add(1, Ordering::Relaxed);
                Err("reviews unavailable (busy)".to_string())
            }
        },
    };
    let reviews = match reviews {
        Ok(r) => {
            tally.with_reviews.fetch_add(1, Ordering::Relaxed);
            r
        }
        Err(e) => {
            tally.failed.fetch_add(1, Ordering::Relaxed);
            e
        }
    };
    format!("{product} | {price} | {reviews}")
}

/// Sends `RATE_PER_SEC` page requests for `RUN` to a pool of `WORKERS`
/// threads and waits until every page is served.
fn run(guards: Option<Guards>) -> Tally {
    let tally = Arc::new(Tally::default());
    let guards = Arc::new(guards);
    let (tx, rx) = mpsc::channel::<(u64, Instant)>();
    let rx = Arc::new(Mutex::new(rx));
    let start = Instant::now();
    let mut pool = Vec::new();
    for _ in 0..WORKERS {
        let (rx, tally, guards) = (rx.clone(), tally.clone(), guards.clone());
        pool.push(thread::spawn(move || loop {
            let job = rx.lock().unwrap().recv();
            let Ok((id, arrived)) = job else { return };
            let page = product_page(start, id, guards.as_ref().as_ref(), &tally);
            tally.pages.fetch_add(1, Ordering::Relaxed);
            tally.latencies.lock().unwrap().push(arrived.elapsed());
            if id % 60 == 0 {
                println!("  t={:>4}ms  {page}", start.elapsed().as_millis());
            }
        }));
    }
    let gap = Duration::from_secs(1) / RATE_PER_SEC as u32;
    let mut id = 0;
    while start.elapsed() < RUN {
        let due = start + gap * id as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        tx.send((id, Instant::now())).unwrap();
        id += 1;
    }
    drop(tx);
    for worker in pool {
        worker.join().unwrap();
    }
    Arc::try_unwrap(tally).ok().expect("workers are done")
}

fn report(name: &str, t: &Tally) {
    let mut lat = t.latencies.lock().unwrap().clone();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
    println!(
        "{name:<12} pages {:>4} | reviews shown {:>4}, missing {:>4} (bulkhead full {:>3}, breaker open {:>3}) | calls to reviews {:>4} | page latency p50 {:>6.1?} p99 {:>8.1?} max {:>8.1?}",
        t.pages.load(Ordering::Relaxed),
        t.with_reviews.load(Ordering::Relaxed),
        t.failed.load(Ordering::Relaxed),
        t.bulkhead_full.load(Ordering::Relaxed),
        t.breaker_open.load(Ordering::Relaxed),
        t.reviews_calls.load(Ordering::Relaxed),
        pct(0.5),
        pct(0.99),
        lat[lat.len() - 1],
    );
}

fn main() -> Result<(), fusebox::ConfigError> {
    println!(
        "{WORKERS} worker threads, {RATE_PER_SEC} pages/s for {RUN:?}; reviews slow ({SLOW_CALL:?}, then an error) from {SLOW_FROM:?} to {SLOW_UNTIL:?}\n"
    );

    println!("unprotected (every worker waits on the slow reviews call):");
    let bare = run(None);

    println!("\nprotected (bulkhead of 2 + breaker: 3 failures open it for 200ms):");
    let guards = Guards {
        bulkhead: Bulkhead::new(2),
        breaker: CircuitBreaker::builder()
            .name("reviews")
            .consecutive_failures(3)
            .open_for(Duration::from_millis(200))
            .on_transition(|t| println!("  breaker: {} -> {} ({:?})", t.from, t.to, t.reason))
            .build()?,
    };
    let guarded = run(Some(guards));

    println!();
    report("unprotected", &bare);
    report("protected", &guarded);
    println!(
        "\nThe unprotected pool queues every page behind the slow reviews call (see its latency); \
         the protected pool keeps at least {} of {WORKERS} workers free for pages and serves them without reviews.",
        WORKERS - 2
    );
    Ok(())
}
