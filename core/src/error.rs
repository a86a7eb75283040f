//! The only errors the core returns: misuse of an API and bad configuration.
//! Upstream failures are data ([`crate::outcome::Outcome`], [`crate::retry::Finish`]).

use crate::ids::AttemptId;

/// A configuration value that cannot work. `field` is the dotted path of the bad
/// field as it is spelled in a config file, e.g. `"backoff.base"`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The field must be above zero.
    Zero {
        /// Dotted path of the field.
        field: &'static str,
    },
    /// The field is outside `[min, max]`.
    OutOfRange {
        /// Dotted path of the field.
        field: &'static str,
        /// Smallest allowed value.
        min: f64,
        /// Largest allowed value.
        max: f64,
        /// The value given.
        got: f64,
    },
    /// `lower` must not exceed `upper` (e.g. `backoff.base` > `backoff.cap`).
    Order {
        /// The field that must be the smaller.
        lower: &'static str,
        /// The field that must be the larger.
        upper: &'static str,
    },
    /// A list that must have at least one entry is empty.
    Empty {
        /// Dotted path of the field.
        field: &'static str,
    },
    /// A list or table has more entries than the core supports.
    TooMany {
        /// Dotted path of the field.
        field: &'static str,
        /// The largest allowed count.
        max: usize,
    },
    /// Two entries share an identifier that must be unique.
    Duplicate {
        /// Dotted path of the field.
        field: &'static str,
    },
    /// The field's value contradicts another field's (e.g. `breaker.mode =
    /// "forced_open"` with `breaker.enabled = false`).
    Conflict {
        /// Dotted path of the field.
        field: &'static str,
        /// Dotted path of the field it contradicts.
        with: &'static str,
    },
}

impl ConfigError {
    /// The dotted path of the offending field (the first one for [`ConfigError::Order`]).
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::Zero { field }
            | ConfigError::OutOfRange { field, .. }
            | ConfigError::Empty { field }
            | ConfigError::TooMany { field, .. }
            | ConfigError::Duplicate { field }
            | ConfigError::Conflict { field, .. } => field,
            ConfigError::Order { lower, .. } => lower,
        }
    }
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::Zero { field } => write!(f, "{field}: must be greater than zero"),
            ConfigError::OutOfRange {
                field,
                min,
                max,
                got,
            } => write!(f, "{field}: {got} is outside [{min}, {max}]"),
            ConfigError::Order { lower, upper } => {
                write!(f, "{lower}: must not be greater than {upper}")
            }
            ConfigError::Empty { field } => write!(f, "{field}: must not be empty"),
            ConfigError::TooMany { field, max } => {
                write!(f, "{field}: at most {max} entries are supported")
            }
            ConfigError::Duplicate { field } => write!(f, "{field}: duplicate entry"),
            ConfigError::Conflict { field, with } => write!(f, "{field}: contradicts {with}"),
        }
    }
}

impl core::error::Error for ConfigError {}

/// The caller drove a machine in a way its contract forbids.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageError {
    /// An outcome was reported for an attempt that is not in flight.
    UnknownAttempt {
        /// The attempt named.
        id: AttemptId,
    },
    /// An input arrived after the call finished.
    Finished,
    /// An identifier (endpoint, key, call) that the machine does not know.
    UnknownId,
}

impl core::fmt::Display for UsageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UsageError::UnknownAttempt { id } => {
                write!(f, "attempt {} is not in flight", id.0)
            }
            UsageError::Finished => f.write_str("the call has already finished"),
            UsageError::UnknownId => f.write_str("unknown identifier"),
        }
    }
}

impl core::error::Error for UsageError {}
