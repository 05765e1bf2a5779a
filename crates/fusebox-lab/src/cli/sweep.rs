//! `fusebox-lab sweep`: one scenario, one parameter varied over a range
//! (see [`crate::scenario::sweep`]), each value run and summarised; with
//! `--runs N`, each value run for N seeds ([`crate::report::runs`]).

use super::{progress, CliError, SweepArgs};
use crate::engine::{self, Mode};
use crate::report::model::{default_sweep_figures, sweep_figures, SWEEP_CHOICES};
use crate::report::runs::{self, run_seeds};
use crate::report::sweep::{self as table, render_figures, render_runs, Row, RunsRow};
use crate::report::Summary;
use crate::scenario::sweep::{apply, Sweep};
use crate::scenario::Scenario;
use std::ops::Range;

/// Every value of `sweep` applied to `scenario`, checked before anything runs.
fn scenarios(scenario: &Scenario, sweep: &Sweep) -> Result<Vec<Scenario>, String> {
    sweep
        .values
        .iter()
        .map(|v| apply(scenario, &sweep.name, *v))
        .collect()
}

/// Runs the sweep; `tick` is called after each run.
pub fn run(
    scenario: &Scenario,
    sweep: &Sweep,
    mode: Mode,
    mut tick: impl FnMut(),
) -> Result<Vec<Row>, String> {
    let scenarios = scenarios(scenario, sweep)?;
    let mut rows = Vec::with_capacity(scenarios.len());
    for (v, sc) in sweep.values.iter().zip(scenarios) {
        let mut sums = Vec::with_capacity(sc.strategies.len());
        for spec in &sc.strategies {
            let r = engine::run(&sc, spec, mode, None)?;
            tick();
            sums.push(Summary::of(&sc, &r));
        }
        rows.push((*v, sums));
    }
    Ok(rows)
}

/// Runs the sweep once per seed of `seeds` for each value: value `v` with
/// seed `s` is the scenario with `v` applied, drawn for `s`
/// ([`Scenario::with_seed`]), so every value meets the same draws (the
/// same outages, arrivals and tail) seed for seed. `tick` is called after
/// each run.
pub fn run_many(
    scenario: &Scenario,
    sweep: &Sweep,
    mode: Mode,
    seeds: Range<u64>,
    mut tick: impl FnMut(),
) -> Result<Vec<RunsRow>, String> {
    let scenarios = scenarios(scenario, sweep)?;
    let mut rows = Vec::with_capacity(scenarios.len());
    for (v, sc) in sweep.values.iter().zip(scenarios) {
        rows.push((*v, run_seeds(&sc, mode, seeds.clone(), &mut tick)?));
    }
    Ok(rows)
}

