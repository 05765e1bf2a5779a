//! Scenario files (TOML) -> a validated [`Scenario`].
//!
//! The format is the one in the lab issue; every key is checked: unknown keys,
//! missing keys and bad values are errors that name the file, the line and the
//! key. Durations are strings such as `"150ms"`, `"1.5s"`, `"2s"`.

use crate::downstream::{Downstream, Fault, FaultOutcome};
use crate::strategy::{RawStrategy, StrategySpec};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// The scenarios compiled into the binary: `(file name, TOML text)`.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "seed000-50rps.toml",
        include_str!("../scenarios/seed000-50rps.toml"),
    ),
    (
        "seed000-100rps.toml",
        include_str!("../scenarios/seed000-100rps.toml"),
    ),
];

/// Largest number of arrivals one scenario may produce (keeps memory bounded).
pub const MAX_REQUESTS: u64 = 2_000_000;

/// A validated experiment: arrivals, worker pool, downstream, client, strategies.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// `duration`: arrivals stop here.
    pub duration: Duration,
    /// `rate`: request `i` arrives at `i / rate` seconds.
    pub rate: f64,
    /// `workers`: size of the worker pool.
    pub workers: usize,
    /// `queue`: at most this many waiting requests; 0 = unbounded.
    pub queue: usize,
    /// `window`: width of the report's outcome windows.
    pub window: Duration,
    /// `[downstream]`.
    pub downstream: Downstream,
    /// `[client]`.
    pub client: Client,
    /// `[[strategy]]`, in file order.
    pub strategies: Vec<StrategySpec>,
}

/// The client side of each call: `[client]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Client {
    /// A call running longer than this fails as a timeout.
    pub timeout: Option<Duration>,
    /// Extra attempts after a downstream failure (never after a fast-fail).
    pub retries: u32,
}

impl Scenario {
    /// Arrival time of request `i`, in nanoseconds from the start.
    pub fn arrival_ns(&self, i: u64) -> u64 {
        (i as f64 * 1e9 / self.rate).round() as u64
    }

    /// Number of requests: every `i` with `arrival(i) < duration`.
    pub fn request_count(&self) -> u64 {
        let d = self.duration.as_nanos() as u64;
        let mut n = (self.duration.as_secs_f64() * self.rate).floor() as u64;
        // Fix up float rounding at the boundary.
        while n > 0 && self.arrival_ns(n - 1) >= d {
            n -= 1;
        }
        while self.arrival_ns(n) < d {
            n += 1;
        }
        n
    }

    /// The fault period: from the earliest fault start to the latest fault end.
    pub fn fault_span(&self) -> Option<(Duration, Duration)> {
        let from = self.downstream.faults.iter().map(|f| f.from).min()?;
        let until = self.downstream.faults.iter().map(|f| f.until).max()?;
        Some((from, until))
    }

    /// Loads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&file, &text)
    }

    /// Parses and validates scenario text; `file` is only used in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
        raw.validate(&ctx)
    }

    /// The embedded default scenarios, parsed.
    pub fn embedded() -> Vec<Scenario> {
        EMBEDDED
            .iter()
            .map(|(file, text)| {
                Scenario::parse(file, text).expect("embedded scenarios are valid (tested)")
            })
            .collect()
    }
}

/// A scenario that could not be loaded: file, line, key and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file (as given on the command line).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending key (dotted path), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// File name and text, to turn byte spans into lines in errors.
pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a str,
    pub(crate) text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// An error about the value at `span`, under `key`.
    pub(crate) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: Some(self.line_of(span.start)),
            key: Some(key.to_string()),
            message: message.into(),
        }
    }

    fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let line = e.span().map(|s| self.line_of(s.start));
        // The key: named in serde's message ("unknown field `x`", "missing field `x`"),
        // or else the text before `=` on the error's line.
        let message = e.message().trim().to_string();
        let key = backticked(&message).or_else(|| {
            let l = line?;
            let src = self.text.lines().nth(l - 1)?;
            let (k, _) = src.split_once('=')?;
            let k = k.trim();
            (!k.is_empty() && !k.starts_with('[')).then(|| k.to_string())
        });
        ScenarioError {
            file: self.file.to_string(),
            line,
            key,
            message,
        }
    }
}

