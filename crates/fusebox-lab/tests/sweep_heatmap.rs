//! `sweep --param A --param B --html FILE`: heat maps of a two-parameter
//! sweep, one per figure and strategy, a column per value of A and a row
//! per value of B; each cell prints the value `--csv` gives for it (the
//! median with `--runs`) and is coloured darker the higher it is, on one
//! scale per figure. And (ignored unless run with `--ignored`: needs
//! Chromium) the page as headless Chromium parses and draws it; its
//! screenshot goes to `target/tmp/sweep_heatmap/`.
//! `ops/screenshots/sweep-heatmap.png` is Chromium's screenshot the same
//! way (`chromium --headless --window-size=1000,1050 --screenshot=..`) of
//! the page of `sweep crates/fusebox-lab/scenarios/seed000-50rps-outage.toml
//! --param open_for=0.1s..1s:0.1s --param consecutive_failures=2..8:1 --runs
//! 50 --figures lost --html FILE`.

mod served;

use served::browser::{external, out_dir, REQUIRE_CHROMIUM};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

fn scenario() -> String {
    format!(
        "{}/scenarios/seed000-50rps-outage.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

const GRID: [&str; 4] = [
    "--param",
    "open_for=0.2s..0.6s:0.2s",
    "--param",
    "consecutive_failures=3..5:1",
];

/// Runs `sweep` with `args` over [`GRID`], `--html` to `html` (and more).
fn sweep(args: &[&str], html: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .arg("sweep")
        .arg(scenario())
        .args(GRID)
        .args(["-q", "--html"])
        .arg(html)
        .args(args)
        .output()
        .unwrap()
}

/// One heat map cell: its figure (the `<h2>`), strategy (the `<h3>`), row,
/// column, background, text and title.
#[derive(Debug, Clone)]
struct HeatCell {
    figure: String,
    strategy: String,
    row: String,
    column: String,
    background: String,
    text: String,
    title: Option<String>,
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> Option<&'a str> {
    let start = s.find(a)? + a.len();
    Some(&s[start..start + s[start..].find(b)?])
}

/// Every cell of the page's heat maps, read back from its HTML.
fn cells(page: &str) -> Vec<HeatCell> {
    let mut out = Vec::new();
    for section in page.split("<h2>").skip(1) {
        let figure = section[..section.find("</h2>").unwrap()].to_string();
        for table in section.split("<h3>").skip(1) {
            let strategy = table[..table.find("</h3>").unwrap()].to_string();
            let mut rows = table.split("<tr>").skip(1);
            let header = rows.next().unwrap();
            let columns: Vec<&str> = header
                .split("<th>")
                .skip(1)
                .map(|h| &h[..h.find("</th>").unwrap()])
                .collect();
            for row in rows {
                let name = between(row, "<th>", "</th>").unwrap().to_string();
                for (k, td) in row.split("<td class=\"cell\"").skip(1).enumerate() {
                    out.push(HeatCell {
                        figure: figure.clone(),
                        strategy: strategy.clone(),
                        row: name.clone(),
                        column: columns[k].to_string(),
                        background: between(td, "background:", ";").unwrap().to_string(),
                        text: between(td, ">", "</td>").unwrap().to_string(),
                        title: between(td, "title=\"", "\"").map(str::to_string),
                    });
                }
            }
        }
    }
    out
}

fn luminance(hex: &str) -> f64 {
    let v = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64;
    0.2126 * v(1) + 0.7152 * v(3) + 0.0722 * v(5)
}

#[test]
fn a_grid_sweep_draws_a_heat_map_per_figure_and_strategy() {
    let dir = out_dir("sweep_heatmap_cells");
    let (html, csv) = (dir.join("grid.html"), dir.join("grid.csv"));
    let out = sweep(
        &["--figures", "lost,calls", "--csv", csv.to_str().unwrap()],
        &html,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!doctype html>") && page.ends_with("</html>\n"));
    assert!(!page.contains("<script"), "a page without scripts");
    let cells = cells(&page);
    // 2 figures x 3 strategies x 3 rows x 3 columns.
    assert_eq!(cells.len(), 54);
    // Each cell prints the CSV's value for its figure, strategy and values.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut want = HashMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        // param2,value2,param,value,strategy,figure,result
        want.insert((f[1], f[3], f[4], f[5]), f[6]);
    }
    let figure = |label: &str| match label {
        "requests lost after recovery" => "lost",
        "downstream calls during the fault" => "calls",
        other => panic!("{other}"),
    };
    for c in &cells {
        let key = (&*c.row, &*c.column, &*c.strategy, figure(&c.figure));
        assert_eq!(Some(&&*c.text), want.get(&key), "{c:?}");
    }
    // Per figure: darker the higher, the lowest lightest, the highest darkest.
    for label in [
        "requests lost after recovery",
        "downstream calls during the fault",
    ] {
        let mut these: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.figure == label)
            .map(|c| (c.text.parse().unwrap(), luminance(&c.background)))
            .collect();
        these.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in these.windows(2) {
            assert!(w[0].0 == w[1].0 || w[0].1 > w[1].1, "{label}: {w:?}");
        }
        assert!(
            these.first().unwrap().0 < these.last().unwrap().0,
            "{label}"
        );
    }
    let lost: Vec<&HeatCell> = cells
        .iter()
        .filter(|c| c.figure.starts_with("requests lost"))
        .collect();
    let max = lost
        .iter()
        .map(|c| c.text.parse::<u64>().unwrap())
        .max()
        .unwrap();
    for c in &lost {
        let v: u64 = c.text.parse().unwrap();
        if v == 0 {
            assert_eq!(c.background, "#ffffcc", "{c:?}");
        }
        if v == max {
            assert_eq!(c.background, "#253494", "{c:?}");
        }
    }
    // The rows and columns are the parameters' values, in order.
    let fusebox: Vec<&HeatCell> = lost
        .iter()
        .copied()
        .filter(|c| c.strategy == "fusebox")
        .collect();
    let order: Vec<(&str, &str)> = fusebox.iter().map(|c| (&*c.row, &*c.column)).collect();
    assert_eq!(
        order[..4],
        [
            ("3", "200ms"),
            ("3", "400ms"),
            ("3", "600ms"),
            ("4", "200ms")
        ]
    );
}

#[test]
fn without_figures_the_first_and_with_runs_the_median() {
    let dir = out_dir("sweep_heatmap_runs");
    let html = dir.join("runs.html");
    let out = sweep(&["--runs", "5"], &html);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let cells = cells(&page);
    // With --runs every figure is printed; the page draws the first only.
    assert_eq!(page.matches("<h2>").count(), 1);
    assert_eq!(cells.len(), 27);
    assert!(page.contains("5 runs, seeds 1..=5"));
    for c in &cells {
        let title = c.title.as_deref().unwrap();
        assert!(title.starts_with(&format!("{} [", c.text)), "{c:?}");
    }
    // One parameter is no grid.
    let out = Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .args([
            "sweep",
            &scenario(),
            "--param",
            "open_for=0.2s..0.6s:0.2s",
            "--html",
        ])
        .arg(dir.join("one.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--html") && err.contains("--param twice"),
        "{err}"
    );
    assert!(!dir.join("one.html").exists());
}

/// The page as headless Chromium parses it (its DOM after parsing: every
/// cell kept inside its table) and draws it (a screenshot).
#[test]
#[ignore = "needs Chromium: run with -- --ignored"]
fn the_heat_map_renders_in_chromium() {
    let Some(chromium) = external("chromium", REQUIRE_CHROMIUM, "Debian package `chromium`") else {
        return;
    };
    let dir = out_dir("sweep_heatmap");
    let html = dir.join("sweep-heatmap.html");
    let out = sweep(&["--runs", "20", "--figures", "lost"], &html);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("file://{}", html.display());
    let headless = |args: &[&str]| {
        let out = Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args(args)
            .arg(&url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let dom = String::from_utf8(headless(&["--dump-dom"])).unwrap();
    let tables: Vec<&str> = dom.split("<table class=\"heat\">").skip(1).collect();
    assert_eq!(tables.len(), 3, "one table per strategy");
    for t in &tables {
        let t = &t[..t.find("</table>").unwrap()];
        assert_eq!(t.matches("<td class=\"cell\"").count(), 9);
    }
    let shot = dir.join("sweep-heatmap.png");
    headless(&[
        "--window-size=1000,1400",
        &format!("--screenshot={}", shot.display()),
    ]);
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dim(16), dim(20)), (1000, 1400));
    eprintln!("screenshot: {}", shot.display());
}
