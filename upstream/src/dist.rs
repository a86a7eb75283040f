//! Distributions of spans (latencies, server-sent waits), drawn from the seeded RNG.

use core::time::Duration;

use serde::{Deserialize, Serialize};
use steadfast_core::duration::serde_human;
use steadfast_core::rng::{CoreRng, unit_f64};

/// The longest span a distribution yields; a log-normal tail is cut here.
pub const MAX_SPAN: Duration = Duration::from_secs(3600);

/// A distribution of spans.
///
/// In TOML: `{ fixed = "200ms" }`, `{ uniform = { min = "100ms", max = "1s" } }`,
/// `{ lognormal = { median = "800ms", sigma = 0.5 } }` or
/// `{ tail = { min = "50ms", max = "150ms", share = 0.2, held = "3s" } }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Dist {
    /// Always this span.
    Fixed(#[serde(with = "serde_human")] Duration),
    /// Uniform between `min` and `max`.
    Uniform {
        /// The shortest span.
        #[serde(with = "serde_human")]
        min: Duration,
        /// The longest span.
        #[serde(with = "serde_human")]
        max: Duration,
    },
    /// Log-normal: `median × e^(sigma × N(0, 1))`, cut at [`MAX_SPAN`].
    Lognormal {
        /// The median span.
        #[serde(with = "serde_human")]
        median: Duration,
        /// The spread of the logarithm, in `[0, 5]`.
        sigma: f64,
    },
    /// A slow tail: a `share` of draws take `held`, the rest are uniform between `min`
    /// and `max` (one uniform draw either way).
    Tail {
        /// The shortest ordinary span.
        #[serde(with = "serde_human")]
        min: Duration,
        /// The longest ordinary span.
        #[serde(with = "serde_human")]
        max: Duration,
        /// The share of draws held, in `[0, 1]`.
        share: f64,
        /// How long a held draw takes.
        #[serde(with = "serde_human")]
        held: Duration,
    },
}

impl Dist {
    /// One draw.
    pub fn sample(&self, rng: &mut CoreRng) -> Duration {
        match *self {
            Dist::Fixed(d) => d,
            Dist::Uniform { min, max } => {
                let span = max.saturating_sub(min);
                min.saturating_add(span.mul_f64(unit_f64(rng)))
            }
            Dist::Lognormal { median, sigma } => {
                let factor = (sigma * standard_normal(rng)).exp();
                let secs = (median.as_secs_f64() * factor).min(MAX_SPAN.as_secs_f64());
                Duration::try_from_secs_f64(secs).unwrap_or(MAX_SPAN)
            }
            Dist::Tail {
                min,
                max,
                share,
                held,
            } => {
                let u = unit_f64(rng);
                if u < share {
                    return held;
                }
                let rest = ((u - share) / (1.0 - share)).clamp(0.0, 1.0);
                min.saturating_add(max.saturating_sub(min).mul_f64(rest))
            }
        }
    }

    /// Checks the parameters; the error is `(field suffix, problem)`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        match *self {
            Dist::Fixed(_) => Ok(()),
            Dist::Uniform { min, max } if min > max => Err((
                "uniform.min",
                format!("{} is greater than max ({})", human(min), human(max)),
            )),
            Dist::Uniform { .. } => Ok(()),
            Dist::Lognormal { median, .. } if median.is_zero() => {
                Err(("lognormal.median", "must be greater than zero".into()))
            }
            Dist::Lognormal { sigma, .. } if !(0.0..=5.0).contains(&sigma) => {
                Err(("lognormal.sigma", format!("{sigma} is outside [0, 5]")))
            }
            Dist::Lognormal { .. } => Ok(()),
            Dist::Tail { min, max, .. } if min > max => Err((
                "tail.min",
                format!("{} is greater than max ({})", human(min), human(max)),
            )),
            Dist::Tail { share, .. } if !(0.0..=1.0).contains(&share) => {
                Err(("tail.share", format!("{share} is outside [0, 1]")))
            }
            Dist::Tail { .. } => Ok(()),
        }
    }
}

/// A standard normal draw (Box–Muller, one of the pair).
fn standard_normal(rng: &mut CoreRng) -> f64 {
    // 1 − u is in (0, 1], so the logarithm is finite.
    let u1 = 1.0 - unit_f64(rng);
    let u2 = unit_f64(rng);
    (-2.0 * u1.ln()).sqrt() * (core::f64::consts::TAU * u2).cos()
}

/// A span in the core's human grammar (`1m30s`, `250ms`).
pub fn human(d: Duration) -> String {
    steadfast_core::duration::Human(d).to_string()
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use steadfast_core::rng;

    #[test]
    fn draws_stay_in_range_and_the_median_holds() {
        let mut r = rng::from_u64(3);
        let u = Dist::Uniform {
            min: Duration::from_millis(100),
            max: Duration::from_millis(300),
        };
        for _ in 0..1000 {
            let d = u.sample(&mut r);
            assert!(d >= Duration::from_millis(100) && d <= Duration::from_millis(300));
        }
        let l = Dist::Lognormal {
            median: Duration::from_millis(500),
            sigma: 0.8,
        };
        let mut v: Vec<Duration> = (0..4001).map(|_| l.sample(&mut r)).collect();
        v.sort();
        let median = v[2000].as_secs_f64();
        assert!((0.45..0.55).contains(&median), "median {median}");
    }

    #[test]
    fn bad_parameters_are_named() {
        let u = Dist::Uniform {
            min: Duration::from_secs(2),
            max: Duration::from_secs(1),
        };
        assert_eq!(u.check().unwrap_err().0, "uniform.min");
        let l = Dist::Lognormal {
            median: Duration::from_secs(1),
            sigma: 9.0,
        };
        assert_eq!(l.check().unwrap_err().0, "lognormal.sigma");
    }
}
