//! A streamed chat through the gateway. The client's call retries and fails over until
//! the first event is in hand; only then does the gateway send its `200` and the
//! events, in the client's API's shape (the session translates them). A failure after that is passed on as a
//! well-formed error event (OpenAI's error chunk, Anthropic's `error` event), counted,
//! and the stream ends: nothing is retried once a byte has reached the client.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Either, StreamBody};
use hyper::body::Frame;
use serde_json::Value;
use steadfast_http::chat::{ApiError, ApiErrorKind};
use steadfast_http::{Interruption, Provider, SseEvent};
use tokio::time::Instant;

use super::Gateway;
use super::chat::{Chat, ending_answer};
use super::flight::Lead;
use super::reply::{Answer, Body, GaveUp};

/// Starts the stream of `chat`; `lead` receives every byte sent, for the requests
/// waiting on its idempotency key.
pub async fn run(gw: &Arc<Gateway>, chat: &Chat, lead: Option<Lead>) -> Response<Body> {
    let opening = gw
        .client
        .stream_with_options(chat.request.value(), &chat.options);
    let opened = gw.ending.unless(pin!(opening)).await;
    let events = match opened {
        Some(Ok(events)) => events,
        Some(Err(e)) => {
            let answer = GaveUp::of(chat.shape, &e, gw.client.now()).answer(chat.shape);
            return whole(answer, lead);
        }
        None => return whole(ending_answer(chat.shape), lead),
    };
    gw.metrics.on_first_chunk(chat.arrived.elapsed());
    let relay = Relay {
        gw: Arc::clone(gw),
        events,
        shape: chat.shape,
        pending: VecDeque::new(),
        done: false,
        clean: false,
        usage: None,
        arrived: chat.arrived,
        capture: lead.map(|l| (l, Vec::new())),
    };
    let body = StreamBody::new(futures_util::stream::unfold(relay, Relay::step));
    let mut r = Response::new(Either::Right(body.boxed_unsync()));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The content type of a stream.
pub const EVENT_STREAM: &str = "text/event-stream";

/// The longest stream kept for the requests that share its idempotency key.
const MAX_SHARED: usize = 8 * 1024 * 1024;

/// A whole answer (the stream never started), handed to the waiting requests too.
fn whole(answer: Answer, lead: Option<Lead>) -> Response<Body> {
    let response = answer.to_response();
    if let Some(lead) = lead {
        lead.finish(answer, false);
    }
    response
}

/// The stream between the client's events and the gateway's response body.
struct Relay {
    gw: Arc<Gateway>,
    events: steadfast_reqwest::EventStream,
    shape: Provider,
    /// Bytes ready to send.
    pending: VecDeque<Bytes>,
    /// Whether the last bytes are queued.
    done: bool,
    /// Whether the stream ended with its final event (not cut).
    clean: bool,
    /// `(input, output)` tokens, when a chunk reported them.
    usage: Option<(u64, u64)>,
    arrived: Instant,
    /// The running request of the idempotency key, and every byte sent so far.
    capture: Option<(Lead, Vec<u8>)>,
}

type Item = Result<Frame<Bytes>, Infallible>;

impl Relay {
    async fn step(mut self) -> Option<(Item, Relay)> {
        loop {
            if let Some(bytes) = self.pending.pop_front() {
                if let Some((_, sent)) = &mut self.capture {
                    sent.extend_from_slice(&bytes);
                }
                // A stream too long to keep is not shared: the waiting requests, let go,
                // run their own call (with the same idempotency key upstream).
                if self
                    .capture
                    .as_ref()
                    .is_some_and(|(_, sent)| sent.len() > MAX_SHARED)
                {
                    self.capture = None;
                }
                return Some((Ok(Frame::data(bytes)), self));
            }
            if self.done {
                self.on_end();
                return None;
            }
            let Some(next) = self.gw.ending.unless(self.events.next()).await else {
                self.on_failure(
                    ApiErrorKind::Overloaded,
                    "the gateway is shutting down".into(),
                );
                continue;
            };
            match next {
                Some(Ok(event)) => self.on_event(&event),
                Some(Err(e)) => {
                    let kind = match &e {
                        steadfast_reqwest::StreamError::Interrupted {
                            cause: Interruption::Timeout | Interruption::Stalled,
                            ..
                        } => ApiErrorKind::Timeout,
                        _ => ApiErrorKind::Server,
                    };
                    self.on_failure(kind, format!("upstream {e}"));
                }
                None => {
                    self.clean = true;
                    self.done = true;
                }
            }
        }
    }

    /// One event from upstream, in the client's API's shape: passed on.
    fn on_event(&mut self, event: &SseEvent) {
        if let Some((input, output)) = event.json().as_ref().and_then(usage) {
            self.usage = Some((input, output));
        }
        self.pending.push_back(Bytes::from(event.to_wire()));
    }

    fn on_upstream_error(&mut self, e: &ApiError) {
        self.pending.push_back(error_event(self.shape, e));
        self.gw.metrics.on_stream_cut();
        self.done = true;
    }

    /// The stream fails after its first byte: an error event ends it.
    fn on_failure(&mut self, kind: ApiErrorKind, message: String) {
        let e = ApiError::new(self.shape, kind, message);
        self.on_upstream_error(&e);
    }

    fn on_end(&mut self) {
        let m = &self.gw.metrics;
        m.on_operation(self.arrived.elapsed());
        if let Some((input, output)) = self.usage {
            m.on_usage(input, output);
        }
        if let Some((lead, sent)) = self.capture.take() {
            let answer = Answer {
                status: StatusCode::OK,
                content_type: EVENT_STREAM,
                headers: vec![(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))],
                body: Bytes::from(sent),
            };
            lead.finish(answer, self.clean);
        }
    }
}

/// An error as the last event of a stream of `shape`.
fn error_event(shape: Provider, e: &ApiError) -> Bytes {
    let event = match shape {
        Provider::OpenAi => SseEvent {
            data: e.to_openai().to_string(),
            ..SseEvent::default()
        },
        Provider::Anthropic => SseEvent {
            event: Some("error".into()),
            data: e.to_anthropic().to_string(),
            id: None,
        },
    };
    Bytes::from(event.to_wire())
}

/// An event's `(input, output)` tokens: an OpenAI chunk's `usage`, or Anthropic's
/// `message_delta` (whose usage is the final count).
fn usage(event: &Value) -> Option<(u64, u64)> {
    let u = event.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    n("prompt_tokens")
        .zip(n("completion_tokens"))
        .or_else(|| n("input_tokens").zip(n("output_tokens")))
}
