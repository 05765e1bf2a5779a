//! `--html`: one self-contained page (inline CSS and hand-written SVG, no
//! scripts, nothing fetched). Its first screen is the verdict: each
//! scenario's headline (what each strategy bought and what it cost, the
//! article's published figures beside the strategies it measured), fleets
//! that differ only in `[fleet]` side by side with their replicas' totals.
//! Then, per scenario: the figures side by side, the transitions (one a
//! line, never wrapped); per strategy, each request's latency against its
//! arrival time, coloured by outcome, over bands showing the breaker's state
//! (for a fleet, one chart per group of replicas, each replica's states in a
//! lane above it); the per-window outcome bars and table; a fleet's
//! per-replica timelines and tables; a legend and a glossary. Rows, labels
//! and colours all come from the [`super::model`].

use super::model::{self, colour, columns, Column, GLOSSARY, OUTCOMES};
use super::{secs, ScenarioReport, Summary};
use crate::engine::RunResult;
use crate::scenario::format_duration;
use std::fmt::Write;
use std::time::Duration;

/// Most points drawn in one scatter chart (larger runs are thinned evenly).
const MAX_POINTS: usize = 20_000;

const W: f64 = 920.0;
const H: f64 = 260.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 36.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum and tick step at or above `max`.
fn nice(max: f64) -> (f64, f64) {
    let max = if max <= 0.0 { 1.0 } else { max };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

struct Axes {
    x_max: f64,
    y_max: f64,
    /// The chart's width and height, and the top of its plot area.
    w: f64,
    h: f64,
    top: f64,
}

impl Axes {
    /// A chart of the page's full width.
    fn full(x_max: f64, y_max: f64) -> Axes {
        Axes {
            x_max,
            y_max,
            w: W,
            h: H,
            top: TOP,
        }
    }
    fn x(&self, v: f64) -> f64 {
        LEFT + v / self.x_max * (self.w - LEFT - RIGHT)
    }
    fn y(&self, v: f64) -> f64 {
        self.h - BOTTOM - v / self.y_max * (self.h - self.top - BOTTOM)
    }
}

fn axes_svg(out: &mut String, ax: &Axes, x_step: f64, y_step: f64, x_label: &str, y_label: &str) {
    let mut v = 0.0;
    while v <= ax.y_max + 1e-9 {
        let y = ax.y(v);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="t">{}</text>"##,
            ax.w - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            trim(v)
        );
        v += y_step;
    }
    let mut v = 0.0;
    while v <= ax.x_max + 1e-9 {
        let x = ax.x(v);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#999"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="t">{}</text>"##,
            ax.h - BOTTOM,
            ax.h - BOTTOM + 4.0,
            ax.h - BOTTOM + 16.0,
            trim(v)
        );
        v += x_step;
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{LEFT}" y1="{:.1}" x2="{LEFT}" y2="{:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="l">{}</text><text x="14" y="{:.1}" text-anchor="middle" class="l" transform="rotate(-90 14 {:.1})">{}</text>"##,
        ax.h - BOTTOM,
        ax.w - RIGHT,
        ax.h - BOTTOM,
        ax.top,
        ax.h - BOTTOM,
        (LEFT + ax.w - RIGHT) / 2.0,
        ax.h - 4.0,
        esc(x_label),
        (ax.top + ax.h - BOTTOM) / 2.0,
        (ax.top + ax.h - BOTTOM) / 2.0,
        esc(y_label)
    );
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The time axis of a run's charts: to the end of the run or of its last
/// request, whichever is later; `(max, step)` in seconds.
fn time_axis(report: &ScenarioReport, run: &RunResult) -> (f64, f64) {
    let end = run
        .requests
        .iter()
        .map(|r| r.end)
        .max()
        .unwrap_or_default()
        .max(report.scenario.duration);
    nice(end.as_secs_f64())
}

/// Per-request latency against arrival time, over the breaker's state bands.
fn scatter(report: &ScenarioReport, run: &RunResult, sum: &Summary) -> String {
    let sc = &report.scenario;
    let (x_max, x_step) = time_axis(report, run);
    let lat_max = run
        .requests
        .iter()
        .map(|r| r.latency().as_secs_f64() * 1e3)
        .fold(0.0, f64::max);
    let (y_max, y_step) = nice(lat_max * 1.05);
    let ax = Axes::full(x_max, y_max);
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="latency of each request against its arrival time, {}">"#,
        esc(&sum.name)
    );
    // State bands (time axis of the bands = transition times).
    for (a, b, st) in model::state_bands(&sum.transitions, Duration::from_secs_f64(x_max)) {
        if let Some(fill) = model::state_fill(st) {
            let (x0, x1) = (ax.x(a.as_secs_f64()), ax.x(b.as_secs_f64()));
            let _ = write!(
                out,
                r#"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{st} {}–{} s</title></rect>"#,
                (x1 - x0).max(1.0),
                H - TOP - BOTTOM,
                secs(a),
                secs(b)
            );
        }
    }
    // The fault, as a bar along the top.
    for f in &sc.downstream.faults {
        let (x0, x1) = (ax.x(f.from.as_secs_f64()), ax.x(f.until.as_secs_f64()));
        let _ = write!(
            out,
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="5" fill="{}"><title>downstream fault {}–{} s</title></rect>"##,
            TOP - 8.0,
            x1 - x0,
            model::FAULT,
            secs(f.from),
            secs(f.until)
        );
    }
    axes_svg(
        &mut out,
        &ax,
        x_step,
        y_step,
        "arrival time (s)",
        "latency (ms)",
    );
    let stride = run.requests.len().div_ceil(MAX_POINTS).max(1);
    for r in run.requests.iter().step_by(stride) {
        let _ = write!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="2.2" fill="{}"/>"#,
            ax.x(r.arrival.as_secs_f64()),
            ax.y(r.latency().as_secs_f64() * 1e3),
            colour(r.outcome)
        );
    }
    out.push_str("</svg>");
    if stride > 1 {
        let _ = write!(out, "<p class=note>every {stride}th request drawn</p>");
    }
    out
}

