//! A fleet of replicas: the breakers of one service's replicas share their
//! state through Redis, while every call is still decided locally, at the
//! cost of a local breaker (feature `fleet`).
//!
//! With 20 replicas each keeping its own breaker for the payments API, an
//! outage costs 20 times the failing calls before every replica has learnt
//! it, recovery sends 20 probes at once into a dependency just coming back,
//! and an operator must force each replica open by hand. A fleet makes the
//! replicas behave like one breaker within milliseconds, without a network
//! call per request.
//!
//! ```no_run
//! use fusebox::fleet::Fleet;
//! use fusebox::CircuitBreaker;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let fleet = Fleet::builder()
//!     .redis_url("redis://127.0.0.1:6379")
//!     .namespace("shop")
//!     .node("web-1")
//!     .sync_every(Duration::from_millis(500))
//!     .quorum(1)
//!     .connect()
//!     .await?; // returns even while Redis is down
//!
//! let payments = CircuitBreaker::builder().name("payments").failure_rate(0.5).build()?;
//! let _membership = fleet.share(&payments).await?; // shared until dropped
//!
//! // Calls go through `payments` as always: decided here, never waiting on Redis.
//! let _ = payments.call(|| Ok::<_, std::io::Error>(()));
//!
//! // An operator's switch, for every replica:
//! fleet.force_open("payments").await?;
//! println!("{:?}", fleet.status());
//! # Ok(()) }
//! ```
//!
//! # Rules
//!
//! - **Trips travel.** When a shared breaker opens on any node (its own
//!   policy, the fleet's window, a failed fleet-wide probe), every node of
//!   the namespace opens for the rest of the same open period. The trip is
//!   pushed on the namespace's pub/sub channel (not polled), carrying the
//!   remaining time as a duration; on loopback it arrives in tens of
//!   microseconds (BENCHMARKS.md, "Fleet"). Each sync also reads the fleet's
//!   open period (a key whose TTL is the rest of it), so a node that missed
//!   a message catches up within `sync_every`.
//! - **The fleet's window.** For rate policies (`failure_rate`,
//!   `slow_calls`) every node adds what its breaker counted since the last
//!   sync (calls, failures, slow calls) to the fleet's window in Redis, once
//!   per `sync_every`, for all its breakers in one round trip (one Lua
//!   script). The window is bucketed on Redis's own clock; its span is the
//!   breaker's `time_window`, or the fleet's [`window`](FleetBuilder::window)
//!   for a count window. Each node then applies its breaker's own rates and
//!   `min_calls` to the fleet's totals, so a low-traffic replica trips too.
//!   `consecutive_failures` stays per node; its trips travel. Verdicts
//!   counted while Redis is away are merged into one delta, sent when it is
//!   back (dropped if older than the window).
//! - **Probes fleet-wide.** When the fleet's open period ends, one node at a
//!   time holds the probe lease (a Redis key with an expiry,
//!   [`probe_lease`](FleetBuilder::probe_lease)) and admits the breaker's
//!   `half_open_probes` probes: `half_open_probes(k)` means k probes in the
//!   whole fleet. A node asks for the lease only on demand: calls of its own
//!   found the breaker open or half-open since its last sync (a node without
//!   calls neither goes half-open nor takes the lease). It may take it ahead,
//!   at a sync that finds the open period ending before the next one (and
//!   its round trip, as recently seen), and a
//!   node also syncs when a fleet open period it knows of ends (one round
//!   trip per trip, whatever `sync_every`), so that a node with calls usually
//!   holds the lease by its first half-open call, which then probes; a node
//!   that does not has that call rejected, which wakes its task to ask at
//!   once (one round trip), and its next call probes. A node refused because another holds the
//!   lease asks again at each sync while its calls keep coming. The others
//!   reject half-open calls until the prober closes (the close travels like
//!   a trip) or reopens (a trip), with `retry_after` equal to `sync_every`:
//!   by then the node has asked again (and holds the lease if it was free)
//!   or heard the verdict. The holder keeps the lease (renewed at each sync)
//!   while it has calls, even further apart than `sync_every`; it gives it
//!   back at a sync with no probe in flight once a probe permit was dropped
//!   without a verdict, or once it went a whole `probe_lease` without a call,
//!   and at once on the verdict. A dead prober's lease expires and a node
//!   with calls takes it.
//! - **Closes are for one trip.** Every trip of the fleet's breaker (from
//!   closed or half-open to open) has an epoch, made by Redis, and a close is
//!   told with the epoch its probe ran under. Redis takes it (compare and
//!   set, in the close's Lua script) only if the fleet's breaker is still
//!   half-open in that same epoch: a close that comes late (its node was cut
//!   off from Redis while the fleet tripped again) or from a node that
//!   probed alone (below the quorum) while the fleet tripped, or one made
//!   while the fleet is open, forced open or disabled, changes nothing, and
//!   its node takes the fleet's state instead (open, or half-open rejecting).
//! - **Quorum.** With [`quorum(q)`](FleetBuilder::quorum), a node's own
//!   trip always protects that node, but the fleet opens only when q
//!   distinct nodes tripped within the fleet's window (Redis's clock). The
//!   fleet's window trips a node only once q distinct nodes reported
//!   failures or slow calls into it; a failed probe reopens the fleet at
//!   once only if it probed for the fleet's current trip (same epoch: see
//!   below; a failed probe told after its node was cut off while the fleet
//!   closed or tripped again is one more trip toward the quorum). So with
//!   q >= 2 one replica with a broken network path does not open the
//!   breaker for the healthy ones. A node whose trip stayed below the
//!   quorum is open *on its own*: it probes on its own schedule, without
//!   the fleet's probe lease (it neither asks for it nor keeps it, so a
//!   sick replica never keeps a healed one from probing), its successful
//!   probe closes only itself (nothing is told), a fleet close leaves it
//!   open, and its failed probe is one more trip toward the quorum. Once
//!   the fleet opens (the quorum reached, or a trip heard), it is the
//!   fleet's again.
//!   q = 1 by default.
//! - **Control.** [`Fleet::force_open`], [`Fleet::disable`] and
//!   [`Fleet::reset`] reach every node the same way, and are kept in Redis
//!   so that a node joining later starts in that state. A local
//!   `breaker.force_open()` stays local.
//! - **Joining.** A node that shares a breaker while the fleet's breaker is
//!   open, forced open or disabled starts in that state, for what remains of
//!   the open period. If the fleet's breaker is half-open (its open period
//!   is over and no probe closed it yet), the node starts half-open: it
//!   rejects (`retry_after` = `sync_every`) while another node holds the probe lease,
//!   and closes when that probe's close travels; if the prober dies, its
//!   lease expires and the newcomer may take it. (Its listeners see
//!   `Closed -> Open` with [`Reason::Remote`](crate::Reason::Remote) and,
//!   at the next admission, `Open -> HalfOpen`.) A node whose breaker is
//!   closed while the fleet's is half-open for another reason (it missed the
//!   trip while cut off, or its close was refused) does the same at its
//!   next sync.
//! - **No clock comparison between machines.** Open periods travel as
//!   durations; windows, quorums and leases use Redis's `TIME` and TTLs.
//!
//! # Redis is never in the call path
//!
//! A call through a shared breaker costs the same whatever Redis does (slow,
//! down, restarted, partitioned), and what a call through a local breaker
//! costs, but for one count in rate breakers (their verdicts counted for the
//! fleet's window: a plain store to a cell the calling thread owns, no
//! read-modify-write; BENCHMARKS.md, "Fleet"). A transition only sets a flag
//! and wakes the fleet's task. Every Redis exchange runs on the
//! fleet's own tasks, bounded by [`timeout`](FleetBuilder::timeout). When
//! Redis does not answer, [`Fleet::status`] says disconnected and since
//! when, a status hook ([`FleetBuilder::on_status`]), with feature
//! `tracing` a warning, and with feature `prometheus` the gauge
//! `fusebox_fleet_connected` (`Fleet::register_metrics`) say so, and every
//! shared breaker works as a local
//! breaker (its probes decided locally too). When Redis is back the node
//! syncs again; if Redis lost its keys (a restart without persistence, a
//! flush: a boot marker tells), nodes put back the open periods and control
//! states they know. Nothing queues while Redis is away: pending trips and
//! closes are flags per breaker, window counts are merged, and a Redis that
//! stops answering without closing the connection (frozen, partitioned) is
//! given up after three timeouts in a row for a new connection, so
//! unanswered requests do not pile up in the client either.
//!
//! # Safety
//!
//! - Every key and the channel are under the namespace (`fusebox:{NS}:...`),
//!   and every message carries its namespace: a message of another namespace
//!   is dropped, so no other fleet can trip this one.
//! - Redis is the fleet's truth: each sync reads it, and a node open because
//!   of a trip message closes again at its next sync if Redis holds no trip
//!   (a forged or replayed trip, a close it missed), as a node closed by a
//!   close message that Redis contradicts opens again. Between syncs, a
//!   message is taken as it comes.
//! - With a key ([`FleetBuilder::key`]), every message is signed
//!   (HMAC-SHA256, [`FleetKey`]) and unsigned ones are dropped and counted
//!   ([`FleetStatus::messages_unauthenticated`]): whoever can publish on the
//!   channel without the key can neither trip nor close a breaker, even
//!   between syncs. The key authenticates the fleet, not each node: any
//!   node holding it may speak for any node id. Without a key, keep
//!   strangers off the channel with Redis ACLs.
//! - Messages are at most [`MAX_MESSAGE_BYTES`]; malformed or oversized ones
//!   are dropped and counted ([`FleetStatus::messages_dropped`]), never a
//!   panic. [`decode`] is the one decoder; it is property-tested on
//!   arbitrary bytes and fuzzed (`fuzz/`, target `fleet_decode`).
//! - A flood of large messages costs no memory. Each node holds two
//!   connections to Redis: one for its commands (the scripts), one
//!   subscribed to the namespace's channel, which the fleet reads itself
//!   with a bound: a message over [`MAX_MESSAGE_BYTES`], whatever its size
//!   (10 MB from anyone who can publish on the channel), is read past in
//!   8 KiB pieces, never held in memory, and counted
//!   ([`FleetStatus::messages_oversized`]). If Redis closes the subscriber
//!   (over its `client-output-buffer-limit pubsub`), syncs and control
//!   calls go on on the other connection; the node subscribes again and
//!   syncs at once, so a trip sent meanwhile arrives within one reconnect
//!   ([`FleetStatus::channel_reconnects`]).
//! - Passwords: `redis://user:password@host:6379/0` (ACL user) and
//!   `redis://:password@host` work as in the `redis` crate; a URL in an error
//!   message has its credentials masked.
//! - TLS: with the cargo feature `fleet-tls`, `rediss://` URLs connect over
//!   TLS (rustls: the `redis` crate's support for the commands' connection,
//!   `tokio-rustls` for the channel's). The server's certificate is
//!   checked, on both connections, against the system's root certificates,
//!   or against a private CA given with
//!   [`FleetBuilder::tls_root_certificate`] (tested against a TLS-only
//!   `redis-server`, and refused without the CA). rustls needs a
//!   process-wide crypto provider: if the application installed none, the
//!   first `rediss://` fleet installs rustls's `ring` provider. Client
//!   certificates (mutual TLS) and `#insecure` URLs are not offered. Without
//!   the feature, `connect` refuses a `rediss://` URL with an error naming
//!   the feature.
//! - Redis Cluster is not supported (the scripts touch several keys); use a
//!   single Redis or a Sentinel-managed primary.
//!
//! The network never changes a breaker's settings; only its state, and only
//! through what the rules above allow.

