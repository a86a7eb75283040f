//! The driver loop: read the clock, poll the session, send or sleep, report.

use std::io::Read;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::retry::Attempt;
use steadfast_core::time::Timestamp;
use steadfast_http::body::LimitedBody;
use steadfast_http::clock::Epoch;
use steadfast_http::outcome::is_payload;
use steadfast_http::{CallOptions, EventReader, Now, Outgoing, Reply, Session};
use ureq::Agent;
use ureq::http::Response;

use crate::errors::transport;
use crate::stream::EventIter;
use crate::{CallError, Inner};

pub(crate) type S<'c> = Session<'c, ureq::Error>;

/// The bytes read per `read` of a stream.
const STREAM_READ: usize = 8 * 1024;
/// The bytes read per `read` of a whole body.
const BODY_READ: usize = 64 * 1024;

/// A client's clock: `std`'s monotonic clock, and this thread's sleep.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock(Epoch);

impl Clock {
    /// Timestamps counted from now.
    pub(crate) fn new() -> Clock {
        Clock(Epoch::new(Instant::now()))
    }

    /// The instant now, as the core counts it.
    pub(crate) fn timestamp(&self) -> Timestamp {
        self.0.timestamp(Instant::now())
    }

    /// The instant now, with the wall clock, for a report.
    pub(crate) fn now(&self) -> Now {
        self.0.now(Instant::now())
    }

    /// The std instant of `at`.
    #[cfg(feature = "redis")]
    pub(crate) fn instant(&self, at: Timestamp) -> Instant {
        self.0.instant(at)
    }

    /// The time from now until `at` (zero once it passed).
    pub(crate) fn until(&self, at: Timestamp) -> Duration {
        self.0.instant(at).saturating_duration_since(Instant::now())
    }

    /// Sleeps this thread until `at`; the instant it woke at.
    fn sleep_until(&self, at: Timestamp) -> Timestamp {
        thread::sleep(self.until(at));
        self.timestamp()
    }
}

/// One attempt's request, owned (a stream's is sent from its own thread).
pub(crate) struct Request {
    url: String,
    headers: HeaderMap,
    body: Bytes,
    attempt: Attempt,
}

impl From<Outgoing<'_>> for Request {
    fn from(out: Outgoing<'_>) -> Request {
        Request {
            url: out.url.to_owned(),
            headers: out.headers,
            body: out.body,
            attempt: out.attempt,
        }
    }
}

fn send(agent: &Agent, r: Request, stream: bool) -> Result<Response<ureq::Body>, ureq::Error> {
    let mut req = http::Request::post(r.url.as_str()).body(&r.body[..])?;
    *req.headers_mut() = r.headers;
    let config = agent
        .configure_request(req)
        .timeout_global(Some(r.attempt.timeout))
        .timeout_connect(Some(r.attempt.connect_timeout));
    let config = if stream {
        // Ends the stream's thread early when even the head does not come in time.
        let first = r.attempt.first_event_timeout.unwrap_or(r.attempt.timeout);
        config.timeout_recv_response(Some(first))
    } else {
        config
    };
    agent.run(config.build())
}

/// Takes a lease ask to the shared store from this thread: the answer and the instant
/// it came (a failure without a store).
pub(crate) fn lease(
    c: &Inner,
    ask: &steadfast_http::LeaseAsk,
) -> (steadfast_http::LeaseAnswer, Timestamp) {
    #[cfg(feature = "redis")]
    {
        crate::shared_store::lease(c, ask)
    }
    #[cfg(not(feature = "redis"))]
    {
        let _ = ask;
        (steadfast_http::LeaseAnswer::Failed, c.clock.timestamp())
    }
}

/// The session's next attempt: sleeps and lease asks on the way.
fn next_send<'c>(c: &Inner, s: &mut S<'c>) -> Option<steadfast_http::Outgoing<'c>> {
    let wait = |at| c.clock.sleep_until(at);
    s.next_send_leasing(c.clock.timestamp(), wait, |ask| lease(c, ask))
}

