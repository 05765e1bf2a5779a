//! `NAME=FROM..TO:STEP`: one parameter of a scenario, varied over a range.
//!
//! Scenario-wide parameters (`rate`, `workers`, `queue`, `timeout`, `retries`)
//! change the scenario; the fleet's (`replicas`, `quorum`, `sync_every`,
//! `propagation`) change its `[fleet]` table; any other name is a strategy
//! key (`open_for`, `consecutive_failures`, `half_open_probes`, ...) and
//! changes every strategy that has it. Every value is checked by
//! [`Scenario::check`], as a scenario file would be.

use super::duration::parse_value;
use super::{ParamValue, Scenario, MAX_QUEUE, MAX_REPLICAS, MAX_RETRIES, MAX_WORKERS};

/// Largest number of values one sweep may have.
const MAX_VALUES: usize = 10_000;

/// A parsed `NAME=FROM..TO:STEP`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Parameter name.
    pub name: String,
    /// The values, in order.
    pub values: Vec<ParamValue>,
}

/// A value as `--param` writes it: a duration with its unit, or a number.
pub(crate) fn value(s: &str) -> Result<ParamValue, String> {
    let s = s.trim();
    if s.ends_with(|c: char| c.is_ascii_alphabetic()) {
        parse_value(s).map(ParamValue::Dur)
    } else {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(ParamValue::Num)
            .ok_or_else(|| format!("{s:?} is not a number or a duration"))
    }
}

impl Sweep {
    /// Parses `NAME=FROM..TO:STEP` (e.g. `open_for=0.1s..2s:0.1s`,
    /// `consecutive_failures=2..10:1`).
    ///
    /// # Errors
    ///
    /// A malformed spec, or more than 10 000 values.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::sweep::{apply, Sweep};
    /// use fusebox_lab::scenario::{ParamValue, Scenario};
    ///
    /// let s = Sweep::parse("rate=10..1e9:1e8")?;
    /// assert_eq!(s.values[1], ParamValue::Num(100_000_010.0));
    /// let err = apply(&Scenario::embedded()[0], &s.name, s.values[1]).unwrap_err();
    /// assert!(err.contains("key `rate`") && err.contains("at most 1000000"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(spec: &str) -> Result<Sweep, String> {
        let usage = || {
            format!("--param {spec:?}: expected NAME=FROM..TO:STEP, e.g. open_for=0.1s..2s:0.1s")
        };
        let (name, range) = spec.split_once('=').ok_or_else(usage)?;
        let (range, step) = range.rsplit_once(':').ok_or_else(usage)?;
        let (from, to) = range.split_once("..").ok_or_else(usage)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(usage());
        }
        let bad = |e: String| format!("--param {spec:?}: {e}");
        let (from, to, step) = (
            value(from).map_err(bad)?,
            value(to).map_err(bad)?,
            value(step).map_err(bad)?,
        );
        let values = match (from, to, step) {
            (ParamValue::Dur(a), ParamValue::Dur(b), ParamValue::Dur(s)) => {
                if s.is_zero() || b < a {
                    return Err(bad("needs FROM <= TO and STEP > 0".into()));
                }
                let n = ((b - a).as_nanos() / s.as_nanos()) as usize + 1;
                if n > MAX_VALUES {
                    return Err(bad(format!("more than {MAX_VALUES} values")));
                }
                (0..n).map(|k| ParamValue::Dur(a + s * k as u32)).collect()
            }
            (ParamValue::Num(a), ParamValue::Num(b), ParamValue::Num(s)) => {
                if s <= 0.0 || b < a {
                    return Err(bad("needs FROM <= TO and STEP > 0".into()));
                }
                let n = ((b - a) / s + 1e-9).floor() + 1.0;
                if n > MAX_VALUES as f64 {
                    return Err(bad(format!("more than {MAX_VALUES} values")));
                }
                // Rounded to 9 significant decimals so 0.1 steps print cleanly.
                (0..n as usize)
                    .map(|k| ParamValue::Num(((a + s * k as f64) * 1e9).round() / 1e9))
                    .collect()
            }
            _ => {
                return Err(bad(
                    "FROM, TO and STEP must all be durations or all numbers".into(),
                ))
            }
        };
        Ok(Sweep {
            name: name.to_string(),
            values,
        })
    }
}

/// The parameters of a scenario's `[fleet]` table that [`apply`] sets.
pub const FLEET_PARAMS: [&str; 4] = ["replicas", "quorum", "sync_every", "propagation"];

