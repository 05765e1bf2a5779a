//! `fusebox-lab tune`: the breaker settings that meet an objective for a
//! traffic profile and an outage model, found in virtual time.
//!
//! The profile and the outages are a scenario ([`Scenario`]): its rate or
//! trace, latency, worker pool and retries, and its faults, whose times are
//! drawn from the seed (a fault's `jitter`). The search runs over a
//! [`Space`] of settings ([`space`]) and ranks them by an [`Objective`]
//! ([`objective`]): every candidate runs on the same `K` seeds (the same
//! outages, seed for seed), and is scored on its figures' medians over them.
//!
//! The search ([`search`]) is a random sample of the space's coarse grid
//! (every tenth rung of each ladder), then a local refinement from the best
//! few: a pattern search that tries one rung of one setting up or down at a
//! time, moving to the best neighbour that scores better, and halving its
//! steps down to single rungs when none does. The winner is then run on
//! fresh seeds, not used in the search ([`evaluate`]), for its robustness:
//! its figures' p10-p90 over those outages.
//!
//! [`grid`] lists every point of a (small) space, for a check of the search
//! against an exhaustive grid.

pub mod metrics;
pub mod objective;
pub mod space;

use crate::engine::{self, Mode};
use crate::report::model::Cell;
use crate::report::runs::Spread;
use crate::report::Summary;
use crate::scenario::{Scenario, StrategySpec};
use objective::{Goal, Measure, Objective, Score, MEASURES};
use space::{FleetSettings, Point, Space, FLEET_KEYS, KEYS};
use std::collections::HashMap;
use std::ops::Range;

/// Most points [`grid`] lists.
pub const MAX_GRID: usize = 1_000_000;

/// A point of the space, run on some seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The settings.
    pub point: Point,
    /// Per figure of [`MEASURES`], one cell per run.
    pub cells: Vec<Vec<Cell>>,
    /// Its score.
    pub score: Score,
}

impl Candidate {
    /// In how many of its runs every limit of `objective` holds.
    pub fn runs_within_limits(&self, objective: &Objective) -> usize {
        let runs = self.cells.first().map_or(0, Vec::len);
        (0..runs)
            .filter(|&r| {
                objective.limits.iter().all(|l| {
                    let x = crate::report::runs::cell_number(self.cells_of(l.measure)[r]);
                    l.miss(x) == 0.0
                })
            })
            .count()
    }

    /// The cells of figure `m`, one per run.
    pub fn cells_of(&self, m: &Measure) -> &[Cell] {
        &self.cells[measure_index(m)]
    }

    /// Figure `m`'s median [p10-p90] over the runs.
    pub fn spread(&self, m: &Measure) -> Spread {
        Spread::of(self.cells_of(m))
    }
}

/// Runs every point of `points` on each seed of `seeds` (the scenario
/// drawn again for each: [`Scenario::with_seed`]) in virtual time, on up
/// to `jobs` threads, and scores it; `tick` is called with the number of
/// runs done after each point's runs (from whichever thread ran it).
///
/// # Errors
///
/// A point the library refuses (the space checks its rungs, so not one of
/// its own).
///
/// # Examples
///
/// ```
/// use fusebox_lab::engine::{self, Mode};
/// use fusebox_lab::report::Summary;
/// use fusebox_lab::scenario::Scenario;
/// use fusebox_lab::tune::objective::Objective;
/// use fusebox_lab::tune::space::{Point, Space};
/// use fusebox_lab::tune::evaluate;
///
/// let sc = &Scenario::embedded()[0];
/// let space = Space::default_for(8);
/// let objective = Objective::parse("min lost")?;
/// // consecutive_failures = 5, open_for = 500ms, one probe: the file's "fusebox".
/// let point = space.normal(Point { policy: 0, at: [4, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0] });
/// let c = &evaluate(sc, &space, &objective, &[point], 1..2, 1, |_| {})?[0];
/// let file = Summary::of(sc, &engine::run(sc, &sc.strategies[2], Mode::Virtual, None)?);
/// assert_eq!(c.spread(objective.target).text(), format!("{0} [{0}-{0}]", file.lost_after_recovery));
/// # Ok::<(), String>(())
/// ```
pub fn evaluate(
    scenario: &Scenario,
    space: &Space,
    objective: &Objective,
    points: &[Point],
    seeds: Range<u64>,
    jobs: usize,
    tick: impl Fn(u64) + Sync,
) -> Result<Vec<Candidate>, String> {
    let specs = points
        .iter()
        .enumerate()
        .map(|(i, p)| Ok((space.spec(p, format!("candidate {i}"))?, space.fleet(p))))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(points
        .iter()
        .zip(run_specs(scenario, objective, &specs, seeds, jobs, tick))
        .map(|(p, (cells, score))| Candidate {
            point: *p,
            cells,
            score,
        })
        .collect())
}

