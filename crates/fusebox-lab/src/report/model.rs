//! The one report model: every figure (its label, its JSON key, how it is
//! read from a [`Summary`] and from the article), which of them make each
//! scenario's headline ([`HEADLINE`]: what a strategy bought and what it
//! cost), every column, every series and every colour, defined once here. The terminal table, the JSON and the
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

/// The figures of a scenario whose virtual mode models the HTTP client's
/// pool ([`Summary::pool`]), shown after the outcome counts (and the
/// [`TAIL_FIGURES`]); the other scenarios' reports do not have them.
pub const POOL_FIGURES: &[Figure] = &[
    Figure {
        label: "calls that waited for a connection",
        json: Some("pool.waited"),
        ours: |s| opt(s.pool, |p| Cell::Count(p.waited)),
        article: blank,
    },
    Figure {
        label: "  wait for a connection: max ms",
        json: Some("pool.wait_max_ms"),
        ours: |s| opt(s.pool, |p| Cell::Ms(p.wait_max_ms)),
        article: blank,
    },
    Figure {
        label: "connect timeouts",
        json: Some("pool.connect_timeouts"),
        ours: |s| opt(s.pool, |p| Cell::Count(p.connect_timeouts)),
        article: blank,
    },
    Figure {
        label: "connections in use: peak",
        json: Some("pool.peak_in_use"),
        ours: |s| opt(s.pool, |p| Cell::Count(p.peak_in_use)),
        article: blank,
    },
];

/// The figures of a report, in display order: [`FIGURES`], with the
/// [`TAIL_FIGURES`] if `tail` (a scenario about tail latency,
/// [`Scenario::has_tail`](crate::scenario::Scenario::has_tail)) and the
/// [`POOL_FIGURES`] if `pool` (a scenario whose client's pool is modelled,
/// [`Scenario::models_pool`](crate::scenario::Scenario::models_pool)).
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::{figures, FIGURES, POOL_FIGURES, TAIL_FIGURES};
///
/// assert_eq!(figures(false, false).len(), FIGURES.len());
/// let all = figures(true, true);
/// assert_eq!(all.len(), FIGURES.len() + TAIL_FIGURES.len() + POOL_FIGURES.len());
/// assert_eq!(all[6].label, "rejected (queue full)");
/// assert_eq!(all[7].label, "latency, every request: p50 ms");
/// assert_eq!(figures(false, true)[7].label, "calls that waited for a connection");
/// ```
pub fn figures(tail: bool, pool: bool) -> Vec<&'static Figure> {
    let (counts, rest) = FIGURES.split_at(TAIL_AFTER);
    let tail: &[Figure] = if tail { TAIL_FIGURES } else { &[] };
    let pool: &[Figure] = if pool { POOL_FIGURES } else { &[] };
    counts.iter().chain(tail).chain(pool).chain(rest).collect()
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
/// let all = runs_figures(false, false);
/// assert_eq!(all.len(), figures(false, false).len() + 2);
/// assert_eq!(all[8].label, "latency during fault: p99 ms");
/// ```
pub fn runs_figures(tail: bool, pool: bool) -> Vec<&'static Figure> {
    let mut out = Vec::new();
    for f in figures(tail, pool) {
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
        "published",
        "the article's own figure, beside the lab's run of the same experiment and strategy",
    ),
    (
        "fast-fails while healthy",
        "in a fleet, requests fast-failed while no fault hit their replica's calls: what a breaker cost while its dependency was healthy",
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

/// Header of the article's column: its published figures.
pub const ARTICLE: &str = "published";

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
    /// What its `total` row is, said in full (a headline's row label).
    pub total: &'static str,
    /// Its value.
    pub value: fn(&ReplicaFigures) -> Cell,
}

/// The figures of a fleet run, per replica and in total, in display order.
pub const FLEET_FIGURES: &[FleetFigure] = &[
    FleetFigure {
        label: "calls in fault",
        json: "calls_during_fault",
        total: "downstream calls during the fault, all replicas",
        value: |r| Cell::Count(r.calls_during_fault),
    },
    FleetFigure {
        label: "failing calls",
        json: "failing_calls",
        total: "failing calls, all replicas",
        value: |r| Cell::Count(r.failing_calls),
    },
    FleetFigure {
        label: "recovery probes",
        json: "recovery_probes",
        total: "recovery probes, all replicas",
        value: |r| Cell::Count(r.recovery_probes),
    },
    FleetFigure {
        label: "recovery lag s",
        json: "recovery_lag_s",
        total: "recovery lag s, every replica (the last)",
        value: |r| opt(r.recovery_lag, Cell::Secs),
    },
    FleetFigure {
        label: "ff while healthy",
        json: "healthy_fast_fails",
        total: "fast-fails while healthy, all replicas",
        value: |r| Cell::Count(r.healthy_fast_fails),
    },
    FleetFigure {
        label: "fleet transitions",
        json: "remote_transitions",
        total: "transitions made by the fleet, all replicas",
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
        "fleet: {} replicas (round-robin, {} workers each), sharing = {}, quorum {}, sync every {}, propagation {}",
        f.replicas,
        sc.workers,
        f.sharing.as_str(),
        f.quorum,
        crate::scenario::format_duration(f.sync_every),
        crate::scenario::format_duration(f.propagation)
    ))
}

