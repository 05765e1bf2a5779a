//! Whether a node is connected to its fleet, since when not, and what it
//! counted.

use super::member::Member;
use super::Fleet;
use crate::sync::lock;
use crate::State;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A node's view of its fleet at one moment; see
/// [`Fleet::status`](super::Fleet::status).
///
/// Its `Debug` output says everything, e.g. `FleetStatus { connected: false,
/// disconnected_since: Some(SystemTime { .. }), disconnected_for: Some(2.1s), .. }`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::fleet::FleetError> {
/// // Nothing listens on port 1: the node starts, disconnected.
/// let fleet = fusebox::fleet::Fleet::builder()
///     .redis_url("redis://127.0.0.1:1")
///     .namespace("shop")
///     .node("web-1")
///     .connect()
///     .await?;
/// let status = fleet.status();
/// assert!(!status.connected);
/// assert!(status.disconnected_since.is_some());
/// assert!(format!("{status:?}").contains("connected: false"));
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetStatus {
    /// The fleet's namespace.
    pub namespace: String,
    /// This node's id.
    pub node: String,
    /// Whether the last exchange with Redis succeeded. While `false`, every
    /// shared breaker works as a local breaker.
    pub connected: bool,
    /// When the node lost Redis (or started without it), wall-clock time
    /// for people to read; `None` while connected.
    pub disconnected_since: Option<SystemTime>,
    /// How long it has been disconnected; `None` while connected.
    pub disconnected_for: Option<Duration>,
    /// Breakers shared by this node.
    pub shared: usize,
    /// Times the node lost Redis since it joined.
    pub disconnects: u64,
    /// Sync round trips that succeeded.
    pub syncs: u64,
    /// Fleet messages received and applied (or not for this node).
    pub messages_received: u64,
    /// Messages dropped: malformed, oversized, from another namespace, or
    /// beyond the bounded inbox.
    pub messages_dropped: u64,
    /// Of those dropped, well-formed messages the fleet's key did not sign
    /// (unsigned, or signed with another key, or altered): forged, or from
    /// a node without the key. Always 0 without a key.
    pub messages_unauthenticated: u64,
    /// Of those dropped, messages longer than
    /// [`MAX_MESSAGE_BYTES`](super::MAX_MESSAGE_BYTES): read past in small
    /// chunks and never held in memory, whatever their size. Someone
    /// other than the fleet publishes on its channel.
    pub messages_oversized: u64,
    /// Times the node's channel connection (the one its messages come on,
    /// apart from the commands' connection) was lost and made again: Redis
    /// closed it (a restart, or its `client-output-buffer-limit pubsub`
    /// exceeded by a flood of large messages) or it stopped answering. After
    /// each, the node syncs at once, so what was published meanwhile is
    /// caught up; the commands and syncs are not interrupted by it.
    pub channel_reconnects: u64,
    /// The last Redis error, if any.
    pub last_error: Option<String>,
}

/// One breaker this node shares, with the fleet's state of it as this node
/// last learnt it (from the fleet's messages and syncs; while disconnected,
/// what it knew before); from [`Fleet::shared_breakers`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let fleet = fusebox::fleet::Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("shop").connect().await?;
/// let db = fusebox::CircuitBreaker::builder().name("db").build()?;
/// let _membership = fleet.share(&db).await?;
/// let shared = fleet.shared_breakers();
/// assert_eq!((shared[0].name.as_str(), shared[0].fleet_state), ("db", fusebox::State::Closed));
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedBreaker {
    /// The breaker's name (its name in the fleet).
    pub name: String,
    /// `Closed`; `Open` while the fleet's open period runs; `HalfOpen` once
    /// it ran out and the fleet's probe decides; `ForcedOpen` or `Disabled`
    /// by a control for the whole fleet.
    pub fleet_state: State,
    /// What remains of the fleet's open period (`Open` only).
    pub open_remaining: Option<Duration>,
}

impl Fleet {
    /// Every breaker this node shares, sorted by name, with the fleet's
    /// state of it; see [`SharedBreaker`]. Synchronous: reads what the
    /// fleet's tasks recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::fleet::FleetError> {
    /// let fleet = fusebox::fleet::Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("shop").connect().await?;
    /// assert!(fleet.shared_breakers().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn shared_breakers(&self) -> Vec<SharedBreaker> {
        let members: Vec<Arc<Member>> = lock(&self.shared.members).values().cloned().collect();
        let now = self.shared.now();
        members
            .iter()
            .map(|m| {
                let (fleet_state, open_remaining) = m.node().fleet_state(now);
                SharedBreaker {
                    name: m.name.clone(),
                    fleet_state,
                    open_remaining,
                }
            })
            .collect()
    }
}

/// The mutable part of the status, behind the fleet's lock.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) connected: bool,
    pub(crate) down_since: Option<(SystemTime, Instant)>,
    pub(crate) disconnects: u64,
    pub(crate) last_error: Option<String>,
}

impl Link {
    pub(crate) fn new() -> Link {
        Link {
            connected: false,
            down_since: Some((SystemTime::now(), Instant::now())),
            disconnects: 0,
            last_error: None,
        }
    }
}

/// Counters the tasks bump without a lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) syncs: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) unauthenticated: AtomicU64,
    pub(crate) oversized: AtomicU64,
    /// Times the channel's connection subscribed.
    pub(crate) subscriptions: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(c: &AtomicU64) {
        // Relaxed: statistics.
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(c: &AtomicU64) -> u64 {
        // Relaxed: statistics.
        c.load(Ordering::Relaxed)
    }
}
