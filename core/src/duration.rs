//! Human-readable durations: `"250ms"`, `"1.5s"`, `"6m0s"`, `"1h2m3.5s"`.
//!
//! One grammar serves configuration files and OpenAI's `x-ratelimit-reset-*` headers.
//! STUB: the parser is filled in by the hints work; the signatures are the contract.

use core::time::Duration;

/// Parses a human duration; `None` for anything that is not one.
pub fn parse(text: &[u8]) -> Option<Duration> {
    let _ = text;
    None
}

/// Formats a duration in the grammar [`parse`] reads, e.g. `1m30s`, `250ms`, `0s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Human(pub Duration);

impl core::fmt::Display for Human {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}ns", self.0.as_nanos())
    }
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
