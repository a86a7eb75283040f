//! Exponential backoff with jitter.
//!
//! The un-jittered delay before retry `n` (1 for the first retry) is
//! `d = min(cap, base × factor^(n-1))`. A [`Jitter`] mode then spreads it so that many
//! clients that failed together do not come back together.
//!
//! Every delay lies in `[0, cap]` for every retry number (0 and `u32::MAX` included):
//! the exponent is clamped before it is used, the arithmetic is done in `f64`
//! nanoseconds, and the conversion back saturates (`as u64` maps negatives and NaN to
//! zero and `+inf` to `u64::MAX`) before it is clamped to `cap`. Nothing here loops over
//! the retry number or allocates.
//!
//! Randomness comes from the caller's RNG: a mode that needs it draws exactly one
//! `next_u32` per delay, [`Jitter::None`] draws nothing, so a seed replays the same
//! delays.

use core::time::Duration;
use rand_core::Rng;

use crate::config::{ordered, within};
use crate::error::ConfigError;
use crate::rng::{fraction_of, unit_fraction};
use crate::time::nanos_of;

/// How a computed delay `d` is randomised.
///
/// In config files the modes are the strings `"none"`, `"full"`, `"equal"`,
/// `"decorrelated"`, and the table `{ proportional = 0.2 }`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Jitter {
    /// No randomness: exactly `d`. Draws nothing from the RNG.
    None,
    /// Uniform in `[0, d)`. Spreads retries the most; the default.
    #[default]
    Full,
    /// `d/2` plus uniform in `[0, d/2)`: never less than half the delay.
    Equal,
    /// AWS's "decorrelated jitter": uniform in `[base, 3 × previous delay)`, capped.
    ///
    /// It ignores the retry number and `factor`: the delay grows from the previous one,
    /// which [`Backoff`] keeps (starting at `base`; [`Backoff::reset`] restarts it).
    Decorrelated,
    /// `d × (1 ± f)`: uniform in `[d(1-f), d(1+f))`, then clamped to `[0, cap]`.
    /// `f` must lie in `[0, 1]`.
    Proportional(f64),
}

/// Exponential backoff parameters.
///
/// Default: `base` 500 ms, `factor` 2, `cap` 30 s, `jitter` [`Jitter::Full`]; so the
/// un-jittered delays are 0.5 s, 1 s, 2 s, 4 s, 8 s, 16 s, then 30 s.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct BackoffConfig {
    /// The delay before the first retry (before jitter). Zero means "retry at once".
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub base: Duration,
    /// The growth factor per retry; at least 1 and finite.
    pub factor: f64,
    /// The longest delay, jitter included. Above zero and at least `base`.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub cap: Duration,
    /// The jitter mode.
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            base: Duration::from_millis(500),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: Jitter::Full,
        }
    }
}

impl BackoffConfig {
    /// Checks the parameters: `cap` above zero, `base ≤ cap`, `factor` finite and at
    /// least 1, a proportional jitter fraction in `[0, 1]`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cap.is_zero() {
            return Err(ConfigError::Zero {
                field: "backoff.cap",
            });
        }
        ordered(self.base <= self.cap, "backoff.base", "backoff.cap")?;
        within("backoff.factor", self.factor, 1.0, f64::MAX)?;
        match self.jitter {
            Jitter::Proportional(f) => within("backoff.jitter", f, 0.0, 1.0),
            _ => Ok(()),
        }
    }
}

/// The backoff state of one call.
///
/// Only [`Jitter::Decorrelated`] has state that changes between delays (the previous
/// delay); for every other mode a delay depends only on the retry number and the RNG.
///
/// [`Backoff::new`] does not validate: an invalid config still yields delays in
/// `[0, cap]` (a `factor` below 1 or NaN acts as 1, a proportional fraction is clamped
/// to `[0, 1]`), so that no input can make it panic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    config: BackoffConfig,
    base_ns: f64,
    cap_ns: u64,
    cap_f: f64,
    /// Exponents above this all give a delay of at least `cap`, so clamping to it
    /// changes nothing but bounds the work.
    max_exp: u32,
    /// The proportional fraction, sanitised to `[0, 1]`.
    spread: f64,
    /// The previous decorrelated delay, in nanoseconds.
    prev_ns: f64,
    /// The clamped exponent of the last nominal delay computed, and that delay: every
    /// retry past the cap has the same exponent, so a run of them computes it once
    /// (the squaring chain is the slowest part of a delay).
    memo_exp: u32,
    memo_ns: f64,
    /// `base` in whole nanoseconds.
    base_whole: u64,
    /// The least shift of `base` that reaches `cap` (at most 64).
    cap_shift: u64,
    /// `log2(factor)` when the factor is a power of two (the default 2 is) and the
    /// delays fit the float path's exact range: then a delay is `base` shifted left,
    /// in integer arithmetic, and equal to what the float path computes.
    shift: Option<u32>,
    /// `memo_ns` in whole nanoseconds, clamped to `[0, cap]`.
    memo_whole: u64,
}

