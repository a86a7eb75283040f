//! Human-readable durations: `"250ms"`, `"1.5s"`, `"6m0s"`, `"1h2m3.5s"`.
//!
//! One grammar serves configuration files and OpenAI's `x-ratelimit-reset-*` headers:
//!
//! ```text
//! duration = *WS ( "0" / 1*group ) *WS
//! group    = number unit                  ; no spaces inside or between groups
//! number   = 1*DIGIT [ "." *DIGIT ] / "." 1*DIGIT
//! unit     = "ns" / "us" / "µs" / "μs" / "ms" / "s" / "m" / "h" / "d"
//! ```
//!
//! - A point needs a digit on at least one side: `1.5s`, `.5s` and `1.s` are accepted,
//!   `.s` is not. Signs, exponents, `NaN`, `inf` and unit-less numbers are rejected,
//!   except a bare `0`, which means zero.
//! - Units are case-sensitive; `d` is 24 hours. Groups may come in any order and
//!   repeat; their values add up (`1s1s` is two seconds).
//! - Fractions are exact: digits are read as integers, never through a float. A group
//!   finer than a nanosecond (`0.5ns`) is rounded *up* to the next nanosecond, so a
//!   wait read from a server is never shorter than what it said.
//! - A total beyond [`Duration::MAX`] is rejected (`None`), never wrapped or saturated.
//!
//! [`Human`] writes the canonical form (`1h2m3.5s`, `250ms`, `1.5us`, `0s`), which
//! [`parse`] reads back to the same [`Duration`], exactly.

use core::time::Duration;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Parses a human duration; `None` for anything that is not one (see the module docs).
pub fn parse(text: &[u8]) -> Option<Duration> {
    let mut rest = text.trim_ascii();
    if rest == b"0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (int, frac, after) = split_number(rest)?;
        let unit_len = after
            .iter()
            .position(|b| b.is_ascii_digit() || *b == b'.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at_checked(unit_len)?;
        let group = scaled_nanos(int, frac, unit_nanos(unit)?)?;
        total = total.checked_add(group)?;
        rest = after;
    }
    nanos_to_duration(total)
}

/// Formats a duration in the grammar [`parse`] reads, e.g. `1m30s`, `250ms`, `0s`.
///
/// At least one second: hours, minutes and seconds, each left out when zero, the
/// seconds with as many fraction digits as needed (`1h`, `1h0.5s`, `1.000000001s`).
/// Below a second: `ms`, `us` or `ns` with a fraction (`250ms`, `1.5us`, `7ns`).
/// Nothing is rounded: `parse(Human(d).to_string()) == Some(d)` for every `d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Human(pub Duration);

impl core::fmt::Display for Human {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let secs = self.0.as_secs();
        let nanos = self.0.subsec_nanos();
        if secs == 0 {
            return match nanos {
                0 => f.write_str("0s"),
                1..1_000 => write!(f, "{nanos}ns"),
                1_000..1_000_000 => write_fraction(f, nanos / 1_000, nanos % 1_000, 3, "us"),
                _ => write_fraction(f, nanos / 1_000_000, nanos % 1_000_000, 6, "ms"),
            };
        }
        let (hours, minutes, seconds) = (secs / 3600, secs % 3600 / 60, secs % 60);
        if hours > 0 {
            write!(f, "{hours}h")?;
        }
        if minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        if seconds > 0 || nanos > 0 {
            write_fraction(f, seconds, u64::from(nanos), 9, "s")?;
        }
        Ok(())
    }
}

/// Writes `whole[.fraction]unit`, where `fraction` has `digits` digits before its
/// trailing zeros are dropped.
fn write_fraction(
    f: &mut core::fmt::Formatter<'_>,
    whole: impl Into<u64>,
    fraction: impl Into<u64>,
    digits: usize,
    unit: &str,
) -> core::fmt::Result {
    let (whole, mut fraction, mut digits) = (whole.into(), fraction.into(), digits);
    if fraction == 0 {
        return write!(f, "{whole}{unit}");
    }
    while fraction % 10 == 0 {
        fraction /= 10;
        digits = digits.saturating_sub(1);
    }
    write!(f, "{whole}.{fraction:0digits$}{unit}")
}

