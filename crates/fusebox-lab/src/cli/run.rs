//! `fusebox-lab run`: every strategy of every scenario, reported.

use super::serve::{self, Exported, Server};
use super::{check_output, progress, share_through, CliError, RunArgs};
use crate::engine::{self, Mode};
use crate::report::runs::{self, RunsReport};
use crate::report::{self, ScenarioReport};
use crate::scenario::{format_duration, Scenario};
use indicatif::ProgressBar;
use std::io::Write;

/// Runs every strategy of every scenario; returns the reports in order.
fn run_all(
    scenarios: Vec<Scenario>,
    mode: Mode,
    exported: Option<&Exported>,
    pb: &ProgressBar,
) -> Result<Vec<ScenarioReport>, String> {
    scenarios
        .into_iter()
        .map(|sc| {
            let name = sc.name.clone();
            ScenarioReport::run(
                sc,
                mode,
                exported.map(|e| &e.breakers),
                |strategy| pb.set_message(format!("{name} / {strategy}")),
                || {
                    pb.inc(1);
                    if let Some(e) = exported {
                        e.progress.tick();
                    }
                },
            )
        })
        .collect()
}

/// `run --runs N`: each scenario for N seeds, its figures' spreads.
fn run_many(scenarios: Vec<Scenario>, mode: Mode, n: u64, args: &RunArgs) -> Result<(), CliError> {
    for sc in &scenarios {
        runs::seeds(sc.seed, n).map_err(CliError::BadInput)?;
    }
    let total: u64 = scenarios
        .iter()
        .map(|s| s.strategies.len() as u64 * n)
        .sum();
    let pb = progress(total, args.quiet, "running");
    let reports: Result<Vec<RunsReport>, String> = scenarios
        .into_iter()
        .map(|sc| {
            pb.set_message(sc.name.clone());
            RunsReport::run(sc, mode, n, || pb.inc(1))
        })
        .collect();
    pb.finish_and_clear();
    let reports = reports.map_err(CliError::Io)?;
    for r in &reports {
        super::emit(&format!("{}\n", r.text()))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, runs::json_text(&reports))
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

pub(super) fn cmd_run(args: RunArgs) -> Result<(), CliError> {
    let mode = args.clock.unwrap_or(Mode::Real);
    if args.runs.is_some() {
        super::refuse_real_runs(mode)?;
        if args.html.is_some() {
            return Err(CliError::BadInput(
                "--html draws one run's requests: with --runs, write --json".into(),
            ));
        }
    }
    if args.serve.is_some() && mode != Mode::Real {
        return Err(CliError::BadInput(
            "--serve needs a real-mode run (--clock real)".into(),
        ));
    }
    // Before anything runs: a report that cannot be written fails now, not
    // after the whole run.
    if let Some(path) = &args.json {
        check_output("--json", path)?;
    }
    if let Some(path) = &args.html {
        check_output("--html", path)?;
    }
    let mut scenarios: Vec<Scenario> = if args.scenarios.is_empty() {
        Scenario::embedded()
    } else {
        args.scenarios
            .iter()
            .map(|p| Scenario::load(p).map_err(|e| CliError::BadInput(e.to_string())))
            .collect::<Result<_, _>>()?
    };
    if let Some(url) = &args.redis {
        share_through(&mut scenarios, url)?;
    }
    if let Some(seed) = args.seed {
        scenarios = scenarios.iter().map(|sc| sc.with_seed(seed)).collect();
    }
    for sc in &scenarios {
        engine::check(sc, mode).map_err(CliError::BadInput)?;
    }
    if let Some(n) = args.runs {
        return run_many(scenarios, mode, n, &args);
    }
    let total: usize = scenarios
        .iter()
        .map(|s: &Scenario| s.strategies.len())
        .sum();
    // Serving starts before the first run, so a scraper sees all of it.
    let served = match args.serve {
        Some(addr) => {
            let mut exported = Exported::new();
            exported.progress.plan(total);
            if let Ok(token) = std::env::var(serve::CONTROL_TOKEN_ENV) {
                exported.controls = fusebox::dashboard::Controls::token(token);
                serve::log_controls();
            }
            // `/metrics`, `/breakers`, `/status` and the live `/dashboard/`.
            let routes = serve::router(exported.clone())
                .map_err(|e| CliError::BadInput(format!("{}: {e}", serve::CONTROL_TOKEN_ENV)))?;
            let server = Server::start(addr, routes)
                .map_err(|e| CliError::Io(format!("cannot serve on {addr}: {e}")))?;
            eprintln!(
                "serving metrics on http://{0}/metrics and the live dashboard on http://{0}/dashboard",
                server.local_addr()
            );
            Some((exported, server))
        }
        None => None,
    };
    let pb = progress(total as u64, args.quiet, "running");
    let reports = run_all(scenarios, mode, served.as_ref().map(|s| &s.0), &pb);
    pb.finish_and_clear();
    let reports = reports.map_err(CliError::Io)?;
    for r in &reports {
        super::emit(&format!("{}\n", report::table::render_scenario(r)))?;
    }
    // Fleets that differ only in their `[fleet]` settings, side by side.
    let side_by_side = report::table::render_side_by_side(&reports);
    if !side_by_side.is_empty() {
        super::emit(&format!("{side_by_side}\n"))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, report::json::text(&reports))
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::html::page(&reports))
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some((_, server)) = served {
        let _ = std::io::stdout().flush();
        let addr = server.local_addr();
        match args.linger {
            Some(d) => {
                eprintln!(
                    "runs done; serving http://{addr}/metrics for {} more",
                    format_duration(d)
                );
                std::thread::sleep(d);
                server.stop();
            }
            None => {
                eprintln!("runs done; serving http://{addr}/metrics until interrupted (Ctrl-C)");
                server
                    .wait()
                    .map_err(|e| CliError::Io(format!("serving on {addr}: {e}")))?;
            }
        }
    }
    Ok(())
}
