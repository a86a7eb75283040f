//! steadfast-redis: limits, key cooldowns, breaker state and an idempotency ledger
//! shared by every process and machine through one Redis.
//!
//! Each decision is one atomic Lua script on the server's own clock (`TIME`), so
//! replicas with skewed clocks agree and no read-then-write race exists:
//!
//! | operation | script | returns |
//! | --- | --- | --- |
//! | [`RedisStore::reserve_requests`] | `sf1:gcra_reserve` | `{granted 0\|n, now µs, tat µs, wait µs}` |
//! | [`RedisStore::lease`] | `sf1:lease` | `{granted, now µs, tat µs, wait µs, expires µs}` |
//! | [`RedisStore::release_lease`] | `sf1:release_lease` | `{refunded, now µs, tat µs}` |
//! | [`RedisStore::reserve_tokens`] | `sf1:tokens_reserve` | `{granted 0\|1, now µs, level units, wait µs}` |
//! | [`RedisStore::reconcile_tokens`] | `sf1:tokens_reconcile` | `{now µs, level units}` |
//! | [`RedisStore::cool_key`] | `sf1:extend_ttl` | ms the key lives now |
//! | [`RedisStore::open_endpoint`] | `sf1:open_endpoint` | ms the key lives now |
//! | [`RedisStore::claim`] | `sf1:claim` | `{0, ''}` won, `{1, owner}` held, `{2, result}` done |
//! | [`RedisStore::complete`] | `sf1:complete` | 1 stored, 0 not the holder |
//! | [`RedisStore::release`] | `sf1:release_claim` | 1 released, 0 not the holder |
//!
//! [`RedisStore::disable_key`] is one `SET PX`, [`RedisStore::enable_key`] one
//! `DEL`, [`RedisStore::key_states`] one pipeline of `PTTL`s,
//! [`RedisStore::endpoint_open`] one pipeline of `GET` and `PTTL`. The arithmetic of every limit script
//! is mirrored by the pure [`model`], which the property tests hold the scripts to.
//!
//! # Key layout
//!
//! Every key is `{<prefix><version>:<class>:<id>}:<field>`, the whole tag in braces,
//! so one limit's keys share a hash slot (Redis Cluster safe) and a v2 layout never
//! reads v1 keys. With the default prefix `sf`:
//!
//! | key | type | holds | TTL |
//! | --- | --- | --- | --- |
//! | `{sf1:l:<limit>}:req` | string | GCRA theoretical arrival time, µs | until the bucket is full again |
//! | `{sf1:l:<limit>}:tok` | hash `l`, `t` | token level (units, 60 000 000 per token), as of µs | until the bucket is full again |
//! | `{sf1:k:<key id>}:cool` | string | key cooling | the cooldown |
//! | `{sf1:k:<key id>}:off` | string | key disabled | the disable's TTL |
//! | `{sf1:e:<endpoint id>}:open` | string | breaker open: the whole open, ms | the time left open |
//! | `{sf1:i:<business key>}:claim` | hash `s` (h\|d), `o`, `r` | claim state, owner, result | the claim's or the result's TTL |
//!
//! A missing key is the initial state (a full bucket, not cooling, not claimed), so
//! an expiry never changes a decision. Ids are 1 to [`MAX_ID_LEN`] bytes of
//! printable ASCII without `{` `}`: validated, never escaped. Key ids are stable
//! caller-given names (e.g. a hash of the endpoint name and key index), never secrets.
//!
//! # Faults
//!
//! Every call is bounded by [`RedisConfig::call_timeout`] (50 ms by default),
//! reconnects included; the connection manager reconnects in the background with
//! exponential backoff between `reconnect_min` and `reconnect_max`. A failed call is
//! a [`StoreError`]; [`RedisStore::on_error`] applies the limit's [`FailMode`] and
//! counts the [`Fallback`] in [`RedisStore::counters`].
//!
//! Requires Redis ≥ 6 (scripts replicate their effects, so `TIME` before a write
//! needs no `redis.replicate_commands()`). The store talks to one node (standalone,
//! or a primary behind a proxy): the layout is cluster-ready (every script touches
//! one slot), a cluster client is not wired in.

#[cfg(feature = "client")]
pub mod client;
mod config;
mod error;
mod fault;
mod ids;
mod ledger;
mod limits;
pub mod model;
pub mod rate;
mod scripts;
mod shared;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use config::{ConfigError, FailMode, MAX_CALL_TIMEOUT, RedisConfig};
pub use error::{Invalid, ScriptError, StoreError};
pub use fault::{CounterSnapshot, Fallback, StoreCounters, fallback};
pub use ids::{LAYOUT_VERSION, LimitKey, MAX_ID_LEN};
pub use ledger::{Claim, MAX_RESULT_LEN};
pub use limits::{Decision, Lease, Reconciled, Released, clamped_delta};
pub use rate::{Rate, TokenRate};
pub use shared::{EndpointOpen, KeyShared};
pub use store::{MAX_TTL, RedisStore};
