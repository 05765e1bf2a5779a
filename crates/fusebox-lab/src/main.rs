//! `fusebox-lab`: reproduces seed 000's circuit-breaker experiment with real
//! threads (or in virtual time) and compares strategies side by side.
//!
//! With no arguments it runs the embedded scenarios `seed000-50rps` and
//! `seed000-100rps` in real mode and prints the article's figures beside ours.
//! It writes files only when asked (`--json`, `--html`).

mod downstream;
#[cfg(test)]
mod model_check;
mod peers;
mod real;
mod report;
mod run;
mod scenario;
mod serve;
mod sim;
mod strategy;
mod sweep;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use report::ScenarioReport;
use run::Mode;
use scenario::Scenario;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code for bad input (unreadable or invalid scenario, bad parameter).
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a report cannot be written.
const EXIT_IO: u8 = 1;

#[derive(Parser, Debug)]
#[command(
    name = "fusebox-lab",
    version,
    about = "Measures what a circuit breaker buys and costs: seed 000's experiment, with real threads or in virtual time"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run scenarios (default: the embedded seed000-50rps and seed000-100rps).
    Run(RunArgs),
    /// Run one scenario for each value of a parameter, in virtual time by default.
    Sweep(SweepArgs),
}

#[derive(clap::Args, Debug, Default)]
struct RunArgs {
    /// Scenario files (TOML). None: the embedded defaults.
    scenarios: Vec<PathBuf>,
    /// Real threads and sleeps, or a deterministic simulation.
    #[arg(long, value_enum, default_value = "real")]
    clock: Option<Mode>,
    /// Write the full report (every request) as JSON here.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a self-contained HTML page with charts here.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Serve Prometheus metrics of the fusebox breakers at http://ADDR/metrics
    /// (and JSON snapshots at /breakers) during a real-mode run.
    #[arg(long, value_name = "ADDR")]
    serve: Option<std::net::SocketAddr>,
}

#[derive(clap::Args, Debug)]
struct SweepArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// NAME=FROM..TO:STEP, e.g. open_for=0.1s..2s:0.1s, failures=2..10:1, rate=20..120:10.
    #[arg(long, value_name = "NAME=FROM..TO:STEP")]
    param: String,
    /// Virtual time (default) or real threads.
    #[arg(long, value_enum, default_value = "virtual")]
    clock: Mode,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// A progress bar that shows itself only once the work has taken more than a
/// second (and never with `--quiet` or when stderr is not a terminal).
fn progress(len: u64, quiet: bool, what: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    if !quiet {
        let later = pb.clone();
        // Detached: it only holds a handle to the bar and ends within a second.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            if !later.is_finished() {
                later.set_draw_target(ProgressDrawTarget::stderr());
                later.enable_steady_tick(Duration::from_millis(100));
            }
        });
    }
    pb
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Run(RunArgs::default())) {
        Command::Run(args) => cmd_run(args),
        Command::Sweep(args) => {
            sweep::cmd_sweep(&args.scenario, &args.param, args.clock, args.quiet)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::BadInput(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(CliError::Io(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(EXIT_IO)
        }
    }
}

/// What went wrong, and which exit code it gets.
#[derive(Debug)]
pub enum CliError {
    /// Exit 2: the input was wrong.
    BadInput(String),
    /// Exit 1: a report could not be written.
    Io(String),
}

/// Runs every strategy of every scenario; returns the reports in order.
fn run_all(scenarios: Vec<Scenario>, mode: Mode, pb: &ProgressBar) -> Vec<ScenarioReport> {
    scenarios
        .into_iter()
        .map(|sc| {
            let runs = sc
                .strategies
                .iter()
                .map(|spec| {
                    pb.set_message(format!("{} / {}", sc.name, spec.name));
                    serve::set_run(format!("{}/{}", sc.name, spec.name));
                    let r = run::run(&sc, spec, mode);
                    pb.inc(1);
                    r
                })
                .collect();
            ScenarioReport::new(sc, mode, runs)
        })
        .collect()
}

fn cmd_run(args: RunArgs) -> Result<(), CliError> {
    let mode = args.clock.unwrap_or(Mode::Real);
    let _server = match args.serve {
        Some(_) if mode != Mode::Real => {
            return Err(CliError::BadInput(
                "--serve needs a real-mode run (--clock real)".into(),
            ))
        }
        Some(addr) => {
            let server = serve::start(addr)
                .map_err(|e| CliError::Io(format!("cannot serve on {addr}: {e}")))?;
            eprintln!("serving metrics on http://{}/metrics", server.local_addr());
            Some(server)
        }
        None => None,
    };
    let scenarios = if args.scenarios.is_empty() {
        Scenario::embedded()
    } else {
        args.scenarios
            .iter()
            .map(|p| Scenario::load(p).map_err(|e| CliError::BadInput(e.to_string())))
            .collect::<Result<_, _>>()?
    };
    for sc in &scenarios {
        peers::check(sc, mode).map_err(CliError::BadInput)?;
    }
    let total: usize = scenarios
        .iter()
        .map(|s: &Scenario| s.strategies.len())
        .sum();
    let pb = progress(total as u64, args.quiet, "running");
    let reports = run_all(scenarios, mode, &pb);
    pb.finish_and_clear();
    for r in &reports {
        println!("{}", report::table::render_scenario(r));
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report::json::document(&reports))
            .expect("JSON values always serialize");
        std::fs::write(path, text)
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::html::page(&reports))
            .map_err(|e| CliError::Io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
