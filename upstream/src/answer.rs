//! What the upstream answers: the status, headers and body, how the bytes go out, and
//! when.

use core::time::Duration;

use crate::wire::headers::Header;
use crate::wire::success::{Rendered, Success, malformed};

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// When the first byte is due, after the request arrived (time to first byte); for
    /// [`Reply::Hang`], nothing ever comes.
    pub after: Duration,
    /// What goes on the wire.
    pub reply: Reply,
    /// The exact wait a 429 asked for (its headers round it up).
    pub retry_after: Option<Duration>,
    /// The request's `Idempotency-Key` attempt, to be finished with
    /// [`crate::Upstream::finish`] when the first byte goes out (for a hang, at once):
    /// a success is then stored for replay, anything else releases the key.
    pub ticket: Option<Ticket>,
}

/// What goes on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An HTTP response.
    Http(Http),
    /// The connection is reset (RST) after the request was read, before a status line.
    Reset,
    /// The request is read and never answered.
    Hang,
    /// The connection is refused (the mock resets it at once).
    Refused,
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub struct Http {
    /// The status code.
    pub status: u16,
    /// Headers in order, lower-case names, without content type or framing (`date`,
    /// the request id, rate limits, `retry-after`, …).
    pub headers: Vec<Header>,
    /// The body.
    pub body: Body,
    /// How its bytes go out.
    pub delivery: Delivery,
}

/// A response body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Bytes as they are (error bodies, pages, scripted bodies).
    Bytes {
        /// The `content-type`.
        content_type: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The success the request asked for, rendered on demand (JSON or a stream).
    Success {
        /// The plan.
        success: Box<Success>,
        /// Broken on purpose: cut JSON, or a stream whose first content event is cut.
        malformed: bool,
    },
    /// `200 OK` filler (`a`s) made as it is written (see [`crate::Fault::Filler`]).
    Filler(Filler),
}

impl Body {
    /// A JSON body.
    pub fn json(bytes: Vec<u8>) -> Body {
        Body::Bytes {
            content_type: "application/json".to_owned(),
            bytes,
        }
    }

    /// The bytes of a [`Body::Success`], broken when it is malformed; `None` for the
    /// other bodies.
    pub fn rendered(&self) -> Option<Rendered> {
        let Body::Success {
            success,
            malformed: bad,
        } = self
        else {
            return None;
        };
        let r = success.render();
        Some(if *bad { malformed(&r) } else { r })
    }
}

/// A filler body to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filler {
    /// Its length; none: endless.
    pub bytes: Option<u64>,
    /// Bytes per write (at least 1).
    pub piece: usize,
    /// The pause before each write.
    pub every: Duration,
    /// Chunked even with a length (always when endless).
    pub chunked: bool,
    /// A first well-formed stream event sent before the filler.
    pub first: Option<Vec<u8>>,
    /// `text/event-stream` rather than `application/json`.
    pub stream: bool,
}

/// How the bytes of a response go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// All of it (a stream's events with their pauses).
    Whole,
    /// The full length announced, half sent, then the connection closes.
    Truncated,
    /// A stream's first `n` events, then the connection closes.
    Cut(u32),
    /// The body at this many bytes per second.
    Trickle(u32),
}

/// An `Idempotency-Key` attempt in progress (see [`Answer::ticket`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub(crate) endpoint: usize,
    pub(crate) key: String,
    pub(crate) store: Option<Success>,
}

impl Answer {
    /// The status, when the reply is an HTTP response.
    pub fn status(&self) -> Option<u16> {
        match &self.reply {
            Reply::Http(h) => Some(h.status),
            _ => None,
        }
    }

    /// The first value of a header (lower-case name).
    pub fn header(&self, name: &str) -> Option<&str> {
        let Reply::Http(h) = &self.reply else {
            return None;
        };
        h.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}
