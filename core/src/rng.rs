//! Seeded randomness: every jitter and every drawn idempotency key comes from here.
//!
//! The core owns a [`ChaCha8Rng`] made from a caller's 32-byte seed. ChaCha8 is portable
//! (the same seed gives the same stream on every platform and release, unlike `StdRng`),
//! so a seed printed by a failing test replays the same run. Only `next_u64` and
//! `next_u32` are used, and the mapping to floats and ranges is our own, so a change in
//! `rand` cannot alter a trace.

pub use rand_chacha::ChaCha8Rng;
pub use rand_core::{Rng, SeedableRng};

/// The RNG the core uses unless the caller brings its own.
pub type CoreRng = ChaCha8Rng;

/// A 32-byte seed.
pub type Seed = [u8; 32];

/// A ChaCha8 generator from a 32-byte seed.
pub fn from_seed(seed: Seed) -> CoreRng {
    ChaCha8Rng::from_seed(seed)
}

/// A ChaCha8 generator from a `u64` (convenient for tests and command-line seeds).
pub fn from_u64(seed: u64) -> CoreRng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A uniform float in `[0, 1)` with 53 bits of precision.
pub fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // The top 53 bits fill an f64 mantissa exactly; the product is < 1.0.
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform integer in `[0, n)`; zero when `n` is zero.
///
/// Uses the widening-multiply method, whose bias (at most `n / 2^64`) is far below
/// anything jitter can observe.
pub fn below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let wide = u128::from(rng.next_u64()).wrapping_mul(u128::from(n));
    (wide >> 64) as u64
}

/// A uniform draw from the 2^32 fractions `k / 2^32` in `[0, 1)`, from one
/// `next_u32` (half the stream a `next_u64` takes): for jitter, where a resolution of
/// 2^-32 of the delay (7 ns of 30 s) cannot be told from exact.
#[inline]
pub fn unit_fraction<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    f64::from(rng.next_u32()) * (1.0 / (1u64 << 32) as f64)
}

/// `⌊n × u⌋` for `u` drawn as by [`unit_fraction`], in integer arithmetic: in
/// `[0, n)`, zero when `n` is zero.
#[inline]
pub fn fraction_of<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let wide = u128::from(n).wrapping_mul(u128::from(rng.next_u32()));
    (wide >> 32) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = from_u64(7);
        let mut b = from_u64(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = from_u64(8);
        assert_ne!(from_u64(7).next_u64(), c.next_u64());
    }

    #[test]
    fn unit_and_below_stay_in_range() {
        let mut r = from_u64(1);
        for _ in 0..10_000 {
            let u = unit_f64(&mut r);
            assert!((0.0..1.0).contains(&u), "{u}");
            assert!(below(&mut r, 10) < 10);
        }
        assert_eq!(below(&mut r, 0), 0);
    }

    #[test]
    fn fractions_stay_in_range_and_agree() {
        let mut r = from_u64(2);
        for _ in 0..10_000 {
            let u = unit_fraction(&mut r);
            assert!((0.0..1.0).contains(&u), "{u}");
            assert!(fraction_of(&mut r, 10) < 10);
        }
        assert_eq!(fraction_of(&mut r, 0), 0);
        assert_eq!(fraction_of(&mut r, 1), 0);
        // One draw, one fraction: the integer and the float forms agree.
        for n in [1u64, 7, 1_000_000_007, 30_000_000_000, u64::MAX >> 11] {
            let (mut a, mut b) = (from_u64(n), from_u64(n));
            let whole = fraction_of(&mut a, n);
            let float = (n as f64 * unit_fraction(&mut b)) as u64;
            assert!(
                whole.abs_diff(float) <= 1 + n / (1 << 40),
                "{n}: {whole} vs {float}"
            );
        }
    }
}
