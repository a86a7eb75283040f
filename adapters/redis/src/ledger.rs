//! The shared idempotency ledger: one claim per business id across every replica
//! and batch worker, with the stored result of a completed one.
//!
//! A claim is `SET NX PX` with a twist: the same script also answers the stored
//! result of a completed id, so a replay costs one round trip. A claim whose owner
//! died ends with its TTL and can be won again.

use crate::error::{Invalid, StoreError};
use crate::ids::check;
use crate::scripts::SCRIPTS;
use crate::store::{RedisStore, ttl_ms};
use std::time::Duration;

/// The largest result the ledger stores.
pub const MAX_RESULT_LEN: usize = 1 << 20;

/// The answer to [`RedisStore::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The caller holds the id now (also when it already held it: the TTL is renewed).
    Won,
    /// Another owner holds it and has not finished.
    HeldBy {
        /// The holder.
        owner: String,
    },
    /// The id was completed; this is its stored result, to replay.
    Done(Vec<u8>),
}

impl RedisStore {
    /// Claims `business_key` for `owner` for `ttl`, unless it is held or done.
    pub async fn claim(
        &self,
        business_key: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Claim, StoreError> {
        const OP: &str = "claim";
        let ms = match ids(business_key, owner).and_then(|()| ttl_ms("ttl", ttl)) {
            Ok(ms) => ms,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.claim.prepare_invoke();
        inv.key(self.keys.claim(business_key)).arg(owner).arg(ms);
        let (state, data): (i64, Vec<u8>) = self.invoke(OP, &inv).await?;
        match state {
            0 => Ok(Claim::Won),
            1 => Ok(Claim::HeldBy {
                owner: String::from_utf8(data).map_err(|_| StoreError::reply(OP, "owner"))?,
            }),
            2 => Ok(Claim::Done(data)),
            other => Err(StoreError::reply(OP, format!("state {other}"))),
        }
    }

    /// Marks `business_key` done with `result`, kept for `ttl`. Only its current
    /// owner can: returns `false` (and stores nothing) when `owner` does not hold it
    /// (its claim expired, or it was never claimed).
    pub async fn complete(
        &self,
        business_key: &str,
        owner: &str,
        result: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        const OP: &str = "complete";
        let checked = ids(business_key, owner)
            .and_then(|()| size(result))
            .and_then(|()| ttl_ms("ttl", ttl));
        let ms = match checked {
            Ok(ms) => ms,
            Err(e) => return self.refuse(e),
        };
        let mut inv = SCRIPTS.complete.prepare_invoke();
        inv.key(self.keys.claim(business_key))
            .arg(owner)
            .arg(result)
            .arg(ms);
        let stored: i64 = self.invoke(OP, &inv).await?;
        Ok(stored == 1)
    }

    /// Gives up `owner`'s claim on `business_key` (the work failed and may be tried
    /// again by anyone). Returns `false` when `owner` does not hold it.
    pub async fn release(&self, business_key: &str, owner: &str) -> Result<bool, StoreError> {
        const OP: &str = "release";
        if let Err(e) = ids(business_key, owner) {
            return self.refuse(e);
        }
        let mut inv = SCRIPTS.release_claim.prepare_invoke();
        inv.key(self.keys.claim(business_key)).arg(owner);
        let released: i64 = self.invoke(OP, &inv).await?;
        Ok(released == 1)
    }
}

fn ids(business_key: &str, owner: &str) -> Result<(), Invalid> {
    check("business_key", business_key)?;
    check("owner", owner)
}

fn size(result: &[u8]) -> Result<(), Invalid> {
    if result.len() > MAX_RESULT_LEN {
        return Err(Invalid::OutOfRange { field: "result" });
    }
    Ok(())
}
