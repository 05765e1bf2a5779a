//! The fleet's three numbers (BENCHMARKS.md, "Fleet"), against a
//! `redis-server` this program starts on a free loopback port:
//!
//! ```text
//! cargo run --release -p fusebox-bench --bin fleet
//! ```
//!
//! 1. The closed-path cost of a shared breaker against the same breaker
//!    unshared (ns per call, one thread, best of 21 interleaved runs of 2M
//!    calls), for a consecutive-failures breaker (the shared one runs the
//!    very same code: its ratio shows the measurement's noise) and a
//!    failure-rate breaker (which also counts its verdicts for the fleet).
//! 2. Redis commands per second from one node (sync every 100 ms, one
//!    failure-rate breaker) while it makes 1,000 and 100,000 calls per second,
//!    counted by Redis (`INFO commandstats`): round trips (EVALSHA) and every
//!    command including those run inside the scripts.
//! 3. Time from a trip on one node to open on another (median and max over
//!    100 trips): from just before the failing call on node A to node B's
//!    transition listener hearing it.
//!
//! `fleet --closed-path POLICY SHARING CALLS` (POLICY `consecutive` or
//! `rate`, SHARING `unshared` or `shared`) only runs the closed path, CALLS
//! calls after a warm-up, for `results/fleet-instructions.sh` to count its
//! instructions with callgrind.

use fusebox::fleet::{Fleet, LocalRedis, Membership};
use fusebox::{CircuitBreaker, State};
use std::hint::black_box;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CALLS: u64 = 2_000_000;
/// Interleaved runs per breaker; the best of each counts (the machine is
/// shared: the best run is the one least disturbed).
const ROUNDS: usize = 21;
const SYNC: Duration = Duration::from_millis(100);

fn consecutive() -> fusebox::Builder {
    CircuitBreaker::builder()
        .name("payments")
        .consecutive_failures(5)
}

fn rate() -> fusebox::Builder {
    CircuitBreaker::builder()
        .name("payments")
        .failure_rate(0.5)
        .count_window(100)
}

/// ns per successful call through `b`.
fn closed_path(b: &CircuitBreaker) -> f64 {
    let t = Instant::now();
    calls(b, CALLS);
    t.elapsed().as_nanos() as f64 / CALLS as f64
}

/// `n` successful calls through `b` (what callgrind counts: see
/// `results/fleet-instructions.sh`).
#[inline(never)]
fn calls(b: &CircuitBreaker, n: u64) {
    for i in 0..n {
        let _ = black_box(b.call(|| Ok::<_, ()>(black_box(i))));
    }
}

/// `--closed-path POLICY SHARING CALLS`: the closed path alone, for
/// callgrind. The shared breaker shares through a fleet on a real Redis.
async fn closed_path_only(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: fleet --closed-path consecutive|rate unshared|shared CALLS";
    let [policy, sharing, n] = args else {
        return Err(usage.into());
    };
    let make = match policy.as_str() {
        "consecutive" => consecutive,
        "rate" => rate,
        _ => return Err(usage.into()),
    };
    let n: u64 = n.parse().map_err(|_| usage)?;
    let b = make().build()?;
    let Some(redis) = LocalRedis::start_or_skip("the fleet's closed path") else {
        return Ok(());
    };
    let fleet = node(&redis, "instructions", "a").await;
    let _m = match sharing.as_str() {
        "shared" => Some(fleet.share(&b).await?),
        "unshared" => None,
        _ => return Err(usage.into()),
    };
    tokio::task::block_in_place(|| {
        calls(&b, 1_000);
        calls(&b, n);
    });
    assert_eq!(b.state(), State::Closed);
    Ok(())
}

async fn node(redis: &LocalRedis, ns: &str, id: &str) -> Fleet {
    let fleet = Fleet::builder()
        .redis_url(redis.url())
        .namespace(ns)
        .node(id)
        .sync_every(SYNC)
        .connect()
        .await
        .expect("valid settings");
    while !fleet.status().connected {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    fleet
}

async fn commandstats(conn: &mut redis::aio::MultiplexedConnection) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .expect("INFO");
    let (mut evalsha, mut all) = (0, 0);
    for line in info.lines().filter(|l| l.starts_with("cmdstat_")) {
        let name = &line["cmdstat_".len()..line.find(':').unwrap_or(0)];
        let calls: u64 = line
            .split("calls=")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if name == "info" {
            continue;
        }
        if name == "evalsha" {
            evalsha += calls;
        }
        all += calls;
    }
    (evalsha, all)
}

