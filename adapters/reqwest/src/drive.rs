//! The driver loop: read tokio's clock, poll the session, send or sleep, report.

use reqwest::header::{CONTENT_LENGTH, HOST};
use serde_json::Value;
use steadfast_core::ids::EndpointId;
use steadfast_core::time::Timestamp;
use steadfast_http::clock::Epoch;
use steadfast_http::{CallOptions, Now, Outgoing, Reply, Session, Step};
use tokio::time::Instant;

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
    let mut headers = out.headers;
    if c.shared.complete_headers() {
        // reqwest sets both for what it sends, redirects included.
        headers.remove(HOST);
        headers.remove(CONTENT_LENGTH);
    }
    let req = req.headers(headers).body(out.body);
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

async fn exchange(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) {
    let done = crate::exchange::whole(c, out, s.max_body()).await;
    crate::exchange::report(c, s, done);
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
    let s: S<'_> = Session::with_options(&c.shared, c.clock.timestamp(), body, true, options);
    let mut s = s.hedged();
    if s.is_hedged() {
        return crate::hedge::stream(c, s).await;
    }
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
        started(c, s, opened)
    })
    .await
}

/// The stream a finished session started: its call goes on in the stream's reader,
/// to the stream's end.
pub(crate) fn started(
    c: &Inner,
    s: S<'_>,
    mut opened: Option<Opened>,
) -> Result<EventStream, CallError> {
    let clock = c.clock;
    s.into_stream_reading(opened.as_mut().map(|o| &mut o.reader), move || {
        clock.timestamp()
    })?;
    Ok(EventStream::new(opened))
}

/// One stream attempt, until its first event (within the first-event timeout).
async fn open(c: &Inner, s: &mut S<'_>, out: Outgoing<'_>) -> Option<Opened> {
    let reader = s.event_reader(c.clock.now());
    let done = crate::exchange::open(c, out, reader, s.max_body()).await;
    crate::exchange::report_opening(c, s, done)
}
