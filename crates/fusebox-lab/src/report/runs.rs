//! Many runs of one scenario (`run --runs N`, `sweep --runs N`): the
//! scenario drawn again for the seeds `seed, seed + 1, ..., seed + N - 1`
//! ([`Scenario::with_seed`]), each run summarised, and every figure given
//! as its median and its 10th and 90th percentiles over the runs
//! ([`Spread`]).
//!
//! The percentile rule is the nearest rank ([`nearest_rank`]): of `n`
//! values sorted from the smallest, the `p`-th percentile is the value of
//! rank `ceil(p / 100 x n)` (ranks from 1; at least 1). Every statistic is
//! one of the runs' own values: a count stays a whole number. Over 50
//! runs the p10 is the 5th value, the median the 25th, the p90 the 45th.

use super::model::{self, Cell, Figure};
use super::{secs, Summary};
use crate::engine::{self, Mode};
use crate::scenario::{format_duration, Arrivals, Scenario};
use serde_json::{json, Value};
use std::fmt::Write;
use std::ops::Range;

/// Most runs `--runs` takes.
pub const MAX_RUNS: u64 = 10_000;

/// The index (from 0) of the `percent`-th percentile among `n` sorted
/// values, by the nearest rank: rank `ceil(percent x n / 100)`, at least 1.
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::runs::nearest_rank;
///
/// assert_eq!([10, 50, 90].map(|p| nearest_rank(50, p)), [4, 24, 44]);
/// assert_eq!([10, 50, 90].map(|p| nearest_rank(10, p)), [0, 4, 8]);
/// assert_eq!([10, 50, 90].map(|p| nearest_rank(1, p)), [0, 0, 0]);
/// ```
pub fn nearest_rank(n: usize, percent: usize) -> usize {
    (n * percent).div_ceil(100).clamp(1, n.max(1)) - 1
}

/// A figure over many runs: its median, p10 and p90 ([`nearest_rank`]),
/// over the runs that have it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (the 50th percentile).
    pub median: Cell,
    /// The 10th percentile.
    pub p10: Cell,
    /// The 90th percentile.
    pub p90: Cell,
    /// How many runs have the figure (a run without a success after the
    /// fault has no recovery lag): the statistics are over these.
    pub present: usize,
    /// How many runs there were.
    pub runs: usize,
}

/// A cell's number, if it has one (a time in seconds, a latency in
/// milliseconds).
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::model::Cell;
/// use fusebox_lab::report::runs::cell_number;
///
/// assert_eq!(cell_number(Cell::Count(3)), Some(3.0));
/// assert_eq!(cell_number(Cell::Missing), None);
/// ```
pub fn cell_number(c: Cell) -> Option<f64> {
    match c {
        Cell::Count(n) => Some(n as f64),
        Cell::Secs(d) => Some(d.as_secs_f64()),
        Cell::Ms(x) | Cell::Ratio(x) | Cell::Published(x, _) => Some(x),
        Cell::Missing | Cell::Blank => None,
    }
}

impl Spread {
    /// The spread of `cells`, one per run (missing ones left out).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::report::model::Cell;
    /// use fusebox_lab::report::runs::Spread;
    ///
    /// let cells: Vec<Cell> = [7, 3, 9, 1, 5, 2, 8, 4, 10, 6].map(Cell::Count).into();
    /// let s = Spread::of(&cells);
    /// assert_eq!((s.p10, s.median, s.p90), (Cell::Count(1), Cell::Count(5), Cell::Count(9)));
    /// assert_eq!(s.text(), "5 [1-9]");
    /// ```
    pub fn of(cells: &[Cell]) -> Spread {
        let mut present: Vec<(f64, Cell)> = cells
            .iter()
            .filter_map(|&c| cell_number(c).map(|x| (x, c)))
            .collect();
        present.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = present.len();
        let at = |p| {
            present
                .get(nearest_rank(n, p))
                .map_or(Cell::Missing, |v| v.1)
        };
        Spread {
            median: at(50),
            p10: at(10),
            p90: at(90),
            present: n,
            runs: cells.len(),
        }
    }

    /// `median [p10-p90]`, followed by `n=K` when only K of the runs have
    /// the figure; `-` when none has it.
    pub fn text(&self) -> String {
        if self.present == 0 {
            return "-".into();
        }
        let mut text = format!(
            "{} [{}-{}]",
            self.median.text(),
            self.p10.text(),
            self.p90.text()
        );
        if self.present < self.runs {
            let _ = write!(text, " n={}", self.present);
        }
        text
    }

    /// `{median, p10, p90, runs}` (`runs`: those that have the figure).
    pub fn json(&self) -> Value {
        json!({
            "median": self.median.json(),
            "p10": self.p10.json(),
            "p90": self.p90.json(),
            "runs": self.present,
        })
    }
}

