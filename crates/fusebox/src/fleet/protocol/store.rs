//! Redis's part, in memory: what the fleet's Lua scripts do to a
//! namespace's keys, on a clock the caller passes (a simulator's virtual
//! time). For simulators and tests of the [protocol](super); a service
//! shares through Redis ([`Fleet`](crate::fleet::Fleet)).
//!
//! Each method is one script ([`MemoryStore::sync`], [`MemoryStore::trip`],
//! [`MemoryStore::close`], [`MemoryStore::control`]) for one breaker, and
//! follows it line by line; times are exact durations rather than Redis's
//! milliseconds. What a script publishes is returned ([`Published`]): the
//! caller delivers it to the other nodes (with whatever delay it models).
//!
//! # Examples
//!
//! Two nodes: `a` trips, the store opens the fleet and publishes the trip;
//! `b` hears it.
//!
//! ```
//! use fusebox::fleet::protocol::store::{MemoryStore, Published};
//! use fusebox::fleet::protocol::TripTell;
//! use fusebox::fleet::Kind;
//! use std::time::Duration;
//!
//! let mut store = MemoryStore::new(Duration::from_secs(10));
//! let now = Duration::from_secs(1);
//! let remaining = Duration::from_millis(500);
//! let (opened, published) = store.trip(now, "a", "db", remaining, TripTell { quorum: 1, probed: None });
//! assert!(opened);
//! assert_eq!(published, Some(Published { from: "a".into(), kind: Kind::Trip { remaining } }));
//! ```

use super::{Answer, Counts, LeaseOp, Request, TripTell};
use crate::fleet::Kind;
use crate::State;
use std::collections::BTreeMap;
use std::time::Duration;

/// A message a script published on the namespace's channel.
///
/// # Examples
///
/// ```
/// let p = fusebox::fleet::protocol::store::Published { from: "a".into(), kind: fusebox::fleet::Kind::Close };
/// assert_eq!(p.from, "a");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The node that sent it (it ignores its own).
    pub from: String,
    /// What it says.
    pub kind: Kind,
}

/// One breaker's keys.
#[derive(Debug, Default, Clone)]
struct Keys {
    /// `open`: until when (the key's expiry), if set.
    open_until: Option<Duration>,
    /// `ctl`.
    ctl: Option<State>,
    /// `probe`: the holder, and until when.
    probe: Option<(String, Duration)>,
    /// `trips`: node -> when it tripped (toward the quorum).
    trips: BTreeMap<String, Duration>,
    /// `win`: bucket -> counts; and node -> the last bucket it reported
    /// failures or slow calls in.
    buckets: BTreeMap<u64, Counts>,
    failing: BTreeMap<String, u64>,
    /// `tripped`: the trip epoch.
    tripped: Option<u64>,
}

impl Keys {
    /// The open key's PTTL: `None` if missing (expired).
    fn open_left(&self, now: Duration) -> Option<Duration> {
        self.open_until.filter(|&u| u > now).map(|u| u - now)
    }

    fn holder(&self, now: Duration) -> Option<&str> {
        self.probe
            .as_ref()
            .filter(|(_, until)| *until > now)
            .map(|(h, _)| h.as_str())
    }
}

/// A namespace's keys in memory; see the [module docs](self).
///
/// # Memory
///
/// Per breaker: the fleet window's buckets (at most one per bucket of the
/// span) and one entry per node that tripped or reported failures.
///
/// # Examples
///
/// ```
/// let store = fusebox::fleet::protocol::store::MemoryStore::new(std::time::Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStore {
    /// The quorum's window (the fleet's `window`).
    window: Duration,
    breakers: BTreeMap<String, Keys>,
}

impl MemoryStore {
    /// An empty store; `window` is the fleet's window (trips toward the
    /// quorum count within it).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = fusebox::fleet::protocol::store::MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert_eq!(store.lease_holder(Default::default(), "db"), None);
    /// ```
    pub fn new(window: Duration) -> MemoryStore {
        MemoryStore {
            window,
            breakers: BTreeMap::new(),
        }
    }

