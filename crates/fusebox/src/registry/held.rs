//! The policies a registry holds by name besides its breakers (bulkheads,
//! rate limiters, adaptive limits, throttles): one table type for all of them, and one trait, [`Held`],
//! saying how a kind is configured, built, told to the observers and
//! changed in place. A new kind is an impl of [`Held`] and one line in
//! `Inner::tables`; building, reloading and listing are written once, here.

use super::{FuseboxConfig, PolicyStatus, Reloaded, SharedClock};
use crate::observe::{Observer, Tags};
use crate::policy::Inspect;
use crate::sync::{read, write};
use crate::Bulkhead;
use std::collections::BTreeMap;
use std::sync::Arc; // std even under loom, as in the registry
use std::sync::RwLock;

/// What building a policy needs from the registry.
pub(super) struct Ctx<'a> {
    pub(super) clock: Option<&'a SharedClock>,
    pub(super) observers: &'a [Arc<dyn Observer>],
}

/// A kind of policy the registry holds by name.
pub(super) trait Held: Inspect + Clone {
    /// Its effective settings.
    type Config;

    /// Names the config gives a table of this kind.
    fn configured(config: &FuseboxConfig) -> Vec<String>;

    /// The effective settings of `name` and its tags; `None`: `name` gets
    /// no policy of this kind.
    fn config_of(config: &FuseboxConfig, name: &str) -> Option<(Self::Config, Tags)>;

    /// Builds the policy `name`; `None` should the settings not build
    /// (they were validated when the config was accepted).
    fn build(name: &str, config: &Self::Config, clock: Option<&SharedClock>) -> Option<Self>;

    /// Puts `config` in force in place; whether a setting in force changed.
    fn apply(&self, config: &Self::Config) -> bool;

    /// Whether [`apply`](Held::apply) can put `config` (validated) in force
    /// on this policy, `name`, as it runs (a reload checks every policy
    /// before it changes any).
    fn check(&self, name: &str, config: &Self::Config) -> Result<(), super::InvalidConfig> {
        let _ = (name, config);
        Ok(())
    }

    /// Tells the observers of the policy, once it is installed.
    fn announce(&self, name: &str, tags: &Tags, observers: &[Arc<dyn Observer>]) {
        for o in observers {
            o.policy_added(name, tags, Arc::new(self.clone()));
        }
    }
}

/// The policies of one kind, by name, with their tags.
pub(super) struct Table<P> {
    map: RwLock<BTreeMap<String, (P, Tags)>>,
}

impl<P> Default for Table<P> {
    fn default() -> Self {
        Table {
            map: RwLock::new(BTreeMap::new()),
        }
    }
}

impl<P: Held> Table<P> {
    /// The policy `name`, if it is built.
    pub(super) fn get(&self, name: &str) -> Option<P> {
        read(&self.map).get(name).map(|(p, _)| p.clone())
    }

    /// The policy `name`: the one built, or one built now from `config`
    /// (none without a config).
    pub(super) fn get_or_build(
        &self,
        ctx: &Ctx<'_>,
        name: &str,
        config: Option<(P::Config, Tags)>,
    ) -> Option<P> {
        if let Some(p) = self.get(name) {
            return Some(p);
        }
        let (config, tags) = config?;
        let built = P::build(name, &config, ctx.clock)?;
        {
            let mut map = write(&self.map);
            if let Some((p, _)) = map.get(name) {
                return Some(p.clone()); // another thread built it first: theirs
            }
            map.insert(name.to_owned(), (built.clone(), tags.clone()));
        }
        built.announce(name, &tags, ctx.observers);
        Some(built)
    }

    /// Every policy with its name and tags, sorted by name.
    pub(super) fn list(&self) -> Vec<(String, Tags, P)> {
        read(&self.map)
            .iter()
            .map(|(n, (p, t))| (n.clone(), t.clone(), p.clone()))
            .collect()
    }
}

/// A table as the registry walks all of them.
pub(super) trait Kind: Send + Sync {
    /// Builds every policy `config` names that is not built yet; their names.
    fn build_configured(&self, ctx: &Ctx<'_>, config: &FuseboxConfig) -> Vec<String>;

    /// Applies `new` (validated) in place: names `old` had and `new` has
    /// not go to `report.removed` and keep running as they are; every other
    /// built policy takes its settings and tags from `new`, and goes to
    /// `report.changed` if either changed.
    fn reload(&self, old: &FuseboxConfig, new: &FuseboxConfig, report: &mut Reloaded);

    /// Every policy now.
    fn statuses(&self) -> Vec<PolicyStatus>;

    /// Whether every built policy `new` names can take its settings in
    /// place (see [`Held::check`]).
    fn check(&self, new: &FuseboxConfig) -> Result<(), super::InvalidConfig>;
}

impl<P: Held> Kind for Table<P> {
    fn build_configured(&self, ctx: &Ctx<'_>, config: &FuseboxConfig) -> Vec<String> {
        let mut added = Vec::new();
        for name in P::configured(config) {
            if self.get(&name).is_none()
                && self
                    .get_or_build(ctx, &name, P::config_of(config, &name))
                    .is_some()
            {
                added.push(name);
            }
        }
        added
    }