mod channel;
mod codec;
mod error;
mod link;
#[cfg(feature = "test-util")]
mod local;
mod member;
#[cfg(feature = "prometheus")]
mod metrics;
pub mod protocol;
mod scripts;
mod status;
mod task;

pub use codec::{
    decode, DecodeError, FleetKey, KeyError, Kind, Message, MAX_ID_BYTES, MAX_MESSAGE_BYTES,
    MAX_NAME_BYTES, MIN_KEY_BYTES,
};
pub use error::FleetError;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub use local::{LocalRedis, REQUIRE_REDIS};
pub use status::{FleetStatus, SharedBreaker};

use crate::observe::{Observer, Tags};
use crate::sync::lock;
use crate::CircuitBreaker;
use link::{Connector, Settings, Shared, StatusHook};
use member::{attach, Member};
use protocol::Input;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, watch};

/// Messages waiting to be applied, at most; beyond, they are dropped and
/// counted (a sync catches up within `sync_every`).
const INBOX: usize = 1024;

/// Sets up a [`Fleet`]; see [`Fleet::builder`].
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | `redis_url` | required |
/// | `namespace` | required |
/// | `node` | `node-<pid>-<random>` |
/// | `sync_every` | 1 s |
/// | `quorum` | 1 |
/// | `window` | 10 s (the fleet window of count-window breakers, and the quorum's) |
/// | `timeout` | 1 s (each Redis exchange) |
/// | `probe_lease` | 3 x `sync_every` |
///
/// # Examples
///
/// ```
/// use fusebox::fleet::Fleet;
/// use std::time::Duration;
/// let builder = Fleet::builder()
///     .redis_url("redis://127.0.0.1:6379")
///     .namespace("shop")
///     .node("web-1")
///     .sync_every(Duration::from_millis(200))
///     .quorum(2);
/// ```
#[derive(Clone, Default)]
pub struct FleetBuilder {
    url: Option<String>,
    namespace: Option<String>,
    node: Option<String>,
    sync_every: Option<Duration>,
    quorum: Option<u32>,
    window: Option<Duration>,
    timeout: Option<Duration>,
    lease: Option<Duration>,
    key: Option<Result<codec::FleetKey, codec::KeyError>>,
    on_status: Option<StatusHook>,
    #[cfg(feature = "fleet-tls")]
    root_certificate: Option<Vec<u8>>,
}