/// A call, with its fallbacks (the session runs them).
pub(crate) fn chat(c: &Inner, options: &CallOptions, body: &Value) -> Result<Reply, CallError> {
    let s: S<'_> = Session::with_options(&c.shared, c.clock.timestamp(), body, false, options);
    let mut s = s.hedged();
    if s.is_hedged() {
        return crate::hedge::chat(c, s);
    }
    let _call = s.call_span().entered();
    while let Some(out) = next_send(c, &mut s) {
        let _attempt = s.attempt_span().entered();
        exchange(c, &mut s, out);
    }
    s.into_reply()
}

/// Reports a request that got no response.
fn report_send_error(c: &Inner, s: &mut S<'_>, e: ureq::Error) {
    match e {
        ureq::Error::LargeResponseHeader(..)
        | ureq::Error::Protocol(ureq_proto::Error::HttpParseTooManyHeaders) => {
            s.on_head_too_large(c.clock.now(), Some(e));
        }
        e => s.on_transport(c.clock.now(), transport(&e, false), Some(e)),
    }
}

fn exchange(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) {
    let done = whole(&c.agent, out.into(), s.max_body());
    report_opening(c, s, done);
}

/// Sends a request and reads its body whole, within `max` bytes.
pub(crate) fn whole(agent: &Agent, request: Request, max: u64) -> Opening {
    match send(agent, request, false) {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            Opening::Whole(parts.status.as_u16(), parts.headers, read_whole(max, body))
        }
        Err(e) => Opening::Failed(e),
    }
}

/// A body read whole, or why not.
pub(crate) enum Whole {
    Read(Vec<u8>),
    TooLarge,
    Failed(ureq::Error),
}

/// Reads a body whole, within `max` bytes.
fn read_whole(max: u64, body: ureq::Body) -> Whole {
    let Ok(mut whole) = LimitedBody::new(max, body.content_length()) else {
        return Whole::TooLarge;
    };
    let mut reader = body.into_reader();
    let mut buf = vec![0u8; BODY_READ];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Whole::Read(whole.into_bytes()),
            Ok(n) => {
                if whole.push(buf.get(..n).unwrap_or_default()).is_err() {
                    return Whole::TooLarge;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Whole::Failed(ureq::Error::from(e)),
        }
    }
}

fn report_whole(c: &Inner, s: &mut S<'_>, status: u16, headers: &HeaderMap, whole: Whole) {
    let now = c.clock.now();
    match whole {
        Whole::Read(body) => s.on_response(now, status, headers, &body),
        Whole::TooLarge => s.on_body_too_large(now, status, headers),
        Whole::Failed(e) => s.on_body_error(now, status, headers, transport(&e, true), e),
    }
}

/// A response whose first event arrived.
pub(crate) struct Opened {
    pub body: ureq::BodyReader<'static>,
    pub reader: EventReader,
    /// The longest gap between events (the policy's `stall_timeout`).
    pub stall: Option<Duration>,
}

/// A streamed call: retried until the first event arrives.
pub(crate) fn stream(
    c: &Inner,
    options: &CallOptions,
    body: &Value,
) -> Result<EventIter, CallError> {
    let s: S<'_> = Session::with_options(&c.shared, c.clock.timestamp(), body, true, options);
    let mut s = s.hedged();
    if s.is_hedged() {
        return crate::hedge::stream(c, s);
    }
    let _call = s.call_span().entered();
    let mut opened = None;
    while let Some(out) = next_send(c, &mut s) {
        let _attempt = s.attempt_span().entered();
        opened = open(c, &mut s, out);
    }
    started(c, s, opened)
}

/// What an attempt came to: a whole answer, or a stream's start.
pub(crate) enum Opening {
    /// No response.
    Failed(ureq::Error),
    /// An error status, its body read whole.
    Whole(u16, HeaderMap, Whole),
    /// A 2xx, and how its events began.
    Events(u16, HeaderMap, First),
}

/// How a 2xx stream began.
pub(crate) enum First {
    /// The first event, well-formed or not (boxed: one allocation per stream start
    /// keeps the other outcomes small).
    Event(bool, Box<Opened>),
    /// The body ended before any event.
    Empty,
    /// An unfinished event grew past the body limit.
    TooLarge,
    /// Reading failed.
    Failed(ureq::Error),
}

