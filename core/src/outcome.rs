//! What happened to one attempt, as the adapter reports it to the core.
//!
//! Outcomes are plain `Copy` data with no client types in them: an adapter maps its
//! HTTP client's response or error into an [`Outcome`] and hands it to the core.
//! [`Response::from_http`] does the parsing (headers into [`Hints`], the body into
//! [`ErrorFacts`]) so that no adapter needs its own.

use crate::classify::ErrorFacts;
use crate::hints::Hints;

/// What happened to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Outcome {
    /// The server answered with a status line (any status, success or not).
    Response(Response),
    /// The attempt failed below HTTP: DNS, connect, TLS, timeout, reset, cut body.
    Transport(Transport),
    /// The caller gave the attempt up (its task was cancelled, the user stopped it).
    Cancelled,
}

/// The facts of an HTTP response the core needs: nothing more is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Server hints parsed from the headers.
    pub hints: Hints,
    /// What the body says about an error (`error.type` / `error.code`).
    pub error: ErrorFacts,
    /// Whether a success body arrived whole and well-formed.
    pub body: BodyState,
    /// Tokens the request actually used, when the body reports them (for the limiter).
    pub tokens_used: Option<u64>,
}

impl Response {
    /// A response with `status` and no hints, error facts or token usage.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            hints: Hints::default(),
            error: ErrorFacts::default(),
            body: BodyState::Complete,
            tokens_used: None,
        }
    }

    /// Builds a response from raw HTTP parts: headers are parsed into [`Hints`]
    /// (HTTP-dates relative to the response's `Date`, else `wall_now_unix`), and an
    /// error status's body is scanned for `error.type` / `error.code`.
    pub fn from_http<'h, I>(status: u16, headers: I, body: &[u8], wall_now_unix: u64) -> Response
    where
        I: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let mut response = Response::new(status);
        response.hints = Hints::from_headers(headers, wall_now_unix);
        if !(200..300).contains(&status) {
            response.error = ErrorFacts::scan(body);
        }
        response
    }

    /// The same response with `hints`.
    #[must_use]
    pub fn with_hints(mut self, hints: Hints) -> Response {
        self.hints = hints;
        self
    }

    /// The same response with `error`.
    #[must_use]
    pub fn with_error(mut self, error: ErrorFacts) -> Response {
        self.error = error;
        self
    }

    /// The same response with `body`.
    #[must_use]
    pub fn with_body(mut self, body: BodyState) -> Response {
        self.body = body;
        self
    }
}

impl From<Response> for Outcome {
    fn from(r: Response) -> Outcome {
        Outcome::Response(r)
    }
}

impl From<Transport> for Outcome {
    fn from(t: Transport) -> Outcome {
        Outcome::Transport(t)
    }
}

/// Whether the body of a response arrived whole and parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BodyState {
    /// Whole and well-formed (or not checked).
    #[default]
    Complete,
    /// Arrived whole but is not the JSON the API promises.
    Malformed,
    /// Ended early (the connection closed before `Content-Length` or the last chunk).
    Truncated,
    /// Larger than the client will read (its body limit), so not read.
    TooLarge,
}

/// A failure below HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Transport {
    /// What failed.
    pub kind: TransportKind,
    /// Whether the request may have reached the server.
    pub phase: Phase,
}

impl Transport {
    /// A transport failure of `kind` in `phase`.
    pub const fn new(kind: TransportKind, phase: Phase) -> Transport {
        Transport { kind, phase }
    }
}

/// What failed below HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum TransportKind {
    /// The host name did not resolve.
    Dns,
    /// Nothing listened (connection refused).
    ConnectRefused,
    /// The TCP connection was not established in time.
    ConnectTimeout,
    /// The TLS handshake failed.
    Tls,
    /// No (complete) answer within the attempt's timeout (or time to first event).
    Timeout,
    /// The connection was reset or closed before a status line arrived.
    Reset,
    /// The body was cut after the status line arrived.
    BodyCut,
    /// Any other I/O failure.
    Other,
}

/// Whether a failed attempt may have been processed by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Phase {
    /// Failed before the request left: always safe to retry.
    BeforeSend,
    /// Failed after the request was sent: the server may have done the work, so a
    /// retry is safe only for an idempotent call.
    AfterSend,
}
