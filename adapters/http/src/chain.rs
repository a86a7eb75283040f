//! The fallback chain of a session whose primary call gave up: the order, the attempt
//! count and the degraded reply. A fallback endpoint's call is one more call of the
//! same engine, restricted to that (standby) endpoint; the session runs it like the
//! primary one, so the faces only send what it asks.

use serde_json::Value;
use steadfast_core::ids::Target;
use steadfast_core::time::Timestamp;

use crate::error::CallError;
use crate::fallback::FallbackKind;
use crate::reply::{Answered, Reply};
use crate::shared::{FallbackStep, Shared};

/// Where a session is in its fallbacks.
#[derive(Debug)]
pub(crate) struct Chain<E> {
    /// The primary call's error, once it gave up: what the session returns when no
    /// fallback answers.
    primary: Option<CallError<E>>,
    /// The next fallback to try.
    next: usize,
    /// Attempts made by the calls that gave up (the primary one and fallback calls).
    attempts: u32,
    /// The stored result or template that answered.
    answer: Option<(Value, FallbackKind)>,
}

impl<E> Chain<E> {
    /// A chain not started.
    pub(crate) fn new() -> Chain<E> {
        Chain {
            primary: None,
            next: 0,
            attempts: 0,
            answer: None,
        }
    }

    /// Whether the primary call gave up (a fallback call is running or ran).
    pub(crate) fn started(&self) -> bool {
        self.primary.is_some()
    }

    /// A call gave up with `error`: the first is the primary call's.
    pub(crate) fn gave_up(&mut self, error: CallError<E>) {
        self.attempts = self.attempts.saturating_add(error.attempts);
        self.primary.get_or_insert(error);
    }

    /// The fallback endpoint to call next, or `None` when the chain is over (a stored
    /// result or a template answered, or nothing is left).
    pub(crate) fn next_call(
        &mut self,
        shared: &Shared,
        now: Timestamp,
        business_id: Option<&[u8]>,
    ) -> Option<steadfast_core::ids::EndpointId> {
        while let Some(step) = shared.fallback(self.next, now, business_id) {
            self.next += 1;
            match step {
                Some(FallbackStep::Call(id)) => return Some(id),
                Some(FallbackStep::Ready(body, via)) => {
                    self.answer = Some((body, via));
                    return None;
                }
                None => {}
            }
        }
        None
    }

    /// The reply of a call that succeeded with `attempts` at `target`: a fallback
    /// endpoint's (degraded) once the chain started, else the primary call's.
    pub(crate) fn succeeded(
        self,
        shared: &Shared,
        answer: Answered,
        attempts: u32,
        target: Target,
    ) -> Reply {
        let Some(primary) = self.primary else {
            return shared.reply(answer, attempts, target);
        };
        let attempts = self.attempts.saturating_add(attempts);
        let via = FallbackKind::Endpoint;
        let body = answer.into_value();
        shared.degraded(body, via, primary.reason, attempts, Some(target))
    }

    /// The result of a session whose last call gave up: the stored result or template
    /// that answered (degraded), or the primary call's error; `None` when the chain
    /// never started (the error is the last call's).
    pub(crate) fn ended(self, shared: &Shared) -> Option<Result<Reply, CallError<E>>> {
        let primary = self.primary?;
        Some(match self.answer {
            Some((body, via)) => {
                Ok(shared.degraded(body, via, primary.reason, self.attempts, None))
            }
            None => Err(primary),
        })
    }
}
