//! The three update rules, as pure functions of one closed window: no
//! clock, no atomics, so each is tested on synthetic windows.

use super::config::{Algorithm, LimitConfig};

/// What one closed window saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// The average round-trip time of its successes, in nanoseconds (0 when
    /// it had none).
    pub(crate) rtt: f64,
    /// The most calls in flight at any admission during it.
    pub(crate) max_in_flight: u64,
    /// Whether any call was dropped (timed out, overloaded).
    pub(crate) dropped: bool,
}

/// An algorithm's memory between windows.
#[derive(Debug, Clone)]
pub(crate) struct Estimator {
    /// The limit, unrounded.
    pub(crate) limit: f64,
    /// The no-load baseline in nanoseconds (0 = not measured yet): Vegas's
    /// lowest window since the last probe, Gradient2's long average.
    pub(crate) baseline: f64,
    /// Gradient2: windows averaged into the baseline (up to the warm-up).
    long_count: u32,
    /// Vegas: windows until the baseline is measured again.
    until_probe: u32,
    /// Vegas, while the baseline is measured: the limit to go back to.
    probing: Option<f64>,
    /// The jitter's state (splitmix64; deterministic).
    rng: u64,
}

/// Gradient2's long average is a plain mean over this many windows before
/// it starts decaying.
const WARMUP: u32 = 10;
/// Gradient2's headroom: calls allowed to queue on top of the estimate.
const QUEUE: f64 = 4.0;
/// Vegas measures its baseline at this limit.
const PROBE_LIMIT: f64 = 3.0;
/// Gradient2's smoothing of each new limit into the old.
const SMOOTHING: f64 = 0.2;

/// `max(1, floor(log10(limit)))`, Vegas's step.
fn log10(limit: f64) -> f64 {
    limit.max(1.0).log10().floor().max(1.0)
}

impl Estimator {
    pub(crate) fn new(config: &LimitConfig) -> Self {
        let mut e = Estimator {
            limit: f64::from(config.initial),
            baseline: 0.0,
            long_count: 0,
            until_probe: 0,
            probing: None,
            rng: 0x9E37_79B9_7F4A_7C15,
        };
        e.until_probe = e.next_probe(config.probe_every);
        e
    }