/// Calls `b` at `rate` calls per second for `secs`; returns the rate made.
fn paced(b: &CircuitBreaker, rate: u64, secs: u64) -> f64 {
    let start = Instant::now();
    let total = rate * secs;
    let gap = Duration::from_secs(1).as_nanos() as u64 / rate;
    for i in 0..total {
        let due = Duration::from_nanos(i * gap);
        while start.elapsed() < due {
            std::hint::spin_loop();
        }
        let _ = b.call(|| Ok::<_, ()>(()));
    }
    total as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--closed-path") {
        return closed_path_only(&args[1..]).await;
    }
    let Some(redis) = LocalRedis::start_or_skip("the fleet benchmark") else {
        return Ok(());
    };

    println!("1. closed path, one thread, ns/call (best of {ROUNDS}):");
    for (policy, make) in [
        (
            "consecutive_failures(5)",
            consecutive as fn() -> fusebox::Builder,
        ),
        ("failure_rate(0.5), count_window(100)", rate),
    ] {
        let fleet = node(&redis, "cost", "a").await;
        let local = make().build()?;
        let shared = make().build()?;
        let _m: Membership = fleet.share(&shared).await?;
        let (mut l, mut s) = (f64::MAX, f64::MAX);
        for _ in 0..ROUNDS {
            l = l.min(closed_path(&local));
            s = s.min(closed_path(&shared));
        }
        assert_eq!(shared.state(), State::Closed);
        println!(
            "   {policy}: unshared {l:.1}, shared {s:.1} ({:.2}x)",
            s / l
        );
    }

    println!("2. Redis commands per second from one node (sync every {SYNC:?}):");
    let client = redis::Client::open(redis.url())?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    for calls_per_sec in [1_000, 100_000] {
        let ns = format!("load{calls_per_sec}");
        let fleet = node(&redis, &ns, "a").await;
        let b = rate().build()?;
        let _m = fleet.share(&b).await?;
        let secs = 5;
        let before = commandstats(&mut conn).await;
        let made = tokio::task::block_in_place(|| paced(&b, calls_per_sec, secs));
        let after = commandstats(&mut conn).await;
        let per_sec = |a: u64, b: u64| (a - b) as f64 / secs as f64;
        println!(
            "   {made:>9.0} calls/s: {:.1} round trips/s (EVALSHA), {:.1} commands/s counting those inside the script",
            per_sec(after.0, before.0),
            per_sec(after.1, before.1)
        );
        drop(fleet);
    }

    println!("3. trip on node A to open on node B, loopback, 100 trips:");
    let a = node(&redis, "latency", "a").await;
    let b = node(&redis, "latency", "b").await;
    let (tx, rx) = mpsc::channel();
    let on_a = consecutive().consecutive_failures(1).build()?;
    let on_b = consecutive()
        .consecutive_failures(1)
        .on_transition(move |t| {
            if t.to == State::Open {
                let _ = tx.send(Instant::now());
            }
        })
        .build()?;
    let _ma = a.share(&on_a).await?;
    let _mb = b.share(&on_b).await?;
    let mut took = Vec::new();
    for _ in 0..100 {
        a.reset("payments").await?;
        while on_a.state() != State::Closed || on_b.state() != State::Closed {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        while rx.try_recv().is_ok() {}
        let t0 = Instant::now();
        let _ = on_a.call(|| Err::<(), _>("down"));
        let heard = tokio::task::block_in_place(|| rx.recv_timeout(Duration::from_secs(2)))?;
        took.push(heard - t0);
    }
    took.sort();
    println!(
        "   median {:?}, max {:?} (min {:?})",
        took[took.len() / 2],
        took[took.len() - 1],
        took[0]
    );
    Ok(())
}
