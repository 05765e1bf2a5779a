//! Prometheus exposition: drive breakers through their states on a
//! ManualClock, scrape the registry, parse the OpenMetrics text and check
//! every series and value.
#![cfg(feature = "prometheus")]

use fusebox::metrics::Metrics;
use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
use fusebox::BreakerConfig;
use fusebox::{CallEvent, CircuitBreaker, Listener, ManualClock, Outcome, Timing};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::time::Duration;

// ---------------------------------------------------------------------------
// A small OpenMetrics text parser (the subset prometheus-client writes).

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

#[derive(Debug, Default)]
struct Exposition {
    /// Family name -> type from `# TYPE`.
    types: BTreeMap<String, String>,
    samples: Vec<Sample>,
    eof: bool,
}

fn parse_labels(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek() == Some(&',') || chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(labels);
        }
        let mut key = String::new();
        for c in chars.by_ref() {
            if c == '=' {
                break;
            }
            key.push(c);
        }
        if chars.next() != Some('"') {
            return Err(format!("label {key}: value not quoted in {s:?}"));
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(c) => value.push(c),
                    None => return Err("dangling escape".into()),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => return Err(format!("unterminated value in {s:?}")),
            }
        }
        if labels.insert(key.clone(), value).is_some() {
            return Err(format!("label {key} twice"));
        }
    }
}

fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    for line in text.lines() {
        if out.eof {
            return Err(format!("line after # EOF: {line:?}"));
        }
        if line == "# EOF" {
            out.eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').ok_or("bad TYPE")?;
            out.types.insert(name.to_owned(), ty.to_owned());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with('#') {
            return Err(format!("unknown comment {line:?}"));
        }
        let (series, value) = match line.find('{') {
            Some(open) => {
                let close = line.rfind('}').ok_or("no closing brace")?;
                let labels = parse_labels(&line[open + 1..close])?;
                let value = line[close + 1..].trim();
                ((line[..open].to_owned(), labels), value)
            }
            None => {
                let (name, value) = line.split_once(' ').ok_or("no value")?;
                ((name.to_owned(), BTreeMap::new()), value.trim())
            }
        };
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse::<f64>()
                .map_err(|e| format!("value {v:?} in {line:?}: {e}"))?,
        };
        out.samples.push(Sample {
            name: series.0,
            labels: series.1,
            value,
        });
    }
    if !out.eof {
        return Err("no # EOF".into());
    }
    Ok(out)
}

