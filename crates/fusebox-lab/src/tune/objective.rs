//! What `tune` looks for: `--objective "fault-p99<=300ms, outage-calls<=5,
//! min lost"`, one figure to minimise (or maximise) under limits on others.
//!
//! The figures ([`MEASURES`]) are those of `sweep --figures`
//! ([`SWEEP_CHOICES`]) and `outage-calls`, the downstream calls per second
//! of outage. Over a candidate's runs, each figure is taken at its median
//! ([`Spread`]): a candidate is *feasible* when every limit holds at the
//! median, and feasible candidates rank by the objective's median (its mean
//! breaking ties); infeasible ones rank after them by how far they miss
//! ([`Score::violation`]).

use crate::report::model::{Cell, Figure, SWEEP_CHOICES};
use crate::report::runs::{cell_number, Spread};
use crate::report::Summary;
use crate::scenario::duration::parse_value;
use std::cmp::Ordering;
use std::fmt;
use std::time::Duration;

/// The objective a `tune` without `--objective` uses.
pub const DEFAULT_OBJECTIVE: &str = "fault-p99<=300ms, outage-calls<=5, min lost";

/// How a figure is written in an objective's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count of requests or calls: a plain number.
    Count,
    /// A latency in milliseconds: a duration (`300ms`).
    Ms,
    /// A time in seconds: a duration (`0.5s`).
    Secs,
    /// Calls per second: a plain number.
    PerSec,
}

/// One figure an objective can name.
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    /// Its name in `--objective` (and `sweep --figures`).
    pub name: &'static str,
    /// What it is, for the tables.
    pub label: &'static str,
    /// How its limits are written.
    pub unit: Unit,
    /// A figure of one run, or (`None`) the calls per outage second.
    figure: Option<&'static Figure>,
}

/// Every figure an objective can name: the `sweep --figures` ones, then
/// `outage-calls`.
pub static MEASURES: std::sync::LazyLock<Vec<Measure>> = std::sync::LazyLock::new(|| {
    let mut all: Vec<Measure> = SWEEP_CHOICES
        .iter()
        .map(|c| Measure {
            name: c.name,
            label: c.figure.label,
            unit: match c.name {
                "fault-p50" | "fault-p99" => Unit::Ms,
                "lag" => Unit::Secs,
                _ => Unit::Count,
            },
            figure: Some(c.figure),
        })
        .collect();
    all.push(Measure {
        name: "outage-calls",
        label: "downstream calls per outage second",
        unit: Unit::PerSec,
        figure: None,
    });
    all
});

impl Measure {
    /// By name.
    pub fn named(name: &str) -> Option<&'static Measure> {
        MEASURES.iter().find(|m| m.name == name)
    }

    /// Its value in one run, whose outage spanned `outage` (a missing
    /// figure, e.g. the recovery lag of a run that never recovered, is
    /// [`Cell::Missing`]).
    pub fn of(&self, run: &Summary, outage: Option<(Duration, Duration)>) -> Cell {
        match self.figure {
            Some(f) => (f.ours)(run),
            None => match outage {
                Some((a, b)) if b > a => {
                    Cell::Ratio(run.calls_during_fault as f64 / (b - a).as_secs_f64())
                }
                _ => Cell::Missing,
            },
        }
    }

    /// A value as its limit would be written (`300ms`, `0.5s`, `5`).
    pub fn show(&self, x: f64) -> String {
        match self.unit {
            Unit::Ms => format!("{x:.1}ms"),
            Unit::Secs => format!("{x:.3}s"),
            Unit::Count | Unit::PerSec => {
                if x.fract() == 0.0 {
                    format!("{x}")
                } else {
                    format!("{x:.2}")
                }
            }
        }
    }
}

/// Whether a figure is to be made small or large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// `min NAME`.
    Min,
    /// `max NAME`.
    Max,
}

/// A limit: `NAME<=VALUE` or `NAME>=VALUE`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// The figure.
    pub measure: &'static Measure,
    /// `true` for `<=` (at most), `false` for `>=` (at least).
    pub at_most: bool,
    /// The bound, in the figure's unit (milliseconds for `Ms`, seconds
    /// for `Secs`).
    pub bound: f64,
}

impl Limit {
    /// How far `x` misses the bound, relative to it (0 when it holds; a
    /// missing value misses by 1000).
    pub fn miss(&self, x: Option<f64>) -> f64 {
        let Some(x) = x else { return 1000.0 };
        let over = if self.at_most {
            x - self.bound
        } else {
            self.bound - x
        };
        (over / self.bound.abs().max(1e-9)).max(0.0)
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.at_most { "<=" } else { ">=" };
        write!(
            f,
            "{}{op}{}",
            self.measure.name,
            self.measure.show(self.bound)
        )
    }
}

/// A parsed `--objective`.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// The figure to minimise or maximise.
    pub target: &'static Measure,
    /// Which.
    pub goal: Goal,
    /// The limits, in the order written.
    pub limits: Vec<Limit>,
}

impl PartialEq for Measure {
    fn eq(&self, other: &Measure) -> bool {
        self.name == other.name
    }
}