    fn keys(&mut self, breaker: &str) -> &mut Keys {
        self.breakers.entry(breaker.to_owned()).or_default()
    }

    /// Who holds the probe lease of `breaker` at `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = fusebox::fleet::protocol::store::MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert_eq!(store.lease_holder(Default::default(), "db"), None);
    /// ```
    pub fn lease_holder(&self, now: Duration, breaker: &str) -> Option<&str> {
        self.breakers.get(breaker)?.holder(now)
    }

    /// Until when the fleet's breaker is open, if it is at `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = fusebox::fleet::protocol::store::MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert_eq!(store.open_until(Default::default(), "db"), None);
    /// ```
    pub fn open_until(&self, now: Duration, breaker: &str) -> Option<Duration> {
        self.breakers.get(breaker)?.open_until.filter(|&u| u > now)
    }

    /// Whether the store holds a trip of `breaker` at `now`: open, or its
    /// open period over but not closed since (half-open), or a control
    /// state in force. A node whose breaker is open or half-open because
    /// of the fleet, and finds none of these at a sync, closes.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = fusebox::fleet::protocol::store::MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert!(!store.holds_trip(Default::default(), "db"));
    /// ```
    pub fn holds_trip(&self, now: Duration, breaker: &str) -> bool {
        self.breakers
            .get(breaker)
            .is_some_and(|k| k.open_left(now).is_some() || k.tripped.is_some() || k.ctl.is_some())
    }

    /// `node`'s sync of `breaker` at `now` (the sync script's part for one
    /// breaker, `lease` being the probe lease's life).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{store::MemoryStore, Action, Input, Local, Node, Settings};
    /// use std::time::Duration;
    /// let s = Settings::new(Duration::from_secs(1));
    /// let mut node = Node::new(s, Duration::ZERO, &Local::closed(), true);
    /// let mut store = MemoryStore::new(s.window_of());
    /// let [Action::Sync(request)] = &node.handle(Duration::ZERO, Input::Sync(Local::closed()))[..] else { panic!() };
    /// let answer = store.sync(Duration::ZERO, "a", "db", request, s.lease_for());
    /// assert_eq!(answer.open, None);
    /// ```
    pub fn sync(
        &mut self,
        now: Duration,
        node: &str,
        breaker: &str,
        request: &Request,
        lease: Duration,
    ) -> Answer {
        let k = self.keys(breaker);
        let mut totals = Counts::default();
        let mut nodes = 0;
        if let Some((span, bucket)) = request.window {
            let (span, bucket) = (super::ms(span), super::ms(bucket));
            let now_ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
            let b = now_ms / bucket;
            let d = request.delta;
            if d.calls > 0 {
                let c = k.buckets.entry(b).or_default();
                c.calls += d.calls;
                c.failures += d.failures;
                c.slow += d.slow;
                if d.failures + d.slow > 0 {
                    k.failing.insert(node.to_owned(), b);
                }
            }
            let oldest = (b + 1).saturating_sub(span.div_ceil(bucket));
            k.failing.retain(|_, &mut fb| fb >= oldest);
            nodes = k.failing.len() as u64;
            k.buckets.retain(|&fb, _| fb >= oldest);
            for c in k.buckets.values() {
                totals.calls += c.calls;
                totals.failures += c.failures;
                totals.slow += c.slow;
            }
        }
        let holder = k.holder(now).map(str::to_owned);
        let mine = holder.as_deref() == Some(node);
        let lease_now = match request.lease {
            LeaseOp::Acquire
                if holder.is_none()
                    && k.open_left(now).is_none_or(|left| left <= request.ahead) =>
            {
                k.probe = Some((node.to_owned(), now + lease));
                true
            }
            LeaseOp::Renew if mine => {
                k.probe = Some((node.to_owned(), now + lease));
                true
            }
            LeaseOp::Release if mine => {
                k.probe = None;
                false
            }
            _ => mine,
        };
        let open = match (k.open_left(now), k.tripped) {
            (Some(left), _) => Some(left),
            (None, Some(_)) => Some(Duration::ZERO),
            (None, None) => None,
        };
        Answer {
            totals,
            failing_nodes: nodes,
            open,
            control: k.ctl,
            lease: lease_now,
            epoch: k.tripped,
        }
    }

