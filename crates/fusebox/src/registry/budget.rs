//! What a config costs: the memory its breakers will take, reckoned from
//! the settings before anything is built, and the budget a registry holds
//! a whole config to.

use super::config::FuseboxConfig;
use super::error::InvalidConfig;

/// The memory budget of a registry's config when
/// [`FuseboxBuilder::config_budget`](super::FuseboxBuilder::config_budget)
/// sets none: 64 MiB.
///
/// Any one breaker fits in it several times over (the largest windows
/// validation accepts take about 10 MB), a config of ordinary breakers takes
/// a small part of it (a count window of 100 or a time window of 10 buckets
/// is under 8 KiB a breaker: 64 MiB is over 8,000 of them), and yet a file,
/// or a reload of a file someone else edits, cannot make the process
/// allocate more than a service can spare without noticing.
pub const DEFAULT_CONFIG_BUDGET: usize = 64 << 20;

/// One breaker table's cost: its key and bytes.
struct Cost {
    key: String,
    bytes: usize,
}

impl FuseboxConfig {
    /// About how many bytes the breakers this config names take once a
    /// registry builds them, worked out from their effective settings
    /// ([`BreakerConfig::memory_estimate`](crate::BreakerConfig::memory_estimate))
    /// without building any. A table whose settings are invalid counts
    /// nothing ([`validate`](FuseboxConfig::validate) refuses it).
    ///
    /// Breakers a registry builds later, on first use of a name the config
    /// does not have, are not counted: each costs what `[defaults.breaker]`
    /// does. Bulkheads, rate limiters and retries are not counted either:
    /// each has a fixed size of a few hundred bytes, whatever its settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerEntry, FuseboxConfig};
    /// use fusebox::BreakerConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.breakers.insert("payments".into(), BreakerEntry::from(BreakerConfig {
    ///     failure_rate: Some(0.5),
    ///     count_window: Some(1_000_000),
    ///     ..Default::default()
    /// }));
    /// assert!(config.memory_estimate() > 1_000_000); // a byte per call of the window
    /// ```
    pub fn memory_estimate(&self) -> usize {
        self.breaker_costs()
            .iter()
            .fold(0, |sum, c| sum.saturating_add(c.bytes))
    }

    /// Every named breaker table's cost, in config order.
    fn breaker_costs(&self) -> Vec<Cost> {
        let key = |name: &String| {
            if self.dependencies.contains_key(name) {
                format!("dependencies.{name}.breaker")
            } else {
                format!("breakers.{name}")
            }
        };
        self.breaker_names()
            .map(|name| Cost {
                key: key(name),
                bytes: self
                    .breaker_config(name)
                    .settings
                    .memory_estimate()
                    .unwrap_or(0),
            })
            .collect()
    }

    /// Refuses a config whose breakers would take more than `budget` bytes
    /// (see [`memory_estimate`](FuseboxConfig::memory_estimate)), naming
    /// its most expensive breaker table, or whose default breaker alone
    /// would. Reads the settings only: nothing is allocated.
    pub(crate) fn check_budget(&self, budget: usize) -> Result<(), InvalidConfig> {
        let advice = "shrink its window (count_window, buckets) or raise the budget \
                      (FuseboxBuilder::config_budget)";
        let default = self
            .defaults
            .breaker
            .settings
            .memory_estimate()
            .unwrap_or(0);
        if default > budget {
            return Err(InvalidConfig::new(
                "defaults.breaker",
                format!(
                    "every breaker built from the defaults would take about {}, over the \
                     config budget of {}; {advice}",
                    bytes(default),
                    bytes(budget),
                ),
            ));
        }
        let costs = self.breaker_costs();
        let total = costs.iter().fold(0usize, |s, c| s.saturating_add(c.bytes));
        if total <= budget {
            return Ok(());
        }
        // The first of the most expensive: the table to look at first.
        let Some(worst) = costs.iter().rev().max_by_key(|c| c.bytes) else {
            return Ok(());
        };
        let all = if costs.len() == 1 {
            String::new()
        } else {
            format!(
                "; the config's {} breakers would take about {} in all",
                costs.len(),
                bytes(total)
            )
        };
        Err(InvalidConfig::new(
            worst.key.clone(),
            format!(
                "this breaker would take about {}{all}, over the config budget of {}; {advice}",
                bytes(worst.bytes),
                bytes(budget),
            ),
        ))
    }
}

/// `n` bytes for a reader: `812 bytes`, `5.4 MiB (5637504 bytes)`.
fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let value = format!("{value:.1}");
    let value = value.strip_suffix(".0").unwrap_or(&value);
    format!("{value} {} ({n} bytes)", UNITS[unit])
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bytes_reads_well() {
        assert_eq!(bytes(812), "812 bytes");
        assert_eq!(bytes(64 << 20), "64 MiB (67108864 bytes)");
        assert_eq!(bytes(5_637_504), "5.4 MiB (5637504 bytes)");
        assert!(bytes(usize::MAX).contains(" TiB ("));
    }
}
