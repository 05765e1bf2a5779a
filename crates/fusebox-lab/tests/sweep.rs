//! `sweep`: parsing `NAME=FROM..TO:STEP`, applying each value (checked like
//! a file), and the rows being runs of the modified scenario.

use fusebox_lab::cli::sweep::run;
use fusebox_lab::engine::{self, Mode};
use fusebox_lab::report::sweep::render;
use fusebox_lab::report::Summary;
use fusebox_lab::scenario::sweep::{apply, Sweep};
use fusebox_lab::scenario::{ParamValue, Scenario};
use std::time::Duration;

#[test]
fn parses_duration_and_number_ranges() {
    let s = Sweep::parse("open_for=0.1s..2s:0.1s").unwrap();
    assert_eq!(s.name, "open_for");
    assert_eq!(s.values.len(), 20);
    assert_eq!(s.values[0], ParamValue::Dur(Duration::from_millis(100)));
    assert_eq!(s.values[19], ParamValue::Dur(Duration::from_secs(2)));
    let s = Sweep::parse("consecutive_failures=2..10:1").unwrap();
    assert_eq!(s.values.len(), 9);
    let s = Sweep::parse("rate=20..120:10").unwrap();
    assert_eq!(s.values.len(), 11);
    assert_eq!(s.values[10], ParamValue::Num(120.0));
    let s = Sweep::parse("rate=0.1..0.3:0.1").unwrap();
    assert_eq!(
        s.values,
        vec![
            ParamValue::Num(0.1),
            ParamValue::Num(0.2),
            ParamValue::Num(0.3)
        ]
    );
}

