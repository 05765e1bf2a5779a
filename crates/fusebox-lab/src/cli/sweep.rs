//! `fusebox-lab sweep`: one scenario, one parameter varied over a range
//! (see [`crate::scenario::sweep`]), each value run and summarised; with
//! `--runs N`, each value run for N seeds ([`crate::report::runs`]).

use super::{progress, CliError, SweepArgs};
use crate::engine::{self, Mode};
use crate::report::model::{default_sweep_figures, sweep_figures, SWEEP_CHOICES};
use crate::report::runs::{self, run_seeds};
use crate::report::sweep::{render_figures, render_runs, Row, RunsRow};
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
    let sweep = Sweep::parse(&args.param).map_err(CliError::BadInput)?;
    let figures = match &args.figures {
        Some(list) => sweep_figures(list).map_err(CliError::BadInput)?,
        None if args.runs.is_some() => SWEEP_CHOICES.iter().collect(),
        None => default_sweep_figures(),
    };
    let param = &args.param;
    let bad = |e: String| CliError::BadInput(format!("{}: --param {param}: {e}", path.display()));
    let per_value = sweep.values.len() * scenario.strategies.len();
    match args.runs {
        None => {
            let pb = progress(
                per_value as u64,
                args.quiet,
                &format!("sweep {}", sweep.name),
            );
            let rows = run(&scenario, &sweep, args.clock, || pb.inc(1)).map_err(bad)?;
            pb.finish_and_clear();
            print!("{}", render_figures(&scenario, &sweep, &rows, &figures));
        }
        Some(n) => {
            super::refuse_real_runs(args.clock)?;
            let seeds = runs::seeds(scenario.seed, n).map_err(CliError::BadInput)?;
            let total = per_value as u64 * n;
            let pb = progress(total, args.quiet, &format!("sweep {}", sweep.name));
            let rows = run_many(&scenario, &sweep, args.clock, seeds.clone(), || pb.inc(1))
                .map_err(bad)?;
            pb.finish_and_clear();
            print!("{}", render_runs(&scenario, &sweep, &rows, &figures, seeds));
        }
    }
    Ok(())
}