/// Nanoseconds in one `unit`.
fn unit_nanos(unit: &[u8]) -> Option<u64> {
    Some(match unit {
        b"ns" => 1,
        // `us`, `µs` (micro sign U+00B5) and `μs` (Greek mu U+03BC).
        b"us" | b"\xC2\xB5s" | b"\xCE\xBCs" => 1_000,
        b"ms" => 1_000_000,
        b"s" => NANOS_PER_SEC,
        b"m" => 60 * NANOS_PER_SEC,
        b"h" => 3_600 * NANOS_PER_SEC,
        b"d" => 86_400 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// Splits a leading decimal number off `s`: `(integer digits, fraction digits, rest)`.
/// Needs a digit on at least one side of the point; either digit string may be empty.
pub(crate) fn split_number(s: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let int_len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let (int, rest) = s.split_at_checked(int_len)?;
    let (frac, rest) = match rest.split_first() {
        Some((b'.', after)) => {
            let frac_len = after.iter().take_while(|b| b.is_ascii_digit()).count();
            after.split_at_checked(frac_len)?
        }
        _ => (&[] as &[u8], rest),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    Some((int, frac, rest))
}

/// `int.frac × unit_nanos` in nanoseconds, rounded up; `None` if it overflows `u128`.
///
/// `int` and `frac` must be ASCII digits and `unit_nanos` at most a day's worth.
pub(crate) fn scaled_nanos(int: &[u8], frac: &[u8], unit_nanos: u64) -> Option<u128> {
    let mut whole: u128 = 0;
    for &b in int {
        whole = whole
            .checked_mul(10)?
            .checked_add(u128::from(b.wrapping_sub(b'0')))?;
    }
    // unit × 0.d1d2…dn evaluated right to left: r ← (unit·d + r) / 10 stays below
    // `unit` and is exact as (floor, "has a remainder"), so the ceiling is exact for any
    // number of digits.
    let (mut part, mut inexact) = (0u64, false);
    for &b in frac.iter().rev() {
        let t = unit_nanos
            .saturating_mul(u64::from(b.wrapping_sub(b'0')))
            .saturating_add(part);
        inexact |= t % 10 != 0;
        part = t / 10;
    }
    whole
        .checked_mul(u128::from(unit_nanos))?
        .checked_add(u128::from(part))?
        .checked_add(u128::from(inexact))
}

/// A nanosecond count as a [`Duration`], or `None` past [`Duration::MAX`].
pub(crate) fn nanos_to_duration(nanos: u128) -> Option<Duration> {
    const PER_SEC: u128 = NANOS_PER_SEC as u128;
    let secs = u64::try_from(nanos / PER_SEC).ok()?;
    let sub = u32::try_from(nanos % PER_SEC).ok()?;
    Some(Duration::new(secs, sub))
}

/// serde support: `#[serde(with = "crate::duration::serde_human")]` on a `Duration`.
#[cfg(feature = "serde")]
pub mod serde_human {
    use super::{Human, parse};
    use core::time::Duration;

    /// Writes the duration as a human string.
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Human(*d))
    }

    /// Reads a human string such as `"250ms"` or `"1m30s"`.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_str(Visitor)
    }

    struct Visitor;

    impl serde::de::Visitor<'_> for Visitor {
        type Value = Duration;

        fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("a duration such as \"250ms\", \"2s\" or \"1m30s\"")
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
            parse(v.as_bytes())
                .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
        }
    }

    /// The same for `Option<Duration>`: absent or `null` is `None`.
    pub mod option {
        use super::Human;
        use core::time::Duration;

        /// Writes `Some` as a human string and `None` as none.
        pub fn serialize<S: serde::Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.collect_str(&Human(*d)),
                None => s.serialize_none(),
            }
        }

        /// Reads an optional human string.
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            d.deserialize_option(OptionVisitor)
        }

        struct OptionVisitor;

        impl<'de> serde::de::Visitor<'de> for OptionVisitor {
            type Value = Option<Duration>;

            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("an optional duration such as \"250ms\"")
            }

            fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                super::deserialize(d).map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests;