impl fmt::Debug for FleetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBuilder")
            .field("url", &self.url.as_deref().map(redact))
            .field("namespace", &self.namespace)
            .field("node", &self.node)
            .field("sync_every", &self.sync_every)
            .field("quorum", &self.quorum)
            .field("key", &self.key.as_ref().map(|_| ".."))
            .finish_non_exhaustive()
    }
}

/// `url` with any credentials masked, for errors and debug output.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_owned(),
    }
}

fn bad(field: &'static str, value: impl fmt::Debug, problem: &'static str) -> FleetError {
    FleetError::Config {
        field,
        value: format!("{value:?}").trim_matches('"').to_owned(),
        problem,
    }
}

impl FleetBuilder {
    /// The Redis to share through: `redis://[user:password@]host:port[/db]`,
    /// or `rediss://` with the `redis` crate's TLS (see the [module
    /// docs](self)).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().redis_url("redis://:secret@127.0.0.1:6379/0");
    /// assert!(!format!("{b:?}").contains("secret"));
    /// ```
    pub fn redis_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// The fleet's namespace: only nodes of the same namespace share
    /// anything. 1 to 64 of `A-Z a-z 0-9 . _ : -`.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().namespace("shop-prod");
    /// ```
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// This node's id, unique in the fleet (a pod or host name). Same
    /// characters as the namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().node("web-7f9c");
    /// ```
    pub fn node(mut self, id: impl Into<String>) -> Self {
        self.node = Some(id.into());
        self
    }

