//! What one node shares with Redis: the connection, the scripts, and how
//! their answers and the channel's messages are applied to the breakers.
//! Every Redis exchange here runs on the fleet's own tasks (or in
//! `Fleet::share` and the control calls), bounded by the fleet's timeout,
//! never on a caller's path.

use super::codec::{self, Kind, Message};
use super::member::Member;
use super::protocol::{self, Action, Answer, Counts, Input, Local, Request, Tell};
use super::scripts;
use super::status::{Counters, FleetStatus, Link};
use super::FleetError;
use crate::sync::{lock, Mutex};
use crate::State;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{PushInfo, PushKind, Script, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{watch, Notify};

/// Timeouts in a row after which the node drops its connection and makes a
/// new one: a frozen or partitioned Redis keeps a TCP connection open
/// without answering, and the client keeps every unanswered request until
/// it answers; a new connection bounds that.
const RENEW_AFTER_TIMEOUTS: u32 = 3;

/// Makes the node's command connection. RESP3, for its pushes: the client
/// says with one when the connection drops. The channel's messages come on
/// a connection of their own (see `channel`), never on this one.
pub(crate) struct Connector {
    client: redis::Client,
    timeout: Duration,
    max_delay: Duration,
    /// The node, once made (the pushes need it; it needs a connection).
    shared: Arc<OnceLock<Weak<Shared>>>,
}

impl Connector {
    pub(crate) fn new(client: redis::Client, settings: &Settings) -> Connector {
        Connector {
            client,
            timeout: settings.timeout,
            max_delay: reconnect_delay(settings),
            shared: Arc::default(),
        }
    }

    /// A connection manager (connecting lazily) whose pushes count only
    /// while `generation` is the node's current connection.
    pub(crate) fn connect(&self, generation: u64) -> redis::RedisResult<ConnectionManager> {
        let slot = Arc::clone(&self.shared);
        // Runs on the connection's task: never blocks.
        let push = move |info: PushInfo| -> Result<(), ()> {
            let Some(shared) = slot.get().and_then(Weak::upgrade) else {
                return Ok(());
            };
            // Relaxed: a stale connection's push is dropped either way.
            if shared.generation.load(Ordering::Relaxed) != generation {
                return Ok(());
            }
            if info.kind == PushKind::Disconnection {
                // Release: a flag for the sync task; nothing rides on it.
                shared.link_lost.store(true, Ordering::Release);
                shared.wake.notify_one();
            }
            Ok(())
        };
        let config = ConnectionManagerConfig::new()
            .set_push_sender(push)
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(self.max_delay);
        ConnectionManager::new_lazy_with_config(self.client.clone(), config)
    }
}

/// The longest wait between two tries to connect (commands or channel).
pub(crate) fn reconnect_delay(settings: &Settings) -> Duration {
    settings.sync_every.min(Duration::from_secs(1))
}

/// A fleet's settings, validated by the builder.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) namespace: String,
    pub(crate) node: String,
    pub(crate) sync_every: Duration,
    pub(crate) quorum: u32,
    pub(crate) window: Duration,
    pub(crate) timeout: Duration,
    pub(crate) lease: Duration,
    /// Signs what this node sends; with it, unsigned messages are dropped.
    pub(crate) key: Option<codec::FleetKey>,
}

/// Called with the status whenever the node connects or disconnects.
pub(crate) type StatusHook = Arc<dyn Fn(&FleetStatus) + Send + Sync>;

/// The scripts, hashed once (EVALSHA; the client loads them again after a
/// Redis restart).
struct Scripts {
    sync: Script,
    trip: Script,
    close: Script,
    control: Script,
}

/// What one node shares: settings, connection, members, status.
pub(crate) struct Shared {
    pub(crate) settings: Settings,
    pub(crate) channel: String,
    boot_key: String,
    connector: Connector,
    /// The connection in use (replaced after repeated timeouts).
    conn: Mutex<ConnectionManager>,
    /// Which connection is in use; pushes of older ones are ignored.
    generation: AtomicU64,
    /// Redis exchanges that timed out in a row.
    timeouts: AtomicU32,
    pub(crate) members: Mutex<BTreeMap<String, Arc<Member>>>,
    link: Mutex<Link>,
    pub(crate) counters: Counters,
    /// Wakes the sync task: a transition left something to tell.
    pub(crate) wake: Notify,
    /// Set by the connection when it drops; the sync task marks the node
    /// disconnected.
    pub(crate) link_lost: AtomicBool,
    pub(crate) next_id: AtomicU64,
    on_status: Option<StatusHook>,
    /// The namespace's boot marker as last read: a different one means
    /// Redis lost its keys (a restart without persistence, a flush).
    boot: Mutex<Option<String>>,
    /// Whether the channel's connection is subscribed now.
    pub(crate) subscribed: watch::Sender<bool>,
    /// Set when the channel subscribes (again): what was published while
    /// it was not is read by a sync at once.
    pub(crate) resync: AtomicBool,
    scripts: Scripts,
    /// The protocol's time zero (its `now` is the time since).
    origin: Instant,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Values per breaker in the sync script's answer.
const VIEW_LEN: usize = 8;

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => String::new(),
    }
}