    fn reload(&self, old: &FuseboxConfig, new: &FuseboxConfig, report: &mut Reloaded) {
        let still = P::configured(new);
        let removed: Vec<String> = P::configured(old)
            .into_iter()
            .filter(|n| !still.contains(n))
            .collect();
        for (name, tags, policy) in self.list() {
            if removed.contains(&name) {
                continue;
            }
            // A name no config gives this kind any more (removed by an
            // earlier reload) keeps what it has.
            let Some((config, new_tags)) = P::config_of(new, &name) else {
                continue;
            };
            let retagged = tags != new_tags;
            if policy.apply(&config) || retagged {
                if let Some(slot) = write(&self.map).get_mut(&name) {
                    slot.1 = new_tags;
                }
                report.changed.push(name);
            }
        }
        report.removed.extend(removed);
    }

    fn check(&self, new: &FuseboxConfig) -> Result<(), super::InvalidConfig> {
        for (name, _, policy) in self.list() {
            if let Some((config, _)) = P::config_of(new, &name) {
                policy.check(&name, &config)?;
            }
        }
        Ok(())
    }

    fn statuses(&self) -> Vec<PolicyStatus> {
        self.list()
            .into_iter()
            .map(|(name, tags, p)| PolicyStatus {
                kind: p.kind(),
                mode: p.mode(),
                figures: p.figures(),
                name,
                tags,
            })
            .collect()
    }
}

impl Held for Bulkhead {
    type Config = super::BulkheadConfig;

    fn configured(config: &FuseboxConfig) -> Vec<String> {
        config.bulkhead_names().cloned().collect()
    }

    /// Every name has a bulkhead: its own table, or the defaults.
    fn config_of(config: &FuseboxConfig, name: &str) -> Option<(Self::Config, Tags)> {
        let c = config.bulkhead_config(name);
        let tags = c.tags.clone();
        Some((c, tags))
    }

    fn build(name: &str, config: &Self::Config, _clock: Option<&SharedClock>) -> Option<Self> {
        Some(config.build(name))
    }

    fn apply(&self, config: &Self::Config) -> bool {
        config.apply(self)
    }

    fn announce(&self, name: &str, tags: &Tags, observers: &[Arc<dyn Observer>]) {
        for o in observers {
            o.bulkhead_added(name, tags, self);
            o.policy_added(name, tags, Arc::new(self.clone()));
        }
    }
}

#[cfg(feature = "ratelimit")]
impl Held for crate::ratelimit::RateLimiter {
    type Config = crate::ratelimit::RateLimitConfig;

    fn configured(config: &FuseboxConfig) -> Vec<String> {
        config
            .dependency_names(|d| d.rate_limit.is_some())
            .cloned()
            .collect()
    }

    fn config_of(config: &FuseboxConfig, name: &str) -> Option<(Self::Config, Tags)> {
        config.rate_limit_config(name)
    }

    fn build(name: &str, config: &Self::Config, clock: Option<&SharedClock>) -> Option<Self> {
        let mut b = Self::builder().config(*config).name(name);
        if let Some(clock) = clock {
            b = b.clock(clock.clone());
        }
        b.build().ok()
    }

    /// The quota in force is compared, not the way it is written
    /// (`per_second = 1` and `period = "1s"` are one rate), and the mode.
    fn apply(&self, config: &Self::Config) -> bool {
        let in_force = self.config();
        let same_quota = matches!(
            (in_force.quota(), config.quota()),
            (Ok(a), Ok(b)) if a == b
        );
        if same_quota && in_force.mode == config.mode {
            return false;
        }
        self.reconfigure(*config).is_ok()
    }
}

/// A dependency's policy held by the registry that is built on its clock
/// and reconfigured in place: its type, its feature, its settings' type,
/// the `DependencyConfig` field that sets it and the `FuseboxConfig`
/// method that reads it.
macro_rules! dependency_policy {
    ($feature:literal, $policy:ty, $config:ty, $field:ident, $config_of:ident) => {
        #[cfg(feature = $feature)]
        impl Held for $policy {
            type Config = $config;

            fn configured(config: &FuseboxConfig) -> Vec<String> {
                config
                    .dependency_names(|d| d.$field.is_some())
                    .cloned()
                    .collect()
            }

            fn config_of(config: &FuseboxConfig, name: &str) -> Option<(Self::Config, Tags)> {
                config.$config_of(name)
            }

            fn build(
                _name: &str,
                config: &Self::Config,
                clock: Option<&SharedClock>,
            ) -> Option<Self> {
                let mut b = Self::builder().config(*config);
                if let Some(clock) = clock {
                    b = b.clock(clock.clone());
                }
                b.build().ok()
            }

            fn apply(&self, config: &Self::Config) -> bool {
                self.config() != *config && self.reconfigure(*config).is_ok()
            }

            fn check(&self, name: &str, config: &Self::Config) -> Result<(), super::InvalidConfig> {
                self.check(config).map_err(|e| {
                    super::InvalidConfig::from(e)
                        .under(&format!("dependencies.{name}.{}", stringify!($field)))
                })
            }
        }
    };
}

dependency_policy!(
    "limit",
    crate::limit::AdaptiveLimit,
    crate::limit::LimitConfig,
    limit,
    limit_config
);
dependency_policy!(
    "throttle",
    crate::throttle::Throttle,
    crate::throttle::ThrottleConfig,
    throttle,
    throttle_config
);