/// Width of a fleet's latency charts: two to a row.
const GROUP_W: f64 = 450.0;
/// Height of their plot area.
const GROUP_PLOT: f64 = 110.0;
/// Height of a replica's state lane above it.
const LANE: f64 = 9.0;

/// A fleet's latency charts, one per group of replicas
/// ([`model::replica_groups`]), two to a row, on one latency scale: each
/// request of the group's replicas against its arrival time, coloured by
/// outcome, under a lane per replica with its breaker's states and the
/// faults that hit it.
fn fleet_scatters(report: &ScenarioReport, run: &RunResult, sum: &Summary) -> String {
    let Some(fleet) = &run.fleet else {
        return String::new();
    };
    let sc = &report.scenario;
    let (x_max, x_step) = time_axis(report, run);
    let lat_max = run
        .requests
        .iter()
        .map(|r| r.latency().as_secs_f64() * 1e3)
        .fold(0.0, f64::max);
    let (y_max, y_step) = nice(lat_max * 1.05);
    let mut out = String::from(
        "<p class=note>one chart per group of replicas: each request's latency against its arrival time; \
         above it a lane per replica with its breaker's states, and the faults that hit it (dark)</p><div class=groups>",
    );
    for group in model::replica_groups(sc) {
        // Room for a full group's lanes in every chart: their plots align.
        let top = 6.0 + model::REPLICA_GROUP as f64 * (LANE + 1.0) + 8.0;
        let ax = Axes {
            x_max,
            y_max,
            w: GROUP_W,
            h: top + GROUP_PLOT + BOTTOM,
            top,
        };
        let label = model::replica_group_label(sc, &group);
        let _ = write!(
            out,
            r#"<figure><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {GROUP_W} {h}" width="{GROUP_W}" height="{h}" role="img" aria-label="latency of each request against its arrival time, {}, {}">"#,
            esc(&label),
            esc(&sum.name),
            esc(&label),
            h = ax.h
        );
        for (k, &r) in group.iter().enumerate() {
            let y = 6.0 + k as f64 * (LANE + 1.0);
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="s">{}</text><rect x="{LEFT}" y="{y:.1}" width="{:.1}" height="{LANE}" fill="#f3f3f3"/>"##,
                LEFT - 6.0,
                y + LANE - 1.0,
                r + 1,
                GROUP_W - LEFT - RIGHT
            );
            let log = fleet.transitions.get(r).map_or(&[][..], Vec::as_slice);
            for (a, b, st) in model::state_bands(log, Duration::from_secs_f64(x_max)) {
                if let Some(fill) = model::state_fill(st) {
                    let (x0, x1) = (ax.x(a.as_secs_f64()), ax.x(b.as_secs_f64()));
                    let _ = write!(
                        out,
                        r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{LANE}" fill="{fill}"><title>replica {}: {st} {}–{} s</title></rect>"#,
                        (x1 - x0).max(1.0),
                        r + 1,
                        secs(a),
                        secs(b)
                    );
                }
            }
            for f in sc.downstream.faults.iter().filter(|f| f.hits(r)) {
                let (x0, x1) = (ax.x(f.from.as_secs_f64()), ax.x(f.until.as_secs_f64()));
                let _ = write!(
                    out,
                    r#"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="2" fill="{}"/>"#,
                    x1 - x0,
                    model::FAULT
                );
            }
        }
        axes_svg(
            &mut out,
            &ax,
            x_step,
            y_step,
            "arrival time (s)",
            "latency (ms)",
        );
        let mine: Vec<&crate::engine::RequestRecord> = run
            .requests
            .iter()
            .enumerate()
            .filter(|(i, _)| group.contains(&sc.replica_of(*i)))
            .map(|(_, q)| q)
            .collect();
        let stride = mine.len().div_ceil(MAX_POINTS).max(1);
        for q in mine.iter().step_by(stride) {
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.2" fill="{}"/>"#,
                ax.x(q.arrival.as_secs_f64()),
                ax.y(q.latency().as_secs_f64() * 1e3),
                colour(q.outcome)
            );
        }
        out.push_str("</svg></figure>");
    }
    out.push_str("</div>");
    out
}

