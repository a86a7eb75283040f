//! What a store call can fail with. Denials are not errors: they are
//! [`crate::Decision::NotBefore`] data.

use core::fmt;
use std::time::Duration;

/// Why a store call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// No answer within the configured `call_timeout` (Redis slow, or a reconnect
    /// still under way).
    Timeout {
        /// The timeout that passed.
        after: Duration,
    },
    /// Redis could not be reached or dropped the connection; the client reconnects
    /// with backoff in the background.
    Unavailable {
        /// What the client saw, for logs.
        reason: String,
    },
    /// Redis answered with an error or with a reply the script never gives.
    Script(ScriptError),
    /// The call's arguments cannot work (an id, a rate or a count out of range).
    Invalid(Invalid),
}

/// An error answer from Redis or a malformed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The operation whose script failed, e.g. `"reserve_requests"`.
    pub op: &'static str,
    /// Redis's error code or the shape problem, e.g. `"OOM"` or `"reply"`.
    pub code: String,
    /// The server's message, if any.
    pub detail: String,
}

/// An argument the store refuses before sending anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invalid {
    /// An id (limit, key, endpoint, business key, owner) is empty.
    Empty {
        /// Which argument.
        what: &'static str,
    },
    /// An id is longer than [`crate::MAX_ID_LEN`] bytes.
    TooLong {
        /// Which argument.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// An id holds a byte outside printable ASCII, or `{` / `}` (which would change
    /// the key's hash slot).
    Byte {
        /// Which argument.
        what: &'static str,
        /// The offending byte.
        byte: u8,
    },
    /// A rate, count or duration is outside its documented range.
    OutOfRange {
        /// Which argument, e.g. `"rate.burst"` or `"n"`.
        field: &'static str,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Timeout { after } => write!(f, "redis: no answer within {after:?}"),
            StoreError::Unavailable { reason } => write!(f, "redis unavailable: {reason}"),
            StoreError::Script(e) => write!(f, "redis {}: {} {}", e.op, e.code, e.detail),
            StoreError::Invalid(e) => write!(f, "invalid store call: {e}"),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Empty { what } => write!(f, "{what}: must not be empty"),
            Invalid::TooLong { what, len } => {
                write!(f, "{what}: {len} bytes, at most {}", crate::MAX_ID_LEN)
            }
            Invalid::Byte { what, byte } => write!(
                f,
                "{what}: byte 0x{byte:02x} not allowed (printable ASCII without braces)"
            ),
            Invalid::OutOfRange { field } => write!(f, "{field}: out of range"),
        }
    }
}

impl std::error::Error for StoreError {}
impl std::error::Error for Invalid {}

impl From<Invalid> for StoreError {
    fn from(e: Invalid) -> Self {
        StoreError::Invalid(e)
    }
}

impl StoreError {
    /// Maps a client error: time-outs, connection failures and the server states that
    /// pass on their own (loading, read-only replica, cluster down) are faults of the
    /// store; everything else is a script error.
    pub(crate) fn from_redis(op: &'static str, after: Duration, e: &redis::RedisError) -> Self {
        use redis::{ErrorKind, ServerErrorKind as S};
        if e.is_timeout() {
            return StoreError::Timeout { after };
        }
        let transient = matches!(
            e.kind(),
            ErrorKind::Io
                | ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    S::BusyLoading | S::ReadOnly | S::MasterDown | S::ClusterDown | S::TryAgain
                )
        );
        if transient || e.is_connection_dropped() || e.is_connection_refusal() {
            return StoreError::Unavailable {
                reason: e.to_string(),
            };
        }
        StoreError::Script(ScriptError {
            op,
            code: e.code().unwrap_or(e.category()).to_string(),
            detail: e.detail().map_or_else(|| e.to_string(), str::to_string),
        })
    }

    /// A reply whose shape no script gives.
    pub(crate) fn reply(op: &'static str, detail: impl Into<String>) -> Self {
        StoreError::Script(ScriptError {
            op,
            code: "reply".to_string(),
            detail: detail.into(),
        })
    }
}
