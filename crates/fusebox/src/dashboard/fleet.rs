//! The fleet view (feature `fleet`): this node's link to its fleet and the
//! fleet's state of each breaker it shares, from the public
//! [`Fleet`](crate::fleet::Fleet) API.

use super::model::FleetView;
use crate::fleet::Fleet;
use std::time::UNIX_EPOCH;

/// What `fleet` reports now.
pub(super) fn view(fleet: &Fleet) -> FleetView {
    let status = fleet.status();
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    FleetView {
        namespace: status.namespace,
        node: status.node,
        connected: status.connected,
        disconnected_since_unix_ms: status
            .disconnected_since
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(ms),
        disconnected_for_ms: status.disconnected_for.map(ms),
        disconnects: status.disconnects,
        syncs: status.syncs,
        messages_dropped: status.messages_dropped,
        breakers: fleet
            .shared_breakers()
            .into_iter()
            .map(|b| super::model::SharedView {
                name: b.name,
                fleet_state: b.fleet_state.as_str(),
                open_remaining_ms: b.open_remaining.map(ms),
            })
            .collect(),
    }
}
