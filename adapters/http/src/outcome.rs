//! Mapping a finished HTTP exchange, or a client error, into the core's [`Outcome`].
//!
//! Each client translates its own error type into a [`Transport`] (what failed and
//! whether the request may have been sent); the helpers here do the parts that are the
//! same for every client.

use std::error::Error;
use std::io;

use http::HeaderMap;
use serde_json::Value;
use steadfast_core::outcome::{BodyState, Outcome, Phase, Response, Transport, TransportKind};

use crate::body::tokens_used;
use crate::reply::Answered;

/// Whether a response with `status` carries the payload (2xx): its body is the answer
/// or the stream; any other body is an error to read whole.
pub fn is_payload(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The outcome of a response that arrived whole, and its body parsed as JSON when the
/// status is 2xx and the body is JSON. A 2xx body that is not JSON is
/// [`BodyState::Malformed`]; token usage is read from a JSON success body.
pub fn response(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    wall_now_unix: u64,
) -> (Outcome, Option<Value>) {
    let pairs = headers
        .iter()
        .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
    let mut r = Response::from_http(status, pairs, body, wall_now_unix);
    if !is_payload(status) {
        return (Outcome::Response(r), None);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            r.tokens_used = tokens_used(&v);
            (Outcome::Response(r), Some(v))
        }
        Err(_) => (Outcome::Response(r.with_body(BodyState::Malformed)), None),
    }
}

/// [`response`], reading a 2xx body only for its facts (its `model` and `usage`): for
/// a body the face passes on as it came.
pub(crate) fn response_peeked(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    wall_now_unix: u64,
) -> (Outcome, Option<Answered>) {
    if !is_payload(status) {
        let (outcome, _) = response(status, headers, body, wall_now_unix);
        return (outcome, None);
    }
    let pairs = headers
        .iter()
        .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
    let mut r = Response::from_http(status, pairs, body, wall_now_unix);
    match crate::peek::peek(body) {
        Some(facts) => {
            r.tokens_used = facts.usage.map(|u| u.total_tokens);
            (Outcome::Response(r), Some(Answered::Passed(facts)))
        }
        None => (Outcome::Response(r.with_body(BodyState::Malformed)), None),
    }
}

/// The same outcome with its body marked malformed (a 2xx whose JSON is not what the
/// API sends).
pub fn malformed(outcome: Outcome) -> Outcome {
    with_body(outcome, BodyState::Malformed)
}

/// A response outcome with its body in `state`; any other outcome unchanged.
fn with_body(outcome: Outcome, state: BodyState) -> Outcome {
    match outcome {
        Outcome::Response(r) => Outcome::Response(r.with_body(state)),
        other => other,
    }
}

/// The outcome of a 2xx stream whose first event arrived (well-formed or not).
pub fn stream_started(
    status: u16,
    headers: &HeaderMap,
    first_event_ok: bool,
    wall_now_unix: u64,
) -> Outcome {
    let pairs = headers
        .iter()
        .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
    let r = Response::from_http(status, pairs, b"", wall_now_unix);
    let state = if first_event_ok {
        BodyState::Complete
    } else {
        BodyState::Malformed
    };
    Outcome::Response(r.with_body(state))
}

/// The outcome of a 2xx whose body was not read because it broke the client's body
/// limit, with the headers' hints; the core decides whether that is worth a retry.
pub fn oversized(status: u16, headers: &HeaderMap, wall_now_unix: u64) -> Outcome {
    let started = stream_started(status, headers, true, wall_now_unix);
    with_body(started, BodyState::TooLarge)
}

/// The outcome of a response whose status line and headers were too large to read:
/// a failure after the request was sent.
pub fn head_too_large() -> Outcome {
    Outcome::Transport(Transport::new(TransportKind::Other, Phase::AfterSend))
}

/// The outcome of a failure below HTTP.
pub fn transport(t: Transport) -> Outcome {
    Outcome::Transport(t)
}

/// The first [`io::Error`] in an error's `source` chain (the error itself included).
pub fn find_io_error<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a io::Error> {
    let mut cur: Option<&'a (dyn Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io);
        }
        cur = e.source();
    }
    None
}