/// What a fleet's report says under its figures: which of them are the
/// fleet's as one service, and where each replica's are.
pub const FLEET_NOTE: &str = "a fleet: the figures above count the fleet as one service \
     (recovery lag s: the first success on any replica; transitions: replica 1's); \
     each replica's figures are below, their totals in the headline";

/// Which side of a strategy's ledger a headline row is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// What the strategy bought: the calls it kept from the sick
    /// dependency, how fast requests failed while it was sick.
    Bought,
    /// What it cost: how long it kept a recovered dependency away, and the
    /// requests that paid for that.
    Cost,
}

impl Side {
    /// As the headline names it.
    pub fn label(self) -> &'static str {
        match self {
            Side::Bought => "bought",
            Side::Cost => "cost",
        }
    }
}

/// Where a headline row's values come from.
#[derive(Debug, Clone, Copy)]
pub enum Pick {
    /// A figure of the report ([`FIGURES`], [`TAIL_FIGURES`]).
    Figure(&'static Figure),
    /// A fleet figure's total over the replicas ([`FLEET_FIGURES`]).
    FleetTotal(&'static FleetFigure),
}

/// One row of a scenario's headline: a figure the report already has, on
/// its side of the ledger.
#[derive(Debug)]
pub struct HeadlineRow {
    /// Bought or cost.
    pub side: Side,
    /// The figure.
    pub pick: Pick,
}

impl HeadlineRow {
    /// The row's label: the figure's own (a fleet total's, said in full).
    pub fn label(&self) -> &'static str {
        match self.pick {
            Pick::Figure(f) => f.label,
            Pick::FleetTotal(f) => f.total,
        }
    }

    /// A strategy's value.
    pub fn ours(&self, s: &Summary) -> Cell {
        match self.pick {
            Pick::Figure(f) => (f.ours)(s),
            Pick::FleetTotal(f) => s
                .fleet
                .as_ref()
                .map_or(Cell::Missing, |x| (f.value)(&x.total)),
        }
    }

    /// This row's value in `column` (the article published no fleet figure).
    pub fn cell(&self, column: &Column) -> Cell {
        match (self.pick, column.source) {
            (Pick::Figure(f), _) => column.cell(f),
            (Pick::FleetTotal(_), Source::Ours(s)) => self.ours(s),
            (Pick::FleetTotal(_), Source::Article(_)) => Cell::Blank,
        }
    }
}

/// The headline of a scenario with a fault: what each strategy bought
/// (the downstream calls, the article's first headline figure, and those
/// that met the fault; the latency of requests arriving during it, its
/// second) and what it cost (the recovery lag, its third; the requests
/// lost after the dependency recovered).
pub const HEADLINE: &[HeadlineRow] = &[
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[0]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[14]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[7]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::Figure(&FIGURES[17]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::Figure(&FIGURES[15]),
    },
];

/// The headline of a fleet: the replicas' totals (failing calls and
/// recovery probes; the recovery of every replica, that is the last one's;
/// the requests fast-failed while their dependency was healthy), with the
/// latency of requests arriving during the fault over the fleet.
pub const FLEET_HEADLINE: &[HeadlineRow] = &[
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::FleetTotal(&FLEET_FIGURES[1]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::FleetTotal(&FLEET_FIGURES[2]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[7]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::FleetTotal(&FLEET_FIGURES[3]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::FleetTotal(&FLEET_FIGURES[4]),
    },
];

/// The headline of a scenario about tail latency: the tail cut, and the
/// extra calls that cut it.
pub const TAIL_HEADLINE: &[HeadlineRow] = &[
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&TAIL_FIGURES[2]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&TAIL_FIGURES[1]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::Figure(&TAIL_FIGURES[3]),
    },
];

/// The headline of a scenario without a fault (an overload): the requests
/// served and failed, and those the guard or a full queue turned away.
pub const LOAD_HEADLINE: &[HeadlineRow] = &[
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[2]),
    },
    HeadlineRow {
        side: Side::Bought,
        pick: Pick::Figure(&FIGURES[3]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::Figure(&FIGURES[5]),
    },
    HeadlineRow {
        side: Side::Cost,
        pick: Pick::Figure(&FIGURES[6]),
    },
];

/// The headline rows of `sc`'s report: [`FLEET_HEADLINE`] for a fleet,
/// [`TAIL_HEADLINE`] for a scenario about tail latency, [`HEADLINE`] with
/// a fault, [`LOAD_HEADLINE`] without.
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::{headline, Side};
/// use fusebox_lab::scenario::Scenario;
///
/// let rows = headline(&Scenario::embedded()[0]);
/// let labels: Vec<_> = rows.iter().map(|r| (r.side, r.label())).collect();
/// assert_eq!(labels[0], (Side::Bought, "downstream calls"));
/// assert_eq!(labels[2], (Side::Bought, "latency during fault: median ms"));
/// assert_eq!(labels[3], (Side::Cost, "recovery lag s"));
/// ```
pub fn headline(sc: &crate::scenario::Scenario) -> &'static [HeadlineRow] {
    if sc.fleet.is_some() {
        FLEET_HEADLINE
    } else if sc.has_tail() {
        TAIL_HEADLINE
    } else if sc.fault_span().is_some() {
        HEADLINE
    } else {
        LOAD_HEADLINE
    }
}