    /// How often the node syncs with Redis: one round trip per interval for
    /// all its breakers' window counts, lease and state (1 ms to 1 hour).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().sync_every(std::time::Duration::from_millis(250));
    /// ```
    pub fn sync_every(mut self, every: Duration) -> Self {
        self.sync_every = Some(every);
        self
    }

    /// How many distinct nodes must trip within the fleet's window before
    /// the fleet opens (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().quorum(2);
    /// ```
    pub fn quorum(mut self, q: u32) -> Self {
        self.quorum = Some(q);
        self
    }

    /// The fleet's window for breakers with a count window (a time window
    /// uses its own span) and for the quorum.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().window(std::time::Duration::from_secs(30));
    /// ```
    pub fn window(mut self, span: Duration) -> Self {
        self.window = Some(span);
        self
    }

    /// The longest any Redis exchange may take before the node counts
    /// itself disconnected.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().timeout(std::time::Duration::from_millis(300));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How long a probe lease lasts unless renewed (a dead prober's lease
    /// expires after this), and how long a live holder keeps it without a
    /// half-open call of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder().probe_lease(std::time::Duration::from_secs(2));
    /// ```
    pub fn probe_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Signs every message this node sends with the fleet's shared secret
    /// (HMAC-SHA256, at least [`MIN_KEY_BYTES`] bytes) and drops, counting
    /// them ([`FleetStatus::messages_unauthenticated`]), the messages that
    /// are not signed with it: a stranger who can publish on the fleet's
    /// Redis channel can then neither trip nor close its breakers. Give
    /// every node of the namespace the same key (from a secret store or an
    /// environment variable; it is never logged). Without a key, messages
    /// are taken as they come and each sync undoes what Redis does not
    /// hold (a forged trip lasts until the next sync); Redis ACLs that keep
    /// strangers off the channel are the alternative.
    ///
    /// # Examples
    ///
    /// ```
    /// let secret = std::env::var("FLEET_KEY").unwrap_or_else(|_| "a secret of 16+ bytes".into());
    /// let b = fusebox::fleet::Fleet::builder().key(secret);
    /// ```
    pub fn key(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.key = Some(codec::FleetKey::new(secret));
        self
    }