impl Exposition {
    /// The single sample `name` whose labels are exactly `labels`.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let hits: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| s.name == name && s.labels == want)
            .collect();
        assert_eq!(
            hits.len(),
            1,
            "expected one sample {name}{want:?}, found {hits:?}"
        );
        hits[0].value
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.samples.iter().any(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    /// The state whose `fusebox_circuit_state` is 1; checks the others are 0.
    fn state(&self, name: &str) -> String {
        let mut current = Vec::new();
        for state in ["closed", "open", "half_open", "forced_open", "disabled"] {
            let v = self.get("fusebox_circuit_state", &[("name", name), ("state", state)]);
            assert!(v == 0.0 || v == 1.0, "{state} = {v}");
            if v == 1.0 {
                current.push(state.to_owned());
            }
        }
        assert_eq!(current.len(), 1, "exactly one state is 1: {current:?}");
        current.pop().unwrap()
    }

    fn calls(&self, name: &str, outcome: &str) -> f64 {
        self.get(
            "fusebox_calls_total",
            &[("name", name), ("outcome", outcome)],
        )
    }

    fn transitions(&self, name: &str, from: &str, to: &str) -> f64 {
        self.get(
            "fusebox_transitions_total",
            &[("name", name), ("from", from), ("to", to)],
        )
    }
}

fn scrape(registry: &Registry) -> Exposition {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    parse(&text).unwrap_or_else(|e| panic!("unparsable exposition ({e}):\n{text}"))
}

#[test]
fn parser_reads_escapes_and_rejects_garbage() {
    let e = parse("# TYPE a gauge\na{x=\"q\\\"uo\\\\te\\n\",y=\"\"} 1.5\n# EOF\n").unwrap();
    assert_eq!(e.samples[0].labels["x"], "q\"uo\\te\n");
    assert_eq!(e.samples[0].value, 1.5);
    assert!(parse("a 1\n").is_err(), "missing EOF");
    assert!(parse("a{x=1} 1\n# EOF\n").is_err(), "unquoted label");
    assert!(parse("a{x=\"1\"} one\n# EOF\n").is_err(), "bad value");
}

// ---------------------------------------------------------------------------

#[test]
fn open_half_open_closed_in_the_exposition() {
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    // Every call timed, so that the histogram below holds each of them (the
    // default samples: see the test after this one).
    let metrics = Metrics::new(&mut registry).with_timing(Timing::Every);
    let db = metrics
        .build(
            "db",
            CircuitBreaker::builder()
                .consecutive_failures(2)
                .open_for(Duration::from_secs(10))
                .clock(clock.clone()),
        )
        .unwrap();

    // Families and types.
    let e = scrape(&registry);
    assert_eq!(e.types["fusebox_circuit_state"], "gauge");
    assert_eq!(e.types["fusebox_calls"], "counter");
    assert_eq!(e.types["fusebox_call_duration_seconds"], "histogram");
    assert_eq!(e.types["fusebox_transitions"], "counter");
    assert_eq!(e.types["fusebox_failure_rate"], "gauge");
    assert_eq!(e.types["fusebox_slow_call_rate"], "gauge");

    // Fresh: closed, every counter at 0, the automatic edges present at 0.
    assert_eq!(e.state("db"), "closed");
    for outcome in ["success", "failure", "ignored", "rejected"] {
        assert_eq!(e.calls("db", outcome), 0.0, "{outcome}");
    }
    for (from, to) in [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
        ("half_open", "open"),
    ] {
        assert_eq!(e.transitions("db", from, to), 0.0, "{from}->{to}");
    }

    // One success taking 3 ms, one ignored, then two failures of 20 ms: open.
    let p = db.try_acquire().unwrap();
    clock.advance(Duration::from_millis(3));
    p.success();
    db.call_with(|_| Outcome::Ignore, || Err::<(), _>("404"))
        .unwrap_err();
    for _ in 0..2 {
        let p = db.try_acquire().unwrap();
        clock.advance(Duration::from_millis(20));
        p.failure();
    }
    // Two rejected calls while open.
    for _ in 0..2 {
        assert!(db.call(|| Ok::<_, ()>(())).unwrap_err().is_rejected());
    }
    let e = scrape(&registry);
    assert_eq!(e.state("db"), "open");
    assert_eq!(e.calls("db", "success"), 1.0);
    assert_eq!(e.calls("db", "ignored"), 1.0);
    assert_eq!(e.calls("db", "failure"), 2.0);
    assert_eq!(e.calls("db", "rejected"), 2.0);
    assert_eq!(e.transitions("db", "closed", "open"), 1.0);
    assert_eq!(e.transitions("db", "open", "half_open"), 0.0);
    // Histogram: 4 admitted calls (success 3 ms, ignored 0, failures 20 ms each).
    let count = e.get("fusebox_call_duration_seconds_count", &[("name", "db")]);
    let sum = e.get("fusebox_call_duration_seconds_sum", &[("name", "db")]);
    assert_eq!(count, 4.0);
    assert!((sum - 0.043).abs() < 1e-9, "sum {sum}");
    let bucket = |le: &str| {
        e.get(
            "fusebox_call_duration_seconds_bucket",
            &[("name", "db"), ("le", le)],
        )
    };
    assert_eq!(bucket("0.001"), 1.0); // the ignored call, 0 s
    assert_eq!(bucket("0.005"), 2.0); // + the 3 ms success
    assert_eq!(bucket("0.01"), 2.0);
    assert_eq!(bucket("0.025"), 4.0); // + the two 20 ms failures
    assert_eq!(bucket("+Inf"), 4.0);

    // Open period over: the scrape itself sees half-open (lazy transition).
    clock.advance(Duration::from_secs(10));
    let e = scrape(&registry);
    assert_eq!(e.state("db"), "half_open");
    assert_eq!(e.transitions("db", "open", "half_open"), 1.0);

    // The probe succeeds: closed.
    db.call(|| Ok::<_, ()>(())).unwrap();
    let e = scrape(&registry);
    assert_eq!(e.state("db"), "closed");
    assert_eq!(e.transitions("db", "half_open", "closed"), 1.0);
    assert_eq!(e.transitions("db", "closed", "open"), 1.0);
    assert_eq!(e.transitions("db", "half_open", "open"), 0.0);
    assert_eq!(e.calls("db", "success"), 2.0);
    assert_eq!(e.calls("db", "rejected"), 2.0);

    // Manual edges appear when first taken.
    assert!(!e.has(
        "fusebox_transitions_total",
        &[("name", "db"), ("to", "forced_open")]
    ));
    db.force_open();
    let e = scrape(&registry);
    assert_eq!(e.state("db"), "forced_open");
    assert_eq!(e.transitions("db", "closed", "forced_open"), 1.0);
}

/// Drives `breaker` through `calls` calls that never trip it (a success,
/// a failure, an ignored call, in turn), call `i` taking `i % 7` ms on
/// `clock`; returns the durations in ms of every call, in order.
fn drive(breaker: &CircuitBreaker, clock: &ManualClock, calls: u64) -> Vec<u64> {
    (0..calls)
        .map(|i| {
            let p = breaker.try_acquire().expect("a breaker that never trips");
            clock.advance(Duration::from_millis(i % 7));
            match i % 3 {
                0 => p.success(),
                1 => p.failure(),
                _ => p.ignore(),
            }
            i % 7
        })
        .collect()
}

/// `(count, sum in ms)` of `name`'s duration histogram; checks that the
/// buckets add up to the count.
fn histogram(e: &Exposition, name: &str) -> (f64, f64) {
    let count = e.get("fusebox_call_duration_seconds_count", &[("name", name)]);
    let sum = e.get("fusebox_call_duration_seconds_sum", &[("name", name)]);
    let inf = e.get(
        "fusebox_call_duration_seconds_bucket",
        &[("name", name), ("le", "+Inf")],
    );
    assert_eq!(inf, count, "{name}: +Inf bucket");
    (count, (sum * 1e3).round())
}

#[test]
fn counters_are_exact_and_the_histogram_times_one_call_in_n() {
    const CALLS: u64 = 1000;
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    let sampled = Metrics::new(&mut registry);
    assert_eq!(sampled.timing(), fusebox::metrics::DEFAULT_TIMING);
    assert_eq!(fusebox::metrics::DEFAULT_TIMING, Timing::OneIn(16));
    let every = sampled.clone().with_timing(Timing::Every);
    let four = sampled.clone().with_timing(Timing::OneIn(4));
    let count_window = || {
        CircuitBreaker::builder()
            .failure_rate(0.9)
            .count_window(100)
            .min_calls(100)
            .clock(clock.clone())
    };
    let consecutive = || {
        CircuitBreaker::builder()
            .consecutive_failures(5)
            .clock(clock.clone())
    };
    let breakers = [
        (
            "window_16",
            sampled.build("window_16", count_window()).unwrap(),
            16,
        ),
        (
            "window_every",
            every.build("window_every", count_window()).unwrap(),
            1,
        ),
        (
            "window_4",
            four.build("window_4", count_window()).unwrap(),
            4,
        ),
        (
            "consecutive_16",
            sampled.build("consecutive_16", consecutive()).unwrap(),
            16,
        ),
        (
            "consecutive_every",
            every.build("consecutive_every", consecutive()).unwrap(),
            1,
        ),
    ];
    for (name, breaker, n) in &breakers {
        let durations = drive(breaker, &clock, CALLS);
        let e = scrape(&registry);
        // Every call is counted, whatever the sampling.
        assert_eq!(e.calls(name, "success"), 334.0, "{name}");
        assert_eq!(e.calls(name, "failure"), 333.0, "{name}");
        assert_eq!(e.calls(name, "ignored"), 333.0, "{name}");
        assert_eq!(e.calls(name, "rejected"), 0.0, "{name}");
        // The histogram holds the 1st, n+1th, 2n+1th, ... call, and only them.
        let timed: Vec<u64> = durations.iter().copied().step_by(*n).collect();
        assert_eq!(timed.len() as u64, CALLS.div_ceil(*n as u64), "{name}");
        let (count, sum_ms) = histogram(&e, name);
        assert_eq!(count, timed.len() as f64, "{name}: histogram count");
        assert_eq!(
            sum_ms,
            timed.iter().sum::<u64>() as f64,
            "{name}: histogram sum"
        );
    }
}

/// Counts what it hears; asks for every call to be timed.
#[derive(Default)]
struct Heard {
    calls: std::sync::atomic::AtomicU64,
    timed: std::sync::atomic::AtomicU64,
}

impl Listener for Heard {
    fn on_call(&self, call: &CallEvent) {
        use std::sync::atomic::Ordering::Relaxed;
        self.calls.fetch_add(1, Relaxed);
        if call.timed {
            self.timed.fetch_add(1, Relaxed);
        }
    }
}

#[test]
fn a_slow_call_rule_or_another_listener_has_every_call_timed() {
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let slow = metrics
        .build(
            "slow",
            CircuitBreaker::builder()
                .failure_rate(0.9)
                .slow_calls(Duration::from_secs(10), 0.9)
                .count_window(100)
                .min_calls(100)
                .clock(clock.clone()),
        )
        .unwrap();
    let heard = std::sync::Arc::new(Heard::default());
    let shared = metrics
        .build(
            "shared",
            CircuitBreaker::builder()
                .consecutive_failures(5)
                .listener(std::sync::Arc::clone(&heard))
                .clock(clock.clone()),
        )
        .unwrap();
    for (name, breaker) in [("slow", &slow), ("shared", &shared)] {
        let durations = drive(breaker, &clock, 100);
        let (count, sum_ms) = histogram(&scrape(&registry), name);
        assert_eq!(count, 100.0, "{name}");
        assert_eq!(sum_ms, durations.iter().sum::<u64>() as f64, "{name}");
    }
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(heard.calls.load(Relaxed), 100);
    assert_eq!(heard.timed.load(Relaxed), 100);
}

#[test]
fn the_sample_is_exact_over_threads() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry).with_timing(Timing::OneIn(7));
    let db = metrics
        .build(
            "db",
            CircuitBreaker::builder()
                .failure_rate(0.9)
                .count_window(100)
                .min_calls(100),
        )
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..2500 {
                    db.call(|| Ok::<_, ()>(())).unwrap();
                }
            });
        }
    });
    let e = scrape(&registry);
    assert_eq!(e.calls("db", "success"), 10_000.0);
    assert_eq!(histogram(&e, "db").0, 10_000u64.div_ceil(7) as f64);
}

