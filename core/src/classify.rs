//! Classification: an [`Outcome`] becomes a [`Verdict`] with a class, a scope and
//! whether a retry may help.
//!
//! The decision is a few table lookups ([`ClassifyConfig::classify`]): the response
//! body was already reduced to an [`ErrorKind`] by [`ErrorFacts::scan`] when the
//! adapter built the [`Response`], so nothing is parsed on
//! the hot path. Precedence for a response with status 400..=599:
//!
//! 1. an `error.code` named in [`ClassifyConfig::error_codes`] (another provider's
//!    code) decides;
//! 2. else a recognised error kind in the body whose rule is set replaces the status
//!    rule;
//! 3. else an `error.type` named in `error_codes` decides;
//! 4. otherwise the status rule applies;
//! 5. `x-should-retry` (when [`ClassifyConfig::honor_should_retry`]) then forces
//!    `retryable` either way, leaving class and scope alone.

use crate::error::ConfigError;
use crate::outcome::{BodyState, Outcome, Phase, Response, Transport, TransportKind};

mod codes;
#[cfg(feature = "serde")]
mod serde_impl;

pub use codes::{ErrorCodes, MAX_CODE_LEN, MAX_ERROR_CODES};

#[cfg(test)]
mod tests;

/// Who a failure is about, which decides what the retry sequence does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Scope {
    /// The request itself is wrong (400, 404, 413, 422, context too long): retrying it
    /// anywhere gives the same answer.
    Request,
    /// The key is bad (401, 403, exhausted quota): another key may succeed. For this
    /// scope [`Failure::retryable`] means "retry with another key"; the same key is
    /// never retried.
    Key,
    /// The endpoint is unwell (5xx, 529, timeouts, resets): back off, count toward the
    /// breaker, fail over.
    Endpoint,
    /// The key is rate limited (429): wait as told, cool the key down.
    Throttle,
}

/// What kind of failure an outcome was. Success is not a class: it is
/// [`Verdict::Success`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Class {
    /// 400 and any 4xx without a class of its own.
    BadRequest,
    /// 401, or a body saying the key is invalid.
    Unauthorized,
    /// 402.
    PaymentRequired,
    /// 403, or a body saying the key lacks permission.
    Forbidden,
    /// 404, or a body saying the model or resource does not exist.
    NotFound,
    /// 408: the server gave up waiting for the request.
    RequestTimeout,
    /// 409.
    Conflict,
    /// 413, or a body saying the request is too large.
    PayloadTooLarge,
    /// 422.
    Unprocessable,
    /// A body saying the prompt exceeds the model's context window.
    ContextTooLong,
    /// 429, or a body saying the key is rate limited.
    RateLimited,
    /// A body saying the key's quota or billing is exhausted.
    QuotaExhausted,
    /// 500 and any 5xx without a class of its own.
    ServerError,
    /// 502.
    BadGateway,
    /// 503.
    Unavailable,
    /// 504.
    GatewayTimeout,
    /// 501 and 505: the server will never do this.
    NotImplemented,
    /// 529, or a body saying the service is overloaded.
    Overloaded,
    /// A status that is not a final answer here: 1xx, 3xx, below 100 or above 599.
    UnexpectedStatus,
    /// A 2xx whose body was malformed or truncated.
    MalformedBody,
    /// A 2xx body larger than the client will read.
    ResponseTooLarge,
    /// DNS, connection refused, connect timeout or TLS failure.
    Connect,
    /// No (complete) answer within the attempt's timeout.
    Timeout,
    /// The connection was reset before a status line arrived.
    Reset,
    /// The body was cut after the status line arrived.
    BodyCut,
    /// Any other failure below HTTP.
    TransportOther,
    /// The caller gave the attempt up.
    Cancelled,
}

