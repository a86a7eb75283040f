//! One attempt's exchange, touching no session: what it came to is returned, then
//! reported. The plain driver runs one at a time, the hedged one races two.

use std::time::Duration;

use reqwest::header::HeaderMap;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::body::LimitedBody;
use steadfast_http::outcome::is_payload;
use steadfast_http::{EventReader, Outgoing};
use tokio::time::Instant;

use crate::Inner;
use crate::drive::{Opened, S, request};
use crate::errors::{head_too_large, transport};

/// What one whole exchange came to.
pub(crate) enum Exchanged {
    Response {
        status: u16,
        headers: HeaderMap,
        body: LimitedBody,
    },
    BodyError {
        status: u16,
        headers: HeaderMap,
        transport: Transport,
        error: reqwest::Error,
    },
    BodyTooLarge {
        status: u16,
        headers: HeaderMap,
    },
    HeadTooLarge(reqwest::Error),
    Transport(Transport, reqwest::Error),
}

/// What a stream attempt came to, by its first event.
pub(crate) enum Opening {
    /// Its first event arrived (`ok`: what the API sends).
    First {
        resp: reqwest::Response,
        reader: Box<EventReader>,
        ok: bool,
        stall: Option<Duration>,
    },
    /// A 2xx body that ended before any event.
    Empty(reqwest::Response),
    /// A 2xx body whose unfinished first event grew past the limit.
    TooLarge(reqwest::Response),
    /// No stream: an error answer read whole, or a failure before any byte.
    Whole(Exchanged),
    /// No first event within the first-event timeout.
    TimedOut,
}

/// Sends `out`; a failure before a response is what the exchange came to.
async fn send(c: &Inner, out: Outgoing<'_>, whole: bool) -> Result<reqwest::Response, Exchanged> {
    request(c, out, whole).send().await.map_err(|e| {
        if head_too_large(&e) {
            Exchanged::HeadTooLarge(e)
        } else {
            Exchanged::Transport(transport(&e, false), e)
        }
    })
}

/// Sends `out` and reads its body whole within `max_body`.
pub(crate) async fn whole(c: &Inner, out: Outgoing<'_>, max_body: u64) -> Exchanged {
    match send(c, out, true).await {
        Ok(resp) => read_body(resp, max_body).await,
        Err(failed) => failed,
    }
}

/// Reads a body whole within `max_body`.
async fn read_body(mut resp: reqwest::Response, max_body: u64) -> Exchanged {
    let status = resp.status().as_u16();
    let headers = std::mem::take(resp.headers_mut());
    let Ok(mut body) = LimitedBody::new(max_body, resp.content_length()) else {
        return Exchanged::BodyTooLarge { status, headers };
    };
    loop {
        match resp.chunk().await {
            Ok(Some(piece)) => {
                if body.push_bytes(piece).is_err() {
                    return Exchanged::BodyTooLarge { status, headers };
                }
            }
            Ok(None) => {
                return Exchanged::Response {
                    status,
                    headers,
                    body,
                };
            }
            Err(e) => {
                return Exchanged::BodyError {
                    status,
                    headers,
                    transport: transport(&e, true),
                    error: e,
                };
            }
        }
    }
}

/// Sends the stream attempt `out` and reads until its first event, within its
/// first-event timeout; `reader` reads the attempt's events.
pub(crate) async fn open(
    c: &Inner,
    out: Outgoing<'_>,
    mut reader: EventReader,
    max_body: u64,
) -> Opening {
    let first_by = Instant::now() + out.first_event_timeout();
    let stall = out.attempt.stall_timeout;
    // With a stall timeout, a stream is bounded by its gaps, not its whole length.
    let whole_bounded = stall.is_none();
    let attempt = async {
        let mut resp = match send(c, out, whole_bounded).await {
            Ok(resp) => resp,
            Err(failed) => return Opening::Whole(failed),
        };
        if !is_payload(resp.status().as_u16()) {
            return Opening::Whole(read_body(resp, max_body).await);
        }
        loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    reader.push(&bytes);
                    if let Some(ok) = reader.first_event() {
                        return Opening::First {
                            resp,
                            reader: Box::new(reader),
                            ok,
                            stall,
                        };
                    }
                    if reader.over_limit() {
                        return Opening::TooLarge(resp);
                    }
                }
                Ok(None) => return Opening::Empty(resp),
                Err(e) => return Opening::Whole(Exchanged::Transport(transport(&e, true), e)),
            }
        }
    };
    tokio::time::timeout_at(first_by, attempt)
        .await
        .unwrap_or(Opening::TimedOut)
}

/// Reports what an exchange came to (to the attempt selected).
pub(crate) fn report(c: &Inner, s: &mut S<'_>, done: Exchanged) {
    let now = c.clock.now();
    match done {
        Exchanged::Response {
            status,
            headers,
            body,
        } => s.on_response(now, status, &headers, body.as_slice()),
        Exchanged::BodyError {
            status,
            headers,
            transport,
            error,
        } => s.on_body_error(now, status, &headers, transport, error),
        Exchanged::BodyTooLarge { status, headers } => s.on_body_too_large(now, status, &headers),
        Exchanged::HeadTooLarge(e) => s.on_head_too_large(now, Some(e)),
        Exchanged::Transport(t, e) => s.on_transport(now, t, Some(e)),
    }
}

/// Reports what a stream attempt came to (to the attempt selected): the stream, when
/// its first event was what the API sends.
pub(crate) fn report_opening(c: &Inner, s: &mut S<'_>, done: Opening) -> Option<Opened> {
    let now = c.clock.now();
    let status = |r: &reqwest::Response| r.status().as_u16();
    match done {
        Opening::First {
            resp,
            reader,
            ok,
            stall,
        } => {
            s.on_stream_started(now, status(&resp), resp.headers(), ok);
            ok.then_some(Opened {
                resp,
                reader: *reader,
                stall,
            })
        }
        Opening::Empty(resp) => {
            s.on_stream_empty(now, status(&resp), resp.headers());
            None
        }
        Opening::TooLarge(resp) => {
            s.on_body_too_large(now, status(&resp), resp.headers());
            None
        }
        Opening::Whole(done) => {
            report(c, s, done);
            None
        }
        Opening::TimedOut => {
            let t = Transport::new(TransportKind::Timeout, Phase::AfterSend);
            s.on_transport(now, t, None);
            None
        }
    }
}
