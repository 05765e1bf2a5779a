//! The one report model: every figure (its label, its JSON key, how it is
//! read from a [`Summary`] and from the article), every column, every series
//! and every colour, defined once here. The terminal table, the JSON and the
//! HTML page render this model; none of them lists rows of its own.

use super::article::ArticleFigures;
use super::{secs, ReplicaFigures, ScenarioReport, Summary, Window};
use crate::engine::{Outcome, TransitionRecord};
use serde_json::Value;
use std::time::Duration;

/// One value of a figure, with how it is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    /// A count.
    Count(usize),
    /// A time, in seconds with millisecond precision.
    Secs(Duration),
    /// A latency in milliseconds, one decimal.
    Ms(f64),
    /// A ratio, three decimals.
    Ratio(f64),
    /// A published number with the precision it was published with.
    Published(f64, usize),
    /// No such value in this run (e.g. no fault, so no fault latency).
    Missing,
    /// Not published by the article.
    Blank,
}

impl Cell {
    /// As shown in the table and the page.
    pub fn text(self) -> String {
        match self {
            Cell::Count(n) => n.to_string(),
            Cell::Secs(d) => secs(d),
            Cell::Ms(x) => format!("{x:.1}"),
            Cell::Ratio(x) => format!("{x:.3}"),
            Cell::Published(x, decimals) => format!("{x:.decimals$}"),
            Cell::Missing => "-".into(),
            Cell::Blank => String::new(),
        }
    }

    /// As written in the JSON (`null` when missing).
    pub fn json(self) -> Value {
        match self {
            Cell::Count(n) => Value::from(n),
            Cell::Secs(d) => Value::from(d.as_secs_f64()),
            Cell::Ms(x) | Cell::Ratio(x) | Cell::Published(x, _) => Value::from(x),
            Cell::Missing | Cell::Blank => Value::Null,
        }
    }
}

/// One figure: a row of the table and the page, a key of the JSON.
#[derive(Debug)]
pub struct Figure {
    /// Row label.
    pub label: &'static str,
    /// Where it goes in each strategy's JSON object (`a.b` nests), if it
    /// is there: the JSON's keys are kept as they were when it was first
    /// published, so `lost after recovery` (derived from the requests) is not.
    pub json: Option<&'static str>,
    /// Our value.
    pub ours: fn(&Summary) -> Cell,
    /// The article's value.
    pub article: fn(&ArticleFigures) -> Cell,
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> Cell) -> Cell {
    v.map_or(Cell::Missing, f)
}

fn blank(_: &ArticleFigures) -> Cell {
    Cell::Blank
}

