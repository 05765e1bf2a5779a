//! The fleet's rules against real `redis-server` processes started here on
//! free loopback ports (ignored unless run with `--ignored`; then skipped,
//! with one line saying so, when redis-server is missing, unless
//! FUSEBOX_REQUIRE_REDIS=1).
#![cfg(feature = "fleet")]

use fusebox::fleet::{Fleet, LocalRedis, Membership};
use fusebox::{CircuitBreaker, Reason, State};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SYNC: Duration = Duration::from_millis(50);

async fn node(redis: &LocalRedis, ns: &str, id: &str) -> Fleet {
    node_with_quorum(redis, ns, id, 1).await
}

async fn node_with_quorum(redis: &LocalRedis, ns: &str, id: &str, quorum: u32) -> Fleet {
    node_with(redis, ns, id, quorum, SYNC).await
}

async fn node_with(redis: &LocalRedis, ns: &str, id: &str, quorum: u32, sync: Duration) -> Fleet {
    node_at(&redis.url(), ns, id, quorum, sync).await
}

async fn node_at(url: &str, ns: &str, id: &str, quorum: u32, sync: Duration) -> Fleet {
    Fleet::builder()
        .redis_url(url)
        .namespace(ns)
        .node(id)
        .sync_every(sync)
        .quorum(quorum)
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
        assert!(
            eventually(|| f.status().connected).await,
            "{:?}",
            f.status()
        );
    }
}

fn payments(b: fusebox::Builder) -> CircuitBreaker {
    b.name("payments").build().unwrap()
}

fn consecutive(n: u32, open: Duration) -> CircuitBreaker {
    payments(
        CircuitBreaker::builder()
            .consecutive_failures(n)
            .open_for(open),
    )
}

/// A failure-rate breaker: 50 % over the last 100 calls, `min_calls`.
fn rate(min_calls: u32) -> CircuitBreaker {
    payments(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(100)
            .min_calls(min_calls)
            .open_for(Duration::from_secs(5)),
    )
}

/// Opens after one failure for `open`, then one probe at a time.
fn probing(open: Duration) -> CircuitBreaker {
    payments(
        CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(open)
            .half_open_probes(1),
    )
}

/// Waits until every node's breaker is in `state` (fails after 5 s).
async fn all_become(nodes: &[(Fleet, CircuitBreaker, Membership)], state: State) {
    for (f, b, _) in nodes {
        assert!(
            eventually(|| b.state() == state).await,
            "{:?} on {}",
            b.state(),
            f.status().node
        );
    }
}

/// Once both are connected: a trip on `a` opens the same breaker on `b`.
async fn a_trip_travels(a: &Fleet, b: &Fleet) {
    connected(&[a, b]).await;
    let (on_a, on_b) = (
        consecutive(1, Duration::from_secs(5)),
        consecutive(1, Duration::from_secs(5)),
    );
    let _ma = a.share(&on_a).await.unwrap();
    let _mb = b.share(&on_b).await.unwrap();
    fail(&on_a, 1);
    assert!(eventually(|| on_b.state() == State::Open).await);
}

fn fail(b: &CircuitBreaker, n: usize) {
    for _ in 0..n {
        let _ = b.call(|| Err::<(), _>("down"));
    }
}