impl Class {
    /// Whether a response of this class leaves it open whether the server did the work:
    /// true for failures *during* the work (500, 502, 504, a malformed 2xx), false for
    /// refusals (4xx, 503, 529), which promise the work was not done.
    pub const fn indeterminate(self) -> bool {
        matches!(
            self,
            Class::ServerError | Class::BadGateway | Class::GatewayTimeout | Class::MalformedBody
        )
    }
}

/// What an error body says, scanned from `error.type` / `error.code` (and, for an
/// invalid-request error, `error.message`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorFacts {
    /// The recognised error kind, if any.
    pub kind: Option<ErrorKind>,
    /// The hash of `error.code`, for codes named in [`ClassifyConfig::error_codes`].
    pub code_hash: Option<u64>,
    /// The hash of `error.type`, likewise.
    pub type_hash: Option<u64>,
}

/// Error kinds recognised in OpenAI and Anthropic error bodies, named as the wire
/// value they come from (which is also their name in configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum ErrorKind {
    /// OpenAI `rate_limit_exceeded`.
    RateLimitExceeded,
    /// OpenAI `insufficient_quota` (sent with a 429, but it is not a rate limit).
    InsufficientQuota,
    /// OpenAI `context_length_exceeded`; also an invalid-request error whose message
    /// says the prompt is too long (Anthropic's `prompt is too long: …`).
    ContextLengthExceeded,
    /// OpenAI `invalid_api_key`.
    InvalidApiKey,
    /// OpenAI `billing_hard_limit_reached`.
    BillingHardLimitReached,
    /// OpenAI `billing_not_active`.
    BillingNotActive,
    /// OpenAI `server_error`.
    ServerError,
    /// OpenAI `model_not_found`.
    ModelNotFound,
    /// `invalid_request_error` (OpenAI and Anthropic); by default it keeps the status rule.
    InvalidRequestError,
    /// Anthropic `overloaded_error`.
    OverloadedError,
    /// Anthropic `rate_limit_error`.
    RateLimitError,
    /// Anthropic `authentication_error`.
    AuthenticationError,
    /// Anthropic `permission_error`.
    PermissionError,
    /// Anthropic `request_too_large`.
    RequestTooLarge,
    /// Anthropic `not_found_error`.
    NotFoundError,
    /// Anthropic `api_error`.
    ApiError,
    /// Anthropic `billing_error`.
    BillingError,
}

impl ErrorKind {
    /// Every kind, in declaration order (the index of the per-kind rule table).
    pub const ALL: [ErrorKind; 17] = [
        ErrorKind::RateLimitExceeded,
        ErrorKind::InsufficientQuota,
        ErrorKind::ContextLengthExceeded,
        ErrorKind::InvalidApiKey,
        ErrorKind::BillingHardLimitReached,
        ErrorKind::BillingNotActive,
        ErrorKind::ServerError,
        ErrorKind::ModelNotFound,
        ErrorKind::InvalidRequestError,
        ErrorKind::OverloadedError,
        ErrorKind::RateLimitError,
        ErrorKind::AuthenticationError,
        ErrorKind::PermissionError,
        ErrorKind::RequestTooLarge,
        ErrorKind::NotFoundError,
        ErrorKind::ApiError,
        ErrorKind::BillingError,
    ];

    /// The wire value this kind is recognised from (and its configuration name).
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::RateLimitExceeded => "rate_limit_exceeded",
            ErrorKind::InsufficientQuota => "insufficient_quota",
            ErrorKind::ContextLengthExceeded => "context_length_exceeded",
            ErrorKind::InvalidApiKey => "invalid_api_key",
            ErrorKind::BillingHardLimitReached => "billing_hard_limit_reached",
            ErrorKind::BillingNotActive => "billing_not_active",
            ErrorKind::ServerError => "server_error",
            ErrorKind::ModelNotFound => "model_not_found",
            ErrorKind::InvalidRequestError => "invalid_request_error",
            ErrorKind::OverloadedError => "overloaded_error",
            ErrorKind::RateLimitError => "rate_limit_error",
            ErrorKind::AuthenticationError => "authentication_error",
            ErrorKind::PermissionError => "permission_error",
            ErrorKind::RequestTooLarge => "request_too_large",
            ErrorKind::NotFoundError => "not_found_error",
            ErrorKind::ApiError => "api_error",
            ErrorKind::BillingError => "billing_error",
        }
    }
}

