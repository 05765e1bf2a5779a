//! Three link models in virtual time, and the adaptive limit's and the
//! achieved rate's means on each, inside ranges stated here with their
//! reasons. Each model is a `[downstream] server` with workers enough (200,
//! the limit's `max`: a call never waits for one) or few, whose service
//! time is 100 ms alone (`p90 = p99`: no spread); the
//! caller's 400 workers offer more than the link can carry, so the limit is
//! always full and alone decides the calls in flight. Figures are taken from
//! 60 s (past the first Vegas re-probe) to the end, 300 s; the limit's mean
//! is its time average, sampled every 100 ms; the rate is the successful
//! calls a second. Windows are the library's defaults (1 s, 10 answers).
//!
//! - **A slow link** (`latency_per_inflight = 1.0`): a call takes 100 ms
//!   times the calls in service, so the link carries 10 calls a second
//!   whatever the concurrency, and more concurrency only adds latency. The
//!   rate is 10/s (asserted 9.5 to 10.5). Vegas measures its no-load
//!   baseline with its limit at 3 for one window, so the baseline is 100
//!   to 300 ms (1 to 3 calls in service), and holds its limit where it
//!   counts 3 to 6 calls queued above it: at most 3 + 6 = 9, at least 4, with
//!   a dip to 3 for each re-probe. Its mean: 4 to 9.
//! - **A shallow knee at 10** (`knee = 10, knee_exp = 1.1`): up to 10 calls
//!   in service take 100 ms, each one more multiplies that by 1.1; the most
//!   the link carries is 100/s, at 10 or 11 in service. Vegas's baseline is
//!   100 ms (at its probe's 3 in service); it holds from 12 (3 calls queued
//!   by its count) to 15 (6), jumps by 6 from 11 or less and comes down by
//!   1 a window from 16 or more: its mean 12 to 16. The rate at 12 to 15 in
//!   service is 99 to 93/s; the re-probes (a window at 3, 30/s, every 15
//!   to 30 windows) and the jumps to 16 and 17 (90 and 87/s) take a few
//!   percent: 85 to 100/s.
//! - **A server limit of 5 that refuses** (`workers = 5, reject_after =
//!   "0s"`): a call that finds the 5 workers busy is refused at once as
//!   overloaded, a drop to the limit. The link carries 50/s at 5 in flight
//!   or more, 10/s per call in flight below. Here every algorithm has its
//!   signal. Vegas sees a flat latency and grows by 6 a window while
//!   nothing is refused (at 5 or less), and a window with a refusal cuts
//!   it by a tenth: a saw-tooth from 4 to 11, mean 5 to 9, rate 45 to 50/s
//!   (below 50 only in the windows at 4). Gradient2 (the latency flat: +0.8
//!   a window) and AIMD (+1) grow by about one a window and are cut by a
//!   tenth at 6: between 5 and 6, mean 5 to 6, never below 5 in flight:
//!   the rate is 50/s (49 to 50.5).
//!
//! Not asserted: Gradient2 and AIMD on the first two links. AIMD reads no
//! latency and, without drops, grows by one a window for the whole run
//! (a mean of 57 on the slow link, 62 on the knee, where its rate falls to
//! 5/s); Gradient2's baseline is a long average of the latency its own
//! limit causes, and it drifts up with it (42 and 33, the knee's rate 37/s).
//! Printed with `--nocapture`.
//!
//! Each of the library's two guards is needed, and these tests fail
//! without either (measured with the library patched, not kept): with the
//! limit updated on every answer instead of once per window, Vegas
//! averages 10.0 on the slow link (above 9) and carries 81.6/s on the knee
//! (below 85); without the generation fence (answers to calls admitted
//! under an older limit counted in the new one's window, the re-probe's
//! among them), Vegas averages 9.7 on the slow link and 17.3 on the knee
//! (above 16), at 81.7/s. The server limit of 5 passes either way: its
//! refusals answer in 1 ms, within the window they were admitted in.

use fusebox_lab::engine::{self, Mode, RunResult};
use fusebox_lab::scenario::{CallResult, Scenario};
use std::ops::RangeInclusive;
use std::time::Duration;