/// Every figure of a strategy's run, in display order.
pub const FIGURES: &[Figure] = &[
    Figure {
        label: "downstream calls",
        json: Some("downstream_calls"),
        ours: |s| Cell::Count(s.downstream_calls),
        article: |a| Cell::Count(a.downstream_calls),
    },
    Figure {
        label: "  of which failed",
        json: Some("downstream_call_failures"),
        ours: |s| Cell::Count(s.failed_calls),
        // No retries in the article: one failed call per failed request.
        article: |a| Cell::Count(a.downstream_errors),
    },
    Figure {
        label: "successes",
        json: Some("successes"),
        ours: |s| Cell::Count(s.successes),
        article: |a| Cell::Count(a.successes),
    },
    Figure {
        label: "downstream errors",
        json: Some("downstream_errors"),
        ours: |s| Cell::Count(s.downstream_errors),
        article: |a| Cell::Count(a.downstream_errors),
    },
    Figure {
        label: "  of which timeouts",
        json: Some("timeouts"),
        ours: |s| Cell::Count(s.timeouts),
        article: blank,
    },
    Figure {
        label: "fast-fails",
        json: Some("fast_fails"),
        ours: |s| Cell::Count(s.fast_fails),
        article: |a| Cell::Count(a.fast_fails),
    },
    Figure {
        label: "rejected (queue full)",
        json: Some("queue_rejections"),
        ours: |s| Cell::Count(s.queue_rejections),
        article: blank,
    },
    Figure {
        label: "latency during fault: median ms",
        json: Some("latency_fault_ms.median"),
        ours: |s| opt(s.latency_fault, |l| Cell::Ms(l.median_ms)),
        article: |a| Cell::Ms(a.latency_fault_ms.0),
    },
    Figure {
        label: "latency during fault: max ms",
        json: Some("latency_fault_ms.max"),
        ours: |s| opt(s.latency_fault, |l| Cell::Ms(l.max_ms)),
        article: |a| Cell::Ms(a.latency_fault_ms.1),
    },
    Figure {
        label: "latency 1 s after: median ms",
        json: Some("latency_after_ms.median"),
        ours: |s| opt(s.latency_after, |l| Cell::Ms(l.median_ms)),
        article: |a| Cell::Ms(a.latency_after_ms.0),
    },
    Figure {
        label: "latency 1 s after: max ms",
        json: Some("latency_after_ms.max"),
        ours: |s| opt(s.latency_after, |l| Cell::Ms(l.max_ms)),
        article: |a| Cell::Ms(a.latency_after_ms.1),
    },
    Figure {
        label: "all done at s",
        json: Some("all_done_s"),
        ours: |s| Cell::Secs(s.all_done),
        article: |a| Cell::Published(a.all_done_s, 2),
    },
    Figure {
        label: "last fault request done at s",
        json: Some("backlog.last_fault_request_done_s"),
        ours: |s| opt(s.backlog, |b| Cell::Secs(b.last_fault_request_done)),
        article: |a| a.backlog.map_or(Cell::Blank, |b| Cell::Published(b.0, 2)),
    },
    Figure {
        label: "arrived before fault end, done after",
        json: Some("backlog.finished_after_fault"),
        ours: |s| opt(s.backlog, |b| Cell::Count(b.finished_after_fault)),
        article: |a| a.backlog.map_or(Cell::Blank, |b| Cell::Count(b.1)),
    },
    Figure {
        label: "downstream calls during the fault",
        json: Some("calls_during_fault"),
        ours: |s| Cell::Count(s.calls_during_fault),
        article: blank,
    },
    Figure {
        label: "requests lost after recovery",
        json: None,
        ours: |s| Cell::Count(s.lost_after_recovery),
        article: blank,
    },
    Figure {
        label: "failed probes",
        json: Some("failed_probes"),
        ours: |s| Cell::Count(s.failed_probes),
        article: |a| {
            if a.transitions.is_empty() {
                Cell::Blank
            } else {
                Cell::Count(a.transitions.iter().filter(|t| t.is_failed_probe()).count())
            }
        },
    },
    Figure {
        label: "recovery lag s",
        json: Some("recovery_lag_s"),
        ours: |s| opt(s.recovery_lag, Cell::Secs),
        article: |a| {
            a.recovery_lag_s
                .map_or(Cell::Blank, |x| Cell::Published(x, 2))
        },
    },
];

/// The figures of a scenario about tail latency ([`Summary::tail`]: a
/// latency tail or a hedge), shown after the outcome counts; the other
/// scenarios' reports do not have them ([`figures`]).
pub const TAIL_FIGURES: &[Figure] = &[
    Figure {
        label: "latency, every request: p50 ms",
        json: Some("latency_ms.p50"),
        ours: |s| opt(s.tail, |t| Cell::Ms(t.p50_ms)),
        article: blank,
    },
    Figure {
        label: "latency, every request: p99 ms",
        json: Some("latency_ms.p99"),
        ours: |s| opt(s.tail, |t| Cell::Ms(t.p99_ms)),
        article: blank,
    },
    Figure {
        label: "latency, every request: p99.9 ms",
        json: Some("latency_ms.p99_9"),
        ours: |s| opt(s.tail, |t| Cell::Ms(t.p999_ms)),
        article: blank,
    },
    Figure {
        label: "downstream calls per request",
        json: Some("calls_per_request"),
        ours: |s| opt(s.tail, |t| Cell::Ratio(t.calls_per_request)),
        article: blank,
    },
    Figure {
        label: "hedges sent",
        json: Some("hedges_sent"),
        ours: |s| opt(s.tail, |t| Cell::Count(t.hedges)),
        article: blank,
    },
    Figure {
        label: "requests answered by a hedge",
        json: Some("answered_by_hedge"),
        ours: |s| opt(s.tail, |t| Cell::Count(t.won_by_hedge)),
        article: blank,
    },
    Figure {
        label: "calls cancelled (another answered)",
        json: Some("cancelled_calls"),
        ours: |s| opt(s.tail, |t| Cell::Count(t.cancelled)),
        article: blank,
    },
];

