//! `fusebox-lab tune`: a scenario's traffic and outage model, an
//! objective, and the breaker settings that meet it ([`crate::tune`]),
//! printed as a Pareto table and a `[dependencies.NAME]` block for
//! fusebox's registry.

use super::{progress, share_through, CliError, TuneArgs};
use crate::engine::{self, Mode};
use crate::report::runs::{self, describe, seeds_text};
use crate::report::table::render;
use crate::report::Summary;
use crate::scenario::{parse_duration, Scenario, StrategyKind};
use crate::tune::metrics::{read_source, Profile, Scrape};
use crate::tune::objective::{Objective, DEFAULT_OBJECTIVE, MEASURES};
use crate::tune::space::{Policy, Space};
use crate::tune::{grid, pareto, run_specs, search, Candidate, Options};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// The scenario `tune --from-metrics` without a scenario file starts from:
/// the article's service (8 workers) with 0.5-5 s outages.
const TEMPLATE: (&str, &str) = (
    "seed000-50rps-outage.toml",
    include_str!("../../scenarios/seed000-50rps-outage.toml"),
);

/// The scenario: the file's, or the template's, with the scrape's profile.
fn scenario(args: &TuneArgs) -> Result<Scenario, CliError> {
    let bad = CliError::BadInput;
    let mut sc = match &args.scenario {
        Some(path) => Scenario::load(path).map_err(|e| bad(e.to_string()))?,
        None if !args.from_metrics.is_empty() => {
            Scenario::parse(TEMPLATE.0, TEMPLATE.1).map_err(|e| bad(e.to_string()))?
        }
        None => {
            return Err(bad(
                "tune needs a scenario file (its traffic and outages), or --from-metrics with --dependency".into(),
            ))
        }
    };
    if let Some(url) = &args.redis {
        share_through(std::slice::from_mut(&mut sc), url)?;
    }
    if !args.from_metrics.is_empty() {
        let name = args.dependency.as_deref().ok_or_else(|| {
            bad("--from-metrics needs --dependency NAME: the breaker whose series to read".into())
        })?;
        let span = args.metrics_span;
        let (before, after) = match args.from_metrics.as_slice() {
            [one] if one.starts_with("http://") || one.starts_with("https://") => {
                let first = Scrape::of(&read_source(one).map_err(bad)?, name).map_err(bad)?;
                std::thread::sleep(span);
                let second = Scrape::of(&read_source(one).map_err(bad)?, name).map_err(bad)?;
                (Some(first), second)
            }
            [one] => (
                None,
                Scrape::of(&read_source(one).map_err(bad)?, name).map_err(bad)?,
            ),
            [a, b] => (
                Some(Scrape::of(&read_source(a).map_err(bad)?, name).map_err(bad)?),
                Scrape::of(&read_source(b).map_err(bad)?, name).map_err(bad)?,
            ),
            _ => return Err(bad("--from-metrics: at most two scrapes".into())),
        };
        let profile = Profile::between(before.as_ref(), &after, span).map_err(bad)?;
        sc = profile.apply(&sc).map_err(bad)?;
    }
    if sc.hosts > 1 {
        return Err(bad(format!(
            "scenario {:?}: tune takes a service calling one host (no hosts)",
            sc.name
        )));
    }
    if sc.downstream.faults.is_empty() {
        return Err(bad(format!(
            "scenario {:?}: no [[downstream.faults]]: tune needs an outage to tune for",
            sc.name
        )));
    }
    if !sc.is_random() {
        eprintln!(
            "note: nothing in scenario {:?} is drawn from the seed: every outage is the same \
             (give its fault an onset/length range or a jitter)",
            sc.name
        );
    }
    Ok(sc)
}

