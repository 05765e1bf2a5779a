//! What `tune` searches: a breaker's trip policy (consecutive failures, or
//! a failure rate over a count or a time window), its threshold,
//! `min_calls`, window, `open_for`, `half_open_probes`,
//! `successes_to_close`, the call's timeout and a bulkhead's size.
//!
//! Each setting is a *ladder* of values ([`Dim`]), the fine grid; the
//! search's coarse grid is every tenth rung, and its local refinement
//! walks down to single rungs. A point of the space ([`Point`]) is a
//! policy and a rung of each ladder; the settings its policy does not use
//! are kept at rung 0, so two points that make the same breaker are equal.

use crate::scenario::sweep::{value, Sweep};
use crate::scenario::{Client, ParamValue, Scenario, StrategyKind, StrategySpec};
use fusebox::BreakerConfig;
use std::fmt::Write;
use std::time::Duration;

/// A breaker's trip rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    /// `consecutive_failures`.
    Consecutive,
    /// `failure_rate` over `count_window` calls, with `min_calls`.
    CountRate,
    /// `failure_rate` over `time_window`, with `min_calls`.
    TimeRate,
}

impl Policy {
    /// Every policy, in `--policies` order.
    pub const ALL: [Policy; 3] = [Policy::Consecutive, Policy::CountRate, Policy::TimeRate];

    /// Its name in `--policies`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Consecutive => "consecutive",
            Policy::CountRate => "count",
            Policy::TimeRate => "time",
        }
    }

    /// Reads `--policies`: names separated by commas.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::space::Policy;
    ///
    /// assert_eq!(Policy::parse_list("time, consecutive")?, [Policy::Consecutive, Policy::TimeRate]);
    /// assert!(Policy::parse_list("rate").unwrap_err().contains("--policies"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse_list(list: &str) -> Result<Vec<Policy>, String> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim) {
            let p = Policy::ALL
                .into_iter()
                .find(|p| p.name() == name)
                .ok_or_else(|| {
                    format!("--policies {list:?}: no policy {name:?} (consecutive, count, time)")
                })?;
            out.push(p);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Whether this policy reads setting `d` (an index into [`KEYS`]).
    fn uses(self, d: usize) -> bool {
        match KEYS[d] {
            "consecutive_failures" => self == Policy::Consecutive,
            "failure_rate" | "min_calls" => self != Policy::Consecutive,
            "count_window" => self == Policy::CountRate,
            "time_window" => self == Policy::TimeRate,
            _ => true,
        }
    }
}

/// The settings searched, in the order of a [`Point`]'s rungs: the
/// library's breaker keys, then `timeout` and `max_concurrent` (the
/// bulkhead), which may also be unset (`none`), then a fleet's
/// `sync_every` and `quorum` (searched only for a fleet whose breakers
/// share their trips: [`Space::with_fleet`]).
pub const KEYS: [&str; 12] = [
    "consecutive_failures",
    "failure_rate",
    "count_window",
    "time_window",
    "min_calls",
    "open_for",
    "half_open_probes",
    "successes_to_close",
    "timeout",
    "max_concurrent",
    "sync_every",
    "quorum",
];

const TIMEOUT: usize = 8;
const BULKHEAD: usize = 9;
const SYNC_EVERY: usize = 10;
const QUORUM: usize = 11;
/// Where the fleet's keys start in [`KEYS`].
pub const FLEET_KEYS: usize = SYNC_EVERY;
const COUNT_WINDOW: usize = 2;
const MIN_CALLS: usize = 4;

/// One setting's ladder: its values, in order (`None`: unset).
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    /// The key.
    pub key: &'static str,
    /// The rungs.
    pub values: Vec<Option<ParamValue>>,
}

/// A point of the space: a policy and a rung of every ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    /// The policy, an index into [`Space::policies`].
    pub policy: usize,
    /// A rung of each [`KEYS`] ladder.
    pub at: [usize; KEYS.len()],
}

/// The space `tune` searches.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// The policies (`--policies`).
    pub policies: Vec<Policy>,
    /// A ladder per key of [`KEYS`], in that order.
    pub dims: Vec<Dim>,
    /// The fleet's replicas, for a fleet whose breakers share their trips
    /// ([`with_fleet`](Self::with_fleet)): then `sync_every` and `quorum`
    /// are searched. `None`: their ladders are one unset rung.
    pub replicas: Option<usize>,
}