use protocol::ms;

fn control_state(s: &str) -> Option<State> {
    match s {
        "force_open" => Some(State::ForcedOpen),
        "disable" => Some(State::Disabled),
        _ => None,
    }
}

impl Shared {
    /// The node; `conn` is `connector`'s generation 0.
    pub(crate) fn new(
        settings: Settings,
        connector: Connector,
        conn: ConnectionManager,
        on_status: Option<StatusHook>,
    ) -> Arc<Shared> {
        let ns = &settings.namespace;
        let slot = Arc::clone(&connector.shared);
        let shared = Arc::new(Shared {
            channel: format!("fusebox:{{{ns}}}:events"),
            boot_key: format!("fusebox:{{{ns}}}:boot"),
            settings,
            connector,
            conn: Mutex::new(conn),
            generation: AtomicU64::new(0),
            timeouts: AtomicU32::new(0),
            members: Mutex::new(BTreeMap::new()),
            link: Mutex::new(Link::new()),
            counters: Counters::default(),
            wake: Notify::new(),
            link_lost: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            on_status,
            boot: Mutex::new(None),
            subscribed: watch::Sender::new(false),
            resync: AtomicBool::new(false),
            scripts: Scripts {
                sync: Script::new(scripts::SYNC),
                trip: Script::new(scripts::TRIP),
                close: Script::new(scripts::CLOSE),
                control: Script::new(scripts::CONTROL),
            },
            origin: Instant::now(),
        });
        let _ = slot.set(Arc::downgrade(&shared));
        shared
    }

    fn conn(&self) -> ConnectionManager {
        lock(&self.conn).clone()
    }

    /// Drops the connection for a new one (see [`RENEW_AFTER_TIMEOUTS`]).
    fn renew_connection(&self) {
        // Relaxed: a counter only this node's exchanges touch.
        let generation = self.generation.load(Ordering::Relaxed) + 1;
        if let Ok(conn) = self.connector.connect(generation) {
            *lock(&self.conn) = conn;
            self.generation.store(generation, Ordering::Relaxed);
        }
    }

    pub(crate) fn members(&self) -> Vec<Arc<Member>> {
        lock(&self.members).values().cloned().collect()
    }

    /// The protocol's `now`: monotonic time since this node was made.
    pub(crate) fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The protocol's settings for this node's breakers.
    pub(crate) fn protocol_settings(&self) -> protocol::Settings {
        let s = &self.settings;
        protocol::Settings::new(s.sync_every)
            .quorum(s.quorum)
            .window(s.window)
            .lease(s.lease)
    }

    /// The earliest end of a fleet open period, among this node's shared
    /// breakers, still to come.
    pub(crate) fn next_open_end(&self) -> Option<Instant> {
        let now = self.now();
        self.members()
            .iter()
            .filter_map(|m| m.node().wake_at(now))
            .min()
            .map(|end| self.origin + end)
    }

    pub(crate) fn member(&self, name: &str) -> Option<Arc<Member>> {
        lock(&self.members).get(name).cloned()
    }

    pub(crate) fn connected(&self) -> bool {
        lock(&self.link).connected
    }

    pub(crate) fn status(&self) -> FleetStatus {
        let shared = lock(&self.members).len();
        let link = lock(&self.link);
        FleetStatus {
            namespace: self.settings.namespace.clone(),
            node: self.settings.node.clone(),
            connected: link.connected,
            disconnected_since: link.down_since.map(|(wall, _)| wall),
            disconnected_for: link.down_since.map(|(_, at)| at.elapsed()),
            shared,
            disconnects: link.disconnects,
            syncs: Counters::get(&self.counters.syncs),
            messages_received: Counters::get(&self.counters.received),
            messages_dropped: Counters::get(&self.counters.dropped),
            messages_unauthenticated: Counters::get(&self.counters.unauthenticated),
            messages_oversized: Counters::get(&self.counters.oversized),
            channel_reconnects: Counters::get(&self.counters.subscriptions).saturating_sub(1),
            last_error: link.last_error.clone(),
        }
    }