#[test]
fn failure_and_slow_call_rates_are_exported() {
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let api = metrics
        .build(
            "api",
            CircuitBreaker::builder()
                .failure_rate(0.9)
                .count_window(10)
                .min_calls(10)
                .slow_calls(Duration::from_millis(100), 0.9)
                .clock(clock.clone()),
        )
        .unwrap();
    // 4 calls: 1 failure, 2 slow (one of them the failure).
    for (fail, ms) in [(true, 150), (false, 150), (false, 10), (false, 10)] {
        let p = api.try_acquire().unwrap();
        clock.advance(Duration::from_millis(ms));
        if fail {
            p.failure()
        } else {
            p.success()
        }
    }
    let e = scrape(&registry);
    assert_eq!(e.state("api"), "closed");
    assert_eq!(e.get("fusebox_failure_rate", &[("name", "api")]), 0.25);
    assert_eq!(e.get("fusebox_slow_call_rate", &[("name", "api")]), 0.5);
}

#[test]
fn registry_breakers_with_tags_and_reconfiguration() {
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let mut config = FuseboxConfig::default();
    let mut pay = BreakerEntry::from(BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    });
    pay.tags.insert("service".into(), "payments".into());
    pay.tags.insert("not a label".into(), "x".into());
    config.breakers.insert("pay-eu".into(), pay);
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .observer(metrics.clone())
        .build()
        .unwrap();

    let pay = fusebox.breaker("pay-eu");
    fusebox.breaker("search");
    let _ = pay.call(|| Err::<(), _>("down"));
    let e = scrape(&registry);
    assert_eq!(e.state("pay-eu"), "open");
    assert_eq!(e.state("search"), "closed");
    assert_eq!(
        e.get(
            "fusebox_breaker_info",
            &[("name", "pay-eu"), ("service", "payments")]
        ),
        1.0
    );
    assert_eq!(e.get("fusebox_breaker_info", &[("name", "search")]), 1.0);

    // A reconfigured breaker keeps its series (same breaker, counters continue).
    fusebox.reset("pay-eu").unwrap();
    let mut tighter = fusebox.config("pay-eu").settings;
    tighter.consecutive_failures = Some(2);
    fusebox.reconfigure("pay-eu", tighter).unwrap();
    let pay = fusebox.breaker("pay-eu");
    let _ = pay.call(|| Err::<(), _>("down"));
    let e = scrape(&registry);
    assert_eq!(e.state("pay-eu"), "closed", "now needs 2 failures");
    assert_eq!(e.calls("pay-eu", "failure"), 2.0, "1 before + 1 after");
    assert_eq!(e.transitions("pay-eu", "closed", "open"), 1.0);
    assert_eq!(e.transitions("pay-eu", "open", "closed"), 1.0);
}

