//! The `sweep` tables: per value of the swept parameter, per strategy, the
//! chosen sweep figures ([`SWEEP_CHOICES`](super::model::SWEEP_CHOICES);
//! by default the four [`SWEEP_FIGURES`](super::model::SWEEP_FIGURES)).
//! One run per value: one table, a cell per strategy with its figures
//! side by side. Many runs per value (`--runs`): a table per figure, each
//! cell its `median [p10-p90]` over the runs ([`super::runs`]).

use super::model::{default_sweep_figures, SweepFigure};
use super::runs::{self, spread};
use super::Summary;
use crate::scenario::sweep::Sweep;
use crate::scenario::{ParamValue, Scenario};
use std::fmt::Write;
use std::ops::Range;

/// One sweep row: the value and one summary per strategy.
pub type Row = (ParamValue, Vec<Summary>);

/// One row of a sweep over many seeds: the value and, per strategy, one
/// summary per seed.
pub type RunsRow = (ParamValue, Vec<Vec<Summary>>);

/// The sweep table of the default figures.
pub fn render(scenario: &Scenario, sweep: &Sweep, rows: &[Row]) -> String {
    render_figures(scenario, sweep, rows, &default_sweep_figures())
}

/// Writes a table: the swept value, then a column per strategy.
fn table(
    out: &mut String,
    sweep: &Sweep,
    names: &[&str],
    values: &[String],
    cells: &[Vec<String>],
) {
    let vw = values
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(sweep.name.len());
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
    for (v, row) in values.iter().zip(cells) {
        let _ = write!(out, "  {v:>vw$}");
        for (c, w) in row.iter().zip(&widths) {
            let _ = write!(out, " | {c:>w$}");
        }
        out.push('\n');
    }
}

fn names(scenario: &Scenario) -> Vec<&str> {
    scenario
        .strategies
        .iter()
        .map(|s| s.name.as_str())
        .collect()
}

/// The sweep table of one run per value: each strategy's cell holds the
/// `figures` side by side (`a / b / c`), each at least its
/// [`SweepFigure::width`] wide.
pub fn render_figures(
    scenario: &Scenario,
    sweep: &Sweep,
    rows: &[Row],
    figures: &[&SweepFigure],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== sweep {} over {} values of {}",
        scenario.name,
        rows.len(),
        sweep.name
    );
    let labels: Vec<&str> = figures.iter().map(|f| f.figure.label).collect();
    let _ = writeln!(out, "   per strategy: {}", labels.join(" / "));
    let texts = |s: &Summary| -> Vec<String> {
        figures.iter().map(|f| (f.figure.ours)(s).text()).collect()
    };
    let widths: Vec<usize> = figures
        .iter()
        .enumerate()
        .map(|(k, f)| {
            rows.iter()
                .flat_map(|(_, sums)| sums.iter().map(|s| texts(s)[k].len()))
                .max()
                .unwrap_or(0)
                .max(f.width)
        })
        .collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, sums)| {
            sums.iter()
                .map(|s| {
                    texts(s)
                        .iter()
                        .zip(&widths)
                        .map(|(t, w)| format!("{t:>w$}"))
                        .collect::<Vec<_>>()
                        .join(" / ")
                })
                .collect()
        })
        .collect();
    let values: Vec<String> = rows.iter().map(|r| r.0.to_string()).collect();
    table(&mut out, sweep, &names(scenario), &values, &cells);
    out
}

/// The sweep tables of many runs per value (the `seeds`): one table per
/// figure, each cell the strategy's `median [p10-p90]` over the runs.
pub fn render_runs(
    scenario: &Scenario,
    sweep: &Sweep,
    rows: &[RunsRow],
    figures: &[&SweepFigure],
    seeds: Range<u64>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== sweep {} over {} values of {}, {} each",
        scenario.name,
        rows.len(),
        sweep.name,
        runs::seeds_text(&seeds)
    );
    let _ = writeln!(out, "   {}", runs::describe(scenario));
    let _ = writeln!(out, "   {}", runs::legend(seeds));
    if !scenario.is_random() {
        let _ = writeln!(out, "   {}", runs::NOT_RANDOM);
    }
    let values: Vec<String> = rows.iter().map(|r| r.0.to_string()).collect();
    for f in figures {
        let _ = writeln!(out, "-- {}", f.figure.label);
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|(_, per)| {
                per.iter()
                    .map(|runs| spread(f.figure, runs).text())
                    .collect()
            })
            .collect();
        table(&mut out, sweep, &names(scenario), &values, &cells);
    }
    out
}