/// The stream a finished session started: its call goes on in the stream's reader,
/// to the stream's end.
pub(crate) fn started(
    c: &Inner,
    s: S<'_>,
    mut opened: Option<Opened>,
) -> Result<EventIter, CallError> {
    let clock = c.clock;
    s.into_stream_reading(opened.as_mut().map(|o| &mut o.reader), move || {
        clock.timestamp()
    })?;
    Ok(EventIter::new(opened))
}

/// One stream attempt, until its first event. ureq fixes its timeouts when a request
/// starts, so the wait runs on its own thread and this one gives up on it at the
/// first-event deadline. A thread given up on ends with the attempt's own timeout.
fn open(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let first_by = Instant::now() + out.first_event_timeout();
    let (agent, max, reader) = (c.agent.clone(), s.max_body(), s.event_reader(c.clock.now()));
    let request = Request::from(out);
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = thread::Builder::new()
        .name("steadfast-stream".to_owned())
        .spawn(move || {
            let _ = tx.send(opening(&agent, request, reader, max));
        });
    if spawned.is_err() {
        let t = Transport::new(TransportKind::Other, Phase::BeforeSend);
        s.on_transport(c.clock.now(), t, None);
        return None;
    }
    let kind = match rx.recv_timeout(first_by.saturating_duration_since(Instant::now())) {
        Ok(o) => return report_opening(c, s, o),
        Err(RecvTimeoutError::Timeout) => TransportKind::Timeout,
        Err(RecvTimeoutError::Disconnected) => TransportKind::Other,
    };
    s.on_transport(c.clock.now(), Transport::new(kind, Phase::AfterSend), None);
    None
}

/// Sends a stream's request and reads until its first event (on the stream's thread).
pub(crate) fn opening(agent: &Agent, request: Request, reader: EventReader, max: u64) -> Opening {
    let stall = request.attempt.stall_timeout;
    let resp = match send(agent, request, true) {
        Ok(r) => r,
        Err(e) => return Opening::Failed(e),
    };
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    if !is_payload(status) {
        return Opening::Whole(status, parts.headers, read_whole(max, body));
    }
    Opening::Events(
        status,
        parts.headers,
        first_event(body.into_reader(), reader, stall),
    )
}

fn first_event(
    mut body: ureq::BodyReader<'static>,
    mut reader: EventReader,
    stall: Option<Duration>,
) -> First {
    let mut buf = vec![0u8; STREAM_READ];
    loop {
        match body.read(&mut buf) {
            Ok(0) => return First::Empty,
            Ok(n) => {
                reader.push(buf.get(..n).unwrap_or_default());
                if let Some(ok) = reader.first_event() {
                    let opened = Opened {
                        body,
                        reader,
                        stall,
                    };
                    return First::Event(ok, Box::new(opened));
                }
                if reader.over_limit() {
                    return First::TooLarge;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return First::Failed(ureq::Error::from(e)),
        }
    }
}

/// Reports what an attempt came to (to the attempt selected): the stream, when its
/// first event was what the API sends.
pub(crate) fn report_opening(c: &Inner, s: &mut S<'_>, opening: Opening) -> Option<Opened> {
    let (status, headers, first) = match opening {
        Opening::Failed(e) => {
            report_send_error(c, s, e);
            return None;
        }
        Opening::Whole(status, headers, whole) => {
            report_whole(c, s, status, &headers, whole);
            return None;
        }
        Opening::Events(status, headers, first) => (status, headers, first),
    };
    let now = c.clock.now();
    match first {
        First::Event(ok, opened) => {
            s.on_stream_started(now, status, &headers, ok);
            return ok.then_some(*opened);
        }
        First::Empty => s.on_stream_empty(now, status, &headers),
        First::TooLarge => s.on_body_too_large(now, status, &headers),
        First::Failed(e) => s.on_transport(now, transport(&e, true), Some(e)),
    }
    None
}