fn backticked(message: &str) -> Option<String> {
    if !(message.contains("unknown field") || message.contains("missing field")) {
        return None;
    }
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

/// A duration written as a string: `"150ms"`, `"1.5s"`, `"2s"`, `"250us"`, `"1m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

/// Parses `"150ms"`, `"1.5s"`, `"0.1s"`, `"2m"` exactly (decimal, no float rounding).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration {s:?} has no unit (write e.g. \"150ms\" or \"1.5s\")"))?;
    let (num, unit) = t.split_at(split);
    let unit_ns: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => {
            return Err(format!(
                "duration {s:?}: unknown unit {other:?} (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(format!("duration {s:?}: not a number"));
    }
    let bad = || format!("duration {s:?} is out of range");
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let mut nanos = int.checked_mul(unit_ns).ok_or_else(bad)?;
    let mut scale = unit_ns;
    for c in frac.chars() {
        scale /= 10;
        if scale == 0 {
            if c != '0' {
                return Err(format!("duration {s:?} is finer than a nanosecond"));
            }
            continue;
        }
        nanos += u128::from(c.to_digit(10).ok_or_else(bad)?) * scale;
    }
    let nanos = u64::try_from(nanos).map_err(|_| bad())?;
    Ok(Duration::from_nanos(nanos))
}

/// Formats a duration the way scenario files write it (`"150ms"`, `"1.5s"`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".into()
    } else if ns % 1_000_000 != 0 {
        format!("{}us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}s", ns as f64 / 1e9)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    duration: Spanned<Dur>,
    rate: Spanned<f64>,
    workers: Spanned<i64>,
    queue: Option<Spanned<i64>>,
    window: Option<Spanned<Dur>>,
    downstream: RawDownstream,
    client: Option<RawClient>,
    strategy: Vec<Spanned<RawStrategy>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDownstream {
    latency: Spanned<Dur>,
    #[serde(default)]
    faults: Vec<Spanned<RawFault>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    from: Spanned<Dur>,
    until: Spanned<Dur>,
    latency: Spanned<Dur>,
    outcome: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    timeout: Option<Spanned<Dur>>,
    retries: Option<Spanned<i64>>,
}

/// Checks `lo <= v <= hi` for an integer key.
pub(crate) fn int_in(
    ctx: &Ctx<'_>,
    v: &Spanned<i64>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<i64, ScenarioError> {
    let x = *v.get_ref();
    if x < lo || x > hi {
        return Err(ctx.err(v.span(), key, format!("{x} is out of range ({lo}..={hi})")));
    }
    Ok(x)
}

impl RawScenario {
    fn validate(self, ctx: &Ctx<'_>) -> Result<Scenario, ScenarioError> {
        let name = self.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(ctx.err(self.name.span(), "name", "must not be empty"));
        }
        let duration = self.duration.get_ref().0;
        if duration.is_zero() || duration > Duration::from_secs(24 * 3600) {
            return Err(ctx.err(
                self.duration.span(),
                "duration",
                format!("{:?} must be > 0 and at most 24h", duration),
            ));
        }
        let rate = *self.rate.get_ref();
        if !(rate.is_finite() && rate > 0.0 && rate <= 1e6) {
            return Err(ctx.err(
                self.rate.span(),
                "rate",
                format!("{rate} must be > 0 and at most 1000000 (requests per second)"),
            ));
        }
        let workers = int_in(ctx, &self.workers, "workers", 1, 4096)? as usize;
        let queue = match &self.queue {
            Some(q) => int_in(ctx, q, "queue", 0, 100_000_000)? as usize,
            None => 0,
        };
        let window = match &self.window {
            Some(w) if w.get_ref().0.is_zero() => {
                return Err(ctx.err(w.span(), "window", "must be > 0"))
            }
            Some(w) => w.get_ref().0,
            None => Duration::from_millis(500),
        };
        if duration.as_nanos() / window.as_nanos() > 100_000 {
            return Err(ctx.err(
                self.window
                    .as_ref()
                    .map_or(self.duration.span(), |w| w.span()),
                "window",
                "too small for the duration (more than 100000 windows)",
            ));
        }
        let client = match &self.client {
            None => Client::default(),
            Some(c) => Client {
                timeout: match &c.timeout {
                    Some(t) if t.get_ref().0.is_zero() => {
                        return Err(ctx.err(t.span(), "client.timeout", "must be > 0"))
                    }
                    t => t.as_ref().map(|t| t.get_ref().0),
                },
                retries: match &c.retries {
                    Some(r) => int_in(ctx, r, "client.retries", 0, 100)? as u32,
                    None => 0,
                },
            },
        };
        let mut faults = Vec::new();
        for f in &self.downstream.faults {
            let r = f.get_ref();
            let outcome = match r.outcome.get_ref().as_str() {
                "error" => FaultOutcome::Error,
                "hang" => FaultOutcome::Hang,
                other => {
                    return Err(ctx.err(
                        r.outcome.span(),
                        "downstream.faults.outcome",
                        format!("{other:?} is not one of \"error\", \"hang\""),
                    ))
                }
            };
            if outcome == FaultOutcome::Hang && client.timeout.is_none() {
                return Err(ctx.err(
                    r.outcome.span(),
                    "client.timeout",
                    "a fault with outcome = \"hang\" needs [client] timeout",
                ));
            }
            if r.until.get_ref().0 <= r.from.get_ref().0 {
                return Err(ctx.err(
                    r.until.span(),
                    "downstream.faults.until",
                    format!(
                        "{} must be after from = {}",
                        format_duration(r.until.get_ref().0),
                        format_duration(r.from.get_ref().0)
                    ),
                ));
            }
            faults.push(Fault {
                from: r.from.get_ref().0,
                until: r.until.get_ref().0,
                latency: r.latency.get_ref().0,
                outcome,
            });
        }
        if self.strategy.is_empty() {
            return Err(ScenarioError {
                file: ctx.file.to_string(),
                line: None,
                key: Some("strategy".into()),
                message: "at least one [[strategy]] is required".into(),
            });
        }
        let mut strategies: Vec<StrategySpec> = Vec::new();
        for s in &self.strategy {
            let spec = s.get_ref().validate(ctx, s.span())?;
            if strategies.iter().any(|o| o.name == spec.name) {
                return Err(ctx.err(
                    s.span(),
                    "strategy.name",
                    format!("{:?} is used by two strategies", spec.name),
                ));
            }
            strategies.push(spec);
        }
        let scenario = Scenario {
            name,
            duration,
            rate,
            workers,
            queue,
            window,
            downstream: Downstream {
                latency: self.downstream.latency.get_ref().0,
                faults,
            },
            client,
            strategies,
        };
        if scenario.duration.as_secs_f64() * rate > MAX_REQUESTS as f64 {
            return Err(ctx.err(
                self.rate.span(),
                "rate",
                format!("rate x duration gives more than {MAX_REQUESTS} requests"),
            ));
        }
        Ok(scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("150").is_err());
        assert!(parse_duration("1.5x").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
        for d in ["150ms", "1.5s", "2s", "0s", "250us"] {
            let parsed = parse_duration(d).unwrap();
            assert_eq!(parse_duration(&format_duration(parsed)), Ok(parsed));
        }
    }

    #[test]
    fn embedded_scenarios_load() {
        let all = Scenario::embedded();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "seed000-50rps");
        assert_eq!(all[0].request_count(), 150);
        assert_eq!(all[1].name, "seed000-100rps");
        assert_eq!(all[1].request_count(), 300);
        assert_eq!(
            all[0].fault_span(),
            Some((Duration::from_millis(500), Duration::from_millis(1500)))
        );
    }

    #[test]
    fn shipped_scenario_files_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 6, "found {n} scenario files");
    }

    fn base() -> String {
        EMBEDDED[0].1.to_string()
    }

    fn error_of(text: &str) -> ScenarioError {
        Scenario::parse("x.toml", text).unwrap_err()
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let text = base().replace("workers = 8", "workers = 8\nwrokers = 3");
        let line = text.lines().position(|l| l.starts_with("wrokers")).unwrap() + 1;
        let e = error_of(&text);
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.line, Some(line));
        assert_eq!(e.key.as_deref(), Some("wrokers"));
        assert!(e
            .to_string()
            .starts_with(&format!("x.toml:{line}: key `wrokers`")));
    }

    #[test]
    fn missing_key_is_named() {
        let text: String = base()
            .lines()
            .filter(|l| !l.starts_with("rate"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("rate"), "{e}");
    }

    #[test]
    fn bad_values_are_named_with_line() {
        let cases = [
            ("rate = 50.0", "rate = -1.0", "rate"),
            ("workers = 8", "workers = 0", "workers"),
            ("duration = \"3s\"", "duration = \"3 parsecs\"", "duration"),
            (
                "outcome = \"error\"",
                "outcome = \"boom\"",
                "downstream.faults.outcome",
            ),
            (
                "outcome = \"error\"",
                "outcome = \"hang\"",
                "client.timeout",
            ),
            (
                "until = \"1500ms\"",
                "until = \"100ms\"",
                "downstream.faults.until",
            ),
            ("kind = \"seed\"", "kind = \"nope\"", "strategy.kind"),
            ("failures = 5", "failures = 0", "strategy.failures"),
            ("window = \"500ms\"", "window = \"0s\"", "window"),
            ("rate = 50.0", "rate = \"fast\"", "rate"),
        ];
        for (from, to, key) in cases {
            let text = base().replacen(from, to, 1);
            assert_ne!(text, base(), "{from}");
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(to))
                .unwrap()
                + 1;
            let e = error_of(&text);
            assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
            assert_eq!(e.line, Some(line), "{to}: {e}");
        }
    }

    #[test]
    fn fusebox_keys_are_checked_per_policy() {
        let cases = [
            (
                "policy = \"consecutive\"",
                "policy = \"sometimes\"",
                "strategy.policy",
            ),
            (
                "policy = \"consecutive\"",
                "policy = \"rate-count\"",
                "strategy.window_calls",
            ),
            ("probes = 1", "probes = 0", "strategy.probes"),
            (
                "probes = 1",
                "probes = 1\nwindow_time = \"1s\"",
                "strategy.window_time",
            ),
        ];
        for (from, to, key) in cases {
            let text = base().replacen(from, to, 1);
            assert_ne!(text, base(), "{from}");
            let e = error_of(&text);
            assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
        let rate = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-count\"\nrate = 1.5\nwindow_calls = 10",
            1,
        );
        assert_eq!(error_of(&rate).key.as_deref(), Some("strategy.rate"));
        let ok = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-time\"\nrate = 0.5\nwindow_time = \"1s\"\nmin_calls = 5",
            1,
        );
        let s = Scenario::parse("x", &ok).unwrap();
        assert_eq!(s.strategies[2].kind.as_str(), "fusebox");
        // fusebox's own validation: min_calls above the count window.
        let bad = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-count\"\nrate = 0.5\nwindow_calls = 0",
            1,
        );
        assert_eq!(error_of(&bad).key.as_deref(), Some("strategy.window_calls"));
    }

    #[test]
    fn key_of_another_kind_is_rejected() {
        let text = base().replacen("kind = \"none\"", "kind = \"none\"\nfailures = 3", 1);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("strategy.failures"), "{e}");
        assert!(e.message.contains("none"), "{e}");
    }

    #[test]
    fn arrivals_follow_the_rate() {
        let s = Scenario::parse("x", &base()).unwrap();
        assert_eq!(s.arrival_ns(0), 0);
        assert_eq!(s.arrival_ns(1), 20_000_000);
        assert_eq!(s.arrival_ns(149), 2_980_000_000);
        let odd = base().replace("rate = 50.0", "rate = 30.0");
        let s = Scenario::parse("x", &odd).unwrap();
        // 3 s at 30/s: 0, 1/30, ..., 89/30 < 3.
        assert_eq!(s.request_count(), 90);
    }
}