/// What an I/O error kind means below HTTP: refused, timed out, reset; anything else
/// is [`TransportKind::Other`]. An end of file is a reset before a status line and a
/// cut body after it, so the caller passes whether a status line arrived.
pub fn io_kind(kind: io::ErrorKind, status_seen: bool) -> TransportKind {
    use io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => TransportKind::ConnectRefused,
        K::TimedOut | K::WouldBlock => TransportKind::Timeout,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::NotConnected => {
            if status_seen {
                TransportKind::BodyCut
            } else {
                TransportKind::Reset
            }
        }
        K::UnexpectedEof if status_seen => TransportKind::BodyCut,
        K::UnexpectedEof => TransportKind::Reset,
        _ => TransportKind::Other,
    }
}

/// What a reqwest-style client error says about itself (reqwest 0.12 and 0.13 alike),
/// read by [`client_transport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientErrorFacts {
    /// The connection could not be made.
    pub connect: bool,
    /// A timeout fired.
    pub timeout: bool,
    /// The request could not be built (nothing was sent).
    pub builder: bool,
    /// The first I/O error's kind in its `source` chain.
    pub io: Option<io::ErrorKind>,
    /// Whether a status line had arrived when it failed.
    pub status_seen: bool,
}

/// The transport failure of a client error: connect failures before the request
/// left, a builder error before anything was sent, else by the I/O error, a timeout,
/// or (hyper's "connection closed before message completed" carries no I/O error) a
/// reset before the status line and a cut body after it.
pub fn client_transport(f: ClientErrorFacts) -> Transport {
    if f.connect {
        let kind = if f.timeout {
            TransportKind::ConnectTimeout
        } else {
            match f.io.map(|k| io_kind(k, false)) {
                Some(TransportKind::ConnectRefused) => TransportKind::ConnectRefused,
                _ => TransportKind::Other,
            }
        };
        return Transport::new(kind, Phase::BeforeSend);
    }
    if f.builder {
        return Transport::new(TransportKind::Other, Phase::BeforeSend);
    }
    let kind = if f.timeout {
        TransportKind::Timeout
    } else if let Some(k) = f.io {
        io_kind(k, f.status_seen)
    } else if f.status_seen {
        TransportKind::BodyCut
    } else {
        TransportKind::Reset
    };
    Transport::new(kind, phase_of(kind))
}

/// The phase of a failure of `kind`: connect-type failures happen before the request
/// leaves; everything else may come after.
pub fn phase_of(kind: TransportKind) -> Phase {
    match kind {
        TransportKind::Dns
        | TransportKind::ConnectRefused
        | TransportKind::ConnectTimeout
        | TransportKind::Tls => Phase::BeforeSend,
        TransportKind::Timeout
        | TransportKind::Reset
        | TransportKind::BodyCut
        | TransportKind::Other => Phase::AfterSend,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn success_is_parsed_and_counted() {
        let h = HeaderMap::new();
        let (o, v) = response(200, &h, br#"{"usage":{"total_tokens":9}}"#, 0);
        let Outcome::Response(r) = o else { panic!() };
        assert_eq!(r.body, BodyState::Complete);
        assert_eq!(r.tokens_used, Some(9));
        assert!(v.is_some());
        let (o, v) = response(200, &h, br#"{"usage":"#, 0);
        let Outcome::Response(r) = o else { panic!() };
        assert_eq!(r.body, BodyState::Malformed);
        assert!(v.is_none());
    }

    #[test]
    fn errors_carry_hints_and_facts() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        let (o, v) = response(429, &h, br#"{"error":{"code":"insufficient_quota"}}"#, 0);
        let Outcome::Response(r) = o else { panic!() };
        assert!(v.is_none());
        assert_eq!(r.status, 429);
        assert!(r.error.kind.is_some());
        assert!(r.hints.wait_hint(0).is_some());
    }

    #[test]
    fn io_translation() {
        let e = io::Error::new(io::ErrorKind::ConnectionRefused, "no");
        let wrapped: Box<dyn Error + 'static> = Box::new(Wrap(e));
        let found = find_io_error(wrapped.as_ref()).unwrap();
        assert_eq!(io_kind(found.kind(), false), TransportKind::ConnectRefused);
        assert_eq!(
            io_kind(io::ErrorKind::UnexpectedEof, true),
            TransportKind::BodyCut
        );
        assert_eq!(
            io_kind(io::ErrorKind::ConnectionReset, false),
            TransportKind::Reset
        );
        assert_eq!(phase_of(TransportKind::ConnectRefused), Phase::BeforeSend);
        assert_eq!(phase_of(TransportKind::Reset), Phase::AfterSend);
    }

    #[derive(Debug)]
    struct Wrap(io::Error);
    impl std::fmt::Display for Wrap {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("wrap")
        }
    }
    impl Error for Wrap {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }
}