/// The title line of a headline.
pub fn headline_title(published: bool) -> &'static str {
    if published {
        "headline: what each strategy bought and what it cost; published: the article's own figures, beside the strategy it measured"
    } else {
        "headline: what each strategy bought and what it cost"
    }
}

/// Fleet scenarios of one run shown side by side: the same service and
/// dependency (arrivals, pool, downstream, faults, client) but for their
/// `[fleet]` settings and strategies, such as `fleet20-local` and
/// `fleet20-shared`.
#[derive(Debug)]
pub struct SideBySide<'a> {
    /// Each scenario's report, with the part of its name that tells it
    /// from the others (`local`, `shared`).
    pub scenarios: Vec<(&'a ScenarioReport, String)>,
    /// The columns, strategy by strategy: its name, the scenario (an index
    /// of `scenarios`) and its figures.
    pub columns: Vec<(&'a str, usize, &'a Summary)>,
}

fn same_but_fleet(a: &crate::scenario::Scenario, b: &crate::scenario::Scenario) -> bool {
    a.fleet.is_some()
        && b.fleet.is_some()
        && crate::scenario::Scenario {
            fleet: b.fleet.clone(),
            ..a.clone()
        }
        .same_setup(b)
}

/// Names less the `-`-separated words they all start with (each whole
/// name if that leaves one empty).
fn short_names(names: &[&str]) -> Vec<String> {
    let words: Vec<Vec<&str>> = names.iter().map(|n| n.split('-').collect()).collect();
    let mut common = 0;
    while words
        .iter()
        .all(|w| w.len() > common + 1 && w[common] == words[0][common])
    {
        common += 1;
    }
    words
        .iter()
        .zip(names)
        .map(|(w, n)| {
            if common == 0 {
                n.to_string()
            } else {
                w[common..].join("-")
            }
        })
        .collect()
}

