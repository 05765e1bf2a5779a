//! What the page shows: one [`Frame`] per sample, and a fixed-size history
//! ring per breaker. Pure: the time of a sample is an argument.

use crate::metrics::Thresholds;
use crate::policy::FigureKind;
use crate::registry::{BreakerStatus, BulkheadStatus, PolicyStatus, Tags};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// One breaker as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BreakerView {
    pub(crate) name: String,
    pub(crate) tags: Tags,
    pub(crate) state: &'static str,
    /// Time in the current state, in milliseconds.
    pub(crate) since_ms: u64,
    pub(crate) failure_rate: f64,
    /// `None`: no failure-rate rule (e.g. consecutive failures).
    pub(crate) failure_threshold: Option<f64>,
    pub(crate) slow_call_rate: f64,
    pub(crate) slow_call_threshold: Option<f64>,
    pub(crate) window_calls: u64,
    pub(crate) consecutive_failures: u32,
    /// Rejections since the breaker was built.
    pub(crate) rejected: u64,
    /// Per second over the last sample interval; `None` before a second
    /// sample, or (calls) when no `Metrics` counts the breaker's calls.
    pub(crate) call_rate: Option<f64>,
    pub(crate) failure_call_rate: Option<f64>,
    pub(crate) rejected_rate: Option<f64>,
}

/// One bulkhead as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BulkheadView {
    pub(crate) name: String,
    pub(crate) tags: Tags,
    pub(crate) in_use: usize,
    pub(crate) limit: usize,
    pub(crate) waiting: usize,
    pub(crate) rejected: u64,
    pub(crate) rejected_rate: Option<f64>,
}

/// Any policy of the registry but a breaker, as it reports itself through
/// `Inspect` (a bulkhead, a rate limiter, a policy yet to come): the page
/// draws it without knowing its kind.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PolicyView {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) tags: Tags,
    pub(crate) mode: &'static str,
    pub(crate) figures: Vec<FigureView>,
}

/// One figure of a [`PolicyView`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FigureView {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    /// `"gauge"` or `"counter"`.
    pub(crate) kind: &'static str,
    pub(crate) value: u64,
    /// A counter's growth per second over the last sample interval; `None`
    /// for a gauge, and before a second sample.
    pub(crate) rate: Option<f64>,
}

/// This node's fleet (feature `fleet`): its link to Redis and the fleet's
/// state of each breaker it shares. No Redis address and no error text:
/// the view may be exposed read-only.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(not(feature = "fleet"), allow(dead_code))]
pub(crate) struct FleetView {
    pub(crate) namespace: String,
    pub(crate) node: String,
    pub(crate) connected: bool,
    /// Wall-clock time the node lost Redis, Unix milliseconds.
    pub(crate) disconnected_since_unix_ms: Option<u64>,
    pub(crate) disconnected_for_ms: Option<u64>,
    pub(crate) disconnects: u64,
    pub(crate) syncs: u64,
    pub(crate) messages_dropped: u64,
    pub(crate) breakers: Vec<SharedView>,
}

/// One shared breaker's fleet state.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(not(feature = "fleet"), allow(dead_code))]
pub(crate) struct SharedView {
    pub(crate) name: String,
    pub(crate) fleet_state: &'static str,
    pub(crate) open_remaining_ms: Option<u64>,
}

/// Everything at one instant: what the stream sends each tick.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Frame {
    /// The dashboard clock, in milliseconds.
    pub(crate) t_ms: u64,
    pub(crate) breakers: Vec<BreakerView>,
    pub(crate) bulkheads: Vec<BulkheadView>,
    /// Every policy but the breakers, by kind then name (bulkheads
    /// included: their own view above is the richer one).
    pub(crate) policies: Vec<PolicyView>,
    /// With [`DashboardBuilder::fleet`](super::DashboardBuilder::fleet) only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fleet: Option<FleetView>,
}

/// One point of a sparkline: `[t_ms, state, calls/s, failure rate,
/// rejections/s, slow-call rate]`, state as the index in [`STATES`]; a rate
/// the page cannot know yet is `null`.
pub(crate) type Point = (u64, u8, Option<f64>, f64, Option<f64>, f64);

/// The states in the order of a [`Point`]'s state index.
pub(crate) const STATES: [&str; 5] = ["closed", "open", "half_open", "forced_open", "disabled"];

/// What the previous sample saw of one breaker or bulkhead, to turn
/// counters into rates.
#[derive(Debug, Clone, Copy)]
struct Last {
    at: Duration,
    calls: Option<[u64; 4]>,
    rejected: u64,
}

#[derive(Debug)]
struct Track {
    last: Last,
    history: VecDeque<Point>,
}