/// The spread of `figure` over the summaries of one strategy's runs.
pub fn spread(figure: &Figure, runs: &[Summary]) -> Spread {
    let cells: Vec<Cell> = runs.iter().map(|s| (figure.ours)(s)).collect();
    Spread::of(&cells)
}

/// The seeds `first, first + 1, ..., first + runs - 1`.
///
/// # Errors
///
/// `runs` out of `1..=`[`MAX_RUNS`], or a last seed above the largest a
/// scenario file can hold (`2^63 - 1`).
pub fn seeds(first: u64, runs: u64) -> Result<Range<u64>, String> {
    if !(1..=MAX_RUNS).contains(&runs) {
        return Err(format!("--runs {runs} is out of range (1..={MAX_RUNS})"));
    }
    match first.checked_add(runs - 1) {
        Some(last) if last <= i64::MAX as u64 => Ok(first..last + 1),
        _ => Err(format!(
            "seeds {first}.. for {runs} runs go past the largest seed, {}",
            i64::MAX
        )),
    }
}

/// Every strategy of `scenario` run once per seed: per strategy, one
/// summary per seed, in seed order; `tick` after each run.
///
/// # Errors
///
/// The first run that could not start ([`engine::run`]).
pub fn run_seeds(
    scenario: &Scenario,
    mode: Mode,
    seeds: Range<u64>,
    mut tick: impl FnMut(),
) -> Result<Vec<Vec<Summary>>, String> {
    let mut out: Vec<Vec<Summary>> = scenario.strategies.iter().map(|_| Vec::new()).collect();
    for seed in seeds {
        let sc = scenario.with_seed(seed);
        for (spec, sums) in sc.strategies.iter().zip(&mut out) {
            let r = engine::run(&sc, spec, mode, None)?;
            sums.push(Summary::of(&sc, &r));
            tick();
        }
    }
    Ok(out)
}

/// A scenario's runs over many seeds (`run --runs`).
#[derive(Debug, Clone)]
pub struct RunsReport {
    /// The scenario, as given (its `seed` is the first).
    pub scenario: Scenario,
    /// The mode it ran in.
    pub mode: Mode,
    /// The seeds, one run each.
    pub seeds: Range<u64>,
    /// Per strategy, one summary per seed.
    pub summaries: Vec<Vec<Summary>>,
}

impl RunsReport {
    /// Runs every strategy of `scenario` for each of `runs` seeds from its
    /// own ([`run_seeds`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::engine::Mode;
    /// use fusebox_lab::report::runs::RunsReport;
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    ///
    /// let text = EMBEDDED[0].1.replace("outcome = \"error\"", "outcome = \"error\"\njitter = \"250ms\"");
    /// let sc = Scenario::parse("random.toml", &text).map_err(|e| e.to_string())?;
    /// let report = RunsReport::run(sc, Mode::Virtual, 5, || {})?;
    /// assert_eq!((report.seeds.clone(), report.summaries[0].len()), (1..6, 5));
    /// assert!(report.text().contains("median [p10-p90]"));
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Bad `runs` ([`seeds`]), or a run that could not start.
    pub fn run(
        scenario: Scenario,
        mode: Mode,
        runs: u64,
        tick: impl FnMut(),
    ) -> Result<RunsReport, String> {
        let seeds = seeds(scenario.seed, runs)?;
        let summaries = run_seeds(&scenario, mode, seeds.clone(), tick)?;
        Ok(RunsReport {
            scenario,
            mode,
            seeds,
            summaries,
        })
    }

    /// The terminal table: a row per figure ([`model::runs_figures`]), a
    /// column per strategy, each cell `median [p10-p90]`.
    pub fn text(&self) -> String {
        let sc = &self.scenario;
        let mut out = String::new();
        let mode = match self.mode {
            Mode::Real => "real threads",
            Mode::Virtual => "virtual time",
        };
        let _ = writeln!(
            out,
            "== {} ({mode}): {}; {}",
            sc.name,
            seeds_text(&self.seeds),
            describe(sc)
        );
        let _ = writeln!(out, "  {}", legend(self.seeds.clone()));
        if !sc.is_random() {
            let _ = writeln!(out, "  {NOT_RANDOM}");
        }
        let figures = model::runs_figures(sc.has_tail(), sc.models_pool());
        let labels: Vec<String> = figures.iter().map(|f| f.label.to_string()).collect();
        let headers: Vec<&str> = sc.strategies.iter().map(|s| s.name.as_str()).collect();
        let cells: Vec<Vec<String>> = figures
            .iter()
            .map(|f| {
                self.summaries
                    .iter()
                    .map(|runs| spread(f, runs).text())
                    .collect()
            })
            .collect();
        super::table::render(&mut out, &labels, &headers, &cells);
        out
    }