/// The `tune` subcommand.
pub(super) fn cmd_tune(args: &TuneArgs) -> Result<(), CliError> {
    let bad = CliError::BadInput;
    let objective =
        Objective::parse(args.objective.as_deref().unwrap_or(DEFAULT_OBJECTIVE)).map_err(bad)?;
    let sc = scenario(args)?;
    let mut space = Space::default_for(sc.workers);
    if sc.shares_trips() {
        space = space.with_fleet(sc.replicas());
    }
    if let Some(list) = &args.policies {
        space.policies = Policy::parse_list(list).map_err(bad)?;
    }
    for spec in &args.space {
        space.set(spec).map_err(bad)?;
    }
    if args.runs == 0 || args.check_runs == 0 {
        return Err(bad("--runs and --check-runs take at least 1".into()));
    }
    let first = args.seed.unwrap_or(sc.seed);
    let all = runs::seeds(first, args.runs + args.check_runs)
        .map_err(|e| bad(e.replace("--runs", "--runs + --check-runs")))?;
    let search_seeds = all.start..all.start + args.runs;
    let fresh = search_seeds.end..all.end;
    for (flag, path) in [
        ("--toml", &args.toml),
        ("--csv", &args.csv),
        ("--json", &args.json),
    ] {
        if let Some(path) = path {
            super::check_output(flag, path)?;
        }
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    let started = Instant::now();
    let estimate = if args.grid {
        space.size() as u64
    } else {
        args.budget as u64 * 2
    } * args.runs;
    let pb = progress(estimate, args.quiet, "tune");
    let tick = |n: u64| {
        pb.inc(n);
        if pb.position() > pb.length().unwrap_or(0) {
            pb.set_length(pb.position() * 2);
        }
    };
    let options = Options {
        seeds: (search_seeds.start, search_seeds.end),
        budget: args.budget,
        starts: args.starts,
        jobs,
        draw_seed: first,
    };
    let (found, how) = if args.grid {
        let points = grid(&space).map_err(bad)?;
        let n = points.len();
        let candidates = crate::tune::evaluate(
            &sc,
            &space,
            &objective,
            &points,
            search_seeds.clone(),
            jobs,
            tick,
        )
        .map_err(bad)?;
        (
            crate::tune::Search {
                candidates,
                coarse: n,
            },
            format!("every point of the grid ({n})"),
        )
    } else {
        let s = search(&sc, &space, &objective, &options, tick).map_err(bad)?;
        let how = format!(
            "{} points of the coarse grid drawn at random, then {} by local refinement",
            s.coarse,
            s.candidates.len() - s.coarse
        );
        (s, how)
    };
    let searched = started.elapsed();
    let ranked = found.ranked();
    // The chosen settings: the best of the Pareto set (see `pareto`).
    let front = pareto(&objective, &ranked);
    let best = front.first().copied().unwrap_or(ranked[0]);
    // The winner and the file's own breakers, on fresh outages.
    let mut specs = vec![(
        space.spec(&best.point, "chosen".into()).map_err(bad)?,
        space.fleet(&best.point),
    )];
    specs.extend(
        sc.strategies
            .iter()
            .filter(|s| !matches!(s.kind, StrategyKind::Peer(_)))
            .map(|s| (s.clone(), None)),
    );
    let checked = run_specs(&sc, &objective, &specs, fresh.clone(), jobs, |n| pb.inc(n));
    pb.finish_and_clear();
    let chosen = Candidate {
        point: best.point,
        cells: checked[0].0.clone(),
        score: checked[0].1,
    };

    let mut out = String::new();
    let _ = writeln!(out, "== tune {} (virtual time): {}", sc.name, describe(&sc));
    let _ = writeln!(
        out,
        "   objective: {objective}; each candidate on {} (the same outages for every candidate), scored on its medians",
        seeds_text(&search_seeds)
    );
    let runs_done: u64 = found.candidates.len() as u64 * args.runs;
    let _ = writeln!(
        out,
        "   searched {how}: {} candidates, {runs_done} runs in {:.1} s ({:.0} points in the space)",
        found.candidates.len(),
        searched.as_secs_f64(),
        space.size()
    );
    let shown: Vec<&Candidate> = front.iter().take(args.show.max(1)).copied().collect();
    let _ = writeln!(
        out,
        "-- Pareto set: {} of the {} candidates (none beats them on every figure); {} shown, best first; \
         * = chosen, x = misses a limit at the median; cells: median [p10-p90] over the {} search runs",
        front.len(),
        found.candidates.len(),
        shown.len(),
        args.runs
    );
    let measures = objective.measures();
    let mut headers: Vec<&str> = vec!["settings"];
    headers.extend(measures.iter().map(|m| m.name));
    let labels: Vec<String> = shown
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mark = if std::ptr::eq(*c, best) {
                "*"
            } else if c.score.feasible() {
                " "
            } else {
                "x"
            };
            format!("{}{mark}", i + 1)
        })
        .collect();
    let cells: Vec<Vec<String>> = shown
        .iter()
        .map(|c| {
            let mut row = vec![space.describe(&c.point)];
            row.extend(measures.iter().map(|m| c.spread(m).text()));
            row
        })
        .collect();
    render(&mut out, &labels, &headers, &cells);
    if !best.score.feasible() {
        let _ = writeln!(
            out,
            "   note: no candidate meets every limit at the median; the chosen one misses them least"
        );
    }
    let _ = writeln!(
        out,
        "-- chosen: {}\n   on {} fresh outages ({}; not used in the search): median [p10-p90]",
        space.describe(&best.point),
        args.check_runs,
        seeds_text(&fresh)
    );
    let figures = robustness(&objective, &chosen);
    for line in &figures {
        let _ = writeln!(out, "   {line}");
    }
    if checked.len() > 1 {
        let _ = writeln!(
            out,
            "-- the scenario's own strategies on the same fresh outages, beside the chosen settings"
        );
        let mut headers: Vec<&str> = vec!["chosen"];
        headers.extend(specs[1..].iter().map(|s| s.0.name.as_str()));
        let labels: Vec<String> = measures.iter().map(|m| m.name.to_string()).collect();
        let cells: Vec<Vec<String>> = measures
            .iter()
            .map(|m| {
                checked
                    .iter()
                    .map(|(cells, _)| {
                        runs::Spread::of(&cells[MEASURES.iter().position(|x| x == *m).unwrap_or(0)])
                            .text()
                    })
                    .collect()
            })
            .collect();
        render(&mut out, &labels, &headers, &cells);
    }
    if args.verify {
        let _ = writeln!(
            out,
            "{}",
            verify(&sc, &space, best, fresh.start).map_err(bad)?
        );
    }
    let dependency = args.dependency.as_deref().unwrap_or("dependency");
    let mut block = String::new();
    let _ = writeln!(
        block,
        "# fusebox-lab tune, scenario {}: {objective}",
        sc.name
    );
    for line in &figures {
        let _ = writeln!(block, "# {line}");
    }
    block.push_str(&space.toml_block(&best.point, dependency, &sc.client));
    let _ = writeln!(
        out,
        "-- for fusebox's registry (Fusebox::from_config / FuseboxConfig::from_toml):"
    );
    out.push_str(&block);
    super::emit(&out)?;
    let write = super::write_output;
    if let Some(path) = &args.toml {
        write("--toml", path, &block)?;
    }
    if let Some(path) = &args.csv {
        write("--csv", path, &pareto_csv(&space, &measures, &front, best))?;
    }
    if let Some(path) = &args.json {
        let settings = |c: &Candidate| settings_json(&space, &c.point);
        let figures = |c: &Candidate| {
            let mut o = serde_json::Map::new();
            for m in &measures {
                o.insert(m.name.into(), c.spread(m).json());
            }
            serde_json::Value::Object(o)
        };
        let set: Vec<serde_json::Value> = front
            .iter()
            .enumerate()
            .map(|(i, c)| {
                serde_json::json!({
                    "rank": i + 1,
                    "chosen": std::ptr::eq(*c, best),
                    "feasible": c.score.feasible(),
                    "settings": settings(c),
                    "figures": figures(c),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "scenario": sc.name,
            "traffic": describe(&sc),
            "objective": objective.to_string(),
            "search": {
                "how": how,
                "candidates": found.candidates.len(),
                "runs_each": args.runs,
                "seeds": [search_seeds.start, search_seeds.end - 1],
                "seconds": searched.as_secs_f64(),
            },
            "pareto": set,
            "chosen": {
                "settings": settings(&chosen),
                "fresh_seeds": [fresh.start, fresh.end - 1],
                "figures": figures(&chosen),
                "runs_within_limits": chosen.runs_within_limits(&objective),
                "feasible": chosen.score.feasible(),
                "toml": block,
            },
        });
        write(
            "--json",
            path,
            &(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"),
        )?;
    }
    Ok(())
}

/// The settings of `point` as JSON: `policy`, then each of
/// [`Space::settings`] (`null`: unset).
fn settings_json(space: &Space, point: &crate::tune::space::Point) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    o.insert("policy".into(), space.policies[point.policy].name().into());
    for (k, v) in space.settings(point) {
        o.insert(
            k.into(),
            v.map_or(serde_json::Value::Null, |v| {
                serde_json::to_value(v).unwrap_or_default()
            }),
        );
    }
    serde_json::Value::Object(o)
}

/// The Pareto set as CSV: `rank,chosen,feasible,settings`, then each
/// figure's `NAME_median,NAME_p10,NAME_p90` (empty when no run has it).
fn pareto_csv(
    space: &Space,
    measures: &[&crate::tune::objective::Measure],
    front: &[&Candidate],
    best: &Candidate,
) -> String {
    use crate::report::sweep::{field, number};
    let mut out = String::from("rank,chosen,feasible,settings");
    for m in measures {
        let _ = write!(out, ",{0}_median,{0}_p10,{0}_p90", m.name);
    }
    out.push('\n');
    for (i, c) in front.iter().enumerate() {
        let _ = write!(
            out,
            "{},{},{},{}",
            i + 1,
            std::ptr::eq(*c, best),
            c.score.feasible(),
            field(&space.describe(&c.point))
        );
        for m in measures {
            let s = c.spread(m);
            let _ = write!(
                out,
                ",{},{},{}",
                number(s.median),
                number(s.p10),
                number(s.p90)
            );
        }
        out.push('\n');
    }
    out
}

/// The chosen settings' figures on the fresh outages, one line each, and
/// how often every limit held.
fn robustness(objective: &Objective, chosen: &Candidate) -> Vec<String> {
    let mut lines: Vec<String> = objective
        .measures()
        .iter()
        .map(|m| format!("{}: {} ({})", m.name, chosen.spread(m).text(), m.label))
        .collect();
    if !objective.limits.is_empty() {
        let runs = chosen.cells.first().map_or(0, Vec::len);
        lines.push(format!(
            "every limit held in {} of the {runs} outages; at the median: {}",
            chosen.runs_within_limits(objective),
            if chosen.score.feasible() { "yes" } else { "no" }
        ));
    }
    lines
}

/// The chosen settings run once with real threads (`--verify`), beside
/// the same outage in virtual time.
fn verify(sc: &Scenario, space: &Space, best: &Candidate, seed: u64) -> Result<String, String> {
    let mut sc = sc.with_seed(seed);
    if let Some(f) = space.fleet(&best.point) {
        f.set(&mut sc);
    }
    let spec = space.spec(&best.point, "chosen".into())?;
    // The chosen settings alone: the file's own strategies are not run
    // (nor checked for real mode: a shared fleet's peers cannot be).
    sc.strategies = vec![spec.clone()];
    let outage = sc.fault_span();
    let real = Summary::of(&sc, &engine::run(&sc, &spec, Mode::Real, None)?);
    let virt = Summary::of(&sc, &engine::run(&sc, &spec, Mode::Virtual, None)?);
    let mut out = format!(
        "-- --verify: the chosen settings with real threads, on the outage of seed {seed} ({})\n",
        outage.map_or("no fault".into(), |(a, b)| format!(
            "{}..{} s",
            crate::report::secs(a),
            crate::report::secs(b)
        ))
    );
    let labels: Vec<String> = MEASURES.iter().map(|m| m.name.to_string()).collect();
    let cells: Vec<Vec<String>> = MEASURES
        .iter()
        .map(|m| vec![m.of(&virt, outage).text(), m.of(&real, outage).text()])
        .collect();
    render(&mut out, &labels, &["virtual", "real"], &cells);
    Ok(out.trim_end().to_string())
}

/// `--metrics-span`: a duration.
pub(super) fn parse_span(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err("the span must be longer than 0".into());
    }
    Ok(d)
}
