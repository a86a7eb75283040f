//! Shared key cooldowns and disables, and an endpoint's breaker "open until": one
//! TTL key each, so the state ends by itself.

use crate::error::StoreError;
use crate::ids::check;
use crate::scripts::SCRIPTS;
use crate::store::{RedisStore, ttl_ms};
use std::time::Duration;

/// An endpoint's shared breaker open, as the store holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointOpen {
    /// How long it stays open.
    pub left: Duration,
    /// The whole open its writer recorded, from the instant the breaker opened.
    pub whole: Duration,
}

/// What every replica knows of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyShared {
    /// Time left in its cooldown, if cooling.
    pub cooling_for: Option<Duration>,
    /// Whether it is disabled (until its TTL or [`RedisStore::enable_key`]).
    pub disabled: bool,
}

impl RedisStore {
    /// Cools key `id` (a stable id, never the secret) for `for_`; only ever extends a
    /// cooldown. Returns the cooldown now in force.
    pub async fn cool_key(&self, id: &str, for_: Duration) -> Result<Duration, StoreError> {
        self.extend("cool_key", "key_id", id, for_, |s, id| s.keys.cooling(id))
            .await
    }

    /// Disables key `id` for `ttl` (a revoked key stays out until an operator or the
    /// TTL brings it back; the TTL is replaced, not extended).
    pub async fn disable_key(&self, id: &str, ttl: Duration) -> Result<(), StoreError> {
        let ms = match check("key_id", id).and_then(|()| ttl_ms("ttl", ttl)) {
            Ok(ms) => ms,
            Err(e) => return self.refuse(e),
        };
        let mut conn = self.conn.clone();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.keys.disabled(id)).arg("1").arg("PX").arg(ms);
        let () = self
            .bounded("disable_key", cmd.query_async(&mut conn))
            .await?;
        Ok(())
    }

    /// Ends key `id`'s disable (its cooldown, if any, runs on).
    pub async fn enable_key(&self, id: &str) -> Result<(), StoreError> {
        if let Err(e) = check("key_id", id) {
            return self.refuse(e);
        }
        let mut conn = self.conn.clone();
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.keys.disabled(id));
        let _: i64 = self
            .bounded("enable_key", cmd.query_async(&mut conn))
            .await?;
        Ok(())
    }

    /// The shared state of each key in `ids`, in order, in one round trip (a
    /// pipeline of `PTTL`s; the keys may live in different cluster slots).
    pub async fn key_states(&self, ids: &[&str]) -> Result<Vec<KeyShared>, StoreError> {
        if let Some(e) = ids.iter().find_map(|id| check("key_id", id).err()) {
            return self.refuse(e);
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("PTTL").arg(self.keys.cooling(id));
            pipe.cmd("PTTL").arg(self.keys.disabled(id));
        }
        let mut conn = self.conn.clone();
        let ttls: Vec<i64> = self
            .bounded("key_states", pipe.query_async(&mut conn))
            .await?;
        if ttls.len() != ids.len() * 2 {
            return Err(StoreError::reply("key_states", "pipeline length"));
        }
        Ok(ttls
            .chunks_exact(2)
            .map(|pair| KeyShared {
                cooling_for: pair.first().copied().and_then(left),
                disabled: pair.get(1).copied().and_then(left).is_some(),
            })
            .collect())
    }

    /// Opens endpoint `id`'s shared breaker for `for_`, recording the `whole` open
    /// it is part of (from the instant the breaker opened, so a reader knows when it
    /// began); only ever extends. Returns the time it is open now.
    pub async fn open_endpoint(
        &self,
        id: &str,
        for_: Duration,
        whole: Duration,
    ) -> Result<Duration, StoreError> {
        const OP: &str = "open_endpoint";
        let checked = check("endpoint_id", id)
            .and_then(|()| ttl_ms("for", for_))
            .and_then(|ms| Ok((ms, ttl_ms("whole", whole.max(for_))?)));
        let (ms, whole_ms) = match checked {
            Ok(v) => v,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.open_endpoint.prepare_invoke();
        inv.key(self.keys.open(id)).arg(ms).arg(whole_ms);
        let now_ms: i64 = self.invoke(OP, &inv).await?;
        left(now_ms).ok_or_else(|| StoreError::reply(OP, "no TTL after set"))
    }

    /// Endpoint `id`'s shared breaker, if it is open: the time it has left and the
    /// whole open it records (one pipeline of `GET` and `PTTL`).
    pub async fn endpoint_open(&self, id: &str) -> Result<Option<EndpointOpen>, StoreError> {
        if let Err(e) = check("endpoint_id", id) {
            return self.refuse(e);
        }
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(self.keys.open(id));
        pipe.cmd("PTTL").arg(self.keys.open(id));
        let mut conn = self.conn.clone();
        let (whole, ms): (Option<u64>, i64) = self
            .bounded("endpoint_open", pipe.query_async(&mut conn))
            .await?;
        Ok(left(ms).map(|left| EndpointOpen {
            left,
            // A key an older writer set holds no whole: the open reads as just begun.
            whole: whole.map_or(left, Duration::from_millis).max(left),
        }))
    }

    async fn extend(
        &self,
        op: &'static str,
        what: &'static str,
        id: &str,
        for_: Duration,
        key: fn(&RedisStore, &str) -> String,
    ) -> Result<Duration, StoreError> {
        let ms = match check(what, id).and_then(|()| ttl_ms("for", for_)) {
            Ok(ms) => ms,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.extend_ttl.prepare_invoke();
        inv.key(key(self, id)).arg(ms);
        let now_ms: i64 = self.invoke(op, &inv).await?;
        left(now_ms).ok_or_else(|| StoreError::reply(op, "no TTL after set"))
    }
}

/// A `PTTL` answer as time left: `None` for a missing key (-2). A key without a TTL
/// (-1) is never written by this crate; it reads as not set.
fn left(ms: i64) -> Option<Duration> {
    u64::try_from(ms)
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}