/// The figures' phase starts here and ends with the run.
const FROM: Duration = Duration::from_secs(60);

/// A link model: 300 s of `rate` calls a second offered to `server`, with
/// the three algorithms at their defaults.
fn scenario(name: &str, rate: f64, server: &str) -> Scenario {
    let strategy = |algorithm: &str| {
        format!(
            "[[strategy]]\nname = \"{algorithm}\"\nkind = \"fusebox\"\nmode = \"off\"\n\
             limit = {{ algorithm = \"{algorithm}\" }}\n"
        )
    };
    let text = format!(
        "name = \"{name}\"\nduration = \"300s\"\nrate = {rate}\nworkers = 400\nqueue = 1\n\
         window = \"10s\"\n\n[downstream]\nlatency = \"100ms\"\n\
         server = {{ p90 = \"100ms\", p99 = \"100ms\", {server} }}\n\n{}\n{}\n{}",
        strategy("vegas"),
        strategy("gradient2"),
        strategy("aimd")
    );
    Scenario::parse(&format!("{name}.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The limit in force at `t`.
fn limit_at(run: &RunResult, t: Duration) -> u32 {
    run.limit_at(t).expect("a limit trace")
}

/// The limit's time average and the successful calls a second, from
/// [`FROM`] to the end.
fn means(sc: &Scenario, run: &RunResult) -> (f64, f64) {
    let samples = ((sc.duration - FROM).as_millis() / 100) as u64;
    let limit = (0..samples)
        .map(|k| f64::from(limit_at(run, FROM + Duration::from_millis(100 * k))))
        .sum::<f64>()
        / samples as f64;
    let ok = run
        .calls
        .iter()
        .filter(|c| c.start >= FROM && c.result == CallResult::Success)
        .count();
    (limit, ok as f64 / (sc.duration - FROM).as_secs_f64())
}

/// Runs every algorithm on the model and checks those given ranges for:
/// `(algorithm, limit mean, rate mean)`.
fn check(
    name: &str,
    rate: f64,
    server: &str,
    ranges: &[(&str, RangeInclusive<f64>, RangeInclusive<f64>)],
) {
    let sc = scenario(name, rate, server);
    let mut failures = Vec::new();
    for spec in &sc.strategies {
        let run = engine::run(&sc, spec, Mode::Virtual, None).unwrap();
        let (limit, rate) = means(&sc, &run);
        let range = ranges.iter().find(|(a, _, _)| *a == spec.name);
        println!(
            "{name:<16}{:<10} limit mean {limit:6.2}  rate {rate:6.2}/s  {}",
            spec.name,
            range.map_or("(not asserted)".to_string(), |(_, l, r)| format!(
                "(limit {:?}, rate {:?})",
                l, r
            ))
        );
        if let Some((_, l, r)) = range {
            if !l.contains(&limit) {
                failures.push(format!(
                    "{}: limit mean {limit:.2} outside {l:?}",
                    spec.name
                ));
            }
            if !r.contains(&rate) {
                failures.push(format!("{}: rate {rate:.2}/s outside {r:?}", spec.name));
            }
        }
    }
    assert!(failures.is_empty(), "{name}: {}", failures.join("; "));
}

#[test]
fn a_slow_link_whose_latency_grows_with_concurrency() {
    check(
        "slow-link",
        50.0,
        "workers = 200, latency_per_inflight = 1.0",
        &[("vegas", 4.0..=9.0, 9.5..=10.5)],
    );
}

#[test]
fn a_shallow_knee_starting_at_10() {
    check(
        "shallow-knee",
        200.0,
        "workers = 200, knee = 10, knee_exp = 1.1",
        &[("vegas", 12.0..=16.0, 85.0..=100.0)],
    );
}

#[test]
fn a_server_limit_of_5_that_refuses() {
    check(
        "server-limit-5",
        100.0,
        "workers = 5, reject_after = \"0s\"",
        &[
            ("vegas", 5.0..=9.0, 45.0..=50.5),
            ("gradient2", 5.0..=6.0, 49.0..=50.5),
            ("aimd", 5.0..=6.0, 49.0..=50.5),
        ],
    );
}
