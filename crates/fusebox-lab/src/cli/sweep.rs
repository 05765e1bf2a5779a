//! `fusebox-lab sweep`: one scenario, one parameter varied over a range
//! (see [`crate::scenario::sweep`]), each value run and summarised.

use super::{progress, CliError};
use crate::engine::{self, Mode};
use crate::report::sweep::{render, Row};
use crate::report::Summary;
use crate::scenario::sweep::{apply, Sweep};
use crate::scenario::Scenario;
use std::path::Path;

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

/// The `sweep` subcommand.
pub(super) fn cmd_sweep(path: &Path, param: &str, mode: Mode, quiet: bool) -> Result<(), CliError> {
    let scenario = Scenario::load(path).map_err(|e| CliError::BadInput(e.to_string()))?;
    engine::check(&scenario, mode).map_err(CliError::BadInput)?;
    let sweep = Sweep::parse(param).map_err(CliError::BadInput)?;
    let total = (sweep.values.len() * scenario.strategies.len()) as u64;
    let pb = progress(total, quiet, &format!("sweep {}", sweep.name));
    let rows = run(&scenario, &sweep, mode, || pb.inc(1))
        .map_err(|e| CliError::BadInput(format!("{}: --param {param}: {e}", path.display())))?;
    pb.finish_and_clear();
    print!("{}", render(&scenario, &sweep, &rows));
    Ok(())
}
