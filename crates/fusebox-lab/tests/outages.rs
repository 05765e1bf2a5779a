//! The outage model: a fault's `onset` and `length` drawn from ranges for
//! each seed (uniformly, or log-uniformly with `length_dist`), within their
//! bounds, the same for the same seed; bad ranges named by their key and
//! line; a run too short for the latest outage and its recovery refused;
//! and the ranges said in the report of many runs.

mod common;

use common::shipped;
use fusebox_lab::engine::Mode;
use fusebox_lab::report::runs::RunsReport;
use fusebox_lab::report::{json, ScenarioReport};
use fusebox_lab::scenario::{LengthDist, Scenario, EMBEDDED};
use std::time::Duration;

const OUTAGE: &str = "seed000-50rps-outage";

/// seed000-50rps over `duration`, its fault's `from` and `until` replaced
/// by `times` (TOML lines).
fn outage(duration: &str, times: &str) -> String {
    EMBEDDED[0]
        .1
        .replacen(
            "duration = \"3s\"",
            &format!("duration = \"{duration}\""),
            1,
        )
        .replacen("from = \"500ms\"\nuntil = \"1500ms\"", times, 1)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The faults' starts and lengths over `seeds`, in seconds.
fn draws(sc: &Scenario, seeds: std::ops::Range<u64>) -> Vec<(f64, f64)> {
    seeds
        .map(|seed| {
            let f = &sc.with_seed(seed).downstream.faults[0];
            (secs(f.from), secs(f.until - f.from))
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[test]
fn onset_and_length_are_drawn_within_their_ranges_and_spread_over_them() {
    let text = outage("8s", "onset = \"0.5s..2s\"\nlength = \"0.5s..5s\"");
    let sc = Scenario::parse("x.toml", &text).unwrap();
    assert!(sc.is_random());
    assert_eq!(sc.outages.len(), 1);
    assert_eq!(sc.outages[0].length_dist, LengthDist::Uniform);
    let d = draws(&sc, 0..2000);
    for &(from, length) in &d {
        assert!((0.5..=2.0).contains(&from), "onset {from}");
        assert!((0.5..=5.0).contains(&length), "length {length}");
    }
    let (from, length): (Vec<f64>, Vec<f64>) = d.iter().copied().unzip();
    // Uniform: the medians halfway, a tenth below a tenth of the way.
    assert!((median(from.clone()) - 1.25).abs() < 0.05);
    assert!((median(length.clone()) - 2.75).abs() < 0.15);
    let low = length.iter().filter(|&&l| l < 0.95).count();
    assert!((150..=250).contains(&low), "{low} of 2000 under 0.95 s");
    // Both ends reached, nearly.
    let (lo, hi) = length
        .iter()
        .fold((9.0f64, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(lo < 0.52 && hi > 4.98, "[{lo}, {hi}]");
    // The onset and the length are drawn independently.
    let n = d.len() as f64;
    let (mf, ml) = (from.iter().sum::<f64>() / n, length.iter().sum::<f64>() / n);
    let cov = d.iter().map(|(f, l)| (f - mf) * (l - ml)).sum::<f64>() / n;
    let (sf, sl) = (1.5 / 12f64.sqrt(), 4.5 / 12f64.sqrt());
    assert!(
        (cov / (sf * sl)).abs() < 0.08,
        "correlation {}",
        cov / (sf * sl)
    );
}

#[test]
fn a_log_uniform_length_has_as_many_outages_in_each_doubling() {
    let text = outage(
        "8s",
        "onset = \"0.5s..2s\"\nlength = \"0.5s..5s\"\nlength_dist = \"loguniform\"",
    );
    let sc = Scenario::parse("x.toml", &text).unwrap();
    assert_eq!(sc.outages[0].length_dist, LengthDist::LogUniform);
    let length: Vec<f64> = draws(&sc, 0..2000).into_iter().map(|d| d.1).collect();
    assert!(length.iter().all(|l| (0.5..=5.0).contains(l)));
    // The median is the geometric mean, sqrt(0.5 x 5) = 1.58 s (a uniform
    // draw's is 2.75 s).
    let m = median(length.clone());
    assert!((m - 1.581).abs() < 0.08, "median {m}");
    // 0.5..1 s and 1..2 s: log2(2) / log2(10) = 30 % of the draws each.
    for (a, b) in [(0.5, 1.0), (1.0, 2.0)] {
        let k = length.iter().filter(|&&l| a <= l && l < b).count();
        assert!((530..=670).contains(&k), "{k} of 2000 in {a}..{b} s");
    }
}

#[test]
fn a_fixed_start_or_a_fixed_length_goes_with_a_range_of_the_other() {
    // from fixed, length drawn.
    let sc = Scenario::parse(
        "x.toml",
        &outage("8s", "from = \"1s\"\nlength = \"1s..3s\""),
    )
    .unwrap();
    for (from, length) in draws(&sc, 0..200) {
        assert_eq!(from, 1.0);
        assert!((1.0..=3.0).contains(&length));
    }
    // onset drawn, length fixed.
    let sc = Scenario::parse(
        "x.toml",
        &outage("8s", "onset = \"1s..3s\"\nlength = \"2s\""),
    )
    .unwrap();
    for (from, length) in draws(&sc, 0..200) {
        assert!((1.0..=3.0).contains(&from));
        assert!((length - 2.0).abs() < 1e-9);
    }
    // Both fixed: nothing is drawn, as from/until would be.
    let sc = Scenario::parse("x.toml", &outage("8s", "from = \"1s\"\nlength = \"2s\"")).unwrap();
    assert!(!sc.is_random());
    let f = &sc.downstream.faults[0];
    assert_eq!(
        (f.from, f.until),
        (Duration::from_secs(1), Duration::from_secs(3))
    );
}

/// The same seed gives the same outage and the same run, byte for byte;
/// another seed another outage; and the file without ranges is as before.
#[test]
fn a_seed_replays_its_outage_and_another_seed_draws_another() {
    let sc = shipped(OUTAGE);
    assert_eq!(sc.with_seed(sc.seed), sc);
    let report = |seed| {
        let r = ScenarioReport::run(sc.with_seed(seed), Mode::Virtual, None, |_| {}, || {});
        json::text(&[r.unwrap()])
    };
    assert_eq!(report(7), report(7));
    assert_ne!(report(7), report(8));
    let spans: std::collections::HashSet<_> =
        (0..20).map(|s| sc.with_seed(s).fault_span()).collect();
    assert_eq!(spans.len(), 20, "20 seeds, 20 outages");
    // The binary: `--seed` replays, another differs.
    let path = format!("{}/scenarios/{OUTAGE}.toml", env!("CARGO_MANIFEST_DIR"));
    let run = |seed: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
            .args(["run", "--clock", "virtual", "-q", "--seed", seed, &path])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(run("3"), run("3"));
    assert_ne!(run("3"), run("4"));
    // A file without ranges has no outage.
    let plain = Scenario::parse("x.toml", EMBEDDED[0].1).unwrap();
    assert!(plain.outages.is_empty() && !plain.is_random());
}

/// Over many seeds, a longer outage costs the run without a breaker more
/// failed calls; a breaker's stay near its trip threshold.
#[test]
fn many_runs_say_the_ranges_and_spread_with_the_outage() {
    let sc = shipped(OUTAGE);
    let report = RunsReport::run(sc.clone(), Mode::Virtual, 30, || {}).unwrap();
    let text = report.text();
    assert!(
        text.contains("outage from 500ms..2s lasting 500ms..5s (log-uniform)"),
        "{text}"
    );
    assert!(
        !text.contains("nothing in this scenario is drawn"),
        "{text}"
    );
    // Per seed: the calls that failed without a breaker follow the drawn
    // length (50 req/s: 50 a second of outage, give or take one).
    for (seed, s) in report.seeds.clone().zip(&report.summaries[0]) {
        let f = &sc.with_seed(seed).downstream.faults[0];
        let expected = secs(f.until - f.from) * 50.0;
        let failed = s.downstream_errors as f64;
        assert!(
            (failed - expected).abs() <= 1.5,
            "seed {seed}: {failed} vs {expected}"
        );
    }
    let failed: Vec<usize> = report.summaries[0]
        .iter()
        .map(|s| s.downstream_errors)
        .collect();
    assert!(failed.iter().max().unwrap() > &(3 * failed.iter().min().unwrap()));
    // A breaker's failed calls stay under the threshold plus a failed
    // probe or a few, however long the outage.
    for s in &report.summaries[2] {
        assert!(s.downstream_errors <= 5 + 15, "{}", s.downstream_errors);
    }
}

#[test]
fn bad_ranges_are_named_by_their_key_and_line() {
    let cases = [
        (
            "onset = \"0.5s..2s\"\nlength = \"5s..0.5s\"",
            "downstream.faults.length",
            "length",
            "below its start",
        ),
        (
            "onset = \"2s..1s\"\nlength = \"1s\"",
            "downstream.faults.onset",
            "onset",
            "below its start",
        ),
        (
            "onset = \"-1s..2s\"\nlength = \"1s\"",
            "downstream.faults.onset",
            "onset",
            "negative",
        ),
        (
            "from = \"1s\"\nlength = \"0.5s..-5s\"",
            "downstream.faults.length",
            "length",
            "negative",
        ),
        (
            "from = \"1s\"\nlength = \"0.5s..five\"",
            "downstream.faults.length",
            "length",
            "not a duration or a range",
        ),
        (
            "from = \"1s\"\nlength = \"..5s\"",
            "downstream.faults.length",
            "length",
            "not a duration or a range",
        ),
        (
            "from = \"1s\"\nlength = 5",
            "downstream.faults.length",
            "length",
            "such as \"0.5s..5s\"",
        ),
        (
            "from = \"1s\"\nlength = \"0s..2s\"",
            "downstream.faults.length",
            "length",
            "must be > 0",
        ),
        (
            "onset = \"1s..9s\"\nlength = \"1s\"",
            "downstream.faults.onset",
            "onset",
            "outside the run",
        ),
        (
            "from = \"1s\"\nlength = \"1s..2s\"\nlength_dist = \"normal\"",
            "downstream.faults.length_dist",
            "length_dist",
            "\"loguniform\"",
        ),
        (
            "from = \"1s\"\nuntil = \"2s\"\nlength_dist = \"loguniform\"",
            "downstream.faults.length_dist",
            "length_dist",
            "is for a fault with length",
        ),
        (
            "from = \"1s\"\nonset = \"1s..2s\"\nlength = \"1s\"",
            "downstream.faults.onset",
            "onset",
            "not both",
        ),
        (
            "from = \"1s\"\nuntil = \"2s\"\nlength = \"1s\"",
            "downstream.faults.length",
            "length",
            "not both",
        ),
        (
            "onset = \"1s..2s\"\nuntil = \"4s\"",
            "downstream.faults.until",
            "until",
            "needs length",
        ),
        (
            "onset = \"1s..2s\"\nlength = \"1s\"\njitter = \"100ms\"",
            "downstream.faults.jitter",
            "jitter",
            "leave jitter out",
        ),
    ];
    for (times, key, starts, says) in cases {
        let text = outage("8s", times);
        let e = Scenario::parse("x.toml", &text).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{times}: {e}");
        assert!(e.message.contains(says), "{times}: {e}");
        let line = text.lines().position(|l| l.starts_with(starts)).unwrap() + 1;
        assert_eq!(e.line, Some(line), "{times}: {e}");
    }
    // Neither from nor onset, neither until nor length.
    for (times, key) in [
        ("length = \"1s\"", "downstream.faults.from"),
        ("onset = \"1s..2s\"", "downstream.faults.until"),
    ] {
        let e = Scenario::parse("x.toml", &outage("8s", times)).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{times}: {e}");
        assert!(e.message.starts_with("missing"), "{times}: {e}");
    }
}

/// The run must cover the latest onset, the longest length and the
/// recovery: the longest open_for of the strategies, at least one window.
#[test]
fn a_run_too_short_for_the_latest_outage_and_its_recovery_is_refused() {
    let times = "onset = \"0.5s..2s\"\nlength = \"0.5s..5s\"";
    // 2 s + 5 s + 500 ms (open_for and window): 7.5 s is enough, 7.4 s not.
    assert!(Scenario::parse("x.toml", &outage("7.5s", times)).is_ok());
    let e = Scenario::parse("x.toml", &outage("7.4s", times)).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("duration"), "{e}");
    assert_eq!(e.line, Some(5), "{e}");
    assert!(e.message.contains("make duration at least 7.5s"), "{e}");
    assert!(e.message.contains("as late as 7s"), "{e}");
    // A longer open_for needs a longer run.
    let long = outage("7.5s", times).replace("open_for = \"500ms\"", "open_for = \"2s\"");
    let e = Scenario::parse("x.toml", &long).unwrap_err();
    assert!(e.message.contains("make duration at least 9s"), "{e}");
    // So does a sweep that lengthens it.
    let sc = Scenario::parse("x.toml", &outage("8s", times)).unwrap();
    let e = fusebox_lab::scenario::sweep::apply(
        &sc,
        "open_for",
        fusebox_lab::scenario::ParamValue::Dur(Duration::from_secs(2)),
    )
    .unwrap_err();
    assert!(
        e.contains("key `duration`") && e.contains("at least 9s"),
        "{e}"
    );
}

/// The outage scenario with its fault's `outcome = "error"` replaced by
/// `outcome` (a TOML value), and a client timeout for the hangs.
/// The text of the shipped outage scenario.
fn outage_file() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{OUTAGE}.toml"));
    std::fs::read_to_string(path).unwrap()
}

fn with_outcome(outcome: &str) -> Result<Scenario, fusebox_lab::scenario::ScenarioError> {
    let text = outage_file();
    assert!(text.contains("outcome = \"error\""));
    let text = text.replacen("outcome = \"error\"", &format!("outcome = {outcome}"), 1)
        + "\n[client]\ntimeout = \"300ms\"\n";
    Scenario::parse("kinds.toml", &text)
}

/// `outcome = [..]`: each run's outcome is drawn from the list, each as
/// often as another, the same for the same seed; the outage's times are
/// the draws they are with one outcome; the report of many runs says the
/// list; and the runs differ by it as their outcomes do.
#[test]
fn an_outage_draws_its_outcome_from_a_list_for_each_run() {
    use fusebox_lab::scenario::FaultOutcome;
    let sc = with_outcome("[\"error\", \"hang\", \"slow\"]").unwrap();
    let one = with_outcome("\"error\"").unwrap();
    assert!(sc.is_random());
    let mut counts = std::collections::HashMap::new();
    for seed in 1..=300 {
        let f = &sc.with_seed(seed).downstream.faults[0];
        let g = &one.with_seed(seed).downstream.faults[0];
        assert_eq!((f.from, f.until), (g.from, g.until), "seed {seed}");
        assert_eq!(f.outcome, sc.with_seed(seed).downstream.faults[0].outcome);
        *counts.entry(f.outcome).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 3, "{counts:?}");
    for k in [FaultOutcome::Error, FaultOutcome::Hang, FaultOutcome::Slow] {
        let n = counts[&k];
        assert!(
            (70..=130).contains(&n),
            "{k:?} drawn {n} times of 300: {counts:?}"
        );
    }
    // A run's figures follow its drawn outcome: a slow outage that stays
    // under the timeout fails no call, an error outage fails some.
    let seed_of = |k: FaultOutcome| {
        (1..=300)
            .find(|&s| sc.with_seed(s).downstream.faults[0].outcome == k)
            .unwrap()
    };
    let failed = |seed: u64| {
        let run = sc.with_seed(seed);
        let r = ScenarioReport::run(run, Mode::Virtual, None, |_| {}, || {}).unwrap();
        r.summaries[0].downstream_errors
    };
    assert!(failed(seed_of(FaultOutcome::Error)) > 0);
    assert_eq!(failed(seed_of(FaultOutcome::Slow)), 0);
    let report = RunsReport::run(sc.clone(), Mode::Virtual, 4, || {}).unwrap();
    assert!(
        report
            .text()
            .contains("outcome drawn from error, hang, slow"),
        "{}",
        report.text()
    );
    // A fault at fixed times draws its outcome too, and keeps its times.
    let fixed = Scenario::parse(
        "fixed.toml",
        &outage("3s", "from = \"500ms\"\nuntil = \"1500ms\"").replacen(
            "outcome = \"error\"",
            "outcome = [\"error\", \"reset\"]",
            1,
        ),
    )
    .unwrap();
    let drawn: std::collections::HashSet<_> = (1..=40)
        .map(|s| {
            let f = &fixed.with_seed(s).downstream.faults[0];
            assert_eq!(
                (f.from, f.until),
                (Duration::from_millis(500), Duration::from_millis(1500))
            );
            f.outcome
        })
        .collect();
    assert_eq!(drawn.len(), 2, "{drawn:?}");
    // One outcome in a list is that outcome, fixed.
    let single = with_outcome("[\"error\"]").unwrap();
    assert_eq!(single.outages[0].kinds.len(), 0);
}

#[test]
fn a_bad_outcome_list_is_named() {
    for (outcome, says) in [
        ("[]", "must be an outcome"),
        ("[\"error\", \"capacity\"]", "cannot be drawn"),
        ("[\"error\", \"error\"]", "twice"),
        ("[\"error\", 3]", "outcome names"),
        ("[\"error\", \"stall\"]", "\"stall\" is not one of"),
        ("7", "must be an outcome"),
    ] {
        let e = with_outcome(outcome).unwrap_err().to_string();
        assert!(
            e.contains("downstream.faults.outcome") && e.contains(says),
            "{outcome}: {e}"
        );
    }
    // Every outcome of the list is checked, whatever the file's seed draws:
    // a hang needs a client timeout.
    let base = outage_file();
    for seed in 1..=10 {
        let text = base
            .replacen("outcome = \"error\"", "outcome = [\"error\", \"hang\"]", 1)
            .replacen("seed = 1 ", &format!("seed = {seed} "), 1);
        let e = Scenario::parse("kinds.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"hang\"") && e.contains("timeout"),
            "seed {seed}: {e}"
        );
    }
    // A fault at fixed times that draws its outcome keeps the rules of a
    // fault at fixed times: no drawn outage's recovery to fit in the run.
    let late = outage("3s", "from = \"500ms\"\nuntil = \"2800ms\"").replacen(
        "outcome = \"error\"",
        "outcome = [\"error\", \"reset\"]",
        1,
    );
    Scenario::parse("late.toml", &late).unwrap();
    // A distribution is for the outcomes that fail after their latency.
    let text = outage_file().replacen(
        "latency = \"150ms\"        # a faulty call fails after this\noutcome = \"error\"",
        "latency = { lognormal = { p50 = \"100ms\", p99 = \"300ms\" } }\noutcome = [\"error\", \"hang\"]",
        1,
    ) + "\n[client]\ntimeout = \"300ms\"\n";
    let e = Scenario::parse("kinds.toml", &text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("downstream.faults.latency") && e.contains("\"hang\""),
        "{e}"
    );
}
