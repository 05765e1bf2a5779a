//! The fleet's rules against real `redis-server` processes started here on
//! free loopback ports (skipped, with one line saying so, when redis-server
//! is missing, unless FUSEBOX_REQUIRE_REDIS=1).
#![cfg(feature = "fleet")]

use fusebox::fleet::{Fleet, LocalRedis, Membership};
use fusebox::{CircuitBreaker, Reason, State};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SYNC: Duration = Duration::from_millis(50);

async fn node(redis: &LocalRedis, ns: &str, id: &str) -> Fleet {
    Fleet::builder()
        .redis_url(redis.url())
        .namespace(ns)
        .node(id)
        .sync_every(SYNC)
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap()
}

/// Polls `cond` every 2 ms for up to 5 s; true if it held.
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    cond()
}

async fn connected(fleets: &[&Fleet]) {
    for f in fleets {
        assert!(eventually(|| f.status().connected).await, "{:?}", f.status());
    }
}

fn payments(b: fusebox::Builder) -> CircuitBreaker {
    b.name("payments").build().unwrap()
}

fn consecutive(n: u32, open: Duration) -> CircuitBreaker {
    payments(CircuitBreaker::builder().consecutive_failures(n).open_for(open))
}

fn fail(b: &CircuitBreaker, n: usize) {
    for _ in 0..n {
        let _ = b.call(|| Err::<(), _>("down"));
    }
}

/// N nodes of one namespace, each sharing a breaker made by `make`.
async fn fleet_of(
    redis: &LocalRedis,
    ns: &str,
    n: usize,
    make: impl Fn() -> CircuitBreaker,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    let mut out = Vec::new();
    for i in 0..n {
        let f = node(redis, ns, &format!("n{i}")).await;
        connected(&[&f]).await;
        let b = make();
        let m = f.share(&b).await.unwrap();
        out.push((f, b, m));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trips_travel_to_every_node_for_the_rest_of_the_period() {
    let Some(redis) = LocalRedis::start_or_skip("trips_travel") else {
        return;
    };
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let make = move || {
        let log = Arc::clone(&log);
        payments(
            CircuitBreaker::builder()
                .consecutive_failures(3)
                .open_for(Duration::from_secs(2))
                .on_transition(move |t| log.lock().unwrap().push((t.to, t.reason))),
        )
    };
    let nodes = fleet_of(&redis, "travel", 3, make).await;
    let started = Instant::now();
    fail(&nodes[0].1, 3);
    assert_eq!(nodes[0].1.state(), State::Open);
    for (_, b, _) in &nodes[1..] {
        assert!(eventually(|| b.state() == State::Open).await);
    }
    eprintln!("trip reached every node in {:?}", started.elapsed());
    // The rest of the same period: a little under 2 s, not a fresh 2 s.
    let r = nodes[1].1.try_acquire().unwrap_err().retry_after().unwrap();
    assert!(r <= Duration::from_secs(2) && r > Duration::from_millis(1500), "{r:?}");
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.iter().filter(|(to, _)| *to == State::Open).count(), 3);
    assert_eq!(
        heard.iter().filter(|(_, why)| *why == Reason::Remote).count(),
        2,
        "two nodes opened for a remote trip: {heard:?}"
    );
}
