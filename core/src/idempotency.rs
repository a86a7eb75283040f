//! Idempotency: one key per logical call, the same on every attempt, and a store that
//! dedupes repeated and concurrent submissions of the same business request.
//!
//! An [`IdempotencyKey`] is a 128-bit value written like a UUID. It is either drawn
//! from the core's RNG ([`IdempotencyKey::random`], UUID version 4) or derived from the
//! caller's own business identifier ([`IdempotencyKey::from_business_id`], UUID
//! version 8), so that a resubmitted request — after a crash, from another process —
//! carries the same key and the upstream (or the local store) recognises it.
//!
//! An [`IdempotencyStore`] records, per key, whether the work is in flight or done and
//! with which result. `MemoryStore` (feature `alloc`) is the bounded in-memory one.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use crate::error::ConfigError;
use crate::rng::Rng;
use crate::time::Timestamp;

#[cfg(feature = "alloc")]
pub use memory::MemoryStore;

/// A 128-bit idempotency key, written as a lowercase UUID
/// (`xxxxxxxx-xxxx-Mxxx-Nxxx-xxxxxxxxxxxx`).
///
/// `Debug` and `Display` both print that form; `FromStr` and [`IdempotencyKey::parse`]
/// read it; with the `serde` feature the key is (de)serialized as that string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(u128);

/// The prefix hashed before every business identifier, so that keys derived here never
/// coincide with an FNV hash of the same bytes made for another purpose. Changing it
/// changes every derived key: it is frozen by a test vector.
const DOMAIN: &[u8] = b"steadfast.idempotency-key.v1\0";

/// 128-bit FNV-1a parameters (the published offset basis and prime).
const FNV_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

const VERSION_MASK: u128 = 0xf << 76;
const VARIANT_MASK: u128 = 0xc << 60;
const VARIANT_RFC: u128 = 0x8 << 60;

/// Byte offsets of the hyphens in the 36-character form.
const fn is_hyphen(pos: usize) -> bool {
    matches!(pos, 8 | 13 | 18 | 23)
}

/// Where the two hex digits of each of the 16 bytes go in the 36-character form, in
/// order: every place but the hyphens', two by two.
const BYTE_AT: [u8; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

impl IdempotencyKey {
    /// A key derived from the caller's identifier of the business request (an order
    /// number, a batch line's id): the same bytes give the same key in every process,
    /// on every platform and in every release.
    ///
    /// The algorithm is fixed: 128-bit FNV-1a over a constant domain prefix followed by
    /// `id`, then the UUID version nibble set to 8 and the RFC 9562 variant bits set
    /// (122 hash bits remain). It is not a cryptographic hash: do not derive keys from
    /// identifiers an adversary chooses to collide with someone else's.
    pub fn from_business_id(id: &[u8]) -> IdempotencyKey {
        IdempotencyKey(with_version(fnv1a(fnv1a(FNV_OFFSET, DOMAIN), id), 8))
    }

    /// A fresh key from two `next_u64` draws of `rng` (the first draw is the high half),
    /// with the UUID version nibble set to 4 and the RFC 9562 variant bits set.
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> IdempotencyKey {
        let hi = u128::from(rng.next_u64());
        let lo = u128::from(rng.next_u64());
        IdempotencyKey(with_version(hi << 64 | lo, 4))
    }

    /// The key with exactly these 128 bits (no version or variant bits are set).
    pub const fn from_u128(bits: u128) -> IdempotencyKey {
        IdempotencyKey(bits)
    }

    /// The 128 bits of the key, the first character of the string form being the most
    /// significant nibble.
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The UUID version nibble: 4 for [`random`](Self::random) keys, 8 for
    /// [`from_business_id`](Self::from_business_id) keys, anything for parsed ones.
    pub const fn version(self) -> u8 {
        ((self.0 >> 76) & 0xf) as u8
    }

    /// Writes the 36-character lowercase form into `buf` and returns it as a `&str`.
    pub fn as_str<'b>(&self, buf: &'b mut [u8; 36]) -> &'b str {
        // Only ASCII was written, so this never falls back.
        core::str::from_utf8(self.as_ascii(buf)).unwrap_or_default()
    }

    /// Writes the 36-character lowercase form into `buf` and returns its bytes (for a
    /// caller that checks them again anyway, as a header value does).
    pub fn as_ascii<'b>(&self, buf: &'b mut [u8; 36]) -> &'b [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        *buf = [b'-'; 36];
        // A byte at a time, most significant first: the loop unrolls into stores.
        for (&at, byte) in BYTE_AT.iter().zip(self.0.to_be_bytes()) {
            let at = usize::from(at);
            if let Some(high) = buf.get_mut(at) {
                *high = HEX.get(usize::from(byte >> 4)).copied().unwrap_or(b'0');
            }
            if let Some(low) = buf.get_mut(at.saturating_add(1)) {
                *low = HEX.get(usize::from(byte & 0xf)).copied().unwrap_or(b'0');
            }
        }
        buf
    }

    /// Reads the 36-character form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hex digits in
    /// either case). Any version and variant are accepted, so a key a client brings
    /// along is kept as it is. `None` for anything else.
    pub fn parse(text: &[u8]) -> Option<IdempotencyKey> {
        if text.len() != 36 {
            return None;
        }
        let mut bits: u128 = 0;
        for (pos, &c) in text.iter().enumerate() {
            if is_hyphen(pos) {
                if c != b'-' {
                    return None;
                }
                continue;
            }
            let digit = char::from(c).to_digit(16)?;
            bits = bits.wrapping_shl(4) | u128::from(digit);
        }
        Some(IdempotencyKey(bits))
    }
}

