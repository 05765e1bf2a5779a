//! One report model, three renderings: the terminal table, the JSON and the
//! HTML page of one run carry the same figures; the article's figures appear
//! beside the article's experiment only, whatever its name.

use fusebox_lab::engine::Mode;
use fusebox_lab::report::model::{
    self, columns, Cell, Column, Source, ARTICLE, FIGURES, GLOSSARY, OUTCOMES,
};
use fusebox_lab::report::{html, json, table, ScenarioReport};
use fusebox_lab::scenario::{Scenario, EMBEDDED};
use serde_json::Value;

mod common;
use common::shipped;

fn report(sc: Scenario) -> ScenarioReport {
    ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap()
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| match v {
        Value::Null => v,
        _ => &v[k],
    })
}

/// The cells of the page's row `label` (the text between `<td>`s).
fn html_row(page: &str, label: &str) -> Vec<String> {
    let start = page
        .find(&format!("<tr><td>{label}</td>"))
        .unwrap_or_else(|| panic!("no row {label:?} on the page"));
    let row = &page[start..start + page[start..].find("</tr>").unwrap()];
    row.split("<td")
        .skip(2)
        .map(|c| {
            let c = &c[c.find('>').unwrap() + 1..];
            c[..c.find("</td>").unwrap()].to_string()
        })
        .collect()
}

#[test]
fn table_json_and_html_carry_the_same_figures() {
    // Timeouts, a bounded queue's rejections and the article's columns in one run each.
    for file in ["seed000-50rps", "hang-timeout"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{file}.toml"));
        let r = report(Scenario::load(&path).unwrap());
        let text = table::render_scenario(&r);
        let doc = json::document(std::slice::from_ref(&r));
        let page = html::page(std::slice::from_ref(&r));
        let cols = columns(&r);
        for f in FIGURES {
            let cells: Vec<String> = cols.iter().map(|c| c.cell(f).text()).collect();
            // The page: exactly these cells, in column order.
            assert_eq!(html_row(&page, f.label), cells, "{file}: {}", f.label);
            // The table: the row with this label shows them, in order.
            let line = text
                .lines()
                .find(|l| {
                    l.trim_start().starts_with(f.label.trim_start()) && l.len() > f.label.len()
                })
                .unwrap_or_else(|| panic!("{file}: no table row {:?}", f.label));
            let mut rest = &line[f.label.len() + 2..];
            for c in cells.iter().filter(|c| !c.is_empty()) {
                let k = rest
                    .find(c.as_str())
                    .unwrap_or_else(|| panic!("{file}: {:?} lacks {c:?}: {line}", f.label));
                rest = &rest[k + c.len()..];
            }
            // The JSON: each strategy's value, as the cell shows it.
            let Some(path) = f.json else { continue };
            for (i, c) in cols.iter().enumerate() {
                let Source::Ours(s) = c.source else { continue };
                let v = at(&doc["strategies"][c.strategy], path);
                assert_eq!(doc["strategies"][c.strategy]["name"], s.name.as_str());
                let shown = match (c.cell(f), v) {
                    (Cell::Count(_), Value::Number(n)) => n.to_string(),
                    (Cell::Secs(_), Value::Number(n)) => format!("{:.3}", n.as_f64().unwrap()),
                    (Cell::Ms(_), Value::Number(n)) => format!("{:.1}", n.as_f64().unwrap()),
                    (Cell::Missing, Value::Null) => "-".into(),
                    other => panic!("{file}: {} of {}: {other:?}", f.label, s.name),
                };
                assert_eq!(shown, cells[i], "{file}: {} of {}", f.label, s.name);
            }
        }
        // The transitions, in all three.
        for (k, s) in r.summaries.iter().enumerate() {
            let js = doc["strategies"][k]["transitions"].as_array().unwrap();
            assert_eq!(js.len(), s.transitions.len());
            for t in &s.transitions {
                let at = format!("{:.3}", t.at.as_secs_f64());
                assert!(text.contains(&at) && page.contains(&format!("{at} {}→{}", t.from, t.to)));
            }
        }
    }
}

