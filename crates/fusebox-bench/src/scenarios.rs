//! The catalogue: every scenario and, in each, every crate measured.
//!
//! The criterion benches and the compare command both read this list, so a
//! figure in one can be checked against the other.

use std::time::Duration;

use crate::harness::{Load, Subject};
use crate::subjects::{prefill, trip, Crate, Limiter, Spec, Stack};

/// What is being measured in one entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guarded {
    /// A circuit breaker of `Crate`, configured per `Spec`.
    Breaker(Crate, Spec),
    /// A concurrency limiter with room for `usize` calls.
    Limiter(Limiter, usize),
    /// A whole stack of policies, or an instrumented breaker.
    Stack(Stack),
}

/// One crate (in one configuration) within a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Crate name: `fusebox`, `recloser`, ..., `baseline`.
    pub krate: &'static str,
    /// Configuration variant (`""` when the scenario has only one).
    pub variant: String,
    /// What to build.
    pub guarded: Guarded,
    /// Successful calls made before measuring (to fill a window).
    pub prefill: u64,
}

impl Entry {
    /// `crate` or `crate/variant`: the benchmark id.
    pub fn id(&self) -> String {
        if self.variant.is_empty() {
            self.krate.to_string()
        } else {
            format!("{}/{}", self.krate, self.variant)
        }
    }

    /// Builds the guard, trips it when `open`, and prefills it. Panics when a
    /// breaker meant to be open cannot be tripped (the benchmark would
    /// measure the wrong path).
    pub fn build(&self, open: bool) -> Box<dyn Subject> {
        let s = match self.guarded {
            Guarded::Breaker(c, spec) => c
                .breaker(&spec)
                .unwrap_or_else(|| panic!("{} has no equivalent of {spec:?}", self.id())),
            Guarded::Limiter(l, limit) => l
                .build(limit)
                .unwrap_or_else(|| panic!("{} is not available", self.id())),
            Guarded::Stack(stack) => stack.build(),
        };
        if open && self.krate != "baseline" {
            assert!(trip(s.as_ref(), 100_000), "{} did not trip", self.id());
        }
        if self.prefill > 0 {
            prefill(s.as_ref(), self.prefill);
        }
        s
    }
}

/// One scenario: a criterion group, a block of the compare table.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Group name, e.g. `closed_1t`.
    pub name: &'static str,
    /// One line saying what is measured.
    pub what: &'static str,
    /// Threads sharing one guard.
    pub threads: usize,
    /// Which calls fail.
    pub load: Load,
    /// Trip every breaker before measuring.
    pub open: bool,
    /// Measure exactly this many calls on a freshly built guard each time
    /// (for fill-level scenarios, where a long run would change the fill).
    pub fixed_calls: Option<u64>,
    /// The crates, fusebox first.
    pub entries: Vec<Entry>,
}

/// The reference closed-path config: 5 consecutive failures, open 30 s.
pub const REFERENCE: Spec = Spec::consecutive(5, Duration::from_secs(30));
/// The open-path config: as the reference, but open for an hour.
pub const OPEN: Spec = Spec::consecutive(5, Duration::from_secs(3600));
/// Count window of 100 calls, rate 0.5.
pub const COUNT_100: Spec = Spec::count_window(100, 0.5, Duration::from_secs(30));
/// Time window of 10 s in 10 buckets, rate 0.5.
pub const TIME_10S: Spec =
    Spec::time_window(Duration::from_secs(10), 10, 0.5, Duration::from_secs(30));
/// Slow calls (>= 1 s) at rate 0.5 on a count window of 100.
pub const SLOW: Spec = Spec::slow_calls(Duration::from_secs(1), 0.5, Duration::from_secs(30));
/// The mixed-load config: failure rate 0.3 over the last 20 calls (all 20
/// needed), open 1 us; with 20% failures the window rate hovers under the
/// threshold and crosses it every few dozen calls, and the open period is
/// over after a handful of rejections: recording and transitions dominate.
pub const MIXED: Spec = Spec::count_window(20, 0.3, Duration::from_micros(1));