/// `scenario` with parameter `name` set to `value`, checked like a file.
///
/// A fleet parameter ([`FLEET_PARAMS`]) needs a scenario with a `[fleet]`;
/// `replicas` keeps the scenario's `rate` (the fleet's, in all, shared
/// round-robin) and `workers` (each replica's), so the rate per replica is
/// `rate / replicas`.
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::sweep::apply;
/// use fusebox_lab::scenario::{ParamValue, Scenario, EMBEDDED};
/// use std::time::Duration;
///
/// let text = EMBEDDED[0].1.replace(
///     "[downstream]",
///     "[fleet]\nreplicas = 3\nsharing = \"fleet\"\n\n[downstream]",
/// );
/// let sc = Scenario::parse("fleet.toml", &text).unwrap();
/// let v = apply(&sc, "sync_every", ParamValue::Dur(Duration::from_millis(250)))?;
/// assert_eq!(v.fleet.unwrap().sync_every, Duration::from_millis(250));
/// let err = apply(&sc, "quorum", ParamValue::Num(4.0)).unwrap_err();
/// assert!(err.contains("quorum = 4") && err.contains("replicas = 3"), "{err}");
/// let err = apply(&Scenario::embedded()[0], "quorum", ParamValue::Num(1.0)).unwrap_err();
/// assert!(err.contains("quorum") && err.contains("no [fleet]"), "{err}");
/// # Ok::<(), String>(())
/// ```
pub fn apply(scenario: &Scenario, name: &str, value: ParamValue) -> Result<Scenario, String> {
    let mut sc = scenario.clone();
    let count = |max: usize| match value {
        ParamValue::Num(x) if x.fract() == 0.0 && x >= 0.0 && x <= max as f64 => Ok(x as usize),
        _ => Err(format!(
            "{name} must be a whole number in 0..={max}, not {value}"
        )),
    };
    match name {
        "rate" => match value {
            ParamValue::Num(x) => sc.rate = x,
            ParamValue::Dur(_) => return Err(format!("rate is a number, not {value}")),
        },
        "workers" => sc.workers = count(MAX_WORKERS)?,
        "queue" => sc.queue = count(MAX_QUEUE)?,
        "retries" => sc.client.retries = count(MAX_RETRIES as usize)? as u32,
        "timeout" => match value {
            ParamValue::Dur(d) => sc.client.timeout = Some(d),
            ParamValue::Num(_) => {
                return Err(format!(
                    "timeout is a duration (write e.g. 0.5s), not {value}"
                ))
            }
        },
        "replicas" | "quorum" | "sync_every" | "propagation" => {
            let Some(f) = sc.fleet.as_mut() else {
                return Err(format!(
                    "{name} is a fleet parameter, and scenario {:?} has no [fleet] table",
                    scenario.name
                ));
            };
            match name {
                "replicas" => f.replicas = count(MAX_REPLICAS)?,
                "quorum" => f.quorum = count(MAX_REPLICAS)?,
                "sync_every" => f.sync_every = value.duration(name)?,
                _ => f.propagation = value.duration(name)?,
            }
        }
        _ => {
            let mut any = false;
            for s in &mut sc.strategies {
                any |= s.kind.set_param(name, value)?;
            }
            if !any {
                return Err(format!(
                    "no strategy of scenario {:?} has a parameter {name:?} (scenario-wide: rate, workers, queue, timeout, retries; \
                     with a [fleet]: replicas, quorum, sync_every, propagation)",
                    scenario.name
                ));
            }
        }
    }
    sc.check()
        .map_err(|p| format!("{name} = {value}: key `{}`: {}", p.key, p.message))?;
    // As in files: breakers that share their trips need a fixed open period
    // (a sweep may make a fleet of one a fleet of several).
    if sc.shares_trips() {
        for s in &sc.strategies {
            s.fleet_open_for()
                .map_err(|e| format!("{name} = {value}: {e}"))?;
        }
    }
    // Drawn arrivals follow the swept rate (the only parameter they are
    // drawn from); a trace's do not.
    if name == "rate" {
        if matches!(sc.arrivals, super::Arrivals::Trace(..)) {
            return Err(
                "rate cannot be swept with arrivals = \"trace\": the trace sets the rate".into(),
            );
        }
        sc.redraw_arrivals();
    }
    Ok(sc)
}
