//! The fallback chain: what a call returns when it gives up, tried in order, and the
//! reply that says it was degraded and why.

use serde_json::Value;
use steadfast_core::retry::GiveUpReason;

use crate::endpoint::EndpointDef;

/// One fallback, tried when a call gives up (after the ones registered before it).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fallback {
    /// Run the call again against another endpoint (another provider, a cheaper
    /// model), with its own breaker, budget and keys, under the same policy. It is a
    /// standby endpoint of the client's engine (numbered after the primary ones): no
    /// ordinary call goes there, and the fallback call goes nowhere else.
    Endpoint(EndpointDef),
    /// The last result stored for the same business id (calls made with
    /// `chat_with`): stale, but an answer. Calls without a business id skip it.
    Stored,
    /// A fixed response.
    Template(Value),
}

impl Fallback {
    /// Its kind.
    pub fn kind(&self) -> FallbackKind {
        match self {
            Fallback::Endpoint(_) => FallbackKind::Endpoint,
            Fallback::Stored => FallbackKind::Stored,
            Fallback::Template(_) => FallbackKind::Template,
        }
    }
}

/// Which kind of fallback produced a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FallbackKind {
    /// A fallback endpoint answered.
    Endpoint,
    /// A stored result was returned.
    Stored,
    /// A fixed template was returned.
    Template,
}

/// Why a reply is degraded: the primary call gave up for `reason`, and `via` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Degraded {
    /// Why the primary call gave up.
    pub reason: GiveUpReason,
    /// The fallback that answered.
    pub via: FallbackKind,
}
