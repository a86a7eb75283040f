//! The crate's own test helpers on top of [`steadfast_redis::testing`].
#![allow(dead_code, unused_imports)]

pub use steadfast_redis::testing::{Redis, Server, store, unique_prefix};

/// A raw connection for inspecting keys.
pub async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("client")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// Every key under `prefix` and its `PTTL`.
pub async fn ttls(url: &str, prefix: &str) -> Vec<(String, i64)> {
    let mut conn = raw(url).await;
    let pattern = format!("{{{prefix}1:*");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    let mut out = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("PTTL");
        out.push((key, ttl));
    }
    out
}
