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