/// Where the [`TAIL_FIGURES`] go among the [`FIGURES`]: after the outcome
/// counts (`rejected (queue full)`).
const TAIL_AFTER: usize = 7;

/// The figures of a report, in display order: [`FIGURES`], with the
/// [`TAIL_FIGURES`] if `tail` (a scenario about tail latency,
/// [`Scenario::has_tail`](crate::scenario::Scenario::has_tail)).
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::{figures, FIGURES, TAIL_FIGURES};
///
/// assert_eq!(figures(false).len(), FIGURES.len());
/// let all = figures(true);
/// assert_eq!(all.len(), FIGURES.len() + TAIL_FIGURES.len());
/// assert_eq!(all[6].label, "rejected (queue full)");
/// assert_eq!(all[7].label, "latency, every request: p50 ms");
/// ```
pub fn figures(tail: bool) -> Vec<&'static Figure> {
    let (counts, rest) = FIGURES.split_at(TAIL_AFTER);
    let tail: &[Figure] = if tail { TAIL_FIGURES } else { &[] };
    counts.iter().chain(tail).chain(rest).collect()
}

/// The backlog count, which the article counted differently (see the table's note).
pub const BACKLOG: &Figure = &FIGURES[13];

/// The figures `sweep` prints per strategy by default, in its order.
pub const SWEEP_FIGURES: [&Figure; 4] = [&FIGURES[14], &FIGURES[15], &FIGURES[16], &FIGURES[17]];

/// Figures that `sweep` and `run --runs` show beside the [`FIGURES`]
/// (the report of one run, its table and its JSON, keep theirs as they
/// were): what the guard buys during the fault.
pub const MORE_FIGURES: &[Figure] = &[
    Figure {
        label: "latency during fault: p99 ms",
        json: None,
        ours: |s| opt(s.latency_fault, |l| Cell::Ms(l.p99_ms)),
        article: blank,
    },
    Figure {
        label: "requests waiting for a worker: peak",
        json: None,
        ours: |s| Cell::Count(s.queue_peak),
        article: blank,
    },
];

/// The figures of `run --runs`, in display order: those of one run's
/// report ([`figures`]), with the fault's p99 after its median and the
/// queue's peak after the backlog ([`MORE_FIGURES`]).
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::{figures, runs_figures};
///
/// let all = runs_figures(false);
/// assert_eq!(all.len(), figures(false).len() + 2);
/// assert_eq!(all[8].label, "latency during fault: p99 ms");
/// ```
pub fn runs_figures(tail: bool) -> Vec<&'static Figure> {
    let mut out = Vec::new();
    for f in figures(tail) {
        out.push(f);
        if std::ptr::eq(f, &FIGURES[7]) {
            out.push(&MORE_FIGURES[0]);
        }
        if std::ptr::eq(f, BACKLOG) {
            out.push(&MORE_FIGURES[1]);
        }
    }
    out
}

/// A figure `sweep --figures` can name.
#[derive(Debug)]
pub struct SweepFigure {
    /// Its name on the command line.
    pub name: &'static str,
    /// The figure.
    pub figure: &'static Figure,
    /// The narrowest its values are written in the table of one run per
    /// value (wider values widen it).
    pub width: usize,
}

