//! The command line: `run`, `sweep`, and `run --serve`. The top layer: it
//! imports every layer below it, and nothing imports it.
//!
//! With no arguments the lab runs the embedded scenarios `seed000-50rps` and
//! `seed000-100rps` in real mode and prints the article's figures beside ours.
//! It writes files only when asked (`--json`, `--html`).

mod run;
pub mod serve;
pub mod sweep;
mod tune;

use crate::engine::Mode;
use crate::scenario::{Redis, Scenario, Sharing};
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
    /// Search breaker settings (policy, threshold, windows, open_for,
    /// probes, timeout, bulkhead) that meet an objective for a scenario's
    /// traffic and outages, in virtual time; print the Pareto set and a
    /// [dependencies.NAME] block for fusebox's registry.
    Tune(TuneArgs),
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
    /// The seed of every scenario (in place of its file's `seed`): Poisson
    /// arrivals, the latency tail and the faults' jitter are drawn from it.
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    seed: Option<u64>,
    /// Run each scenario N times, with the seeds seed, seed+1, ...,
    /// seed+N-1, and print each figure's median [p10-p90] over the runs
    /// (virtual mode only; --json writes those; no --html).
    #[arg(long, value_name = "N")]
    runs: Option<u64>,
}

fn parse_seed(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n <= i64::MAX as u64 => Ok(n),
        _ => Err(format!(
            "{s:?} is not a seed (a whole number in 0..={})",
            i64::MAX
        )),
    }
}

/// `--runs` runs in virtual time only: many real runs would take the
/// scenario's duration each, strategy after strategy.
fn refuse_real_runs(mode: Mode) -> Result<(), CliError> {
    if mode == Mode::Real {
        return Err(CliError::BadInput(
            "--runs runs in virtual time only (--clock virtual): each real run takes the \
             scenario's duration per strategy, and its timing is not the seed's to replay"
                .into(),
        ));
    }
    Ok(())
}

fn parse_linger(s: &str) -> Result<Duration, String> {
    crate::scenario::duration::parse_value(s)
}

#[derive(clap::Args, Debug)]
struct SweepArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// NAME=FROM..TO:STEP, e.g. open_for=0.1s..2s:0.1s, consecutive_failures=2..10:1, rate=20..120:10.
    /// Given twice, a grid: the first swept at every value of the second.
    #[arg(long, value_name = "NAME=FROM..TO:STEP", required = true)]
    param: Vec<String>,
    /// Virtual time (default) or real threads.
    #[arg(long, value_enum, default_value = "virtual")]
    clock: Mode,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// The scenario's seed (in place of its file's `seed`).
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    seed: Option<u64>,
    /// Run each value N times, with the seeds seed, seed+1, ..., seed+N-1
    /// (the same seeds for every value), and print a table per figure,
    /// each cell its median [p10-p90] over the runs (virtual mode only).
    #[arg(long, value_name = "N")]
    runs: Option<u64>,
    /// The figures to show, separated by commas: calls, lost, probes, lag
    /// (the default without --runs), served, fault-p50, fault-p99,
    /// backlog, queue-peak; or all (the default with --runs).
    #[arg(long, value_name = "LIST")]
    figures: Option<String>,
    /// Also write every figure of every value and strategy as CSV, one row
    /// each (param,value,strategy,figure,result; with --runs
    /// median,p10,p90,runs in place of result).
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Also write them as JSON (the same rows, as objects).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// With two --param: also draw heat maps as a self-contained HTML page,
    /// one per figure of --figures (without it, the first figure) and
    /// strategy: a column per value of the first parameter, a row per value
    /// of the second, each cell coloured by its value (with --runs, the
    /// median) and printed.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
}

