//! The `sweep` tables: per value of the swept parameter, per strategy, the
//! chosen sweep figures ([`SWEEP_CHOICES`](super::model::SWEEP_CHOICES);
//! by default the four [`SWEEP_FIGURES`](super::model::SWEEP_FIGURES)).
//! One run per value: one table, a cell per strategy with its figures
//! side by side. Many runs per value (`--runs`): a table per figure, each
//! cell its `median [p10-p90]` over the runs ([`super::runs`]).

use super::model::{default_sweep_figures, Cell, SweepFigure};
use super::runs::{self, spread, Spread};
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

/// One figure of one strategy at one value: a row of `sweep --csv` and
/// `--json`.
#[derive(Debug, Clone, PartialEq)]
pub struct DataRow {
    /// The swept parameter's value.
    pub value: String,
    /// In a grid, the second parameter and its value.
    pub outer: Option<(String, String)>,
    /// The strategy.
    pub strategy: String,
    /// The figure, by its `--figures` name.
    pub figure: &'static str,
    /// Its value (one run per value), or its median, p10, p90 and how many
    /// runs have it (`--runs`).
    pub result: DataResult,
}

/// What a [`DataRow`] holds.
#[derive(Debug, Clone, PartialEq)]
pub enum DataResult {
    /// One run's value.
    One(Cell),
    /// Over many runs.
    Many(Spread),
}

/// Every figure of every value and strategy, in the table's order.
pub fn data(
    scenario: &Scenario,
    rows: &[(ParamValue, Vec<Vec<Summary>>)],
    figures: &[&SweepFigure],
    many: bool,
) -> Vec<DataRow> {
    let mut out = Vec::new();
    for (v, per_strategy) in rows {
        for (spec, runs) in scenario.strategies.iter().zip(per_strategy) {
            for f in figures {
                let result = if many {
                    DataResult::Many(spread(f.figure, runs))
                } else {
                    DataResult::One(runs.first().map_or(Cell::Missing, |s| (f.figure.ours)(s)))
                };
                out.push(DataRow {
                    value: v.to_string(),
                    outer: None,
                    strategy: spec.name.clone(),
                    figure: f.name,
                    result,
                });
            }
        }
    }
    out
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number of a cell for CSV (empty when missing).
pub(crate) fn number(c: Cell) -> String {
    match c.json() {
        serde_json::Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// The rows as CSV, with a header.
pub fn csv(param: &str, rows: &[DataRow]) -> String {
    let many = rows.iter().any(|r| matches!(r.result, DataResult::Many(_)));
    let grid = rows.iter().any(|r| r.outer.is_some());
    let mut out = String::from(if grid { "param2,value2," } else { "" });
    out.push_str(if many {
        "param,value,strategy,figure,median,p10,p90,runs\n"
    } else {
        "param,value,strategy,figure,result\n"
    });
    for r in rows {
        if let Some((p2, v2)) = &r.outer {
            let _ = write!(out, "{},{},", field(p2), field(v2));
        }
        let _ = write!(
            out,
            "{},{},{},{},",
            field(param),
            field(&r.value),
            field(&r.strategy),
            r.figure
        );
        match &r.result {
            DataResult::One(c) => out.push_str(&number(*c)),
            DataResult::Many(s) => {
                let _ = write!(
                    out,
                    "{},{},{},{}",
                    number(s.median),
                    number(s.p10),
                    number(s.p90),
                    s.present
                );
            }
        }
        out.push('\n');
    }
    out
}

/// The rows as JSON: `{scenario, param, rows: [{value, strategy, figure,
/// result | median, p10, p90, runs}]}`.
pub fn json(scenario: &Scenario, param: &str, rows: &[DataRow]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let mut o =
                serde_json::json!({ "value": r.value, "strategy": r.strategy, "figure": r.figure });
            if let Some((p2, v2)) = &r.outer {
                o["param2"] = serde_json::json!(p2);
                o["value2"] = serde_json::json!(v2);
            }
            match &r.result {
                DataResult::One(c) => o["result"] = c.json(),
                DataResult::Many(s) => {
                    if let (serde_json::Value::Object(o), serde_json::Value::Object(m)) =
                        (&mut o, s.json())
                    {
                        o.extend(m);
                    }
                }
            }
            o
        })
        .collect();
    serde_json::json!({ "scenario": scenario.name, "param": param, "rows": rows })
}