/// The figures `sweep --figures` can name, in the order `all` shows them:
/// what the guard costs (calls to the sick dependency, requests lost after
/// it recovered, failed probes, recovery lag), then what it buys (requests
/// served, the latency of requests arriving during the fault, the backlog,
/// the queue's peak). The first four are [`SWEEP_FIGURES`].
pub const SWEEP_CHOICES: &[SweepFigure] = &[
    SweepFigure {
        name: "calls",
        figure: &FIGURES[14],
        width: 4,
    },
    SweepFigure {
        name: "lost",
        figure: &FIGURES[15],
        width: 4,
    },
    SweepFigure {
        name: "probes",
        figure: &FIGURES[16],
        width: 2,
    },
    SweepFigure {
        name: "lag",
        figure: &FIGURES[17],
        width: 6,
    },
    SweepFigure {
        name: "served",
        figure: &FIGURES[2],
        width: 4,
    },
    SweepFigure {
        name: "fault-p50",
        figure: &FIGURES[7],
        width: 6,
    },
    SweepFigure {
        name: "fault-p99",
        figure: &MORE_FIGURES[0],
        width: 6,
    },
    SweepFigure {
        name: "backlog",
        figure: &FIGURES[13],
        width: 4,
    },
    SweepFigure {
        name: "queue-peak",
        figure: &MORE_FIGURES[1],
        width: 4,
    },
];

/// Reads `sweep --figures`: names of [`SWEEP_CHOICES`] separated by
/// commas, or `all`.
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::{sweep_figures, SWEEP_CHOICES};
///
/// let chosen = sweep_figures("lost, fault-p99")?;
/// assert_eq!(chosen[1].figure.label, "latency during fault: p99 ms");
/// assert_eq!(sweep_figures("all")?.len(), SWEEP_CHOICES.len());
/// assert!(sweep_figures("lost,speed").unwrap_err().contains("fault-p99"));
/// # Ok::<(), String>(())
/// ```
pub fn sweep_figures(list: &str) -> Result<Vec<&'static SweepFigure>, String> {
    if list.trim() == "all" {
        return Ok(SWEEP_CHOICES.iter().collect());
    }
    let names = || {
        SWEEP_CHOICES
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out: Vec<&'static SweepFigure> = Vec::new();
    for name in list.split(',').map(str::trim) {
        let c = SWEEP_CHOICES
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| {
                format!(
                    "--figures {list:?}: no figure {name:?} (one of: {}; or all)",
                    names()
                )
            })?;
        if !out.iter().any(|o| std::ptr::eq(*o, c)) {
            out.push(c);
        }
    }
    Ok(out)
}

/// The default of `sweep --figures`: the four [`SWEEP_FIGURES`].
pub fn default_sweep_figures() -> Vec<&'static SweepFigure> {
    SWEEP_CHOICES[..SWEEP_FIGURES.len()].iter().collect()
}

/// Short explanations of the figures that need one (shown on the page).
pub const GLOSSARY: &[(&str, &str)] = &[
    (
        "recovery lag",
        "from the fault's end to the start of the first successful downstream call after it: how long the guard kept a recovered downstream away",
    ),
    (
        "lost after recovery",
        "requests arriving after the fault's end that did not succeed (fast-failed, or failed by a probe into a still-failing downstream)",
    ),
    (
        "failed probes",
        "half-open probes that failed and sent the breaker back to open",
    ),
    (
        "fast-fail",
        "a request the guard rejected before it reached the downstream",
    ),
    (
        "arrived before fault end, done after",
        "the backlog: requests that arrived before the fault's end and finished after it",
    ),
];

/// Where a column's values come from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A strategy's run.
    Ours(&'a Summary),
    /// The article's figures for the strategy before it.
    Article(&'a ArticleFigures),
}

/// One column of the figures: a strategy, or the article beside it.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    /// Header.
    pub header: &'a str,
    /// Index of the strategy (the article's column shares its strategy's).
    pub strategy: usize,
    /// Values.
    pub source: Source<'a>,
}