#[test]
fn the_page_has_the_article_beside_the_lab_a_legend_and_a_glossary() {
    let r = report(Scenario::embedded().remove(0));
    let page = html::page(std::slice::from_ref(&r));
    let n = r.scenario.strategies.len();
    // A scatter per strategy and the window bars.
    assert_eq!(page.matches("<svg").count(), n + 1);
    assert_eq!(page.matches("<circle").count(), n * 150);
    assert!(page.contains("<title>open 0.730–"), "open band");
    // The article's columns, headed `published`: as in the terminal, beside
    // `none` and `seed`, in the headline, the figures and the windows.
    assert_eq!(
        page.matches("<th class=article>published</th>").count(),
        3 * 2
    );
    assert!(!page.contains("(article)"));
    assert_eq!(html_row(&page, "downstream calls")[3], "86");
    for (_, label, colour) in OUTCOMES {
        assert!(page.contains(&format!(r#"<i style="background:{colour}"></i>{label}"#)));
    }
    for (term, _) in GLOSSARY {
        assert!(page.contains(&format!("<dt>{term}</dt>")), "{term}");
    }
    // One colour per outcome everywhere: every fill on the page is a legend colour or a band.
    for (_, _, colour) in OUTCOMES {
        assert!(
            page.contains(&format!(r#"fill="{colour}""#))
                || colour == "#ff9f1c"
                || colour == "#8c1a6a"
        );
    }
    assert!(
        !page.contains("http://")
            || page.matches("http://").count()
                == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
}

#[test]
fn timeouts_have_the_timeout_colour_in_points_and_bars() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hang-timeout.toml");
    let page = html::page(&[report(Scenario::load(&path).unwrap())]);
    let timeout = OUTCOMES.iter().find(|o| o.1 == "timeout").unwrap().2;
    assert!(
        page.contains(&format!(r#"r="2.2" fill="{timeout}""#)),
        "points"
    );
    assert!(
        page.contains(&format!(r#"fill="{timeout}"><title>no breaker: "#)),
        "bars"
    );
}

#[test]
fn the_article_is_shown_for_its_experiment_by_value_not_by_name() {
    let [(_, text50), _] = EMBEDDED else { panic!() };
    let article_cols = |sc: Scenario| {
        columns(&report(sc))
            .iter()
            .filter(|c| c.is_article())
            .count()
    };
    let same = Scenario::parse("x.toml", text50).unwrap();
    assert_eq!(article_cols(same), 2);
    // Renamed, same values: still the article's experiment.
    let renamed = text50.replace("name = \"seed000-50rps\"", "name = \"mine\"");
    assert_eq!(
        article_cols(Scenario::parse("x.toml", &renamed).unwrap()),
        2
    );
    // Same name, another value: not the article's experiment any more.
    let edited = text50.replace("workers = 8", "workers = 4");
    assert_eq!(article_cols(Scenario::parse("x.toml", &edited).unwrap()), 0);
    // The article's breaker with another threshold: no article column beside it.
    let seed = text50.replacen(
        "consecutive_failures = 5\nopen_for = \"500ms\"",
        "consecutive_failures = 3\nopen_for = \"500ms\"",
        1,
    );
    assert_ne!(seed, *text50);
    assert_eq!(article_cols(Scenario::parse("x.toml", &seed).unwrap()), 1);
}

#[test]
fn json_has_every_figure_key_and_the_requests() {
    let r = report(Scenario::embedded().remove(0));
    let doc = json::document(std::slice::from_ref(&r));
    let strategies = doc["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 3);
    for s in strategies {
        for f in FIGURES {
            if let Some(path) = f.json {
                assert!(s.get(path.split('.').next().unwrap()).is_some(), "{path}");
            }
        }
        assert_eq!(s["requests"].as_array().unwrap().len(), 150);
    }
    assert_eq!(strategies[1]["downstream_calls"], 86);
    assert_eq!(strategies[1]["transitions"][0]["at_s"], 0.73);
    let two: Vec<_> = Scenario::embedded().into_iter().map(report).collect();
    assert_eq!(
        json::document(&two)["scenarios"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn fleet_figures_agree_in_table_json_and_html() {
    use fusebox_lab::engine::Outcome;
    use fusebox_lab::report::model::{fleet_rows, FLEET_FIGURES};
    let r = report(shipped("fleet20-path-quorum1"));
    let text = table::render_scenario(&r);
    let doc = json::scenario(&r);
    let page = html::page(std::slice::from_ref(&r));
    assert_eq!(doc["fleet"]["quorum"], 1);
    // One stacked timeline (a row per replica) per strategy.
    assert_eq!(
        page.matches("breaker state of each replica").count(),
        r.summaries.len()
    );
    assert!(page.contains("replica 3: half_open"));
    for (k, sum) in r.summaries.iter().enumerate() {
        let rows = fleet_rows(sum).expect("a fleet run has fleet rows");
        assert_eq!(rows.len(), 21);
        let j = &doc["strategies"][k]["fleet"];
        for (i, (label, figures)) in rows.iter().enumerate() {
            let cells: Vec<String> = FLEET_FIGURES
                .iter()
                .map(|f| (f.value)(figures).text())
                .collect();
            // The terminal's row: the label, then the same cells.
            assert!(
                text.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>()
                        == [
                            label.split(' ').collect::<Vec<_>>(),
                            cells.iter().map(String::as_str).collect()
                        ]
                        .concat()),
                "{label}: {cells:?} not in the table"
            );
            let jv = if i == 20 {
                &j["total"]
            } else {
                &j["replicas"][i]
            };
            for f in FLEET_FIGURES {
                assert_eq!(jv[f.json], (f.value)(figures).json(), "{label} {}", f.json);
            }
            assert!(page.contains(&format!(
                "<tr><td>{label}</td>{}</tr>",
                cells
                    .iter()
                    .map(|c| format!("<td>{c}</td>"))
                    .collect::<String>()
            )));
        }
        // The total is the replicas' sum, and healthy fast-fails are counted
        // from the requests: replica 3's path is the only broken one.
        let run = &r.runs[k];
        let fleet = sum.fleet.as_ref().unwrap();
        assert_eq!(
            fleet.total.failing_calls,
            run.calls.iter().filter(|c| !c.result.is_ok()).count()
        );
        let ff_elsewhere = run
            .requests
            .iter()
            .enumerate()
            .filter(|(i, q)| i % 20 != 2 && q.outcome == Outcome::FastFail)
            .count();
        let healthy_elsewhere: usize = fleet
            .replicas
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(_, f)| f.healthy_fast_fails)
            .sum();
        assert_eq!(healthy_elsewhere, ff_elsewhere);
    }
}

#[test]
fn a_shared_fleet_probes_once_and_quorum_two_spares_the_healthy_replicas() {
    let fleet = |name: &str, k: usize| {
        let r = report(shipped(name));
        r.summaries[k].fleet.clone().unwrap()
    };
    let total = |name: &str, k: usize| fleet(name, k).total;
    // fusebox (strategy 2) on 20 replicas: the fleet shares fusebox
    // breakers (the article's runs on each replica alone).
    let (local, shared) = (total("fleet20-local", 2), total("fleet20-shared", 2));
    assert_eq!((local.recovery_probes, shared.recovery_probes), (20, 1));
    assert!(shared.failing_calls < local.failing_calls);
    let (q1, q2) = (
        total("fleet20-path-quorum1", 2),
        total("fleet20-path-quorum2", 2),
    );
    // Quorum 1: replica 3's trip opens the fleet until a healthy replica
    // takes the probe lease and its probe closes it.
    assert!(q1.healthy_fast_fails > 50, "{q1:?}");
    assert!(
        q1.healthy_fast_fails > 10 * q2.healthy_fast_fails,
        "{q1:?} {q2:?}"
    );
    // Quorum 2: only replica 3's own fast-fails after its path healed.
    let q2 = fleet("fleet20-path-quorum2", 2);
    for (i, r) in q2.replicas.iter().enumerate() {
        assert_eq!(r.healthy_fast_fails > 0, i == 2, "replica {}: {r:?}", i + 1);
    }
}

/// The JSON of a fleet run carries each transition's `remote` flag (the
/// fleet's change, not the replica's own breaker's), each replica's
/// transitions and their count: a shared fleet has remote transitions on
/// the replicas its trip opened, a local one none; a scenario without
/// `[fleet]` has no `remote` key at all (its JSON is as it was).
#[test]
fn json_marks_the_transitions_a_fleet_made() {
    let remote = |doc: &Value, k: usize| {
        let fleet = &doc["strategies"][k]["fleet"];
        let replicas = fleet["replicas"].as_array().unwrap();
        let mut flagged = 0;
        for r in replicas {
            let log = r["transitions"].as_array().unwrap();
            let n = log.iter().filter(|t| t["remote"] == true).count();
            assert!(log.iter().all(|t| t["remote"].is_boolean()), "{r}");
            assert_eq!(r["remote_transitions"], n);
            flagged += n;
        }
        assert_eq!(fleet["total"]["remote_transitions"], flagged);
        // The strategy's own `transitions` (replica 1's) carry the flag too.
        assert_eq!(
            doc["strategies"][k]["transitions"],
            replicas[0]["transitions"]
        );
        (
            flagged,
            replicas
                .iter()
                .filter(|r| r["remote_transitions"] != 0)
                .count(),
        )
    };
    // The fusebox strategy (2) of the article's fault on 20 replicas.
    let shared = json::scenario(&report(shipped("fleet20-shared")));
    let local = json::scenario(&report(shipped("fleet20-local")));
    assert_eq!(remote(&local, 2), (0, 0));
    let (flagged, replicas) = remote(&shared, 2);
    // The first trip opens the other 19; the fleet's close closes them.
    assert!(
        flagged >= 2 * 19 && replicas >= 19,
        "{flagged} on {replicas}"
    );
    // Opened by the fleet: to open, from closed.
    let opened = shared["strategies"][2]["fleet"]["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["transitions"].as_array().unwrap())
        .filter(|t| t["remote"] == true && t["to"] == "open")
        .count();
    assert!(opened >= 19, "{opened}");
    let plain = json::scenario(&report(shipped("seed000-50rps")));
    assert!(!plain.to_string().contains("\"remote\""));
}

/// The terminal headline's lines: from its title to `every figure:`.
fn table_headline(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with("  headline: "))
        .expect("a headline");
    let to = lines
        .iter()
        .position(|l| *l == "  every figure:")
        .expect("the figures after it");
    lines[from..to].to_vec()
}

/// A headline table of the page: its header cells, and its rows as
/// (label, cells).
type Headline = (Vec<String>, Vec<(String, Vec<String>)>);

/// The page's headline tables, in order.
fn html_headlines(page: &str) -> Vec<Headline> {
    let inner = |cell: &str| {
        let cell = &cell[cell.find('>').unwrap() + 1..];
        cell[..cell.find("</t").unwrap()].to_string()
    };
    page.split("<table class=headline>")
        .skip(1)
        .map(|t| {
            let t = &t[..t.find("</table>").unwrap()];
            let mut trs = t.split("<tr").skip(1);
            let header = trs.next().unwrap();
            let header: Vec<String> = header.split("<th").skip(1).map(inner).collect();
            let rows = trs
                .filter(|r| r.contains("<td class=f>"))
                .map(|r| {
                    let r = &r[r.find("<td class=f>").unwrap()..];
                    let mut cells = r.split("<td").skip(1).map(inner);
                    (cells.next().unwrap(), cells.collect())
                })
                .collect();
            (header, rows)
        })
        .collect()
}

/// Each scenario's report leads with its headline: in the terminal, right
/// under what it compares and before every figure; on the page, every
/// scenario's headline before any scenario's figures. It names each
/// strategy, shows the model's cells for the headline's figures (the
/// article's three headline figures among them) and has `published`
/// columns only beside the article's experiment.
#[test]
fn the_headline_comes_first_with_the_figures_values_and_published_only_for_the_article() {
    let mut reports: Vec<ScenarioReport> = Scenario::embedded().into_iter().map(report).collect();
    reports.push(report(shipped("hang-timeout")));
    let page = html::page(&reports);
    let headlines = html_headlines(&page);
    assert_eq!(headlines.len(), 3);
    // The first screen: the three headlines, then the first scenario's figures.
    let last_headline = page.rfind("<table class=headline>").unwrap();
    assert!(last_headline < page.find("<table class=figures>").unwrap());
    assert!(page.find("<h1>").unwrap() < page.find("<table class=headline>").unwrap());
    for (r, (header, rows)) in reports.iter().zip(&headlines) {
        let name = &r.scenario.name;
        let cols = columns(r);
        let published = cols.iter().any(Column::is_article);
        assert_eq!(published, name.starts_with("seed000"), "{name}");
        let chosen = model::headline(&r.scenario);
        assert_eq!(chosen.len(), 5, "{name}");
        // The page: a header per column (strategies by name, `published`
        // for the article's), a row per headline figure with its cells.
        let headers: Vec<&str> = cols.iter().map(|c| c.header).collect();
        assert_eq!(&header[1..], headers.as_slice(), "{name}");
        for s in &r.summaries {
            assert!(header.contains(&s.name), "{name}: {}", s.name);
        }
        assert_eq!(header.iter().any(|h| h == ARTICLE), published, "{name}");
        assert_eq!(rows.len(), chosen.len());
        for (row, (label, cells)) in chosen.iter().zip(rows) {
            assert_eq!(label, row.label());
            let want: Vec<String> = cols.iter().map(|c| row.cell(c).text()).collect();
            assert_eq!(cells, &want, "{name}: {label}");
        }
        // The terminal: the headline right under the legend, before every
        // figure; a row per headline figure, its side first, then its cells.
        let text = table::render_scenario(r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("  legend:"), "{text}");
        assert!(lines[3].starts_with("  headline: "), "{text}");
        let block = table_headline(&text);
        assert_eq!(block.len(), 2 + chosen.len(), "{text}");
        assert_eq!(
            block[1].split_whitespace().collect::<Vec<_>>(),
            headers
                .iter()
                .flat_map(|h| h.split(' '))
                .collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(block.join("\n").contains(ARTICLE), published, "{name}");
        for (row, line) in chosen.iter().zip(&block[2..]) {
            let rest = line
                .trim_start()
                .strip_prefix(row.side.label())
                .unwrap_or_else(|| panic!("{name}: {line}"))
                .trim_start()
                .strip_prefix(row.label())
                .unwrap_or_else(|| panic!("{name}: {line}"));
            let want: Vec<String> = cols
                .iter()
                .map(|c| row.cell(c).text())
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(
                rest.split_whitespace().collect::<Vec<_>>(),
                want,
                "{name}: {line}"
            );
        }
    }
    // The article's headline figures, beside the lab's: downstream calls
    // 150 -> 86, the fault's median latency 155 ms -> 0.1 ms, recovery lag
    // 0.54 s; bought above cost.
    let (header, rows) = &headlines[0];
    let cell = |label: &str, header_at: usize| {
        rows.iter().find(|(l, _)| l == label).unwrap().1[header_at - 1].clone()
    };
    assert_eq!(
        header[1..],
        ["no breaker", "published", "article", "published", "fusebox"]
    );
    assert_eq!(cell("downstream calls", 2), "150");
    assert_eq!(cell("downstream calls", 3), "86");
    assert_eq!(cell("downstream calls", 4), "86");
    assert_eq!(cell("latency during fault: median ms", 2), "155.0");
    assert_eq!(cell("latency during fault: median ms", 4), "0.1");
    assert_eq!(cell("recovery lag s", 3), "0.540");
    assert_eq!(cell("recovery lag s", 4), "0.54");
    assert_eq!(cell("requests lost after recovery", 3), "27");
    // Not published by the article: blank, not zero.
    assert_eq!(cell("requests lost after recovery", 4), "");
    let sides: Vec<&str> = model::HEADLINE.iter().map(|r| r.side.label()).collect();
    assert_eq!(sides, ["bought", "bought", "bought", "cost", "cost"]);
    let side_cells = page.split("<table class=headline>").nth(1).unwrap();
    assert!(
        side_cells
            .find("<th class=side rowspan=3>bought</th>")
            .unwrap()
            < side_cells
                .find("<th class=side rowspan=2>cost</th>")
                .unwrap()
    );
    // A scenario without a fault has the headline of an overload.
    let [(_, text50), _] = EMBEDDED else { panic!() };
    let fault = &text50
        [text50.find("[[downstream.faults]]").unwrap()..text50.find("[[strategy]]").unwrap()];
    let calm = Scenario::parse("calm.toml", &text50.replace(fault, "")).unwrap();
    let labels: Vec<&str> = model::headline(&calm).iter().map(|r| r.label()).collect();
    assert_eq!(
        labels,
        [
            "successes",
            "downstream errors",
            "fast-fails",
            "rejected (queue full)"
        ]
    );
}

/// A fleet's headline gives its replicas' totals, not the fleet's figures
/// as one service: the recovery of every replica (the last one's), not the
/// first success anywhere; and its transitions row says whose log it is.
#[test]
fn a_fleet_headline_gives_the_replicas_totals() {
    let r = report(shipped("fleet20-local"));
    let fusebox = &r.summaries[2];
    let total = &fusebox.fleet.as_ref().unwrap().total;
    // The fleet as one service recovers with its first replica, 0.600 s;
    // every replica only at 0.790 s.
    assert_eq!(fusebox.recovery_lag.map(|d| d.as_millis()), Some(600));
    assert_eq!(total.recovery_lag.map(|d| d.as_millis()), Some(790));
    let text = table::render_scenario(&r);
    let block = table_headline(&text);
    let row = |label: &str| {
        block
            .iter()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("{label}: {block:?}"))
            .split_whitespace()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
    };
    // The columns reversed: fusebox, article, no breaker.
    assert_eq!(
        row("recovery lag s, every replica (the last)"),
        ["0.790", "0.790", "0.190"]
    );
    assert_eq!(row("recovery probes, all replicas"), ["20", "20", "0"]);
    assert_eq!(row("failing calls, all replicas"), ["100", "100", "100"]);
    assert_eq!(
        row("fast-fails while healthy, all replicas"),
        ["60", "60", "0"]
    );
    assert!(!block.join("\n").contains(ARTICLE));
    assert!(text.contains("  transitions, fusebox, replica 1:"));
    let page = html::page(std::slice::from_ref(&r));
    assert!(page.contains("<tr><td>transitions, replica 1</td>"));
    assert!(page.contains(model::FLEET_NOTE));
    let (_, rows) = &html_headlines(&page)[0];
    assert_eq!(rows[3].0, "recovery lag s, every replica (the last)");
    assert_eq!(rows[3].1, ["0.190", "0.790", "0.790"]);
}

/// Fleets of one setup but for their `[fleet]` settings are shown side by
/// side, strategy by strategy, with their replicas' totals: in the
/// terminal after the scenarios, on the page as their one headline before
/// any figures; a fleet with another setup has a headline of its own.
#[test]
fn local_and_shared_fleets_are_side_by_side() {
    let reports: Vec<ScenarioReport> = ["fleet20-local", "fleet20-shared", "fleet20-path-quorum1"]
        .into_iter()
        .map(|n| report(shipped(n)))
        .collect();
    let groups = model::side_by_side(&reports);
    assert_eq!(groups.len(), 1);
    let shorts: Vec<&str> = groups[0]
        .scenarios
        .iter()
        .map(|(_, s)| s.as_str())
        .collect();
    assert_eq!(shorts, ["local", "shared"]);
    let text = table::render_side_by_side(&reports);
    assert!(
        text.starts_with("== side by side: fleet20-local, fleet20-shared"),
        "{text}"
    );
    let line = |label: &str| {
        text.lines()
            .find(|l| l.contains(label))
            .unwrap()
            .split_whitespace()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
    };
    // Reversed: fusebox shared, fusebox local, article shared, ...: the
    // fleet shares fusebox's breakers, not the article's.
    assert_eq!(
        line("recovery probes, all replicas"),
        ["1", "20", "20", "20", "0", "0"]
    );
    assert_eq!(
        line("failing calls, all replicas"),
        ["96", "100", "100", "100", "100", "100"]
    );
    let strategies = text
        .lines()
        .nth(3)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(
        strategies,
        ["no", "breaker", "article", "fusebox"],
        "{text}"
    );
    let scenarios = text
        .lines()
        .nth(4)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(
        scenarios,
        ["local", "shared", "local", "shared", "local", "shared"]
    );

    let page = html::page(&reports);
    let figures = page.find("<table class=figures>").unwrap();
    let side = page.find("side by side: ").unwrap();
    assert!(side < figures);
    // Two headlines before any figures: the pair's, and quorum 1's own.
    let headlines = html_headlines(&page);
    assert_eq!(headlines.len(), 2);
    assert!(page.rfind("<table class=headline>").unwrap() < figures);
    let (header, rows) = &headlines[0];
    assert_eq!(
        &header[1..4],
        ["no breaker", "article", "fusebox"],
        "{header:?}"
    );
    let probes = &rows
        .iter()
        .find(|(l, _)| l == "recovery probes, all replicas")
        .unwrap()
        .1;
    assert_eq!(probes, &["0", "0", "20", "20", "20", "1"]);
    // Unlike fleets, the two scenarios of the article are not grouped.
    let two: Vec<ScenarioReport> = Scenario::embedded().into_iter().map(report).collect();
    assert!(model::side_by_side(&two).is_empty());
    assert!(table::render_side_by_side(&two).is_empty());
}

/// A fleet's latency charts are drawn by group of replicas (those a fault
/// hits first, at most five to a chart), each request once, each replica's
/// breaker states in a lane of its group's chart; the transition cells do
/// not wrap.
#[test]
fn fleet_latency_charts_by_replica_group() {
    let r = report(shipped("fleet20-path-quorum1"));
    let groups = model::replica_groups(&r.scenario);
    assert_eq!(groups[0], [2]);
    assert_eq!(groups.len(), 5);
    assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), 20);
    assert!(groups.iter().all(|g| g.len() <= model::REPLICA_GROUP));
    assert_eq!(
        model::replica_group_label(&r.scenario, &groups[0]),
        "replica 3 (fault 0.500–2.500 s)"
    );
    assert_eq!(
        model::replica_group_label(&r.scenario, &groups[1]),
        "replicas 1–2, 4–6 (no fault)"
    );
    let page = html::page(std::slice::from_ref(&r));
    for (sum, run) in r.summaries.iter().zip(&r.runs) {
        let charts: Vec<&str> = page
            .split(&format!(
                "aria-label=\"latency of each request against its arrival time, {}, replica",
                sum.name
            ))
            .skip(1)
            .map(|c| &c[..c.find("</svg>").unwrap()])
            .collect();
        assert_eq!(charts.len(), groups.len(), "{}", sum.name);
        let points: usize = charts.iter().map(|c| c.matches("<circle").count()).sum();
        assert_eq!(points, run.requests.len(), "{}", sum.name);
        // The sick replica's chart: its 10 failing calls at 150 ms, red.
        let red = OUTCOMES.iter().find(|o| o.1 == "error").unwrap().2;
        assert_eq!(
            charts[0].matches(&format!("fill=\"{red}\"")).count(),
            sum.fleet.as_ref().unwrap().replicas[2].failing_calls
        );
        // Replica 3's breaker states, in its lane: none without a breaker.
        assert_eq!(
            charts[0].contains("<title>replica 3: open "),
            sum.kind != "none",
            "{}",
            sum.name
        );
    }
    // The transitions: one a line, in cells that do not wrap.
    assert!(page.contains("td.tr{white-space:nowrap}"));
    let cells = page.matches("<td class=\"tr\">").count()
        + page.matches("<td class=\"article tr\">").count();
    assert_eq!(cells, columns(&r).len());
}

/// A reader that stops reading (`fusebox-lab run | head`) ends the
/// printing, not the run: no panic, exit 0, and the files asked for are
/// still written.
#[test]
fn a_closed_stdout_ends_the_printing_not_the_run() {
    let dir = std::env::temp_dir().join(format!("fusebox-lab-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("report.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
        .args(["run", "--clock", "virtual", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc.is_object() || doc.is_array(), "{doc}");
    std::fs::remove_dir_all(&dir).unwrap();
}