// ---------------------------------------------------------------------------
// No allocation per call: count this thread's allocations while calls run.

mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static COUNT: Cell<u64> = const { Cell::new(0) };
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if ON.with(Cell::get) {
                COUNT.with(|c| c.set(c.get() + 1));
            }
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    /// Allocations made by this thread while `f` runs.
    pub fn allocations(f: impl FnOnce()) -> u64 {
        COUNT.with(|c| c.set(0));
        ON.with(|o| o.set(true));
        f();
        ON.with(|o| o.set(false));
        COUNT.with(Cell::get)
    }
}

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

#[test]
fn calls_do_not_allocate() {
    let clock = ManualClock::new();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let db = metrics
        .build(
            "db",
            CircuitBreaker::builder()
                .failure_rate(0.9)
                .count_window(100)
                .min_calls(100)
                .clock(clock.clone()),
        )
        .unwrap();
    let gate = metrics
        .build("gate", CircuitBreaker::builder().clock(clock.clone()))
        .unwrap();
    gate.force_open();
    // Warm up (first use of anything lazily initialised).
    db.call(|| Ok::<_, ()>(())).unwrap();
    let _ = gate.call(|| Ok::<_, ()>(()));

    let n = counting::allocations(|| {
        for i in 0..1000u32 {
            let p = db.try_acquire().unwrap();
            clock.advance(Duration::from_micros(u64::from(i % 7)));
            match i % 3 {
                0 => p.success(),
                1 => p.failure(),
                _ => p.ignore(),
            }
            assert!(gate.try_acquire().is_err());
        }
    });
    assert_eq!(
        n, 0,
        "allocations in 1000 instrumented calls + 1000 rejections"
    );
    // ... and the calls were counted.
    let e = scrape(&registry);
    assert_eq!(e.calls("db", "success"), 1.0 + 334.0);
    assert_eq!(e.calls("db", "failure"), 333.0);
    assert_eq!(e.calls("db", "ignored"), 333.0);
    assert_eq!(e.calls("gate", "rejected"), 1001.0);
    // The counting allocator works: a Vec allocates.
    assert_eq!(counting::allocations(|| drop(vec![1u8; 16])), 1);
}