/// Per-window outcome bars, one stacked bar per strategy in each window.
fn window_bars(report: &ScenarioReport) -> String {
    let sums = &report.summaries;
    let nwin = sums.first().map_or(0, |s| s.windows.len());
    let ymax = sums
        .iter()
        .flat_map(|s| {
            s.windows
                .iter()
                .map(|w| w.ok + w.fail + w.fast_fail + w.rejected)
        })
        .max()
        .unwrap_or(1) as f64;
    let (y_max, y_step) = nice(ymax);
    let ax = Axes::full(nwin.max(1) as f64, y_max);
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="outcomes per window">"#
    );
    // y grid only; x labels are the windows.
    let mut v = 0.0;
    while v <= y_max + 1e-9 {
        let y = ax.y(v);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="t">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            trim(v)
        );
        v += y_step;
    }
    let slot = (W - LEFT - RIGHT) / nwin.max(1) as f64;
    let bw = (slot * 0.8 / sums.len().max(1) as f64).min(40.0);
    for i in 0..nwin {
        let x0 = LEFT + slot * i as f64 + (slot - bw * sums.len() as f64) / 2.0;
        let w0 = sums[0].windows[i].from;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="t">{}–{} s</text>"#,
            LEFT + slot * (i as f64 + 0.5),
            H - BOTTOM + 16.0,
            trim(w0.as_secs_f64()),
            trim((w0 + report.scenario.window).as_secs_f64())
        );
        for (k, s) in sums.iter().enumerate() {
            let w = s.windows[i];
            let x = x0 + bw * k as f64;
            let mut base = 0.0;
            for (o, n) in model::window_outcomes(&w) {
                if n == 0 {
                    continue;
                }
                let (y1, y0) = (ax.y(base), ax.y(base + n as f64));
                let _ = write!(
                    out,
                    r#"<rect x="{x:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {} {}</title></rect>"#,
                    bw - 2.0,
                    y1 - y0,
                    colour(o),
                    esc(&s.name),
                    n,
                    model::outcome_label(o)
                );
                base += n as f64;
            }
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="s">{}</text>"#,
                x + (bw - 2.0) / 2.0,
                ax.y(base) - 3.0,
                k + 1
            );
        }
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="l">requests by arrival window (bar numbers: strategies in table order)</text></svg>"##,
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        (LEFT + W - RIGHT) / 2.0,
        H - 4.0
    );
    out
}

fn legend() -> String {
    let mut out = String::from("<p class=legend>");
    for (_, label, c) in OUTCOMES {
        let _ = write!(
            out,
            r#"<span><i style="background:{c}"></i>{}</span>"#,
            esc(label)
        );
    }
    let _ = write!(
        out,
        r#"<span><i style="background:{}"></i>breaker open</span><span><i style="background:{}"></i>half-open</span><span><i style="background:{}"></i>downstream fault</span></p>"#,
        model::STATE_OPEN,
        model::STATE_HALF_OPEN,
        model::FAULT
    );
    out
}

fn glossary() -> String {
    let mut out = String::from("<dl class=glossary>");
    for (term, meaning) in GLOSSARY {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(term), esc(meaning));
    }
    out.push_str("</dl>");
    out
}

