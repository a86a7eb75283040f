//! Idempotency keys (one per logical call, the same on every attempt).
//!
//! STUB: replaced by the idempotency work; this minimal key lets the retry sequence compile.

/// A 128-bit idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(u128);

impl IdempotencyKey {
    /// A key from its 128-bit value.
    pub const fn from_u128(v: u128) -> IdempotencyKey {
        IdempotencyKey(v)
    }

    /// A random key drawn from `rng`.
    pub fn random<R: rand_core::Rng + ?Sized>(rng: &mut R) -> IdempotencyKey {
        IdempotencyKey(u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()))
    }
}