#[test]
fn bulkhead_series() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let fusebox = Fusebox::builder().observer(metrics).build().unwrap();
    let config = fusebox::registry::BulkheadConfig {
        max_concurrent: Some(2),
        ..Default::default()
    };
    let reviews = config.build("reviews");
    // Through the registry's observer:
    let db = fusebox.bulkhead("db");
    let _a = db.try_acquire().unwrap();
    let e = scrape(&registry);
    assert_eq!(e.types["fusebox_bulkhead_in_use"], "gauge");
    assert_eq!(e.types["fusebox_bulkhead_rejections"], "counter");
    assert_eq!(e.get("fusebox_bulkhead_in_use", &[("name", "db")]), 1.0);
    assert_eq!(
        e.get("fusebox_bulkhead_limit", &[("name", "db")]),
        fusebox::registry::DEFAULT_MAX_CONCURRENT as f64
    );
    assert_eq!(e.get("fusebox_bulkhead_waiting", &[("name", "db")]), 0.0);
    assert_eq!(
        e.get("fusebox_bulkhead_rejections_total", &[("name", "db")]),
        0.0
    );
    assert!(!e.has("fusebox_bulkhead_in_use", &[("name", "reviews")]));
    drop(reviews);
}

#[test]
fn bulkhead_tracked_by_hand_counts_rejections() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let reviews = fusebox::Bulkhead::new(2);
    metrics.track_bulkhead("reviews", &reviews);
    let a = reviews.try_acquire().unwrap();
    let _b = reviews.try_acquire().unwrap();
    for _ in 0..3 {
        assert!(reviews.try_acquire().is_err());
    }
    let e = scrape(&registry);
    assert_eq!(
        e.get("fusebox_bulkhead_in_use", &[("name", "reviews")]),
        2.0
    );
    assert_eq!(e.get("fusebox_bulkhead_limit", &[("name", "reviews")]), 2.0);
    assert_eq!(
        e.get("fusebox_bulkhead_rejections_total", &[("name", "reviews")]),
        3.0
    );
    drop(a);
    let e = scrape(&registry);
    assert_eq!(
        e.get("fusebox_bulkhead_in_use", &[("name", "reviews")]),
        1.0
    );
}

#[test]
fn shadow_modes_and_what_they_let_through_are_exported() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let clock = ManualClock::new();
    let fusebox = Fusebox::builder()
        .observer(metrics)
        .config(
            FuseboxConfig::from_toml(
                "[breakers.db]\nconsecutive_failures = 1\nmode = \"shadow\"\n\
                 [bulkheads.reviews]\nmax_concurrent = 1\nmode = \"shadow\"\n",
            )
            .unwrap(),
        )
        .clock(clock)
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    let _ = db.call(|| Err::<(), _>("down"));
    assert!(db.call(|| Ok::<_, &str>(())).is_ok());
    let reviews = fusebox.bulkhead("reviews");
    let _a = reviews.try_acquire().unwrap();
    let _b = reviews.try_acquire().unwrap();

    let e = scrape(&registry);
    assert_eq!(e.calls("db", "shadowed"), 1.0);
    assert_eq!(e.calls("db", "rejected"), 0.0);
    assert_eq!(
        e.get("fusebox_bulkhead_shadowed_total", &[("name", "reviews")]),
        1.0
    );
    assert_eq!(
        e.get("fusebox_bulkhead_in_use", &[("name", "reviews")]),
        2.0
    );
    let mode = |name, policy, mode| {
        e.get(
            "fusebox_policy_mode",
            &[("name", name), ("policy", policy), ("mode", mode)],
        )
    };
    assert_eq!(mode("db", "breaker", "shadow"), 1.0);
    assert_eq!(mode("reviews", "bulkhead", "shadow"), 1.0);
    assert_eq!(e.types["fusebox_policy_mode"], "gauge");

    fusebox.bulkhead("reviews").set_mode(fusebox::Mode::Enforce);
    let e = scrape(&registry);
    assert!(e.has(
        "fusebox_policy_mode",
        &[
            ("name", "reviews"),
            ("policy", "bulkhead"),
            ("mode", "enforce")
        ]
    ));
    assert!(!e.has(
        "fusebox_policy_mode",
        &[
            ("name", "reviews"),
            ("policy", "bulkhead"),
            ("mode", "shadow")
        ]
    ));
}