    /// Records whether Redis answers. On a change, every shared breaker's
    /// probe gate follows (disconnected: decide alone), and the status hook
    /// and a tracing event (feature `tracing`) say so.
    pub(crate) fn set_connected(&self, up: bool, error: Option<&FleetError>) {
        let changed = {
            let mut link = lock(&self.link);
            if let Some(e) = error {
                link.last_error = Some(e.to_string());
            }
            if link.connected == up {
                false
            } else {
                link.connected = up;
                if up {
                    link.down_since = None;
                } else {
                    link.disconnects += 1;
                    link.down_since = Some((SystemTime::now(), Instant::now()));
                }
                true
            }
        };
        if !changed {
            return;
        }
        let now = self.now();
        for m in self.members() {
            m.run(now, Input::Connected(up));
        }
        let status = self.status();
        #[cfg(feature = "tracing")]
        if up {
            tracing::info!(target: "fusebox::fleet", namespace = %status.namespace, node = %status.node, "fleet connected");
        } else {
            tracing::warn!(target: "fusebox::fleet", namespace = %status.namespace, node = %status.node, error = ?status.last_error, "fleet disconnected: shared breakers work as local breakers");
        }
        if let Some(hook) = &self.on_status {
            hook(&status);
        }
    }

    /// Runs one Redis exchange within the fleet's timeout.
    async fn run<T>(
        &self,
        op: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, FleetError> {
        match tokio::time::timeout(self.settings.timeout, op).await {
            Ok(r) => {
                // Relaxed (here and below): a counter, no data rides on it.
                self.timeouts.store(0, Ordering::Relaxed);
                r.map_err(FleetError::from)
            }
            Err(_) => {
                if self.timeouts.fetch_add(1, Ordering::Relaxed) + 1 >= RENEW_AFTER_TIMEOUTS {
                    self.timeouts.store(0, Ordering::Relaxed);
                    self.renew_connection();
                }
                Err(FleetError::Timeout)
            }
        }
    }

    /// The channel's connection subscribed: counted, said to `connect`,
    /// and a sync asked for (what was published before is read there).
    pub(crate) fn channel_up(&self) {
        Counters::bump(&self.counters.subscriptions);
        self.subscribed.send_replace(true);
        // Release: a flag for the sync task; nothing rides on it.
        self.resync.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// The channel's connection ended with `error`; returns whether it had
    /// subscribed.
    pub(crate) fn channel_down(&self, error: &FleetError) -> bool {
        let what = match error {
            FleetError::Redis(e) => e.clone(),
            FleetError::Timeout => "no answer within the timeout".into(),
            e => e.to_string(),
        };
        let error = FleetError::Redis(format!("channel: {what}"));
        lock(&self.link).last_error = Some(error.to_string());
        let was_up = self.subscribed.send_replace(false);
        #[cfg(feature = "tracing")]
        if was_up {
            let s = &self.settings;
            tracing::warn!(target: "fusebox::fleet", namespace = %s.namespace, node = %s.node, error = %what, "fleet channel lost: subscribing again, then syncing");
        }
        was_up
    }

    /// One round trip for `members`: their window deltas in, the fleet's
    /// state of each out, applied. Marks the node connected or not.
    pub(crate) async fn sync(&self, members: &[Arc<Member>]) -> Result<(), FleetError> {
        let now = self.now();
        let entries: Vec<(Arc<Member>, Request)> = members
            .iter()
            .filter_map(|m| {
                let local = Local::read(&m.breaker);
                let request = m
                    .run(now, Input::Sync(local))
                    .into_iter()
                    .find_map(|a| match a {
                        Action::Sync(r) => Some(r),
                        _ => None,
                    })?;
                Some((Arc::clone(m), request))
            })
            .collect();
        let proposal = format!(
            "{}-{}",
            self.settings.node,
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        let mut call = self.scripts.sync.prepare_invoke();
        call.key(&self.boot_key)
            .arg(proposal)
            .arg(&self.settings.node)
            .arg(ms(self.settings.lease))
            .arg(self.settings.quorum)
            // One lead for all: every breaker here syncs in the same round
            // trips, so their leads differ only while one is new.
            .arg(ms(entries
                .iter()
                .map(|(_, r)| r.ahead)
                .max()
                .unwrap_or(self.settings.sync_every)));
        for (m, r) in &entries {
            let k = &m.keys;
            call.key(&k.open)
                .key(&k.ctl)
                .key(&k.win)
                .key(&k.probe)
                .key(&k.tripped);
            let (span, bucket) = r.window.map_or((0, 1), |(s, b)| (ms(s), ms(b)));
            call.arg(r.delta.calls)
                .arg(r.delta.failures)
                .arg(r.delta.slow)
                .arg(span)
                .arg(bucket)
                .arg(r.lease as u8);
        }
        let mut conn = self.conn();
        let result: Result<Vec<Value>, _> = self.run(call.invoke_async(&mut conn)).await;
        let out = match result {
            Ok(out) if out.len() == 1 + VIEW_LEN * entries.len() => out,
            Ok(_) => {
                let e = FleetError::Redis("unexpected answer to the sync script".into());
                self.set_connected(false, Some(&e));
                return Err(e);
            }
            Err(e) => {
                self.set_connected(false, Some(&e));
                return Err(e);
            }
        };
        Counters::bump(&self.counters.syncs);
        self.set_connected(true, None);
        let lost_keys = {
            let boot = text(&out[0]);
            let mut known = lock(&self.boot);
            let lost = known.as_ref().is_some_and(|k| *k != boot);
            *known = Some(boot);
            lost
        };
        let now = self.now();
        if lost_keys {
            // What this sync read is an empty namespace, not the fleet's
            // state (a missing control key is no reset): put back what this
            // node knows, and read again next time.
            let mut put_back = Vec::new();
            for (m, r) in entries {
                let actions = m.run(now, Input::KeysLost(r));
                put_back.push((m, actions));
            }
            return self.republish(put_back).await;
        }
        for ((m, request), v) in entries.into_iter().zip(out[1..].chunks(VIEW_LEN)) {
            let open_ms = int(&v[4]);
            let epoch = text(&v[7]);
            let answer = Answer {
                totals: Counts {
                    calls: int(&v[0]).max(0) as u64,
                    failures: int(&v[1]).max(0) as u64,
                    slow: int(&v[2]).max(0) as u64,
                },
                failing_nodes: int(&v[3]).max(0) as u64,
                open: (open_ms >= 0).then(|| Duration::from_millis(open_ms as u64)),
                control: control_state(&text(&v[5])),
                lease: text(&v[6]) == self.settings.node,
                epoch: epoch.parse().ok(),
            };
            let local = Local::read(&m.breaker);
            m.run(
                now,
                Input::Synced {
                    request,
                    answer,
                    local,
                },
            );
        }
        Ok(())
    }

    /// Redis lost the namespace's keys: put back what this node knows, the
    /// fleet's open periods and control states.
    async fn republish(&self, put_back: Vec<(Arc<Member>, Vec<Action>)>) -> Result<(), FleetError> {
        for (m, actions) in put_back {
            for a in actions {
                match a {
                    Action::Control(kind) => self.control(&m.name, kind).await?,
                    Action::Republish(remaining) => {
                        let opened = self.trip(&m, remaining, 1, None).await?;
                        m.run(
                            self.now(),
                            Input::Tripped {
                                remaining,
                                opened,
                                republished: true,
                            },
                        );
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Tells the fleet this breaker opened for `remaining`; counts toward
    /// `quorum`, unless `probed` (a failed probe's trip epoch, `""` if none)
    /// is the fleet's current one. Returns whether the fleet's breaker is
    /// open now.
    pub(crate) async fn trip(
        &self,
        m: &Member,
        remaining: Duration,
        quorum: u32,
        probed: Option<u64>,
    ) -> Result<bool, FleetError> {
        let k = &m.keys;
        let mut call = self.scripts.trip.prepare_invoke();
        call.key(&k.open)
            .key(&k.trips)
            .key(&k.ctl)
            .key(&k.probe)
            .key(&k.tripped)
            .arg(&self.settings.node)
            .arg(codec::millis(remaining))
            .arg(quorum)
            .arg(ms(self.settings.window))
            .arg(&self.channel)
            .arg(self.encode(&m.name, Kind::Trip { remaining }))
            .arg(probed.map(|e| e.to_string()).unwrap_or_default());
        let mut conn = self.conn();
        let opened: i64 = self.run(call.invoke_async(&mut conn)).await?;
        Ok(opened > 0)
    }

    /// Tells the fleet a probe here closed this breaker, under the trip
    /// epoch known when it closed. Returns false if the fleet refused it
    /// (it tripped again meanwhile, or is open or under control): the
    /// fleet's state then stands, and the caller syncs to take it.
    pub(crate) async fn close(&self, m: &Member, epoch: Option<u64>) -> Result<bool, FleetError> {
        let k = &m.keys;
        let message = self.encode(&m.name, Kind::Close);
        let epoch = epoch.map(|e| e.to_string()).unwrap_or_default();
        let mut call = self.scripts.close.prepare_invoke();
        call.key(&k.open)
            .key(&k.probe)
            .key(&k.trips)
            .key(&k.win)
            .key(&k.tripped)
            .key(&k.ctl)
            .arg(&self.channel)
            .arg(message)
            .arg(epoch);
        let mut conn = self.conn();
        let closed: i64 = self.run(call.invoke_async(&mut conn)).await?;
        Ok(closed > 0)
    }

    /// Forces open, disables or resets breaker `name` fleet-wide.
    pub(crate) async fn control(&self, name: &str, kind: Kind) -> Result<(), FleetError> {
        let k = super::member::Keys::new(&self.settings.namespace, name);
        let message = self.encode(name, kind);
        let mut call = self.scripts.control.prepare_invoke();
        call.key(&k.ctl)
            .key(&k.open)
            .key(&k.probe)
            .key(&k.trips)
            .key(&k.win)
            .key(&k.tripped)
            .arg(kind.as_str())
            .arg(&self.channel)
            .arg(message);
        let mut conn = self.conn();
        let result: Result<i64, _> = self.run(call.invoke_async(&mut conn)).await;
        if let Err(e) = &result {
            self.set_connected(false, Some(e));
        }
        result.map(drop)
    }

    /// This node's message about breaker `name`, as sent (signed if the
    /// fleet has a key).
    fn encode(&self, name: &str, kind: Kind) -> Vec<u8> {
        Message::new(&self.settings.namespace, &self.settings.node, name, kind)
            .encode_with(self.settings.key.as_ref())
    }

    /// Applies one message from the channel. Malformed ones and those of
    /// another namespace are dropped and counted; this node's own are
    /// ignored (it applied them when it sent them).
    pub(crate) fn apply_bytes(&self, bytes: &[u8]) {
        let decoded = match &self.settings.key {
            Some(key) => key.verify(bytes).inspect_err(|_| {
                if codec::decode(bytes).is_ok() {
                    // Well formed, not signed with this fleet's key.
                    Counters::bump(&self.counters.unauthenticated);
                }
            }),
            None => codec::decode(bytes),
        };
        let Ok(message) = decoded else {
            Counters::bump(&self.counters.dropped);
            return;
        };
        if message.namespace != self.settings.namespace {
            Counters::bump(&self.counters.dropped);
            return;
        }
        Counters::bump(&self.counters.received);
        if message.node == self.settings.node {
            return;
        }
        if let Some(m) = self.member(&message.breaker) {
            self.apply_message(&m, message.kind);
        }
    }

    /// Applies `kind` to the member `m` (from the channel, or from this
    /// node's own control call).
    pub(crate) fn apply_message(&self, m: &Member, kind: Kind) {
        let rest = m.run(self.now(), Input::Message(kind));
        if rest.contains(&Action::Wake) {
            // The sync task plans a sync for the end of the period.
            self.wake.notify_one();
        }
    }

    /// Tells the fleet what `tell` says, as the breaker is now: the trip if
    /// it is still open with time left, then the close if it is still
    /// closed. Returns whether to sync the breaker once told; on an error,
    /// the tell is pending again.
    pub(crate) async fn tell(&self, m: &Member, tell: Tell) -> Result<bool, FleetError> {
        let mut join = tell.join;
        let result = async {
            if let Some(trip) = tell.trip {
                if let Some(remaining) = m.breaker.open_remaining().filter(|d| !d.is_zero()) {
                    let opened = self.trip(m, remaining, trip.quorum, trip.probed).await?;
                    m.run(
                        self.now(),
                        Input::Tripped {
                            remaining,
                            opened,
                            republished: false,
                        },
                    );
                }
            }
            if let Some(epoch) = tell.close {
                if m.breaker.state() == State::Closed {
                    let taken = self.close(m, epoch).await?;
                    let rest = m.run(self.now(), Input::Closed { taken });
                    join |= rest.contains(&Action::Join);
                }
            }
            Ok::<_, FleetError>(())
        }
        .await;
        match result {
            Ok(()) => Ok(join),
            Err(e) => {
                m.run(self.now(), Input::Untold(tell));
                Err(e)
            }
        }
    }
}
