#!/usr/bin/env python3
"""Renders BENCHMARKS.md's tables and target verdicts from the raw output of
one run of each command (criterion.txt, compare.json, instructions.txt in
this folder).

    python3 crates/fusebox-bench/results/render.py > /tmp/tables.md

It prints three markdown sections: the targets, the criterion tables and the
compare tables. Nothing here measures; it only formats what the runs printed.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6}


def criterion():
    """{group: [(id, lo, mid, hi)]} in the order criterion printed them."""
    groups, name = {}, None
    for line in open(os.path.join(HERE, "criterion.txt"), encoding="utf-8"):
        m = re.match(r"Benchmarking (\S+): Analyzing", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"time:\s+\[([\d.]+) (\S+) ([\d.]+) (\S+) ([\d.]+) (\S+)\]", line)
        if m and name:
            lo, mid, hi = (float(m.group(i)) * UNIT[m.group(i + 1)] for i in (1, 3, 5))
            group, _, ident = name.partition("/")
            groups.setdefault(group, []).append((ident, lo, mid, hi))
            name = None
    return groups


def compare():
    with open(os.path.join(HERE, "compare.json"), encoding="utf-8") as f:
        return json.load(f)


def instructions():
    """{scenario: {entry: instructions per call}} from instructions.txt."""
    out = {}
    path = os.path.join(HERE, "instructions.txt")
    if not os.path.exists(path):
        return out
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        scenario, entry, n = line.rstrip("\n").split("\t")
        out.setdefault(scenario, {})[entry] = float(n)
    return out


def fmt(ns):
    return f"{ns:,.0f}" if ns >= 1000 else f"{ns:.1f}"


def base_for(ident, entries):
    """The fusebox entry an entry is compared with: same variant, else the first."""
    variant = ident.partition("/")[2]
    fb = [(i, v) for i, v in entries if i.startswith("fusebox")]
    for i, v in fb:
        if i.partition("/")[2] == variant:
            return v
    return fb[0][1] if fb else None


def figures(entries):
    """{id: ns} of one group."""
    return dict(entries)


def peers(fig):
    return {i: v for i, v in fig.items() if not i.startswith(("fusebox", "baseline"))}


def verdicts(source, g):
    """Rows of the targets table from {group: {id: ns}}."""
    rows = []

    def row(target, text, ok):
        rows.append(f"| {target} | {source} | {text} | {'met' if ok else 'MISSED'} |")

    c1, c2 = g.get("closed_1t", {}), g.get("closed_2t", {})
    fb1, rec = c1.get("fusebox"), c1.get("recloser")
    if fb1 and rec:
        row("closed 1t, consecutive: <= 1/3 of recloser",
            f"fusebox {fmt(fb1)} ns vs recloser/3 {fmt(rec / 3)} ns", fb1 <= rec / 3)
    fb2 = c2.get("fusebox/consecutive")
    if fb1 and fb2:
        row("closed 2t, consecutive: <= 1.5x its 1t figure",
            f"fusebox 2t {fmt(fb2)} ns vs 1.5 x 1t {fmt(1.5 * fb1)} ns", fb2 <= 1.5 * fb1)
    best = min(peers(c2).items(), key=lambda kv: kv[1], default=None)
    for policy in ("count_window", "time_window"):
        v = c2.get(f"fusebox/{policy}")
        if v and best:
            row(f"closed 2t, {policy}: <= 1/2 of best peer 2t ({best[0]})",
                f"fusebox {fmt(v)} ns vs best/2 {fmt(best[1] / 2)} ns", v <= best[1] / 2)
    for group in ("open_1t", "open_2t"):
        fig = g.get(group, {})
        fastest = min(peers(fig).items(), key=lambda kv: kv[1], default=None)
        if "fusebox" in fig and fastest:
            row(f"{group}: no slower than fastest peer ({fastest[0]})",
                f"fusebox {fmt(fig['fusebox'])} ns vs {fastest[0]} {fmt(fastest[1])} ns",
                fig["fusebox"] <= fastest[1])
    w = g.get("window_count", {})
    if "fusebox/10" in w and "fusebox/10000" in w:
        row("count window 10,000 within 1.2x of 10",
            f"10,000 {fmt(w['fusebox/10000'])} ns vs 1.2 x 10-call {fmt(1.2 * w['fusebox/10'])} ns",
            w["fusebox/10000"] <= 1.2 * w["fusebox/10"])
    t = g.get("window_time", {})
    if "fusebox/10_buckets" in t and "fusebox/100_buckets" in t:
        row("time window 100 buckets within 1.2x of 10",
            f"100 buckets {fmt(t['fusebox/100_buckets'])} ns vs 1.2 x 10 {fmt(1.2 * t['fusebox/10_buckets'])} ns",
            t["fusebox/100_buckets"] <= 1.2 * t["fusebox/10_buckets"])
    f = g.get("time_window_fill", {})
    if "fusebox/fill_1000" in f and "fusebox/fill_100000" in f:
        row("time window flat in fill (100,000 vs 1,000 calls held)",
            f"fill 100k {fmt(f['fusebox/fill_100000'])} ns vs 1.2 x fill 1k {fmt(1.2 * f['fusebox/fill_1000'])} ns",
            f["fusebox/fill_100000"] <= 1.2 * f["fusebox/fill_1000"])
    return rows


def verdicts14(source, g, unit="ns"):
    """Rows for issue 14's targets from {group: {id: figure}}."""
    rows = []

    def row(target, text, ok):
        rows.append(f"| {target} | {source} | {text} | {'met' if ok else 'MISSED'} |")

    def f(x):
        return fmt(x) if unit == "ns" else f"{x:.0f}"

    pol, c2 = g.get("policies", {}), g.get("closed_2t", {})
    for label, fig in (("1t", pol), ("2t", c2)):
        tw, cw = fig.get("fusebox/time_window"), fig.get("fusebox/count_window")
        if tw and cw:
            row(f"time window <= 1.5x count window, {label}",
                f"time {f(tw)} {unit} vs 1.5 x count {f(1.5 * cw)} {unit} ({tw / cw:.2f}x)", tw <= 1.5 * cw)
    for label in ("1t", "2t"):
        ins = g.get(f"instrumented_{label}", {})
        rec = ins.get("recloser/consecutive")
        for policy in ("consecutive", "count_window"):
            bare, met = ins.get(f"fusebox/{policy}"), ins.get(f"fusebox/{policy}+metrics")
            if bare and met:
                row(f"Prometheus Metrics attached <= 2x bare, {policy}, {label}",
                    f"with metrics {f(met)} {unit} vs 2 x bare {f(2 * bare)} {unit} ({met / bare:.2f}x)",
                    met <= 2 * bare)
            if met and rec:
                row(f"Metrics-instrumented {policy} faster than recloser's bare closed path, {label}",
                    f"{f(met)} {unit} vs recloser {f(rec)} {unit}", met < rec)
    for label in ("1t", "2t"):
        st = g.get(f"stack_{label}", {})
        fb, tw = st.get("fusebox/tower"), st.get("tower/limit+timeout+retry")
        if fb and tw:
            row(f"fusebox tower stack <= tower's Retry+ConcurrencyLimit+Timeout, async, {label}",
                f"fusebox {f(fb)} {unit} vs tower {f(tw)} {unit} ({fb / tw:.2f}x)", fb <= tw)
    return rows


