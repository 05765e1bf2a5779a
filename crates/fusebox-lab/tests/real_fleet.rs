//! A real-mode fleet against a real `redis-server` the lab starts itself
//! (`[fleet] redis = "local"`): 8 replicas, each with its own worker threads
//! and breaker, sharing through `fusebox::fleet`, against the same fleet with
//! `sharing = "none"`, and `run --redis URL`. Ignored unless run with
//! `--ignored`; then skipped with one line when `redis-server` is missing,
//! unless `FUSEBOX_REQUIRE_REDIS=1` (`.ci/run`).
//! About 6 s.

use fusebox_lab::engine::{self, Mode};
use fusebox_lab::report::{json, ScenarioReport, Summary};
use fusebox_lab::scenario::Scenario;

/// 8 replicas at 10 req/s each; the dependency fails for a second (20 ms
/// errors); a fusebox breaker trips after 3 failures in a row and stays open
/// 2 s (no probe before the run ends). Alone, each replica fails 3 calls
/// before it trips: 24 in all. Shared, the first trip opens every replica's
/// breaker: about 3 + 7 x 2 failing calls.
fn fleet(sharing: &str) -> Scenario {
    let redis = if sharing == "fleet" {
        "redis = \"local\""
    } else {
        ""
    };
    let text = format!(
        r#"
name = "fleet8-{sharing}"
duration = "1500ms"
rate = 80.0
workers = 2
[fleet]
replicas = 8
sharing = "{sharing}"
sync_every = "100ms"
{redis}
[downstream]
latency = "2ms"
[[downstream.faults]]
from = "200ms"
until = "1200ms"
latency = "20ms"
outcome = "error"
[[strategy]]
name = "fusebox"
kind = "fusebox"
consecutive_failures = 3
open_for = "2s"
"#
    );
    Scenario::parse("fleet8.toml", &text).unwrap()
}