fn names() -> String {
    MEASURES
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Objective {
    /// Parses `--objective`: terms separated by commas, each `min NAME`,
    /// `max NAME` (exactly one of these), `NAME<=VALUE` or `NAME>=VALUE`
    /// (`<` and `>` read the same). A latency's or a time's limit has a
    /// unit (`300ms`, `1.5s`); the others are plain numbers.
    ///
    /// # Errors
    ///
    /// A message that starts with `--objective` and names the bad term.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::objective::{Goal, Objective};
    ///
    /// let o = Objective::parse("fault-p99<=300ms, outage-calls<=5, min lost")?;
    /// assert_eq!((o.target.name, o.goal, o.limits.len()), ("lost", Goal::Min, 2));
    /// assert_eq!(o.limits[0].bound, 300.0);
    /// assert_eq!(o.to_string(), "fault-p99<=300.0ms, outage-calls<=5, min lost");
    /// let err = Objective::parse("p99<=300ms, min lost").unwrap_err();
    /// assert!(err.starts_with("--objective") && err.contains("\"p99\""), "{err}");
    /// assert!(Objective::parse("fault-p99<=300").unwrap_err().contains("unit"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(text: &str) -> Result<Objective, String> {
        let bad = |term: &str, why: String| format!("--objective {text:?}: {term:?}: {why}");
        let measure = |term: &str, name: &str| {
            Measure::named(name.trim()).ok_or_else(|| {
                bad(
                    term,
                    format!("no figure {:?} (one of: {})", name.trim(), names()),
                )
            })
        };
        let mut target = None;
        let mut limits = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let goal = if let Some(rest) = term.strip_prefix("min ") {
                Some((Goal::Min, rest))
            } else {
                term.strip_prefix("max ").map(|rest| (Goal::Max, rest))
            };
            if let Some((goal, name)) = goal {
                if target.is_some() {
                    return Err(bad(term, "a second min/max: give exactly one".into()));
                }
                target = Some((measure(term, name)?, goal));
                continue;
            }
            let (name, at_most, value) = if let Some((n, v)) = term.split_once("<=") {
                (n, true, v)
            } else if let Some((n, v)) = term.split_once(">=") {
                (n, false, v)
            } else if let Some((n, v)) = term.split_once('<') {
                (n, true, v)
            } else if let Some((n, v)) = term.split_once('>') {
                (n, false, v)
            } else {
                return Err(bad(
                    term,
                    "expected `min NAME`, `max NAME`, `NAME<=VALUE` or `NAME>=VALUE`".into(),
                ));
            };
            let m = measure(term, name)?;
            let value = value.trim();
            let with_unit = value.ends_with(|c: char| c.is_ascii_alphabetic());
            let bound = match m.unit {
                Unit::Ms | Unit::Secs => {
                    if !with_unit {
                        return Err(bad(
                            term,
                            format!(
                                "{} is a time: write its limit with a unit (e.g. 300ms)",
                                m.name
                            ),
                        ));
                    }
                    let d = parse_value(value).map_err(|e| bad(term, e))?;
                    if m.unit == Unit::Ms {
                        d.as_secs_f64() * 1e3
                    } else {
                        d.as_secs_f64()
                    }
                }
                Unit::Count | Unit::PerSec => value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| {
                        bad(
                            term,
                            format!("{} takes a plain number >= 0, not {value:?}", m.name),
                        )
                    })?,
            };
            limits.push(Limit {
                measure: m,
                at_most,
                bound,
            });
        }
        let (target, goal) = target.ok_or_else(|| {
            format!("--objective {text:?}: no `min NAME` or `max NAME` (the figure to optimise; one of: {})", names())
        })?;
        Ok(Objective {
            target,
            goal,
            limits,
        })
    }

    /// The figures it names: the target, then each limit's.
    pub fn measures(&self) -> Vec<&'static Measure> {
        let mut out = vec![self.target];
        for l in &self.limits {
            if !out.contains(&l.measure) {
                out.push(l.measure);
            }
        }
        out
    }

    /// Scores a candidate from its runs: `value(m)` gives the cells of
    /// figure `m`, one per run.
    pub fn score<'a>(&self, value: impl Fn(&Measure) -> &'a [Cell]) -> Score {
        let median = |m: &Measure| cell_number(Spread::of(value(m)).median);
        let violation: f64 = self.limits.iter().map(|l| l.miss(median(l.measure))).sum();
        let sign = match self.goal {
            Goal::Min => 1.0,
            Goal::Max => -1.0,
        };
        let cells = value(self.target);
        let present: Vec<f64> = cells.iter().filter_map(|c| cell_number(*c)).collect();
        let mean = if present.len() * 2 > cells.len() {
            sign * present.iter().sum::<f64>() / present.len() as f64
        } else {
            f64::INFINITY
        };
        Score {
            violation,
            objective: median(self.target).map_or(f64::INFINITY, |x| sign * x),
            mean,
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.limits {
            write!(f, "{l}, ")?;
        }
        let goal = match self.goal {
            Goal::Min => "min",
            Goal::Max => "max",
        };
        write!(f, "{goal} {}", self.target.name)
    }
}

/// How good a candidate is: lower is better in every field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// How far the medians miss the limits, summed relative to each limit
    /// (0: feasible).
    pub violation: f64,
    /// The objective's median (negated for `max`; infinite when missing).
    pub objective: f64,
    /// Its mean over the runs that have it (negated for `max`).
    pub mean: f64,
}

impl Score {
    /// Every limit holds at the median.
    pub fn feasible(&self) -> bool {
        self.violation == 0.0
    }

    /// Feasible first, by objective then mean; then infeasible, by
    /// violation then objective.
    pub fn rank(&self, other: &Score) -> Ordering {
        (self.violation)
            .total_cmp(&other.violation)
            .then(self.objective.total_cmp(&other.objective))
            .then(self.mean.total_cmp(&other.mean))
    }
}
