//! steadfast-tests: the operation harness behind the workspace's property tests and
//! the structured fuzz target, plus workspace-level tests.
//!
//! A [`Scenario`](ops::Scenario) is a [`Setup`](ops::Setup) (a policy drawn from the
//! presets with knobs turned, one to three endpoints with one to three keys) and a list
//! of [`Op`](ops::Op)s: the driver's clock moving (forward, or back to test the clamp),
//! calls starting (with token estimates and business ids), attempts ending (any status
//! 100..=599 with real header and body text, transport failures by kind and phase,
//! cancellations), operators re-enabling keys, polls. A [`Harness`](harness::Harness)
//! drives the real `steadfast_core::engine::Engine` and its calls with them through a
//! transparent gate ([`watch`]) that looks at the shared machines just before each
//! decision, and checks after every step:
//!
//! - no `Send` at or after the call's deadline, and every attempt's own deadline
//!   within the call's;
//! - attempt numbers 1, 2, 3, … and never above `max_attempts`;
//! - no grant on an endpoint whose breaker `peek` denies just before the decision;
//!   half-open probes within the configured number, and the breaker's probe count and
//!   the limiter's in-flight count equal to what was granted and not yet reported;
//! - no grant on a disabled key, or on a key cooling down;
//! - no grant on the target the call's last failure rules out until later;
//! - one idempotency key per call, the same on every attempt (derived from the business
//!   id when there is one);
//! - a `Wait` strictly ahead of the call's clamped clock and within its deadline, and
//!   `poll_timeout` not in the past (and equal to the `Wait`) while the call waits;
//! - the verdict the gate is told is the classification of the outcome delivered;
//! - every give-up reason (and success) supported by the call's history, e.g.
//!   `NotRetryable` only after a non-retryable failure; a finished call stays finished;
//! - usage errors exactly where due (late outcomes, unknown keys); no livelock, no panic.
//!
//! ```
//! use steadfast_tests::harness::{Checks, Harness};
//! use steadfast_tests::ops::Scenario;
//!
//! // Any bytes make a scenario; the proptest and the fuzz target feed random ones.
//! let scenario = Scenario::from_bytes(b"some bytes a fuzzer found");
//! Harness::run(&scenario, Checks::default()).unwrap();
//! ```

mod checks;
pub mod fuzz;
pub mod harness;
mod invariant;
pub mod ops;
pub mod respond;
mod verdicts;
pub mod watch;
pub mod wire;