    /// `node`'s breaker opened for `remaining` at `now` (the trip
    /// script): whether the fleet's breaker is open now, and the trip to
    /// publish if this opened it (or opened it longer).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{store::MemoryStore, TripTell};
    /// use std::time::Duration;
    /// let mut store = MemoryStore::new(Duration::from_secs(10));
    /// let two = TripTell { quorum: 2, probed: None };
    /// let d = Duration::from_secs(1);
    /// assert_eq!(store.trip(Duration::ZERO, "a", "db", d, two), (false, None), "one of two");
    /// assert!(store.trip(Duration::ZERO, "b", "db", d, two).0, "two of two");
    /// ```
    pub fn trip(
        &mut self,
        now: Duration,
        node: &str,
        breaker: &str,
        remaining: Duration,
        tell: TripTell,
    ) -> (bool, Option<Published>) {
        let window = self.window;
        let k = self.keys(breaker);
        if k.ctl.is_some() {
            return (false, None);
        }
        let mut q = tell.quorum;
        if q > 1 && tell.probed.is_some() && k.tripped == tell.probed {
            q = 1;
        }
        if q > 1 {
            k.trips.insert(node.to_owned(), now);
            k.trips.retain(|_, &mut at| at + window > now);
            if (k.trips.len() as u64) < u64::from(q) {
                return (false, None);
            }
        }
        let left = k.open_left(now);
        if left.is_some_and(|l| l >= remaining) {
            return (true, None);
        }
        if left.is_none() {
            let us = u64::try_from(now.as_micros()).unwrap_or(u64::MAX);
            k.tripped = Some(us.max(k.tripped.unwrap_or(0) + 1));
        }
        k.open_until = Some(now + remaining);
        k.probe = None;
        (
            true,
            Some(Published {
                from: node.to_owned(),
                kind: Kind::Trip { remaining },
            }),
        )
    }

    /// `node`'s probe closed `breaker` at `now`, under trip `epoch` (the
    /// close script): whether the store took it, and the close to publish.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::store::MemoryStore;
    /// let mut store = MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert!(store.close(Default::default(), "a", "db", None).0, "nothing to refuse");
    /// ```
    pub fn close(
        &mut self,
        now: Duration,
        node: &str,
        breaker: &str,
        epoch: Option<u64>,
    ) -> (bool, Option<Published>) {
        let k = self.keys(breaker);
        if k.ctl.is_some() || k.open_left(now).is_some() {
            return (false, None);
        }
        if k.tripped.is_some() && k.tripped != epoch {
            return (false, None);
        }
        let ctl = k.ctl;
        *k = Keys {
            ctl,
            ..Keys::default()
        };
        (
            true,
            Some(Published {
                from: node.to_owned(),
                kind: Kind::Close,
            }),
        )
    }

    /// `node`'s control call (`force_open`, `disable`, `reset`; the
    /// control script): the message to publish (the caller also applies
    /// it to `node` itself).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::store::MemoryStore;
    /// use fusebox::fleet::Kind;
    /// let mut store = MemoryStore::new(std::time::Duration::from_secs(10));
    /// assert_eq!(store.control("ops", "db", Kind::ForceOpen).kind, Kind::ForceOpen);
    /// ```
    pub fn control(&mut self, node: &str, breaker: &str, kind: Kind) -> Published {
        let k = self.keys(breaker);
        match kind {
            Kind::ForceOpen | Kind::Disable => {
                k.ctl = Some(if kind == Kind::Disable {
                    State::Disabled
                } else {
                    State::ForcedOpen
                });
                k.open_until = None;
                k.probe = None;
                k.tripped = None;
            }
            _ => *k = Keys::default(),
        }
        Published {
            from: node.to_owned(),
            kind,
        }
    }
}