impl Column<'_> {
    /// This column's value of `figure`.
    pub fn cell(&self, figure: &Figure) -> Cell {
        match self.source {
            Source::Ours(s) => (figure.ours)(s),
            Source::Article(a) => (figure.article)(a),
        }
    }

    /// This column's transitions.
    pub fn transitions(&self) -> &[TransitionRecord] {
        match self.source {
            Source::Ours(s) => &s.transitions,
            Source::Article(a) => a.transitions,
        }
    }

    /// This column's windows (empty if not published).
    pub fn windows(&self) -> Vec<Window> {
        match self.source {
            Source::Ours(s) => s.windows.clone(),
            Source::Article(a) => a
                .windows
                .iter()
                .map(|&(ok, fail, fast_fail)| Window {
                    ok,
                    fail,
                    fast_fail,
                    ..Window::default()
                })
                .collect(),
        }
    }

    /// Whether this is the article's column.
    pub fn is_article(&self) -> bool {
        matches!(self.source, Source::Article(_))
    }
}

/// Header of the article's column.
pub const ARTICLE: &str = "(article)";

/// The columns of a scenario's report: each strategy, followed by the
/// article's figures for it where the article published them.
pub fn columns(report: &ScenarioReport) -> Vec<Column<'_>> {
    let mut out = Vec::new();
    for (i, (s, a)) in report.summaries.iter().zip(&report.article).enumerate() {
        out.push(Column {
            header: &s.name,
            strategy: i,
            source: Source::Ours(s),
        });
        if let Some(a) = a {
            out.push(Column {
                header: ARTICLE,
                strategy: i,
                source: Source::Article(a),
            });
        }
    }
    out
}

/// A window's outcomes as text: `ok 25 fail 12 ff 13` (`-` when empty).
pub fn window_text(w: &Window) -> String {
    let parts: Vec<String> = [
        (w.ok, "ok"),
        (w.fail, "fail"),
        (w.fast_fail, "ff"),
        (w.rejected, "rej"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, name)| format!("{name} {n}"))
    .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

/// The label of a window: `0.500-1.000 s`.
pub fn window_label(w: &Window, width: Duration) -> String {
    format!("{}-{} s", secs(w.from), secs(w.from + width))
}

/// How a request ended, as the page names and colours it: one colour per
/// outcome everywhere (points, bars, legend).
pub const OUTCOMES: [(Outcome, &str, &str); 5] = [
    (Outcome::Ok, "success", "#2e9d4a"),
    (Outcome::Error, "error", "#d62728"),
    (Outcome::Timeout, "timeout", "#8c1a6a"),
    (Outcome::FastFail, "fast-fail", "#1f77b4"),
    (Outcome::Rejected, "rejected (queue full)", "#ff9f1c"),
];

/// The colour of an outcome.
pub fn colour(o: Outcome) -> &'static str {
    OUTCOMES
        .iter()
        .find(|(x, _, _)| *x == o)
        .map_or("#000", |(_, _, c)| c)
}

/// The name of an outcome on the page.
pub fn outcome_label(o: Outcome) -> &'static str {
    OUTCOMES
        .iter()
        .find(|(x, _, _)| *x == o)
        .map_or("", |(_, l, _)| l)
}

/// A window's requests by outcome, in [`OUTCOMES`] order (failures split
/// into errors and timeouts).
pub fn window_outcomes(w: &Window) -> [(Outcome, usize); 5] {
    [
        (Outcome::Ok, w.ok),
        (Outcome::Error, w.fail - w.timeouts),
        (Outcome::Timeout, w.timeouts),
        (Outcome::FastFail, w.fast_fail),
        (Outcome::Rejected, w.rejected),
    ]
}

/// Background of a breaker state on the page (none for closed).
pub fn state_fill(state: &str) -> Option<&'static str> {
    match state {
        "open" | "forced_open" => Some(STATE_OPEN),
        "half_open" => Some(STATE_HALF_OPEN),
        _ => None,
    }
}