    /// The JSON of this report: `{scenario, mode, seeds: {first, last},
    /// runs, strategies: [{name, kind, figures: [{figure, key, median,
    /// p10, p90, runs}]}]}`; `key` is the figure's key in the JSON of one
    /// run (`null` for those it has not).
    pub fn json(&self) -> Value {
        let sc = &self.scenario;
        let figures = model::runs_figures(sc.has_tail(), sc.models_pool());
        let strategies: Vec<Value> = sc
            .strategies
            .iter()
            .zip(&self.summaries)
            .map(|(spec, runs)| {
                let figures: Vec<Value> = figures
                    .iter()
                    .map(|f| {
                        let mut v = spread(f, runs).json();
                        if let Value::Object(obj) = &mut v {
                            obj.insert("figure".into(), json!(f.label));
                            obj.insert("key".into(), json!(f.json));
                        }
                        v
                    })
                    .collect();
                json!({ "name": spec.name, "kind": spec.kind.as_str(), "figures": figures })
            })
            .collect();
        json!({
            "scenario": sc.name,
            "mode": self.mode.as_str(),
            "runs": self.seeds.end - self.seeds.start,
            "seeds": { "first": self.seeds.start, "last": self.seeds.end - 1 },
            "percentiles": "nearest rank",
            "strategies": strategies,
        })
    }
}

/// The JSON document of `run --runs --json`: one report's object, or
/// `{scenarios: [...]}` for several.
pub fn json_text(reports: &[RunsReport]) -> String {
    let doc = match reports {
        [one] => one.json(),
        many => json!({ "scenarios": many.iter().map(RunsReport::json).collect::<Vec<_>>() }),
    };
    serde_json::to_string_pretty(&doc).expect("JSON values always serialize")
}

/// `50 runs, seeds 1..=50`.
pub fn seeds_text(seeds: &Range<u64>) -> String {
    let n = seeds.end - seeds.start;
    if n == 1 {
        format!("1 run, seed {}", seeds.start)
    } else {
        format!("{n} runs, seeds {}..={}", seeds.start, seeds.end - 1)
    }
}

/// What each cell of a table over many runs is.
pub fn legend(seeds: Range<u64>) -> String {
    format!(
        "each cell: median [p10-p90] over the {} runs (nearest rank; n=K: over the K runs \
         that have the figure)",
        seeds.end - seeds.start
    )
}

/// Said of a scenario none of whose values is drawn from the seed.
pub const NOT_RANDOM: &str = "note: nothing in this scenario is drawn from the seed (fixed \
     arrivals, no latency tail or distribution, no fault jitter, no outage ranges): every run is \
     the same";

/// The scenario in one line, as written (a jittered fault at its written
/// times, with its jitter; an outage model with its ranges): `150 requests
/// at 50/s, 8 workers, downstream 5ms healthy, fault 0.500..1.500 s, each
/// end moved by up to 250ms`, or `..., outage from 500ms..2s lasting
/// 500ms..5s (log-uniform)`.
pub fn describe(sc: &Scenario) -> String {
    let arrivals = match &sc.arrivals {
        Arrivals::Fixed => format!("{} requests at {}/s", sc.request_count(), sc.rate),
        Arrivals::Poisson(_) => format!(
            "Poisson arrivals at {}/s for {}",
            sc.rate,
            format_duration(sc.duration)
        ),
        Arrivals::Bursty(b, _) => format!(
            "bursty arrivals at {}/s for {} ({}x for {}, every {})",
            sc.rate,
            format_duration(sc.duration),
            b.peak,
            format_duration(b.on),
            format_duration(b.on + b.off)
        ),
        Arrivals::Trace(file, _) => format!("{} arrivals from {file}", sc.request_count()),
    };
    let mut written = sc.downstream.faults.clone();
    for j in &sc.fault_jitter {
        if let Some(f) = written.get_mut(j.fault) {
            f.from = j.from;
            f.until = j.until;
        }
    }
    // The outages are said as their ranges, the other faults as their span.
    let fixed = written
        .iter()
        .enumerate()
        .filter(|(k, _)| !sc.outages.iter().any(|o| o.fault == *k))
        .map(|(_, f)| f);
    let from = fixed.clone().map(|f| f.from).min();
    let until = fixed.map(|f| f.until).max();
    let mut fault = match (from, until) {
        (Some(a), Some(b)) => format!("fault {}..{} s", secs(a), secs(b)),
        _ if !sc.outages.is_empty() => String::new(),
        _ => "no fault".into(),
    };
    for o in &sc.outages {
        if !fault.is_empty() {
            fault.push_str(", ");
        }
        fault.push_str(&o.describe());
    }
    let jitter = match sc.fault_jitter.iter().map(|j| j.by).max() {
        Some(by) => format!(", each end moved by up to {}", format_duration(by)),
        None => String::new(),
    };
    format!(
        "{arrivals}, {} workers, downstream {} healthy, {fault}{jitter}",
        sc.workers,
        sc.downstream.latency_text()
    )
}
