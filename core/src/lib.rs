//! steadfast-core: sans-IO state machines that make LLM API calls survive rate limits,
//! overloads, outages, revoked keys and exhausted quotas.
//!
//! STUB: the crate documentation (the driver loop) is written with the retry sequence.

#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "alloc", test))]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod classify;
pub mod duration;
pub mod error;
pub mod health;
pub mod hints;
pub mod idempotency;
pub mod ids;
pub mod limiter;
pub mod outcome;
pub mod pool;
pub mod rng;
pub mod time;
