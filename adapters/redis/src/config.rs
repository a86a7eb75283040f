//! The store's configuration: where Redis is, how long a call may take, how to
//! reconnect, and what each limit does when Redis does not answer.

use core::fmt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use steadfast_core::duration::serde_human;

/// What a limit does when the store fails (time-out, unreachable, script error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FailMode {
    /// Fall back to the process's local limits and count it: availability over
    /// exactness (`"fail_open"`).
    #[default]
    #[serde(rename = "fail_open")]
    Open,
    /// Refuse to admit until the store answers again: exactness over availability
    /// (`"fail_closed"`).
    #[serde(rename = "fail_closed")]
    Closed,
}

/// The store's configuration.
///
/// Defaults: `url = "redis://127.0.0.1:6379"`, `call_timeout = "50ms"`,
/// `connect_timeout = "200ms"`, `prefix = "sf"`, `reconnect_min = "10ms"`,
/// `reconnect_max = "1s"`, `fail_mode = "fail_open"`, `limits = {}`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://[user:password@]host[:port][/db]` (or `rediss://`, `unix://`). Its
    /// password never appears in `Debug` output.
    pub url: String,
    /// The longest any store call waits, reconnects included. Keep it far below the
    /// attempt timeout: a slow Redis must cost a call this much at most.
    #[serde(with = "serde_human")]
    pub call_timeout: Duration,
    /// The longest one connection attempt may take.
    #[serde(with = "serde_human")]
    pub connect_timeout: Duration,
    /// First part of every key's hash tag (`{<prefix>1:...}`): ASCII letters, digits,
    /// `_` and `-`, at most 32 bytes. Lets several deployments share one Redis.
    pub prefix: String,
    /// The first reconnect delay; later ones grow exponentially (with jitter).
    #[serde(with = "serde_human")]
    pub reconnect_min: Duration,
    /// The longest reconnect delay.
    #[serde(with = "serde_human")]
    pub reconnect_max: Duration,
    /// The fail mode of every limit not named in `limits`.
    pub fail_mode: FailMode,
    /// Fail modes per limit name.
    pub limits: BTreeMap<String, FailMode>,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: "redis://127.0.0.1:6379".to_string(),
            call_timeout: Duration::from_millis(50),
            connect_timeout: Duration::from_millis(200),
            prefix: "sf".to_string(),
            reconnect_min: Duration::from_millis(10),
            reconnect_max: Duration::from_secs(1),
            fail_mode: FailMode::Open,
            limits: BTreeMap::new(),
        }
    }
}

/// The longest `call_timeout` accepted: a shared decision slower than this is no
/// longer cheaper than a local one.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A configuration value that cannot work, naming the field as spelled in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `url` does not parse as a Redis URL.
    Url {
        /// The client's reason (without the URL, which may hold a password).
        reason: String,
    },
    /// The duration must be above zero.
    Zero {
        /// The field.
        field: &'static str,
    },
    /// The duration is above its maximum.
    TooLong {
        /// The field.
        field: &'static str,
        /// The maximum.
        max: Duration,
    },
    /// `lower` must not exceed `upper`.
    Order {
        /// The field that must be the smaller.
        lower: &'static str,
        /// The field that must be the larger.
        upper: &'static str,
    },
    /// `prefix` is empty, too long, or holds a character outside `[A-Za-z0-9_-]`.
    Prefix,
    /// The store was created outside a Tokio runtime (not a file field: `field()`
    /// says `"runtime"`).
    Runtime,
    /// A limit name in `limits` is not a valid id.
    LimitName {
        /// Why.
        reason: crate::Invalid,
    },
}

impl ConfigError {
    /// The field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::Url { .. } => "url",
            ConfigError::Zero { field } | ConfigError::TooLong { field, .. } => field,
            ConfigError::Order { lower, .. } => lower,
            ConfigError::Prefix => "prefix",
            ConfigError::LimitName { .. } => "limits",
            ConfigError::Runtime => "runtime",
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Url { reason } => write!(f, "url: not a Redis URL ({reason})"),
            ConfigError::Zero { field } => write!(f, "{field}: must be greater than zero"),
            ConfigError::TooLong { field, max } => write!(f, "{field}: at most {max:?}"),
            ConfigError::Order { lower, upper } => write!(f, "{lower}: must not exceed {upper}"),
            ConfigError::Prefix => f.write_str("prefix: 1 to 32 of A-Z a-z 0-9 _ -"),
            ConfigError::LimitName { reason } => write!(f, "limits: {reason}"),
            ConfigError::Runtime => f.write_str("the store must be created inside a Tokio runtime"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl RedisConfig {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.connection_info()?;
        positive("call_timeout", self.call_timeout)?;
        if self.call_timeout > MAX_CALL_TIMEOUT {
            return Err(ConfigError::TooLong {
                field: "call_timeout",
                max: MAX_CALL_TIMEOUT,
            });
        }
        positive("connect_timeout", self.connect_timeout)?;
        let prefix_ok = (1..=32).contains(&self.prefix.len())
            && self
                .prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !prefix_ok {
            return Err(ConfigError::Prefix);
        }
        positive("reconnect_min", self.reconnect_min)?;
        if self.reconnect_min > self.reconnect_max {
            return Err(ConfigError::Order {
                lower: "reconnect_min",
                upper: "reconnect_max",
            });
        }
        for name in self.limits.keys() {
            crate::ids::check("limit", name).map_err(|reason| ConfigError::LimitName { reason })?;
        }
        Ok(())
    }

    /// The fail mode of a limit: its entry in `limits`, else `fail_mode`.
    pub fn fail_mode_for(&self, limit: &crate::LimitKey) -> FailMode {
        self.limits
            .get(limit.as_str())
            .copied()
            .unwrap_or(self.fail_mode)
    }

    pub(crate) fn connection_info(&self) -> Result<redis::ConnectionInfo, ConfigError> {
        use redis::IntoConnectionInfo;
        self.url
            .as_str()
            .into_connection_info()
            .map_err(|e| ConfigError::Url {
                reason: e.category().to_string(),
            })
    }
}

fn positive(field: &'static str, d: Duration) -> Result<(), ConfigError> {
    if d.is_zero() {
        return Err(ConfigError::Zero { field });
    }
    Ok(())
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redacted(&self.url))
            .field("call_timeout", &self.call_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("prefix", &self.prefix)
            .field("reconnect_min", &self.reconnect_min)
            .field("reconnect_max", &self.reconnect_max)
            .field("fail_mode", &self.fail_mode)
            .field("limits", &self.limits)
            .finish()
    }
}

/// The URL with any `user:password@` replaced by `***@`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests;