/// A breaker set with 500 keys exports a fixed number of series (its
/// figures, never one series per key), with outlier ejections counted.
#[test]
fn a_breaker_set_is_exported_with_bounded_series_through_inspect() {
    use fusebox::set::{BreakerSet, Outliers};
    use std::sync::Arc;

    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let clock = ManualClock::new();
    let hosts: BreakerSet<String> = BreakerSet::builder(
        CircuitBreaker::builder()
            .consecutive_failures(3)
            .clock(clock.clone()),
    )
    .max_keys(1_000)
    .outliers(Outliers::default().consecutive_failures(Some(2)))
    .build()
    .unwrap();
    metrics.track_policy("hosts", Arc::new(hosts.clone()));
    let series = |registry: &Registry| fusebox::metrics::encode_text(registry).lines().count();
    let _ = hosts.call("h0", || Ok::<_, ()>(()));
    let few = series(&registry);
    for i in 0..500 {
        let _ = hosts.call(&*format!("h{i}"), || Ok::<_, ()>(()));
    }
    for _ in 0..3 {
        let _ = hosts.call("h1", || Err::<(), _>(())); // trips on its own
    }
    for _ in 0..2 {
        let _ = hosts.call("h2", || Err::<(), _>(())); // ejected below
    }
    assert_eq!(hosts.detect_outliers(), vec!["h2".to_string()]);
    assert_eq!(series(&registry), few, "500 keys add no series");

    let e = scrape(&registry);
    let get = |metric| e.get(metric, &[("name", "hosts")]);
    assert_eq!(get("fusebox_breaker_set_keys"), 500.0);
    assert_eq!(get("fusebox_breaker_set_max_keys"), 1_000.0);
    assert_eq!(get("fusebox_breaker_set_open"), 2.0);
    assert_eq!(get("fusebox_breaker_set_ejected"), 1.0);
    assert_eq!(get("fusebox_breaker_set_ejections_total"), 1.0);
    assert_eq!(get("fusebox_breaker_set_overflowed_total"), 0.0);
    assert_eq!(e.types["fusebox_breaker_set_ejections"], "counter");
}

#[cfg(feature = "ratelimit")]
#[test]
fn a_rate_limiter_is_exported_through_inspect_alone() {
    use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig, RateLimiter};
    use std::sync::Arc;

    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let clock = ManualClock::new();
    let partner = RateLimiter::builder()
        .config(RateLimitConfig::per_second(10).burst(2))
        .clock(clock.clone())
        .build()
        .unwrap();
    let tenants = KeyedRateLimiter::<u32>::builder()
        .config(RateLimitConfig::per_second(1))
        .clock(clock)
        .build()
        .unwrap();
    metrics.track_policy("partner", Arc::new(partner.clone()));
    metrics.track_policy("tenants", Arc::new(tenants.clone()));
    for _ in 0..5 {
        let _ = partner.try_acquire();
    }
    for t in 0..3 {
        let _ = tenants.try_acquire(&t);
    }

    let e = scrape(&registry);
    let get = |metric, name| e.get(metric, &[("name", name)]);
    assert_eq!(get("fusebox_rate_limiter_admitted_total", "partner"), 2.0);
    assert_eq!(get("fusebox_rate_limiter_refused_total", "partner"), 3.0);
    assert_eq!(get("fusebox_rate_limiter_shadowed_total", "partner"), 0.0);
    assert_eq!(get("fusebox_rate_limiter_admitted_total", "tenants"), 3.0);
    assert_eq!(get("fusebox_rate_limiter_keys", "tenants"), 3.0);
    assert_eq!(e.types["fusebox_rate_limiter_refused"], "counter");
    assert_eq!(e.types["fusebox_rate_limiter_keys"], "gauge");
    assert!(e.has(
        "fusebox_policy_mode",
        &[
            ("name", "partner"),
            ("policy", "rate_limiter"),
            ("mode", "enforce")
        ]
    ));
}

