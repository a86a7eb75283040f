//! How a call that gave up comes back through a layer or a middleware.

use std::fmt;

use steadfast_http::{CallError, GiveUpReason};

/// A call that gave up with no response to hand back (its attempts failed below HTTP,
/// or none could start: an open breaker, the deadline, the budget). The steadfast
/// error, its source the inner service's last error when there was one.
///
/// Boxed, so that the service's `Result` stays the size of its response: a call's
/// result is moved several times on its way out, and a success should not pay for
/// the size of an error.
#[derive(Debug)]
pub struct GaveUp<E>(pub Box<CallError<E>>);

impl<E> GaveUp<E> {
    /// The give-up of `e`.
    pub fn new(e: CallError<E>) -> GaveUp<E> {
        GaveUp(Box::new(e))
    }

    /// Why the call gave up.
    pub fn reason(&self) -> GiveUpReason {
        self.0.reason
    }

    /// The inner service's last error, when the last attempt had one.
    pub fn into_inner_error(self) -> Option<E> {
        self.0.source
    }
}

impl<E: fmt::Display> fmt::Display for GaveUp<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for GaveUp<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Put in the extensions of a response handed back after the call gave up on it
/// (the last error response, so that the inner client reads it as it always does):
/// why the call gave up, and after how many attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GaveUpNote {
    /// Why the call gave up.
    pub reason: GiveUpReason,
    /// Attempts made.
    pub attempts: u32,
}

impl GaveUpNote {
    pub(crate) fn of<E>(e: &CallError<E>) -> GaveUpNote {
        GaveUpNote {
            reason: e.reason,
            attempts: e.attempts,
        }
    }
}
