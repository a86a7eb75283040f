//! The driver loop: read tokio's clock, poll the session, send or sleep, report.

use serde_json::Value;
use steadfast_core::ids::EndpointId;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::time::Timestamp;
use steadfast_http::body::LimitedBody;
use steadfast_http::clock::Epoch;
use steadfast_http::{CallOptions, Now, Outgoing, Reply, Session, Step};
use tokio::time::Instant;

use crate::errors::{head_too_large, transport};
use crate::stream::EventStream;
use crate::{CallError, Inner};

pub(crate) type S<'c> = Session<'c, reqwest::Error>;

/// A client's clock: tokio's, so that a paused test clock drives its calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock(Epoch);

impl Clock {
    /// Timestamps counted from now.
    pub(crate) fn new() -> Clock {
        Clock(Epoch::new(Instant::now().into_std()))
    }

    /// The origin of its timestamps.
    pub(crate) fn epoch(&self) -> Epoch {
        self.0
    }

    /// The instant now, as the core counts it.
    pub(crate) fn timestamp(&self) -> Timestamp {
        self.0.timestamp(Instant::now().into_std())
    }

    /// The instant now, with the wall clock, for a report.
    pub(crate) fn now(&self) -> Now {
        self.0.now(Instant::now().into_std())
    }

    /// The tokio instant of `at`.
    pub(crate) fn instant(&self, at: Timestamp) -> Instant {
        Instant::from_std(self.0.instant(at))
    }

    pub(crate) async fn sleep_until(&self, at: Timestamp) {
        tokio::time::sleep_until(self.instant(at)).await;
    }
}

/// Each endpoint's URL parsed, in engine order (URL parsing is a measurable part of
/// a request's cost).
pub(crate) fn parsed_urls(shared: &steadfast_http::Shared) -> Vec<Option<reqwest::Url>> {
    (0..shared.endpoint_count())
        .map(|i| {
            let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            shared
                .endpoint_url(id)
                .and_then(|u| reqwest::Url::parse(u).ok())
        })
        .collect()
}

/// The request of `out`, bounded as a whole by the attempt's timeout when `whole`.
pub(crate) fn request(c: &Inner, out: Outgoing<'_>, whole: bool) -> reqwest::RequestBuilder {
    let timeout = out.attempt.timeout;
    let parsed = c.urls.get(usize::from(out.attempt.target.endpoint.0));
    let req = match parsed {
        Some(Some(url)) => c.http.post(url.clone()),
        _ => c.http.post(out.url),
    };
    let req = req.headers(out.headers).body(out.body);
    if whole { req.timeout(timeout) } else { req }
}

/// A call, with its fallbacks (the session runs them).
pub(crate) async fn chat(
    c: &Inner,
    options: &CallOptions,
    body: &Value,
) -> Result<Reply, CallError> {
    let s: S<'_> = Session::with_options(&c.shared, c.clock.timestamp(), body, false, options);
    let mut s = s.hedged();
    if s.is_hedged() {
        return crate::hedge::chat(c, s).await;
    }
    let span = s.call_span();
    span.instrument(async move {
        loop {
            match s.poll(c.clock.timestamp()) {
                Step::Send(out) => s.attempt_span().instrument(exchange(c, &mut s, out)).await,
                Step::Sleep(until) => c.clock.sleep_until(until).await,
                Step::Lease(ask) => crate::lease::ask(c, &mut s, ask).await,
                Step::Done => return s.into_reply(),
            }
        }
    })
    .await
}

/// Sends; `None` when the attempt failed before a response (and was reported).
/// `whole`: the attempt's timeout bounds the whole exchange.
async fn send(
    c: &Inner,
    s: &mut S<'_>,
    out: Outgoing<'_>,
    whole: bool,
) -> Option<reqwest::Response> {
    match request(c, out, whole).send().await {
        Ok(r) => Some(r),
        Err(e) if head_too_large(&e) => {
            s.on_head_too_large(c.clock.now(), Some(e));
            None
        }
        Err(e) => {
            s.on_transport(c.clock.now(), transport(&e, false), Some(e));
            None
        }
    }
}

async fn exchange(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) {
    if let Some(resp) = send(c, s, out, true).await {
        read_whole(c, s, resp).await;
    }
}

/// Reads a body whole, within the body limit, and reports the response.
async fn read_whole(c: &Inner, s: &mut S<'_>, mut resp: reqwest::Response) {
    let status = resp.status().as_u16();
    let headers = std::mem::take(resp.headers_mut());
    let Ok(mut body) = LimitedBody::new(s.max_body(), resp.content_length()) else {
        return s.on_body_too_large(c.clock.now(), status, &headers);
    };
    loop {
        match resp.chunk().await {
            Ok(Some(piece)) => {
                if body.push(&piece).is_err() {
                    return s.on_body_too_large(c.clock.now(), status, &headers);
                }
            }
            Ok(None) => return s.on_response(c.clock.now(), status, &headers, body.as_slice()),
            Err(e) => {
                return s.on_body_error(c.clock.now(), status, &headers, transport(&e, true), e);
            }
        }
    }
}

/// A response whose first event arrived.
pub(crate) struct Opened {
    pub resp: reqwest::Response,
    pub reader: steadfast_http::EventReader,
    /// The longest gap between events (the policy's `stall_timeout`).
    pub stall: Option<std::time::Duration>,
}

/// A streamed call: retried until the first event arrives.
pub(crate) async fn stream(
    c: &Inner,
    options: &CallOptions,
    body: &Value,
) -> Result<EventStream, CallError> {
    let mut s: S<'_> = Session::with_options(&c.shared, c.clock.timestamp(), body, true, options);
    let span = s.call_span();
    span.instrument(async move {
        let mut opened = None;
        loop {
            match s.poll(c.clock.timestamp()) {
                Step::Send(out) => opened = s.attempt_span().instrument(open(c, &mut s, out)).await,
                Step::Sleep(until) => c.clock.sleep_until(until).await,
                Step::Lease(ask) => crate::lease::ask(c, &mut s, ask).await,
                Step::Done => break,
            }
        }
        s.into_stream()?;
        Ok(EventStream::new(opened))
    })
    .await
}

/// One stream attempt, until its first event (within the first-event timeout).
async fn open(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let first_by = Instant::now() + out.first_event_timeout();
    let stall = out.attempt.stall_timeout;
    let attempt = async {
        // With a stall timeout, a stream is bounded by its gaps, not its whole length.
        let mut resp = send(c, s, out, stall.is_none()).await?;
        let status = resp.status().as_u16();
        let Some(mut reader) = s.stream_reader(c.clock.now(), status) else {
            read_whole(c, s, resp).await;
            return None;
        };
        loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    reader.push(&bytes);
                    if let Some(ok) = reader.first_event() {
                        s.on_stream_started(c.clock.now(), status, resp.headers(), ok);
                        return ok.then_some(Opened {
                            resp,
                            reader,
                            stall,
                        });
                    }
                    if reader.over_limit() {
                        s.on_body_too_large(c.clock.now(), status, resp.headers());
                        return None;
                    }
                }
                Ok(None) => {
                    s.on_stream_empty(c.clock.now(), status, resp.headers());
                    return None;
                }
                Err(e) => {
                    s.on_transport(c.clock.now(), transport(&e, true), Some(e));
                    return None;
                }
            }
        }
    };
    match tokio::time::timeout_at(first_by, attempt).await {
        Ok(opened) => opened,
        Err(_) => {
            let t = Transport::new(TransportKind::Timeout, Phase::AfterSend);
            s.on_transport(c.clock.now(), t, None);
            None
        }
    }
}
