//! The command line: `run`, `sweep`, and `run --serve`. The top layer: it
//! imports every layer below it, and nothing imports it.
//!
//! With no arguments the lab runs the embedded scenarios `seed000-50rps` and
//! `seed000-100rps` in real mode and prints the article's figures beside ours.
//! It writes files only when asked (`--json`, `--html`).

mod run;
pub mod serve;
pub mod sweep;

use crate::engine::Mode;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
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
    /// The HTTP downstream of a real-mode run with `transport = "http"`
    /// (started by the lab itself: setup on stdin).
    #[command(hide = true)]
    HttpDownstream,
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
    /// (JSON snapshots at /breakers, progress at /status, the live dashboard
    /// at /dashboard) during a real-mode run, and after it until interrupted
    /// (Ctrl-C) or for --linger. The dashboard is read-only unless the
    /// environment variable FUSEBOX_LAB_CONTROL_TOKEN holds a token (at least
    /// 16 bytes): then its force-open/disable/reset controls take that token.
    #[arg(long, value_name = "ADDR")]
    serve: Option<std::net::SocketAddr>,
    /// Real-mode fleets with sharing = "fleet" share through this Redis
    /// (redis://HOST:PORT, or "local": the lab starts redis-server),
    /// whatever their [fleet] redis says.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// With --serve: keep serving this long after the run (e.g. 30s), then exit.
    #[arg(long, value_name = "DURATION", requires = "serve", value_parser = parse_linger)]
    linger: Option<Duration>,
}

fn parse_linger(s: &str) -> Result<Duration, String> {
    crate::scenario::duration::parse_value(s)
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

/// The `fusebox-lab` binary: parses the command line, runs it, and turns
/// its error into the exit code (2: bad input, 1: a file or socket failed).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Run(RunArgs::default())) {
        Command::Run(args) => run::cmd_run(args),
        Command::Sweep(args) => {
            sweep::cmd_sweep(&args.scenario, &args.param, args.clock, args.quiet)
        }
        Command::HttpDownstream => crate::engine::serve_downstream().map_err(CliError::BadInput),
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
enum CliError {
    /// Exit 2: the input was wrong.
    BadInput(String),
    /// Exit 1: a report could not be written.
    Io(String),
}