/// The `sweep` subcommand.
pub(super) fn cmd_sweep(args: &SweepArgs) -> Result<(), CliError> {
    let path = &args.scenario;
    let mut scenario = Scenario::load(path).map_err(|e| CliError::BadInput(e.to_string()))?;
    if let Some(seed) = args.seed {
        scenario = scenario.with_seed(seed);
    }
    engine::check(&scenario, args.clock).map_err(CliError::BadInput)?;
    let (first, second) = match args.param.as_slice() {
        [a] => (a, None),
        [a, b] => (a, Some(b)),
        _ => {
            return Err(CliError::BadInput(
                "at most two --param (a grid of two parameters)".into(),
            ))
        }
    };
    let sweep = Sweep::parse(first).map_err(CliError::BadInput)?;
    let outer = second
        .map(|b| Sweep::parse(b).map_err(CliError::BadInput))
        .transpose()?;
    if outer.as_ref().is_some_and(|o| o.name == sweep.name) {
        return Err(CliError::BadInput(format!(
            "--param {}: given twice",
            sweep.name
        )));
    }
    let figures = match &args.figures {
        Some(list) => sweep_figures(list).map_err(CliError::BadInput)?,
        None if args.runs.is_some() => SWEEP_CHOICES.iter().collect(),
        None => default_sweep_figures(),
    };
    if args.html.is_some() && outer.is_none() {
        return Err(CliError::BadInput(
            "--html draws heat maps of two parameters: give --param twice (the first for the \
             columns, the second for the rows)"
                .into(),
        ));
    }
    // Before anything runs: a file that cannot be written fails now.
    for (flag, path) in [
        ("--csv", &args.csv),
        ("--json", &args.json),
        ("--html", &args.html),
    ] {
        if let Some(path) = path {
            super::check_output(flag, path)?;
        }
    }
    let bad = |param: &str, e: String| {
        CliError::BadInput(format!("{}: --param {param}: {e}", path.display()))
    };
    // The scenarios of the outer parameter's values (just the scenario
    // without one), every one checked before anything runs.
    let outers: Vec<(Option<String>, Scenario)> = match &outer {
        None => vec![(None, scenario.clone())],
        Some(o) => o
            .values
            .iter()
            .map(|v| {
                let sc =
                    apply(&scenario, &o.name, *v).map_err(|e| bad(second.map_or("", |s| s), e))?;
                scenarios(&sc, &sweep).map_err(|e| bad(first, e))?;
                Ok((Some(format!("{} = {v}", o.name)), sc))
            })
            .collect::<Result<_, CliError>>()?,
    };
    let runs_each = args.runs.unwrap_or(1);
    let total = (outers.len() * sweep.values.len() * scenario.strategies.len()) as u64 * runs_each;
    let pb = progress(total, args.quiet, &format!("sweep {}", sweep.name));
    let seeds = match args.runs {
        Some(n) => {
            super::refuse_real_runs(args.clock)?;
            Some(runs::seeds(scenario.seed, n).map_err(CliError::BadInput)?)
        }
        None => None,
    };
    let mut data = Vec::new();
    for (label, sc) in &outers {
        let (text, rows, many) = match &seeds {
            None => {
                let rows = run(sc, &sweep, args.clock, || pb.inc(1)).map_err(|e| bad(first, e))?;
                let text = render_figures(sc, &sweep, &rows, &figures);
                let rows: Vec<RunsRow> = rows
                    .into_iter()
                    .map(|(v, sums)| (v, sums.into_iter().map(|s| vec![s]).collect()))
                    .collect();
                (text, rows, false)
            }
            Some(seeds) => {
                let rows = run_many(sc, &sweep, args.clock, seeds.clone(), || pb.inc(1))
                    .map_err(|e| bad(first, e))?;
                (
                    render_runs(sc, &sweep, &rows, &figures, seeds.clone()),
                    rows,
                    true,
                )
            }
        };
        pb.suspend(|| {
            let head = label
                .as_ref()
                .map_or(String::new(), |l| format!("== with {l}\n"));
            super::emit(&format!("{head}{text}"))
        })?;
        let mut these = table::data(sc, &rows, &figures, many);
        if let (Some(o), Some(label)) = (&outer, label) {
            let value = label[o.name.len() + 3..].to_string();
            for r in &mut these {
                r.outer = Some((o.name.clone(), value.clone()));
            }
        }
        data.extend(these);
    }
    pb.finish_and_clear();
    write_data(args, &scenario, &sweep, &data)?;
    if let Some(path) = &args.html {
        // One heat map per figure asked for; without --figures, the first.
        let shown = if args.figures.is_some() {
            &figures[..]
        } else {
            &figures[..1]
        };
        let page = crate::report::html::sweep_heatmaps(&scenario, &sweep.name, &data, shown, seeds);
        super::write_output("--html", path, &page)?;
    }
    Ok(())
}

/// `--csv` and `--json`, if asked for.
fn write_data(
    args: &SweepArgs,
    scenario: &Scenario,
    sweep: &Sweep,
    rows: &[table::DataRow],
) -> Result<(), CliError> {
    if let Some(path) = &args.csv {
        super::write_output("--csv", path, &table::csv(&sweep.name, rows))?;
    }
    if let Some(path) = &args.json {
        let doc = table::json(scenario, &sweep.name, rows);
        super::write_output(
            "--json",
            path,
            &(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"),
        )?;
    }
    Ok(())
}