    /// Called with the status each time the node connects or disconnects
    /// (on the fleet's task: keep it short, e.g. log or set a gauge).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::fleet::Fleet::builder()
    ///     .on_status(|s| eprintln!("fleet {}: connected = {}", s.namespace, s.connected));
    /// ```
    pub fn on_status(mut self, hook: impl Fn(&FleetStatus) + Send + Sync + 'static) -> Self {
        self.on_status = Some(Arc::new(hook));
        self
    }

    /// Trusts the CA certificate(s) in `pem` (PEM text) for a `rediss://`
    /// URL, instead of the system's roots: for a Redis whose certificate a
    /// private CA signed (feature `fleet-tls`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let fleet = fusebox::fleet::Fleet::builder()
    ///     .redis_url("rediss://redis.internal:6380")
    ///     .tls_root_certificate(std::fs::read("/etc/redis/ca.crt")?)
    ///     .namespace("shop")
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "fleet-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "fleet-tls")))]
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// The client for `url`: with TLS for `rediss://` (feature `fleet-tls`),
    /// a clear error naming the feature without it.
    fn client(&self, url: &str) -> Result<redis::Client, FleetError> {
        let tls = matches!(url.split("://").next(), Some("rediss" | "valkeys"));
        let client = redis::Client::open(url).map_err(|_| {
            let problem = if tls && cfg!(not(feature = "fleet-tls")) {
                "rediss:// (TLS) needs fusebox's cargo feature fleet-tls"
            } else {
                "not a Redis URL this client supports"
            };
            bad("redis_url", redact(url), problem)
        })?;
        #[cfg(feature = "fleet-tls")]
        {
            if tls && rustls::crypto::CryptoProvider::get_default().is_none() {
                // The redis crate takes rustls's process-wide provider; if
                // the application set none, ring (this feature's).
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            if let Some(pem) = &self.root_certificate {
                let field = "tls_root_certificate";
                if !tls {
                    return Err(bad(field, "(PEM)", "needs a rediss:// URL"));
                }
                let text = String::from_utf8_lossy(pem);
                if !text.contains("-----BEGIN CERTIFICATE-----") {
                    return Err(bad(field, "(PEM)", "holds no PEM certificate"));
                }
                let certs = redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                };
                return redis::Client::build_with_tls(url, certs)
                    .map_err(|_| bad(field, "(PEM)", "not a valid PEM certificate"));
            }
        }
        Ok(client)
    }

    fn settings(&self) -> Result<(String, Settings), FleetError> {
        let url = self
            .url
            .clone()
            .ok_or_else(|| bad("redis_url", "", "required (e.g. redis://127.0.0.1:6379)"))?;
        let namespace = self.namespace.clone().unwrap_or_default();
        if !codec::valid_id(&namespace) {
            return Err(bad(
                "namespace",
                &namespace,
                "use 1 to 64 of A-Z a-z 0-9 . _ : -",
            ));
        }
        let node = self.node.clone().unwrap_or_else(default_node);
        if !codec::valid_id(&node) {
            return Err(bad("node", &node, "use 1 to 64 of A-Z a-z 0-9 . _ : -"));
        }
        let sync_every = self.sync_every.unwrap_or(Duration::from_secs(1));
        if sync_every < Duration::from_millis(1) || sync_every > Duration::from_secs(3600) {
            return Err(bad("sync_every", sync_every, "use 1 ms to 1 hour"));
        }
        let quorum = self.quorum.unwrap_or(1);
        if quorum == 0 {
            return Err(bad("quorum", quorum, "must be at least 1"));
        }
        let window = self.window.unwrap_or(Duration::from_secs(10));
        if window < Duration::from_millis(10) || window > Duration::from_secs(86_400) {
            return Err(bad("window", window, "use 10 ms to 1 day"));
        }
        let timeout = self.timeout.unwrap_or(Duration::from_secs(1));
        if timeout < Duration::from_millis(1) || timeout > Duration::from_secs(60) {
            return Err(bad("timeout", timeout, "use 1 ms to 60 s"));
        }
        let lease = self.lease.unwrap_or(sync_every * 3);
        if lease < Duration::from_millis(1) || lease > Duration::from_secs(3600) {
            return Err(bad("probe_lease", lease, "use 1 ms to 1 hour"));
        }
        let key = match &self.key {
            None => None,
            Some(Ok(key)) => Some(key.clone()),
            Some(Err(e)) => {
                return Err(bad(
                    "key",
                    format!("({} bytes, not shown)", e.len()),
                    "use at least 16 bytes",
                ))
            }
        };
        Ok((
            url,
            Settings {
                namespace,
                node,
                sync_every,
                quorum,
                window,
                timeout,
                lease,
                key,
            },
        ))
    }

