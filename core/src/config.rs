//! Helpers shared by every configuration section: the checks `validate` methods make,
//! and serde for optional models that are on by default.

use crate::error::ConfigError;

/// `Zero { field }` when `zero`.
pub(crate) fn nonzero(zero: bool, field: &'static str) -> Result<(), ConfigError> {
    if zero {
        return Err(ConfigError::Zero { field });
    }
    Ok(())
}

/// `OutOfRange` unless `min <= got <= max` (NaN is out of range).
pub(crate) fn within(field: &'static str, got: f64, min: f64, max: f64) -> Result<(), ConfigError> {
    if !(got >= min && got <= max) {
        return Err(ConfigError::OutOfRange {
            field,
            min,
            max,
            got,
        });
    }
    Ok(())
}

/// `Order { lower, upper }` unless `ok`.
pub(crate) fn ordered(
    ok: bool,
    lower: &'static str,
    upper: &'static str,
) -> Result<(), ConfigError> {
    if !ok {
        return Err(ConfigError::Order { lower, upper });
    }
    Ok(())
}

/// A fraction in `(0, 1]`.
pub(crate) fn fraction(field: &'static str, value: f64) -> Result<(), ConfigError> {
    nonzero(value == 0.0, field)?;
    within(field, value, 0.0, 1.0)
}

/// serde for an `Option` model that is on by default: a value, or `"off"` for `None`.
#[cfg(feature = "serde")]
pub(crate) mod off_or {
    use core::fmt;
    use serde::de::{Error, Unexpected, Visitor};

    /// The numbers an `off_or` field may hold.
    pub trait Num: Copy + serde::Serialize {
        fn from_u64(v: u64) -> Option<Self>;
        fn from_f64(v: f64) -> Option<Self>;
    }

    impl Num for u32 {
        fn from_u64(v: u64) -> Option<Self> {
            u32::try_from(v).ok()
        }
        fn from_f64(_: f64) -> Option<Self> {
            None
        }
    }

    impl Num for f64 {
        fn from_u64(v: u64) -> Option<Self> {
            Some(v as f64)
        }
        fn from_f64(v: f64) -> Option<Self> {
            Some(v)
        }
    }

    /// Writes the number, or `"off"` for `None`.
    pub fn serialize<T: Num, S: serde::Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_str("off"),
        }
    }

    /// Reads a number, or `"off"` (or none) as `None`.
    pub fn deserialize<'de, T: Num, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        d.deserialize_any(OffOr(core::marker::PhantomData))
    }

    struct OffOr<T>(core::marker::PhantomData<T>);

    impl<T: Num> Visitor<'_> for OffOr<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number or \"off\"")
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            T::from_u64(v)
                .map(Some)
                .ok_or_else(|| E::invalid_value(Unexpected::Unsigned(v), &self))
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            u64::try_from(v)
                .ok()
                .and_then(T::from_u64)
                .map(Some)
                .ok_or_else(|| E::invalid_value(Unexpected::Signed(v), &self))
        }

        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            T::from_f64(v)
                .map(Some)
                .ok_or_else(|| E::invalid_value(Unexpected::Float(v), &self))
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            if v == "off" {
                Ok(None)
            } else {
                Err(E::invalid_value(Unexpected::Str(v), &self))
            }
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
}
