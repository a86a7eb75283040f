//! steadfast-core: sans-IO state machines that make LLM API calls survive rate limits,
//! overloads, outages, revoked keys and exhausted quotas.
//!
//! The core decides *whether*, *when*, *where* and *with which key* to try again. It
//! never reads a clock, never sleeps, never does IO and holds no lock: time, randomness
//! and outcomes come in as arguments, decisions come out as data. Adapters (async,
//! blocking, simulated) translate and loop.
//!
//! # The driver loop
//!
//! One logical call is a [`retry::Call`]; the shared machines (classification rules,
//! the RNG, retry budgets, breakers, limiters, keys) sit behind a [`retry::Gate`].
//!
//! 1. Read the clock and call [`retry::Call::poll_decision`].
//! 2. On `Send(attempt)`: send the request to `attempt.target` with
//!    `attempt.idempotency_key`, within `attempt.timeout`; map what happened into an
//!    [`outcome::Outcome`] and report it with [`retry::Call::on_outcome`]; go to 1.
//! 3. On `Wait(until)`: sleep until `until` (or until an outcome arrives); go to 1.
//! 4. On `Done(finish)`: the call is over.
//!
//! The rules of the loop:
//! - Inputs carry non-decreasing time. A `now` that goes backwards is clamped to the
//!   latest instant seen, so it cannot reorder events.
//! - After each input, drain decisions until `Wait` or `Done`.
//! - [`retry::Call::poll_timeout`] says the next instant the call needs a poll even if
//!   nothing happens; an attempt not reported by its deadline counts as timed out.
//! - A call dropped mid-flight should be [`cancelled`](retry::Call::cancel), so the gate
//!   releases at once what it held (a call-in-flight slot, a probe, a reserved
//!   rate-limit slot); the engine reclaims what an uncancelled one held once its
//!   attempt is overdue by [`engine::RECLAIM_GRACE`], and refuses its late report.
//! - A `Wait` may be a reserved slot: the engine paces calls that would exceed a rate
//!   limit (the caller's own, or what the server's headers taught) by handing each the
//!   first free instant, in arrival order; the driver just sleeps until it.
//!
//! ```
//! use core::time::Duration;
//! use steadfast_core::outcome::{Outcome, Response};
//! use steadfast_core::policy::Policy;
//! use steadfast_core::retry::{Call, Decision, Finish, SingleEndpoint};
//! use steadfast_core::idempotency::IdempotencyKey;
//! use steadfast_core::time::Timestamp;
//! use steadfast_core::rng;
//!
//! let policy = Policy::default();
//! let mut gate = SingleEndpoint::new(policy.classify.clone(), &policy.budget, rng::from_u64(7));
//! let mut now = Timestamp::ZERO;
//! let key = IdempotencyKey::from_u128(1);
//! let mut call = Call::new(now, &policy.retry, &policy.backoff, key);
//! // A fake upstream: overloaded twice, then fine.
//! let mut answers = [529u16, 503, 200].into_iter();
//! let finish = loop {
//!     match call.poll_decision(now, &mut gate) {
//!         Decision::Send(attempt) => {
//!             now = now + Duration::from_millis(80); // the request takes 80 ms
//!             let status = answers.next().unwrap();
//!             call.on_outcome(now, attempt.id, Outcome::Response(Response::new(status))).unwrap();
//!         }
//!         Decision::Wait(until) => now = until, // sleep
//!         Decision::Done(finish) => break finish,
//!     }
//! };
//! assert_eq!(finish.attempts(), 3);
//! assert!(finish.is_success());
//! ```

#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "alloc", test))]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod classify;
mod config;
pub mod date;
pub mod duration;
#[cfg(feature = "alloc")]
pub mod engine;
pub mod error;
pub mod health;
pub mod hedge;
pub mod hints;
pub mod idempotency;
pub mod ids;
pub mod limiter;
pub mod outcome;
pub mod policy;
pub mod pool;
pub mod provider;
pub mod retry;
pub mod ring;
pub mod rng;
pub mod shared;
pub mod time;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
