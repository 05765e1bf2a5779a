//! The registry's config budget: a config is bounded by the memory its
//! breakers would take, checked before anything is built, on load, reload
//! and reconfigure.
//!
//! An allocator that counts the bytes each thread allocates shows that a
//! refused config costs next to nothing (no window is built first), and
//! that the estimate is what building a breaker really allocates.
#![cfg(feature = "config")]

use fusebox::registry::{Fusebox, FuseboxConfig, DEFAULT_CONFIG_BUDGET};
use fusebox::{BreakerConfig, State};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write;

/// Counts the bytes allocated by each thread (every allocation and the new
/// size of every reallocation; frees are not subtracted), so tests running
/// in parallel do not see each other's.
struct Counting;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: nothing to count in a thread being torn down.
    let _ = ALLOCATED.try_with(|a| a.set(a.get().saturating_add(bytes)));
}

// SAFETY: every call goes to `System` unchanged; counting touches only a
// const-initialised thread local without a destructor (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` returns and the bytes it allocated on this thread.
fn allocated_by<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCATED.with(Cell::get);
    let r = f();
    (r, ALLOCATED.with(Cell::get) - before)
}

/// `n` tables of an hour's time window in the most buckets accepted: a
/// 28 KB file asking for gigabytes.
fn hostile(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        writeln!(
            s,
            "[breakers.t{i:03}]\nfailure_rate = 0.5\ntime_window = \"1h\"\nbuckets = 100000\n"
        )
        .unwrap();
    }
    s
}

/// The cost of one hostile table, as the error reports it.
fn hostile_breaker_bytes() -> usize {
    FuseboxConfig::from_toml(&hostile(1)).unwrap().breakers["t000"]
        .settings
        .memory_estimate()
        .unwrap()
}

const NORMAL: &str = r#"
[defaults.breaker]
open_for = "30s"

[breakers.payments]
failure_rate = 0.5
time_window = "60s"

[breakers.search]
failure_rate = 0.5
count_window = 100

[dependencies.inventory]
timeout = "300ms"
breaker = { consecutive_failures = 5 }
bulkhead = { max_concurrent = 10 }
"#;

#[test]
fn four_hundred_hour_windows_are_refused_before_any_is_built() {
    let source = hostile(400);
    assert!(source.len() < 32 * 1024, "a small file: {}", source.len());
    let config = FuseboxConfig::from_toml(&source).expect("each table is valid by itself");
    let each = hostile_breaker_bytes();
    assert!(each > 5_000_000, "an hour in 100000 buckets: {each}");
    assert_eq!(config.memory_estimate(), 400 * each);

    let (result, bytes) = allocated_by(|| Fusebox::from_config(config));
    let err = result.unwrap_err();
    // Every table costs the same: the first is named.
    assert_eq!(err.key(), "breakers.t000");
    let message = err.message();
    assert!(message.contains(&format!("({each} bytes)")), "{message}");
    assert!(
        message.contains(&format!("({} bytes)", 400 * each)),
        "{message}"
    );
    assert!(message.contains("400 breakers"), "{message}");
    assert!(
        message.contains(&format!("budget of 64 MiB ({DEFAULT_CONFIG_BUDGET} bytes)")),
        "{message}"
    );
    assert!(
        message.contains("config_budget"),
        "says how to raise it: {message}"
    );
    // Refused on its settings alone: not one window (5 MB) was allocated.
    assert!(bytes < 1 << 20, "the refused load allocated {bytes} bytes");
}

#[test]
fn the_most_expensive_table_is_named_and_dependencies_by_their_breaker_key() {
    let source = format!(
        "{}\n[dependencies.big]\nbreaker = {{ failure_rate = 0.5, count_window = 10000000 }}\n",
        hostile(12)
    );
    let config = FuseboxConfig::from_toml(&source).unwrap();
    let err = Fusebox::from_config(config).unwrap_err();
    assert_eq!(err.key(), "dependencies.big.breaker", "{err}");
    assert!(err.message().contains("13 breakers"), "{err}");
}

#[test]
fn a_normal_config_is_well_under_the_default_budget() {
    let config = FuseboxConfig::from_toml(NORMAL).unwrap();
    assert!(
        config.memory_estimate() < 64 * 1024,
        "{}",
        config.memory_estimate()
    );
    let fusebox = Fusebox::from_config(config).unwrap();
    assert_eq!(fusebox.names(), ["inventory", "payments", "search"]);
}