fn ladder(spec: &str) -> Vec<Option<ParamValue>> {
    Sweep::parse(spec)
        .expect("a valid built-in ladder")
        .values
        .into_iter()
        .map(Some)
        .collect()
}

impl Space {
    /// The default space for a service of `workers` workers: every policy;
    /// `consecutive_failures` 1..30, `failure_rate` 0.05..1 by 0.05,
    /// `count_window` 5..100 by 5, `time_window` 0.25 s..10 s by 0.25 s,
    /// `min_calls` 1..50, `open_for` 50 ms..10 s by 50 ms,
    /// `half_open_probes` and `successes_to_close` 1..5, `timeout` none or
    /// 10 ms..1 s by 10 ms, `max_concurrent` none or 1..workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::space::Space;
    ///
    /// let space = Space::default_for(8);
    /// assert_eq!(space.dims[5].key, "open_for");
    /// assert_eq!(space.dims[5].values.len(), 200);
    /// assert_eq!(space.dims[9].values.len(), 9); // none, 1..=8
    /// ```
    pub fn default_for(workers: usize) -> Space {
        let mut bulkhead = vec![None];
        bulkhead.extend((1..=workers.max(1)).map(|n| Some(ParamValue::Num(n as f64))));
        let mut timeout = vec![None];
        timeout.extend(ladder("t=10ms..1s:10ms"));
        Space {
            policies: Policy::ALL.to_vec(),
            dims: vec![
                Dim {
                    key: KEYS[0],
                    values: ladder("k=1..30:1"),
                },
                Dim {
                    key: KEYS[1],
                    values: ladder("k=0.05..1:0.05"),
                },
                Dim {
                    key: KEYS[2],
                    values: ladder("k=5..100:5"),
                },
                Dim {
                    key: KEYS[3],
                    values: ladder("k=250ms..10s:250ms"),
                },
                Dim {
                    key: KEYS[4],
                    values: ladder("k=1..50:1"),
                },
                Dim {
                    key: KEYS[5],
                    values: ladder("k=50ms..10s:50ms"),
                },
                Dim {
                    key: KEYS[6],
                    values: ladder("k=1..5:1"),
                },
                Dim {
                    key: KEYS[7],
                    values: ladder("k=1..5:1"),
                },
                Dim {
                    key: KEYS[TIMEOUT],
                    values: timeout,
                },
                Dim {
                    key: KEYS[BULKHEAD],
                    values: bulkhead,
                },
                Dim {
                    key: KEYS[SYNC_EVERY],
                    values: vec![None],
                },
                Dim {
                    key: KEYS[QUORUM],
                    values: vec![None],
                },
            ],
            replicas: None,
        }
    }

