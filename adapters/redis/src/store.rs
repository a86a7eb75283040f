//! The store handle: one multiplexed connection (redis-rs's connection manager,
//! which reconnects with backoff), every call bounded by `call_timeout`.

use crate::config::RedisConfig;
use crate::error::{Invalid, StoreError};
use crate::fault::{self, CounterSnapshot, Fallback, StoreCounters};
use crate::ids::{Keys, LimitKey};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, RedisResult, ScriptInvocation};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Reconnect attempts per outage before the manager gives up; the next call starts
/// a new round, so a store never stays disconnected while calls keep coming.
const RECONNECT_ATTEMPTS: usize = 16;

/// The longest TTL any key gets: nothing lives forever.
pub const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// A handle on the shared store. Clones share the connection and the counters;
/// two stores made with [`RedisStore::new`] are as two processes.
#[derive(Clone)]
pub struct RedisStore {
    pub(crate) conn: ConnectionManager,
    pub(crate) keys: Keys,
    config: Arc<RedisConfig>,
    counters: Arc<StoreCounters>,
}

impl core::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RedisStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on `config.url`. Connects lazily, so a process starts while Redis is
    /// down (its calls fail until Redis answers). Must be called inside a Tokio
    /// runtime. The config is validated first.
    pub fn new(config: RedisConfig) -> Result<Self, crate::ConfigError> {
        config.validate()?;
        let client = redis::Client::open(config.connection_info()?).map_err(|e| {
            crate::ConfigError::Url {
                reason: e.category().to_string(),
            }
        })?;
        let manager = ConnectionManagerConfig::new()
            .set_min_delay(config.reconnect_min)
            .set_max_delay(config.reconnect_max)
            .set_number_of_retries(RECONNECT_ATTEMPTS)
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.call_timeout));
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(crate::ConfigError::Runtime);
        }
        let conn = ConnectionManager::new_lazy_with_config(client, manager).map_err(|e| {
            crate::ConfigError::Url {
                reason: e.category().to_string(),
            }
        })?;
        Ok(RedisStore {
            conn,
            keys: Keys::new(&config.prefix),
            config: Arc::new(config),
            counters: Arc::default(),
        })
    }

    /// The configuration the store runs on.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    /// The counts of calls, failures, fallbacks and refusals so far.
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// What to do about a failed call on `limit`: its fail mode applied to `err`
    /// (see [`fault::fallback`]), counted as a fallback or a refusal.
    pub fn on_error(&self, limit: &LimitKey, err: &StoreError) -> Fallback {
        let action = fault::fallback(self.config.fail_mode_for(limit), err);
        self.counters.on_fallback(action);
        action
    }

    /// One `PING`: whether Redis answers within `call_timeout`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let cmd = redis::cmd("PING");
        let _: String = self.bounded("ping", cmd.query_async(&mut conn)).await?;
        Ok(())
    }

    /// Runs a script invocation within the timeout.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        op: &'static str,
        inv: &ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn.clone();
        self.bounded(op, inv.invoke_async(&mut conn)).await
    }

    /// Awaits a client future for at most `call_timeout`, mapping and counting its
    /// failure. Dropping the future on time-out is safe: the multiplexed connection
    /// discards the late answer.
    pub(crate) async fn bounded<T>(
        &self,
        op: &'static str,
        fut: impl Future<Output = RedisResult<T>>,
    ) -> Result<T, StoreError> {
        self.counters.on_call();
        let after = self.config.call_timeout;
        let result = match tokio::time::timeout(after, fut).await {
            Err(_) => Err(StoreError::Timeout { after }),
            Ok(Err(e)) => Err(StoreError::from_redis(op, after, &e)),
            Ok(Ok(v)) => Ok(v),
        };
        if let Err(e) = &result {
            self.counters.on_error(e);
        }
        result
    }

    /// Counts and returns an argument error (nothing was sent).
    pub(crate) fn refuse<T>(&self, e: Invalid) -> Result<T, StoreError> {
        let err = StoreError::Invalid(e);
        self.counters.on_error(&err);
        Err(err)
    }
}

/// A TTL as whole milliseconds (rounded up), `1 ms ..= MAX_TTL`.
pub(crate) fn ttl_ms(field: &'static str, d: Duration) -> Result<u64, Invalid> {
    if d.is_zero() || d > MAX_TTL {
        return Err(Invalid::OutOfRange { field });
    }
    let ms = d.as_micros().div_ceil(1000);
    u64::try_from(ms).map_err(|_| Invalid::OutOfRange { field })
}

/// A script's integer array, or a reply error naming the operation.
pub(crate) fn ints<const N: usize>(op: &'static str, v: Vec<i64>) -> Result<[i64; N], StoreError> {
    <[i64; N]>::try_from(v).map_err(|v| StoreError::reply(op, format!("{} integers", v.len())))
}

/// A non-negative script integer.
pub(crate) fn unsigned(op: &'static str, v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::reply(op, format!("negative {v}")))
}
