//! Seeded draws that are a pure function of the seed, a request's identity and how
//! many times that identity was seen: never of arrival order, so concurrent clients
//! and the simulator see the same world.

use steadfast_core::rng::{self, CoreRng};

/// FNV-1a, 64 bits, over parts with a separator: stable across platforms and releases
/// (unlike `DefaultHasher`), and `("ab", "c")` differs from `("a", "bc")`.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        h = (h ^ 0xff).wrapping_mul(PRIME);
    }
    h
}

/// The SplitMix64 finaliser: spreads the bits of `x`.
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A generator from a `u64`.
pub(crate) fn rng(seed: u64) -> CoreRng {
    rng::from_u64(seed)
}

/// The generator of one request: the server seed, the request's identity and how
/// many times that identity was seen before.
pub(crate) fn request_rng(seed: u64, identity: u64, seen_before: u64) -> CoreRng {
    let mixed = splitmix(seed) ^ identity.rotate_left(17) ^ splitmix(seen_before.wrapping_add(1));
    rng(mixed)
}

/// Letters and digits from a seed, for ids like `chatcmpl-…`, `msg_…` and `req_…`.
pub(crate) fn alnum_id(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut r = rng(seed);
    (0..len)
        .map(|_| {
            let i = rng::below(&mut r, ALPHABET.len() as u64);
            let b = usize::try_from(i).ok().and_then(|i| ALPHABET.get(i));
            char::from(b.copied().unwrap_or(b'x'))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use steadfast_core::rng::Rng;

    #[test]
    fn splitmix_is_the_reference_generator() {
        // The first outputs of SplitMix64 seeded with 0 (Vigna's reference).
        assert_eq!(splitmix(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix(0x9e37_79b9_7f4a_7c15), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn draws_are_pure() {
        assert_eq!(
            request_rng(7, 99, 0).next_u64(),
            request_rng(7, 99, 0).next_u64()
        );
        assert_ne!(
            request_rng(7, 99, 0).next_u64(),
            request_rng(7, 99, 1).next_u64()
        );
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(alnum_id(5, 24), alnum_id(5, 24));
        assert_eq!(alnum_id(5, 24).len(), 24);
    }
}
