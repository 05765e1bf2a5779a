//! Quick comparison of fusebox with the peer crates, for people without time
//! for criterion:
//!
//! ```text
//! cargo run --release -p fusebox-bench --bin compare [-- --json] [--slice-ms N] [--rounds N] [--only NAME]
//! ```
//!
//! Every scenario of `fusebox_bench::scenarios::all()` is run for a fixed
//! short time per crate: `rounds` slices of `slice-ms` each, the crates
//! interleaved within every round (in a rotating order), so slow drift of the
//! machine (other processes, frequency changes) spreads over all crates
//! alike. A crate's figure is the median of its slices. Multi-threaded
//! scenarios report the longest thread's time per call. Allocations per call
//! are counted separately (1 thread, 10,000 calls) by a counting global
//! allocator, so counting never slows the timed loops.

use std::time::{Duration, Instant};

use fusebox_bench::alloc::{count, CountingAlloc};
use fusebox_bench::harness::{run_threads, seed_for_thread, settle_clock, Subject};
use fusebox_bench::scenarios::{all, Scenario};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

struct Options {
    json: bool,
    slice: Duration,
    rounds: usize,
    only: Option<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        json: false,
        slice: Duration::from_millis(70),
        rounds: 9,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--json" => o.json = true,
            "--slice-ms" => {
                let v = value("--slice-ms")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--slice-ms: not a number of milliseconds: {v:?}"))?;
                if ms == 0 {
                    return Err("--slice-ms: must be at least 1, got 0".into());
                }
                o.slice = Duration::from_millis(ms);
            }
            "--rounds" => {
                let v = value("--rounds")?;
                o.rounds = v
                    .parse()
                    .ok()
                    .filter(|&n: &usize| n > 0)
                    .ok_or_else(|| format!("--rounds: not a positive number: {v:?}"))?;
            }
            "--only" => o.only = Some(value("--only")?),
            "-h" | "--help" => {
                println!(
                    "usage: compare [--json] [--slice-ms N (70)] [--rounds N (9)] [--only SCENARIO]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(o)
}

struct Row {
    id: String,
    krate: &'static str,
    variant: String,
    samples: Vec<f64>,
    allocs: f64,
    rejected_share: f64,
}

impl Row {
    fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        if s.is_empty() {
            f64::NAN
        } else {
            s[s.len() / 2]
        }
    }
}

/// Calls that take about `slice` at `ns_per_call`.
fn iters_for(slice: Duration, ns_per_call: f64) -> u64 {
    ((slice.as_nanos() as f64 / ns_per_call.max(0.1)) as u64).clamp(50, 500_000_000)
}

fn measure(sc: &Scenario, o: &Options) -> Vec<Row> {
    let subjects: Vec<Box<dyn Subject>> = if sc.fixed_calls.is_some() {
        Vec::new()
    } else {
        sc.entries.iter().map(|e| e.build(sc.open)).collect()
    };
    let mut rows: Vec<Row> = sc
        .entries
        .iter()
        .map(|e| Row {
            id: e.id(),
            krate: e.krate,
            variant: e.variant.clone(),
            samples: Vec::new(),
            allocs: f64::NAN,
            rejected_share: 0.0,
        })
        .collect();

    // Calibration: a short batch per crate.
    let mut estimate: Vec<f64> = vec![100.0; rows.len()];
    if sc.fixed_calls.is_none() {
        for (i, s) in subjects.iter().enumerate() {
            let (d, _) = run_threads(s.as_ref(), sc.threads, 2_000, sc.load);
            estimate[i] = d.as_nanos() as f64 / 2_000.0;
        }
    }

    let n = rows.len();
    for round in 0..o.rounds {
        for k in 0..n {
            let i = (k + round) % n;
            let (d, tally, iters) = match sc.fixed_calls {
                Some(calls) => {
                    let s = sc.entries[i].build(sc.open);
                    let (d, t) = run_threads(s.as_ref(), sc.threads, calls, sc.load);
                    (d, t, calls)
                }
                None => {
                    let iters = iters_for(o.slice, estimate[i]);
                    let (d, t) = run_threads(subjects[i].as_ref(), sc.threads, iters, sc.load);
                    (d, t, iters)
                }
            };
            let ns = d.as_nanos() as f64 / iters as f64;
            estimate[i] = ns;
            rows[i].samples.push(ns);
            rows[i].rejected_share = tally.rejected as f64 / tally.total().max(1) as f64;
        }
    }

    // Allocations per call, on this thread, after a warm-up.
    for (i, e) in sc.entries.iter().enumerate() {
        let s = e.build(sc.open);
        let mut r = s.runner(seed_for_thread(0));
        r.run(1_000, sc.load);
        let calls = sc.fixed_calls.unwrap_or(10_000);
        let (_, allocs) = count(|| r.run(calls, sc.load));
        rows[i].allocs = allocs as f64 / calls as f64;
    }
    rows
}

fn fusebox_ref<'a>(rows: &'a [Row], r: &Row) -> Option<&'a Row> {
    rows.iter()
        .find(|f| f.krate == "fusebox" && f.variant == r.variant)
        .or_else(|| rows.iter().find(|f| f.krate == "fusebox"))
}

