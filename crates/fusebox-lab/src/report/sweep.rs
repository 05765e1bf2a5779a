//! The `sweep` table: per value of the swept parameter, per strategy, the
//! model's sweep figures ([`SWEEP_FIGURES`]).

use super::model::SWEEP_FIGURES;
use super::Summary;
use crate::scenario::sweep::Sweep;
use crate::scenario::{ParamValue, Scenario};
use std::fmt::Write;

/// One sweep row: the value and one summary per strategy.
pub type Row = (ParamValue, Vec<Summary>);

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
        "   per strategy: {}",
        SWEEP_FIGURES.map(|f| f.label).join(" / ")
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
                    let [a, b, c, d] = SWEEP_FIGURES.map(|f| (f.ours)(s).text());
                    format!("{a:>4} / {b:>4} / {c:>2} / {d:>6}")
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
