//! `fusebox-lab tune`: the search against an exhaustive grid ten times
//! finer, on fresh outages; a profile read from fusebox's own `/metrics`
//! text giving a block the registry accepts; bad flags named.

use fusebox::metrics::{encode_text, Metrics};
use fusebox::registry::{Fusebox, FuseboxConfig};
use fusebox::{CircuitBreaker, ManualClock, Timing};
use fusebox_lab::scenario::{LatencyDist, Scenario};
use fusebox_lab::tune::objective::Objective;
use fusebox_lab::tune::space::{Policy, Space};
use fusebox_lab::tune::{evaluate, grid, search, Options};
use prometheus_client::registry::Registry;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn lab(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn outage_scenario() -> Scenario {
    Scenario::load(&lab("scenarios/seed000-50rps-outage.toml")).unwrap()
}

/// The search's pick and the best point of the fine grid over the same
/// space, each re-run on the same fresh outages (seeds the search did not
/// see): the objective's median of each, and how many points the search ran.
fn search_and_grid(
    space: &Space,
    objective: &Objective,
    runs: u64,
    fresh: u64,
    budget: usize,
) -> (f64, f64, usize, usize) {
    let sc = outage_scenario();
    let options = Options {
        seeds: (1, 1 + runs),
        budget,
        starts: 3,
        jobs: 2,
        draw_seed: 1,
    };
    let found = search(&sc, space, objective, &options, |_| {}).unwrap();
    let points = grid(space).unwrap();
    let all = evaluate(&sc, space, objective, &points, 1..1 + runs, 2, |_| {}).unwrap();
    let best_grid = all
        .iter()
        .min_by(|a, b| a.score.rank(&b.score))
        .unwrap()
        .point;
    let fresh = 1 + runs..1 + runs + fresh;
    let again = evaluate(
        &sc,
        space,
        objective,
        &[found.best().point, best_grid],
        fresh,
        2,
        |_| {},
    )
    .unwrap();
    (
        again[0].score.objective,
        again[1].score.objective,
        found.candidates.len(),
        points.len(),
    )
}

/// On a smaller instance (consecutive failures 1..10, open_for 0.1..3 s by
/// 50 ms, so the search's coarse grid steps 300 ms), the search's pick is
/// within 10 % of the fine grid's best on 40 fresh outages, having run a
/// fraction of its points.
#[test]
fn the_search_is_within_ten_percent_of_a_ten_times_finer_grid() {
    let mut space = Space::default_for(8);
    space.policies = vec![Policy::Consecutive];
    for s in [
        "consecutive_failures=1..10:1",
        "open_for=0.1s..3s:0.05s",
        "half_open_probes=1",
        "successes_to_close=1",
        "timeout=none",
        "max_concurrent=none",
    ] {
        space.set(s).unwrap();
    }
    let objective = Objective::parse("outage-calls<=5, min lost").unwrap();
    let (tuned, best, ran, points) = search_and_grid(&space, &objective, 8, 40, 30);
    assert_eq!(points, 10 * 59);
    assert!(ran * 3 < points, "the search ran {ran} of {points} points");
    assert!(tuned.is_finite() && best.is_finite(), "{tuned} {best}");
    assert!(
        tuned <= best * 1.1,
        "search {tuned} lost vs the fine grid's {best}"
    );
}

/// The README's instance: the default search over the whole space, against
/// the fine grid over consecutive_failures x open_for x max_concurrent,
/// on 100 fresh outages. About six minutes in release mode on two shared
/// cores.
#[test]
#[ignore = "heavy (1.6 million runs): cargo test --release -p fusebox-lab --test tune -- --ignored"]
fn the_default_search_is_within_ten_percent_of_the_readme_grid() {
    let sc = outage_scenario();
    let objective = Objective::parse(fusebox_lab::tune::objective::DEFAULT_OBJECTIVE).unwrap();
    let full = Space::default_for(8);
    let options = Options {
        seeds: (1, 31),
        budget: 150,
        starts: 3,
        jobs: 2,
        draw_seed: 1,
    };
    let found = search(&sc, &full, &objective, &options, |_| {}).unwrap();
    let mut sub = Space::default_for(8);
    sub.policies = vec![Policy::Consecutive];
    for s in ["half_open_probes=1", "successes_to_close=1", "timeout=none"] {
        sub.set(s).unwrap();
    }
    let points = grid(&sub).unwrap();
    let all = evaluate(&sc, &sub, &objective, &points, 1..31, 2, |_| {}).unwrap();
    let best = all.iter().min_by(|a, b| a.score.rank(&b.score)).unwrap();
    let fresh = |space: &Space, p| {
        evaluate(&sc, space, &objective, &[p], 31..131, 2, |_| {}).unwrap()[0]
            .score
            .objective
    };
    let (tuned, best) = (fresh(&full, found.best().point), fresh(&sub, best.point));
    assert!(tuned <= best * 1.1, "search {tuned} vs grid {best}");
}

/// A scrape of fusebox's own exporter: a breaker "partner" timed on a
/// manual clock, 500 calls of which 90 % take 5 ms and 10 % take 40 ms.
fn scrape() -> String {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry).with_timing(Timing::Every);
    let clock = ManualClock::new();
    let partner = metrics
        .build("partner", CircuitBreaker::builder().clock(clock.clone()))
        .unwrap();
    for i in 0..500 {
        let took = if i % 10 == 9 { 40 } else { 5 };
        partner
            .call(|| {
                clock.advance(Duration::from_millis(took));
                Ok::<_, std::io::Error>(())
            })
            .unwrap();
    }
    encode_text(&registry)
}