#[test]
fn rejects_bad_specs() {
    for bad in [
        "open_for",
        "x=1..2",
        "x=2..1:1",
        "x=1..2:0",
        "x=1s..2:1",
        "=1..2:1",
        "x=a..b:c",
    ] {
        assert!(Sweep::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn applies_to_scenario_and_strategies() {
    let sc = &Scenario::embedded()[0];
    let v = apply(sc, "rate", ParamValue::Num(20.0)).unwrap();
    assert_eq!(v.rate, 20.0);
    let v = apply(sc, "open_for", ParamValue::Dur(Duration::from_secs(1))).unwrap();
    assert_ne!(v.strategies, sc.strategies);
    assert!(apply(sc, "consecutive_failures", ParamValue::Num(0.0)).is_err());
    assert!(apply(sc, "open_for", ParamValue::Num(3.0)).is_err());
    assert!(apply(sc, "nonsense", ParamValue::Num(3.0)).is_err());
}

#[test]
fn values_fusebox_rejects_are_input_errors_not_panics() {
    // `min_calls` does not apply to the consecutive policy, as in files.
    let sc = &Scenario::embedded()[0];
    assert!(apply(sc, "min_calls", ParamValue::Num(5.0)).is_err());
    // `min_calls` above the 20-call window: fusebox refuses the config.
    let sc = Scenario::parse(
        "rate-vs-consecutive.toml",
        include_str!("../scenarios/rate-vs-consecutive.toml"),
    )
    .unwrap();
    assert!(apply(&sc, "min_calls", ParamValue::Num(20.0)).is_ok());
    let err = apply(&sc, "min_calls", ParamValue::Num(21.0)).unwrap_err();
    assert!(err.contains("min_calls"), "{err}");
    let sweep = Sweep::parse("min_calls=10..30:10").unwrap();
    assert!(run(&sc, &sweep, Mode::Virtual, || {}).is_err());
}

#[test]
fn sweep_rows_are_runs_of_the_modified_scenario() {
    let sc = &Scenario::embedded()[0];
    let sweep = Sweep::parse("open_for=0.1s..1s:0.3s").unwrap();
    let rows = run(sc, &sweep, Mode::Virtual, || {}).unwrap();
    assert_eq!(rows.len(), 4);
    let seed = sc
        .strategies
        .iter()
        .position(|s| s.kind.as_str() == "seed")
        .unwrap();
    for (v, sums) in &rows {
        let modified = apply(sc, "open_for", *v).unwrap();
        let direct = Summary::of(
            &modified,
            &engine::run(&modified, &modified.strategies[seed], Mode::Virtual, None).unwrap(),
        );
        assert_eq!(sums[seed], direct);
    }
    // A 0.1 s cool-down finds the recovery at once; 1 s loses most of a second.
    let lost: Vec<usize> = rows.iter().map(|r| r.1[seed].lost_after_recovery).collect();
    assert!(lost[0] < lost[3], "{lost:?}");
    assert!(rows[0].1[seed].failed_probes > rows[3].1[seed].failed_probes);
    let table = render(sc, &sweep, &rows);
    assert_eq!(table.lines().count(), 3 + rows.len());
}

#[test]
fn a_rate_above_the_limit_names_the_rate_limit() {
    let sc = &Scenario::embedded()[0];
    let err = apply(sc, "rate", ParamValue::Num(1e8)).unwrap_err();
    assert!(
        err.contains("key `rate`") && err.contains("at most 1000000"),
        "{err}"
    );
    // Below the rate limit but above the request limit: that limit is named.
    let err = apply(sc, "rate", ParamValue::Num(9e5)).unwrap_err();
    assert!(err.contains("2000000 requests"), "{err}");
    let err = apply(sc, "open_for", ParamValue::Dur(Duration::from_secs(90_000))).unwrap_err();
    assert!(err.contains("24h"), "{err}");
}

/// `--csv` and `--json` write every figure of every value and strategy,
/// one row each, with the values the sweep's runs give (and with `--runs`,
/// their median, p10 and p90).
#[test]
fn csv_and_json_hold_every_figure_of_every_run() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/seed000-50rps.toml");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-data");
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, json) = (dir.join("sweep.csv"), dir.join("sweep.json"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .args([
            "sweep",
            file,
            "--param",
            "open_for=0.5s..1s:0.5s",
            "--quiet",
            "--csv",
        ])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let scenario = Scenario::load(std::path::Path::new(file)).unwrap();
    let sweep = Sweep::parse("open_for=0.5s..1s:0.5s").unwrap();
    let rows = run(&scenario, &sweep, Mode::Virtual, || {}).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("param,value,strategy,figure,result"));
    let body: Vec<&str> = lines.collect();
    // Two values x every strategy x the four default figures.
    assert_eq!(body.len(), 2 * scenario.strategies.len() * 4, "{text}");
    for (v, sums) in &rows {
        for (spec, sum) in scenario.strategies.iter().zip(sums) {
            let calls = fusebox_lab::report::model::SWEEP_CHOICES
                .iter()
                .find(|f| f.name == "calls")
                .unwrap();
            let want = format!(
                "open_for,{v},{},calls,{}",
                spec.name,
                (calls.figure.ours)(sum).json()
            );
            assert!(body.contains(&want.as_str()), "{want} in {text}");
        }
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let listed = doc["rows"].as_array().unwrap();
    assert_eq!(listed.len(), body.len());
    assert_eq!(doc["param"], "open_for");
    let first = body[0].split(',').collect::<Vec<_>>();
    assert_eq!(listed[0]["strategy"], first[2]);
    assert_eq!(listed[0]["result"].to_string(), first[4]);

    // With --runs: a median, a p10 and a p90 per row.
    let random = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/seed000-50rps-random.toml"
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .args([
            "sweep",
            random,
            "--param",
            "open_for=0.5s..1s:0.5s",
            "--runs",
            "5",
            "--figures",
            "lost",
            "--quiet",
            "--csv",
        ])
        .arg(&csv)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.starts_with("param,value,strategy,figure,median,p10,p90,runs\n"),
        "{text}"
    );
    for line in text.lines().skip(1) {
        let f: Vec<f64> = line
            .split(',')
            .skip(4)
            .map(|x| x.parse().unwrap())
            .collect();
        assert!(f[1] <= f[0] && f[0] <= f[2] && f[3] == 5.0, "{line}");
    }
}

/// Two `--param`: the first swept at every value of the second, a table
/// each, and the CSV rows say both values.
#[test]
fn two_params_make_a_grid() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/seed000-50rps.toml");
    let csv = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-grid.csv");
    let lab = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
            .args([
                "sweep",
                file,
                "--quiet",
                "--param",
                "open_for=0.5s..1s:0.5s",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = lab(&[
        "--param",
        "consecutive_failures=3..5:2",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    for v in ["3", "5"] {
        assert_eq!(
            stdout
                .matches(&format!("== with consecutive_failures = {v}\n"))
                .count(),
            1,
            "{stdout}"
        );
    }
    let scenario = Scenario::load(std::path::Path::new(file)).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.starts_with("param2,value2,param,value,strategy,figure,result\n"),
        "{text}"
    );
    assert_eq!(
        text.lines().count() - 1,
        2 * 2 * scenario.strategies.len() * 4
    );
    assert!(
        text.contains("\nconsecutive_failures,5,open_for,1s,"),
        "{text}"
    );
    // The grid's cells are the runs of the scenario with both values.
    let both = apply(
        &apply(&scenario, "consecutive_failures", ParamValue::Num(5.0)).unwrap(),
        "open_for",
        ParamValue::Dur(Duration::from_secs(1)),
    )
    .unwrap();
    let r = engine::run(&both, &both.strategies[0], Mode::Virtual, None).unwrap();
    let lost = fusebox_lab::report::model::SWEEP_CHOICES
        .iter()
        .find(|f| f.name == "lost")
        .unwrap();
    let want = format!(
        "consecutive_failures,5,open_for,1s,{},lost,{}",
        both.strategies[0].name,
        (lost.figure.ours)(&Summary::of(&both, &r)).json()
    );
    assert!(text.contains(&want), "{want} in {text}");

    let out = lab(&["--param", "open_for=0.1s..0.2s:0.1s"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice"));
    let out = lab(&["--param", "rate=10..20:10", "--param", "workers=1..2:1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most two --param"));
}

fn fleet(file: &str) -> Scenario {
    let path = format!("{}/scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    Scenario::parse(file, &std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn fleet_parameters_change_the_fleet() {
    let sc = fleet("fleet20-window-shared.toml");
    let f = |sc: &Scenario| sc.fleet.clone().unwrap();
    let ms = |n| ParamValue::Dur(Duration::from_millis(n));
    assert_eq!(
        f(&apply(&sc, "sync_every", ms(250)).unwrap()).sync_every,
        Duration::from_millis(250)
    );
    assert_eq!(
        f(&apply(&sc, "propagation", ms(20)).unwrap()).propagation,
        Duration::from_millis(20)
    );
    assert_eq!(
        f(&apply(&sc, "quorum", ParamValue::Num(4.0)).unwrap()).quorum,
        4
    );
    let v = apply(&sc, "replicas", ParamValue::Num(10.0)).unwrap();
    // The rate stays the fleet's (round-robin over 10 now), workers each replica's.
    assert_eq!((v.replicas(), v.rate, v.workers), (10, sc.rate, sc.workers));
    assert_eq!(v.replica_of(13), 3);
}

#[test]
fn a_sync_every_sweep_over_a_shared_fleet_changes_its_figures() {
    // The window's verdicts are summed over the fleet every sync_every: the
    // longer it is, the later the fleet sees its 10 calls and trips.
    let sc = fleet("fleet20-window-shared.toml");
    let sweep = Sweep::parse("sync_every=0.1s..1s:0.9s").unwrap();
    let rows = run(&sc, &sweep, Mode::Virtual, || {}).unwrap();
    let fb = sc
        .strategies
        .iter()
        .position(|s| s.kind.as_str() == "fusebox")
        .unwrap();
    let calls: Vec<usize> = rows.iter().map(|r| r.1[fb].calls_during_fault).collect();
    assert!(calls[0] < calls[1], "{calls:?}");
    // Each row is a run of the scenario with that sync_every.
    let modified = apply(&sc, "sync_every", rows[1].0).unwrap();
    let direct = Summary::of(
        &modified,
        &engine::run(&modified, &modified.strategies[fb], Mode::Virtual, None).unwrap(),
    );
    assert_eq!(rows[1].1[fb], direct);
    // Local breakers share nothing: sync_every changes none of their figures.
    let local = fleet("fleet20-window-local.toml");
    let rows = run(&local, &sweep, Mode::Virtual, || {}).unwrap();
    assert_eq!(rows[0].1, rows[1].1);
}

#[test]
fn a_quorum_sweep_over_a_starving_fleet_changes_its_figures() {
    let sc = fleet("starve-shared.toml");
    let sweep = Sweep::parse("quorum=1..3:2").unwrap();
    let rows = run(&sc, &sweep, Mode::Virtual, || {}).unwrap();
    // Quorum 1: replica 3's trips open the whole fleet, which calls less.
    assert!(
        rows[0].1[0].calls_during_fault < rows[1].1[0].calls_during_fault,
        "{rows:?}"
    );
}

#[test]
fn bad_fleet_parameters_are_errors_naming_them() {
    let sc = fleet("fleet20-shared.toml");
    let err = apply(&sc, "quorum", ParamValue::Num(21.0)).unwrap_err();
    assert!(
        err.contains("quorum = 21")
            && err.contains("fleet.quorum")
            && err.contains("replicas = 20"),
        "{err}"
    );
    // Fewer replicas than the quorum, or than a fault names.
    let starve = fleet("starve-shared.toml");
    let err = apply(&starve, "replicas", ParamValue::Num(2.0)).unwrap_err();
    assert!(
        err.contains("replicas = 2") && err.contains("fleet.quorum"),
        "{err}"
    );
    let err = apply(&starve, "replicas", ParamValue::Num(5.0)).unwrap_err();
    assert!(
        err.contains("replicas = 5") && err.contains("replica 7"),
        "{err}"
    );
    for (name, bad) in [
        ("sync_every", ParamValue::Num(1.0)),
        ("sync_every", ParamValue::Dur(Duration::ZERO)),
        ("propagation", ParamValue::Dur(Duration::from_secs(10))),
        ("replicas", ParamValue::Num(0.0)),
        ("replicas", ParamValue::Num(2.5)),
        ("quorum", ParamValue::Num(0.0)),
    ] {
        let err = apply(&sc, name, bad).unwrap_err();
        assert!(err.contains(name), "{name} = {bad}: {err}");
    }
    // No [fleet]: every fleet parameter is refused, named.
    let plain = &Scenario::embedded()[0];
    for name in ["replicas", "quorum", "sync_every", "propagation"] {
        let err = apply(plain, name, ParamValue::Num(2.0)).unwrap_err();
        assert!(err.contains(name) && err.contains("no [fleet]"), "{err}");
    }
    let sweep = Sweep::parse("quorum=1..21:10").unwrap();
    assert!(run(&sc, &sweep, Mode::Virtual, || {}).is_err());
}
