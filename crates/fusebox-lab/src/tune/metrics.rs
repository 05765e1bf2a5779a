//! A traffic profile from a running service's `/metrics`: fusebox's
//! Prometheus series (`fusebox::metrics`) of one breaker, by its `name`
//! label: its request rate, from `fusebox_calls_total` (every outcome but
//! `shadowed`, which is counted again by its outcome), and its latency,
//! from the `fusebox_call_duration_seconds` histogram.
//!
//! A rate needs a span of time: the counters' increase between two scrapes
//! over the time between them, or one scrape's counters over the time they
//! have counted (the service's uptime). The latency becomes the
//! downstream's: the histogram itself, as `latency = { histogram = .. }`
//! (each bucket's calls spread evenly over it, as Prometheus's
//! `histogram_quantile` reads a bucket; the `+Inf` bucket ends at twice
//! the largest finite bound).

use crate::scenario::{LatencyDist, Scenario};
use std::collections::BTreeMap;
use std::time::Duration;

/// One sample of a scrape: a series' name, labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series, e.g. `fusebox_calls_total`.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

/// Reads the Prometheus (or OpenMetrics) text format: one sample a line,
/// comments and blank lines skipped.
///
/// # Errors
///
/// A line that is not a sample, with its number.
///
/// # Examples
///
/// ```
/// use fusebox_lab::tune::metrics::parse_text;
///
/// let s = parse_text("# TYPE x counter\nfusebox_calls_total{name=\"db\",outcome=\"success\"} 3\n")?;
/// assert_eq!((s[0].labels["name"].as_str(), s[0].value), ("db", 3.0));
/// assert!(parse_text("fusebox_calls_total{name=\"db\"\n").unwrap_err().contains("line 1"));
/// # Ok::<(), String>(())
/// ```
pub fn parse_text(text: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => return Err(bad("no value")),
        };
        let mut labels = BTreeMap::new();
        let rest = if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            let end = loop {
                // key="value", with \" \\ \n escapes in the value.
                while chars.peek().is_some_and(|(_, c)| *c == ',' || *c == ' ') {
                    chars.next();
                }
                match chars.peek() {
                    Some((i, '}')) => break *i,
                    None => return Err(bad("unclosed labels")),
                    _ => {}
                }
                let mut key = String::new();
                for (_, c) in chars.by_ref() {
                    if c == '=' {
                        break;
                    }
                    key.push(c);
                }
                if chars.next().map(|(_, c)| c) != Some('"') {
                    return Err(bad("a label value is not quoted"));
                }
                let mut value = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next().map(|(_, c)| c) {
                            Some('n') => value.push('\n'),
                            Some(c) => value.push(c),
                            None => break,
                        },
                        c => value.push(c),
                    }
                }
                if !closed {
                    return Err(bad("unclosed labels"));
                }
                labels.insert(key.trim().to_string(), value);
            };
            &body[end + 1..]
        } else {
            rest
        };
        let value = rest
            .split_whitespace()
            .next()
            .ok_or_else(|| bad("no value"))?;
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse::<f64>()
                .map_err(|_| bad("the value is not a number"))?,
        };
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(out)
}

/// A breaker's figures in one scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    /// Its calls so far, every outcome but `shadowed`.
    pub calls: f64,
    /// Its duration histogram: `(upper bound in seconds, cumulative
    /// count)`, by bound, `+Inf` last.
    pub buckets: Vec<(f64, f64)>,
}

