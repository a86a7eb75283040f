//! Classification: an [`Outcome`] becomes a [`Verdict`] with a class, a scope and
//! whether a retry may help.
//!
//! STUB: the rule tables and the body scan are filled in by the classification work;
//! the types below are the contract.

use crate::outcome::Outcome;

/// Who a failure is about, which decides what the retry sequence does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Scope {
    /// The request itself is wrong (400, 404, 413, 422, context too long): retrying it
    /// anywhere gives the same answer.
    Request,
    /// The key is bad (401, 403, exhausted quota): another key may succeed.
    Key,
    /// The endpoint is unwell (5xx, 529, timeouts, resets): back off, count toward the
    /// breaker, fail over.
    Endpoint,
    /// The key is rate limited (429): wait as told, cool the key down.
    Throttle,
}

/// What kind of failure an outcome was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Class {
    /// Any other 4xx.
    BadRequest,
    /// 5xx.
    ServerError,
}

/// What an error body says, scanned from `error.type` / `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorFacts {
    /// The recognised error kind, if any.
    pub kind: Option<ErrorKind>,
}

/// Error kinds recognised in OpenAI and Anthropic error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum ErrorKind {
    /// OpenAI `insufficient_quota`.
    InsufficientQuota,
}

impl ErrorFacts {
    /// Scans an error body without allocating.
    pub fn scan(body: &[u8]) -> ErrorFacts {
        let _ = body;
        ErrorFacts::default()
    }
}

/// The classification of one outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The attempt succeeded.
    Success,
    /// The attempt failed.
    Failure(Failure),
}

/// A classified failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure.
    pub class: Class,
    /// Who it is about.
    pub scope: Scope,
    /// Whether the policy allows another attempt at all.
    pub retryable: bool,
    /// Whether the request may have been processed (failed after it was sent), so a
    /// retry is safe only for an idempotent call.
    pub after_send: bool,
}

/// The classification rules; every default can be overridden.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassifyConfig {}

impl ClassifyConfig {
    /// Classifies one outcome without allocating.
    pub fn classify(&self, outcome: &Outcome) -> Verdict {
        let _ = outcome;
        Verdict::Success
    }

    /// Checks the rules.
    pub fn validate(&self) -> Result<(), crate::error::ConfigError> {
        Ok(())
    }
}
