//! Runs one benchmark entry for a fixed number of calls and exits: the
//! program that `results/instructions.sh` runs under
//! `valgrind --tool=callgrind`, twice per entry (N and 2N calls), to get
//! instructions per call as the difference divided by N. Set-up, warm-up and
//! exit cost the same in both runs and cancel out.
//!
//! ```text
//! instructions --list                      # single-thread entries, one "scenario entry" per line
//! instructions SCENARIO ENTRY CALLS        # build, warm up (1,000 calls), run CALLS calls
//! ```
//!
//! Instruction counts do not move with the machine's load, so they compare
//! runs made on different days and machines of the same architecture (ns
//! figures only compare within one run).

use fusebox_bench::harness::{seed_for_thread, settle_clock};
use fusebox_bench::scenarios::{all, Scenario};

fn single_thread() -> impl Iterator<Item = Scenario> {
    // Fixed-call scenarios build a fresh breaker per measurement: their
    // per-call figure depends on the fill, not a steady state.
    all()
        .into_iter()
        .filter(|s| s.threads == 1 && s.fixed_calls.is_none())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--list" => {
            for s in single_thread() {
                for e in &s.entries {
                    println!("{} {}", s.name, e.id());
                }
            }
        }
        [scenario, entry, calls] => {
            let Ok(calls) = calls.parse::<u64>() else {
                eprintln!("instructions: CALLS is not a number: {calls:?}");
                std::process::exit(2);
            };
            let Some(sc) = single_thread().find(|s| s.name == scenario) else {
                eprintln!("instructions: no single-thread scenario {scenario:?} (try --list)");
                std::process::exit(2);
            };
            let Some(e) = sc.entries.iter().find(|e| e.id() == *entry) else {
                eprintln!("instructions: no entry {entry:?} in {scenario} (try --list)");
                std::process::exit(2);
            };
            // Only for fusebox: the calibration's thread makes the process
            // multi-threaded, which costs a peer that allocates per call
            // more in glibc's malloc (about 14 instructions for
            // tower-resilience) than it does in a single-threaded one.
            if e.id().starts_with("fusebox") {
                settle_clock();
            }
            let subject = e.build(sc.open);
            let mut r = subject.runner(seed_for_thread(0));
            r.run(1_000, sc.load);
            let b = r.run(calls, sc.load);
            // Printed so that the optimiser cannot drop the loop, and so a
            // reader sees what path ran.
            println!(
                "{scenario} {entry}: {} ok, {} failed, {} rejected",
                b.tally.ok, b.tally.failed, b.tally.rejected
            );
        }
        _ => {
            eprintln!("usage: instructions --list | instructions SCENARIO ENTRY CALLS");
            std::process::exit(2);
        }
    }
}
