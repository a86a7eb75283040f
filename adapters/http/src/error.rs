//! The adapters' errors: a bad setup, a call that gave up, a stream cut short.

use core::fmt;
use std::error::Error;

use steadfast_core::classify::{Class, Scope};
use steadfast_core::error::ConfigError;
use steadfast_core::ids::Target;
use steadfast_core::retry::GiveUp;
pub use steadfast_core::retry::GiveUpReason;

/// A client that cannot be built from what it was given.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SetupError {
    /// The policy (or an endpoint's limiter) is invalid; the error names the field.
    Config(ConfigError),
    /// No endpoint was given.
    NoEndpoints,
    /// An endpoint has no key, and its provider's environment variable is unset.
    NoKeys {
        /// Its index among the endpoints.
        endpoint: usize,
        /// The variable read (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`).
        env: &'static str,
    },
    /// An endpoint has more keys than the core supports.
    TooManyKeys {
        /// Its index among the endpoints.
        endpoint: usize,
    },
    /// An endpoint's base URL does not start with `http://` or `https://`.
    BaseUrl {
        /// Its index among the endpoints.
        endpoint: usize,
    },
    /// A key cannot be sent in an HTTP header (it has control characters).
    InvalidKey {
        /// Its endpoint's index.
        endpoint: usize,
        /// Its index among the endpoint's keys.
        key: usize,
    },
    /// The operating system's random source failed while seeding.
    Seed,
    /// The shared store cannot be set up; the reason names the field.
    SharedStore(String),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Config(e) => write!(f, "invalid policy: {e}"),
            SetupError::NoEndpoints => f.write_str("no endpoint configured"),
            SetupError::NoKeys { endpoint, env } => {
                write!(f, "endpoint {endpoint} has no key (and {env} is not set)")
            }
            SetupError::TooManyKeys { endpoint } => {
                write!(f, "endpoint {endpoint} has too many keys")
            }
            SetupError::BaseUrl { endpoint } => write!(
                f,
                "endpoint {endpoint}: the base URL must start with http:// or https://"
            ),
            SetupError::InvalidKey { endpoint, key } => write!(
                f,
                "endpoint {endpoint}, key {key}: not a valid HTTP header value"
            ),
            SetupError::Seed => f.write_str("could not read the OS random source"),
            SetupError::SharedStore(reason) => write!(f, "shared store: {reason}"),
        }
    }
}

impl Error for SetupError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            SetupError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for SetupError {
    fn from(e: ConfigError) -> SetupError {
        SetupError::Config(e)
    }
}

/// The default largest response body a client reads: 32 MiB (see [`Exceeded`]).
pub const DEFAULT_MAX_BODY: u64 = 32 * 1024 * 1024;

/// A limit of the client's own that a response broke: the attempt was given up at
/// once, without reading the rest (so memory stays bounded whatever a server sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exceeded {
    /// The body was (or announced it would be) longer than the client's maximum
    /// (`max_body` of the client's builder); for a stream, an unfinished event or the
    /// text received grew past it.
    BodyTooLarge,
    /// The status line and headers were larger than the HTTP client accepts.
    HeadTooLarge,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::BodyTooLarge => f.write_str("response body over the size limit"),
            Exceeded::HeadTooLarge => f.write_str("response headers too large"),
        }
    }
}

/// A call that gave up (after its fallbacks, if any, found nothing).
///
/// `E` is the HTTP client's error type; the last transport failure, when the last
/// attempt had one, is the [`source`](Error::source). The message is the one of the
/// last error body, with every configured key removed from it.
#[derive(Debug)]
#[non_exhaustive]
pub struct CallError<E> {
    /// Why the call gave up.
    pub reason: GiveUpReason,
    /// Attempts made.
    pub attempts: u32,
    /// The HTTP status of the last attempt, when it got one.
    pub status: Option<u16>,
    /// The class of the last failure, when there was an attempt.
    pub class: Option<Class>,
    /// The scope of the last failure, when there was an attempt.
    pub scope: Option<Scope>,
    /// Where the last attempt went.
    pub target: Option<Target>,
    /// The name of the endpoint the last attempt went to.
    pub endpoint: Option<Box<str>>,
    /// The message of the last error body.
    pub message: Option<String>,
    /// The last attempt's transport error.
    pub source: Option<E>,
    /// The client's limit the last attempt's response broke, if it broke one.
    pub exceeded: Option<Exceeded>,
    /// Why the request was refused before any attempt (then `reason` is
    /// [`GiveUpReason::NotRetryable`] and `attempts` 0).
    pub request: Option<Box<RequestError>>,
}