    /// This space for a fleet of `replicas` whose breakers share their
    /// trips: `sync_every` 100 ms..2 s by 100 ms and `quorum` 1..=replicas
    /// searched too (the `[fleet]` table's keys, which a service sets with
    /// `Fleet::builder().sync_every(..).quorum(..)`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::space::Space;
    ///
    /// let mut space = Space::default_for(4).with_fleet(3);
    /// assert_eq!(space.dims[10].key, "sync_every");
    /// assert_eq!((space.dims[10].values.len(), space.dims[11].values.len()), (20, 3));
    /// assert!(space.set("quorum=4").unwrap_err().contains("replicas = 3"));
    /// assert!(Space::default_for(4).set("quorum=1").unwrap_err().contains("fleet"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn with_fleet(mut self, replicas: usize) -> Space {
        let replicas = replicas.max(1);
        self.dims[SYNC_EVERY].values = ladder("k=100ms..2s:100ms");
        self.dims[QUORUM].values = (1..=replicas)
            .map(|n| Some(ParamValue::Num(n as f64)))
            .collect();
        self.replicas = Some(replicas);
        self
    }

    /// Applies `--space KEY=FROM..TO:STEP` (a new ladder, `sweep
    /// --param`'s grammar), `KEY=VALUE` (one value) or `KEY=none` (unset:
    /// `timeout` and `max_concurrent` only), then checks every rung with
    /// the library, as a config file would be.
    ///
    /// # Errors
    ///
    /// A message that starts with `--space` and names the key or value.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::space::Space;
    ///
    /// let mut space = Space::default_for(8);
    /// space.set("open_for=0.1s..1s:0.1s")?;
    /// space.set("timeout=none")?;
    /// assert_eq!((space.dims[5].values.len(), space.dims[8].values.len()), (10, 1));
    /// assert!(space.set("open_fr=1s").unwrap_err().contains("open_fr"));
    /// assert!(space.set("failure_rate=1.5").unwrap_err().contains("failure_rate"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let (key, range) = spec.split_once('=').ok_or_else(|| {
            format!("--space {spec:?}: expected KEY=FROM..TO:STEP, KEY=VALUE or KEY=none")
        })?;
        let key = key.trim();
        let d = KEYS.iter().position(|k| *k == key).ok_or_else(|| {
            format!(
                "--space {spec:?}: no setting {key:?} (one of: {})",
                KEYS.join(", ")
            )
        })?;
        if d >= SYNC_EVERY && self.replicas.is_none() {
            return Err(format!(
                "--space {spec:?}: {key} is a fleet setting, and the scenario has no [fleet] whose \
                 breakers share their trips (sharing = \"fleet\", replicas above 1)"
            ));
        }
        let values = if range.trim() == "none" {
            if d != TIMEOUT && d != BULKHEAD {
                return Err(format!(
                    "--space {spec:?}: only timeout and max_concurrent can be none"
                ));
            }
            vec![None]
        } else if range.contains("..") {
            ladder_of(spec)?
        } else {
            vec![Some(
                value(range).map_err(|e| format!("--space {spec:?}: {e}"))?,
            )]
        };
        self.dims[d].values = values;
        self.check(d).map_err(|e| format!("--space {spec:?}: {e}"))
    }

    /// Every rung of ladder `d`, at the default rungs of the others, built
    /// by the library (for each policy that reads it).
    fn check(&self, d: usize) -> Result<(), String> {
        if d >= SYNC_EVERY {
            let replicas = self.replicas.unwrap_or(1);
            for v in &self.dims[d].values {
                match (d, v) {
                    // The bounds of a scenario file's `[fleet]` (`Scenario::check`).
                    (SYNC_EVERY, Some(ParamValue::Dur(t)))
                        if !t.is_zero() && *t <= crate::scenario::MAX_DURATION => {}
                    (SYNC_EVERY, v) => {
                        return Err(format!(
                            "sync_every = {}: must be > 0 and at most a day (24h)",
                            v.map_or("none".into(), |v| v.to_string())
                        ))
                    }
                    (_, Some(ParamValue::Num(x)))
                        if x.fract() == 0.0 && *x >= 1.0 && *x <= replicas as f64 => {}
                    (_, v) => {
                        return Err(format!(
                            "quorum = {}: a whole number in 1..=replicas (replicas = {replicas})",
                            v.map_or("none".into(), |v| v.to_string())
                        ))
                    }
                }
            }
            return Ok(());
        }
        for p in 0..self.policies.len() {
            if !self.policies[p].uses(d) {
                continue;
            }
            for k in 0..self.dims[d].values.len() {
                let mut at = [0; KEYS.len()];
                at[d] = k;
                let point = Point { policy: p, at };
                self.breaker(&point)?;
                if d == BULKHEAD {
                    if let Some(ParamValue::Num(x)) = self.dims[d].values[k] {
                        if x.fract() != 0.0 || !(1.0..=1e6).contains(&x) {
                            return Err(format!(
                                "max_concurrent = {x}: a whole number in 1..=1000000"
                            ));
                        }
                    }
                }
                if d == TIMEOUT {
                    self.timeout(&point)?;
                }
            }
        }
        Ok(())
    }

    /// How many points the space has.
    pub fn size(&self) -> f64 {
        self.policies
            .iter()
            .map(|p| {
                (0..KEYS.len())
                    .filter(|d| p.uses(*d))
                    .map(|d| self.dims[d].values.len() as f64)
                    .product::<f64>()
            })
            .sum()
    }

    /// `point` with the rungs its policy does not read at 0, and
    /// `min_calls` at most `count_window`.
    pub fn normal(&self, mut point: Point) -> Point {
        let policy = self.policies[point.policy];
        for d in 0..KEYS.len() {
            let len = self.dims[d].values.len();
            point.at[d] = if policy.uses(d) {
                point.at[d].min(len - 1)
            } else {
                0
            };
        }
        if policy == Policy::CountRate {
            let window = self.number(&point, COUNT_WINDOW).unwrap_or(f64::INFINITY);
            while point.at[MIN_CALLS] > 0
                && self.number(&point, MIN_CALLS).is_some_and(|m| m > window)
            {
                point.at[MIN_CALLS] -= 1;
            }
        }
        point
    }

    /// The ladders `point`'s policy reads.
    pub fn used(&self, point: &Point) -> Vec<usize> {
        let p = self.policies[point.policy];
        (0..KEYS.len())
            .filter(|d| p.uses(*d) && self.dims[*d].values.len() > 1)
            .collect()
    }

    fn get(&self, point: &Point, d: usize) -> Option<ParamValue> {
        self.dims[d].values[point.at[d]]
    }

    fn number(&self, point: &Point, d: usize) -> Option<f64> {
        match self.get(point, d) {
            Some(ParamValue::Num(x)) => Some(x),
            _ => None,
        }
    }

    /// The breaker keys of `point`, as a config file writes them, in the
    /// library's key order.
    pub fn breaker_keys(&self, point: &Point) -> Vec<(&'static str, toml::Value)> {
        let policy = self.policies[point.policy];
        (0..TIMEOUT)
            .filter(|d| policy.uses(*d))
            .filter_map(|d| self.get(point, d).map(|v| (KEYS[d], v.to_toml())))
            .collect()
    }

    /// The library's breaker config of `point`, validated by it.
    ///
    /// # Errors
    ///
    /// What the library refuses, naming the key.
    pub fn breaker(&self, point: &Point) -> Result<BreakerConfig, String> {
        let table: toml::Table = self
            .breaker_keys(point)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let config: BreakerConfig = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| e.message().trim().to_string())?;
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// The call's timeout at `point` (`None`: none).
    pub fn timeout(&self, point: &Point) -> Result<Option<Duration>, String> {
        self.get(point, TIMEOUT)
            .map(|v| v.duration("timeout"))
            .transpose()
    }

    /// The bulkhead's size at `point` (`None`: none).
    pub fn max_concurrent(&self, point: &Point) -> Option<usize> {
        self.number(point, BULKHEAD).map(|x| x as usize)
    }

    /// The fleet settings of `point`, for a space
    /// [`with_fleet`](Self::with_fleet): its `sync_every` and `quorum`.
    pub fn fleet(&self, point: &Point) -> Option<FleetSettings> {
        self.replicas?;
        match (self.get(point, SYNC_EVERY), self.number(point, QUORUM)) {
            (Some(ParamValue::Dur(sync_every)), Some(q)) => Some(FleetSettings {
                sync_every,
                quorum: q as usize,
            }),
            _ => None,
        }
    }

    /// A lab strategy of `point`, named `name`.
    ///
    /// # Errors
    ///
    /// What the library refuses.
    pub fn spec(&self, point: &Point, name: String) -> Result<StrategySpec, String> {
        Ok(StrategySpec {
            name,
            kind: StrategyKind::Fusebox(Box::new(self.breaker(point)?)),
            max_concurrent: self.max_concurrent(point),
            rate_limit: None,
            limit: None,
            throttle: None,
            hosts: None,
            hedge: None,
            timeout: self.timeout(point)?,
            retry_budget: None,
        })
    }

    /// The settings of `point` by key, in [`KEYS`] order: its policy's
    /// breaker keys as a config file writes them, `timeout` and
    /// `max_concurrent` (`None`: unset), and, in a space
    /// [`with_fleet`](Self::with_fleet), `sync_every` and `quorum`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::tune::space::{Point, Space};
    ///
    /// let space = Space::default_for(8);
    /// let point = space.normal(Point { policy: 0, at: [4, 0, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0] });
    /// let keys: Vec<&str> = space.settings(&point).iter().map(|(k, _)| *k).collect();
    /// assert_eq!(keys, ["consecutive_failures", "open_for", "half_open_probes",
    ///                   "successes_to_close", "timeout", "max_concurrent"]);
    /// assert_eq!(space.settings(&point)[4].1, None); // no timeout
    /// ```
    pub fn settings(&self, point: &Point) -> Vec<(&'static str, Option<toml::Value>)> {
        let mut out: Vec<(&'static str, Option<toml::Value>)> = self
            .breaker_keys(point)
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect();
        // TIMEOUT, BULKHEAD, then the fleet's keys: the last of KEYS.
        let last = if self.replicas.is_some() {
            QUORUM
        } else {
            BULKHEAD
        };
        for (d, key) in KEYS.iter().enumerate().take(last + 1).skip(TIMEOUT) {
            out.push((*key, self.get(point, d).map(ParamValue::to_toml)));
        }
        out
    }

    /// The settings of `point` in one line ([`settings`](Self::settings)),
    /// `KEY=VALUE` each, `none` for an unset one.
    pub fn describe(&self, point: &Point) -> String {
        self.settings(point)
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    None => "none".to_string(),
                    Some(toml::Value::String(s)) => s,
                    Some(v) => v.to_string(),
                };
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The `[dependencies.NAME]` table of fusebox's registry for `point`:
    /// its `timeout` (the profile's `[client] timeout` when `point` has
    /// none), `breaker`, `bulkhead` and, when the profile retries, its
    /// `retry`, ready for `FuseboxConfig::from_toml`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// use fusebox_lab::scenario::Client;
    /// use fusebox_lab::tune::space::{Point, Space};
    ///
    /// let space = Space::default_for(8);
    /// let point = space.normal(Point { policy: 0, at: [4, 0, 0, 0, 0, 9, 0, 0, 15, 4, 0, 0] });
    /// let block = space.toml_block(&point, "partner", &Client::default());
    /// assert!(block.contains("consecutive_failures = 5"), "{block}");
    /// assert!(block.contains("open_for = \"500ms\""), "{block}");
    /// let config = FuseboxConfig::from_toml(&block).map_err(|e| e.to_string())?;
    /// assert_eq!(config.dependencies["partner"].breaker.consecutive_failures, Some(5));
    /// Fusebox::from_config(config).map_err(|e| e.to_string())?;
    /// # Ok::<(), String>(())
    /// ```
    pub fn toml_block(&self, point: &Point, dependency: &str, profile: &Client) -> String {
        let mut out = format!("[dependencies.{}]\n", bare_or_quoted(dependency));
        if let Some(t) = self.timeout(point).ok().flatten().or(profile.timeout) {
            let _ = writeln!(
                out,
                "timeout = {}",
                toml::Value::String(crate::scenario::format_duration(t))
            );
        }
        let keys: Vec<String> = self
            .breaker_keys(point)
            .into_iter()
            .map(|(k, v)| format!("{k} = {}", show(&v)))
            .collect();
        let _ = writeln!(out, "breaker = {{ {} }}", keys.join(", "));
        if let Some(n) = self.max_concurrent(point) {
            let _ = writeln!(out, "bulkhead = {{ max_concurrent = {n} }}");
        }
        if profile.retries > 0 {
            let _ = writeln!(out, "retry = {{ max_attempts = {} }}", profile.retries + 1);
        }
        if let Some(f) = self.fleet(point) {
            // The registry's file has no fleet table: the service builds it.
            let _ = writeln!(
                out,
                "# the fleet these breakers share (FuseboxBuilder::fleet): \
                 Fleet::builder().sync_every(Duration::from_millis({})).quorum({})",
                f.sync_every.as_millis(),
                f.quorum
            );
        }
        out
    }
}