/// The groups of fleet scenarios of a run to show side by side: two or
/// more of the same setup but for `[fleet]` (see [`SideBySide`]), in the
/// run's order.
///
/// # Examples
///
/// ```
/// use fusebox_lab::engine::Mode;
/// use fusebox_lab::report::{model, ScenarioReport};
/// use fusebox_lab::scenario::{Scenario, EMBEDDED};
///
/// let fleet = |sharing: &str| {
///     let text = EMBEDDED[0].1.replace(
///         "[downstream]",
///         &format!("[fleet]\nreplicas = 2\nsharing = \"{sharing}\"\n\n[downstream]"),
///     );
///     let sc = Scenario::parse("x.toml", &text).unwrap();
///     let sc = Scenario { name: format!("pair-{sharing}"), ..sc };
///     ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap()
/// };
/// let reports = [fleet("none"), fleet("fleet")];
/// let groups = model::side_by_side(&reports);
/// assert_eq!(groups.len(), 1);
/// let names: Vec<&str> = groups[0].scenarios.iter().map(|(_, n)| n.as_str()).collect();
/// assert_eq!(names, ["none", "fleet"]);
/// // Strategy by strategy: each one's two runs side by side.
/// let cols: Vec<(&str, usize)> = groups[0].columns.iter().map(|c| (c.0, c.1)).collect();
/// assert_eq!(&cols[..2], [("no breaker", 0), ("no breaker", 1)]);
/// ```
pub fn side_by_side(reports: &[ScenarioReport]) -> Vec<SideBySide<'_>> {
    let mut groups: Vec<Vec<&ScenarioReport>> = Vec::new();
    for r in reports.iter().filter(|r| r.scenario.fleet.is_some()) {
        match groups
            .iter_mut()
            .find(|g| same_but_fleet(&g[0].scenario, &r.scenario))
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let names: Vec<&str> = g.iter().map(|r| r.scenario.name.as_str()).collect();
            let mut strategies: Vec<&str> = Vec::new();
            for r in &g {
                for s in &r.summaries {
                    if !strategies.contains(&s.name.as_str()) {
                        strategies.push(&s.name);
                    }
                }
            }
            let columns = strategies
                .iter()
                .flat_map(|name| {
                    g.iter().enumerate().filter_map(move |(k, r)| {
                        r.summaries
                            .iter()
                            .find(|s| s.name == *name)
                            .map(|s| (*name, k, s))
                    })
                })
                .collect();
            SideBySide {
                scenarios: g.iter().copied().zip(short_names(&names)).collect(),
                columns,
            }
        })
        .collect()
}

/// Most replicas in one latency chart of a fleet.
pub const REPLICA_GROUP: usize = 5;

/// A fleet's replicas (from 0) in groups for its latency charts: replicas
/// hit by the same faults together, in order, at most [`REPLICA_GROUP`]
/// to a chart; those hit by a fault first.
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::replica_groups;
/// use fusebox_lab::scenario::{Scenario, EMBEDDED};
///
/// let text = EMBEDDED[0].1.replace(
///     "[downstream]",
///     "[fleet]\nreplicas = 8\nsharing = \"none\"\n\n[downstream]",
/// ).replace("outcome = \"error\"", "outcome = \"error\"\nreplicas = [3]");
/// let sc = Scenario::parse("x.toml", &text).unwrap();
/// assert_eq!(replica_groups(&sc), [vec![2], vec![0, 1, 3, 4, 5], vec![6, 7]]);
/// ```
pub fn replica_groups(sc: &crate::scenario::Scenario) -> Vec<Vec<usize>> {
    let hits = |r: usize| -> Vec<bool> { sc.downstream.faults.iter().map(|f| f.hits(r)).collect() };
    let mut classes: Vec<(Vec<bool>, Vec<usize>)> = Vec::new();
    for r in 0..sc.replicas() {
        let h = hits(r);
        match classes.iter_mut().find(|(k, _)| *k == h) {
            Some((_, members)) => members.push(r),
            None => classes.push((h, vec![r])),
        }
    }
    // The replicas some fault hits before those it spares.
    classes.sort_by_key(|(hit, _)| !hit.iter().any(|h| *h));
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (_, members) in classes {
        out.extend(members.chunks(REPLICA_GROUP).map(<[usize]>::to_vec));
    }
    out
}

/// A group of replicas (from 0) as the page names it: `replica 3`,
/// `replicas 1–5`, `replicas 1–2, 4–6`; with the faults that hit it when
/// not every replica meets the same ones.
pub fn replica_group_label(sc: &crate::scenario::Scenario, group: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &r in group {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == r => *end = r,
            _ => runs.push((r, r)),
        }
    }
    let list: Vec<String> = runs
        .iter()
        .map(|&(a, b)| {
            if a == b {
                format!("{}", a + 1)
            } else {
                format!("{}–{}", a + 1, b + 1)
            }
        })
        .collect();
    let mut label = format!(
        "{} {}",
        if group.len() == 1 {
            "replica"
        } else {
            "replicas"
        },
        list.join(", ")
    );
    let faults = &sc.downstream.faults;
    let same_everywhere = (0..sc.replicas()).all(|r| faults.iter().all(|f| f.hits(r) == f.hits(0)));
    if let (false, Some(&first)) = (same_everywhere, group.first()) {
        let hit: Vec<String> = faults
            .iter()
            .filter(|f| f.hits(first))
            .map(|f| format!("{}–{} s", secs(f.from), secs(f.until)))
            .collect();
        if hit.is_empty() {
            label.push_str(" (no fault)");
        } else {
            label.push_str(&format!(" (fault {})", hit.join(", ")));
        }
    }
    label
}
