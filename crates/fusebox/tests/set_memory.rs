//! A breaker set's memory under a stream of distinct keys, measured as the
//! process's resident set (Linux): 1,000,000 calls over 100,000 keys with a
//! cap of 1,000 keys stay within what the full set takes plus a stated
//! constant. One test in its own binary, so no other test's memory counts.

#![cfg(target_os = "linux")]

use fusebox::set::BreakerSet;
use fusebox::{CircuitBreaker, ManualClock};
use std::time::Duration;

/// Resident memory of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// What churn may add beyond the full set: allocator slack and the key
/// strings in flight.
const SLACK: usize = 4 << 20;

#[test]
fn a_million_calls_over_a_hundred_thousand_keys_stay_within_the_caps_size() {
    let clock = ManualClock::new();
    let set: BreakerSet<String> = BreakerSet::builder(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(100)
            .clock(clock.clone()),
    )
    .max_keys(1_000)
    .idle_after(Duration::from_secs(1))
    .build()
    .unwrap();
    let before = rss();
    for i in 0..1_000 {
        let _ = set.call(&*format!("warm-{i}"), || Ok::<_, ()>(()));
    }
    let full = rss();
    let cap_size = full.saturating_sub(before);
    let mut most = full;
    for i in 0..1_000_000u32 {
        let key = format!("key-{}", i % 100_000);
        let _ = set.call(&*key, || if i % 20 == 0 { Err(()) } else { Ok(()) });
        if i % 1_000 == 0 {
            clock.advance(Duration::from_secs(1));
            assert!(set.len() <= 1_000);
        }
        if i % 50_000 == 0 {
            most = most.max(rss());
        }
    }
    most = most.max(rss());
    let (evicted, overflowed) = set.counts();
    println!(
        "rss before {} KiB, full set {} KiB (cap's size {} KiB), peak {} KiB; evicted {evicted}, overflowed {overflowed}",
        before / 1024,
        full / 1024,
        cap_size / 1024,
        most / 1024
    );
    assert!(evicted > 900_000, "keys churned through the set: {evicted}");
    assert!(
        most <= full + SLACK,
        "peak {most} B over the full set's {full} B + {SLACK} B"
    );
}