/// At most this many leading bytes of a body are scanned (64 KiB); error bodies are
/// far smaller, and the bound keeps a huge or hostile body cheap.
pub const SCAN_LIMIT: usize = 64 * 1024;

impl ErrorFacts {
    /// Scans an error body without allocating: the first [`SCAN_LIMIT`] bytes, for the
    /// top-level `"error"` object's `type`, `code` and `message` strings.
    ///
    /// A recognised `code` wins over a recognised `type` (OpenAI sends
    /// `"type":"invalid_request_error","code":"context_length_exceeded"`); an
    /// `invalid_request_error` (or unrecognised) error whose message says the prompt
    /// is too long becomes [`ErrorKind::ContextLengthExceeded`]. Non-JSON, a body
    /// without an `"error"` object and unknown values give `kind: None`; a body cut
    /// short keeps what was read before the cut. Never panics.
    pub fn scan(body: &[u8]) -> ErrorFacts {
        let body = body.get(..SCAN_LIMIT).unwrap_or(body);
        let found = scan::error_members(body);
        let kind = found
            .code
            .and_then(scan::kind_named)
            .or_else(|| found.ty.and_then(scan::kind_named));
        let kind = match kind {
            None | Some(ErrorKind::InvalidRequestError)
                if found.message.is_some_and(scan::says_context_too_long) =>
            {
                Some(ErrorKind::ContextLengthExceeded)
            }
            other => other,
        };
        ErrorFacts {
            kind,
            code_hash: found.code.and_then(scan::hash_unescaped),
            type_hash: found.ty.and_then(scan::hash_unescaped),
        }
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

impl Verdict {
    /// The failure, if it was one.
    pub const fn failure(self) -> Option<Failure> {
        match self {
            Verdict::Success => None,
            Verdict::Failure(f) => Some(f),
        }
    }
}

/// A classified failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure.
    pub class: Class,
    /// Who it is about.
    pub scope: Scope,
    /// Whether the policy allows another attempt at all. For [`Scope::Key`] it means
    /// another *key* may succeed; the same key is never retried.
    pub retryable: bool,
    /// Whether the request may have been processed, so a retry is safe only for an
    /// idempotent call: a transport failure reported in [`Phase::AfterSend`], a 2xx
    /// with a malformed body, an error status whose class is
    /// [`indeterminate`](Class::indeterminate), and a cancellation (unknown, so assumed).
    pub after_send: bool,
}

/// One classification rule: what an outcome matching it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Rule {
    /// The class reported.
    pub class: Class,
    /// The scope reported.
    pub scope: Scope,
    /// Whether another attempt is allowed (for [`Scope::Key`]: with another key).
    pub retryable: bool,
}

impl Rule {
    /// A rule.
    pub const fn new(class: Class, scope: Scope, retryable: bool) -> Rule {
        Rule {
            class,
            scope,
            retryable,
        }
    }
}

/// The lowest status with an overridable rule.
pub const STATUS_MIN: u16 = 400;
/// The highest status with an overridable rule.
pub const STATUS_MAX: u16 = 599;
const STATUS_COUNT: usize = (STATUS_MAX - STATUS_MIN + 1) as usize;

/// Every transport kind, in the order of the per-transport rule table.
pub const TRANSPORT_KINDS: [TransportKind; 8] = [
    TransportKind::Dns,
    TransportKind::ConnectRefused,
    TransportKind::ConnectTimeout,
    TransportKind::Tls,
    TransportKind::Timeout,
    TransportKind::Reset,
    TransportKind::BodyCut,
    TransportKind::Other,
];