    /// Joins the fleet. Tries Redis once (for at most the fleet's timeout),
    /// so that with Redis up the node is connected when this returns; never
    /// fails for want of Redis: the connection is made in the background
    /// (and made again whenever it drops), so a service starts even while
    /// Redis is down. Must be called within a tokio runtime,
    /// which runs the fleet's two tasks until the last handle of the
    /// [`Fleet`] is dropped.
    ///
    /// # Errors
    ///
    /// [`FleetError::Config`] naming the first missing or invalid setting
    /// (an unparsable URL included). Never a connection error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let err = fusebox::fleet::Fleet::builder().namespace("shop").connect().await.unwrap_err();
    /// assert_eq!(err.to_string(), "fleet: redis_url = \"\": required (e.g. redis://127.0.0.1:6379)");
    /// # }
    /// ```
    pub async fn connect(self) -> Result<Fleet, FleetError> {
        let (url, settings) = self.settings()?;
        let client = self.client(&url)?;
        // RESP3: pub/sub pushes share the one multiplexed connection.
        let info = client.get_connection_info().clone();
        let resp3 = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        let client = redis::Client::open(info.set_redis_settings(resp3)).map_err(|_| {
            bad(
                "redis_url",
                redact(&url),
                "not a Redis URL this client supports",
            )
        })?;

        let (inbox_tx, inbox_rx) = mpsc::channel::<Vec<u8>>(INBOX);
        let endpoint = channel::Endpoint::new(
            client.get_connection_info(),
            #[cfg(feature = "fleet-tls")]
            self.root_certificate.clone(),
        );
        let max_delay = link::reconnect_delay(&settings);
        let connector = Connector::new(client, &settings);
        let conn = connector
            .connect(0)
            .map_err(|e| bad("redis_url", redact(&url), leak_problem(e)))?;
        let shared = Shared::new(settings, connector, conn, self.on_status);
        let (stop, stopped) = watch::channel(());
        let mut subscribed = shared.subscribed.subscribe();
        tokio::spawn(channel::channel_loop(
            Arc::clone(&shared),
            endpoint,
            inbox_tx,
            max_delay,
            stopped.clone(),
        ));
        // One first try, bounded by the timeout, so that with Redis up the
        // node is connected and subscribed when this returns; with Redis
        // down it returns all the same, and the tasks keep trying.
        if shared.sync(&[]).await.is_ok() {
            let timeout = shared.settings.timeout;
            let _ = tokio::time::timeout(timeout, subscribed.wait_for(|up| *up)).await;
        }
        tokio::spawn(task::sync_loop(Arc::clone(&shared), stopped.clone()));
        tokio::spawn(task::inbox_loop(Arc::clone(&shared), inbox_rx, stopped));
        Ok(Fleet {
            _life: Arc::new(Life {
                shared: Arc::clone(&shared),
                _stop: stop,
            }),
            shared,
        })
    }
}

/// The one problem a lazy connection manager reports: the URL asks for
/// something this build of the client lacks (TLS).
fn leak_problem(_: redis::RedisError) -> &'static str {
    "needs a feature of the redis crate this build lacks (TLS?)"
}

fn default_node() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("node-{}-{:08x}", std::process::id(), nanos)
}

/// One node's membership of a fleet: shares breakers, sends control
/// messages, reports its connection. Cheap to clone; the fleet's tasks stop
/// when the last clone is dropped (the breakers it shared become local).
///
/// See the [module docs](self) for the rules.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use fusebox::fleet::Fleet;
/// let fleet = Fleet::builder().redis_url("redis://127.0.0.1:6379").namespace("shop").connect().await?;
/// let db = fusebox::CircuitBreaker::builder().name("db").build()?;
/// let membership = fleet.share(&db).await?;
/// fleet.reset("db").await?;
/// drop(membership); // db is a local breaker again
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Fleet {
    shared: Arc<Shared>,
    _life: Arc<Life>,
}

