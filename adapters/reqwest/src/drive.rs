//! The driver loop: poll the session, send or sleep, report.

use serde_json::Value;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::body::LimitedBody;
use steadfast_http::{FallbackChain, FallbackStep, Outgoing, Reply, Session, Shared, Step, clock};

use crate::CallError;
use crate::errors::{head_too_large, transport};
use crate::stream::EventStream;

type S<'c> = Session<'c, reqwest::Error>;

async fn sleep_until(until: steadfast_core::time::Timestamp) {
    tokio::time::sleep_until(tokio::time::Instant::from_std(clock::instant(until))).await;
}

fn request(http: &reqwest::Client, out: Outgoing<'_>) -> reqwest::RequestBuilder {
    http.post(out.url)
        .headers(out.headers)
        .body(out.body)
        .timeout(out.attempt.timeout)
}

/// One call against one pool, without fallbacks.
async fn call(
    http: &reqwest::Client,
    shared: &Shared,
    business_id: Option<&[u8]>,
    body: &Value,
) -> Result<Reply, CallError> {
    let mut s: S<'_> = Session::new(shared, business_id, body, false);
    loop {
        match s.poll() {
            Step::Send(out) => exchange(http, &mut s, out).await,
            Step::Sleep(until) => sleep_until(until).await,
            Step::Done => return s.into_reply(),
        }
    }
}

/// Sends; `None` when the attempt failed before a response (and was reported).
async fn send(s: &mut S<'_>, req: reqwest::RequestBuilder) -> Option<reqwest::Response> {
    match req.send().await {
        Ok(r) => Some(r),
        Err(e) if head_too_large(&e) => {
            s.on_head_too_large(Some(e));
            None
        }
        Err(e) => {
            s.on_transport(transport(&e, false), Some(e));
            None
        }
    }
}

async fn exchange(http: &reqwest::Client, s: &mut S<'_>, out: Outgoing<'_>) {
    if let Some(resp) = send(s, request(http, out)).await {
        read_whole(s, resp).await;
    }
}

/// Reads a body whole, within the body limit, and reports the response.
async fn read_whole(s: &mut S<'_>, mut resp: reqwest::Response) {
    let status = resp.status().as_u16();
    let headers = std::mem::take(resp.headers_mut());
    let Ok(mut body) = LimitedBody::new(s.max_body(), resp.content_length()) else {
        return s.on_body_too_large(status, &headers);
    };
    loop {
        match resp.chunk().await {
            Ok(Some(piece)) => {
                if body.push(&piece).is_err() {
                    return s.on_body_too_large(status, &headers);
                }
            }
            Ok(None) => return s.on_response(status, &headers, body.as_slice()),
            Err(e) => return s.on_body_error(status, &headers, transport(&e, true), e),
        }
    }
}

/// A call with its fallbacks.
pub(crate) async fn chat(
    http: &reqwest::Client,
    shared: &Shared,
    business_id: Option<&[u8]>,
    body: &Value,
) -> Result<Reply, CallError> {
    let err = match call(http, shared, business_id, body).await {
        Ok(reply) => return Ok(reply),
        Err(e) => e,
    };
    let mut chain = FallbackChain::new(shared, business_id, err);
    while let Some(step) = chain.next_step() {
        match step {
            FallbackStep::Ready(v, via) => return Ok(chain.answered(v, via)),
            FallbackStep::Call(pool) => {
                if let Some(r) = chain.on_endpoint(call(http, pool, business_id, body).await) {
                    return Ok(r);
                }
            }
        }
    }
    Err(chain.into_error())
}

/// A response whose first event arrived.
pub(crate) struct Opened {
    pub resp: reqwest::Response,
    pub reader: steadfast_http::EventReader,
}

/// A streamed call: retried until the first event arrives.
pub(crate) async fn stream(
    http: &reqwest::Client,
    shared: &Shared,
    body: &Value,
) -> Result<EventStream, CallError> {
    let mut s: S<'_> = Session::new(shared, None, body, true);
    let mut opened = None;
    loop {
        match s.poll() {
            Step::Send(out) => opened = open(http, &mut s, out).await,
            Step::Sleep(until) => sleep_until(until).await,
            Step::Done => break,
        }
    }
    s.into_stream()?;
    Ok(EventStream::new(opened))
}

async fn open(http: &reqwest::Client, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let first_by = tokio::time::Instant::now() + out.first_event_timeout();
    let attempt = async {
        let mut resp = send(s, request(http, out)).await?;
        let status = resp.status().as_u16();
        let Some(mut reader) = s.stream_reader(status) else {
            read_whole(s, resp).await;
            return None;
        };
        loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    reader.push(&bytes);
                    if let Some(ok) = reader.first_event() {
                        s.on_stream_started(status, resp.headers(), ok);
                        return ok.then_some(Opened { resp, reader });
                    }
                    if reader.over_limit() {
                        s.on_body_too_large(status, resp.headers());
                        return None;
                    }
                }
                Ok(None) => {
                    s.on_stream_empty(status, resp.headers());
                    return None;
                }
                Err(e) => {
                    s.on_transport(transport(&e, true), Some(e));
                    return None;
                }
            }
        }
    };
    match tokio::time::timeout_at(first_by, attempt).await {
        Ok(opened) => opened,
        Err(_) => {
            let t = Transport::new(TransportKind::Timeout, Phase::AfterSend);
            s.on_transport(t, None);
            None
        }
    }
}