#[test]
fn the_budget_option_raises_and_lowers_the_limit() {
    // 15 hour windows: about 84 MB, over the default.
    let config = FuseboxConfig::from_toml(&hostile(15)).unwrap();
    let total = config.memory_estimate();
    assert!(total > DEFAULT_CONFIG_BUDGET);
    assert!(Fusebox::from_config(config.clone()).is_err());
    let fusebox = Fusebox::builder()
        .config(config.clone())
        .config_budget(total)
        .build()
        .expect("exactly the budget fits");
    assert_eq!(fusebox.names().len(), 15);
    let err = Fusebox::builder()
        .config(config)
        .config_budget(total - 1)
        .build()
        .unwrap_err();
    assert!(
        err.message().contains(&format!("({} bytes)", total - 1)),
        "{err}"
    );

    // Lowered, it refuses what the default takes.
    let normal = FuseboxConfig::from_toml(NORMAL).unwrap();
    let just_under = normal.memory_estimate() - 1;
    let err = Fusebox::builder()
        .config(normal)
        .config_budget(just_under)
        .build()
        .unwrap_err();
    assert_eq!(
        err.key(),
        "breakers.payments",
        "the time window costs most: {err}"
    );
    // No limit at all.
    let none = Fusebox::builder().config_budget(usize::MAX).build();
    assert!(none.is_ok());
}

#[test]
fn defaults_too_costly_for_even_one_breaker_are_refused() {
    let config = FuseboxConfig::from_toml(
        "[defaults.breaker]\nfailure_rate = 0.5\ncount_window = 10000000\n",
    )
    .unwrap();
    // No named table, but every name used would cost 10 MB.
    let err = Fusebox::builder()
        .config(config.clone())
        .config_budget(1 << 20)
        .build()
        .unwrap_err();
    assert_eq!(err.key(), "defaults.breaker");
    assert!(Fusebox::from_config(config).is_ok(), "10 MB fits 64 MiB");
}

#[test]
fn a_refused_reload_keeps_the_config_and_breakers_in_force() {
    let fusebox = Fusebox::from_config(
        FuseboxConfig::from_toml("[breakers.db]\nconsecutive_failures = 1\n").unwrap(),
    )
    .unwrap();
    let db = fusebox.breaker("db");
    let _ = db.call(|| Err::<(), _>("down"));
    assert_eq!(db.state(), State::Open);
    let before = fusebox.config("db");

    let mut source = hostile(400);
    source.push_str("[breakers.db]\nconsecutive_failures = 9\n");
    let hostile = FuseboxConfig::from_toml(&source).unwrap();
    let (result, bytes) = allocated_by(|| fusebox.reload(hostile));
    let err = result.unwrap_err();
    assert!(err.key().starts_with("breakers.t"), "{err}");
    assert!(
        bytes < 1 << 20,
        "the refused reload allocated {bytes} bytes"
    );

    assert_eq!(fusebox.names(), ["db"], "nothing was added");
    assert_eq!(fusebox.config("db"), before, "the config in force stays");
    assert!(fusebox.breaker("db").same_as(&db));
    assert_eq!(db.state(), State::Open, "the breaker kept its state");
    assert_eq!(db.config().consecutive_failures, Some(1));
    // A reload within the budget still works afterwards.
    let ok = fusebox
        .reload(FuseboxConfig::from_toml("[breakers.db]\nconsecutive_failures = 3\n").unwrap())
        .unwrap();
    assert_eq!(ok.changed, ["db"]);
    assert_eq!(db.config().consecutive_failures, Some(3));
}

#[test]
fn a_reconfigure_over_the_budget_changes_nothing() {
    let fusebox = Fusebox::builder()
        .config(FuseboxConfig::from_toml(NORMAL).unwrap())
        .config_budget(2 << 20)
        .build()
        .unwrap();
    let search = fusebox.breaker("search");
    let huge = BreakerConfig {
        failure_rate: Some(0.5),
        count_window: Some(10_000_000),
        ..Default::default()
    };
    let err = fusebox.reconfigure("search", huge.clone()).unwrap_err();
    assert_eq!(err.key(), "breakers.search");
    assert_eq!(search.config().count_window, Some(100));
    assert_eq!(fusebox.config("search").settings.count_window, Some(100));
    // A new name is counted too.
    let err = fusebox.reconfigure("new", huge).unwrap_err();
    assert_eq!(err.key(), "breakers.new");
    assert!(fusebox.config("new").settings.count_window.is_none());
}

#[test]
fn the_estimate_is_what_building_a_breaker_allocates() {
    use std::time::Duration;
    let cases = [
        BreakerConfig {
            consecutive_failures: Some(5),
            ..Default::default()
        },
        BreakerConfig {
            failure_rate: Some(0.5),
            count_window: Some(1_000_000),
            ..Default::default()
        },
        BreakerConfig {
            failure_rate: Some(0.5),
            time_window: Some(Duration::from_secs(3600)),
            buckets: Some(100_000),
            ..Default::default()
        },
        BreakerConfig {
            failures_within: Some(fusebox::FailureBurst {
                count: 100_000,
                within: Duration::from_secs(10),
            }),
            ..Default::default()
        },
    ];
    for config in cases {
        let estimate = config.memory_estimate().unwrap();
        let (breaker, built) = allocated_by(|| config.builder().build().unwrap());
        drop(breaker);
        // Within 8 KiB (a fleet's tally, counted but built on demand) or
        // 2% either way: the estimate follows the windows' own
        // constructors, not a copy of their arithmetic.
        let slack = 8192 + estimate / 50;
        assert!(
            estimate.abs_diff(built) <= slack,
            "{config:?}: estimated {estimate}, built {built}"
        );
    }
}
