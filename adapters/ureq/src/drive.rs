//! The driver loop: poll the session, send or sleep, report.

use std::io::Read;

use http::HeaderMap;
use serde_json::Value;
use steadfast_http::{FallbackChain, FallbackStep, Outgoing, Reply, Session, Shared, Step, clock};
use ureq::Agent;
use ureq::http::Response;

use crate::errors::transport;
use crate::stream::EventIter;
use crate::{CallError, MAX_BODY};

type S<'c> = Session<'c, ureq::Error>;

/// The bytes read per `read` of a stream.
const STREAM_READ: usize = 8 * 1024;

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
    loop {
        match s.poll() {
            Step::Send(out) => exchange(agent, &mut s, out),
            Step::Sleep(until) => std::thread::sleep(clock::until(until)),
            Step::Done => return s.into_reply(),
        }
    }
}

fn exchange(agent: &Agent, s: &mut S<'_>, out: Outgoing<'_>) {
    let resp = match send(agent, out, false) {
        Ok(r) => r,
        Err(e) => return s.on_transport(transport(&e, false), Some(e)),
    };
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    match body.into_with_config().limit(MAX_BODY).read_to_vec() {
        Ok(bytes) => s.on_response(status, &parts.headers, &bytes),
        Err(e) => s.on_body_error(status, &parts.headers, transport(&e, true), e),
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
    loop {
        match s.poll() {
            Step::Send(out) => opened = open(agent, &mut s, out),
            Step::Sleep(until) => std::thread::sleep(clock::until(until)),
            Step::Done => break,
        }
    }
    s.into_stream()?;
    Ok(EventIter::new(opened))
}

fn open(agent: &Agent, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let resp = match send(agent, out, true) {
        Ok(r) => r,
        Err(e) => {
            s.on_transport(transport(&e, false), Some(e));
            return None;
        }
    };
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    let headers: HeaderMap = parts.headers;
    let Some(mut reader) = s.stream_reader(status) else {
        match body.into_with_config().limit(MAX_BODY).read_to_vec() {
            Ok(bytes) => s.on_response(status, &headers, &bytes),
            Err(e) => s.on_body_error(status, &headers, transport(&e, true), e),
        }
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
            }
            Err(e) => {
                let e = ureq::Error::from(e);
                s.on_transport(transport(&e, true), Some(e));
                return None;
            }
        }
    }
}