impl Backoff {
    /// A fresh backoff for one call.
    pub fn new(config: BackoffConfig) -> Backoff {
        let base_u = nanos_of(config.base);
        let cap_ns = nanos_of(config.cap);
        let base_ns = float_of(base_u);
        let cap_f = float_of(cap_ns);
        let max_exp =
            if base_u == 0 || base_u >= cap_ns || config.factor.is_nan() || config.factor <= 1.0 {
                0
            } else {
                // factor^k ≥ cap/base as soon as k × log2(factor) ≥ log2(cap/base). The
                // bit lengths bound the second from above (cap < 2^bits(cap), base ≥
                // 2^(bits(base) − 1)) and `log2_lower` the first from below, so k is safe;
                // a factor of 2 or more needs no division. The extra 2 absorbs rounding in
                // the repeated squaring.
                let doublings = base_u
                    .leading_zeros()
                    .saturating_sub(cap_ns.leading_zeros())
                    .saturating_add(1);
                let k = if config.factor >= 2.0 {
                    doublings
                } else {
                    (f64::from(doublings) / log2_lower(config.factor)) as u32
                };
                k.saturating_add(2)
            };
        let spread = match config.jitter {
            Jitter::Proportional(f) if f > 0.0 => f.min(1.0),
            _ => 0.0,
        };
        let first = base_ns.min(cap_f);
        Backoff {
            config,
            base_ns,
            cap_ns,
            cap_f,
            max_exp,
            spread,
            prev_ns: base_ns,
            memo_exp: 0,
            memo_ns: first,
            base_whole: base_u,
            cap_shift: cap_shift(base_u, cap_ns),
            shift: exact_shift(config.factor, base_u, cap_ns),
            memo_whole: clamp_to(first, cap_ns),
        }
    }

    /// The configuration this backoff runs on.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// Forgets the previous delay (only [`Jitter::Decorrelated`] remembers one), as if
    /// the backoff were new.
    pub fn reset(&mut self) {
        self.prev_ns = self.base_ns;
    }

    /// The un-jittered delay before retry number `retry` (1 for the first retry; 0 is
    /// treated as 1): `min(cap, base × factor^(retry-1))`.
    pub fn nominal(&self, retry: u32) -> Duration {
        let ns = match self.shift {
            Some(bits) => self.shifted(bits, retry),
            None => self.clamp_ns(self.nominal_ns(retry)),
        };
        Duration::from_nanos(ns)
    }

    /// The delay before retry number `retry` (1 for the first retry; 0 is treated as
    /// 1), jittered as configured. Always in `[0, cap]`.
    ///
    /// Draws exactly one `next_u32` from `rng` unless the mode is [`Jitter::None`].
    #[inline]
    pub fn next_delay<R: Rng + ?Sized>(&mut self, retry: u32, rng: &mut R) -> Duration {
        let ns = match self.config.jitter {
            Jitter::None => self.nominal_whole(retry),
            // Uniform in `[0, d)` in integer arithmetic: no float conversions.
            Jitter::Full => {
                let nominal = self.nominal_whole(retry);
                fraction_of(rng, nominal)
            }
            _ => self.jittered_float(retry, rng),
        };
        Duration::from_nanos(ns)
    }

    /// [`Backoff::nominal`] in whole nanoseconds: shifted when the factor is a power of
    /// two, else from the memo.
    #[inline]
    fn nominal_whole(&mut self, retry: u32) -> u64 {
        match self.shift {
            Some(bits) => self.shifted(bits, retry),
            None => {
                self.remember(retry);
                self.memo_whole
            }
        }
    }

    /// `min(cap, base × 2^(bits × (retry − 1)))`, exactly.
    #[inline]
    fn shifted(&self, bits: u32, retry: u32) -> u64 {
        let shift = u64::from(retry.saturating_sub(1)).wrapping_mul(u64::from(bits));
        if shift >= self.cap_shift {
            self.cap_ns
        } else {
            // shift < cap_shift ≤ 64, and below it the shifted base stays under cap.
            self.base_whole << shift
        }
    }