/// A fleet's settings a candidate runs with: its `[fleet]` table's
/// `sync_every` and `quorum` ([`Space::fleet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FleetSettings {
    /// `sync_every`.
    pub sync_every: Duration,
    /// `quorum`.
    pub quorum: usize,
}

impl FleetSettings {
    /// The settings of `scenario`'s `[fleet]`, if it has one.
    pub fn of(scenario: &Scenario) -> Option<FleetSettings> {
        scenario.fleet.as_ref().map(|f| FleetSettings {
            sync_every: f.sync_every,
            quorum: f.quorum,
        })
    }

    /// Writes these settings in `scenario`'s `[fleet]` (nothing without one).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::Scenario;
    /// use fusebox_lab::tune::space::FleetSettings;
    /// use std::time::Duration;
    ///
    /// let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/fleet20-shared.toml")).unwrap();
    /// let mut sc = Scenario::parse("fleet20-shared.toml", &text).unwrap();
    /// let f = FleetSettings { sync_every: Duration::from_millis(200), quorum: 2 };
    /// f.set(&mut sc);
    /// assert_eq!(FleetSettings::of(&sc), Some(f));
    /// ```
    pub fn set(&self, scenario: &mut Scenario) {
        if let Some(f) = scenario.fleet.as_mut() {
            f.sync_every = self.sync_every;
            f.quorum = self.quorum;
        }
    }
}

/// A value as TOML writes it (a string in quotes).
fn show(v: &toml::Value) -> String {
    v.to_string()
}

/// A TOML key: bare if it can be, else quoted.
fn bare_or_quoted(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_string()
    } else {
        toml::Value::String(key.to_string()).to_string()
    }
}

fn ladder_of(spec: &str) -> Result<Vec<Option<ParamValue>>, String> {
    let s = Sweep::parse(spec).map_err(|e| e.replacen("--param", "--space", 1))?;
    Ok(s.values.into_iter().map(Some).collect())
}