/// The classification rules; every default can be overridden.
///
/// Defaults (DESIGN item 1), see [`ClassifyConfig::default_status_rule`],
/// [`ClassifyConfig::default_error_kind_rule`] and
/// [`ClassifyConfig::default_transport_rule`]:
/// - 400, 404, 413, 422 and other 4xx: request scope, not retryable; 401, 402, 403:
///   key scope, retryable (with another key); 408, 409: endpoint, retryable; 429:
///   throttle, retryable; 500, 502, 503, 504, 529 and other 5xx: endpoint, retryable;
///   501, 505: request, not retryable.
/// - `unexpected_status` (1xx, 3xx, < 100, > 599): `UnexpectedStatus`, request, not
///   retryable. `malformed_body` (2xx cut or malformed): `MalformedBody`, endpoint,
///   retryable. `oversized_body` (2xx over the client's body limit):
///   `ResponseTooLarge`, request, not retryable — the same request would get the same
///   answer, and each try downloads up to the limit again.
/// - transport: every kind endpoint scope, retryable.
/// - `honor_should_retry`: true.
///
/// In a config file only the differences from these defaults are written, as maps
/// keyed by status (`"404"`), error kind (`insufficient_quota`) and transport kind.
/// A cancelled attempt is always `Cancelled`, request scope, not retryable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassifyConfig {
    /// Whether `x-should-retry: true|false` overrides `retryable`.
    pub honor_should_retry: bool,
    /// The rule for a 2xx whose body is malformed or truncated.
    pub malformed_body: Rule,
    /// The rule for a 2xx body over the client's limit ([`BodyState::TooLarge`]).
    pub oversized_body: Rule,
    /// The rule for a status that is not a final answer (1xx, 3xx, < 100, > 599).
    pub unexpected_status: Rule,
    /// Error `type` / `code` values of other providers, each with its rule: a body's
    /// `code` named here wins over everything, its `type` over the status rule.
    pub error_codes: ErrorCodes,
    // The tables are private: they are indexed by offset, which only the methods know.
    status: [Rule; STATUS_COUNT],
    error_kind: [Option<Rule>; ErrorKind::ALL.len()],
    transport: [Rule; TRANSPORT_KINDS.len()],
}

impl Default for ClassifyConfig {
    fn default() -> ClassifyConfig {
        ClassifyConfig {
            honor_should_retry: true,
            malformed_body: DEFAULT_MALFORMED_BODY,
            oversized_body: DEFAULT_OVERSIZED_BODY,
            unexpected_status: DEFAULT_UNEXPECTED_STATUS,
            status: core::array::from_fn(|i| {
                ClassifyConfig::default_status_rule(STATUS_MIN.saturating_add(i as u16))
            }),
            error_kind: ErrorKind::ALL.map(ClassifyConfig::default_error_kind_rule),
            error_codes: ErrorCodes::default(),
            transport: TRANSPORT_KINDS.map(ClassifyConfig::default_transport_rule),
        }
    }
}

const DEFAULT_MALFORMED_BODY: Rule = Rule::new(Class::MalformedBody, Scope::Endpoint, true);
const DEFAULT_OVERSIZED_BODY: Rule = Rule::new(Class::ResponseTooLarge, Scope::Request, false);
const DEFAULT_UNEXPECTED_STATUS: Rule = Rule::new(Class::UnexpectedStatus, Scope::Request, false);
const CANCELLED: Failure = Failure {
    class: Class::Cancelled,
    scope: Scope::Request,
    retryable: false,
    after_send: true,
};

impl ClassifyConfig {
    /// Classifies one outcome without allocating or scanning: a few table lookups.
    pub fn classify(&self, outcome: &Outcome) -> Verdict {
        match outcome {
            Outcome::Response(r) => self.classify_response(r),
            Outcome::Transport(t) => Verdict::Failure(self.classify_transport(*t)),
            Outcome::Cancelled => Verdict::Failure(CANCELLED),
        }
    }

