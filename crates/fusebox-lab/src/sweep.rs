//! `fusebox-lab sweep`: one scenario, one parameter varied over a range.
//!
//! Scenario-wide parameters (`rate`, `workers`, `queue`, `timeout`, `retries`)
//! change the scenario; any other name is a strategy key (`open_for`,
//! `failures`, `probes`, ...) and changes every strategy that has it.

use crate::report::{secs, Summary};
use crate::run::{self, Mode};
use crate::scenario::{parse_duration, Scenario};
use crate::strategy::ParamValue;
use crate::CliError;
use std::fmt::Write;
use std::path::Path;

/// Largest number of values one sweep may have.
const MAX_VALUES: usize = 10_000;

/// A parsed `NAME=FROM..TO:STEP`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Parameter name.
    pub name: String,
    /// The values, in order.
    pub values: Vec<ParamValue>,
}

fn value(s: &str) -> Result<ParamValue, String> {
    let s = s.trim();
    if s.ends_with(|c: char| c.is_ascii_alphabetic()) {
        parse_duration(s).map(ParamValue::Dur)
    } else {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(ParamValue::Num)
            .ok_or_else(|| format!("{s:?} is not a number or a duration"))
    }
}

impl Sweep {
    /// Parses `NAME=FROM..TO:STEP` (e.g. `open_for=0.1s..2s:0.1s`, `failures=2..10:1`).
    pub fn parse(spec: &str) -> Result<Sweep, String> {
        let usage = || {
            format!("--param {spec:?}: expected NAME=FROM..TO:STEP, e.g. open_for=0.1s..2s:0.1s")
        };
        let (name, range) = spec.split_once('=').ok_or_else(usage)?;
        let (range, step) = range.rsplit_once(':').ok_or_else(usage)?;
        let (from, to) = range.split_once("..").ok_or_else(usage)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(usage());
        }
        let bad = |e: String| format!("--param {spec:?}: {e}");
        let (from, to, step) = (
            value(from).map_err(bad)?,
            value(to).map_err(bad)?,
            value(step).map_err(bad)?,
        );
        let values = match (from, to, step) {
            (ParamValue::Dur(a), ParamValue::Dur(b), ParamValue::Dur(s)) => {
                if s.is_zero() || b < a {
                    return Err(bad("needs FROM <= TO and STEP > 0".into()));
                }
                let n = ((b - a).as_nanos() / s.as_nanos()) as usize + 1;
                if n > MAX_VALUES {
                    return Err(bad(format!("more than {MAX_VALUES} values")));
                }
                (0..n).map(|k| ParamValue::Dur(a + s * k as u32)).collect()
            }
            (ParamValue::Num(a), ParamValue::Num(b), ParamValue::Num(s)) => {
                if s <= 0.0 || b < a {
                    return Err(bad("needs FROM <= TO and STEP > 0".into()));
                }
                let n = ((b - a) / s + 1e-9).floor() + 1.0;
                if n > MAX_VALUES as f64 {
                    return Err(bad(format!("more than {MAX_VALUES} values")));
                }
                // Rounded to 9 significant decimals so 0.1 steps print cleanly.
                (0..n as usize)
                    .map(|k| ParamValue::Num(((a + s * k as f64) * 1e9).round() / 1e9))
                    .collect()
            }
            _ => {
                return Err(bad(
                    "FROM, TO and STEP must all be durations or all numbers".into(),
                ))
            }
        };
        Ok(Sweep {
            name: name.to_string(),
            values,
        })
    }
}

/// `scenario` with parameter `name` set to `value`.
pub fn apply(scenario: &Scenario, name: &str, value: ParamValue) -> Result<Scenario, String> {
    let mut sc = scenario.clone();
    let count = |min: f64, max: f64| match value {
        ParamValue::Num(x) if x.fract() == 0.0 && x >= min && x <= max => Ok(x),
        _ => Err(format!(
            "{name} must be a whole number in {min}..={max}, not {value}"
        )),
    };
    match name {
        "rate" => match value {
            ParamValue::Num(x) if x > 0.0 && x <= 1e6 => sc.rate = x,
            _ => return Err(format!("rate must be a number > 0, not {value}")),
        },
        "workers" => sc.workers = count(1.0, 4096.0)? as usize,
        "queue" => sc.queue = count(0.0, 1e8)? as usize,
        "retries" => sc.client.retries = count(0.0, 100.0)? as u32,
        "timeout" => match value {
            ParamValue::Dur(d) if !d.is_zero() => sc.client.timeout = Some(d),
            _ => return Err(format!("timeout must be a duration > 0, not {value}")),
        },
        _ => {
            let mut any = false;
            for s in &mut sc.strategies {
                any |= s.kind.set_param(name, value)?;
            }
            if !any {
                return Err(format!(
                    "no strategy of scenario {:?} has a parameter {name:?} (scenario-wide: rate, workers, queue, timeout, retries)",
                    scenario.name
                ));
            }
        }
    }
    if sc.duration.as_secs_f64() * sc.rate > crate::scenario::MAX_REQUESTS as f64 {
        return Err(format!("{name} = {value} gives too many requests"));
    }
    Ok(sc)
}

