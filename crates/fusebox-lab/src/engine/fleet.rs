//! A real-mode fleet with `sharing = "fleet"`: the replicas' fusebox
//! breakers share their state through `fusebox::fleet`, one node per
//! replica, against a real `redis-server` (`[fleet] redis = "local"`: one the
//! lab starts on a free loopback port and kills at the end; or a URL).
//!
//! Every replica's breaker has the same name (the fleet shares by name),
//! whatever its name in the run's registry (`SCENARIO/STRATEGY/replica-N`);
//! each replica is a node of its own (`r1`, `r2`, ...) in a namespace of the
//! run's own, so runs never see each other.

use crate::scenario::{Redis, Scenario};
use fusebox::fleet::{Fleet, LocalRedis, Membership};
use fusebox::CircuitBreaker;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the nodes may take to reach Redis before the run is refused.
const CONNECT: Duration = Duration::from_secs(5);

/// The fleet of one run: Redis (when the lab started it), a runtime for the
/// fleet's tasks, one node per replica sharing its breaker. Dropping it
/// stops the nodes, then Redis.
pub(super) struct RealFleet {
    memberships: Vec<Membership>,
    fleets: Vec<Fleet>,
    runtime: Option<tokio::runtime::Runtime>,
    /// Declared last: killed after the nodes stopped.
    _redis: Option<LocalRedis>,
}

/// The one error for a missing `redis-server`.
fn missing() -> String {
    "[fleet] redis = \"local\" needs redis-server, which is not installed \
     (apt-get install redis-server), or pass --redis redis://HOST:PORT"
        .into()
}

impl RealFleet {
    /// Connects one node per breaker (replica `r` is node `r{r+1}`) and
    /// shares it; fails if Redis cannot be started or reached.
    pub(super) fn start(scenario: &Scenario, breakers: &[CircuitBreaker]) -> Result<Self, String> {
        let fleet = scenario.fleet.as_ref().ok_or("not a fleet scenario")?;
        let (redis, url) = match &fleet.redis {
            Some(Redis::Url(url)) => (None, url.clone()),
            Some(Redis::Local) => match LocalRedis::start() {
                Ok(Some(r)) => {
                    let url = r.url();
                    (Some(r), url)
                }
                Ok(None) => return Err(missing()),
                Err(e) => return Err(format!("redis-server did not start: {e}")),
            },
            None => return Err(needs_redis(scenario)),
        };
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let namespace = format!(
            "fusebox-lab-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the fleet's runtime: {e}"))?;
        let quorum = u32::try_from(fleet.quorum).unwrap_or(u32::MAX);
        let (fleets, memberships) = runtime.block_on(async {
            let mut fleets = Vec::new();
            let mut memberships = Vec::new();
            for (r, breaker) in breakers.iter().enumerate() {
                let node = Fleet::builder()
                    .redis_url(url.as_str())
                    .namespace(namespace.as_str())
                    .node(format!("r{}", r + 1))
                    .sync_every(fleet.sync_every)
                    .quorum(quorum)
                    .connect()
                    .await
                    .map_err(|e| e.to_string())?;
                memberships.push(node.share(breaker).await.map_err(|e| e.to_string())?);
                fleets.push(node);
            }
            Ok::<_, String>((fleets, memberships))
        })?;
        let deadline = Instant::now() + CONNECT;
        while let Some(down) = fleets.iter().find(|f| !f.status().connected) {
            if Instant::now() > deadline {
                let status = down.status();
                return Err(format!(
                    "the fleet could not reach Redis at {url} within {}s: {}",
                    CONNECT.as_secs(),
                    status.last_error.unwrap_or_else(|| "no answer".into())
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(RealFleet {
            memberships,
            fleets,
            runtime: Some(runtime),
            _redis: redis,
        })
    }
}

/// The error for a real-mode shared fleet with nowhere to share.
pub(super) fn needs_redis(scenario: &Scenario) -> String {
    format!(
        "scenario {:?}: a real-mode fleet with sharing = \"fleet\" shares through Redis: \
         set [fleet] redis = \"local\" (the lab starts redis-server) or pass --redis redis://HOST:PORT",
        scenario.name
    )
}

impl Drop for RealFleet {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            let _guard = rt.enter();
            self.memberships.clear();
            self.fleets.clear();
            drop(_guard);
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}