    fn classify_response(&self, r: &Response) -> Verdict {
        let (rule, after_send) = match r.status {
            200..=299 => match r.body {
                BodyState::Complete => return Verdict::Success,
                BodyState::Malformed | BodyState::Truncated => (self.malformed_body, true),
                BodyState::TooLarge => (self.oversized_body, true),
            },
            STATUS_MIN..=STATUS_MAX => {
                let rule = self
                    .error_codes
                    .rule_for(r.error.code_hash)
                    .or_else(|| r.error.kind.and_then(|k| self.error_kind_rule(k)))
                    .or_else(|| self.error_codes.rule_for(r.error.type_hash))
                    .or_else(|| self.status_rule(r.status))
                    .unwrap_or(self.unexpected_status);
                (rule, rule.class.indeterminate())
            }
            _ => (self.unexpected_status, false),
        };
        let retryable = match r.hints.should_retry {
            Some(forced) if self.honor_should_retry => forced,
            _ => rule.retryable,
        };
        Verdict::Failure(Failure {
            class: rule.class,
            scope: rule.scope,
            retryable,
            after_send,
        })
    }

    fn classify_transport(&self, t: Transport) -> Failure {
        let rule = self.transport_rule(t.kind);
        // The reported phase is trusted for every kind: connect-type failures normally
        // come `BeforeSend`, but a TLS failure mid-response may truly be `AfterSend`.
        Failure {
            class: rule.class,
            scope: rule.scope,
            retryable: rule.retryable,
            after_send: t.phase == Phase::AfterSend,
        }
    }

    /// The rule for `status`, or `None` outside 400..=599 (those use
    /// [`ClassifyConfig::unexpected_status`], or are successes).
    pub fn status_rule(&self, status: u16) -> Option<Rule> {
        let i = status.checked_sub(STATUS_MIN)?;
        self.status.get(usize::from(i)).copied()
    }

    /// Replaces the rule for `status` (400..=599).
    pub fn set_status(&mut self, status: u16, rule: Rule) -> Result<(), ConfigError> {
        let slot = status
            .checked_sub(STATUS_MIN)
            .and_then(|i| self.status.get_mut(usize::from(i)))
            .ok_or(ConfigError::OutOfRange {
                field: "classify.status",
                min: f64::from(STATUS_MIN),
                max: f64::from(STATUS_MAX),
                got: f64::from(status),
            })?;
        *slot = rule;
        Ok(())
    }

    /// The rule for a body's error kind; `None` means the status rule applies.
    pub fn error_kind_rule(&self, kind: ErrorKind) -> Option<Rule> {
        self.error_kind.get(kind as usize).copied().flatten()
    }

    /// Replaces the rule for `kind`; `None` lets the status rule apply.
    pub fn set_error_kind(&mut self, kind: ErrorKind, rule: Option<Rule>) {
        if let Some(slot) = self.error_kind.get_mut(kind as usize) {
            *slot = rule;
        }
    }

    /// The rule for a transport failure of `kind`.
    pub fn transport_rule(&self, kind: TransportKind) -> Rule {
        self.transport
            .get(transport_index(kind))
            .copied()
            .unwrap_or(ClassifyConfig::default_transport_rule(kind))
    }

    /// Replaces the rule for a transport failure of `kind`.
    pub fn set_transport(&mut self, kind: TransportKind, rule: Rule) {
        if let Some(slot) = self.transport.get_mut(transport_index(kind)) {
            *slot = rule;
        }
    }

