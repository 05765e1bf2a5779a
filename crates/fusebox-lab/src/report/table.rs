//! Terminal tables: strategies side by side, with the article's figures
//! beside the strategies it measured (`none` and `seed`) when the scenario is
//! one of its experiments.

use super::article::{self, ArticleFigures};
use super::{secs, Latency, ScenarioReport, Summary, Window};
use crate::run::Mode;
use crate::scenario::format_duration;
use std::fmt::Write;

/// One column: a header and one cell per row.
struct Column {
    header: String,
    cells: Vec<String>,
}

fn lat(l: Option<Latency>) -> (String, String) {
    match l {
        Some(l) => (format!("{:.1}", l.median_ms), format!("{:.1}", l.max_ms)),
        None => ("-".into(), "-".into()),
    }
}

fn render(out: &mut String, labels: &[String], columns: &[Column]) {
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = columns
        .iter()
        .map(|c| {
            c.cells
                .iter()
                .chain(std::iter::once(&c.header))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(out, "  {:lw$}", "");
    for (c, w) in columns.iter().zip(&widths) {
        let _ = write!(out, "  {:>w$}", c.header);
    }
    out.push('\n');
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(out, "  {label:lw$}");
        for (c, w) in columns.iter().zip(&widths) {
            let _ = write!(out, "  {:>w$}", c.cells.get(i).map_or("", String::as_str));
        }
        out.push('\n');
    }
}

fn window_cell(w: &Window) -> String {
    let mut parts = Vec::new();
    for (n, name) in [
        (w.ok, "ok"),
        (w.fail, "fail"),
        (w.fast_fail, "ff"),
        (w.rejected, "rej"),
    ] {
        if n > 0 {
            parts.push(format!("{name} {n}"));
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

fn article_window_cell(w: (usize, usize, usize)) -> String {
    window_cell(&Window {
        ok: w.0,
        fail: w.1,
        fast_fail: w.2,
        ..Window::default()
    })
}

/// The whole terminal report of one scenario.
pub fn render_scenario(report: &ScenarioReport) -> String {
    let sc = &report.scenario;
    let mut out = String::new();
    let fault = match sc.fault_span() {
        Some((a, b)) => format!("fault {}..{} s", secs(a), secs(b)),
        None => "no fault".into(),
    };
    let mode = match report.mode {
        Mode::Real => "real threads",
        Mode::Virtual => "virtual time",
    };
    let _ = writeln!(
        out,
        "== {} ({mode}): {} requests at {}/s, {} workers, downstream {} healthy, {}",
        sc.name,
        sc.request_count(),
        sc.rate,
        sc.workers,
        format_duration(sc.downstream.latency),
        fault
    );
    let fault_end = sc
        .fault_span()
        .map_or("the fault's end".into(), |f| format!("{} s", secs(f.1)));

    // Figures side by side.
    let labels: Vec<String> = [
        "downstream calls",
        "  of which failed",
        "successes",
        "downstream errors",
        "fast-fails",
        "rejected (queue full)",
        "latency during fault: median ms",
        "latency during fault: max ms",
        "latency 1 s after: median ms",
        "latency 1 s after: max ms",
        "all done at s",
        "last fault request done at s",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("arrived before {fault_end}, done after")])
    .chain(["failed probes".into(), "recovery lag s".into()])
    .collect();
    let mut columns = Vec::new();
    for s in &report.summaries {
        columns.push(summary_column(s));
        if let Some(a) = article::figures(&sc.name, s.kind) {
            columns.push(article_column(&a));
        }
    }
    render(&mut out, &labels, &columns);
    if report
        .summaries
        .iter()
        .any(|s| article::figures(&sc.name, s.kind).is_some_and(|a| a.backlog.is_some()))
    {
        let _ = writeln!(
            out,
            "  (article: it counted every request finishing after {fault_end}, including those arriving after it: 202 without a breaker, 150 with one; shown here less those 150)"
        );
    }

    // Transitions.
    for s in &report.summaries {
        let article = article::figures(&sc.name, s.kind).filter(|a| !a.transitions.is_empty());
        if s.transitions.is_empty() && article.is_none() {
            continue;
        }
        let _ = writeln!(out, "  transitions, {}:", s.name);
        let n = s
            .transitions
            .len()
            .max(article.map_or(0, |a| a.transitions.len()));
        for i in 0..n {
            let ours = s.transitions.get(i).map_or(String::new(), |t| {
                format!("{:>8} s  {:<9} -> {:<9}", secs(t.at), t.from, t.to)
            });
            let theirs = article
                .and_then(|a| a.transitions.get(i))
                .map_or(String::new(), |t| {
                    format!("article {:.3} s  {} -> {}", t.0, t.1, t.2)
                });
            let _ = writeln!(out, "    {ours:<36}  {theirs}");
        }
    }

    // Windows.
    let _ = writeln!(
        out,
        "  outcomes per {} window, by arrival time:",
        format_duration(sc.window)
    );
    let labels: Vec<String> = report
        .summaries
        .first()
        .map(|s| {
            s.windows
                .iter()
                .map(|w| format!("{}-{} s", secs(w.from), secs(w.from + sc.window)))
                .collect()
        })
        .unwrap_or_default();
    let mut columns = Vec::new();
    for s in &report.summaries {
        columns.push(Column {
            header: s.name.clone(),
            cells: s.windows.iter().map(window_cell).collect(),
        });
        if let Some(a) = article::figures(&sc.name, s.kind).filter(|a| !a.windows.is_empty()) {
            columns.push(Column {
                header: format!("(article: {})", s.kind_label()),
                cells: a.windows.iter().map(|w| article_window_cell(*w)).collect(),
            });
        }
    }
    render(&mut out, &labels, &columns);
    out
}

impl Summary {
    fn kind_label(&self) -> &'static str {
        match self.kind {
            "none" => "no breaker",
            "seed" => "breaker",
            other => other,
        }
    }
}

fn summary_column(s: &Summary) -> Column {
    let (fm, fx) = lat(s.latency_fault);
    let (am, ax) = lat(s.latency_after);
    let (bl, bn) = match s.backlog {
        Some(b) => (
            secs(b.last_fault_request_done),
            b.finished_after_fault.to_string(),
        ),
        None => ("-".into(), "-".into()),
    };
    Column {
        header: s.name.clone(),
        cells: vec![
            s.downstream_calls.to_string(),
            s.failed_calls.to_string(),
            s.successes.to_string(),
            if s.timeouts > 0 {
                format!("{} ({} timeouts)", s.downstream_errors, s.timeouts)
            } else {
                s.downstream_errors.to_string()
            },
            s.fast_fails.to_string(),
            s.queue_rejections.to_string(),
            fm,
            fx,
            am,
            ax,
            secs(s.all_done),
            bl,
            bn,
            s.failed_probes.to_string(),
            s.recovery_lag.map_or("-".into(), secs),
        ],
    }
}

fn article_column(a: &ArticleFigures) -> Column {
    let (bl, bn) = match a.backlog {
        Some((t, n)) => (format!("{t:.2}"), n.to_string()),
        None => ("".into(), "".into()),
    };
    let failed_probes = a
        .transitions
        .iter()
        .filter(|t| t.1 == "half_open" && t.2 == "open")
        .count();
    Column {
        header: "(article)".into(),
        cells: vec![
            a.downstream_calls.to_string(),
            a.downstream_errors.to_string(),
            a.successes.to_string(),
            a.downstream_errors.to_string(),
            a.fast_fails.to_string(),
            String::new(),
            format!("{:.1}", a.latency_fault_ms.0),
            format!("{:.1}", a.latency_fault_ms.1),
            format!("{:.1}", a.latency_after_ms.0),
            format!("{:.1}", a.latency_after_ms.1),
            format!("{:.2}", a.all_done_s),
            bl,
            bn,
            if a.transitions.is_empty() {
                String::new()
            } else {
                failed_probes.to_string()
            },
            String::new(),
        ],
    }
}
