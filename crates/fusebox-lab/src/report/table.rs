//! Terminal tables: the [`super::model`] as text, strategies side by
//! side, with the article's published figures beside the strategies it
//! measured; each scenario's headline first, and the fleets of a run that
//! differ only in their `[fleet]` settings side by side at the end.

use super::model::{self, columns, Column};
use super::{secs, ScenarioReport};
use crate::scenario::format_duration;
use std::fmt::Write;

/// The line under each scenario's header that says what its cells mean.
pub const LEGEND: &str = "legend: published = the article's own figures; \
     ff = fast-fail (downstream not called); rej = queue full; \
     times in s since the first arrival";

/// A table: a row per label, a column per header, right-aligned.
pub(crate) fn render(out: &mut String, labels: &[String], headers: &[&str], cells: &[Vec<String>]) {
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(c, h)| {
            cells
                .iter()
                .map(|row| row[c].chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(out, "  {:lw$}", "");
    for (h, w) in headers.iter().zip(&widths) {
        let _ = write!(out, "  {h:>w$}");
    }
    out.push('\n');
    for (label, row) in labels.iter().zip(cells) {
        let _ = write!(out, "  {label:lw$}");
        for (c, w) in row.iter().zip(&widths) {
            let _ = write!(out, "  {c:>w$}");
        }
        out.push('\n');
    }
}

/// A scenario's headline: a row per [`model::headline`] row, its side
/// (bought, cost) before its label, a column per strategy and published
/// column.
fn headline(out: &mut String, report: &ScenarioReport, cols: &[Column]) {
    let rows = model::headline(&report.scenario);
    let _ = writeln!(
        out,
        "  {}",
        model::headline_title(cols.iter().any(Column::is_article))
    );
    let headers: Vec<&str> = cols.iter().map(|c| c.header).collect();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{:<6}  {}", r.side.label(), r.label()))
        .collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cols.iter().map(|c| r.cell(c).text()).collect())
        .collect();
    render(out, &labels, &headers, &cells);
}

/// The fleets of a run side by side ([`model::side_by_side`]): the
/// headline's rows, a column per strategy and scenario, under a line of
/// strategy names; empty if there are none.
pub fn render_side_by_side(reports: &[super::ScenarioReport]) -> String {
    let mut out = String::new();
    for group in model::side_by_side(reports) {
        let names: Vec<&str> = group
            .scenarios
            .iter()
            .map(|(r, _)| r.scenario.name.as_str())
            .collect();
        let _ = writeln!(
            out,
            "== side by side: {} (the same service and fault, other [fleet] settings)",
            names.join(", ")
        );
        for (r, short) in &group.scenarios {
            if let Some(line) = model::fleet_line(&r.scenario) {
                let line = line.trim_start_matches("fleet: ");
                let _ = writeln!(out, "  {short}: {line}");
            }
        }
        let rows = model::FLEET_HEADLINE;
        let labels: Vec<String> = rows
            .iter()
            .map(|r| format!("{:<6}  {}", r.side.label(), r.label()))
            .collect();
        let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| group.columns.iter().map(|c| r.ours(c.2).text()).collect())
            .collect();
        let mut widths: Vec<usize> = group
            .columns
            .iter()
            .enumerate()
            .map(|(k, c)| {
                cells
                    .iter()
                    .map(|row| row[k].chars().count())
                    .chain([group.scenarios[c.1].1.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        // Spans of columns of one strategy, each wide enough for its name.
        let mut spans: Vec<(&str, usize, usize)> = Vec::new();
        for (k, c) in group.columns.iter().enumerate() {
            match spans.last_mut() {
                Some((name, _, end)) if *name == c.0 => *end = k + 1,
                _ => spans.push((c.0, k, k + 1)),
            }
        }
        for &(name, a, b) in &spans {
            let width: usize = widths[a..b].iter().sum::<usize>() + 2 * (b - a - 1);
            let need = name.chars().count();
            if need > width {
                widths[b - 1] += need - width;
            }
        }
        let _ = write!(out, "  {:lw$}", "");
        for &(name, a, b) in &spans {
            let width: usize = widths[a..b].iter().sum::<usize>() + 2 * (b - a - 1);
            let _ = write!(out, "  {name:>width$}");
        }
        out.push('\n');
        let _ = write!(out, "  {:lw$}", "");
        for (c, w) in group.columns.iter().zip(&widths) {
            let _ = write!(out, "  {:>w$}", group.scenarios[c.1].1);
        }
        out.push('\n');
        for (label, row) in labels.iter().zip(&cells) {
            let _ = write!(out, "  {label:lw$}");
            for (c, w) in row.iter().zip(&widths) {
                let _ = write!(out, "  {c:>w$}");
            }
            out.push('\n');
        }
    }
    out
}

/// The whole terminal report of one scenario.
pub fn render_scenario(report: &ScenarioReport) -> String {
    let sc = &report.scenario;
    let mut out = String::new();
    let mut fault = match sc.fault_span() {
        Some((a, b)) => format!("fault {}..{} s", secs(a), secs(b)),
        None => "no fault".into(),
    };
    // A jittered fault: its times are the seed's draw.
    if let Some(by) = sc.fault_jitter.iter().map(|j| j.by).max() {
        let _ = write!(
            fault,
            " (drawn from seed {}: each end moved by up to {})",
            sc.seed,
            format_duration(by)
        );
    }
    // An outage model: its times are the seed's draw.
    let outages: Vec<String> = sc.outages.iter().map(|o| o.describe()).collect();
    if !outages.is_empty() {
        let _ = write!(
            fault,
            " (drawn from seed {}: {})",
            sc.seed,
            outages.join(", ")
        );
    }
    let mode = match report.mode {
        crate::engine::Mode::Real => "real threads",
        crate::engine::Mode::Virtual => "virtual time",
    };
    // A latency tail: `10ms healthy (1% of calls 1s)`.
    let tail: Vec<String> = sc
        .downstream
        .tail
        .iter()
        .map(|t| {
            let percent = (t.share * 1e8).round() / 1e6;
            format!("{percent}% of calls {}", format_duration(t.latency))
        })
        .collect();
    let mut tail = if tail.is_empty() {
        String::new()
    } else {
        format!(" ({})", tail.join(", "))
    };
    // The HTTP hop's cost, which virtual mode adds to every call (real
    // mode pays it for real).
    let overhead = sc.downstream.overhead();
    if report.mode == crate::engine::Mode::Virtual && !overhead.is_zero() {
        let _ = write!(
            tail,
            " + {} HTTP overhead per call",
            format_duration(overhead)
        );
    }
    let _ = writeln!(
        out,
        "== {} ({mode}): {} requests at {}/s, {} workers, downstream {} healthy{tail}, {}",
        sc.name,
        sc.request_count(),
        sc.rate,
        sc.workers,
        sc.downstream.latency_text(),
        fault
    );
    let cols = columns(report);
    let headers: Vec<&str> = cols.iter().map(|c| c.header).collect();
    let names: Vec<&str> = report.summaries.iter().map(|s| s.name.as_str()).collect();
    let _ = writeln!(
        out,
        "  compared: {} on the same requests{}",
        names.join(", "),
        if cols.iter().any(Column::is_article) {
            "; published beside each strategy the article measured"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  {LEGEND}");
    headline(&mut out, report, &cols);
    let _ = writeln!(out, "  every figure:");

    // Figures side by side.
    let figures = model::figures(sc.has_tail(), sc.models_pool());
    let labels: Vec<String> = figures.iter().map(|f| f.label.to_string()).collect();
    let cells: Vec<Vec<String>> = figures
        .iter()
        .map(|f| cols.iter().map(|c| c.cell(f).text()).collect())
        .collect();
    render(&mut out, &labels, &headers, &cells);
    if cols
        .iter()
        .any(|c| c.is_article() && c.cell(model::BACKLOG) != model::Cell::Blank)
    {
        let _ = writeln!(
            out,
            "  (article: it counted every request finishing after the fault's end, including those arriving after it: 202 without a breaker, 150 with one; shown here less those 150)"
        );
    }

    // Transitions: each strategy's, beside the article's where published.
    let mut k = 0;
    while k < cols.len() {
        let ours = &cols[k];
        let article = cols
            .get(k + 1)
            .filter(|c| c.is_article() && c.strategy == ours.strategy);
        k += if article.is_some() { 2 } else { 1 };
        let theirs = article.map_or(&[][..], Column::transitions);
        if ours.transitions().is_empty() && theirs.is_empty() {
            continue;
        }
        // A fleet's strategy log is its first replica's.
        let whose = if sc.fleet.is_some() {
            ", replica 1"
        } else {
            ""
        };
        let _ = writeln!(out, "  transitions, {}{whose}:", ours.header);
        for i in 0..ours.transitions().len().max(theirs.len()) {
            let a = ours.transitions().get(i).map_or(String::new(), |t| {
                format!("{:>8} s  {:<9} -> {:<9}", secs(t.at), t.from, t.to)
            });
            let b = theirs.get(i).map_or(String::new(), |t| {
                format!(
                    "{} {} s  {} -> {}",
                    model::ARTICLE,
                    secs(t.at),
                    t.from,
                    t.to
                )
            });
            let _ = writeln!(out, "    {a:<36}  {b}");
        }
    }

    // A fleet: per replica and in total, one table per strategy.
    if let Some(line) = model::fleet_line(sc) {
        let _ = writeln!(out, "  ({})", model::FLEET_NOTE);
        let _ = writeln!(out, "  {line}");
        let headers: Vec<&str> = model::FLEET_FIGURES.iter().map(|f| f.label).collect();
        for sum in &report.summaries {
            let Some(rows) = model::fleet_rows(sum) else {
                continue;
            };
            let _ = writeln!(out, "  per replica, {}:", sum.name);
            let labels: Vec<String> = rows.iter().map(|(l, _)| l.clone()).collect();
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|(_, r)| {
                    model::FLEET_FIGURES
                        .iter()
                        .map(|f| (f.value)(r).text())
                        .collect()
                })
                .collect();
            render(&mut out, &labels, &headers, &cells);
        }
    }

    // Several hosts: the figures over the hosts.
    let over_hosts: Vec<(&str, Option<&super::hosts::HostFigures>)> = report
        .summaries
        .iter()
        .map(|s| (s.name.as_str(), s.hosts.as_ref()))
        .collect();
    if let Some(text) = super::hosts::table(&over_hosts) {
        out.push_str(&text);
    }

    // Windows.
    let _ = writeln!(
        out,
        "  outcomes per {} window, by arrival time:",
        format_duration(sc.window)
    );
    let windowed: Vec<(&Column, Vec<super::Window>)> = cols
        .iter()
        .map(|c| (c, c.windows()))
        .filter(|(_, w)| !w.is_empty())
        .collect();
    let labels: Vec<String> = report
        .summaries
        .first()
        .map(|s| {
            s.windows
                .iter()
                .map(|w| model::window_label(w, sc.window))
                .collect()
        })
        .unwrap_or_default();
    let headers: Vec<&str> = windowed.iter().map(|(c, _)| c.header).collect();
    let cells: Vec<Vec<String>> = (0..labels.len())
        .map(|i| {
            windowed
                .iter()
                .map(|(_, w)| w.get(i).map_or(String::new(), model::window_text))
                .collect()
        })
        .collect();
    render(&mut out, &labels, &headers, &cells);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Mode;
    use crate::scenario::Scenario;

    #[test]
    fn a_report_says_what_it_compares_and_what_its_abbreviations_mean() {
        let sc = Scenario::embedded().remove(0);
        let report = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap();
        let text = render_scenario(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("== seed000-50rps (virtual time)"),
            "{text}"
        );
        assert_eq!(
            lines[1],
            "  compared: no breaker, article, fusebox on the same requests; \
             published beside each strategy the article measured"
        );
        assert_eq!(lines[2], format!("  {LEGEND}"));
        assert!(LEGEND.len() <= 140, "{}", LEGEND.len());
        // Every abbreviation the legend explains is used in the report.
        assert!(text.contains(" published ") && text.contains(" ff "));
    }
}