def instruction_verdicts(ins):
    """Fewer instructions per call than every peer on the shared paths."""
    rows = []
    for path, scenario, mine, peers_of in (
        ("closed path, consecutive", "closed_1t", "fusebox", None),
        ("count window (closed)", "policies", "fusebox/count_window",
         ("recloser/count_window", "tower-resilience/count_window")),
        ("open path", "open_1t", "fusebox", None),
    ):
        fig = ins.get(scenario, {})
        if mine not in fig:
            continue
        others = {i: v for i, v in fig.items()
                  if (i in peers_of if peers_of else not i.startswith(("fusebox", "baseline")))}
        if not others:
            continue
        best = min(others.items(), key=lambda kv: kv[1])
        ok = fig[mine] < best[1]
        rows.append(f"| fewer instructions per call than every peer: {path} | callgrind | "
                    f"fusebox {fig[mine]:.0f} vs fewest peer {best[0]} {best[1]:.0f} "
                    f"({', '.join(f'{k} {v:.0f}' for k, v in sorted(others.items()))}) | "
                    f"{'met' if ok else 'MISSED'} |")
    return rows


def main():
    crit = criterion()
    comp = compare()
    cg = {s["name"]: {e["id"]: e["ns_per_call"] for e in s["entries"]} for s in comp["scenarios"]}
    out = ["## Targets (rendered)", "", "| target | source | figures | verdict |", "|---|---|---|---|"]
    out += verdicts("criterion", {k: figures([(i, m) for i, _, m, _ in v]) for k, v in crit.items()})
    out += verdicts("compare", cg)
    # Every sync fusebox path; the async ones (the async pipeline, the tower
    # stack) are tokio futures and reported in the tables only.
    asynchronous = ("fusebox/pipeline_async", "fusebox/tower")
    allocs = max(e["allocs_per_call"] for s in comp["scenarios"] for e in s["entries"]
                 if e["crate"] == "fusebox" and e["id"] not in asynchronous)
    out.append(f"| zero allocations per call, every fusebox path | compare + test | "
               f"max over fusebox entries: {allocs:.2f}/call; tests/allocations.rs | "
               f"{'met' if allocs == 0 else 'MISSED'} |")
    ins = instructions()
    crit_g = {k: figures([(i, m) for i, _, m, _ in v]) for k, v in crit.items()}
    out += ["", "## Targets of issue 14 (rendered)", "", "| target | source | figures | verdict |",
            "|---|---|---|---|"]
    out += instruction_verdicts(ins)
    out += verdicts14("callgrind (instructions/call)", ins, unit="instr")
    out += verdicts14("criterion", crit_g)
    out += verdicts14("compare", cg)
    out += ["", "## Criterion: `cargo bench -p fusebox-bench`", "",
            "ns per call (per thread in 2-thread groups); \"x fusebox\" is the ratio to the",
            "fusebox entry of the same variant (or the first fusebox entry of the group).", ""]
    for group, entries in crit.items():
        mids = [(i, m) for i, _, m, _ in entries]
        out += [f"**{group}**", "", "| crate | ns/call (criterion median estimate) | 95% interval | x fusebox |",
                "|---|---:|---:|---:|"]
        for ident, lo, mid, hi in entries:
            b = base_for(ident, mids)
            out.append(f"| {ident} | {fmt(mid)} | {fmt(lo)} – {fmt(hi)} | {mid / b:.2f} |")
        out.append("")
    out += ["## Compare: `cargo run --release -p fusebox-bench --bin compare -- --json`", "",
            f"{comp['rounds']} rounds of {comp['slice_ms']} ms per crate per scenario, "
            f"{comp['seconds']:.0f} s in all; load average {comp['loadavg_before']} before, "
            f"{comp['loadavg_after']} after.", ""]
    for s in comp["scenarios"]:
        out += [f"**{s['name']}** ({s['threads']} thread{'s' if s['threads'] > 1 else ''}): {s['what']}", "",
                "| crate | ns/call | x fusebox | allocs/call | rejected |", "|---|---:|---:|---:|---:|"]
        for e in s["entries"]:
            out.append(f"| {e['id']} | {fmt(e['ns_per_call'])} | {e['ratio_to_fusebox']:.2f} | "
                       f"{e['allocs_per_call']:.2f} | {e['rejected_share'] * 100:.0f}% |")
        out.append("")
    if ins:
        out += ["## Instructions per call: `bash crates/fusebox-bench/results/instructions.sh`", "",
                "callgrind, single-thread entries; the loop itself is the `baseline` row.", ""]
        for scenario, fig in ins.items():
            out += [f"**{scenario}**", "", "| crate | instructions/call | x fusebox |", "|---|---:|---:|"]
            entries = list(fig.items())
            for ident, n in entries:
                b = base_for(ident, entries)
                out.append(f"| {ident} | {n:.0f} | {n / b:.2f} |")
            out.append("")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