fn header_row(out: &mut String, cols: &[Column]) {
    out.push_str("<tr><th></th>");
    for c in cols {
        let class = if c.is_article() { " class=article" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", esc(c.header));
    }
    out.push_str("</tr>");
}

fn row(out: &mut String, label: &str, cols: &[Column], cells: impl Iterator<Item = String>) {
    let _ = write!(out, "<tr><td>{}</td>", esc(label));
    for (c, cell) in cols.iter().zip(cells) {
        let class = if c.is_article() { " class=article" } else { "" };
        let _ = write!(out, "<td{class}>{cell}</td>");
    }
    out.push_str("</tr>");
}

/// The figures, one row per figure of the model, one column per strategy
/// and per article column; then the transitions.
fn figures_table(report: &ScenarioReport) -> String {
    let cols = columns(report);
    let mut out = String::from("<table class=figures>");
    header_row(&mut out, &cols);
    for f in model::figures(report.scenario.has_tail(), report.scenario.models_pool()) {
        row(
            &mut out,
            f.label,
            &cols,
            cols.iter().map(|c| esc(&c.cell(f).text())),
        );
    }
    // A fleet's strategy log is its first replica's; each cell one
    // transition a line, never wrapped.
    let label = if report.scenario.fleet.is_some() {
        "transitions, replica 1"
    } else {
        "transitions"
    };
    let _ = write!(out, "<tr><td>{label}</td>");
    for c in &cols {
        let class = if c.is_article() { "article tr" } else { "tr" };
        let log: Vec<String> = c
            .transitions()
            .iter()
            .map(|t| format!("{} {}→{}", secs(t.at), t.from, t.to))
            .collect();
        let _ = write!(out, r#"<td class="{class}">{}</td>"#, log.join("<br>"));
    }
    out.push_str("</tr></table>");
    if report.scenario.fleet.is_some() {
        let _ = write!(out, "<p class=note>{}</p>", esc(model::FLEET_NOTE));
    }
    out
}

/// A headline's rows: the side (bought, cost) once per group of rows, the
/// label, then `cells(row)`, each with its class.
fn headline_rows<'r>(
    out: &mut String,
    rows: &'r [model::HeadlineRow],
    mut cells: impl FnMut(&'r model::HeadlineRow) -> Vec<(String, &'static str)>,
) {
    for (i, r) in rows.iter().enumerate() {
        let side = r.side.label();
        let _ = write!(out, "<tr class={side}>");
        if i == 0 || rows[i - 1].side != r.side {
            let span = rows[i..].iter().take_while(|x| x.side == r.side).count();
            let _ = write!(out, "<th class=side rowspan={span}>{side}</th>");
        }
        let _ = write!(out, "<td class=f>{}</td>", esc(r.label()));
        for (text, class) in cells(r) {
            let _ = write!(out, r#"<td class="{class}">{}</td>"#, esc(&text));
        }
        out.push_str("</tr>");
    }
}

/// A scenario's headline ([`model::headline`]): a column per strategy and
/// published column, as in its figures.
fn headline_table(report: &ScenarioReport) -> String {
    let cols = columns(report);
    let mut out = String::from("<table class=headline><tr><th colspan=2></th>");
    for c in &cols {
        let class = if c.is_article() { " class=article" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", esc(c.header));
    }
    out.push_str("</tr>");
    headline_rows(&mut out, model::headline(&report.scenario), |r| {
        cols.iter()
            .map(|c| {
                (
                    r.cell(c).text(),
                    if c.is_article() { "article" } else { "" },
                )
            })
            .collect()
    });
    out.push_str("</table>");
    out
}

/// Fleets side by side ([`model::side_by_side`]): the fleet headline's
/// rows, a column per strategy and scenario under the strategy's name.
fn side_by_side_table(group: &model::SideBySide, anchors: &[String]) -> String {
    let mut out = String::from("<table class=headline><tr><th colspan=2 rowspan=2></th>");
    let mut k = 0;
    while k < group.columns.len() {
        let name = group.columns[k].0;
        let span = group.columns[k..]
            .iter()
            .take_while(|c| c.0 == name)
            .count();
        let _ = write!(out, "<th class=first colspan={span}>{}</th>", esc(name));
        k += span;
    }
    out.push_str("</tr><tr>");
    let first = |k: usize| k == 0 || group.columns[k - 1].0 != group.columns[k].0;
    for (k, c) in group.columns.iter().enumerate() {
        let class = if first(k) { " class=first" } else { "" };
        let _ = write!(
            out,
            r##"<th{class}><a href="#{}">{}</a></th>"##,
            anchors[c.1],
            esc(&group.scenarios[c.1].1)
        );
    }
    out.push_str("</tr>");
    headline_rows(&mut out, model::FLEET_HEADLINE, |r| {
        group
            .columns
            .iter()
            .enumerate()
            .map(|(k, c)| (r.ours(c.2).text(), if first(k) { "first" } else { "" }))
            .collect()
    });
    out.push_str("</table>");
    out
}

/// One state timeline per replica, stacked, with the faults that hit each
/// (a dark bar along its row's top): what each replica's breaker did.
fn fleet_timelines(report: &ScenarioReport, run: &RunResult) -> String {
    let Some(fleet) = &run.fleet else {
        return String::new();
    };
    const ROW: f64 = 12.0;
    let sc = &report.scenario;
    let (x_max, x_step) = time_axis(report, run);
    let x = |d: Duration| LEFT + d.as_secs_f64() / x_max * (W - LEFT - RIGHT);
    let rows = fleet.transitions.len() as f64;
    let height = TOP + rows * ROW + BOTTOM;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="breaker state of each replica over time, {}">"#,
        esc(&run.strategy)
    );
    for (r, transitions) in fleet.transitions.iter().enumerate() {
        let y = TOP + r as f64 * ROW;
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" class="s">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            LEFT - 6.0,
            y + ROW - 3.0,
            r + 1,
            y + ROW,
            W - RIGHT,
            y + ROW
        );
        for (a, b, st) in model::state_bands(transitions, Duration::from_secs_f64(x_max)) {
            if let Some(fill) = model::state_fill(st) {
                let _ = write!(
                    out,
                    r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{ROW}" fill="{fill}"><title>replica {}: {st} {}–{} s</title></rect>"#,
                    x(a),
                    (x(b) - x(a)).max(1.0),
                    r + 1,
                    secs(a),
                    secs(b)
                );
            }
        }
        for f in sc.downstream.faults.iter().filter(|f| f.hits(r)) {
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="2" fill="{}"/>"#,
                x(f.from),
                x(f.until) - x(f.from),
                model::FAULT
            );
        }
    }
    let base = TOP + rows * ROW;
    let mut v = 0.0;
    while v <= x_max + 1e-9 {
        let at = x(Duration::from_secs_f64(v));
        let _ = write!(
            out,
            r##"<line x1="{at:.1}" y1="{base:.1}" x2="{at:.1}" y2="{:.1}" stroke="#999"/><text x="{at:.1}" y="{:.1}" text-anchor="middle" class="t">{}</text>"##,
            base + 4.0,
            base + 16.0,
            trim(v)
        );
        v += x_step;
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="l">time (s); rows: replicas</text></svg>"#,
        (LEFT + W - RIGHT) / 2.0,
        height - 4.0
    );
    out
}