/// Stops the tasks and detaches every breaker when the last [`Fleet`]
/// handle goes.
struct Life {
    shared: Arc<Shared>,
    _stop: watch::Sender<()>,
}

impl Drop for Life {
    fn drop(&mut self) {
        let members = std::mem::take(&mut *lock(&self.shared.members));
        for m in members.values() {
            m.detach();
        }
    }
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("status", &self.status())
            .finish()
    }
}

impl Fleet {
    /// Starts a [`FleetBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::fleet::Fleet::builder().namespace("shop");
    /// ```
    pub fn builder() -> FleetBuilder {
        FleetBuilder::default()
    }

    /// Shares `breaker` with the fleet under its name, until the returned
    /// [`Membership`] is dropped (a breaker is shared with one fleet at a
    /// time: sharing it with a second takes it from the first). Waits at
    /// most the fleet's timeout for Redis. If the fleet's breaker of that name is
    /// open, forced open or disabled, `breaker` starts so (for what remains
    /// of the open period) before this returns, when Redis answers; if it
    /// does not, at the next sync after it does.
    ///
    /// # Errors
    ///
    /// [`FleetError::Unnamed`] for a breaker built without a name;
    /// [`FleetError::BadName`] for a name that cannot be shared;
    /// [`FleetError::AlreadyShared`] if this node already shares a breaker
    /// of that name. Never a connection error.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fusebox::fleet::{Fleet, FleetError};
    /// let fleet = Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("shop").connect().await?;
    /// let unnamed = fusebox::CircuitBreaker::builder().build()?;
    /// assert_eq!(fleet.share(&unnamed).await.unwrap_err(), FleetError::Unnamed);
    /// # Ok(()) }
    /// ```
    pub async fn share(&self, breaker: &CircuitBreaker) -> Result<Membership, FleetError> {
        let member = self.register(breaker)?;
        let membership = Membership {
            shared: Arc::clone(&self.shared),
            name: member.name.clone(),
            id: member.id,
        };
        if self
            .shared
            .sync(std::slice::from_ref(&member))
            .await
            .is_err()
        {
            self.join_later(&member);
        }
        Ok(membership)
    }

    fn join_later(&self, member: &Member) {
        member.run(self.shared.now(), Input::JoinLater);
        self.shared.wake.notify_one();
    }

    fn register(&self, breaker: &CircuitBreaker) -> Result<Arc<Member>, FleetError> {
        let name = breaker.name().ok_or(FleetError::Unnamed)?;
        if !codec::valid_name(name) {
            return Err(FleetError::BadName {
                name: name.to_owned(),
            });
        }
        let shared = &self.shared;
        let mut members = lock(&shared.members);
        if members.contains_key(name) {
            return Err(FleetError::AlreadyShared {
                name: name.to_owned(),
            });
        }
        // Relaxed: a unique number, nothing else.
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let member = Arc::new(Member::new(
            id,
            name.to_owned(),
            breaker.clone(),
            &shared.settings.namespace,
            shared.protocol_settings(),
            shared.now(),
            shared.connected(),
        ));
        members.insert(name.to_owned(), Arc::clone(&member));
        drop(members);
        attach(shared, &member);
        Ok(member)
    }

    /// Forces the breaker `name` open on every node of the fleet (and on
    /// nodes that share it later) until [`Fleet::reset`].
    ///
    /// # Errors
    ///
    /// [`FleetError::Timeout`] or [`FleetError::Redis`] if Redis did not
    /// take it: then nothing changed anywhere. [`FleetError::BadName`] for a
    /// name that cannot be shared.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(fleet: fusebox::fleet::Fleet) -> Result<(), fusebox::fleet::FleetError> {
    /// fleet.force_open("payments").await?;
    /// # Ok(()) }
    /// ```
    pub async fn force_open(&self, name: &str) -> Result<(), FleetError> {
        self.control(name, Kind::ForceOpen).await
    }

    /// Disables the breaker `name` on every node (every call admitted,
    /// nothing counted) until [`Fleet::reset`].
    ///
    /// # Errors
    ///
    /// As [`Fleet::force_open`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(fleet: fusebox::fleet::Fleet) -> Result<(), fusebox::fleet::FleetError> {
    /// fleet.disable("payments").await?;
    /// # Ok(()) }
    /// ```
    pub async fn disable(&self, name: &str) -> Result<(), FleetError> {
        self.control(name, Kind::Disable).await
    }