    /// The modes that scale or shift the nominal delay by a fraction.
    fn jittered_float<R: Rng + ?Sized>(&mut self, retry: u32, rng: &mut R) -> u64 {
        self.remember(retry);
        let ns = match self.config.jitter {
            Jitter::Equal => self.memo_ns * (0.5 + 0.5 * unit_fraction(rng)),
            Jitter::Proportional(_) => {
                let u = unit_fraction(rng);
                self.memo_ns * (1.0 + self.spread * (2.0 * u - 1.0))
            }
            Jitter::Decorrelated => {
                let high = (self.prev_ns * 3.0).max(self.base_ns);
                let x = (self.base_ns + (high - self.base_ns) * unit_fraction(rng)).min(self.cap_f);
                self.prev_ns = x;
                x
            }
            Jitter::None | Jitter::Full => self.memo_ns,
        };
        self.clamp_ns(ns)
    }

    /// `min(cap, base × factor^(retry-1))` in nanoseconds, never NaN.
    #[inline]
    fn nominal_ns(&self, retry: u32) -> f64 {
        let n = retry.saturating_sub(1).min(self.max_exp);
        grow(self.base_ns, self.config.factor, self.cap_f, n)
    }

    /// Makes the memo hold retry `retry`'s nominal delay, computing it only when the
    /// clamped exponent changed.
    #[inline]
    fn remember(&mut self, retry: u32) {
        let n = retry.saturating_sub(1).min(self.max_exp);
        if n != self.memo_exp {
            self.memo_ns = grow(self.base_ns, self.config.factor, self.cap_f, n);
            self.memo_whole = self.clamp_ns(self.memo_ns);
            self.memo_exp = n;
        }
    }

    /// Saturating conversion to whole nanoseconds in `[0, cap]` (NaN and negatives to 0).
    #[inline]
    fn clamp_ns(&self, ns: f64) -> u64 {
        clamp_to(ns, self.cap_ns)
    }
}

/// `k` when `factor` is exactly `2^k` (`k ≥ 1`), `base` is positive and both `base`
/// and `cap` are exact as floats (below 2^53 ns, 104 days): where shifting `base` gives
/// exactly the float path's delays.
fn exact_shift(factor: f64, base: u64, cap: u64) -> Option<u32> {
    let bits = factor.to_bits();
    let exponent = (bits >> 52) & 0x7ff;
    let power_of_two = bits & ((1u64 << 52) - 1) == 0 && exponent > 1023 && exponent < 0x7ff;
    let exact = base > 0 && base < (1u64 << 53) && cap < (1u64 << 53);
    (power_of_two && exact).then(|| (exponent.saturating_sub(1023)) as u32)
}

/// The least `s` with `base × 2^s ≥ cap` (64 when none below 64 does, as for a zero
/// base, whose delays `exact_shift` sends down the float path).
fn cap_shift(base: u64, cap: u64) -> u64 {
    if base >= cap {
        return 0;
    }
    if base == 0 {
        return 64;
    }
    // Shifted to cap's bit length the base is either at least cap, or one more doubling
    // is.
    let s = base.leading_zeros().saturating_sub(cap.leading_zeros());
    let aligned = base.checked_shl(s).unwrap_or(u64::MAX);
    u64::from(if aligned >= cap {
        s
    } else {
        s.saturating_add(1)
    })
}

/// `x` as a float; through `i64` (one instruction, exact for the same values) below
/// 2^63.
#[inline]
fn float_of(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(signed) => signed as f64,
        Err(_) => x as f64,
    }
}

/// `ns` in whole nanoseconds within `[0, cap]` (NaN and negatives to 0). Converting
/// through `i64` is one instruction where `u64` takes a branchy sequence; delays past
/// 2^63 ns (292 years) are cut there.
#[inline]
fn clamp_to(ns: f64, cap: u64) -> u64 {
    ((ns as i64).max(0) as u64).min(cap)
}

/// `min(cap, base × factor^n)`, by square-and-multiply over the bits of `n`: a handful
/// of iterations (4 at most for the default config), never one per retry.
#[inline]
fn grow(base_ns: f64, factor: f64, cap_f: f64, mut n: u32) -> f64 {
    let mut acc = 1.0;
    let mut f = factor;
    while n != 0 {
        if n & 1 == 1 {
            acc *= f;
        }
        f *= f;
        n >>= 1;
    }
    // base > 0 here unless max_exp is 0, so the product is never 0 × inf.
    (base_ns * acc).min(cap_f)
}

/// A lower bound on `log2(x)` for finite `x > 1`: the binary exponent plus the mantissa
/// fraction, since `log2(1 + m) ≥ m` on `[0, 1]`. Positive for every `x > 1`.
fn log2_lower(x: f64) -> f64 {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as f64 - 1023.0;
    let frac = (bits & ((1u64 << 52) - 1)) as f64 * (1.0 / (1u64 << 52) as f64);
    exp + frac
}

#[cfg(test)]
mod tests;
