//! A stranger floods a fleet's channel with oversized messages (5 x 10 MB
//! and 2,000 x 100 KB PUBLISHes), against real `redis-server` processes
//! started here on free loopback ports: the node's memory stays at its
//! baseline, the messages are counted, and trips keep travelling, also
//! when Redis drops the subscriber for its output-buffer limit.
//!
//! Ignored by default (they need `redis-server` and push about 750 MB
//! through loopback each): run with `-- --include-ignored`, and with
//! FUSEBOX_REQUIRE_REDIS=1 to fail instead of skip without the server.
#![cfg(feature = "fleet")]

use fusebox::fleet::{Fleet, FleetBuilder, FleetStatus, LocalRedis};
use fusebox::{CircuitBreaker, State};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MB: usize = 1 << 20;

/// The flood: 5 x 10 MB, then 2,000 x 100 KB.
const FLOOD: [(usize, usize); 2] = [(5, 10 * MB), (2_000, 100 * 1024)];
const FLOOD_MESSAGES: u64 = 2_005;

fn node(url: &str, ns: &str, id: &str, sync: Duration) -> FleetBuilder {
    Fleet::builder()
        .redis_url(url)
        .namespace(ns)
        .node(id)
        .sync_every(sync)
        .timeout(Duration::from_secs(1))
}

