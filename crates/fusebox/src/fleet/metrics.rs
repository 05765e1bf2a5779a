//! The fleet's connection as Prometheus series (features `fleet` and
//! `prometheus`): [`Fleet::register_metrics`](super::Fleet::register_metrics).

use super::link::Shared;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::fmt;
use std::sync::Weak;

/// Reads the fleet's status at scrape time.
pub(crate) struct FleetCollector(pub(crate) Weak<Shared>);

impl fmt::Debug for FleetCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FleetCollector")
    }
}

impl Collector for FleetCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let Some(shared) = self.0.upgrade() else {
            return Ok(()); // the fleet is gone: no series
        };
        let s = shared.status();
        let labels = [
            ("namespace", s.namespace.as_str()),
            ("node", s.node.as_str()),
        ];
        let gauges = [
            (
                "fusebox_fleet_connected",
                "1 while the node's last exchange with Redis succeeded, 0 while its shared breakers work as local ones",
                i64::from(s.connected),
            ),
            (
                "fusebox_fleet_shared_breakers",
                "Breakers this node shares with its fleet",
                s.shared as i64,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            let mut family = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(family.encode_family(&labels)?)?;
        }
        let counters = [
            (
                "fusebox_fleet_disconnects",
                "Times the node lost Redis",
                s.disconnects,
            ),
            (
                "fusebox_fleet_syncs",
                "Sync round trips with Redis that succeeded",
                s.syncs,
            ),
            (
                "fusebox_fleet_messages_dropped",
                "Fleet messages dropped: malformed, oversized, of another namespace, or beyond the inbox",
                s.messages_dropped,
            ),
            (
                "fusebox_fleet_messages_unauthenticated",
                "Fleet messages dropped because the fleet's key did not sign them (forged, or from a node without the key)",
                s.messages_unauthenticated,
            ),
            (
                "fusebox_fleet_messages_oversized",
                "Fleet messages dropped because they were longer than the fleet's limit (read past, never held in memory)",
                s.messages_oversized,
            ),
            (
                "fusebox_fleet_channel_reconnects",
                "Times the node's channel connection was lost and made again (Redis closed it, e.g. over its pubsub output-buffer limit, or it stopped answering)",
                s.channel_reconnects,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            let mut family = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
