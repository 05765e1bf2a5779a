//! A fleet of replicas: three nodes of one service call a payments API that
//! is down. Each node's breaker opens after 5 failures in a row.
//!
//! Run twice over the same traffic: with three local breakers, the API sees
//! 5 failing calls per node before every node has learnt it is down (15);
//! with the breakers shared through Redis (`fusebox::fleet`), the busiest
//! node's trip reaches the other two within milliseconds, while they have
//! made a call or two each. The example starts its own `redis-server` on a
//! free loopback port (and says so and stops if there is none).
//!
//! Run: `cargo run -p fusebox --features fleet --example fleet`

use fusebox::fleet::{Fleet, LocalRedis};
use fusebox::CircuitBreaker;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NODES: usize = 3;
/// How often each node calls payments (a load balancer is rarely even: one
/// busy node, two quieter ones), and for how long.
const EVERY: [Duration; NODES] = [
    Duration::from_millis(2),
    Duration::from_millis(15),
    Duration::from_millis(25),
];
const RUN: Duration = Duration::from_millis(400);

/// The payments API, down: counts the calls it gets, fails them all.
#[derive(Default)]
struct Payments {
    calls: AtomicU64,
}

impl Payments {
    fn charge(&self) -> Result<(), &'static str> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Err("503 from payments")
    }
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .name("payments")
        .consecutive_failures(5)
        .open_for(Duration::from_secs(30))
        .build()
        .expect("valid settings")
}

/// Every node calls payments through its own breaker, at its own pace;
/// returns the calls payments saw.
async fn traffic(breakers: Vec<CircuitBreaker>) -> u64 {
    let payments = Arc::new(Payments::default());
    let mut nodes = Vec::new();
    for (i, b) in breakers.into_iter().enumerate() {
        let payments = Arc::clone(&payments);
        nodes.push(tokio::spawn(async move {
            let start = Instant::now();
            while start.elapsed() < RUN {
                let _ = b.call(|| payments.charge());
                tokio::time::sleep(EVERY[i]).await;
            }
        }));
    }
    for n in nodes {
        n.await.expect("node task");
    }
    payments.calls.load(Ordering::Relaxed)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(redis) = LocalRedis::start_or_skip("the fleet example") else {
        return Ok(());
    };

    let alone = traffic((0..NODES).map(|_| breaker()).collect()).await;

    let mut fleets = Vec::new();
    let mut breakers = Vec::new();
    let mut memberships = Vec::new();
    for i in 0..NODES {
        let fleet = Fleet::builder()
            .redis_url(redis.url())
            .namespace("example")
            .node(format!("web-{i}"))
            .sync_every(Duration::from_millis(100))
            .connect()
            .await?;
        while !fleet.status().connected {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let b = breaker();
        memberships.push(fleet.share(&b).await?);
        breakers.push(b);
        fleets.push(fleet);
    }
    let shared = traffic(breakers).await;

    println!("{NODES} nodes, payments down, each breaker opens after 5 failures in a row:");
    println!("  failing calls payments saw, each node alone:   {alone}");
    println!("  failing calls payments saw, breakers shared:   {shared}");
    Ok(())
}