/// A breaker's states as bands `(from, until, state)` from time zero (closed)
/// to `end`, from its transitions.
pub fn state_bands(
    transitions: &[TransitionRecord],
    end: Duration,
) -> Vec<(Duration, Duration, &'static str)> {
    let mut state = "closed";
    let mut since = Duration::ZERO;
    let mut bands = Vec::new();
    for t in transitions {
        bands.push((since, t.at, state));
        state = t.to;
        since = t.at;
    }
    bands.push((since, end, state));
    bands
}

/// Background of an open breaker.
pub const STATE_OPEN: &str = "#fbd5d5";
/// Background of a half-open breaker.
pub const STATE_HALF_OPEN: &str = "#fff1b8";
/// The downstream's fault bar.
pub const FAULT: &str = "#555";

/// One figure of a fleet run, per replica and in total.
#[derive(Debug)]
pub struct FleetFigure {
    /// Column label (short: one column per figure, one row per replica).
    pub label: &'static str,
    /// Its key in the JSON's `fleet` objects.
    pub json: &'static str,
    /// Its value.
    pub value: fn(&ReplicaFigures) -> Cell,
}

/// The figures of a fleet run, per replica and in total, in display order.
pub const FLEET_FIGURES: &[FleetFigure] = &[
    FleetFigure {
        label: "calls in fault",
        json: "calls_during_fault",
        value: |r| Cell::Count(r.calls_during_fault),
    },
    FleetFigure {
        label: "failing calls",
        json: "failing_calls",
        value: |r| Cell::Count(r.failing_calls),
    },
    FleetFigure {
        label: "recovery probes",
        json: "recovery_probes",
        value: |r| Cell::Count(r.recovery_probes),
    },
    FleetFigure {
        label: "recovery lag s",
        json: "recovery_lag_s",
        value: |r| opt(r.recovery_lag, Cell::Secs),
    },
    FleetFigure {
        label: "ff while healthy",
        json: "healthy_fast_fails",
        value: |r| Cell::Count(r.healthy_fast_fails),
    },
    FleetFigure {
        label: "fleet transitions",
        json: "remote_transitions",
        value: |r| Cell::Count(r.remote_transitions),
    },
];

/// The rows of a strategy's fleet table: `replica 1`, ..., `total`, with
/// their figures (`None` without `[fleet]`).
///
/// # Examples
///
/// ```
/// use fusebox_lab::engine::Mode;
/// use fusebox_lab::report::{model, ScenarioReport};
/// use fusebox_lab::scenario::{Scenario, EMBEDDED};
///
/// let text = EMBEDDED[0].1.replace(
///     "[downstream]",
///     "[fleet]\nreplicas = 2\nsharing = \"none\"\n\n[downstream]",
/// );
/// let sc = Scenario::parse("fleet.toml", &text).map_err(|e| e.to_string())?;
/// let report = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {})?;
/// let rows = model::fleet_rows(&report.summaries[1]).unwrap();
/// let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
/// assert_eq!(labels, ["replica 1", "replica 2", "total"]);
/// assert_eq!(
///     rows[2].1.failing_calls,
///     rows[0].1.failing_calls + rows[1].1.failing_calls
/// );
/// # Ok::<(), String>(())
/// ```
pub fn fleet_rows(sum: &Summary) -> Option<Vec<(String, &ReplicaFigures)>> {
    let f = sum.fleet.as_ref()?;
    let mut rows: Vec<(String, &ReplicaFigures)> = f
        .replicas
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("replica {}", i + 1), r))
        .collect();
    rows.push(("total".into(), &f.total));
    Some(rows)
}

/// What a fleet scenario's report says about its fleet, in one line.
pub fn fleet_line(sc: &crate::scenario::Scenario) -> Option<String> {
    let f = sc.fleet.as_ref()?;
    Some(format!(
        "fleet: {} replicas (round-robin, {} workers each), sharing = {}, quorum {}, propagation {}",
        f.replicas,
        sc.workers,
        f.sharing.as_str(),
        f.quorum,
        crate::scenario::format_duration(f.propagation)
    ))
}
