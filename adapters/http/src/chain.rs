//! Running the fallback chain of a call that gave up: the order, the attempt count and
//! the degraded reply, so that each adapter only runs the fallback endpoints' calls.

use serde_json::Value;

use crate::error::CallError;
use crate::fallback::{FallbackKind, Reply};
use crate::shared::{FallbackStep, Shared};

/// The fallbacks of one call that gave up with `error`.
///
/// ```text
/// let mut chain = FallbackChain::new(&shared, business_id, error);
/// while let Some(step) = chain.next_step() {
///     match step {
///         FallbackStep::Ready(body, via) => return Ok(chain.answered(body, via)),
///         FallbackStep::Call(pool) => {
///             if let Some(reply) = chain.on_endpoint(call(pool, ...)) { return Ok(reply) }
///         }
///     }
/// }
/// Err(chain.into_error())
/// ```
#[derive(Debug)]
pub struct FallbackChain<'a, 'b, E> {
    shared: &'a Shared,
    business_id: Option<&'b [u8]>,
    error: CallError<E>,
    attempts: u32,
    next: usize,
}

impl<'a, 'b, E> FallbackChain<'a, 'b, E> {
    /// The chain of `shared` for a call (of `business_id`) that failed with `error`.
    pub fn new(
        shared: &'a Shared,
        business_id: Option<&'b [u8]>,
        error: CallError<E>,
    ) -> FallbackChain<'a, 'b, E> {
        FallbackChain {
            shared,
            business_id,
            attempts: error.attempts,
            error,
            next: 0,
        }
    }

    /// The next fallback with something to offer.
    pub fn next_step(&mut self) -> Option<FallbackStep<'a>> {
        while self.next < self.shared.fallback_count() {
            let i = self.next;
            self.next += 1;
            if let Some(step) = self.shared.fallback(i, self.business_id) {
                return Some(step);
            }
        }
        None
    }

    /// The reply when a stored result or a template answered.
    pub fn answered(self, body: Value, via: FallbackKind) -> Reply {
        self.shared
            .degraded(body, via, self.error.reason, self.attempts, None)
    }

    /// The result of a fallback endpoint's call: the degraded reply when it answered
    /// (the chain is over), else `None` (go on).
    pub fn on_endpoint<F>(&mut self, result: Result<Reply, CallError<F>>) -> Option<Reply> {
        match result {
            Ok(r) => {
                let attempts = self.attempts.saturating_add(r.attempts);
                let reason = self.error.reason;
                Some(self.shared.degraded(
                    r.body,
                    FallbackKind::Endpoint,
                    reason,
                    attempts,
                    r.target,
                ))
            }
            Err(e) => {
                self.attempts = self.attempts.saturating_add(e.attempts);
                None
            }
        }
    }

    /// The primary call's error, when no fallback answered.
    pub fn into_error(self) -> CallError<E> {
        self.error
    }
}