#[test]
#[ignore = "needs redis-server: run with -- --ignored"]
fn sharing_through_redis_cuts_failing_calls() {
    // Is redis-server here? (The lab starts its own; this one only asks.)
    if fusebox::fleet::LocalRedis::start_or_skip("the lab's real-mode fleet test").is_none() {
        return;
    }
    let mut failing = Vec::new();
    for sharing in ["none", "fleet"] {
        let sc = fleet(sharing);
        let spec = &sc.strategies[0];
        let real = engine::run(&sc, spec, Mode::Real, None).unwrap();
        let virt = engine::run(&sc, spec, Mode::Virtual, None).unwrap();
        let (r, v) = (Summary::of(&sc, &real), Summary::of(&sc, &virt));
        let total = |s: &Summary| s.fleet.as_ref().unwrap().total.failing_calls;
        println!(
            "sharing = {sharing}: failing calls real {} virtual {}",
            total(&r),
            total(&v)
        );
        let fleet = real.fleet.as_ref().unwrap();
        let held = fleet.held.iter().filter(|h| !h.is_empty()).count();
        // The JSON marks the transitions the fleet made: one per held
        // replica at least (its remote trip), none without sharing.
        let report = ScenarioReport {
            scenario: sc.clone(),
            mode: Mode::Real,
            runs: vec![real.clone()],
            summaries: vec![r.clone()],
            article: vec![None],
        };
        let doc = json::scenario(&report);
        let remote = doc["strategies"][0]["fleet"]["total"]["remote_transitions"]
            .as_u64()
            .unwrap() as usize;
        let flagged = doc["strategies"][0]["fleet"]["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["transitions"].as_array().unwrap())
            .filter(|t| t["remote"] == true)
            .count();
        assert_eq!(flagged, remote);
        assert!(remote >= held, "{remote} remote transitions, {held} held");
        assert_eq!(
            remote == 0,
            sharing == "none",
            "{remote} remote transitions"
        );
        if sharing == "fleet" {
            // The first trip travelled through Redis to the other replicas.
            // Their calls arrive 25 ms apart, so a replica whose third
            // failure comes before the trip has crossed (a loaded machine,
            // a debug build) trips on its own: most, not all, are held.
            assert!(
                (4..=7).contains(&held),
                "replicas opened by the fleet: {:?}",
                fleet.held
            );
        } else {
            assert_eq!(held, 0);
            // Alone, every replica trips on its own 3 failures.
            assert_eq!(total(&r), 24);
        }
        failing.push(total(&r));
    }
    // Each held replica saves at least one failing call; a call in flight
    // when the trip arrives still fails.
    assert!(
        failing[1] + 3 <= failing[0],
        "shared {} vs local {} failing calls",
        failing[1],
        failing[0]
    );
}

/// A short shared fleet with no `redis` key, written to a file of its own,
/// and a way to run the lab binary on it.
fn cli_fleet(tag: &str) -> (std::path::PathBuf, impl Fn(&[&str]) -> std::process::Output) {
    let dir = std::env::temp_dir().join(format!("fusebox-lab-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fleet.toml");
    let toml = r#"name = "fleet8-cli"
duration = "300ms"
rate = 40.0
workers = 2
[fleet]
replicas = 2
sharing = "fleet"
[downstream]
latency = "2ms"
[[strategy]]
name = "fusebox"
kind = "fusebox"
consecutive_failures = 3
open_for = "1s"
"#;
    std::fs::write(&file, toml).unwrap();
    let lab = move |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
            .args(["run", "-q"])
            .args(args)
            .arg(&file)
            .output()
            .unwrap()
    };
    (dir, lab)
}

/// Without `run --redis URL` (and without `[fleet] redis`) a shared
/// real-mode fleet is refused before it starts; a bad URL is bad input.
#[test]
fn a_shared_fleet_without_redis_or_with_a_bad_url_is_refused() {
    let (dir, lab) = cli_fleet("redis-refused");
    let out = lab(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("redis = \"local\"") && err.contains("--redis"),
        "{err}"
    );
    let out = lab(&["--redis", "127.0.0.1:6379"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--redis: \"127.0.0.1:6379\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --redis URL` shares a real-mode fleet through a Redis already
/// running.
#[test]
#[ignore = "needs redis-server: run with -- --ignored"]
fn run_takes_redis_from_the_command_line() {
    let Some(redis) = fusebox::fleet::LocalRedis::start_or_skip("run --redis") else {
        return;
    };
    let (dir, lab) = cli_fleet("redis-cli");
    let out = lab(&["--redis", &redis.url()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("fleet8-cli (real threads)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped 20-replica fleets (`fleet20-real-*`, `fleet20-window-*`) in
/// real mode against virtual mode: failing calls within 3 and recovery
/// probes equal, in every replica's total. Recovery lag and healthy
/// fast-fails are not compared: each real node syncs on its own phase, which
/// moves the probe lease (README, "A fleet of replicas"). ~45 s of real time:
/// `cargo test --release -p fusebox-lab --test real_fleet -- --ignored`.
#[test]
#[ignore = "real time: ~45 s"]
fn shipped_fleets_in_real_mode_match_virtual_mode() {
    if fusebox::fleet::LocalRedis::start_or_skip("the shipped real-mode fleets").is_none() {
        return;
    }
    for name in [
        "fleet20-real-local",
        "fleet20-real-shared",
        "fleet20-window-local",
        "fleet20-window-shared",
        "fleet20-real-path-quorum1",
        "fleet20-real-path-quorum2",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{name}.toml"));
        let sc = Scenario::load(&path).unwrap();
        for spec in &sc.strategies {
            let total = |mode| {
                let run = engine::run(&sc, spec, mode, None).unwrap();
                Summary::of(&sc, &run).fleet.unwrap().total
            };
            let (v, r) = (total(Mode::Virtual), total(Mode::Real));
            println!("{name} / {}: virtual {v:?}\n    real {r:?}", spec.name);
            assert!(v.failing_calls.abs_diff(r.failing_calls) <= 3, "{name}");
            assert_eq!(v.recovery_probes, r.recovery_probes, "{name}");
        }
    }
}
