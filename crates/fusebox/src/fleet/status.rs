//! Whether a node is connected to its fleet, since when not, and what it
//! counted.

use std::sync::atomic::{AtomicU64, Ordering};
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
    /// The last Redis error, if any.
    pub last_error: Option<String>,
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