    /// Checks the rules. Every combination of class, scope and `retryable` is a
    /// meaningful instruction and the tables are fixed-size, so nothing can be
    /// inconsistent: always `Ok`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The built-in rule for a status in 400..=599 (anything else gets the
    /// unexpected-status rule).
    pub const fn default_status_rule(status: u16) -> Rule {
        use Class as C;
        use Scope as S;
        match status {
            401 => Rule::new(C::Unauthorized, S::Key, true),
            402 => Rule::new(C::PaymentRequired, S::Key, true),
            403 => Rule::new(C::Forbidden, S::Key, true),
            404 => Rule::new(C::NotFound, S::Request, false),
            408 => Rule::new(C::RequestTimeout, S::Endpoint, true),
            409 => Rule::new(C::Conflict, S::Endpoint, true),
            413 => Rule::new(C::PayloadTooLarge, S::Request, false),
            422 => Rule::new(C::Unprocessable, S::Request, false),
            429 => Rule::new(C::RateLimited, S::Throttle, true),
            400..=499 => Rule::new(C::BadRequest, S::Request, false),
            501 | 505 => Rule::new(C::NotImplemented, S::Request, false),
            502 => Rule::new(C::BadGateway, S::Endpoint, true),
            503 => Rule::new(C::Unavailable, S::Endpoint, true),
            504 => Rule::new(C::GatewayTimeout, S::Endpoint, true),
            529 => Rule::new(C::Overloaded, S::Endpoint, true),
            500..=599 => Rule::new(C::ServerError, S::Endpoint, true),
            _ => DEFAULT_UNEXPECTED_STATUS,
        }
    }

    /// The built-in rule for an error kind; `None` (only `invalid_request_error`)
    /// keeps the status rule.
    pub const fn default_error_kind_rule(kind: ErrorKind) -> Option<Rule> {
        use Class as C;
        use ErrorKind as K;
        use Scope as S;
        Some(match kind {
            K::RateLimitExceeded | K::RateLimitError => {
                Rule::new(C::RateLimited, S::Throttle, true)
            }
            K::InsufficientQuota
            | K::BillingHardLimitReached
            | K::BillingNotActive
            | K::BillingError => Rule::new(C::QuotaExhausted, S::Key, true),
            K::ContextLengthExceeded => Rule::new(C::ContextTooLong, S::Request, false),
            K::InvalidApiKey | K::AuthenticationError => Rule::new(C::Unauthorized, S::Key, true),
            K::PermissionError => Rule::new(C::Forbidden, S::Key, true),
            K::ServerError | K::ApiError => Rule::new(C::ServerError, S::Endpoint, true),
            K::ModelNotFound | K::NotFoundError => Rule::new(C::NotFound, S::Request, false),
            K::OverloadedError => Rule::new(C::Overloaded, S::Endpoint, true),
            K::RequestTooLarge => Rule::new(C::PayloadTooLarge, S::Request, false),
            K::InvalidRequestError => return None,
        })
    }

    /// The built-in rule for a transport failure: endpoint scope, retryable.
    pub const fn default_transport_rule(kind: TransportKind) -> Rule {
        let class = match kind {
            TransportKind::Dns
            | TransportKind::ConnectRefused
            | TransportKind::ConnectTimeout
            | TransportKind::Tls => Class::Connect,
            TransportKind::Timeout => Class::Timeout,
            TransportKind::Reset => Class::Reset,
            TransportKind::BodyCut => Class::BodyCut,
            TransportKind::Other => Class::TransportOther,
        };
        Rule::new(class, Scope::Endpoint, true)
    }
}

const fn transport_index(kind: TransportKind) -> usize {
    match kind {
        TransportKind::Dns => 0,
        TransportKind::ConnectRefused => 1,
        TransportKind::ConnectTimeout => 2,
        TransportKind::Tls => 3,
        TransportKind::Timeout => 4,
        TransportKind::Reset => 5,
        TransportKind::BodyCut => 6,
        TransportKind::Other => 7,
    }
}

/// The tokenizer behind [`ErrorFacts::scan`]: just enough JSON to walk two objects.
mod scan;
