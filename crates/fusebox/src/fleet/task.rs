//! The fleet's tasks: the sync task (a round trip every `sync_every`, and
//! whatever a transition left to tell, as soon as it happens), the inbox
//! task (applies the channel's messages) and the channel's (see
//! `channel`). None is ever awaited by a caller of a breaker.

use super::link::Shared;
use super::protocol::{Action, Input};
use super::FleetError;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, watch};
use tokio::time::MissedTickBehavior;

/// Runs until the fleet is dropped (`stop`'s sender goes away).
pub(crate) async fn sync_loop(shared: Arc<Shared>, mut stop: watch::Receiver<()>) {
    let mut tick = tokio::time::interval(shared.settings.sync_every);
    // After a stall (Redis stopped), carry on from now: no burst of syncs.
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        // The end of a fleet open period this node knows of: a sync then
        // lets a node with calls take the probe lease for its first
        // half-open call, whatever `sync_every` is.
        let end = shared.next_open_end();
        let ticked = tokio::select! {
            _ = stop.changed() => return,
            _ = tick.tick() => true,
            _ = shared.wake.notified() => false,
            _ = tokio::time::sleep_until(end.unwrap_or_else(Instant::now).into()), if end.is_some() => true,
        };
        // Acquire: a flag from the connection's task; nothing rides on it.
        if shared.link_lost.swap(false, Ordering::Acquire) {
            shared.set_connected(false, Some(&FleetError::Redis("connection lost".into())));
        }
        // Acquire: a flag from the channel's task; nothing rides on it.
        let resync = shared.resync.swap(false, Ordering::Acquire);
        if ticked || resync || !shared.connected() {
            // The heartbeat and window sync; while disconnected, also the
            // probe that finds Redis back; after the channel subscribed
            // again, what it may have missed.
            let members = shared.members();
            if shared.sync(&members).await.is_err() && resync {
                // Asked again at the next try.
                shared.resync.store(true, Ordering::Release);
            }
        }
        if shared.connected() {
            flush(&shared).await;
        }
    }
}

/// Tells the fleet what transitions left pending. What cannot be told now
/// stays pending (merged flags), for the next try.
async fn flush(shared: &Shared) {
    let mut join = Vec::new();
    for m in shared.members() {
        let tells = m.run(shared.now(), Input::Flush);
        for a in tells {
            let Action::Tell(tell) = a else { continue };
            match shared.tell(&m, tell).await {
                Ok(true) => join.push(Arc::clone(&m)),
                Ok(false) => {}
                Err(e) => {
                    shared.set_connected(false, Some(&e));
                    return;
                }
            }
        }
    }
    if !join.is_empty() && shared.sync(&join).await.is_err() {
        for m in join {
            m.run(shared.now(), Input::JoinLater);
        }
    }
}

/// Applies the channel's messages as they come.
pub(crate) async fn inbox_loop(
    shared: Arc<Shared>,
    mut inbox: mpsc::Receiver<Vec<u8>>,
    mut stop: watch::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            message = inbox.recv() => match message {
                Some(bytes) => shared.apply_bytes(&bytes),
                None => return,
            },
        }
    }
}