/// The samples so far: the last counters and the history ring of each
/// breaker still in the registry. Memory: `history_len` points per breaker.
#[derive(Debug)]
pub(crate) struct Board {
    history_len: usize,
    breakers: BTreeMap<String, Track>,
    bulkheads: BTreeMap<String, Last>,
    /// Per policy (kind, name): when it was last sampled and its figures' values then.
    policies: BTreeMap<(&'static str, String), (Duration, Vec<u64>)>,
}

/// Per second, from two counter readings; `None` when no time passed.
fn per_second(now: u64, before: u64, dt: Duration) -> Option<f64> {
    (!dt.is_zero()).then(|| now.saturating_sub(before) as f64 / dt.as_secs_f64())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The inputs of a breaker's sample that do not come from its snapshot.
pub(crate) struct Extra {
    /// `fusebox_calls_total` by outcome: success, failure, ignored, rejected.
    pub(crate) calls: Option<[u64; 4]>,
    pub(crate) thresholds: Thresholds,
}

impl Board {
    pub(crate) fn new(history_len: usize) -> Board {
        Board {
            history_len,
            breakers: BTreeMap::new(),
            bulkheads: BTreeMap::new(),
            policies: BTreeMap::new(),
        }
    }

    /// Takes one sample at `now`: rates since the previous sample, one
    /// history point per breaker; forgets names no longer listed.
    pub(crate) fn sample(
        &mut self,
        now: Duration,
        breakers: Vec<BreakerStatus>,
        bulkheads: Vec<BulkheadStatus>,
        policies: Vec<PolicyStatus>,
        extra: impl Fn(&str) -> Extra,
    ) -> Frame {
        let t_ms = millis(now);
        self.breakers
            .retain(|name, _| breakers.iter().any(|b| &b.name == name));
        self.bulkheads
            .retain(|name, _| bulkheads.iter().any(|b| &b.name == name));

        let mut views = Vec::with_capacity(breakers.len());
        for status in breakers {
            let snap = &status.snapshot;
            let Extra { calls, thresholds } = extra(&status.name);
            let current = Last {
                at: now,
                calls,
                rejected: snap.rejected,
            };
            let track = self.breakers.entry(status.name.clone()).or_insert(Track {
                last: current,
                history: VecDeque::with_capacity(self.history_len),
            });
            let before = track.last;
            let dt = now.saturating_sub(before.at);
            let (call_rate, failure_call_rate) = match (calls, before.calls) {
                (Some(c), Some(b)) => (
                    per_second(c[0] + c[1] + c[2], b[0] + b[1] + b[2], dt),
                    per_second(c[1], b[1], dt),
                ),
                _ => (None, None),
            };
            let rejected_rate = per_second(snap.rejected, before.rejected, dt);
            track.last = current;
            let state = snap.state.as_str();
            let state_index = STATES.iter().position(|s| *s == state).unwrap_or(0);
            if track.history.len() == self.history_len {
                track.history.pop_front();
            }
            if self.history_len > 0 {
                track.history.push_back((
                    t_ms,
                    state_index as u8,
                    call_rate,
                    snap.failure_rate,
                    rejected_rate,
                    snap.slow_call_rate,
                ));
            }
            views.push(BreakerView {
                state,
                since_ms: millis(snap.since_transition),
                failure_rate: snap.failure_rate,
                failure_threshold: thresholds.failure_rate,
                slow_call_rate: snap.slow_call_rate,
                slow_call_threshold: thresholds.slow_call_rate,
                window_calls: snap.calls,
                consecutive_failures: snap.consecutive_failures,
                rejected: snap.rejected,
                call_rate,
                failure_call_rate,
                rejected_rate,
                name: status.name,
                tags: status.tags,
            });
        }

        let mut bulkhead_views = Vec::with_capacity(bulkheads.len());
        for status in bulkheads {
            let snap = status.snapshot;
            let current = Last {
                at: now,
                calls: None,
                rejected: snap.rejected,
            };
            let before = *self.bulkheads.entry(status.name.clone()).or_insert(current);
            self.bulkheads.insert(status.name.clone(), current);
            bulkhead_views.push(BulkheadView {
                name: status.name,
                tags: status.tags,
                in_use: snap.in_use,
                limit: snap.limit,
                waiting: snap.waiting,
                rejected: snap.rejected,
                rejected_rate: per_second(
                    snap.rejected,
                    before.rejected,
                    now.saturating_sub(before.at),
                ),
            });
        }
        Frame {
            t_ms,
            breakers: views,
            bulkheads: bulkhead_views,
            policies: self.sample_policies(now, policies),
            fleet: None,
        }
    }

    /// The policies' views at `now`: counters turned into rates since the
    /// previous sample; forgets policies no longer listed.
    fn sample_policies(&mut self, now: Duration, policies: Vec<PolicyStatus>) -> Vec<PolicyView> {
        self.policies
            .retain(|(kind, name), _| policies.iter().any(|p| p.kind == *kind && &p.name == name));
        policies
            .into_iter()
            .map(|p| {
                let values: Vec<u64> = p.figures.iter().map(|f| f.value).collect();
                let (at, before) = self
                    .policies
                    .insert((p.kind, p.name.clone()), (now, values.clone()))
                    .unwrap_or((now, values));
                let dt = now.saturating_sub(at);
                let figures = p
                    .figures
                    .iter()
                    .enumerate()
                    .map(|(i, f)| FigureView {
                        name: f.name,
                        help: f.help,
                        kind: f.kind.as_str(),
                        value: f.value,
                        rate: match f.kind {
                            FigureKind::Counter => {
                                before.get(i).and_then(|&b| per_second(f.value, b, dt))
                            }
                            FigureKind::Gauge => None,
                        },
                    })
                    .collect();
                PolicyView {
                    kind: p.kind,
                    name: p.name,
                    tags: p.tags,
                    mode: p.mode.as_str(),
                    figures,
                }
            })
            .collect()
    }

    /// Points kept per breaker.
    pub(crate) fn capacity(&self) -> usize {
        self.history_len
    }

    /// The history ring of `name`, oldest first.
    pub(crate) fn history(&self, name: &str) -> Option<&VecDeque<Point>> {
        self.breakers.get(name).map(|t| &t.history)
    }

    /// Every breaker's history ring.
    pub(crate) fn histories(&self) -> BTreeMap<&str, &VecDeque<Point>> {
        self.breakers
            .iter()
            .map(|(n, t)| (n.as_str(), &t.history))
            .collect()
    }
}