/// One sweep row: the value and one summary per strategy.
pub type Row = (ParamValue, Vec<Summary>);

/// Runs the sweep; `tick` is called after each run.
pub fn run(
    scenario: &Scenario,
    sweep: &Sweep,
    mode: Mode,
    mut tick: impl FnMut(),
) -> Result<Vec<Row>, String> {
    // Validate every value before running anything.
    let scenarios: Vec<Scenario> = sweep
        .values
        .iter()
        .map(|v| apply(scenario, &sweep.name, *v))
        .collect::<Result<_, _>>()?;
    Ok(sweep
        .values
        .iter()
        .zip(scenarios)
        .map(|(v, sc)| {
            let sums = sc
                .strategies
                .iter()
                .map(|spec| {
                    let r = run::run(&sc, spec, mode);
                    tick();
                    Summary::of(&sc, &r)
                })
                .collect();
            (*v, sums)
        })
        .collect())
}

/// The sweep table.
pub fn render(scenario: &Scenario, sweep: &Sweep, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== sweep {} over {} values of {}",
        scenario.name,
        rows.len(),
        sweep.name
    );
    let _ = writeln!(
        out,
        "   per strategy: downstream calls during the fault / requests lost after recovery / failed probes / recovery lag s"
    );
    let vw = rows
        .iter()
        .map(|r| r.0.to_string().len())
        .max()
        .unwrap_or(0)
        .max(sweep.name.len());
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, sums)| {
            sums.iter()
                .map(|s| {
                    format!(
                        "{:>4} / {:>4} / {:>2} / {:>6}",
                        s.calls_during_fault,
                        s.lost_after_recovery,
                        s.failed_probes,
                        s.recovery_lag.map_or("-".into(), secs)
                    )
                })
                .collect()
        })
        .collect();
    let names: Vec<&str> = scenario
        .strategies
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let widths: Vec<usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            cells
                .iter()
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
                .max(n.len())
        })
        .collect();
    let _ = write!(out, "  {:>vw$}", sweep.name);
    for (n, w) in names.iter().zip(&widths) {
        let _ = write!(out, " | {n:>w$}");
    }
    out.push('\n');
    for ((v, _), row) in rows.iter().zip(&cells) {
        let _ = write!(out, "  {:>vw$}", v.to_string());
        for (c, w) in row.iter().zip(&widths) {
            let _ = write!(out, " | {c:>w$}");
        }
        out.push('\n');
    }
    out
}

/// The `sweep` subcommand.
pub fn cmd_sweep(path: &Path, param: &str, mode: Mode, quiet: bool) -> Result<(), CliError> {
    let scenario = Scenario::load(path).map_err(|e| CliError::BadInput(e.to_string()))?;
    crate::peers::check(&scenario, mode).map_err(CliError::BadInput)?;
    let sweep = Sweep::parse(param).map_err(CliError::BadInput)?;
    let total = (sweep.values.len() * scenario.strategies.len()) as u64;
    let pb = crate::progress(total, quiet, &format!("sweep {}", sweep.name));
    let rows = run(&scenario, &sweep, mode, || pb.inc(1)).map_err(CliError::BadInput)?;
    pb.finish_and_clear();
    print!("{}", render(&scenario, &sweep, &rows));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn parses_duration_and_number_ranges() {
        let s = Sweep::parse("open_for=0.1s..2s:0.1s").unwrap();
        assert_eq!(s.name, "open_for");
        assert_eq!(s.values.len(), 20);
        assert_eq!(s.values[0], ParamValue::Dur(Duration::from_millis(100)));
        assert_eq!(s.values[19], ParamValue::Dur(Duration::from_secs(2)));
        let s = Sweep::parse("failures=2..10:1").unwrap();
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
        assert!(apply(sc, "failures", ParamValue::Num(0.0)).is_err());
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
                &crate::sim::run(&modified, &modified.strategies[seed]),
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
}