fn tune(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .arg("tune")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_profile_from_metrics_gives_a_block_the_registry_accepts() {
    let dir = std::env::temp_dir().join(format!("fusebox-lab-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let metrics = dir.join("metrics.txt");
    std::fs::write(&metrics, scrape()).unwrap();
    let block = dir.join("partner.toml");
    let out = tune(&[
        "--from-metrics",
        metrics.to_str().unwrap(),
        "--dependency",
        "partner",
        "--metrics-span",
        "10s",
        "--budget",
        "20",
        "--starts",
        "1",
        "--runs",
        "4",
        "--check-runs",
        "5",
        "--toml",
        block.to_str().unwrap(),
        "--json",
        dir.join("tune.json").to_str().unwrap(),
        "--csv",
        dir.join("tune.csv").to_str().unwrap(),
        "-q",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The profile: 500 calls in 10 s, the scrape's histogram.
    assert!(stdout.contains("at 50/s"), "{stdout}");
    assert!(stdout.contains("downstream histogram of"), "{stdout}");
    let text = std::fs::read_to_string(&block).unwrap();
    assert!(stdout.contains(&text), "{stdout}");
    let config = FuseboxConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let dep = &config.dependencies["partner"];
    assert!(dep.breaker.open_for.is_some(), "{text}");
    let fusebox = Fusebox::from_config(config).unwrap();
    assert_eq!(fusebox.names(), ["partner"]);
    // --json: the Pareto set with exactly one chosen candidate, whose
    // settings are the block's; --csv: the same set, one row each.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tune.json")).unwrap()).unwrap();
    assert_eq!(doc["chosen"]["toml"].as_str(), Some(text.as_str()));
    let set = doc["pareto"].as_array().unwrap();
    assert!(!set.is_empty());
    // The chosen settings are the best of the Pareto set: in it, once.
    let chosen: Vec<&serde_json::Value> = set.iter().filter(|c| c["chosen"] == true).collect();
    assert_eq!(chosen.len(), 1, "{doc:#}");
    assert_eq!(chosen[0]["settings"], doc["chosen"]["settings"]);
    let settings = &doc["chosen"]["settings"];
    if let Some(open_for) = settings["open_for"].as_str() {
        assert!(
            text.contains(&format!("open_for = \"{open_for}\"")),
            "{text}\n{settings}"
        );
    }
    assert!(settings["policy"].is_string(), "{settings}");
    // The objective's target figure, with its spread over the 5 fresh runs.
    let lost = &doc["chosen"]["figures"]["lost"];
    assert!(lost["median"].is_number() && lost["runs"] == 5, "{lost}");
    let csv = std::fs::read_to_string(dir.join("tune.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("rank,chosen,feasible,settings,") && header.contains("lost_median"),
        "{header}"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), set.len(), "{csv}");
    for (i, (row, c)) in rows.iter().zip(set).enumerate() {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[0], (i + 1).to_string(), "{csv}");
        assert_eq!(cells[1] == "true", c["chosen"] == true, "{csv}");
        assert_eq!(cells[2] == "true", c["feasible"] == true, "{csv}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_profile_reads_the_rate_and_the_histogram_of_the_scrape() {
    use fusebox_lab::tune::metrics::{Profile, Scrape};
    let s = Scrape::of(&scrape(), "partner").unwrap();
    assert_eq!(s.calls, 500.0);
    let p = Profile::between(None, &s, Duration::from_secs(10)).unwrap();
    assert_eq!((p.rate, p.timed), (50.0, 500.0));
    let ms = Duration::from_millis;
    let LatencyDist::Histogram { le, counts } = &p.latency_dist else {
        panic!("{:?}", p.latency_dist)
    };
    // 450 calls of 5 ms in the bucket up to 5 ms, the 50 of 40 ms in the
    // one up to 50 ms, nothing elsewhere.
    let at = |bound| counts[le.iter().position(|&l| l == bound).unwrap()];
    assert_eq!((at(ms(5)), at(ms(50))), (450.0, 50.0), "{le:?} {counts:?}");
    assert_eq!(counts.iter().sum::<f64>(), 500.0);
    // Spread evenly over their buckets: the median inside the first, the
    // p95 inside the one of the 40 ms calls.
    assert!(p.latency > ms(2) && p.latency <= ms(5), "{:?}", p.latency);
    let p95 = p.latency_dist.quantile(0.95);
    assert!(p95 > ms(25) && p95 <= ms(50), "{p95:?}");
    // The scenario it gives draws from that histogram.
    let sc = p.apply(&outage_scenario()).unwrap();
    assert_eq!(sc.downstream.latency_dist.as_ref(), Some(&p.latency_dist));
    assert!(sc.downstream.tail.is_empty());
    assert_eq!(sc.rate, 50.0);
    // Two scrapes: the increase between them.
    let before = Scrape {
        calls: 250.0,
        buckets: s.buckets.iter().map(|b| (b.0, b.1 / 2.0)).collect(),
    };
    let p2 = Profile::between(Some(&before), &s, Duration::from_secs(5)).unwrap();
    assert_eq!(p2.rate, 50.0);
    let err = Scrape::of(&scrape(), "payments").unwrap_err();
    assert!(
        err.contains("--dependency") && err.contains("partner"),
        "{err}"
    );
}

#[test]
fn bad_flags_are_named() {
    let sc = lab("scenarios/seed000-50rps-outage.toml");
    let sc = sc.to_str().unwrap();
    let fleet = lab("scenarios/fleet20-shared.toml");
    let fleet = fleet.to_str().unwrap().to_string();
    for (args, named) in [
        (
            vec![sc, "--objective", "p99<=300ms, min lost"],
            "--objective",
        ),
        (vec![sc, "--objective", "fault-p99<=300ms"], "min NAME"),
        (
            vec![sc, "--objective", "lost<=5ms, min lag"],
            "plain number",
        ),
        (vec![sc, "--space", "open_fr=1s"], "open_fr"),
        (
            vec![sc, "--space", "failure_rate=0.1..2:0.1"],
            "failure_rate",
        ),
        (vec![sc, "--policies", "rate"], "--policies"),
        // A fleet's settings on a scenario without a fleet, and a quorum
        // above the fleet's replicas.
        (vec![sc, "--space", "quorum=2"], "no [fleet]"),
        (vec![&fleet, "--space", "quorum=1..21:1"], "replicas = 20"),
        (vec![&fleet, "--space", "sync_every=0s"], "sync_every"),
        (
            vec!["--from-metrics", "/nonexistent/metrics.txt"],
            "--dependency",
        ),
        (
            vec![
                "--from-metrics",
                "/nonexistent/metrics.txt",
                "--dependency",
                "x",
            ],
            "/nonexistent/metrics.txt",
        ),
        (vec![], "scenario"),
        // --redis is for the real-mode run of --verify, and a URL.
        (vec![&fleet, "--redis", "local"], "--verify"),
        (
            vec![&fleet, "--verify", "--redis", "ftp://host:6379"],
            "--redis: \"ftp://host:6379\"",
        ),
    ] {
        let out = tune(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Every setting of a search on `fleet20-shared.toml` fixed but the
/// quorum (each test adds its own), so that it runs in seconds.
const FLEET_FIXED: [&str; 7] = [
    "consecutive_failures=5",
    "open_for=500ms",
    "half_open_probes=1",
    "successes_to_close=1",
    "timeout=none",
    "max_concurrent=none",
    "sync_every=1s",
];

/// `--verify` on a fleet that shares through Redis: without a Redis the
/// real-mode run is refused with the flag to pass; with `--redis URL` it
/// connects there (nothing listens on port 1: the error names the URL).
#[test]
fn verify_shares_a_fleet_through_the_given_redis() {
    let fleet = lab("scenarios/fleet20-shared.toml");
    let mut args = vec![
        fleet.to_str().unwrap(),
        "--grid",
        "--policies",
        "consecutive",
    ];
    for fixed in FLEET_FIXED.iter().chain(&["quorum=1"]) {
        args.extend(["--space", fixed]);
    }
    args.extend(["--runs", "1", "--check-runs", "1", "--quiet", "--verify"]);
    let out = tune(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("or pass --redis"), "{stderr}");
    args.extend(["--redis", "redis://127.0.0.1:1"]);
    let out = tune(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not reach Redis at redis://127.0.0.1:1"),
        "{stderr}"
    );
}

/// A fleet whose breakers share their trips is tuned with its `[fleet]`
/// settings: each candidate runs with its `sync_every` and `quorum` (the
/// same figures as the scenario with them set as `sweep` sets them), and
/// they change what the fleet does.
#[test]
fn a_shared_fleet_is_tuned_with_its_sync_and_quorum() {
    use fusebox_lab::engine::{self, Mode};
    use fusebox_lab::report::Summary;
    use fusebox_lab::scenario::sweep::apply;
    use fusebox_lab::scenario::ParamValue;
    let sc = Scenario::load(&lab("scenarios/fleet20-shared.toml")).unwrap();
    assert!(sc.shares_trips());
    let mut space = Space::default_for(sc.workers).with_fleet(sc.replicas());
    space.policies = vec![Policy::Consecutive];
    for fixed in FLEET_FIXED.iter().chain(&["quorum=1..20:19"]) {
        space.set(fixed).unwrap();
    }
    let points = grid(&space).unwrap();
    assert_eq!(points.len(), 2);
    let objective = Objective::parse("min lost").unwrap();
    let found = evaluate(&sc, &space, &objective, &points, 1..2, 1, |_| {}).unwrap();
    let calls = Objective::parse("min calls").unwrap().target;
    let mut seen = Vec::new();
    for c in &found {
        let fleet = space.fleet(&c.point).unwrap();
        assert_eq!(fleet.sync_every, Duration::from_secs(1));
        let set = apply(&sc, "quorum", ParamValue::Num(fleet.quorum as f64)).unwrap();
        let set = set.with_seed(1);
        let spec = space.spec(&c.point, "x".into()).unwrap();
        let run = Summary::of(
            &set,
            &engine::run(&set, &spec, Mode::Virtual, None).unwrap(),
        );
        assert_eq!(
            c.spread(objective.target).text(),
            format!("{0} [{0}-{0}]", run.lost_after_recovery),
            "quorum {}",
            fleet.quorum
        );
        seen.push((
            fleet.quorum,
            c.spread(calls).text(),
            c.spread(objective.target).text(),
        ));
    }
    // A quorum of all 20 replicas opens the fleet later than a quorum of 1.
    assert_ne!(seen[0].1, seen[1].1, "{seen:?}");
}

/// Two scrapes across a restart (the counters went down): the second
/// scrape's counts are the span's, as Prometheus's `increase()` takes them;
/// and a fleet's rate is the scrape's times its replicas.
#[test]
fn a_counter_reset_between_scrapes_and_a_fleets_rate() {
    use fusebox_lab::tune::metrics::{Profile, Scrape};
    let after = Scrape::of(&scrape(), "partner").unwrap();
    let before = Scrape {
        calls: 900.0,
        buckets: after.buckets.iter().map(|b| (b.0, b.1 * 2.0)).collect(),
    };
    let p = Profile::between(Some(&before), &after, Duration::from_secs(10)).unwrap();
    assert_eq!((p.rate, p.timed), (50.0, 500.0));
    let fleet = Scenario::load(&lab("scenarios/fleet20-shared.toml")).unwrap();
    let sc = p.apply(&fleet).unwrap();
    assert_eq!(sc.rate, 50.0 * 20.0);
}