/// A request refused before anything was sent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RequestError {
    /// The request did not serialize to a JSON value.
    Serialize(String),
    /// The call's options break the policy's rules; the error names the field.
    Options(ConfigError),
    /// A canonical request has a field the Anthropic Messages API cannot express (and
    /// some endpoint speaks it); the error names the field.
    Untranslatable(crate::chat::TranslateError),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Serialize(m) => write!(f, "the request is not JSON: {m}"),
            RequestError::Options(e) => write!(f, "invalid call options: {e}"),
            RequestError::Untranslatable(e) => write!(f, "cannot translate the request: {e}"),
        }
    }
}

impl Error for RequestError {}

/// `request` as the JSON value a session sends, from any `Serialize` type
/// (a `serde_json::Value`, async-openai's request structs, one's own).
pub fn request_value<R: serde::Serialize + ?Sized, E>(
    request: &R,
) -> Result<serde_json::Value, CallError<E>> {
    serde_json::to_value(request)
        .map_err(|e| CallError::refused(RequestError::Serialize(e.to_string())))
}

impl<E> CallError<E> {
    /// The error for a give-up, with what the session kept of the last attempt.
    pub fn new(
        give_up: &GiveUp,
        target: Option<Target>,
        message: Option<String>,
        source: Option<E>,
    ) -> CallError<E> {
        CallError {
            reason: give_up.reason,
            attempts: give_up.attempts,
            status: give_up.last_status,
            class: give_up.last_failure.map(|f| f.class),
            scope: give_up.last_failure.map(|f| f.scope),
            target,
            endpoint: None,
            message,
            source,
            exceeded: None,
            request: None,
        }
    }

    /// The error of a request refused before any attempt.
    pub fn refused(request: RequestError) -> CallError<E> {
        CallError {
            reason: GiveUpReason::NotRetryable,
            attempts: 0,
            status: None,
            class: None,
            scope: None,
            target: None,
            endpoint: None,
            message: None,
            source: None,
            exceeded: None,
            request: Some(Box::new(request)),
        }
    }

    /// The same error, its last attempt having broken `exceeded`.
    #[must_use]
    pub fn with_exceeded(mut self, exceeded: Option<Exceeded>) -> CallError<E> {
        self.exceeded = exceeded;
        self
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(request) = &self.request {
            return write!(f, "call refused: {request}");
        }
        write!(f, "call failed: {}", self.reason)?;
        let s = if self.attempts == 1 { "" } else { "s" };
        write!(f, " after {} attempt{s}", self.attempts)?;
        if let Some(status) = self.status {
            write!(f, "; last status {status}")?;
        }
        if let Some(class) = self.class {
            write!(f, " ({class:?})")?;
        }
        if let Some(endpoint) = &self.endpoint {
            write!(f, " at {endpoint}")?;
        }
        if let Some(exceeded) = &self.exceeded {
            write!(f, ": {exceeded}")?;
        } else if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        } else if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl<E: Error + 'static> Error for CallError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn Error + 'static))
    }
}

/// How a stream that had started ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interruption {
    /// The connection failed or closed in the middle of the body.
    Cut,
    /// The stream outlived the attempt timeout.
    Timeout,
    /// No event came for the policy's `stall_timeout`.
    Stalled,
    /// An event's data was not the JSON the API promises.
    Malformed,
    /// The server sent an error event (say, Anthropic's `overloaded_error`).
    ErrorEvent,
    /// The body ended cleanly without the API's final event (`[DONE]`, `message_stop`).
    Unfinished,
    /// An unfinished event, or the text received, grew past the client's body limit
    /// ([`Exceeded::BodyTooLarge`]).
    TooLarge,
}

impl fmt::Display for Interruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Interruption::Cut => "connection cut",
            Interruption::Timeout => "timed out",
            Interruption::Stalled => "stalled",
            Interruption::Malformed => "malformed event",
            Interruption::ErrorEvent => "error event",
            Interruption::Unfinished => "ended without its final event",
            Interruption::TooLarge => "over the body limit",
        })
    }
}

/// A stream that failed after its first event reached the caller. Such a stream is
/// never retried (the caller already holds part of it): the text received so far is
/// handed back instead.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError<E> {
    /// The stream ended early.
    Interrupted {
        /// The generated text received so far (the content deltas, concatenated).
        partial: String,
        /// How it ended.
        cause: Interruption,
        /// The client's error, when there was one.
        source: Option<E>,
    },
}

impl<E> StreamError<E> {
    /// The text received before the interruption.
    pub fn partial(&self) -> &str {
        match self {
            StreamError::Interrupted { partial, .. } => partial,
        }
    }
}

impl<E: fmt::Display> fmt::Display for StreamError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Interrupted {
                partial,
                cause,
                source,
            } => {
                write!(
                    f,
                    "stream interrupted ({cause}) after {} characters",
                    partial.chars().count()
                )?;
                if let Some(s) = source {
                    write!(f, ": {s}")?;
                }
                Ok(())
            }
        }
    }
}

impl<E: Error + 'static> Error for StreamError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            StreamError::Interrupted { source, .. } => {
                source.as_ref().map(|e| e as &(dyn Error + 'static))
            }
        }
    }
}