/// The 1, 5 and 15 minute load averages (Linux), or "unknown".
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("compare: {e}");
            std::process::exit(2);
        }
    };
    let scenarios: Vec<Scenario> = all()
        .into_iter()
        .filter(|s| o.only.as_deref().is_none_or(|n| n == s.name))
        .collect();
    settle_clock();
    if scenarios.is_empty() {
        eprintln!(
            "compare: no scenario named {:?}; known: {}",
            o.only.as_deref().unwrap_or(""),
            all().iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        );
        std::process::exit(2);
    }
    let load_before = loadavg();
    let started = Instant::now();
    let mut results = Vec::new();
    for sc in &scenarios {
        if !o.json {
            eprintln!("running {} ...", sc.name);
        }
        results.push((sc, measure(sc, &o)));
    }
    let took = started.elapsed();
    let load_after = loadavg();

    if o.json {
        let mut out = String::from("{\n");
        out.push_str(&format!(
            "  \"slice_ms\": {},\n  \"rounds\": {},\n  \"seconds\": {:.1},\n  \"loadavg_before\": {},\n  \"loadavg_after\": {},\n  \"scenarios\": [\n",
            o.slice.as_millis(),
            o.rounds,
            took.as_secs_f64(),
            json_str(&load_before),
            json_str(&load_after)
        ));
        for (si, (sc, rows)) in results.iter().enumerate() {
            out.push_str(&format!(
                "    {{\"name\": {}, \"what\": {}, \"threads\": {}, \"entries\": [\n",
                json_str(sc.name),
                json_str(sc.what),
                sc.threads
            ));
            for (ri, r) in rows.iter().enumerate() {
                let ratio = fusebox_ref(rows, r).map(|f| r.median() / f.median());
                out.push_str(&format!(
                    "      {{\"id\": {}, \"crate\": {}, \"ns_per_call\": {}, \"ratio_to_fusebox\": {}, \"allocs_per_call\": {}, \"rejected_share\": {}}}{}\n",
                    json_str(&r.id),
                    json_str(r.krate),
                    json_num(r.median()),
                    json_num(ratio.unwrap_or(f64::NAN)),
                    json_num(r.allocs),
                    json_num(r.rejected_share),
                    if ri + 1 < rows.len() { "," } else { "" }
                ));
            }
            out.push_str(&format!(
                "    ]}}{}\n",
                if si + 1 < results.len() { "," } else { "" }
            ));
        }
        out.push_str("  ]\n}");
        println!("{out}");
        return;
    }

    println!(
        "fusebox compare: {} rounds x {} ms per crate per scenario, interleaved; median ns/call; {:.0} s in all",
        o.rounds,
        o.slice.as_millis(),
        took.as_secs_f64()
    );
    println!("load average (1, 5, 15 min): {load_before} before, {load_after} after");
    for (sc, rows) in &results {
        println!(
            "\n## {} ({} thread{}): {}",
            sc.name,
            sc.threads,
            if sc.threads == 1 { "" } else { "s" },
            sc.what
        );
        println!(
            "{:<34} {:>12} {:>10} {:>12} {:>9}",
            "crate", "ns/call", "x fusebox", "allocs/call", "rejected"
        );
        for r in rows {
            let ratio = fusebox_ref(rows, r)
                .map(|f| format!("{:.2}", r.median() / f.median()))
                .unwrap_or_else(|| "-".into());
            println!(
                "{:<34} {:>12.1} {:>10} {:>12.2} {:>8.0}%",
                r.id,
                r.median(),
                ratio,
                r.allocs,
                r.rejected_share * 100.0
            );
        }
    }
}