/// `nodes` once node 0's breaker has tripped (one failure) and every
/// node's breaker is open.
async fn tripped(
    nodes: Vec<(Fleet, CircuitBreaker, Membership)>,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    fail(&nodes[0].1, 1);
    all_become(&nodes, State::Open).await;
    nodes
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// N nodes of one namespace, each sharing a breaker made by `make`.
async fn fleet_of(
    redis: &LocalRedis,
    ns: &str,
    n: usize,
    make: impl Fn() -> CircuitBreaker,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    fleet_with_quorum(redis, ns, n, 1, make).await
}

async fn fleet_with_quorum(
    redis: &LocalRedis,
    ns: &str,
    n: usize,
    quorum: u32,
    make: impl Fn() -> CircuitBreaker,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    fleet_with(redis, ns, n, quorum, SYNC, make).await
}

async fn fleet_with(
    redis: &LocalRedis,
    ns: &str,
    n: usize,
    quorum: u32,
    sync: Duration,
    make: impl Fn() -> CircuitBreaker,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    let mut out = Vec::new();
    for i in 0..n {
        let f = node_with(redis, ns, &format!("n{i}"), quorum, sync).await;
        connected(&[&f]).await;
        let b = make();
        let m = f.share(&b).await.unwrap();
        out.push((f, b, m));
    }
    subscribed(redis, ns, n).await;
    out
}

/// Waits (at most 5 s) until `n` nodes listen on the namespace's channel:
/// the channel has a connection of its own, subscribed a moment after the
/// node reports itself connected, and a test that publishes a message
/// Redis does not hold (a forged one) needs every node to hear it.
async fn subscribed(redis: &LocalRedis, ns: &str, n: usize) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let channel = format!("fusebox:{{{ns}}}:events");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, listening): (String, usize) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query_async(&mut conn)
            .await
            .unwrap();
        if listening >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{listening} of {n} nodes subscribed to {channel}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
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
    // Syncs a minute apart: only a pushed message arrives within seconds.
    let nodes = fleet_with(&redis, "travel", 3, 1, Duration::from_secs(60), make).await;
    let started = Instant::now();
    fail(&nodes[0].1, 3);
    assert_eq!(nodes[0].1.state(), State::Open);
    all_become(&nodes[1..], State::Open).await;
    eprintln!("trip reached every node in {:?}", started.elapsed());
    // The rest of the same period: a little under 2 s, not a fresh 2 s.
    let r = nodes[1].1.try_acquire().unwrap_err().retry_after().unwrap();
    assert!(
        r <= Duration::from_secs(2) && r > Duration::from_millis(1500),
        "{r:?}"
    );
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.iter().filter(|(to, _)| *to == State::Open).count(), 3);
    assert_eq!(
        heard
            .iter()
            .filter(|(_, why)| *why == Reason::Remote)
            .count(),
        2,
        "two nodes opened for a remote trip: {heard:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn the_fleet_window_trips_nodes_that_are_each_below_min_calls() {
    let Some(redis) = LocalRedis::start_or_skip("fleet_window") else {
        return;
    };
    let nodes = fleet_of(&redis, "window", 3, || rate(10)).await;
    // 3 failures per node: 9 over the fleet, below min_calls.
    for (_, b, _) in &nodes {
        fail(b, 3);
    }
    tokio::time::sleep(SYNC * 6).await;
    for (_, b, _) in &nodes {
        assert_eq!(b.state(), State::Closed, "9 calls < min_calls 10");
        assert_eq!(b.snapshot().calls, 3, "each node's own window");
    }
    // One more failure on one node: 10 over the fleet, all failed.
    fail(&nodes[2].1, 1);
    all_become(&nodes, State::Open).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn the_fleet_window_is_not_tripped_by_successes() {
    let Some(redis) = LocalRedis::start_or_skip("fleet_window_rate") else {
        return;
    };
    let nodes = fleet_of(&redis, "window-ok", 2, || rate(10)).await;
    for (_, b, _) in &nodes {
        fail(b, 4);
        for _ in 0..6 {
            b.call(|| Ok::<_, ()>(())).unwrap();
        }
    }
    tokio::time::sleep(SYNC * 6).await;
    for (_, b, _) in &nodes {
        assert_eq!(b.state(), State::Closed, "40 % < 50 %");
    }
}

/// Admits on whichever node gets a permit; returns the permits taken.
fn try_all(nodes: &[(Fleet, CircuitBreaker, Membership)]) -> Vec<(usize, fusebox::Permit)> {
    nodes
        .iter()
        .enumerate()
        .filter_map(|(i, (_, b, _))| b.try_acquire().ok().map(|p| (i, p)))
        .collect()
}

/// Asks `b` until it admits a call (fails after 5 s); returns the permit.
async fn admitted(b: &CircuitBreaker) -> fusebox::Permit {
    let mut permit = None;
    assert!(
        eventually(|| {
            permit = permit.take().or_else(|| b.try_acquire().ok());
            permit.is_some()
        })
        .await
    );
    permit.unwrap()
}

/// Tries every node until some admit a probe; returns those permits.
async fn first_probes(
    nodes: &[(Fleet, CircuitBreaker, Membership)],
) -> Vec<(usize, fusebox::Permit)> {
    let mut held = Vec::new();
    assert!(
        eventually(|| {
            held.extend(try_all(nodes));
            !held.is_empty()
        })
        .await
    );
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn k_probes_in_the_whole_fleet_and_the_verdict_travels() {
    let Some(redis) = LocalRedis::start_or_skip("probes") else {
        return;
    };
    let nodes = tripped(fleet_of(&redis, "probes", 3, || probing(ms(300))).await).await;
    // After the open period, one probe in the whole fleet.
    let mut held = first_probes(&nodes).await;
    tokio::time::sleep(SYNC * 3).await;
    held.extend(try_all(&nodes));
    assert_eq!(held.len(), 1, "one probe fleet-wide");
    let (prober, permit) = held.pop().unwrap();
    let other = (prober + 1) % 3;
    let r = nodes[other].1.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::HalfOpen);
    assert_eq!(
        r.retry_after(),
        Some(SYNC),
        "denied: ask again after a sync"
    );
    // The probe fails: every node reopens.
    permit.failure();
    all_become(&nodes, State::Open).await;
    // Next round, the probe succeeds: every node closes.
    let mut held = first_probes(&nodes).await;
    assert_eq!(held.len(), 1);
    held.pop().unwrap().1.success();
    all_become(&nodes, State::Closed).await;
}

/// Who holds breaker `payments`'s probe lease in namespace `ns`, read
/// straight from Redis.
async fn lease_holder(redis: &LocalRedis, ns: &str) -> Option<String> {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("GET")
        .arg(format!("fusebox:{{{ns}}}:probe:payments"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Waits until `node` holds the lease (fails after 5 s).
async fn holds_lease(redis: &LocalRedis, ns: &str, node: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while lease_holder(redis, ns).await.as_deref() != Some(node) {
        assert!(Instant::now() < deadline, "{node} never took the lease");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Two nodes whose fleet breaker is half-open (opened for 200 ms by node
/// 0), node 0 holding the probe lease: its one call after the open period
/// was rejected and asked for it.
async fn half_open_held_by_n0(
    redis: &LocalRedis,
    ns: &str,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    let nodes = tripped(fleet_of(redis, ns, 2, || probing(ms(200))).await).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(nodes[0].1.try_acquire().is_err());
    holds_lease(redis, ns, "n0").await;
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_without_half_open_calls_does_not_take_the_probe_lease() {
    let Some(redis) = LocalRedis::start_or_skip("lease_idle") else {
        return;
    };
    let half_opens = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&half_opens);
    let nodes = fleet_of(&redis, "lease-idle", 2, move || {
        let seen = Arc::clone(&seen);
        payments(
            CircuitBreaker::builder()
                .consecutive_failures(1)
                .open_for(Duration::from_millis(200))
                .on_transition(move |t| {
                    if t.to == State::HalfOpen {
                        seen.fetch_add(1, Ordering::SeqCst);
                    }
                }),
        )
    })
    .await;
    fail(&nodes[0].1, 1);
    all_become(&nodes, State::Open).await;
    // The open period ends; no node has a call for several syncs.
    tokio::time::sleep(Duration::from_millis(200) + SYNC * 5).await;
    assert_eq!(lease_holder(&redis, "lease-idle").await, None);
    assert_eq!(
        half_opens.load(Ordering::SeqCst),
        0,
        "a sync does not put a breaker half-open"
    );
    // Node 1's first call is rejected (half-open, no lease) and asks for the
    // lease at once: its next call probes.
    let r = nodes[1].1.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::HalfOpen);
    assert_eq!(r.retry_after(), Some(SYNC));
    holds_lease(&redis, "lease-idle", "n1").await;
    // Its next call once that sync's answer is in probes.
    admitted(&nodes[1].1).await.success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_with_calls_takes_the_lease_ahead_and_its_first_half_open_call_probes() {
    let Some(redis) = LocalRedis::start_or_skip("lease_ahead") else {
        return;
    };
    let nodes = tripped(fleet_of(&redis, "lease-ahead", 2, || probing(ms(300))).await).await;
    // Node 1 has calls all along: rejected while open, then its first call
    // that finds the open period over probes (the lease was taken ahead).
    let start = Instant::now();
    let probe = loop {
        match nodes[1].1.try_acquire() {
            Ok(permit) => break permit,
            Err(r) => assert_eq!(r.state(), State::Open, "never rejected half-open"),
        }
        assert!(start.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(
        lease_holder(&redis, "lease-ahead").await.as_deref(),
        Some("n1")
    );
    // One probe fleet-wide: node 0 rejects (half-open, or open for the few
    // ms by which its view of the fleet's period may end later).
    let other = nodes[0].1.try_acquire();
    assert!(other.is_err(), "one probe fleet-wide");
    probe.success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn the_lease_is_taken_at_the_end_of_the_open_period_whatever_sync_every() {
    let Some(redis) = LocalRedis::start_or_skip("lease_end") else {
        return;
    };
    // Syncs 5 s apart: none falls in the 200 ms open period.
    let nodes = fleet_with(&redis, "lease-end", 2, 1, Duration::from_secs(5), || {
        probing(ms(200))
    });
    let nodes = tripped(nodes.await).await;
    // Node 1 has calls while the fleet is open, then none.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(100) {
        assert_eq!(nodes[1].1.try_acquire().unwrap_err().state(), State::Open);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // It takes the lease without another call: at the sync its calls asked
    // for (the period ends within sync_every) or at the one it makes when
    // the period ends.
    // (Deadlines of seconds: real time on a loaded machine.)
    let deadline = Instant::now() + Duration::from_secs(5);
    while lease_holder(&redis, "lease-end").await.as_deref() != Some("n1") {
        assert!(
            Instant::now() < deadline,
            "no lease at the end of the period"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // Its first call once its own open period is over probes (the lease
    // may have come a little before the end of the period). The node
    // applies the lease once Redis has answered its write, so a call in
    // between (the lease already readable in Redis) is refused half-open:
    // for a moment only.
    let leased = Instant::now();
    let permit = loop {
        match nodes[1].1.try_acquire() {
            Ok(permit) => break permit,
            Err(r) if r.state() == State::Open && Instant::now() < deadline => {
                tokio::time::sleep(r.retry_after().unwrap_or_default()).await;
            }
            Err(r) if r.state() == State::HalfOpen && leased.elapsed() < Duration::from_secs(1) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(r) => panic!("its first call after the open period probes: {r:?}"),
        }
    };
    permit.success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_holder_whose_calls_are_further_apart_than_sync_every_keeps_the_lease() {
    let Some(redis) = LocalRedis::start_or_skip("lease_sparse") else {
        return;
    };
    let nodes = half_open_held_by_n0(&redis, "lease-sparse").await;
    // Node 1 calls often meanwhile, node 0 not for more than two syncs
    // (but less than the lease's life, 3 x sync_every): node 0 keeps it.
    let quiet = Instant::now();
    while quiet.elapsed() < SYNC * 2 + SYNC / 2 {
        let r = nodes[1].1.try_acquire().unwrap_err();
        assert_eq!((r.state(), r.retry_after()), (State::HalfOpen, Some(SYNC)));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        lease_holder(&redis, "lease-sparse").await.as_deref(),
        Some("n0")
    );
    nodes[0]
        .1
        .try_acquire()
        .expect("the holder probes")
        .success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_holder_without_half_open_calls_gives_the_lease_to_a_node_with_some() {
    let Some(redis) = LocalRedis::start_or_skip("lease_handover") else {
        return;
    };
    let nodes = half_open_held_by_n0(&redis, "lease-handover").await;
    // Node 0 has no more calls; node 1 keeps asking and gets the lease
    // once node 0 went a lease's life (3 x sync_every) without demand.
    let probe = admitted(&nodes[1].1).await;
    assert_eq!(
        lease_holder(&redis, "lease-handover").await.as_deref(),
        Some("n1")
    );
    probe.success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_dropped_probe_permit_gives_the_lease_back() {
    let Some(redis) = LocalRedis::start_or_skip("lease_dropped") else {
        return;
    };
    let nodes = half_open_held_by_n0(&redis, "lease-dropped").await;
    // Node 0's probe (once the sync that took the lease is applied) is
    // dropped without a verdict, while node 0 keeps asking: it gives the
    // lease back at its next sync anyway.
    drop(admitted(&nodes[0].1).await);
    let _ = nodes[0].1.try_acquire();
    let start = Instant::now();
    while lease_holder(&redis, "lease-dropped").await.as_deref() == Some("n0") {
        let _ = nodes[0].1.try_acquire().map(drop);
        assert!(start.elapsed() < SYNC * 2 + SYNC / 2, "still held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_dead_probers_lease_expires_and_another_node_probes() {
    let Some(redis) = LocalRedis::start_or_skip("dead_prober") else {
        return;
    };
    let mut nodes = fleet_of(&redis, "dead", 2, || probing(Duration::from_millis(200))).await;
    fail(&nodes[0].1, 1);
    assert!(eventually(|| nodes[1].1.state() == State::Open).await);
    // Wait until node 0 holds the probe (node 1 gets no traffic).
    let permit = admitted(&nodes[0].1).await;
    // Node 0 dies mid-probe: its tasks stop, its lease is never released.
    let (dead, _breaker, membership) = nodes.remove(0);
    std::mem::forget(permit);
    drop(membership);
    drop(dead);
    let (_, b1, _) = &nodes[0];
    assert!(
        b1.try_acquire().is_err(),
        "the dead node's lease still holds"
    );
    // After the lease (3 x sync_every) expires, node 1 probes.
    admitted(b1).await.success();
    assert_eq!(b1.state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn with_a_quorum_of_two_one_nodes_trip_protects_only_itself() {
    let Some(redis) = LocalRedis::start_or_skip("quorum") else {
        return;
    };
    let nodes = fleet_with_quorum(&redis, "quorum", 3, 2, || {
        consecutive(1, Duration::from_secs(5))
    })
    .await;
    fail(&nodes[0].1, 1);
    assert_eq!(nodes[0].1.state(), State::Open, "its own trip protects it");
    tokio::time::sleep(SYNC * 6).await;
    assert_eq!(nodes[1].1.state(), State::Closed, "one node is no quorum");
    assert_eq!(nodes[2].1.state(), State::Closed);
    fail(&nodes[1].1, 1);
    assert!(
        eventually(|| nodes[2].1.state() == State::Open).await,
        "two are"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn with_a_quorum_of_two_one_nodes_failures_do_not_trip_the_fleet_window() {
    let Some(redis) = LocalRedis::start_or_skip("quorum_window") else {
        return;
    };
    let nodes = fleet_with_quorum(&redis, "quorum-window", 2, 2, || rate(20)).await;
    // Node 0 sees only failures (its network path is broken); node 1 is fine.
    fail(&nodes[0].1, 15);
    for _ in 0..10 {
        nodes[1].1.call(|| Ok::<_, ()>(())).unwrap();
    }
    tokio::time::sleep(SYNC * 6).await;
    assert_eq!(
        nodes[1].1.state(),
        State::Closed,
        "one failing node is no quorum"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn control_reaches_every_node_and_later_joiners() {
    let Some(redis) = LocalRedis::start_or_skip("control") else {
        return;
    };
    let nodes = fleet_of(&redis, "control", 2, || {
        consecutive(5, Duration::from_secs(5))
    })
    .await;
    let (a, _, _) = &nodes[0];
    a.force_open("payments").await.unwrap();
    all_become(&nodes, State::ForcedOpen).await;
    let late = node(&redis, "control", "late").await;
    connected(&[&late]).await;
    let b = consecutive(5, Duration::from_secs(5));
    let _m = late.share(&b).await.unwrap();
    assert_eq!(b.state(), State::ForcedOpen, "a joiner starts forced open");

    nodes[1].0.disable("payments").await.unwrap();
    for b in nodes.iter().map(|n| &n.1).chain([&b]) {
        assert!(eventually(|| b.state() == State::Disabled).await);
    }
    late.reset("payments").await.unwrap();
    for b in nodes.iter().map(|n| &n.1).chain([&b]) {
        assert!(eventually(|| b.state() == State::Closed).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_joining_an_open_fleet_starts_open_for_what_remains() {
    let Some(redis) = LocalRedis::start_or_skip("join_open") else {
        return;
    };
    let nodes = fleet_of(&redis, "join", 1, || consecutive(1, Duration::from_secs(2))).await;
    fail(&nodes[0].1, 1);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let late = node(&redis, "join", "late").await;
    connected(&[&late]).await;
    let b = consecutive(1, Duration::from_secs(2));
    let _m = late.share(&b).await.unwrap();
    let r = b.try_acquire().unwrap_err().retry_after().unwrap();
    assert!(
        r < Duration::from_millis(1500) && r > Duration::from_millis(500),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn namespaces_are_apart_and_bad_messages_are_dropped() {
    let Some(redis) = LocalRedis::start_or_skip("namespaces") else {
        return;
    };
    let x = fleet_of(&redis, "x", 1, || consecutive(1, Duration::from_secs(5))).await;
    let y = fleet_of(&redis, "y", 1, || consecutive(1, Duration::from_secs(5))).await;
    fail(&x[0].1, 1);
    tokio::time::sleep(SYNC * 4).await;
    assert_eq!(y[0].1.state(), State::Closed, "another namespace's trip");

    // Forged and garbage messages on y's channel: dropped, counted.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let channel = "fusebox:{y}:events";
    let forged =
        fusebox::fleet::Message::new("x", "intruder", "payments", fusebox::fleet::Kind::ForceOpen);
    let big = vec![b'a'; 100_000];
    for payload in [forged.encode(), b"\xff\xfe garbage".to_vec(), big] {
        let _: i64 = redis::cmd("PUBLISH")
            .arg(channel)
            .arg(payload)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    assert!(
        eventually(|| y[0].0.status().messages_dropped == 3).await,
        "{:?}",
        y[0].0.status()
    );
    assert_eq!(y[0].0.status().messages_oversized, 1, "the 100 KB one");
    assert_eq!(y[0].1.state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn dropping_the_membership_stops_sharing() {
    let Some(redis) = LocalRedis::start_or_skip("membership") else {
        return;
    };
    let mut nodes = fleet_of(&redis, "leave", 2, || {
        consecutive(1, Duration::from_secs(5))
    })
    .await;
    let (_f, b, m) = nodes.pop().unwrap();
    drop(m);
    fail(&nodes[0].1, 1);
    tokio::time::sleep(SYNC * 4).await;
    assert_eq!(b.state(), State::Closed);
    fail(&b, 1); // and its own trips stay local
    tokio::time::sleep(SYNC * 2).await;
    assert_eq!(_f.status().shared, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_registry_shares_every_breaker_it_builds() {
    let Some(redis) = LocalRedis::start_or_skip("registry") else {
        return;
    };
    let a = node(&redis, "registry", "a").await;
    let b = node(&redis, "registry", "b").await;
    connected(&[&a, &b]).await;
    let fusebox = fusebox::registry::Fusebox::builder()
        .fleet(a.clone())
        .build()
        .unwrap();
    let mine = fusebox.breaker("payments");
    let theirs = consecutive(1, Duration::from_secs(5));
    let _m = b.share(&theirs).await.unwrap();
    assert!(eventually(|| a.status().shared == 1).await);
    tokio::time::sleep(SYNC * 2).await;
    fail(&theirs, 1);
    assert!(eventually(|| mine.state() == State::Open).await);
    assert!(
        b.share(&theirs).await.is_err(),
        "one breaker per name per node"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_started_while_redis_is_down_works_locally_then_joins() {
    let Some(mut redis) = LocalRedis::start_or_skip("redis_down_at_start") else {
        return;
    };
    redis.kill();
    let a = node(&redis, "late-redis", "a").await;
    let breaker = consecutive(2, Duration::from_secs(5));
    let _m = a.share(&breaker).await.unwrap();
    let status = a.status();
    assert!(
        !status.connected && status.disconnected_since.is_some(),
        "{status:?}"
    );
    assert!(format!("{status:?}").contains("connected: false"));
    fail(&breaker, 2);
    assert_eq!(breaker.state(), State::Open, "a local breaker meanwhile");
    redis.restart().unwrap();
    assert!(eventually(|| a.status().connected).await);
    // Its trip, made while away, reaches a node that joins now.
    let b = node(&redis, "late-redis", "b").await;
    connected(&[&b]).await;
    let theirs = consecutive(2, Duration::from_secs(5));
    let _m2 = b.share(&theirs).await.unwrap();
    assert!(eventually(|| theirs.state() == State::Open).await);
}

/// Call durations: how many took each whole microsecond (up to 10 ms),
/// and the slowest.
#[derive(Debug)]
struct Latency {
    micros: Vec<u64>,
    slowest: Duration,
}

impl Latency {
    fn calls(&self) -> u64 {
        self.micros.iter().sum()
    }
    /// The duration that 99.9 % of the calls took at most (whole µs;
    /// "10 ms" for anything above).
    fn p999(&self) -> Duration {
        let target = self.calls() - self.calls() / 1000;
        let mut seen = 0;
        for (us, n) in self.micros.iter().enumerate() {
            seen += n;
            if seen >= target {
                return Duration::from_micros(us as u64 + 1);
            }
        }
        Duration::from_millis(10)
    }
}

/// Calls through `breaker` on a thread until `stop`.
fn load(
    breaker: CircuitBreaker,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Latency> {
    std::thread::spawn(move || {
        let mut lat = Latency {
            micros: vec![0; 10_001],
            slowest: Duration::ZERO,
        };
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let t = Instant::now();
            let _ = breaker.call(|| Ok::<_, ()>(()));
            let took = t.elapsed();
            lat.slowest = lat.slowest.max(took);
            lat.micros[(took.as_micros() as usize).min(10_000)] += 1;
        }
        lat
    })
}

async fn latency_during(breaker: &CircuitBreaker, d: Duration) -> Latency {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = load(breaker.clone(), Arc::clone(&stop));
    tokio::time::sleep(d).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().unwrap()
}

/// No call waited on Redis: a call that did would take at least the
/// fleet's timeout (300 ms here); and 99.9 % of calls are within a few ms
/// of the calls made with Redis up (the slowest of either is the
/// scheduler's, on a shared machine).
fn assert_no_call_waited(up: &Latency, down: &Latency) {
    eprintln!(
        "calls with Redis up: {} (p99.9 {:?}, slowest {:?}); with Redis away: {} (p99.9 {:?}, slowest {:?})",
        up.calls(),
        up.p999(),
        up.slowest,
        down.calls(),
        down.p999(),
        down.slowest
    );
    assert!(
        down.slowest < Duration::from_millis(300),
        "a call waited on Redis: {down:?}"
    );
    assert!(
        down.p999() <= up.p999() + Duration::from_millis(3),
        "{:?} vs {:?}",
        down.p999(),
        up.p999()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn redis_stopped_for_two_seconds_under_load_blocks_no_call_and_states_resync() {
    let Some(redis) = LocalRedis::start_or_skip("sigstop") else {
        return;
    };
    let make = || {
        payments(
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(50)
                .min_calls(5)
                .open_for(Duration::from_secs(5)),
        )
    };
    let nodes = fleet_of(&redis, "stop", 2, make).await;
    let up = latency_during(&nodes[0].1, Duration::from_millis(300)).await;
    redis.pause();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = load(nodes[0].1.clone(), Arc::clone(&stop));
    assert!(
        eventually(|| !nodes[0].0.status().connected).await,
        "disconnected"
    );
    let status = nodes[0].0.status();
    assert!(status.disconnected_for.is_some(), "{status:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stopped = h.join().unwrap();
    // Node 1 trips while Redis is stopped: locally at once.
    fail(&nodes[1].1, 5);
    assert_eq!(nodes[1].1.state(), State::Open);
    redis.resume();
    assert_no_call_waited(&up, &stopped);
    for (f, b, _) in &nodes {
        assert!(eventually(|| f.status().connected).await);
        assert!(eventually(|| b.state() == State::Open).await, "resynced");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn redis_killed_and_restarted_empty_gets_the_fleets_state_back() {
    let Some(mut redis) = LocalRedis::start_or_skip("restart") else {
        return;
    };
    let nodes = fleet_of(&redis, "restart", 2, || {
        consecutive(1, Duration::from_secs(10))
    })
    .await;
    fail(&nodes[0].1, 1);
    assert!(eventually(|| nodes[1].1.state() == State::Open).await);
    let other = consecutive(1, Duration::from_secs(10));
    let other = CircuitBreaker::builder()
        .name("search")
        .config(other.config())
        .build()
        .unwrap();
    let _m = nodes[1].0.share(&other).await.unwrap();
    nodes[1].0.force_open("search").await.unwrap();
    let up = latency_during(&nodes[0].1, Duration::from_millis(300)).await;

    redis.kill();
    let during = latency_during(&nodes[0].1, Duration::from_millis(500)).await;
    for (f, _, _) in &nodes {
        assert!(eventually(|| !f.status().connected).await);
    }
    redis.restart().unwrap();
    for (f, _, _) in &nodes {
        assert!(eventually(|| f.status().connected).await);
    }
    assert_no_call_waited(&up, &during);
    // A node joining now learns what the empty Redis was told again.
    let late = node(&redis, "restart", "late").await;
    connected(&[&late]).await;
    let b = consecutive(1, Duration::from_secs(10));
    let s = CircuitBreaker::builder()
        .name("search")
        .config(b.config())
        .build()
        .unwrap();
    let _m1 = late.share(&b).await.unwrap();
    let _m2 = late.share(&s).await.unwrap();
    assert!(
        eventually(|| b.state() == State::Open && s.state() == State::ForcedOpen).await,
        "{:?} {:?}",
        b.state(),
        s.state()
    );
    // And pushed messages flow again (the subscription came back).
    late.reset("payments").await.unwrap();
    assert!(eventually(|| nodes[0].1.state() == State::Closed).await);
}

/// The child side of `separate_processes_share_one_breaker`: this test
/// binary run again, as another OS process, with `FLEET_CHILD_URL` set. It
/// joins, says READY, waits for the parent's trip and says OPEN. Not a test
/// by itself: in a normal run (no `FLEET_CHILD_URL`) it returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_node() {
    let Ok(url) = std::env::var("FLEET_CHILD_URL") else {
        return;
    };
    let id = std::env::var("FLEET_CHILD_ID").unwrap();
    let fleet = Fleet::builder()
        .redis_url(url)
        .namespace("processes")
        .node(id)
        .sync_every(SYNC)
        .connect()
        .await
        .unwrap();
    connected(&[&fleet]).await;
    let b = consecutive(1, Duration::from_secs(10));
    let _m = fleet.share(&b).await.unwrap();
    println!("READY");
    assert!(eventually(|| b.state() == State::Open).await);
    println!("OPEN {:?}", b.try_acquire().unwrap_err().retry_after());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn separate_processes_share_one_breaker() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let Some(redis) = LocalRedis::start_or_skip("separate_processes") else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut children = Vec::new();
    for i in 0..2 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "child_process_node",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("FLEET_CHILD_URL", redis.url())
            .env("FLEET_CHILD_ID", format!("process-{i}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send((i, line));
            }
        });
        children.push(child);
    }
    let wait_for = |word: &str| {
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < 2 {
            let (i, line) = rx.recv_timeout(Duration::from_secs(20)).expect(word);
            if line.contains(word) {
                seen.insert(i);
            }
        }
    };
    wait_for("READY");
    let parent = node(&redis, "processes", "parent").await;
    connected(&[&parent]).await;
    let b = consecutive(1, Duration::from_secs(10));
    let _m = parent.share(&b).await.unwrap();
    fail(&b, 1);
    wait_for("OPEN");
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_probe_permit_dropped_without_verdict_frees_the_lease_for_another_node() {
    let Some(redis) = LocalRedis::start_or_skip("dropped_probe") else {
        return;
    };
    let nodes = tripped(fleet_of(&redis, "dropped", 2, || probing(ms(200))).await).await;
    let mut held = first_probes(&nodes).await;
    let (prober, permit) = held.pop().unwrap();
    drop(permit); // a cancelled call: no verdict

    // Only the other node calls now; it gets the probe once the lease is freed.
    admitted(&nodes[1 - prober].1).await.success();
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_password_in_the_url_works_and_is_never_shown() {
    let Some(redis) = LocalRedis::start_with_or_skip("password", &["--requirepass", "s3cret-pw"])
    else {
        return;
    };
    let url = redis.url().replace("redis://", "redis://:s3cret-pw@");
    let make = |id: &str, url: &str| {
        Fleet::builder()
            .redis_url(url)
            .namespace("auth")
            .node(id)
            .sync_every(SYNC)
    };
    let a = make("a", &url).connect().await.unwrap();
    let b = make("b", &url).connect().await.unwrap();
    a_trip_travels(&a, &b).await;
    // A wrong password: the node runs, disconnected, saying why, never the password.
    let wrong = redis.url().replace("redis://", "redis://:not-the-pw@");
    let builder = make("c", &wrong);
    assert!(!format!("{builder:?}").contains("not-the-pw"));
    let c = builder.connect().await.unwrap();
    tokio::time::sleep(SYNC * 4).await;
    let status = c.status();
    assert!(!status.connected, "{status:?}");
    let shown = format!("{status:?} {c:?}");
    assert!(!shown.contains("not-the-pw"), "{shown}");
}

#[cfg(feature = "prometheus")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn losing_redis_is_an_event_and_a_metric() {
    let Some(mut redis) = LocalRedis::start_or_skip("status_events") else {
        return;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let fleet = Fleet::builder()
        .redis_url(redis.url())
        .namespace("events")
        .node("a")
        .sync_every(SYNC)
        .on_status(move |s| log.lock().unwrap().push(s.connected))
        .connect()
        .await
        .unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    fleet.register_metrics(&mut registry);
    let scrape = |registry: &prometheus_client::registry::Registry| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    };
    connected(&[&fleet]).await;
    assert!(scrape(&registry).contains(r#"fusebox_fleet_connected{namespace="events",node="a"} 1"#));
    redis.kill();
    assert!(eventually(|| !fleet.status().connected).await);
    let text = scrape(&registry);
    assert!(
        text.contains(r#"fusebox_fleet_connected{namespace="events",node="a"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fusebox_fleet_disconnects_total{namespace="events",node="a"} 1"#),
        "{text}"
    );
    redis.restart().unwrap();
    assert!(eventually(|| fleet.status().connected).await);
    assert_eq!(seen.lock().unwrap().as_slice(), [true, false, true]);
    // The channel's connection was lost with Redis and made again.
    assert!(eventually(|| fleet.status().channel_reconnects == 1).await);
    let text = scrape(&registry);
    for series in [
        r#"fusebox_fleet_channel_reconnects_total{namespace="events",node="a"} 1"#,
        r#"fusebox_fleet_messages_oversized_total{namespace="events",node="a"} 0"#,
    ] {
        assert!(text.contains(series), "{series} in {text}");
    }
}

/// The handles can be shared across threads and tasks, and sharing a
/// breaker can be awaited inside `tokio::spawn`.
#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync + 'static>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Fleet>();
    send_sync::<Membership>();
    send_sync::<fusebox::fleet::FleetStatus>();
    send_sync::<fusebox::fleet::FleetError>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fleet = Fleet::builder()
            .redis_url("redis://127.0.0.1:1")
            .namespace("types")
            .connect()
            .await
            .unwrap();
        let b = consecutive(1, Duration::from_secs(1));
        let share = fleet.share(&b);
        send(&share);
        let control = fleet.reset("payments");
        send(&control);
        drop((share, control));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn with_a_quorum_a_lone_nodes_failed_probe_does_not_open_the_fleet() {
    let Some(redis) = LocalRedis::start_or_skip("quorum_probe") else {
        return;
    };
    let nodes = fleet_with_quorum(&redis, "quorum-probe", 2, 2, || {
        probing(Duration::from_millis(150))
    })
    .await;
    let (lone, healthy) = (&nodes[0].1, &nodes[1].1);
    fail(lone, 1);
    // Its own open period ends; it probes (alone), and the probe fails.
    admitted(lone).await.failure();
    assert_eq!(lone.state(), State::Open);
    tokio::time::sleep(SYNC * 6).await;
    assert_eq!(
        healthy.state(),
        State::Closed,
        "one node is still no quorum"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn with_redis_up_a_node_is_connected_when_connect_returns_and_joins_at_once() {
    let Some(redis) = LocalRedis::start_or_skip("connect_at_once") else {
        return;
    };
    let a = node(&redis, "at-once", "a").await;
    assert!(a.status().connected, "{:?}", a.status());
    a.disable("payments").await.unwrap();
    let b = node(&redis, "at-once", "b").await;
    let breaker = consecutive(1, Duration::from_secs(5));
    let _m = b.share(&breaker).await.unwrap();
    assert_eq!(
        breaker.state(),
        State::Disabled,
        "no wait: share applied it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_joining_a_half_open_fleet_rejects_until_the_probes_verdict_travels() {
    let Some(redis) = LocalRedis::start_or_skip("join_half_open") else {
        return;
    };
    let nodes = tripped(fleet_of(&redis, "join-half", 2, || probing(ms(200))).await).await;
    let (_, permit) = first_probes(&nodes).await.pop().unwrap();

    // The fleet's breaker is half-open, its probe running elsewhere.
    let late = node(&redis, "join-half", "late").await;
    connected(&[&late]).await;
    let b = probing(Duration::from_millis(200));
    let _m = late.share(&b).await.unwrap();
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::HalfOpen, "a joiner does not start closed");
    assert_eq!(r.retry_after(), Some(SYNC));
    tokio::time::sleep(SYNC * 4).await;
    assert!(b.try_acquire().is_err(), "the prober still holds the lease");

    // The probe's verdict travels to the joiner too.
    permit.success();
    assert!(eventually(|| b.state() == State::Closed).await);
    all_become(&nodes, State::Closed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_node_joining_a_half_open_fleet_probes_once_the_probers_lease_expires() {
    let Some(redis) = LocalRedis::start_or_skip("join_half_open_dead") else {
        return;
    };
    let mut nodes = fleet_of(&redis, "join-dead", 1, || {
        probing(Duration::from_millis(200))
    })
    .await;
    fail(&nodes[0].1, 1);
    let permit = admitted(&nodes[0].1).await;
    let late = node(&redis, "join-dead", "late").await;
    connected(&[&late]).await;
    let b = probing(Duration::from_millis(200));
    let _m = late.share(&b).await.unwrap();
    assert_eq!(b.try_acquire().unwrap_err().state(), State::HalfOpen);

    // The prober dies mid-probe; once its lease expires the joiner probes.
    let (dead, _breaker, membership) = nodes.remove(0);
    std::mem::forget(permit);
    drop(membership);
    drop(dead);
    admitted(&b).await.success();
    assert_eq!(b.state(), State::Closed);
}

/// A TCP relay between one node and Redis that can cut the node off (every
/// connection dropped, new ones refused) and let it back: a partition of
/// that node alone.
struct Relay {
    port: u16,
    open: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(to: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let live = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let (o, l) = (Arc::clone(&open), Arc::clone(&live));
        // Runs until the test process ends.
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !o.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                    continue;
                };
                let mut live = l.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                live.extend([client, server]);
            }
        });
        Relay { port, open, live }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn heal(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    /// Node "a" of `ns`, through this relay, connected, sharing `b`.
    async fn node(
        &self,
        ns: &str,
        quorum: u32,
        b: CircuitBreaker,
    ) -> (Fleet, CircuitBreaker, Membership) {
        let a = node_at(&self.url(), ns, "a", quorum, SYNC).await;
        connected(&[&a]).await;
        let m = a.share(&b).await.unwrap();
        (a, b, m)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_close_told_after_a_reconnect_does_not_close_a_fleet_that_tripped_again() {
    let Some(redis) = LocalRedis::start_or_skip("stale_close") else {
        return;
    };
    let relay = Relay::start(redis.port());
    let open = Duration::from_millis(300);
    // Node "a" reaches Redis through the relay; n0 and n1 directly.
    let (a, mine, _m) = relay.node("stale", 1, probing(open)).await;
    let others = fleet_of(&redis, "stale", 2, || probing(open)).await;

    // The fleet trips; after the open period "a" takes the fleet's probe.
    fail(&others[0].1, 1);
    assert!(eventually(|| mine.state() == State::Open).await);
    let probe = admitted(&mine).await;

    // "a" is cut off with its probe running; the probe succeeds there, so
    // "a" closes, with a close to tell the fleet when it can.
    relay.cut();
    assert!(eventually(|| !a.status().connected).await);
    probe.success();
    assert_eq!(mine.state(), State::Closed);

    // Meanwhile a's lease expires, another node probes and fails: the fleet
    // trips again, and is half-open again after the new open period, with
    // one of the others probing.
    let (_, p) = first_probes(&others).await.pop().unwrap();
    p.failure();
    all_become(&others, State::Open).await;
    let (_, held) = first_probes(&others).await.pop().unwrap();

    // "a" comes back with its close of the earlier trip: refused. The
    // others stay half-open and "a" takes the fleet's state.
    relay.heal();
    connected(&[&a]).await;
    assert!(
        eventually(|| mine.state() == State::HalfOpen).await,
        "{:?}",
        mine.state()
    );
    tokio::time::sleep(SYNC * 4).await;
    for (f, b, _) in &others {
        assert_eq!(b.state(), State::HalfOpen, "{}", f.status().node);
    }
    assert_eq!(mine.try_acquire().unwrap_err().state(), State::HalfOpen);

    // The current probe decides for everyone.
    held.success();
    all_become(&others, State::Closed).await;
    assert!(eventually(|| mine.state() == State::Closed).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rediss_url_needs_the_tls_feature_or_is_accepted() {
    let connect = |url: &str| {
        Fleet::builder()
            .redis_url(url)
            .namespace("tls")
            .timeout(Duration::from_millis(100))
            .connect()
    };
    let result = connect("rediss://:pw@127.0.0.1:1").await;
    #[cfg(not(feature = "fleet-tls"))]
    assert_eq!(
        result.unwrap_err().to_string(),
        "fleet: redis_url = \"rediss://***@127.0.0.1:1\": rediss:// (TLS) needs fusebox's cargo feature fleet-tls"
    );
    #[cfg(feature = "fleet-tls")]
    {
        let fleet = result.expect("a rediss URL is accepted");
        assert!(!fleet.status().connected, "nothing listens on port 1");
        let refused = |url: &'static str, pem: &'static str| async move {
            let builder = Fleet::builder().redis_url(url).namespace("tls");
            let err = builder
                .tls_root_certificate(pem)
                .connect()
                .await
                .unwrap_err();
            err.to_string()
        };
        assert_eq!(
            refused("rediss://127.0.0.1:1", "not a certificate").await,
            "fleet: tls_root_certificate = \"(PEM)\": holds no PEM certificate"
        );
        assert_eq!(
            refused("redis://127.0.0.1:1", "-----BEGIN CERTIFICATE-----").await,
            "fleet: tls_root_certificate = \"(PEM)\": needs a rediss:// URL"
        );
    }
}

/// A CA and a certificate it signed for 127.0.0.1, made with the `openssl`
/// command in a fresh directory; `None` (with a line) if openssl is missing.
#[cfg(feature = "fleet-tls")]
fn test_certificates() -> Option<std::path::PathBuf> {
    use std::process::Command;
    let dir = std::env::temp_dir().join(format!("fusebox-fleet-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .map(|o| o.status.success())
    };
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=fusebox test CA",
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.crt",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    ];
    for step in steps {
        match run(step) {
            Ok(true) => {}
            Ok(false) => panic!("openssl {step:?} failed"),
            Err(_) if std::env::var(fusebox::fleet::REQUIRE_REDIS).is_ok_and(|v| v == "1") => {
                panic!(
                    "tls: openssl not found and {}=1",
                    fusebox::fleet::REQUIRE_REDIS
                )
            }
            Err(_) => {
                eprintln!("skipped tls: openssl not found (apt-get install openssl)");
                return None;
            }
        }
    }
    Some(dir)
}

#[cfg(feature = "fleet-tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn trips_travel_over_tls_with_a_private_ca() {
    let Some(dir) = test_certificates() else {
        return;
    };
    let redis = match LocalRedis::start_tls(&dir.join("srv.crt"), &dir.join("srv.key")) {
        Ok(Some(r)) => r,
        Ok(None) if std::env::var(fusebox::fleet::REQUIRE_REDIS).is_ok_and(|v| v == "1") => {
            panic!(
                "tls: redis-server not found and {}=1",
                fusebox::fleet::REQUIRE_REDIS
            )
        }
        Ok(None) => {
            eprintln!("skipped tls: redis-server not found");
            return;
        }
        Err(e) => panic!("redis-server with TLS did not start: {e}"),
    };
    assert!(redis.url().starts_with("rediss://"));
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let tls_node = |id: &'static str| {
        Fleet::builder()
            .redis_url(redis.url())
            .tls_root_certificate(ca.clone())
            .namespace("tls")
            .node(id)
            .sync_every(SYNC)
            .timeout(Duration::from_millis(500))
            .connect()
    };
    let (a, b) = (tls_node("a").await.unwrap(), tls_node("b").await.unwrap());
    a_trip_travels(&a, &b).await;
    // It came as a message: the channel's own connection is TLS too.
    assert!(eventually(|| b.status().messages_received >= 1).await);
    assert_eq!(b.status().channel_reconnects, 0);

    // Without the CA the server's certificate is not trusted: never connected.
    let untrusted = Fleet::builder()
        .redis_url(redis.url())
        .namespace("tls")
        .timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = untrusted.status();
    assert!(!status.connected, "{status:?}");
    let error = status.last_error.unwrap_or_default();
    assert!(error.contains("certificate"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn a_failed_probe_told_after_a_reconnect_counts_toward_the_quorum_only() {
    let Some(redis) = LocalRedis::start_or_skip("stale_probe") else {
        return;
    };
    let relay = Relay::start(redis.port());
    let open = Duration::from_millis(300);
    let (a, mine, _m) = relay.node("stale-probe", 2, probing(open)).await;
    let others = fleet_with_quorum(&redis, "stale-probe", 2, 2, || probing(open)).await;

    // Two nodes trip: the quorum of two opens the fleet; "a" probes for it.
    fail(&mine, 1);
    fail(&others[0].1, 1);
    all_become(&others, State::Open).await;
    let probe = admitted(&mine).await;

    // "a" is cut off; meanwhile another node probes and closes the fleet.
    relay.cut();
    assert!(eventually(|| !a.status().connected).await);
    let (_, p) = first_probes(&others).await.pop().unwrap();
    p.success();
    all_become(&others, State::Closed).await;

    // a's probe fails there: a reopens, and tells it when it is back. Its
    // probe was for a trip that is over: one trip toward the quorum, which
    // alone does not reopen the fleet.
    probe.failure();
    assert_eq!(mine.state(), State::Open);
    relay.heal();
    connected(&[&a]).await;
    tokio::time::sleep(SYNC * 6).await;
    for (f, b, _) in &others {
        assert_eq!(b.state(), State::Closed, "{}", f.status().node);
    }
}

/// Publishes `payload` on namespace `ns`'s channel, as a stranger would.
async fn publish(redis: &LocalRedis, ns: &str, payload: &[u8]) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(format!("fusebox:{{{ns}}}:events"))
        .arg(payload)
        .query_async(&mut conn)
        .await
        .unwrap();
}

const A_YEAR: &[u8] = b"fb1|trip|31536000000|forged|evil|payments";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn without_a_key_a_forged_trip_lasts_until_the_next_sync() {
    let Some(redis) = LocalRedis::start_or_skip("forged_trip") else {
        return;
    };
    // Each node's opening is counted as it happens: the open state lasts
    // only until the node's next sync, which a poll of three nodes in turn
    // can miss on a loaded machine.
    let opens = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&opens);
    let nodes = fleet_of(&redis, "forged", 3, move || {
        let counted = Arc::clone(&counted);
        payments(
            CircuitBreaker::builder()
                .consecutive_failures(5)
                .open_for(Duration::from_secs(5))
                .on_transition(move |t: &fusebox::Transition| {
                    if t.to == State::Open {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                }),
        )
    })
    .await;
    // A year's trip "from node evil": every node opens...
    publish(&redis, "forged", A_YEAR).await;
    let published = Instant::now();
    assert!(
        eventually(|| opens.load(Ordering::Relaxed) >= 3).await,
        "{} of 3 nodes opened",
        opens.load(Ordering::Relaxed)
    );
    // ...and Redis holds no trip: each closes again at its next sync.
    all_become(&nodes, State::Closed).await;
    assert!(
        published.elapsed() < SYNC * 2 + Duration::from_millis(500),
        "closed after {:?}",
        published.elapsed()
    );
    // A real trip still travels and holds.
    fail(&nodes[0].1, 5);
    all_become(&nodes, State::Open).await;
    tokio::time::sleep(SYNC * 4).await;
    for (_, b, _) in &nodes {
        assert_eq!(b.state(), State::Open);
    }
}

/// Without a key, a forged close during a real outage reaches every node;
/// each lets through at most its trip threshold of failing calls (5
/// consecutive failures) before it is open again, by its own failures or by
/// the next sync finding the fleet's trip in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn without_a_key_a_forged_close_lets_at_most_the_trip_threshold_of_failures_through() {
    let Some(redis) = LocalRedis::start_or_skip("forged_close") else {
        return;
    };
    let nodes = fleet_of(&redis, "forged_close", 3, || {
        consecutive(5, Duration::from_secs(30))
    })
    .await;
    // A real outage: node 0 trips the fleet; Redis holds the trip.
    fail(&nodes[0].1, 5);
    all_become(&nodes, State::Open).await;
    let mut closed = [0usize; 3];
    for round in 0..3 {
        let close = fusebox::fleet::Message::new(
            "forged_close",
            "evil",
            "payments",
            fusebox::fleet::Kind::Close,
        );
        publish(&redis, "forged_close", &close.encode()).await;
        tokio::time::sleep(ms(20)).await;
        // The dependency is still down: every call a node admits fails.
        for (i, (_, b, _)) in nodes.iter().enumerate() {
            // Calls until the node refuses one; those it ran all failed.
            let mut through = 0;
            while through < 50 {
                match b.call(|| Err::<(), _>("down")) {
                    Err(fusebox::Error::Inner(_)) => through += 1,
                    _ => break,
                }
            }
            assert!(
                through <= 5,
                "round {round}, node {i}: {through} failures let through"
            );
            closed[i] += usize::from(through > 0);
        }
        // Open again everywhere: Redis still holds the trip.
        all_become(&nodes, State::Open).await;
    }
    // The forged closes did reach the nodes (else the bound says nothing).
    assert!(closed.iter().sum::<usize>() > 0, "{closed:?}");
}

/// Three nodes of namespace `ns` whose fleet has key `key`.
async fn keyed(
    redis: &LocalRedis,
    ns: &str,
    key: &str,
) -> Vec<(Fleet, CircuitBreaker, Membership)> {
    let mut out = Vec::new();
    for i in 0..3 {
        let f = Fleet::builder()
            .redis_url(redis.url())
            .namespace(ns)
            .node(format!("n{i}"))
            .sync_every(SYNC)
            .timeout(Duration::from_millis(300))
            .key(key)
            .connect()
            .await
            .unwrap();
        connected(&[&f]).await;
        let b = consecutive(5, Duration::from_secs(5));
        let m = f.share(&b).await.unwrap();
        out.push((f, b, m));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn with_a_key_forged_trips_and_closes_are_dropped_and_counted() {
    let Some(redis) = LocalRedis::start_or_skip("keyed") else {
        return;
    };
    let key = "the fleet's shared secret";
    let nodes = keyed(&redis, "keyed", key).await;
    // Unsigned, signed with another key, and altered: all three dropped.
    let trip = fusebox::fleet::decode(A_YEAR).unwrap();
    let mut trip = fusebox::fleet::Message::new("keyed", "n1", "payments", trip.kind);
    let other = fusebox::fleet::FleetKey::new("another secret, 16+ bytes").unwrap();
    let mut altered = fusebox::fleet::FleetKey::new(key).unwrap().sign(&trip);
    *altered.last_mut().unwrap() = b'S';
    for payload in [trip.encode(), other.sign(&trip), altered] {
        publish(&redis, "keyed", &payload).await;
    }
    for (f, b, _) in &nodes {
        assert!(
            eventually(|| f.status().messages_unauthenticated == 3).await,
            "{:?}",
            f.status()
        );
        assert_eq!(f.status().messages_dropped, 3);
        assert_eq!(b.state(), State::Closed, "a forged trip");
    }
    // A real trip is signed and travels; a forged close does not close.
    fail(&nodes[0].1, 5);
    all_become(&nodes, State::Open).await;
    trip.kind = fusebox::fleet::Kind::Close;
    publish(&redis, "keyed", &trip.encode()).await;
    for (f, b, _) in &nodes[1..] {
        assert!(eventually(|| f.status().messages_unauthenticated == 4).await);
        assert_eq!(b.state(), State::Open, "a forged close");
    }
    // A key shorter than 16 bytes is refused, without showing it.
    let err = Fleet::builder()
        .redis_url(redis.url())
        .namespace("keyed")
        .key("short")
        .connect()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "fleet: key = \"(5 bytes, not shown)\": use at least 16 bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server: run with -- --ignored"]
async fn below_the_quorum_each_node_probes_on_its_own_and_closes_only_itself() {
    let Some(redis) = LocalRedis::start_or_skip("alone") else {
        return;
    };
    // Quorum 3 of 3: neither trip below opens the fleet.
    let nodes = fleet_with_quorum(&redis, "alone", 3, 3, || probing(ms(300))).await;
    let start = Instant::now();
    fail(&nodes[0].1, 1);
    tokio::time::sleep(ms(100)).await;
    fail(&nodes[1].1, 1);
    // Node 0, still sick, probes on its own once its period ends, and
    // reopens: it takes no lease.
    tokio::time::sleep_until((start + ms(320)).into()).await;
    admitted(&nodes[0].1).await.failure();
    assert_eq!(nodes[0].1.state(), State::Open);
    assert_eq!(lease_holder(&redis, "alone").await, None);
    // Node 1, healed: its first call after its own period probes, and its
    // success closes it alone.
    tokio::time::sleep_until((start + ms(420)).into()).await;
    nodes[1]
        .1
        .try_acquire()
        .expect("a node open on its own probes without the fleet's lease")
        .success();
    assert_eq!(nodes[1].1.state(), State::Closed);
    tokio::time::sleep(SYNC * 3).await;
    assert_eq!(nodes[0].1.state(), State::Open, "its close is its own");
    assert_eq!(nodes[2].1.state(), State::Closed);
    assert_eq!(lease_holder(&redis, "alone").await, None);
}