#[derive(clap::Args, Debug, Default)]
struct TuneArgs {
    /// The scenario file (TOML): the traffic (rate or trace, latency,
    /// workers, retries) and the outage model (its faults' onset/length
    /// ranges or jitter). Its strategies are run beside the chosen settings.
    /// Optional with --from-metrics (then the article's service with
    /// 0.5-5 s outages, with the scrape's rate and latency).
    scenario: Option<PathBuf>,
    /// Terms separated by commas: exactly one `min NAME` or `max NAME`, and
    /// limits `NAME<=VALUE` or `NAME>=VALUE` (times with a unit). NAME: calls,
    /// lost, probes, lag, served, fault-p50, fault-p99, backlog, queue-peak,
    /// outage-calls (downstream calls per outage second).
    #[arg(long, value_name = "TERMS")]
    objective: Option<String>,
    /// Outages (seeds) each candidate runs on; it is scored on its medians.
    #[arg(long, value_name = "K", default_value_t = 30)]
    runs: u64,
    /// Fresh outages (the seeds after the search's) the chosen settings are
    /// re-run on, for their p10-p90.
    #[arg(long, value_name = "M", default_value_t = 100)]
    check_runs: u64,
    /// The first seed of the search (default: the scenario's).
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    seed: Option<u64>,
    /// Points of the coarse grid drawn at random before the local refinement.
    #[arg(long, value_name = "N", default_value_t = 150)]
    budget: usize,
    /// How many of the best points start a local refinement.
    #[arg(long, value_name = "N", default_value_t = 3)]
    starts: usize,
    /// The trip policies searched, separated by commas: consecutive, count
    /// (failure rate over a count window), time (over a time window).
    #[arg(long, value_name = "LIST")]
    policies: Option<String>,
    /// A setting's ladder: KEY=FROM..TO:STEP, KEY=VALUE (fixed) or KEY=none
    /// (timeout, max_concurrent). KEY: consecutive_failures, failure_rate,
    /// count_window, time_window, min_calls, open_for, half_open_probes,
    /// successes_to_close, timeout, max_concurrent. Repeatable.
    #[arg(long, value_name = "KEY=RANGE")]
    space: Vec<String>,
    /// Run every point of the space (narrow it with --space and --policies)
    /// in place of the search.
    #[arg(long)]
    grid: bool,
    /// The dependency's name in the [dependencies.NAME] block; with
    /// --from-metrics, the breaker (its `name` label) whose series to read.
    #[arg(long, value_name = "NAME")]
    dependency: Option<String>,
    /// A scrape of fusebox's Prometheus metrics (a file, or an http:// URL):
    /// the breaker's request rate and latency histogram set the scenario's
    /// rate and latency. Twice: two scrapes, --metrics-span apart. A URL given
    /// once is scraped twice, --metrics-span apart.
    #[arg(long, value_name = "URL_OR_FILE")]
    from_metrics: Vec<String>,
    /// The time between the two scrapes, or what one file's counters have
    /// counted (e.g. the service's uptime).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = tune::parse_span)]
    metrics_span: Duration,
    /// Re-run the chosen settings once with real threads, beside the same
    /// outage in virtual time.
    #[arg(long)]
    verify: bool,
    /// With --verify: a real-mode fleet with sharing = "fleet" shares
    /// through this Redis (redis://HOST:PORT, or "local": the lab starts
    /// redis-server), whatever its [fleet] redis says.
    #[arg(long, value_name = "URL", requires = "verify")]
    redis: Option<String>,
    /// Threads (default: the machine's cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Rows of the Pareto table.
    #[arg(long, value_name = "N", default_value_t = 10)]
    show: usize,
    /// Also write the [dependencies.NAME] block here.
    #[arg(long, value_name = "PATH")]
    toml: Option<PathBuf>,
    /// Also write the Pareto set as CSV, one row per candidate (rank,
    /// chosen, feasible, settings, then median,p10,p90 of each figure of
    /// the objective over the search runs).
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Also write the whole result as JSON: the search, the Pareto set
    /// (each candidate's settings as keys and its figures), the chosen
    /// settings' figures on the fresh outages, and the block.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
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
        Command::Sweep(args) => sweep::cmd_sweep(&args),
        Command::Tune(args) => tune::cmd_tune(&args),
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

/// `--redis URL`: the fleets of `scenarios` that share through Redis
/// (`sharing = "fleet"`) share through this one, whatever their `[fleet]
/// redis` says.
fn share_through(scenarios: &mut [Scenario], url: &str) -> Result<(), CliError> {
    let redis = Redis::parse(url).map_err(|e| CliError::BadInput(format!("--redis: {e}")))?;
    for f in scenarios.iter_mut().filter_map(|s| s.fleet.as_mut()) {
        if f.sharing == Sharing::Fleet {
            f.redis = Some(redis.clone());
        }
    }
    Ok(())
}

/// Checks, before anything runs, that a report can be written at `path`:
/// its directory exists and the file can be opened for writing. Leaves an
/// existing file as it was (opened without truncating) and removes the
/// file it had to create, so a run that fails later writes nothing.
fn check_output(flag: &str, path: &std::path::Path) -> Result<(), CliError> {
    let cannot =
        |e: std::io::Error| CliError::Io(format!("{flag} {}: cannot write: {e}", path.display()));
    if path.is_dir() {
        return Err(CliError::Io(format!(
            "{flag} {}: cannot write: is a directory",
            path.display()
        )));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(cannot)?;
    if !existed {
        std::fs::remove_file(path).map_err(cannot)?;
    }
    Ok(())
}

/// Writes a report asked for with `flag` (`--json`, `--csv`, ..) to `path`.
fn write_output(flag: &str, path: &std::path::Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::Io(format!("{flag} {}: cannot write: {e}", path.display())))
}

/// Writes `text` to standard output. A reader that has gone (`fusebox-lab
/// run | head`) ends the printing, not the run: the rest of the output is
/// dropped and the files asked for are still written.
fn emit(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Io(format!(
            "cannot write to standard output: {e}"
        ))),
        Ok(()) => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sweep::{apply, Sweep};
    use clap::CommandFactory;

