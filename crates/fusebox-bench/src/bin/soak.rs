//! Soak: memory stays flat while breakers, the registry, metrics and alerts
//! go through millions of transitions and calls.
//!
//! ```text
//! cargo run --release -p fusebox-bench --bin soak [-- --short] [--steps N] [--cycles N] [--names N] [--bound-mib N]
//! ```
//!
//! Everything runs on one [`ManualClock`], so a step is the same work every
//! time. Each step:
//!
//! - drives one hand-built breaker per policy (consecutive failures, failure
//!   rate over a count and over a time window, slow calls, open backoff, 3
//!   probes / 3 successes), each with a metrics listener, two alert
//!   listeners and a counting listener, through `--cycles` trips and
//!   recoveries (closed -> open -> half-open -> closed);
//! - looks up every one of `--names` registry breakers (built in the first
//!   step, with metrics, both alerts and the counter as observers), trips
//!   each, forces it open and resets it by name, and reconfigures a quarter
//!   of them (alternating between two configs);
//! - renders the Prometheus text of every series;
//! - calls `check()` on one `Alerts` every 100 cycles and never on the
//!   other, whose queue must stay bounded on its own.
//!
//! It prints the resident set size (`/proc/self/statm`) after each step and
//! exits non-zero if it grows more than `--bound-mib` above its value after
//! the warm-up steps (the first two: every name, series and window is
//! allocated by then).

use fusebox::alert::{AlertConfig, Alerts};
use fusebox::metrics::Metrics;
use fusebox::registry::{BreakerConfig, BreakerEntry, Fusebox, FuseboxConfig, Observer, Tags};
use fusebox::{Builder, CircuitBreaker, Listener, ManualClock, State, Transition};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP_STEPS: usize = 2;

struct Options {
    steps: usize,
    cycles: u64,
    names: usize,
    bound_mib: f64,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        steps: 30,
        cycles: 200_000,
        names: 5_000,
        bound_mib: 16.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--short" => {
                o.steps = 8;
                o.cycles = 30_000;
                o.names = 2_000;
            }
            "--steps" => o.steps = number(&value("--steps")?, "--steps")?,
            "--cycles" => o.cycles = number(&value("--cycles")?, "--cycles")?,
            "--names" => o.names = number(&value("--names")?, "--names")?,
            "--bound-mib" => o.bound_mib = number(&value("--bound-mib")?, "--bound-mib")?,
            "-h" | "--help" => {
                return Err(
                    "usage: soak [--short] [--steps N] [--cycles N] [--names N] [--bound-mib N]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if o.steps <= WARMUP_STEPS {
        return Err(format!(
            "--steps must be above the {WARMUP_STEPS} warm-up steps"
        ));
    }
    Ok(o)
}

fn number<T: std::str::FromStr>(s: &str, flag: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{flag}: not a number: {s:?}"))
}

/// Resident set size in bytes, from `/proc/self/statm` (pages of 4 KiB).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Counts transitions, as a listener and as a registry observer.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicU64>);

