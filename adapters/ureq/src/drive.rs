//! The driver loop: poll the session, send or sleep, report.

use std::io::Read;

use http::HeaderMap;
use serde_json::Value;
use steadfast_http::body::LimitedBody;
use steadfast_http::{FallbackChain, FallbackStep, Outgoing, Reply, Session, Shared};
use ureq::Agent;
use ureq::http::Response;

use crate::CallError;
use crate::errors::transport;
use crate::stream::EventIter;

type S<'c> = Session<'c, ureq::Error>;

/// The bytes read per `read` of a stream.
const STREAM_READ: usize = 8 * 1024;
/// The bytes read per `read` of a whole body.
const BODY_READ: usize = 64 * 1024;

fn send(
    agent: &Agent,
    out: Outgoing<'_>,
    stream: bool,
) -> Result<Response<ureq::Body>, ureq::Error> {
    let body = out.body;
    let mut req = http::Request::post(out.url).body(&body[..])?;
    *req.headers_mut() = out.headers;
    let config = agent
        .configure_request(req)
        .timeout_global(Some(out.attempt.timeout))
        .timeout_connect(Some(out.attempt.connect_timeout));
    let config = if stream {
        config.timeout_recv_response(Some(
            out.attempt
                .first_event_timeout
                .unwrap_or(out.attempt.timeout),
        ))
    } else {
        config
    };
    agent.run(config.build())
}

/// One call against one pool, without fallbacks.
fn call(
    agent: &Agent,
    shared: &Shared,
    business_id: Option<&[u8]>,
    body: &Value,
) -> Result<Reply, CallError> {
    let mut s: S<'_> = Session::new(shared, business_id, body, false);
    while let Some(out) = s.next_send_blocking() {
        exchange(agent, &mut s, out);
    }
    s.into_reply()
}

/// Sends; `None` when the attempt failed before a response (and was reported).
fn send_reported(
    agent: &Agent,
    s: &mut S<'_>,
    out: Outgoing<'_>,
    stream: bool,
) -> Option<Response<ureq::Body>> {
    match send(agent, out, stream) {
        Ok(r) => Some(r),
        Err(
            e @ (ureq::Error::LargeResponseHeader(..)
            | ureq::Error::Protocol(ureq_proto::Error::HttpParseTooManyHeaders)),
        ) => {
            s.on_head_too_large(Some(e));
            None
        }
        Err(e) => {
            s.on_transport(transport(&e, false), Some(e));
            None
        }
    }
}

fn exchange(agent: &Agent, s: &mut S<'_>, out: Outgoing<'_>) {
    let Some(resp) = send_reported(agent, s, out, false) else {
        return;
    };
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    read_whole(s, status, &parts.headers, body);
}

/// Reads a body whole, within the body limit, and reports the response.
fn read_whole(s: &mut S<'_>, status: u16, headers: &HeaderMap, body: ureq::Body) {
    let Ok(mut whole) = LimitedBody::new(s.max_body(), body.content_length()) else {
        return s.on_body_too_large(status, headers);
    };
    let mut reader = body.into_reader();
    let mut buf = vec![0u8; BODY_READ];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return s.on_response(status, headers, whole.as_slice()),
            Ok(n) => {
                if whole.push(buf.get(..n).unwrap_or_default()).is_err() {
                    return s.on_body_too_large(status, headers);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let e = ureq::Error::from(e);
                return s.on_body_error(status, headers, transport(&e, true), e);
            }
        }
    }
}

/// A call with its fallbacks.
pub(crate) fn chat(
    agent: &Agent,
    shared: &Shared,
    business_id: Option<&[u8]>,
    body: &Value,
) -> Result<Reply, CallError> {
    let err = match call(agent, shared, business_id, body) {
        Ok(reply) => return Ok(reply),
        Err(e) => e,
    };
    let mut chain = FallbackChain::new(shared, business_id, err);
    while let Some(step) = chain.next_step() {
        match step {
            FallbackStep::Ready(v, via) => return Ok(chain.answered(v, via)),
            FallbackStep::Call(pool) => {
                if let Some(r) = chain.on_endpoint(call(agent, pool, business_id, body)) {
                    return Ok(r);
                }
            }
        }
    }
    Err(chain.into_error())
}

/// A response whose first event arrived.
pub(crate) struct Opened {
    pub body: ureq::BodyReader<'static>,
    pub reader: steadfast_http::EventReader,
}

/// A streamed call: retried until the first event arrives.
pub(crate) fn stream(agent: &Agent, shared: &Shared, body: &Value) -> Result<EventIter, CallError> {
    let mut s: S<'_> = Session::new(shared, None, body, true);
    let mut opened = None;
    while let Some(out) = s.next_send_blocking() {
        opened = open(agent, &mut s, out);
    }
    s.into_stream()?;
    Ok(EventIter::new(opened))
}

fn open(agent: &Agent, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let resp = send_reported(agent, s, out, true)?;
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    let headers: HeaderMap = parts.headers;
    let Some(mut reader) = s.stream_reader(status) else {
        read_whole(s, status, &headers, body);
        return None;
    };
    let mut body = body.into_reader();
    let mut buf = vec![0u8; STREAM_READ];
    loop {
        match body.read(&mut buf) {
            Ok(0) => {
                s.on_stream_empty(status, &headers);
                return None;
            }
            Ok(n) => {
                reader.push(buf.get(..n).unwrap_or_default());
                if let Some(ok) = reader.first_event() {
                    s.on_stream_started(status, &headers, ok);
                    return ok.then_some(Opened { body, reader });
                }
                if reader.over_limit() {
                    s.on_body_too_large(status, &headers);
                    return None;
                }
            }
            Err(e) => {
                let e = ureq::Error::from(e);
                s.on_transport(transport(&e, true), Some(e));
                return None;
            }
        }
    }
}