#[cfg(feature = "ratelimit")]
#[test]
fn the_registrys_rate_limiters_are_exported_from_the_moment_it_is_built() {
    use fusebox::ratelimit::RateLimitConfig;
    use fusebox::registry::DependencyConfig;

    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let mut config = FuseboxConfig::default();
    config.dependencies.insert(
        "partner".into(),
        DependencyConfig {
            rate_limit: Some(RateLimitConfig::per_second(10).burst(2)),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(ManualClock::new())
        .observer(metrics)
        .build()
        .unwrap();

    let e = scrape(&registry);
    let get = |e: &Exposition, metric| e.get(metric, &[("name", "partner")]);
    assert!(
        e.has(
            "fusebox_rate_limiter_admitted_total",
            &[("name", "partner")]
        ),
        "exported before the first call"
    );
    assert_eq!(get(&e, "fusebox_rate_limiter_refused_total"), 0.0);

    let partner = fusebox.rate_limiter("partner").unwrap();
    for _ in 0..5 {
        let _ = partner.try_acquire();
    }
    let e = scrape(&registry);
    assert_eq!(get(&e, "fusebox_rate_limiter_admitted_total"), 2.0);
    assert_eq!(get(&e, "fusebox_rate_limiter_refused_total"), 3.0);
    assert!(e.has(
        "fusebox_policy_mode",
        &[
            ("name", "partner"),
            ("policy", "rate_limiter"),
            ("mode", "enforce")
        ]
    ));

    // A reload to shadow is seen through the same series: the same limiter.
    let mut shadow = FuseboxConfig::default();
    shadow.dependencies.insert(
        "partner".into(),
        DependencyConfig {
            rate_limit: Some(
                RateLimitConfig::per_second(10)
                    .burst(2)
                    .mode(fusebox::Mode::Shadow),
            ),
            ..Default::default()
        },
    );
    fusebox.reload(shadow).unwrap();
    let _ = partner.try_acquire();
    let e = scrape(&registry);
    assert_eq!(get(&e, "fusebox_rate_limiter_shadowed_total"), 1.0);
    assert!(e.has(
        "fusebox_policy_mode",
        &[
            ("name", "partner"),
            ("policy", "rate_limiter"),
            ("mode", "shadow")
        ]
    ));
}

/// A pipeline's stages are exported whatever their kind, read through
/// `Inspect`: here a rate limiter and a bulkhead.
#[cfg(feature = "ratelimit")]
#[test]
fn a_tracked_pipeline_exports_every_stage_it_holds() {
    use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let limiter = RateLimiter::new(RateLimitConfig::per_second(1).burst(1)).unwrap();
    let p = metrics.track_pipeline(
        "partner",
        fusebox::Pipeline::builder()
            .rate_limiter(limiter)
            .bulkhead(fusebox::Bulkhead::new(3))
            .build(),
    );
    let _ = p.call(|| Ok::<_, std::io::Error>(()));
    let _ = p.call(|| Ok::<_, std::io::Error>(()));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(r#"fusebox_rate_limiter_refused_total{name="partner"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fusebox_rate_limiter_admitted_total{name="partner"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fusebox_bulkhead_limit{name="partner"} 3"#),
        "{text}"
    );
}

/// Every `# TYPE` name of an exposition, with how often it appears.
fn type_lines(text: &str) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for name in text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
    {
        *seen.entry(name.to_owned()).or_insert(0) += 1;
    }
    seen
}

/// Two `Metrics::new` on one registry (two registries of breakers, each
/// with its own observer): one set of families, both registries' breakers
/// in it, no family named twice, no probe marker left in the exposition.
#[test]
fn a_second_metrics_on_one_registry_shares_the_families() {
    let mut registry = Registry::default();
    let first = Metrics::new(&mut registry);
    let second = Metrics::new(&mut registry);
    let orders = Fusebox::builder().observer(first).build().unwrap();
    let users = Fusebox::builder().observer(second.clone()).build().unwrap();
    orders.breaker("orders").force_open();
    users.breaker("users");
    let third = Metrics::new(&mut registry);
    third
        .build("cache", CircuitBreaker::builder())
        .unwrap()
        .call(|| Ok::<_, ()>(()))
        .unwrap();
    let text = fusebox::metrics::encode_text(&registry);
    let types = type_lines(&text);
    assert!(types.values().all(|&n| n == 1), "{types:?}");
    assert!(!text.contains("probe"), "{text}");
    let e = scrape(&registry);
    let state = |name: &str, state: &str| {
        e.samples.iter().any(|s| {
            s.name == "fusebox_circuit_state"
                && s.labels["name"] == name
                && s.labels["state"] == state
                && s.value == 1.0
        })
    };
    assert!(state("orders", "forced_open") && state("users", "closed") && state("cache", "closed"));
    assert!(e.samples.iter().any(|s| s.name == "fusebox_calls_total"
        && s.labels["name"] == "cache"
        && s.labels["outcome"] == "success"
        && s.value == 1.0));
}

/// Under different prefixes the families are different names: each
/// `Metrics` exports its own; under the same prefix they share.
#[test]
fn metrics_under_other_prefixes_are_their_own() {
    let mut registry = Registry::default();
    let top = Metrics::new(&mut registry);
    let a = Metrics::new(registry.sub_registry_with_prefix("a"));
    let a_again = Metrics::new(
        registry
            .sub_registry_with_prefix("b")
            .sub_registry_with_prefix("x"),
    );
    top.build("top", CircuitBreaker::builder()).unwrap();
    a.build("in_a", CircuitBreaker::builder()).unwrap();
    a_again.build("in_bx", CircuitBreaker::builder()).unwrap();
    let mut prefixed = Registry::with_prefix("app");
    let p1 = Metrics::new(&mut prefixed);
    let p2 = Metrics::new(&mut prefixed);
    p1.build("one", CircuitBreaker::builder()).unwrap();
    p2.build("two", CircuitBreaker::builder()).unwrap();

    let text = fusebox::metrics::encode_text(&registry);
    let types = type_lines(&text);
    assert!(types.values().all(|&n| n == 1), "{types:?}");
    for (family, name) in [
        ("fusebox_circuit_state", "top"),
        ("a_fusebox_circuit_state", "in_a"),
        ("b_x_fusebox_circuit_state", "in_bx"),
    ] {
        let line = format!("{family}{{name=\"{name}\",state=\"closed\"}} 1");
        assert!(text.contains(&line), "{line} missing:\n{text}");
    }
    let text = fusebox::metrics::encode_text(&prefixed);
    assert_eq!(
        text.matches("# TYPE app_fusebox_calls counter").count(),
        1,
        "{text}"
    );
    assert!(text.contains(r#"app_fusebox_circuit_state{name="one",state="closed"} 1"#));
    assert!(text.contains(r#"app_fusebox_circuit_state{name="two",state="closed"} 1"#));
}

/// A tracked pipeline's hedge and a standard stack's breakers per
/// authority are exported with the rest of their policies.
#[cfg(all(feature = "tokio", feature = "http"))]
#[tokio::test(start_paused = true)]
async fn a_pipelines_hedge_and_a_stacks_breakers_per_host_are_exported() {
    use fusebox::hedge::{Delay, Hedge};
    use fusebox::BreakerSet;

    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let hedge = Hedge::builder()
        .delay(Delay::Fixed(Duration::from_millis(10)))
        .build()
        .unwrap();
    let p = metrics.track_pipeline("search", fusebox::Pipeline::builder().hedge(hedge).build());
    let mut n = 0;
    let r = p
        .call_async(|| {
            n += 1;
            let wait = if n == 1 { 1_000 } else { 1 };
            async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                Ok::<_, std::io::Error>(())
            }
        })
        .await;
    assert!(r.is_ok());
    let hosts: BreakerSet<String> = BreakerSet::builder(CircuitBreaker::builder())
        .build()
        .unwrap();
    let stack = fusebox::http::Standard::builder("cdn")
        .per_authority(hosts.clone())
        .build();
    metrics.track_standard(&stack);
    hosts.get("https://a:443").force_open();

    let e = scrape(&registry);
    let get = |metric, name| e.get(metric, &[("name", name)]);
    assert_eq!(get("fusebox_hedge_hedges_total", "search"), 1.0);
    assert_eq!(get("fusebox_hedge_won_by_hedge_total", "search"), 1.0);
    assert_eq!(get("fusebox_hedge_delay_us", "search"), 10_000.0);
    assert_eq!(get("fusebox_breaker_set_open", "cdn"), 1.0);
    assert_eq!(get("fusebox_breaker_set_keys", "cdn"), 1.0);
}

/// A breaker's series are made at its first event, and two listeners of one
/// name (through clones of one `Metrics`) count into the same series.
#[test]
fn listeners_of_one_name_share_series_made_at_the_first_event() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let a = CircuitBreaker::builder()
        .listener(metrics.listener("db"))
        .build()
        .unwrap();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .listener(metrics.clone().listener("db"))
        .build()
        .unwrap();
    // No event yet: the series are written at 0, the automatic edges too.
    let e = scrape(&registry);
    assert_eq!(e.calls("db", "success"), 0.0);
    assert_eq!(e.transitions("db", "closed", "open"), 0.0);
    assert!(!e.has(
        "fusebox_transitions_total",
        &[("name", "db"), ("to", "forced_open")]
    ));
    a.call(|| Ok::<_, ()>(())).unwrap();
    b.call(|| Ok::<_, ()>(())).unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    assert!(b.call(|| Ok::<_, ()>(())).unwrap_err().is_rejected());
    let e = scrape(&registry);
    assert_eq!(e.calls("db", "success"), 2.0);
    assert_eq!(e.calls("db", "failure"), 1.0);
    assert_eq!(e.calls("db", "rejected"), 1.0);
    assert_eq!(e.transitions("db", "closed", "open"), 1.0);
    let count = e.get("fusebox_call_duration_seconds_count", &[("name", "db")]);
    assert!(count >= 1.0, "the first call is timed: {count}");
}

/// Untracking a name drops its gauges and keeps its counters; tracking a
/// breaker without a listener exports gauges and no counters.
#[test]
fn untrack_keeps_the_counters_and_a_tracked_breaker_alone_has_none() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let db = metrics.build("db", CircuitBreaker::builder()).unwrap();
    db.call(|| Ok::<_, ()>(())).unwrap();
    let cache = CircuitBreaker::builder().build().unwrap();
    metrics.track("cache", &Default::default(), &cache);
    let e = scrape(&registry);
    assert_eq!(e.state("cache"), "closed");
    assert!(!e.has("fusebox_calls_total", &[("name", "cache")]));
    assert!(metrics.untrack("db"));
    assert!(!metrics.untrack("db"), "already untracked");
    assert!(metrics.untrack("cache"));
    let e = scrape(&registry);
    assert!(!e.has("fusebox_circuit_state", &[("name", "db")]));
    assert!(!e.has("fusebox_circuit_state", &[("name", "cache")]));
    assert_eq!(e.calls("db", "success"), 1.0, "the counters stay");
    assert!(!e.has("fusebox_calls_total", &[("name", "cache")]));
}