    /// Closes the breaker `name` with empty counters on every node, and
    /// forgets the fleet's open period, window, quorum and lease for it.
    ///
    /// # Errors
    ///
    /// As [`Fleet::force_open`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(fleet: fusebox::fleet::Fleet) -> Result<(), fusebox::fleet::FleetError> {
    /// fleet.reset("payments").await?;
    /// # Ok(()) }
    /// ```
    pub async fn reset(&self, name: &str) -> Result<(), FleetError> {
        self.control(name, Kind::Reset).await
    }

    async fn control(&self, name: &str, kind: Kind) -> Result<(), FleetError> {
        if !codec::valid_name(name) {
            return Err(FleetError::BadName {
                name: name.to_owned(),
            });
        }
        self.shared.control(name, kind).await?;
        if let Some(m) = self.shared.member(name) {
            self.shared.apply_message(&m, kind);
        }
        Ok(())
    }

    /// Whether this node is connected to Redis, since when not, and what it
    /// counted. Synchronous: reads what the fleet's tasks recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::fleet::FleetError> {
    /// let fleet = fusebox::fleet::Fleet::builder()
    ///     .redis_url("redis://127.0.0.1:1")
    ///     .namespace("shop")
    ///     .node("web-1")
    ///     .connect()
    ///     .await?;
    /// assert_eq!(fleet.status().node, "web-1");
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> FleetStatus {
        self.shared.status()
    }

    /// Registers this node's fleet series into `registry` (feature
    /// `prometheus`), read at scrape time, labelled `namespace` and `node`:
    /// `fusebox_fleet_connected` (1 or 0), `fusebox_fleet_shared_breakers`,
    /// and the counters `fusebox_fleet_disconnects_total`,
    /// `fusebox_fleet_syncs_total`, `fusebox_fleet_messages_dropped_total` and
    /// `fusebox_fleet_messages_unauthenticated_total`.
    /// The series disappear when the fleet is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fleet = fusebox::fleet::Fleet::builder()
    ///     .redis_url("redis://127.0.0.1:1")
    ///     .namespace("shop")
    ///     .node("web-1")
    ///     .connect()
    ///     .await?;
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// fleet.register_metrics(&mut registry);
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_fleet_connected{namespace="shop",node="web-1"} 0"#));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "prometheus")]
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register_collector(Box::new(metrics::FleetCollector(Arc::downgrade(
            &self.shared,
        ))));
    }

    /// A registry [`Observer`] that shares every breaker the registry
    /// builds (see `FuseboxBuilder::fleet`). Those memberships last as long
    /// as the fleet.
    pub(crate) fn share_all(&self) -> ShareAll {
        ShareAll(self.clone())
    }
}

/// Shares every breaker a registry builds; made by `FuseboxBuilder::fleet`.
pub(crate) struct ShareAll(Fleet);

impl fmt::Debug for ShareAll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShareAll").finish()
    }
}

impl Observer for ShareAll {
    fn breaker_added(&self, _name: &str, _tags: &Tags, breaker: &CircuitBreaker) {
        // A name that cannot be shared stays a local breaker.
        if let Ok(member) = self.0.register(breaker) {
            self.0.join_later(&member);
        }
    }
}

/// A breaker's membership of a fleet: the breaker is shared until this is
/// dropped, then it is a local breaker again (in whatever state it is).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let fleet = fusebox::fleet::Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("shop").connect().await?;
/// let db = fusebox::CircuitBreaker::builder().name("db").build()?;
/// let membership = fleet.share(&db).await?;
/// assert_eq!((membership.name(), fleet.status().shared), ("db", 1));
/// drop(membership);
/// assert_eq!(fleet.status().shared, 0);
/// # Ok(()) }
/// ```
#[must_use = "dropping the membership stops sharing the breaker"]
pub struct Membership {
    shared: Arc<Shared>,
    name: String,
    id: u64,
}

impl Membership {
    /// The shared breaker's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(fleet: fusebox::fleet::Fleet, db: fusebox::CircuitBreaker) -> Result<(), fusebox::fleet::FleetError> {
    /// let m = fleet.share(&db).await?;
    /// println!("sharing {}", m.name());
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for Membership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Membership")
            .field("name", &self.name)
            .field("node", &self.shared.settings.node)
            .finish()
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut members = lock(&self.shared.members);
        if members.get(&self.name).is_some_and(|m| m.id == self.id) {
            if let Some(m) = members.remove(&self.name) {
                drop(members);
                m.detach();
            }
        }
    }
}