/// Runs every strategy of `specs` on each seed of `seeds` in virtual
/// time (with its fleet settings, if it has any, in the scenario's
/// `[fleet]`), on up to `jobs` threads: per strategy, per figure of
/// [`MEASURES`], one cell per run, and its score.
pub fn run_specs(
    scenario: &Scenario,
    objective: &Objective,
    specs: &[(StrategySpec, Option<FleetSettings>)],
    seeds: Range<u64>,
    jobs: usize,
    tick: impl Fn(u64) + Sync,
) -> Vec<(Vec<Vec<Cell>>, Score)> {
    let jobs = jobs.clamp(1, specs.len().max(1));
    let runs = (seeds.end - seeds.start) as usize;
    // Each thread takes every `jobs`-th strategy.
    let per_thread: Vec<Vec<(usize, Vec<Vec<Cell>>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|j| {
                let (seeds, tick) = (seeds.clone(), &tick);
                s.spawn(move || {
                    let mut out: Vec<(usize, Vec<Vec<Cell>>)> = (j..specs.len())
                        .step_by(jobs)
                        .map(|i| (i, vec![Vec::with_capacity(runs); MEASURES.len()]))
                        .collect();
                    for seed in seeds {
                        let mut sc = scenario.with_seed(seed);
                        let own = FleetSettings::of(&sc);
                        let outage = sc.fault_span();
                        for (i, cells) in &mut out {
                            let (spec, fleet) = &specs[*i];
                            // Each run with its own fleet settings, or the file's.
                            if let Some(f) = fleet.or(own) {
                                f.set(&mut sc);
                            }
                            let run = engine::run(&sc, spec, Mode::Virtual, None)
                                .expect("virtual runs do not fail");
                            let sum = Summary::of(&sc, &run);
                            for (m, c) in MEASURES.iter().zip(cells.iter_mut()) {
                                c.push(m.of(&sum, outage));
                            }
                        }
                        tick(out.len() as u64);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a tune thread panicked"))
            .collect()
    });
    let mut cells: Vec<Vec<Vec<Cell>>> = vec![Vec::new(); specs.len()];
    for (i, c) in per_thread.into_iter().flatten() {
        cells[i] = c;
    }
    cells
        .into_iter()
        .map(|cells| {
            let score = objective.score(|m| &cells[measure_index(m)]);
            (cells, score)
        })
        .collect()
}

/// Where figure `m` is in [`MEASURES`].
fn measure_index(m: &Measure) -> usize {
    MEASURES
        .iter()
        .position(|x| x.name == m.name)
        .expect("a figure of MEASURES")
}

/// How [`search`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The seeds every candidate runs on (`K` of them).
    pub seeds: (u64, u64),
    /// Points of the coarse grid drawn at random.
    pub budget: usize,
    /// How many of the best start a local refinement.
    pub starts: usize,
    /// Threads.
    pub jobs: usize,
    /// What the random draws of the coarse grid are made from.
    pub draw_seed: u64,
}

impl Options {
    /// The seeds, as a range.
    pub fn seed_range(&self) -> Range<u64> {
        self.seeds.0..self.seeds.1
    }
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Search {
    /// Every candidate run, in the order they were.
    pub candidates: Vec<Candidate>,
    /// Of those, how many were drawn from the coarse grid (the rest are
    /// the refinement's).
    pub coarse: usize,
}

impl Search {
    /// The candidates, best first ([`Score::rank`]).
    pub fn ranked(&self) -> Vec<&Candidate> {
        let mut v: Vec<&Candidate> = self.candidates.iter().collect();
        v.sort_by(|a, b| a.score.rank(&b.score).then(a.point.cmp(&b.point)));
        v
    }

    /// The best candidate.
    pub fn best(&self) -> &Candidate {
        self.ranked()[0]
    }
}

/// The coarse step of a ladder of `len` rungs: a tenth of it.
fn coarse_step(len: usize) -> usize {
    len.div_ceil(10).max(1)
}

/// SplitMix64: the draws of the coarse grid.
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }
}

/// Searches `space` for the best point by `objective` on `scenario`:
/// `options.budget` points of the coarse grid drawn at random, then a
/// local refinement from the best `options.starts` (see the module's
/// docs). `tick` is called with the runs done, as they are.
///
/// # Errors
///
/// A point the library refuses ([`evaluate`]).
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::{Scenario, EMBEDDED};
/// use fusebox_lab::tune::objective::Objective;
/// use fusebox_lab::tune::space::Space;
/// use fusebox_lab::tune::{search, Options};
///
/// let text = EMBEDDED[0].1.replace("outcome = \"error\"", "outcome = \"error\"\njitter = \"400ms\"");
/// let sc = Scenario::parse("random.toml", &text).map_err(|e| e.to_string())?;
/// let mut space = Space::default_for(8);
/// space.set("timeout=none")?;
/// space.set("max_concurrent=none")?;
/// let objective = Objective::parse("outage-calls<=10, min lost")?;
/// let options = Options { seeds: (1, 4), budget: 20, starts: 1, jobs: 1, draw_seed: 1 };
/// let found = search(&sc, &space, &objective, &options, |_| {})?;
/// assert!(found.best().score.feasible());
/// assert!(found.candidates.len() > 20); // the coarse draws, then the refinement's
/// # Ok::<(), String>(())
/// ```
pub fn search(
    scenario: &Scenario,
    space: &Space,
    objective: &Objective,
    options: &Options,
    tick: impl Fn(u64) + Sync,
) -> Result<Search, String> {
    let seeds = options.seed_range();
    let mut seen: HashMap<Point, usize> = HashMap::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    let run = |points: Vec<Point>,
               seen: &mut HashMap<Point, usize>,
               candidates: &mut Vec<Candidate>|
     -> Result<(), String> {
        let mut fresh: Vec<Point> = Vec::new();
        for p in points {
            if !seen.contains_key(&p) && !fresh.contains(&p) {
                fresh.push(p);
            }
        }
        for c in evaluate(
            scenario,
            space,
            objective,
            &fresh,
            seeds.clone(),
            options.jobs,
            &tick,
        )? {
            seen.insert(c.point, candidates.len());
            candidates.push(c);
        }
        Ok(())
    };
    // The coarse grid, drawn at random.
    let mut draws = Draws(options.draw_seed);
    let steps: Vec<usize> = space
        .dims
        .iter()
        .map(|d| coarse_step(d.values.len()))
        .collect();
    let coarse: Vec<Point> = (0..options.budget.max(1))
        .map(|_| {
            let mut at = [0; KEYS.len()];
            for (d, dim) in space.dims.iter().enumerate() {
                // The fleet's ladders of a space without one take no draw:
                // the draws of such a space are what they were without them.
                if d >= FLEET_KEYS && dim.values.len() == 1 {
                    continue;
                }
                let rungs = dim.values.len().div_ceil(steps[d]);
                at[d] = (draws.below(rungs) * steps[d]).min(dim.values.len() - 1);
            }
            space.normal(Point {
                policy: draws.below(space.policies.len()),
                at,
            })
        })
        .collect();
    run(coarse, &mut seen, &mut candidates)?;
    let coarse = candidates.len();
    // Local refinement from the best few (distinct points).
    let limit = coarse * 4 + 200;
    let mut ranked: Vec<usize> = (0..candidates.len()).collect();
    ranked.sort_by(|&a, &b| candidates[a].score.rank(&candidates[b].score));
    for &start in ranked.iter().take(options.starts.max(1)) {
        let mut here = start;
        let mut step = steps.clone();
        let mut first = true;
        while candidates.len() < limit {
            let p = candidates[here].point;
            let mut next: Vec<Point> = Vec::new();
            for d in space.used(&p) {
                let len = space.dims[d].values.len();
                for up in [false, true] {
                    let mut q = p;
                    q.at[d] = if up {
                        (p.at[d] + step[d]).min(len - 1)
                    } else {
                        p.at[d].saturating_sub(step[d])
                    };
                    next.push(space.normal(q));
                }
            }
            if first {
                // The other policies, at the same rungs of what they share.
                for policy in 0..space.policies.len() {
                    next.push(space.normal(Point { policy, ..p }));
                }
                first = false;
            }
            run(next.clone(), &mut seen, &mut candidates)?;
            let best = next
                .iter()
                .map(|q| seen[q])
                .min_by(|&a, &b| candidates[a].score.rank(&candidates[b].score))
                .unwrap_or(here);
            if candidates[best].score.rank(&candidates[here].score).is_lt() {
                here = best;
            } else if step.iter().all(|s| *s == 1) {
                break;
            } else {
                for s in &mut step {
                    *s = (*s).div_ceil(2);
                }
            }
        }
    }
    Ok(Search { candidates, coarse })
}

/// Every point of `space`: each policy, every rung of each ladder it
/// reads.
///
/// # Errors
///
/// More than [`MAX_GRID`] points.
///
/// # Examples
///
/// ```
/// use fusebox_lab::tune::space::{Policy, Space};
/// use fusebox_lab::tune::grid;
///
/// let mut space = Space::default_for(8);
/// space.policies = vec![Policy::Consecutive];
/// for fixed in ["half_open_probes=1", "successes_to_close=1", "timeout=none", "max_concurrent=none"] {
///     space.set(fixed)?;
/// }
/// assert_eq!(grid(&space)?.len(), 30 * 200);
/// # Ok::<(), String>(())
/// ```
pub fn grid(space: &Space) -> Result<Vec<Point>, String> {
    if space.size() > MAX_GRID as f64 {
        return Err(format!(
            "--grid: the space has {:.0} points, more than {MAX_GRID}: narrow it with --space or --policies",
            space.size()
        ));
    }
    let mut out = Vec::new();
    for policy in 0..space.policies.len() {
        let base = Point {
            policy,
            at: [0; KEYS.len()],
        };
        let used = space.used(&base);
        let mut p = base;
        loop {
            out.push(p);
            // The next rung, odometer-wise.
            let mut carried = true;
            for &d in &used {
                p.at[d] += 1;
                if p.at[d] < space.dims[d].values.len() {
                    carried = false;
                    break;
                }
                p.at[d] = 0;
            }
            if carried {
                break;
            }
        }
    }
    // A count window's min_calls above the window: one point, kept once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(space.normal(*p)));
    Ok(out.into_iter().map(|p| space.normal(p)).collect())
}

/// The candidates no other one beats on every figure of `objective`
/// (medians: the target in its direction, each limited figure towards its
/// limit), best first; of points that tie on all, the best-ranked only.
/// Its first is what `tune` chooses: it scores as the best-ranked does on
/// the medians (limits missed by as much, the same target), which another
/// that ties on the target and beats it on a limit's figure may displace
/// (the ranking breaks such a tie on the target's mean over the runs).
pub fn pareto<'a>(objective: &Objective, ranked: &[&'a Candidate]) -> Vec<&'a Candidate> {
    let coords = |c: &Candidate| -> Vec<f64> {
        let at = |m: &Measure, lower: bool| {
            let x = crate::report::runs::cell_number(c.spread(m).median);
            match (x, lower) {
                (Some(x), true) => x,
                (Some(x), false) => -x,
                (None, _) => f64::INFINITY,
            }
        };
        let mut v = vec![at(objective.target, objective.goal == Goal::Min)];
        v.extend(objective.limits.iter().map(|l| at(l.measure, l.at_most)));
        v
    };
    let all: Vec<Vec<f64>> = ranked.iter().map(|c| coords(c)).collect();
    let mut out = Vec::new();
    for (i, c) in ranked.iter().enumerate() {
        let beaten = all.iter().enumerate().any(|(j, o)| {
            let le = o.iter().zip(&all[i]).all(|(a, b)| a <= b);
            let lt = o.iter().zip(&all[i]).any(|(a, b)| a < b);
            j != i && le && (lt || j < i)
        });
        if !beaten {
            out.push(*c);
        }
    }
    out
}