    /// Every example `sweep --help` gives for `--param` parses and applies
    /// to the embedded seed000-50rps scenario.
    #[test]
    fn the_sweep_help_examples_are_accepted() {
        let cmd = Cli::command();
        let sweep = cmd.find_subcommand("sweep").unwrap();
        let param = sweep
            .get_arguments()
            .find(|a| a.get_id() == "param")
            .unwrap();
        let help = param.get_help().unwrap().to_string();
        let examples = help.split_once("e.g.").unwrap().1;
        // To the end of their sentence (the help goes on about a grid).
        let examples = examples.split_once(". ").map_or(examples, |(e, _)| e);
        let scenario = &Scenario::embedded()[0];
        let mut checked = 0;
        for example in examples.split(", ") {
            let example = example.trim().trim_end_matches('.');
            let s = Sweep::parse(example).unwrap_or_else(|e| panic!("{example}: {e}"));
            for v in &s.values {
                apply(scenario, &s.name, *v).unwrap_or_else(|e| panic!("{example}: {e}"));
            }
            checked += 1;
        }
        assert_eq!(checked, 3, "{help}");
    }

    /// `sweep --help` names every figure `--figures` takes, and the
    /// default ones first.
    #[test]
    fn the_figures_help_names_every_sweep_figure() {
        let cmd = Cli::command();
        let sweep = cmd.find_subcommand("sweep").unwrap();
        let arg = sweep
            .get_arguments()
            .find(|a| a.get_id() == "figures")
            .unwrap();
        let help = arg.get_help().unwrap().to_string();
        let mut at = 0;
        for c in crate::report::model::SWEEP_CHOICES {
            let found = help[at..]
                .find(c.name)
                .unwrap_or_else(|| panic!("{}: {help}", c.name));
            at += found + c.name.len();
        }
    }

    #[test]
    fn an_output_in_a_missing_directory_is_refused_and_nothing_is_left() {
        let dir = std::env::temp_dir().join(format!("fusebox-lab-out-{}", std::process::id()));
        let missing = dir.join("nonexistent").join("out.json");
        let Err(CliError::Io(msg)) = check_output("--json", &missing) else {
            panic!("a path in a missing directory accepted");
        };
        assert!(
            msg.starts_with("--json ") && msg.contains("out.json") && msg.contains("cannot write"),
            "{msg}"
        );
        assert!(
            matches!(check_output("--html", &std::env::temp_dir()), Err(CliError::Io(m)) if m.contains("is a directory"))
        );
        // A writable path passes and is not created; an existing file keeps its content.
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = dir.join("out.json");
        check_output("--json", &fresh).unwrap();
        assert!(!fresh.exists());
        std::fs::write(&fresh, "kept").unwrap();
        check_output("--json", &fresh).unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--json` into a missing directory fails before the runs (the real
    /// run of the embedded scenarios takes about 6 s), not after them.
    #[test]
    fn run_checks_its_outputs_before_running() {
        let started = std::time::Instant::now();
        let args = RunArgs {
            json: Some("/nonexistent/dir/out.json".into()),
            quiet: true,
            ..RunArgs::default()
        };
        let Err(CliError::Io(msg)) = run::cmd_run(args) else {
            panic!("accepted");
        };
        assert!(msg.contains("/nonexistent/dir/out.json"), "{msg}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