/// A fleet's figures per replica and in total, one table per strategy (the
/// same cells as the terminal's) under its stacked state timelines; empty
/// without `[fleet]`.
fn fleet_tables(report: &ScenarioReport) -> String {
    let Some(line) = model::fleet_line(&report.scenario) else {
        return String::new();
    };
    let mut out = format!("<p class=note>{}</p>", esc(&line));
    for (sum, run) in report.summaries.iter().zip(&report.runs) {
        let Some(rows) = model::fleet_rows(sum) else {
            continue;
        };
        out.push_str(&format!("<h3>per replica, {}</h3>", esc(&sum.name)));
        out.push_str(&fleet_timelines(report, run));
        out.push_str("<table class=fleet><tr><th></th>");
        for f in model::FLEET_FIGURES {
            out.push_str(&format!("<th>{}</th>", esc(f.label)));
        }
        out.push_str("</tr>");
        for (label, r) in rows {
            out.push_str(&format!("<tr><td>{}</td>", esc(&label)));
            for f in model::FLEET_FIGURES {
                out.push_str(&format!("<td>{}</td>", esc(&(f.value)(r).text())));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    }
    out
}

/// The per-window outcomes as a table (the same cells as the terminal's).
fn windows_table(report: &ScenarioReport) -> String {
    let cols: Vec<Column> = columns(report)
        .into_iter()
        .filter(|c| !c.windows().is_empty())
        .collect();
    let windows: Vec<Vec<super::Window>> = cols.iter().map(Column::windows).collect();
    let mut out = String::from("<table class=windows>");
    header_row(&mut out, &cols);
    let Some(first) = report.summaries.first() else {
        return String::new();
    };
    for (i, w) in first.windows.iter().enumerate() {
        row(
            &mut out,
            &model::window_label(w, report.scenario.window),
            &cols,
            windows
                .iter()
                .map(|ws| ws.get(i).map_or(String::new(), model::window_text)),
        );
    }
    out.push_str("</table>");
    out
}

/// What a scenario is, in one sentence.
fn describe(r: &ScenarioReport) -> String {
    let sc = &r.scenario;
    format!(
        "{} mode; {} requests at {}/s, {} workers, queue {}; healthy latency {}; {}.",
        r.mode.as_str(),
        sc.request_count(),
        sc.rate,
        sc.workers,
        if sc.queue == 0 {
            "unbounded".to_string()
        } else {
            sc.queue.to_string()
        },
        sc.downstream.latency_text(),
        sc.fault_span().map_or("no fault".into(), |(a, b)| format!(
            "fault {}–{} s",
            secs(a),
            secs(b)
        ))
    )
}

/// The page's first screen: each scenario's headline, in the run's order;
/// fleets of one setup but for `[fleet]` side by side, where the first of
/// them is.
fn verdicts(reports: &[ScenarioReport], anchors: &[String]) -> String {
    let groups = model::side_by_side(reports);
    let index = |r: &ScenarioReport| reports.iter().position(|x| std::ptr::eq(x, r)).unwrap_or(0);
    let published = reports
        .iter()
        .any(|r| columns(r).iter().any(Column::is_article));
    let mut out = format!(
        "<p class=lead>{}. Every figure, chart and transition is in each scenario's section below.</p>",
        esc(&model::headline_title(published).replacen("headline: w", "W", 1))
    );
    for (i, r) in reports.iter().enumerate() {
        let group = groups
            .iter()
            .find(|g| g.scenarios.iter().any(|(x, _)| std::ptr::eq(*x, r)));
        match group {
            // Shown with the first of its group.
            Some(g) if !std::ptr::eq(g.scenarios[0].0, r) => {}
            Some(g) => {
                let ours: Vec<usize> = g.scenarios.iter().map(|(x, _)| index(x)).collect();
                let local: Vec<String> = ours.iter().map(|&k| anchors[k].clone()).collect();
                let names: Vec<String> = g
                    .scenarios
                    .iter()
                    .zip(&local)
                    .map(|((x, _), a)| format!(r##"<a href="#{a}">{}</a>"##, esc(&x.scenario.name)))
                    .collect();
                let _ = write!(
                    out,
                    "<section class=verdict><h2>side by side: {}</h2><p class=note>{} Each cell: the total of the replicas' figures.",
                    names.join(", "),
                    esc(&describe(r))
                );
                for (x, short) in &g.scenarios {
                    if let Some(line) = model::fleet_line(&x.scenario) {
                        let _ = write!(
                            out,
                            "<br>{}: {}",
                            esc(short),
                            esc(line.trim_start_matches("fleet: "))
                        );
                    }
                }
                out.push_str("</p>");
                out.push_str(&side_by_side_table(g, &local));
                out.push_str("</section>");
            }
            None => {
                let _ = write!(
                    out,
                    r##"<section class=verdict><h2><a href="#{}">{}</a></h2><p class=note>{}</p>"##,
                    anchors[i],
                    esc(&r.scenario.name),
                    esc(&describe(r))
                );
                out.push_str(&headline_table(r));
                out.push_str("</section>");
            }
        }
    }
    out
}

/// The page's style: every page of the lab's the same.
const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:980px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:18px 0 4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}td:first-child{text-align:left}
.t{font-size:10px;fill:#444}.l{font-size:11px;fill:#222}.s{font-size:9px;fill:#333}.note{color:#666;font-size:12px}
.legend span{margin-right:14px;font-size:12px}th.article,td.article{color:#666;font-style:italic}.glossary dt{font-weight:600;margin-top:6px}.glossary dd{margin-left:16px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
td.tr{white-space:nowrap}.lead{margin:0 0 8px;color:#444}
.verdict h2{font-size:16px;margin:14px 0 0;border:0}.verdict h2 a{color:inherit}.verdict .note{margin:0}
table.headline{font-size:14px;margin:4px 0 6px}table.headline td{font-variant-numeric:tabular-nums;font-weight:600}table.headline td.f{text-align:left;font-weight:400}table.headline td.article{font-weight:400}
table.headline th.side{text-align:left;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
tr.bought th.side{background:#e6f4ea;color:#1d6b35}tr.cost th.side{background:#fdecea;color:#9b1c1c}
table.headline .first{border-left:2px solid #999}table.headline th[colspan]{text-align:center}table.headline a{color:inherit}
.groups{display:flex;flex-wrap:wrap;gap:4px 16px}.groups figure{margin:0}.groups figcaption{font-size:12px;color:#444}
table.heat td.cell{text-align:center;min-width:44px;font-variant-numeric:tabular-nums;border:1px solid #fff}table.heat th{font-weight:400;color:#444}table.heat tr:first-child th{text-align:center}table.heat th.corner{text-align:left;font-size:12px}
.scale{display:inline-block;width:220px;height:12px;vertical-align:middle;margin:0 6px;border:1px solid #ccc}
"#;

/// The start of a page titled `title`, its `<h1>` written.
fn head(title: &str) -> String {
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>"#,
        t = esc(title)
    )
}

/// The whole page.
pub fn page(reports: &[ScenarioReport]) -> String {
    let mut out = head("fusebox lab report");
    let anchors: Vec<String> = (1..=reports.len())
        .map(|i| format!("scenario-{i}"))
        .collect();
    out.push_str(&verdicts(reports, &anchors));
    for (r, anchor) in reports.iter().zip(&anchors) {
        let sc = &r.scenario;
        let _ = write!(
            out,
            r#"<h2 id="{anchor}">{}</h2><p>{}</p>"#,
            esc(&sc.name),
            esc(&describe(r))
        );
        out.push_str(&figures_table(r));
        out.push_str(&legend());
        for (k, (run, sum)) in r.runs.iter().zip(&r.summaries).enumerate() {
            let _ = write!(
                out,
                r#"<h3 id="{anchor}-strategy-{}">{} ({})</h3>"#,
                k + 1,
                esc(&sum.name),
                sum.kind
            );
            if run.fleet.is_some() {
                out.push_str(&fleet_scatters(r, run, sum));
            } else {
                out.push_str(&scatter(r, run, sum));
            }
        }
        let _ = write!(
            out,
            "<h3>outcomes per {} window</h3>",
            format_duration(sc.window)
        );
        out.push_str(&window_bars(r));
        let names: Vec<String> = r
            .summaries
            .iter()
            .enumerate()
            .map(|(k, s)| format!("{} = {}", k + 1, esc(&s.name)))
            .collect();
        let _ = write!(out, "<p class=note>bars: {}</p>", names.join(", "));
        out.push_str(&windows_table(r));
        out.push_str(&fleet_tables(r));
    }
    out.push_str("<h2>glossary</h2>");
    out.push_str(&glossary());
    out.push_str("</body></html>\n");
    out
}

/// The heat map's colours, from the lowest value to the highest (light
/// yellow to dark blue: ColorBrewer's YlGnBu), interpolated between.
const HEAT: [(u8, u8, u8); 5] = [
    (255, 255, 204),
    (161, 218, 180),
    (65, 182, 196),
    (44, 127, 184),
    (37, 52, 148),
];

/// The colour of `t` in `[0, 1]` on [`HEAT`], as `#rrggbb`, and whether
/// text on it is written white.
fn heat(t: f64) -> (String, bool) {
    let x = t.clamp(0.0, 1.0) * (HEAT.len() - 1) as f64;
    let i = (x.floor() as usize).min(HEAT.len() - 2);
    let f = x - i as f64;
    let (a, b) = (HEAT[i], HEAT[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    let (r, g, bl) = (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2));
    // Relative luminance: white text on the darker half.
    let lum = 0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(bl);
    (format!("#{r:02x}{g:02x}{bl:02x}"), lum < 140.0)
}

/// The heat maps of a two-parameter sweep (`sweep --param A --param B
/// --html`): for each of `figures`, one table per strategy, a row per
/// value of the second parameter and a column per value of the first,
/// each cell coloured by its value (one scale per figure, from its lowest
/// value over every strategy to its highest) with the value printed; with
/// many runs the median, and its `median [p10-p90]` as the cell's title.
/// Missing values are grey and print `-`.
///
/// # Examples
///
/// ```
/// use fusebox_lab::report::html::sweep_heatmaps;
/// use fusebox_lab::report::model::{sweep_figures, Cell};
/// use fusebox_lab::report::sweep::{DataResult, DataRow};
/// use fusebox_lab::scenario::Scenario;
///
/// let sc = &Scenario::embedded()[0];
/// let figures = sweep_figures("lost")?;
/// let row = |value: &str, value2: &str, n| DataRow {
///     value: value.into(),
///     outer: Some(("rate".into(), value2.into())),
///     strategy: "fusebox".into(),
///     figure: "lost",
///     result: DataResult::One(Cell::Count(n)),
/// };
/// let rows = [row("1s", "50", 3), row("2s", "50", 9), row("1s", "100", 0), row("2s", "100", 1)];
/// let page = sweep_heatmaps(sc, "open_for", &rows, &figures, None);
/// assert_eq!(page.matches("class=\"cell\"").count(), 4);
/// assert!(page.contains(">9</td>") && page.contains("background:#253494"));
/// # Ok::<(), String>(())
/// ```
pub fn sweep_heatmaps(
    scenario: &crate::scenario::Scenario,
    param: &str,
    rows: &[super::sweep::DataRow],
    figures: &[&model::SweepFigure],
    seeds: Option<std::ops::Range<u64>>,
) -> String {
    use super::sweep::DataResult;
    fn unique<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
        let mut seen: Vec<&str> = Vec::new();
        for v in it {
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen
    }
    let outer_name = rows
        .iter()
        .find_map(|r| r.outer.as_ref().map(|o| o.0.as_str()))
        .unwrap_or("");
    let columns = unique(rows.iter().map(|r| r.value.as_str()));
    let lines = unique(
        rows.iter()
            .filter_map(|r| r.outer.as_ref().map(|o| o.1.as_str())),
    );
    let strategies = unique(rows.iter().map(|r| r.strategy.as_str()));
    let mut out = head(&format!("fusebox lab sweep: {}", scenario.name));
    let _ = write!(
        out,
        "<p>{}</p><p class=lead>{} (columns) against {} (rows){}; each cell coloured from the \
         figure's lowest value <span class=scale style=\"background:linear-gradient(to right{})\"></span> \
         to its highest, over every strategy.</p>",
        esc(&super::runs::describe(scenario)),
        esc(param),
        esc(outer_name),
        match &seeds {
            Some(s) => format!(
                "; {}, each cell the median (its title: median [p10-p90], nearest rank)",
                esc(&super::runs::seeds_text(s))
            ),
            None => String::new(),
        },
        HEAT.iter()
            .map(|(r, g, b)| format!(",#{r:02x}{g:02x}{b:02x}"))
            .collect::<String>()
    );
    for f in figures {
        let of = |r: &&super::sweep::DataRow| r.figure == f.name;
        let cell = |r: &super::sweep::DataRow| match &r.result {
            DataResult::One(c) => (super::runs::cell_number(*c), c.text(), None),
            DataResult::Many(s) => (
                super::runs::cell_number(s.median),
                s.median.text(),
                Some(s.text()),
            ),
        };
        let numbers: Vec<f64> = rows.iter().filter(of).filter_map(|r| cell(r).0).collect();
        let lo = numbers.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            out,
            "<h2>{}</h2><p class=note>from {} (lightest) to {} (darkest)</p>",
            esc(f.figure.label),
            if numbers.is_empty() {
                "-".into()
            } else {
                trim(lo)
            },
            if numbers.is_empty() {
                "-".into()
            } else {
                trim(hi)
            }
        );
        for strategy in &strategies {
            let _ = write!(
                out,
                r#"<h3>{}</h3><table class=heat><tr><th class=corner>{} \ {}</th>"#,
                esc(strategy),
                esc(outer_name),
                esc(param)
            );
            for c in &columns {
                let _ = write!(out, "<th>{}</th>", esc(c));
            }
            out.push_str("</tr>");
            for line in &lines {
                let _ = write!(out, "<tr><th>{}</th>", esc(line));
                for c in &columns {
                    let found = rows.iter().filter(of).find(|r| {
                        r.strategy == *strategy
                            && r.value == *c
                            && r.outer.as_ref().is_some_and(|o| o.1 == *line)
                    });
                    let (number, text, title) = found.map_or((None, "-".into(), None), cell);
                    let (background, white) = match number {
                        Some(x) if hi > lo => heat((x - lo) / (hi - lo)),
                        Some(_) => heat(0.0),
                        None => ("#eeeeee".into(), false),
                    };
                    let title = title.map_or(String::new(), |t| format!(r#" title="{}""#, esc(&t)));
                    let _ = write!(
                        out,
                        r#"<td class="cell" style="background:{background};color:{}"{title}>{}</td>"#,
                        if white { "#fff" } else { "#222" },
                        esc(&text)
                    );
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heat_scale_runs_from_light_to_dark() {
        assert_eq!(heat(0.0), ("#ffffcc".into(), false));
        assert_eq!(heat(1.0), ("#253494".into(), true));
        assert_eq!(heat(0.5).0, "#41b6c4");
        // Darker all the way.
        let lum = |t: f64| {
            let c = heat(t).0;
            let v = |i: usize| u8::from_str_radix(&c[i..i + 2], 16).unwrap() as f64;
            0.2126 * v(1) + 0.7152 * v(3) + 0.0722 * v(5)
        };
        for k in 0..20 {
            assert!(lum(k as f64 / 20.0) > lum((k + 1) as f64 / 20.0), "{k}");
        }
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice(150.0), (150.0, 50.0));
        assert_eq!(nice(3.0), (3.0, 1.0));
        assert_eq!(nice(0.0), (1.0, 0.2));
    }
}