impl Scrape {
    /// The figures of breaker `name` in `text`.
    ///
    /// # Errors
    ///
    /// A text that does not parse, or that has no `fusebox_calls_total`
    /// of that breaker (naming the breakers it has).
    pub fn of(text: &str, name: &str) -> Result<Scrape, String> {
        let samples = parse_text(text)?;
        let of_name = |s: &Sample| s.labels.get("name").is_some_and(|n| n == name);
        let calls: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.name == "fusebox_calls_total")
            .collect();
        let mine: Vec<&Sample> = calls.iter().copied().filter(|s| of_name(s)).collect();
        if mine.is_empty() {
            let mut names: Vec<&str> = calls
                .iter()
                .filter_map(|s| s.labels.get("name").map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            return Err(format!(
                "--dependency {name:?}: no fusebox_calls_total{{name={name:?}}} in the metrics (breakers there: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
        }
        let calls = mine
            .iter()
            .filter(|s| s.labels.get("outcome").is_none_or(|o| o != "shadowed"))
            .map(|s| s.value)
            .sum();
        let mut buckets: Vec<(f64, f64)> = samples
            .iter()
            .filter(|s| s.name == "fusebox_call_duration_seconds_bucket" && of_name(s))
            .filter_map(|s| {
                let le = s.labels.get("le")?;
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((le, s.value))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Scrape { calls, buckets })
    }
}

/// A traffic profile: what `tune --from-metrics` sets in the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Requests per second.
    pub rate: f64,
    /// The healthy latency's median (of [`latency_dist`](Self::latency_dist)).
    pub latency: Duration,
    /// The healthy latency: the scrape's histogram over the span.
    pub latency_dist: LatencyDist,
    /// Calls the histogram timed in the span.
    pub timed: f64,
}

impl Profile {
    /// The profile between two scrapes `span` apart (`before`: `None` for
    /// one scrape whose counters have counted for `span`).
    ///
    /// # Errors
    ///
    /// No calls in the span, or no timed call (an empty histogram).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::LatencyDist;
    /// use fusebox_lab::tune::metrics::{Profile, Scrape};
    /// use std::time::Duration;
    ///
    /// let text = "fusebox_calls_total{name=\"db\",outcome=\"success\"} 500\n\
    ///     fusebox_call_duration_seconds_bucket{name=\"db\",le=\"0.01\"} 90\n\
    ///     fusebox_call_duration_seconds_bucket{name=\"db\",le=\"0.05\"} 99\n\
    ///     fusebox_call_duration_seconds_bucket{name=\"db\",le=\"+Inf\"} 100\n";
    /// let p = Profile::between(None, &Scrape::of(text, "db")?, Duration::from_secs(10))?;
    /// let ms = Duration::from_millis;
    /// assert_eq!(p.rate, 50.0);
    /// // 90 calls spread over 0..10 ms, 9 over 10..50 ms, 1 over 50..100 ms.
    /// assert_eq!(
    ///     p.latency_dist,
    ///     LatencyDist::Histogram { le: vec![ms(10), ms(50), ms(100)], counts: vec![90.0, 9.0, 1.0] }
    /// );
    /// assert!(p.latency > ms(5) && p.latency < ms(6));
    /// # Ok::<(), String>(())
    /// ```
    pub fn between(
        before: Option<&Scrape>,
        after: &Scrape,
        span: Duration,
    ) -> Result<Profile, String> {
        // A counter that went down was reset (the process restarted)
        // between the scrapes: as Prometheus's `increase()` would, the
        // second scrape's counts are then the span's.
        let reset = before.is_some_and(|b| {
            b.calls > after.calls
                || b.buckets
                    .iter()
                    .any(|&(le, was)| after.buckets.iter().any(|&(l, now)| l == le && now < was))
        });
        let before = if reset { None } else { before };
        let calls = after.calls - before.map_or(0.0, |b| b.calls);
        if calls.is_nan() || calls <= 0.0 || span.is_zero() {
            return Err(format!(
                "--from-metrics: no calls in the span ({} s) of the scrapes: no rate to profile",
                span.as_secs_f64()
            ));
        }
        // Cumulative counts in the span, by bound (a bound named twice
        // counted once, negative and non-finite bounds but +Inf left out).
        let mut cumulative: Vec<(f64, f64)> = Vec::new();
        for &(le, n) in &after.buckets {
            if le.is_nan() || le < 0.0 || cumulative.last().is_some_and(|x| x.0 == le) {
                continue;
            }
            let was = before
                .and_then(|b| b.buckets.iter().find(|x| x.0 == le))
                .map_or(0.0, |x| x.1);
            cumulative.push((le, (n - was).max(0.0)));
        }
        let total = cumulative.last().map_or(0.0, |x| x.1);
        if total.is_nan() || total <= 0.0 {
            return Err(
                "--from-metrics: the breaker's fusebox_call_duration_seconds histogram has no \
                 timed call in the span: no latency to profile"
                    .into(),
            );
        }
        let largest = cumulative
            .iter()
            .rev()
            .find(|x| x.0.is_finite())
            .map_or(1.0, |x| x.0);
        let (mut le, mut counts) = (Vec::new(), Vec::new());
        let mut below = 0.0;
        for &(bound, n) in &cumulative {
            let secs = if bound.is_finite() {
                bound
            } else {
                2.0 * largest
            };
            let bound = Duration::from_secs_f64(secs.min(3600.0));
            // Counts in the span can fall behind (a counter reset between
            // the scrapes): never below 0.
            let n_in = ((n - below).max(0.0) * 1e6).round() / 1e6;
            below = below.max(n);
            match (le.last(), counts.last_mut()) {
                // A +Inf bucket after a bound of 0, or bounds past an hour:
                // their calls in the last bucket kept.
                (Some(&l), Some(last)) if bound <= l => *last += n_in,
                _ => {
                    le.push(bound);
                    counts.push(n_in);
                }
            }
        }
        let latency_dist = LatencyDist::Histogram { le, counts };
        Ok(Profile {
            rate: ((calls / span.as_secs_f64()) * 1e3).round() / 1e3,
            latency: latency_dist.median(),
            latency_dist,
            timed: total,
        })
    }

    /// `scenario` with this profile's rate and latency (its arrivals drawn
    /// again), checked as a file would be. The scrape is one process's:
    /// a fleet's `rate`, its replicas' total, is the profile's times its
    /// replicas.
    ///
    /// # Errors
    ///
    /// A rate or latency the scenario's limits refuse, naming the key; a
    /// scenario whose arrivals are a trace.
    pub fn apply(&self, scenario: &Scenario) -> Result<Scenario, String> {
        if matches!(scenario.arrivals, crate::scenario::Arrivals::Trace(..)) {
            return Err(format!(
                "--from-metrics: scenario {:?} reads its arrivals from a trace: the scrape's rate cannot replace it",
                scenario.name
            ));
        }
        let mut sc = scenario.clone();
        sc.rate = self.rate * sc.replicas() as f64;
        sc.rate_until = None;
        sc.downstream.latency = self.latency;
        sc.downstream.latency_dist = Some(self.latency_dist.clone());
        sc.downstream.tail.clear();
        sc.check().map_err(|p| {
            format!(
                "--from-metrics: the profile (rate {}/s, latency {}) does not fit scenario {:?}: key `{}`: {}",
                self.rate,
                self.latency_dist.describe(),
                scenario.name,
                p.key,
                p.message
            )
        })?;
        sc.redraw_arrivals();
        Ok(sc)
    }
}

/// Reads a scrape: a file, or an `http://` URL fetched now.
///
/// # Errors
///
/// A file that cannot be read, a URL that does not answer 200.
pub fn read_source(source: &str) -> Result<String, String> {
    if source.starts_with("http://") || source.starts_with("https://") {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("--from-metrics {source}: {e}"))?;
        let resp = client
            .get(source)
            .send()
            .map_err(|e| format!("--from-metrics {source}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("--from-metrics {source}: HTTP {}", resp.status()));
        }
        resp.text()
            .map_err(|e| format!("--from-metrics {source}: {e}"))
    } else {
        std::fs::read_to_string(source)
            .map_err(|e| format!("--from-metrics {source}: cannot read: {e}"))
    }
}