fn entry(c: Crate, variant: &str, spec: Spec) -> Entry {
    Entry {
        krate: c.name(),
        variant: variant.to_string(),
        guarded: Guarded::Breaker(c, spec),
        prefill: 0,
    }
}

fn every_breaker(spec: Spec) -> Vec<Entry> {
    Crate::BREAKERS
        .iter()
        .map(|&c| entry(c, "", spec))
        .collect()
}

fn stack(krate: &'static str, variant: &str, stack: Stack) -> Entry {
    Entry {
        krate,
        variant: variant.to_string(),
        guarded: Guarded::Stack(stack),
        prefill: 0,
    }
}

fn baseline() -> Entry {
    entry(Crate::Baseline, "", REFERENCE)
}

/// Every scenario, in report order.
pub fn all() -> Vec<Scenario> {
    use Crate::*;
    let closed = |name, what, threads| Scenario {
        name,
        what,
        threads,
        load: Load::AllOk,
        open: false,
        fixed_calls: None,
        entries: vec![],
    };
    let mut v = Vec::new();

    v.push(Scenario {
        entries: every_breaker(REFERENCE),
        ..closed(
            "closed_1t",
            "closed path, every call succeeds, 1 thread; 5 consecutive failures (or closest)",
            1,
        )
    });

    let mut e2: Vec<Entry> = Crate::BREAKERS
        .iter()
        .map(|&c| entry(c, "consecutive", REFERENCE))
        .collect();
    e2.last_mut().expect("baseline").variant.clear();
    e2.insert(1, entry(Fusebox, "count_window", COUNT_100));
    e2.insert(2, entry(Fusebox, "time_window", TIME_10S));
    e2.push(entry(Recloser, "count_window", COUNT_100));
    e2.push(entry(TowerResilience, "count_window", COUNT_100));
    e2.push(entry(Failsafe, "time_window", TIME_10S));
    e2.push(entry(TowerResilience, "time_window", TIME_10S));
    e2.push(entry(Seatbelt, "time_window", TIME_10S));
    v.push(Scenario {
        entries: e2,
        ..closed(
            "closed_2t",
            "closed path, 2 threads on one shared breaker (longest thread), consecutive and windowed",
            2,
        )
    });

    for (name, what, threads) in [
        ("open_1t", "open path, every call rejected, 1 thread", 1),
        (
            "open_2t",
            "open path, every call rejected, 2 threads on one breaker",
            2,
        ),
    ] {
        v.push(Scenario {
            name,
            what,
            threads,
            load: Load::AllOk,
            open: true,
            fixed_calls: None,
            entries: every_breaker(OPEN),
        });
    }

    v.push(Scenario {
        name: "mixed_1t",
        what: "20% failures, rate 0.3 over 20 calls, open 1 us: recording and transitions",
        threads: 1,
        load: Load::Mixed20,
        open: false,
        fixed_calls: None,
        entries: every_breaker(MIXED),
    });

    // A background error rate that never trips (rate 0.5): the traffic a
    // production window holds.
    for (name, what, n) in [
        (
            "errors1_1t",
            "1% of calls fail (never tripping), 1 thread",
            100,
        ),
        (
            "errors5_1t",
            "5% of calls fail (never tripping), 1 thread",
            20,
        ),
        (
            "errors10_1t",
            "10% of calls fail (never tripping), 1 thread",
            10,
        ),
    ] {
        v.push(Scenario {
            name,
            what,
            threads: 1,
            load: Load::OneIn(n),
            open: false,
            fixed_calls: None,
            entries: vec![
                entry(Fusebox, "count_window", COUNT_100),
                entry(Fusebox, "time_window", TIME_10S),
                entry(Failsafe, "time_window", TIME_10S),
                entry(Recloser, "count_window", COUNT_100),
                baseline(),
            ],
        });
    }

    v.push(Scenario {
        entries: vec![
            entry(Fusebox, "consecutive", REFERENCE),
            entry(Fusebox, "count_window", COUNT_100),
            entry(Fusebox, "time_window", TIME_10S),
            entry(Fusebox, "slow_calls", SLOW),
            entry(Failsafe, "consecutive", REFERENCE),
            entry(Failsafe, "time_window", TIME_10S),
            entry(Recloser, "count_window", COUNT_100),
            entry(TowerResilience, "consecutive", REFERENCE),
            entry(TowerResilience, "count_window", COUNT_100),
            entry(TowerResilience, "time_window", TIME_10S),
            entry(TowerResilience, "slow_calls", SLOW),
            entry(Seatbelt, "time_window", TIME_10S),
            baseline(),
        ],
        ..closed(
            "policies",
            "each policy on the closed path, 1 thread, with the peers that have it",
            1,
        )
    });

    let mut wc = Vec::new();
    for c in [Fusebox, Recloser, TowerResilience] {
        for n in [10usize, 100, 1_000, 10_000] {
            wc.push(entry(
                c,
                &n.to_string(),
                Spec::count_window(n, 0.5, Duration::from_secs(30)),
            ));
        }
    }
    wc.push(baseline());
    v.push(Scenario {
        entries: wc,
        ..closed(
            "window_count",
            "count window of 10 / 100 / 1,000 / 10,000 calls, closed path, 1 thread",
            1,
        )
    });

    let ten = Duration::from_secs(10);
    let thirty = Duration::from_secs(30);
    v.push(Scenario {
        entries: vec![
            entry(
                Fusebox,
                "10_buckets",
                Spec::time_window(ten, 10, 0.5, thirty),
            ),
            entry(
                Fusebox,
                "100_buckets",
                Spec::time_window(ten, 100, 0.5, thirty),
            ),
            entry(Failsafe, "10s", Spec::time_window(ten, 10, 0.5, thirty)),
            entry(
                TowerResilience,
                "10s",
                Spec::time_window(ten, 10, 0.5, thirty),
            ),
            entry(Seatbelt, "10s", Spec::time_window(ten, 10, 0.5, thirty)),
            baseline(),
        ],
        ..closed(
            "window_time",
            "time window of 10 s in 10 / 100 buckets, closed path, 1 thread",
            1,
        )
    });

    let minute = Duration::from_secs(60);
    let mut fill = Vec::new();
    for (c, fills) in [
        (Fusebox, [1_000u64, 100_000]),
        (Failsafe, [1_000, 100_000]),
        (TowerResilience, [1_000, 20_000]),
        (Seatbelt, [1_000, 100_000]),
    ] {
        for f in fills {
            let mut e = entry(
                c,
                &format!("fill_{f}"),
                Spec::time_window(minute, 10, 0.5, thirty),
            );
            e.prefill = f;
            fill.push(e);
        }
    }
    v.push(Scenario {
        name: "time_window_fill",
        what: "time window of 60 s holding 1,000 vs 20,000-100,000 calls: 2,000 calls on a fresh, prefilled breaker",
        threads: 1,
        load: Load::AllOk,
        open: false,
        fixed_calls: Some(2_000),
        entries: fill,
    });

    for (name, what, threads) in [
        (
            "instrumented_1t",
            "closed path, bare breaker vs the same with the Prometheus Metrics listener (exact counters + duration histogram of one call in 16, its default; `_every`: of every call), 1 thread",
            1,
        ),
        (
            "instrumented_2t",
            "closed path, bare vs Prometheus-instrumented breaker, 2 threads on one breaker",
            2,
        ),
    ] {
        v.push(Scenario {
            entries: vec![
                entry(Fusebox, "consecutive", REFERENCE),
                stack("fusebox", "consecutive+metrics", Stack::Metrics(REFERENCE)),
                entry(Fusebox, "count_window", COUNT_100),
                stack("fusebox", "count_window+metrics", Stack::Metrics(COUNT_100)),
                stack(
                    "fusebox",
                    "consecutive+metrics_every",
                    Stack::MetricsEveryCall(REFERENCE),
                ),
                stack(
                    "fusebox",
                    "count_window+metrics_every",
                    Stack::MetricsEveryCall(COUNT_100),
                ),
                entry(Recloser, "consecutive", REFERENCE),
                entry(Recloser, "count_window", COUNT_100),
                baseline(),
            ],
            ..closed(name, what, threads)
        });
    }

    for (name, what, threads) in [
        (
            "stack_1t",
            "closed path through whole stacks: fusebox Pipeline (fallback, retry, breaker, bulkhead, timeout) sync and async, fusebox tower layers (retry, breaker, bulkhead, timeout), tower's Retry + ConcurrencyLimit + Timeout; 1 thread",
            1,
        ),
        (
            "stack_2t",
            "the same stacks, 2 threads sharing one stack",
            2,
        ),
    ] {
        v.push(Scenario {
            entries: vec![
                stack("fusebox", "pipeline_sync", Stack::PipelineSync),
                stack("fusebox", "pipeline_async", Stack::PipelineAsync),
                stack("fusebox", "tower", Stack::FuseboxTower),
                stack("tower", "limit+timeout+retry", Stack::TowerStack),
                baseline(),
            ],
            ..closed(name, what, threads)
        });
    }

    for (name, what, threads) in [
        (
            "async_1t",
            "closed path, CircuitBreaker::call vs call_async (a ready future polled in place, no runtime), 1 thread",
            1,
        ),
        (
            "async_2t",
            "closed path, call vs call_async, 2 threads on one breaker",
            2,
        ),
    ] {
        v.push(Scenario {
            entries: vec![
                entry(Fusebox, "call", REFERENCE),
                stack("fusebox", "call_async", Stack::BreakerAsync(REFERENCE)),
                baseline(),
            ],
            ..closed(name, what, threads)
        });
    }

    for (name, what, threads) in [
        (
            "keyed_1t",
            "one call through per-key breakers on a key that has its breaker, keys cycling over 100, 1 thread: fusebox BreakerSet vs seatbelt's breaker partitioned by key, and each crate's single breaker (5 consecutive failures or closest)",
            1,
        ),
        (
            "keyed_2t",
            "the same, 2 threads on one set (each cycling over the 100 keys from its own start)",
            2,
        ),
    ] {
        v.push(Scenario {
            entries: vec![
                stack("fusebox", "keyed", Stack::BreakerSet(REFERENCE)),
                entry(Fusebox, "single", REFERENCE),
                stack("seatbelt", "keyed", Stack::SeatbeltKeyed(REFERENCE)),
                entry(Seatbelt, "single", REFERENCE),
                baseline(),
            ],
            ..closed(name, what, threads)
        });
    }

    let hedge_delay = Duration::from_millis(10);
    v.push(Scenario {
        entries: vec![
            stack("fusebox", "fixed_10ms", Stack::HedgeFixed(hedge_delay)),
            stack("fusebox", "p95", Stack::HedgeQuantile(0.95)),
            stack("fusebox", "tower_10ms", Stack::FuseboxTowerHedge(hedge_delay)),
            stack("tower", "p95", Stack::TowerHedge(hedge_delay)),
            stack("baseline", "async", Stack::AsyncBaseline),
            stack("baseline", "tower", Stack::TowerBaseline),
        ],
        ..closed(
            "hedge_1t",
            "a hedged call whose first attempt answers at once (no hedge is sent), awaited in a current-thread runtime with time: fusebox Hedge (fixed 10 ms delay; p95 delay; its tower HedgeLayer, 10 ms), tower's Hedge (p95 of a histogram seeded with 10 ms), the operation awaited directly and as a tower service; 1 thread",
            1,
        )
    });

    for (name, what, threads) in [
        (
            "bulkhead_1t",
            "bulkhead try-acquire + release around the call, limit 64, 1 thread",
            1,
        ),
        (
            "bulkhead_2t",
            "bulkhead try-acquire + release, limit 64, 2 threads on one bulkhead",
            2,
        ),
    ] {
        v.push(Scenario {
            name,
            what,
            threads,
            load: Load::AllOk,
            open: false,
            fixed_calls: None,
            entries: Limiter::ALL
                .iter()
                .filter(|l| l.build(1).is_some())
                .map(|&l| Entry {
                    krate: l.name(),
                    variant: String::new(),
                    guarded: Guarded::Limiter(l, 64),
                    prefill: 0,
                })
                .collect(),
        });
    }
    v
}