impl Listener for Counter {
    fn on_transition(&self, _: &Transition) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Observer for Counter {
    fn instrument(&self, _: &str, _: &Tags, builder: Builder) -> Builder {
        builder.listener(self.clone())
    }
}

/// Longest open period any breaker here can have (the backoff's maximum).
const LONGEST_OPEN: Duration = Duration::from_millis(80);
/// A failing call takes this long: slow for every slow-call policy here.
const SLOW_CALL: Duration = Duration::from_millis(2);

/// One breaker per policy.
fn policies() -> Vec<(&'static str, Builder)> {
    let ms = Duration::from_millis;
    let b = CircuitBreaker::builder;
    vec![
        ("consecutive", b().consecutive_failures(3).open_for(ms(10))),
        (
            "count_window",
            b().failure_rate(0.5)
                .count_window(20)
                .min_calls(10)
                .open_for(ms(10)),
        ),
        (
            "time_window",
            b().failure_rate(0.5)
                .time_window(ms(200))
                .buckets(10)
                .min_calls(5)
                .open_for(ms(10)),
        ),
        (
            "slow_calls",
            b().slow_calls(ms(1), 0.5)
                .count_window(10)
                .min_calls(5)
                .open_for(ms(10)),
        ),
        (
            "backoff",
            b().consecutive_failures(1)
                .open_backoff(ms(5), 2.0, LONGEST_OPEN),
        ),
        (
            "probes",
            b().consecutive_failures(2)
                .open_for(ms(10))
                .half_open_probes(3)
                .successes_to_close(3),
        ),
    ]
}

/// Trips `b` with failing slow calls, waits out the open period (with one
/// failed probe every other cycle, so backoffs grow), then closes it with
/// successful probes. Returns the calls made.
fn cycle(b: &CircuitBreaker, clock: &ManualClock, n: u64) -> u64 {
    let mut calls = 0;
    while b.state() == State::Closed {
        let _ = b.call(|| {
            clock.advance(SLOW_CALL);
            Err::<(), _>("down")
        });
        calls += 1;
        assert!(calls < 1_000, "{b:?} does not trip");
    }
    let mut reopen = n.is_multiple_of(2);
    loop {
        clock.advance(LONGEST_OPEN);
        match b.state() {
            State::HalfOpen if reopen => {
                let _ = b.call(|| Err::<(), _>("still down"));
                calls += 1;
                reopen = false;
            }
            State::HalfOpen => break,
            _ => {}
        }
    }
    while b.state() == State::HalfOpen {
        let probes: Vec<_> = std::iter::from_fn(|| b.try_acquire().ok()).collect();
        calls += probes.len() as u64;
        for p in probes {
            p.success();
        }
    }
    calls
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let clock = ManualClock::new();
    let mut prometheus = prometheus_client::registry::Registry::default();
    let metrics = Metrics::new(&mut prometheus);
    // Thresholds low enough that every alert fires and resolves over and over.
    let alert_config = AlertConfig {
        open_longer_than: Duration::from_millis(50),
        flapping_transitions: 3,
        flapping_window: Duration::from_millis(100),
        ..Default::default()
    };
    let checked = Alerts::new(alert_config.clone(), clock.clone());
    let unchecked = Alerts::new(alert_config, clock.clone());
    let counter = Counter::default();

    let breakers: Vec<CircuitBreaker> = policies()
        .into_iter()
        .map(|(name, builder)| {
            let builder = builder
                .clock(clock.clone())
                .listener(checked.listener(name, Some("hand-built")))
                .listener(unchecked.listener(name, Some("hand-built")))
                .listener(counter.clone());
            metrics.build(name, builder).expect("valid settings")
        })
        .collect();

    let mut defaults = BreakerEntry::from(BreakerConfig {
        consecutive_failures: Some(2),
        open_for: Some(Duration::from_millis(10)),
        ..Default::default()
    });
    defaults.tags.insert("service".into(), "registry".into());
    let mut config = FuseboxConfig::default();
    config.defaults.breaker = defaults;
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .observer(metrics.clone())
        .observer(checked.clone())
        .observer(unchecked.clone())
        .observer(counter.clone())
        .build()
        .expect("valid registry config");
    let names: Vec<String> = (0..o.names).map(|i| format!("dep-{i:05}")).collect();
    let tighter = |n: u32| BreakerConfig {
        consecutive_failures: Some(n),
        ..Default::default()
    };

    println!(
        "soak: {} steps; per step {} cycles x {} policies, {} registry names; bound {} MiB above step {}",
        o.steps,
        o.cycles,
        breakers.len(),
        o.names,
        o.bound_mib,
        WARMUP_STEPS - 1
    );
    println!(
        "step  seconds  transitions  calls  alert_events  unchecked_pending  metrics_kib  rss_mib"
    );
    let started = Instant::now();
    let (mut calls, mut events, mut baseline, mut worst) = (0u64, 0usize, 0u64, 0u64);
    for step in 0..o.steps {
        for (i, b) in breakers.iter().enumerate() {
            for n in 0..o.cycles {
                calls += cycle(b, &clock, n + i as u64);
                if n % 100 == 0 {
                    events += checked.check().len();
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            let b = fusebox.breaker(name);
            for _ in 0..3 {
                let _ = b.call(|| Err::<(), _>("down"));
                calls += 1;
            }
            fusebox.force_open(name).expect("built above");
            fusebox.reset(name).expect("built above");
            if i % 4 == step % 4 {
                let n = 2 + (step as u32 % 2);
                fusebox.reconfigure(name, tighter(n)).expect("valid config");
            }
        }
        let _ = fusebox.snapshot();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &prometheus).expect("encodes");
        events += checked.check().len();
        let now = rss();
        if step + 1 == WARMUP_STEPS {
            baseline = now;
        }
        if step >= WARMUP_STEPS {
            worst = worst.max(now.saturating_sub(baseline));
        }
        println!(
            "{step:>4}  {:>7.1}  {:>11}  {calls:>5}  {events:>12}  {:>17}  {:>11}  {:>7.1}",
            started.elapsed().as_secs_f64(),
            counter.0.load(Ordering::Relaxed),
            unchecked.pending(),
            text.len() / 1024,
            mib(now)
        );
    }
    assert!(unchecked.pending() <= Alerts::MAX_PENDING);
    let growth = mib(worst);
    if growth > o.bound_mib {
        println!(
            "soak: FAIL: RSS grew {growth:.1} MiB after warm-up (bound {} MiB)",
            o.bound_mib
        );
        return ExitCode::FAILURE;
    }
    println!(
        "soak: ok: RSS grew at most {growth:.1} MiB after warm-up (bound {} MiB); {} transitions, {calls} calls, {} alert events dropped unchecked",
        o.bound_mib,
        counter.0.load(Ordering::Relaxed),
        unchecked.dropped()
    );
    ExitCode::SUCCESS
}