/// Polls `cond` every 2 ms for up to `limit`; true if it held.
async fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    cond()
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .name("payments")
        .consecutive_failures(1)
        .open_for(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// This process's resident set, in bytes (VmRSS of /proc/self/status).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// PUBLISHes [`FLOOD`] on namespace `ns`'s channel, as a stranger would,
/// from a plain client; returns how many PUBLISHes reached a subscriber
/// (the sum of their answers).
async fn flood(url: &str, ns: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut reached = 0;
    for (count, size) in FLOOD {
        let payload = vec![b'x'; size];
        for _ in 0..count {
            let n: i64 = redis::cmd("PUBLISH")
                .arg(format!("fusebox:{{{ns}}}:events"))
                .arg(&payload[..])
                .query_async(&mut conn)
                .await
                .unwrap();
            reached += n;
        }
    }
    reached
}

fn counters(s: &FleetStatus) -> String {
    format!(
        "oversized={} dropped={} received={} channel_reconnects={} disconnects={}",
        s.messages_oversized,
        s.messages_dropped,
        s.messages_received,
        s.channel_reconnects,
        s.disconnects
    )
}

fn field(counters: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    counters
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {counters}"))
}

/// The child side of `a_flood_of_oversized_messages_leaves_rss_at_its_baseline`:
/// this test binary run again, as a process of its own (so that no other
/// test's memory is counted), with `FLOOD_CHILD_URL` set. It joins, prints
/// its baseline RSS, samples its RSS every 5 ms until the parent's FLOODED
/// line, waits until its counters stop moving, then prints its peak and
/// final RSS and its counters. In a normal run it returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_child_node() {
    let Ok(url) = std::env::var("FLOOD_CHILD_URL") else {
        return;
    };
    let fleet = node(&url, "flood-rss", "victim", Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    assert!(within(Duration::from_secs(5), || fleet.status().connected).await);
    let b = breaker();
    let _m = fleet.share(&b).await.unwrap();
    // Settle: the runtime's and the clients' first allocations are made.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = rss();
    println!("BASELINE {baseline}");
    let peak = Arc::new(AtomicUsize::new(baseline));
    let sampler = {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    assert_eq!(line.trim(), "FLOODED");
    // A short settle: until the counters stood still for 300 ms (at most 10 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = counters(&fleet.status());
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = counters(&fleet.status());
        if now == last {
            break;
        }
        last = now;
    }
    sampler.abort();
    println!("PEAK {}", peak.load(Ordering::Relaxed));
    println!("FINAL {}", rss());
    println!("COUNTERS {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_flood_of_oversized_messages_leaves_rss_at_its_baseline() {
    let Some(redis) = LocalRedis::start_or_skip("flood_rss") else {
        return;
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "flood_child_node",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FLOOD_CHILD_URL", redis.url())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = |word: &str| loop {
        let line = lines.next().expect(word).unwrap();
        // The harness may print "test NAME ... " before the first line.
        if let Some(at) = line.find(word) {
            return line[at + word.len()..].trim().to_owned();
        }
    };
    let baseline: usize = next("BASELINE").parse().unwrap();
    let t = Instant::now();
    let reached = flood(&redis.url(), "flood-rss").await;
    let took = t.elapsed();
    writeln!(child.stdin.as_mut().unwrap(), "FLOODED").unwrap();
    let peak: usize = next("PEAK").parse().unwrap();
    let after: usize = next("FINAL").parse().unwrap();
    let seen = next("COUNTERS");
    assert!(child.wait().unwrap().success());
    let mb = |b: usize| b as f64 / MB as f64;
    eprintln!(
        "flood of {FLOOD_MESSAGES} in {took:?} ({reached} reached the node): RSS baseline \
         {:.1} MB, peak {:.1} MB, after {:.1} MB; {seen}",
        mb(baseline),
        mb(peak),
        mb(after)
    );
    let report = format!("baseline {baseline}, peak {peak}, after {after}; {seen}");
    assert!(after <= baseline + 10 * MB, "{report}");
    // Never held: not even while it came.
    assert!(peak <= baseline + 10 * MB, "{report}");
    // Each one counted, as oversized and as dropped; none reached the
    // breakers.
    let reconnects = field(&seen, "channel_reconnects");
    assert!(reconnects <= 1, "{report}");
    let oversized = field(&seen, "oversized");
    if reconnects == 0 {
        assert_eq!(reached as u64, FLOOD_MESSAGES, "{report}");
        assert_eq!(oversized, FLOOD_MESSAGES, "{report}");
    } else {
        assert!(oversized > 0 && oversized <= FLOOD_MESSAGES, "{report}");
    }
    assert_eq!(field(&seen, "dropped"), oversized, "{report}");
    assert_eq!(field(&seen, "received"), 0, "{report}");
    assert_eq!(field(&seen, "disconnects"), 0, "{report}");
}

/// Two nodes of `ns`; while [`FLOOD`] runs on their channel, a trip on
/// "tripper" then a reset, again and again, and once more after the flood.
/// Each trip must open "victim" within two `sync_every`. Returns how long
/// each took and the victim's status at the end.
async fn trips_through_a_flood(
    redis: &LocalRedis,
    ns: &'static str,
) -> (Vec<Duration>, FleetStatus) {
    let sync = Duration::from_millis(500);
    let victim = node(&redis.url(), ns, "victim", sync)
        .connect()
        .await
        .unwrap();
    let tripper = node(&redis.url(), ns, "tripper", sync)
        .connect()
        .await
        .unwrap();
    let both = || victim.status().connected && tripper.status().connected;
    assert!(within(Duration::from_secs(5), both).await);
    let (on_victim, on_tripper) = (breaker(), breaker());
    let _mv = victim.share(&on_victim).await.unwrap();
    let _mt = tripper.share(&on_tripper).await.unwrap();
    let url = redis.url();
    let flooding = tokio::spawn(async move { flood(&url, ns).await });
    let mut took = Vec::new();
    loop {
        let after_the_flood = flooding.is_finished();
        let t = Instant::now();
        let _ = on_tripper.call(|| Err::<(), _>("down"));
        let opened = within(sync * 2, || on_victim.state() == State::Open).await;
        took.push(t.elapsed());
        assert!(
            opened,
            "trip {} not there after {:?}: {:?}",
            took.len(),
            t.elapsed(),
            victim.status()
        );
        tripper.reset("payments").await.unwrap();
        let closed = || on_victim.state() == State::Closed && on_tripper.state() == State::Closed;
        assert!(within(sync * 2, closed).await, "{:?}", victim.status());
        if after_the_flood {
            break;
        }
    }
    flooding.await.unwrap();
    let status = victim.status();
    let slowest = took.iter().max().unwrap();
    eprintln!(
        "{ns}: {} trips, the slowest reached the victim in {slowest:?}; victim {}",
        took.len(),
        counters(&status)
    );
    (took, status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn trips_travel_during_and_after_a_flood_of_oversized_messages() {
    let Some(redis) = LocalRedis::start_or_skip("flood_trips") else {
        return;
    };
    let (took, status) = trips_through_a_flood(&redis, "flood-trips").await;
    assert!(took.len() >= 2, "{took:?}");
    // The commands' connection never dropped, the channel's at most once.
    assert_eq!(status.disconnects, 0, "{status:?}");
    assert!(status.channel_reconnects <= 1, "{status:?}");
    assert!(status.messages_oversized > 0, "{status:?}");
    assert!(status.messages_received > 0, "{status:?}");
}

/// Redis's `client-output-buffer-limit pubsub` at 4 MB: it closes a
/// subscriber's connection on every 10 MB message, however fast it reads.
/// Each such close costs the node one reconnect of its channel, and
/// nothing else: its commands' connection stays, and each trip still
/// arrives within two syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn trips_travel_when_redis_drops_the_subscriber_for_its_output_buffer() {
    let limit = ["--client-output-buffer-limit", "pubsub 4mb 1mb 1"];
    let Some(redis) = LocalRedis::start_with_or_skip("flood_trips_tight", &limit) else {
        return;
    };
    let (took, status) = trips_through_a_flood(&redis, "flood-tight").await;
    assert!(took.len() >= 2, "{took:?}");
    assert!(
        status.channel_reconnects >= 1,
        "Redis dropped no subscriber: {status:?}"
    );
    assert!(status.channel_reconnects <= 5, "{status:?}");
    assert_eq!(status.disconnects, 0, "{status:?}");
    assert!(status.connected, "{status:?}");
}

/// A node reaching Redis through a Unix socket reads its channel with the
/// same bound.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn over_a_unix_socket_oversized_messages_are_dropped_and_trips_travel() {
    let socket = std::env::temp_dir().join(format!("fusebox-flood-{}.sock", std::process::id()));
    let path = socket.to_string_lossy().into_owned();
    let args = ["--unixsocket", path.as_str(), "--unixsocketperm", "700"];
    let Some(redis) = LocalRedis::start_with_or_skip("flood_unix", &args) else {
        return;
    };
    let sync = Duration::from_secs(5); // no sync brings the trip in time
    let url = format!("unix://{path}");
    let victim = node(&url, "flood-unix", "victim", sync)
        .connect()
        .await
        .unwrap();
    let tripper = node(&redis.url(), "flood-unix", "tripper", sync)
        .connect()
        .await
        .unwrap();
    assert!(within(Duration::from_secs(5), || victim.status().connected).await);
    let (on_victim, on_tripper) = (breaker(), breaker());
    let _mv = victim.share(&on_victim).await.unwrap();
    let _mt = tripper.share(&on_tripper).await.unwrap();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let reached: i64 = redis::cmd("PUBLISH")
        .arg("fusebox:{flood-unix}:events")
        .arg(vec![b'x'; 10 * MB])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(reached, 2);
    let _ = on_tripper.call(|| Err::<(), _>("down"));
    assert!(within(Duration::from_secs(2), || on_victim.state() == State::Open).await);
    let status = victim.status();
    assert_eq!(
        (status.messages_oversized, status.messages_received),
        (1, 1),
        "{status:?}"
    );
    drop(redis);
    let _ = std::fs::remove_file(&socket);
}
