//! Criterion benchmarks: fusebox, the peer crates and a no-breaker baseline,
//! side by side in one group per scenario.
//!
//! ```text
//! cargo bench -p fusebox-bench                 # every group (about 7 minutes on 2 cores)
//! cargo bench -p fusebox-bench -- closed_2t    # one group
//! ```
//!
//! The scenarios and the way each peer is configured live in
//! `fusebox_bench::scenarios` and `fusebox_bench::subjects` (shared with the
//! `compare` command). Every benchmark uses `iter_custom`: for several
//! threads, all threads share one breaker, start together, and the longest
//! thread's time is reported (governor's multi-threaded pattern), so the
//! figure is the time per call per thread.
//!
//! Allocations per call are not a speed figure: the `allocations` test of
//! this crate asserts zero for every fusebox path, and `compare` prints the
//! count for every crate. The time-window fill scenario needs a fresh,
//! prefilled breaker for every measurement, so it runs in `compare` only.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use fusebox_bench::harness::{run_threads, settle_clock};
use fusebox_bench::scenarios::all;

fn benches(c: &mut Criterion) {
    settle_clock();
    for sc in all() {
        if sc.fixed_calls.is_some() {
            continue;
        }
        let mut g = c.benchmark_group(sc.name);
        for e in &sc.entries {
            let subject = e.build(sc.open);
            let (threads, load) = (sc.threads, sc.load);
            g.bench_function(e.id(), |b| {
                b.iter_custom(|iters| run_threads(subject.as_ref(), threads, iters, load).0)
            });
        }
        g.finish();
    }
}

criterion_group! {
    name = breakers;
    // Short on purpose: the whole run fits in a few minutes on a shared
    // 2-core machine; prefer ratios within one run over absolute figures.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = benches
}
criterion_main!(breakers);