/// Continues a 128-bit FNV-1a hash from state `hash` over `bytes`.
fn fnv1a(hash: u128, bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(hash, |h, &b| (h ^ u128::from(b)).wrapping_mul(FNV_PRIME))
}

fn with_version(bits: u128, version: u8) -> u128 {
    (bits & !VERSION_MASK & !VARIANT_MASK) | (u128::from(version) << 76) | VARIANT_RFC
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 36];
        f.write_str(self.as_str(&mut buf))
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The text given to [`IdempotencyKey::from_str`] is not a UUID-shaped key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseKeyError;

impl fmt::Display for ParseKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not an idempotency key (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")
    }
}

impl core::error::Error for ParseKeyError {}

impl FromStr for IdempotencyKey {
    type Err = ParseKeyError;

    fn from_str(s: &str) -> Result<IdempotencyKey, ParseKeyError> {
        IdempotencyKey::parse(s.as_bytes()).ok_or(ParseKeyError)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for IdempotencyKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 36];
        s.serialize_str(self.as_str(&mut buf))
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IdempotencyKey, D::Error> {
        struct Visitor;

        impl serde::de::Visitor<'_> for Visitor {
            type Value = IdempotencyKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an idempotency key such as \"0f8a1c2e-5b7d-4e9f-a3c1-2d4e6f8a0b1c\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IdempotencyKey, E> {
                IdempotencyKey::parse(v.as_bytes())
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }

            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<IdempotencyKey, E> {
                IdempotencyKey::parse(v)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Bytes(v), &self))
            }
        }

        d.deserialize_str(Visitor)
    }
}

/// The store's answer to [`IdempotencyStore::begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin<V> {
    /// No live record of the key: the caller now owns the work and must end it with
    /// [`IdempotencyStore::complete`] or [`IdempotencyStore::abandon`]. If it does
    /// neither, its ownership lapses after the store's lease.
    New,
    /// Another caller owns the work. Unless it completes or abandons first, its lease
    /// lapses at `lease_until`, when the next `begin` gets [`Begin::New`].
    InFlight {
        /// When the current owner's lease lapses.
        lease_until: Timestamp,
    },
    /// The work was done: here is its stored result (do not do it again).
    Done(V),
    /// The store is full of live in-flight entries and cannot take the key: nothing was
    /// recorded, the caller does not own the work. The earliest lease lapses at
    /// `retry_at`, after which a `begin` can succeed.
    Busy {
        /// When room can next be made.
        retry_at: Timestamp,
    },
}

/// Dedupes submissions of the same business request by [`IdempotencyKey`].
///
/// The protocol: `begin`; on [`Begin::New`] do the work, then `complete` with its result
/// (or `abandon` if it failed and may be tried again); on [`Begin::InFlight`] wait and
/// ask again; on [`Begin::Done`] use the stored result. Stores key on nothing else:
/// they cannot tell two owners of the same key apart.
pub trait IdempotencyStore<V> {
    /// Asks to start the work for `key` at `now`.
    fn begin(&mut self, now: Timestamp, key: IdempotencyKey) -> Begin<V>;

    /// Records the work for `key` as done with result `value`.
    fn complete(&mut self, now: Timestamp, key: IdempotencyKey, value: V);

    /// The owner of `key` gives the work up: the next `begin` gets [`Begin::New`].
    /// A done record is kept.
    fn abandon(&mut self, now: Timestamp, key: IdempotencyKey);

    /// The number of records held (in-flight and done, live or not yet reclaimed).
    fn len(&self) -> usize;

    /// Whether no record is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Configuration of a `MemoryStore` (feature `alloc`).
///
/// Defaults: `ttl` 24 h, `lease` 10 min, `capacity` 100 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct StoreConfig {
    /// How long a done result is kept and returned (`idempotency.ttl`).
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub ttl: Duration,
    /// How long an owner may hold a key without completing it before another caller may
    /// take the work over (`idempotency.lease`). Make it longer than a call's deadline.
    #[cfg_attr(feature = "serde", serde(with = "crate::duration::serde_human"))]
    pub lease: Duration,
    /// The most records held at once (`idempotency.capacity`).
    pub capacity: usize,
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig {
            ttl: Duration::from_secs(24 * 60 * 60),
            lease: Duration::from_secs(10 * 60),
            capacity: 100_000,
        }
    }
}

impl StoreConfig {
    /// Checks that every field can work: all must be above zero.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let zero = [
            (self.ttl.is_zero(), "idempotency.ttl"),
            (self.lease.is_zero(), "idempotency.lease"),
            (self.capacity == 0, "idempotency.capacity"),
        ];
        match zero.into_iter().find(|&(bad, _)| bad) {
            Some((_, field)) => Err(ConfigError::Zero { field }),
            None => Ok(()),
        }
    }
}

#[cfg(feature = "alloc")]
mod memory;

#[cfg(test)]
mod tests;
