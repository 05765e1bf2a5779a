//! How long a tripped breaker stays open: a pure decision on numbers.

/// How long the breaker stays open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum OpenPeriod {
    Fixed(u64),
    Backoff { initial: u64, factor: f64, max: u64 },
}

impl OpenPeriod {
    /// The open period after `trips` earlier trips without a close in between.
    pub(crate) fn after(&self, trips: u32) -> u64 {
        match *self {
            OpenPeriod::Fixed(d) => d,
            OpenPeriod::Backoff {
                initial,
                factor,
                max,
            } => {
                let grown = initial as f64 * factor.powi(trips.min(1_000) as i32);
                if grown.is_finite() && grown < max as f64 {
                    grown as u64
                } else {
                    max
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let p = OpenPeriod::Backoff {
            initial: 100,
            factor: 2.0,
            max: 700,
        };
        assert_eq!(
            (0..5).map(|t| p.after(t)).collect::<Vec<_>>(),
            vec![100, 200, 400, 700, 700]
        );
        assert_eq!(p.after(u32::MAX), 700);
    }

    proptest::proptest! {
        #[test]
        fn backoff_stays_within_bounds(initial in 1u64..1_000_000, factor in 1.0f64..10.0, extra in 0u64..10_000_000, trips in 0u32..200) {
            let max = initial + extra;
            let d = OpenPeriod::Backoff { initial, factor, max }.after(trips);
            proptest::prop_assert!(d >= initial && d <= max);
        }
    }
}