    /// Between `every / 2` and `every` windows.
    fn next_probe(&mut self, every: u32) -> u32 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = crate::policy::mix(self.rng);
        let half = every / 2;
        half + u32::try_from(z % u64::from(every - half + 1)).unwrap_or(0)
    }

    /// The limit after `w`, within `[min, max]`.
    pub(crate) fn update(&mut self, config: &LimitConfig, w: Window) -> f64 {
        let min = f64::from(config.min);
        let max = f64::from(config.max);
        let old = self.limit;
        if config.algorithm == Algorithm::Vegas && w.rtt > 0.0 {
            if let Some(saved) = self.probing.take() {
                // The window ran at the probe's limit: its latency is the
                // no-load baseline; the limit goes back to where it was
                // (cut if the probe saw a drop).
                self.baseline = w.rtt;
                let back = if w.dropped {
                    saved * config.backoff
                } else {
                    saved
                };
                self.limit = back.clamp(min, max);
                return self.limit;
            }
        }
        let new = if w.dropped {
            // Every algorithm: a drop cuts multiplicatively.
            old * config.backoff
        } else {
            match config.algorithm {
                Algorithm::Aimd => self.aimd(w),
                Algorithm::Vegas => self.vegas(config, w),
                Algorithm::Gradient2 => self.gradient2(config, w),
            }
        };
        // Never grows while the limit was not in use (at most half of it
        // in flight), and never more than doubles in one window.
        let new = if new > old && (w.max_in_flight as f64) * 2.0 < old {
            old
        } else {
            new.min(old * 2.0)
        };
        self.limit = new.clamp(min, max);
        self.limit
    }

    fn aimd(&mut self, _w: Window) -> f64 {
        self.limit + 1.0
    }

    fn vegas(&mut self, config: &LimitConfig, w: Window) -> f64 {
        let limit = self.limit;
        if w.rtt <= 0.0 {
            return limit;
        }
        self.until_probe = self.until_probe.saturating_sub(1);
        if self.until_probe == 0 {
            // Forget the baseline and measure it again: one window at a
            // limit low enough not to queue (3, within [min, max]); the
            // generation fence keeps answers of calls admitted before it
            // out of that window.
            self.until_probe = self.next_probe(config.probe_every);
            self.probing = Some(limit);
            return PROBE_LIMIT.clamp(f64::from(config.min), f64::from(config.max));
        }
        if self.baseline <= 0.0 || w.rtt < self.baseline {
            self.baseline = w.rtt;
            return limit;
        }
        let queue = (limit * (1.0 - self.baseline / w.rtt)).ceil();
        let step = log10(limit);
        if queue <= step {
            limit + 6.0 * step
        } else if queue < 3.0 * step {
            limit + step
        } else if queue > 6.0 * step {
            limit - step
        } else {
            limit
        }
    }

    fn gradient2(&mut self, config: &LimitConfig, w: Window) -> f64 {
        let limit = self.limit;
        if w.rtt <= 0.0 {
            return limit;
        }
        let short = w.rtt;
        if self.long_count < WARMUP {
            self.long_count += 1;
            let n = f64::from(self.long_count);
            self.baseline += (short - self.baseline) / n;
        } else {
            let factor = 2.0 / (f64::from(config.long_window) + 1.0);
            self.baseline = self.baseline * (1.0 - factor) + short * factor;
        }
        // A baseline far above the current latency (after an overload
        // ended) decays quickly instead of slowly.
        if self.baseline / short > 2.0 {
            self.baseline *= 0.95;
        }
        let gradient = (config.tolerance * self.baseline / short).clamp(0.5, 1.0);
        let target = limit * gradient + QUEUE;
        limit * (1.0 - SMOOTHING) + target * SMOOTHING
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1_000_000.0;

    fn run(config: &LimitConfig, windows: impl IntoIterator<Item = (f64, bool)>) -> Vec<f64> {
        let mut e = Estimator::new(config);
        windows
            .into_iter()
            .map(|(rtt, dropped)| {
                let busy = e.limit.ceil() as u64;
                e.update(
                    config,
                    Window {
                        rtt,
                        max_in_flight: busy,
                        dropped,
                    },
                )
            })
            .collect()
    }

    fn flat(n: usize) -> impl Iterator<Item = (f64, bool)> {
        std::iter::repeat_n((50.0 * MS, false), n)
    }

    #[test]
    fn every_algorithm_rises_on_flat_latency_and_stays_under_max() {
        for a in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
            let c = LimitConfig::new(a).max(60);
            let limits = run(&c, flat(400));
            assert!(limits[30] > 20.0, "{a}: {}", limits[30]);
            assert!(limits.iter().all(|l| (1.0..=60.0).contains(l)), "{a}");
            assert_eq!(*limits.last().unwrap(), 60.0, "{a}");
        }
    }

    #[test]
    fn latency_driven_algorithms_fall_when_latency_grows() {
        for a in [Algorithm::Vegas, Algorithm::Gradient2] {
            let c = LimitConfig {
                probe_every: 1000,
                ..LimitConfig::new(a).min(3)
            };
            // Flat, then the dependency slows down fourfold (for fewer
            // windows than Vegas's earliest re-probe, which would learn
            // 200 ms as the new no-load latency).
            let mut e = Estimator::new(&c);
            for _ in 0..12 {
                e.update(
                    &c,
                    Window {
                        rtt: 50.0 * MS,
                        max_in_flight: 20,
                        dropped: false,
                    },
                );
            }
            let before = e.limit;
            for _ in 0..10 {
                let busy = e.limit.ceil() as u64;
                e.update(
                    &c,
                    Window {
                        rtt: 200.0 * MS,
                        max_in_flight: busy,
                        dropped: false,
                    },
                );
                assert!(e.limit >= 3.0);
            }
            assert!(e.limit < before, "{a}: {before} -> {}", e.limit);
        }
    }

    #[test]
    fn vegas_settles_near_the_servers_concurrency() {
        let c = LimitConfig::new(Algorithm::Vegas);
        let mut e = Estimator::new(&c);
        let mut tail = Vec::new();
        for i in 0..300 {
            let rtt = 50.0 * MS * (e.limit / 8.0).max(1.0);
            let busy = e.limit.ceil() as u64;
            e.update(
                &c,
                Window {
                    rtt,
                    max_in_flight: busy,
                    dropped: false,
                },
            );
            if i >= 100 {
                tail.push(e.limit);
            }
        }
        tail.sort_by(f64::total_cmp);
        let median = tail[tail.len() / 2];
        assert!((8.0..=16.0).contains(&median), "{median}");
    }

    #[test]
    fn a_drop_cuts_multiplicatively_down_to_min() {
        for a in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
            let c = LimitConfig::new(a).min(5).initial(100);
            let limits = run(&c, std::iter::repeat_n((50.0 * MS, true), 60));
            assert!((limits[0] - 90.0).abs() < 1e-9, "{a}: {}", limits[0]);
            assert_eq!(*limits.last().unwrap(), 5.0, "{a}");
        }
    }

    #[test]
    fn an_idle_limit_never_grows() {
        for a in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
            let c = LimitConfig::new(a);
            let mut e = Estimator::new(&c);
            for _ in 0..100 {
                e.update(
                    &c,
                    Window {
                        rtt: 50.0 * MS,
                        max_in_flight: 9,
                        dropped: false,
                    },
                );
            }
            assert!(e.limit <= 20.0, "{a}: {}", e.limit);
        }
    }

    #[test]
    fn the_vegas_baseline_is_reprobed_so_it_cannot_stick() {
        let c = LimitConfig::new(Algorithm::Vegas);
        let mut e = Estimator::new(&c);
        // One lucky fast window, then the dependency is really 100 ms.
        e.update(
            &c,
            Window {
                rtt: 5.0 * MS,
                max_in_flight: 20,
                dropped: false,
            },
        );
        assert_eq!(e.baseline, 5.0 * MS);
        // A re-probe comes within `probe_every` windows.
        for _ in 0..=c.probe_every {
            e.update(
                &c,
                Window {
                    rtt: 100.0 * MS,
                    max_in_flight: 20,
                    dropped: false,
                },
            );
        }
        assert_eq!(e.baseline, 100.0 * MS);
    }

    #[test]
    fn the_gradient2_baseline_decays_after_a_slow_spell() {
        let c = LimitConfig::new(Algorithm::Gradient2);
        let mut e = Estimator::new(&c);
        for _ in 0..10 {
            e.update(
                &c,
                Window {
                    rtt: 500.0 * MS,
                    max_in_flight: 20,
                    dropped: false,
                },
            );
        }
        for _ in 0..100 {
            e.update(
                &c,
                Window {
                    rtt: 50.0 * MS,
                    max_in_flight: 20,
                    dropped: false,
                },
            );
        }
        assert!(e.baseline < 110.0 * MS, "{}", e.baseline / MS);
    }
}
