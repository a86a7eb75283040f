//! What a client shows of its calls in the caller's observability stack, after the
//! OpenTelemetry GenAI semantic conventions.
//!
//! - With the `tracing` feature: a span per call and one per attempt (a child of the
//!   call's), both `chat` with `otel.name = "chat {gen_ai.request.model}"`, carrying
//!   `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//!   `gen_ai.response.model`, `gen_ai.usage.input_tokens`/`output_tokens`,
//!   `server.address`/`server.port`, `http.response.status_code`, `error.type` on
//!   failure and, on the n-th attempt (n ≥ 2), `http.request.resend_count = n − 1`.
//!   The resilience decisions the conventions lack are `tracing` events inside the call's
//!   span: `steadfast.breaker.transition`, `steadfast.key.cooldown`,
//!   `steadfast.key.disabled`, `steadfast.budget.denied`, `steadfast.retry.scheduled`
//!   (with the wait) and `steadfast.give_up` (with the reason).
//! - With the `otel` feature and a [`Meter`](opentelemetry::metrics::Meter) given to the
//!   builder: the `gen_ai.client.operation.duration`, `gen_ai.client.token.usage` and
//!   (streams) `gen_ai.client.operation.time_to_first_chunk` histograms.
//!
//! No key, header or error message reaches an attribute or a field. The prompt does only
//! when the client is built with `record_prompts(true)` (`gen_ai.input.messages`,
//! `gen_ai.system_instructions`); completions never do.
//!
//! Durations are counted on the session's instants (the face's clock), so a paused or
//! virtual clock drives them too. A stream's call (its span, its duration and its token
//! usage) ends with the stream: its reader keeps it ([`StreamTrace`]) from the first
//! event to the final one, an interruption (then `error.type` names it) or the
//! reader's drop; `gen_ai.client.operation.time_to_first_chunk` is the time to its first
//! event. A face without a reader (the tower executor) ends it at the first event.

// Without `tracing` and `otel` the facts are gathered for nothing to read them.
#![cfg_attr(not(any(feature = "tracing", feature = "otel")), allow(dead_code))]

mod facts;
#[cfg(feature = "otel")]
mod otel;
mod span;

use std::borrow::Cow;
use std::time::Duration;

use serde_json::Value;
use steadfast_core::ids::AttemptId;
use steadfast_core::outcome::Outcome;
use steadfast_core::retry::{Attempt, CallEvent};
use steadfast_core::time::Timestamp;

use crate::error::{CallError, Interruption};
use crate::fallback::FallbackKind;
use crate::raw_request::RequestRef;
use crate::reply::{Answered, Reply};
use crate::session::{Session, Started};
use crate::shared::{EndpointSlot, Shared};
use crate::sse::StreamText;
use crate::stream::EventReader;
pub(crate) use facts::ErrorType;
use facts::{Answer, EndpointFacts};
#[cfg(feature = "otel")]
pub use otel::{DURATION_BUCKETS, TOKEN_BUCKETS};
use span::{AttemptStart, Prompt, Spans};
pub use span::{EnteredSpan, SpanHandle};

/// Whether anything records what the traces gather.
const ACTIVE: bool = cfg!(any(feature = "tracing", feature = "otel"));

/// What a client records of its calls beyond its counters.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// Whether call spans carry the prompt (`gen_ai.input.messages`,
    /// `gen_ai.system_instructions`). Default `false`: prompts are user data.
    pub record_prompts: bool,
    /// The meter the `gen_ai.client.*` histograms are made on (default: none, no
    /// metrics).
    #[cfg(feature = "otel")]
    pub meter: Option<opentelemetry::metrics::Meter>,
}

/// A client's telemetry: what its endpoints are called, and its instruments.
#[derive(Debug)]
pub(crate) struct Telemetry {
    endpoints: Vec<EndpointFacts>,
    record_prompts: bool,
    #[cfg(feature = "otel")]
    instruments: Option<otel::Instruments>,
}

impl Telemetry {
    pub(crate) fn new(config: &TelemetryConfig, endpoints: &[EndpointSlot]) -> Telemetry {
        let endpoints = endpoints
            .iter()
            .map(|e| EndpointFacts::new(e.provider, &e.url, e.model.as_deref()))
            .collect();
        Telemetry {
            endpoints,
            record_prompts: config.record_prompts,
            #[cfg(feature = "otel")]
            instruments: config.meter.as_ref().map(otel::Instruments::new),
        }
    }

    fn endpoint(&self, e: usize) -> Option<&EndpointFacts> {
        self.endpoints.get(e)
    }

    fn instruments(&self) -> Option<&Instruments> {
        #[cfg(feature = "otel")]
        {
            self.instruments.as_ref()
        }
        #[cfg(not(feature = "otel"))]
        {
            None
        }
    }
}

/// The metric instruments (none without the `otel` feature).
#[cfg(feature = "otel")]
type Instruments = otel::Instruments;
/// The metric instruments (none without the `otel` feature).
#[cfg(not(feature = "otel"))]
#[derive(Debug, Clone)]
enum Instruments {}

/// How a call ended, as its span and its metrics tell it.
#[derive(Debug, Default)]
pub(crate) struct End {
    duration: Duration,
    /// A stream's time to its first event.
    first_chunk: Option<Duration>,
    attempts: u32,
    error: Option<Cow<'static, str>>,
    reason: Option<&'static str>,
    fallback: Option<&'static str>,
    answer: Option<Answer>,
}

/// One session's telemetry: its spans and what its metrics need at its end.
#[derive(Debug)]
pub(crate) struct CallTrace {
    start: Timestamp,
    stream: bool,
    /// The model the request names.
    request_model: Option<String>,
    /// Attempts sent by the session (a fallback endpoint's included).
    sent: u32,
    /// The endpoint of the latest attempt.
    endpoint: Option<usize>,
    /// The attempt the latest `HedgeSent` announced.
    hedge: Option<AttemptId>,
    /// Why the latest attempt failed.
    error: Option<ErrorType>,
    spans: Spans,
    ended: bool,
}

impl CallTrace {
    /// A call of `request` (a stream when `stream`) starting at `now`.
    pub(crate) fn start(
        shared: &Shared,
        request: RequestRef<'_>,
        stream: bool,
        now: Timestamp,
    ) -> CallTrace {
        let request_model = ACTIVE.then(|| request.model()).flatten().map(str::to_owned);
        let prompt = shared
            .telemetry
            .record_prompts
            .then(|| prompt_of(request.value()));
        CallTrace {
            start: now,
            stream,
            spans: Spans::call(request_model.as_deref(), stream, prompt),
            request_model,
            sent: 0,
            endpoint: None,
            hedge: None,
            error: None,
            ended: false,
        }
    }

    /// An attempt is handed to the face.
    pub(crate) fn on_attempt(&mut self, shared: &Shared, attempt: &Attempt) {
        if !ACTIVE {
            return;
        }
        self.sent = self.sent.saturating_add(1);
        let e = usize::from(attempt.target.endpoint.0);
        self.endpoint = Some(e);
        let facts = shared.telemetry.endpoint(e);
        let start = AttemptStart {
            id: attempt.id,
            hedge: self.hedge == Some(attempt.id),
            facts,
            model: model(facts, self.request_model.as_deref()),
            n: self.sent,
            target: attempt.target,
            endpoint: shared.endpoint_name(attempt.target.endpoint),
        };
        self.spans.attempt(&start);
    }

    /// The call's core told of an event (a hedge is announced before its attempt).
    pub(crate) fn on_call_event(&mut self, event: &CallEvent) {
        if let CallEvent::HedgeSent { id, .. } = event {
            self.hedge = Some(*id);
        }
    }

    /// Attempt `id` lost a hedge's race and is dropped.
    pub(crate) fn on_cancel(&mut self, id: AttemptId) {
        if ACTIVE {
            self.spans.cancelled(id);
        }
    }

    /// Attempt `id` ended with `outcome`; `body` is its answer when it had one.
    pub(crate) fn on_outcome(&mut self, id: AttemptId, outcome: &Outcome, body: Option<&Answered>) {
        if !ACTIVE {
            return;
        }
        let status = match outcome {
            Outcome::Response(r) => Some(r.status),
            _ => None,
        };
        let error = ErrorType::of(outcome);
        let answer = body
            .filter(|_| error.is_none())
            .map(|b| Answer::from(b.facts()));
        self.spans
            .outcome(id, status, error.as_ref(), answer.as_ref());
        self.error = error;
    }

    /// The call ended at `now` with `reply` (a body, or the give-up).
    fn on_end(&mut self, shared: &Shared, now: Timestamp, mut end: End) {
        if !ACTIVE || std::mem::replace(&mut self.ended, true) {
            return;
        }
        end.duration = now.saturating_duration_since(self.start);
        if self.stream && end.error.is_none() {
            end.first_chunk = Some(end.duration);
        }
        let facts = self.endpoint.and_then(|e| shared.telemetry.endpoint(e));
        self.record(&end, facts, shared.telemetry.instruments());
    }

    /// Ends the call's span with `end` and records its metrics.
    fn record(
        &mut self,
        end: &End,
        facts: Option<&EndpointFacts>,
        instruments: Option<&Instruments>,
    ) {
        self.spans.end(end);
        #[cfg(feature = "otel")]
        if let Some(i) = instruments {
            i.record(end, facts, model(facts, self.request_model.as_deref()));
        }
        #[cfg(not(feature = "otel"))]
        let _ = (facts, instruments);
    }

    /// The end of a call that gave up with `e`.
    fn failed<E>(&self, e: &CallError<E>) -> End {
        let error = match self.error {
            Some(t) => t.label(),
            None => ErrorType::GaveUp(e.reason).label(),
        };
        End {
            attempts: e.attempts,
            error: Some(error),
            reason: Some(e.reason.name()),
            ..End::default()
        }
    }

    /// The call's result is taken (see [`Session::into_reply`]).
    pub(crate) fn on_reply<E>(
        &mut self,
        shared: &Shared,
        now: Timestamp,
        r: &Result<Reply, CallError<E>>,
    ) {
        if !ACTIVE {
            return;
        }
        let end = match r {
            Ok(reply) => End {
                attempts: reply.attempts,
                fallback: reply.degraded.as_ref().map(|d| fallback_name(d.via)),
                answer: Some(Answer::from(reply.facts())),
                ..End::default()
            },
            Err(e) => self.failed(e),
        };
        self.on_end(shared, now, end);
    }

    /// The stream's start is taken with its `reader` (see
    /// [`Session::into_stream_reading`]): a started stream's call goes on in the reader
    /// until the stream ends, at instants read from `clock`.
    pub(crate) fn on_stream_reading<E>(
        &mut self,
        shared: &Shared,
        now: Timestamp,
        r: &Result<Started, CallError<E>>,
        reader: &mut EventReader,
        clock: StreamClock,
    ) {
        let Ok(started) = r else {
            return self.on_stream(shared, now, r);
        };
        if !ACTIVE || std::mem::replace(&mut self.ended, true) {
            return;
        }
        let facts = self
            .endpoint
            .and_then(|e| shared.telemetry.endpoint(e))
            .cloned();
        let end = End {
            attempts: started.attempts,
            first_chunk: Some(now.saturating_duration_since(self.start)),
            ..End::default()
        };
        let trace = std::mem::replace(self, CallTrace::idle());
        reader.set_trace(StreamTrace {
            trace,
            facts,
            instruments: shared.telemetry.instruments().cloned(),
            end,
            clock,
        });
    }

    /// A trace that records nothing (what is left of one moved into a stream).
    fn idle() -> CallTrace {
        CallTrace {
            start: Timestamp::ZERO,
            stream: true,
            request_model: None,
            sent: 0,
            endpoint: None,
            hedge: None,
            error: None,
            spans: Spans::idle(),
            ended: true,
        }
    }

    /// The stream's start is taken (see [`Session::into_stream`]).
    pub(crate) fn on_stream<E>(
        &mut self,
        shared: &Shared,
        now: Timestamp,
        r: &Result<Started, CallError<E>>,
    ) {
        if !ACTIVE {
            return;
        }
        let end = match r {
            Ok(s) => End {
                attempts: s.attempts,
                ..End::default()
            },
            Err(e) => self.failed(e),
        };
        self.on_end(shared, now, end);
    }
}

/// Reads the face's clock, for the end of a stream.
pub type StreamClock = Box<dyn Fn() -> Timestamp + Send + Sync>;

/// A started stream's call, kept by its [`EventReader`] until the stream ends, so that
/// the call's span, its duration and its token usage cover the whole stream.
pub struct StreamTrace {
    trace: CallTrace,
    facts: Option<EndpointFacts>,
    instruments: Option<Instruments>,
    /// The end so far: the attempts and the time to the first event.
    end: End,
    clock: StreamClock,
}

impl std::fmt::Debug for StreamTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTrace").finish_non_exhaustive()
    }
}

impl StreamTrace {
    /// The stream ended (its final event when `cause` is none, else the
    /// interruption), having told `text` of its answer.
    pub(crate) fn finish(mut self, text: &StreamText, cause: Option<Interruption>) {
        let now = (self.clock)();
        let mut end = std::mem::take(&mut self.end);
        end.duration = now.saturating_duration_since(self.trace.start);
        end.error = cause.map(|c| Cow::Borrowed(interruption_name(c)));
        let (input_tokens, output_tokens) = text.usage();
        end.answer = Some(Answer {
            model: text.model().map(str::to_owned),
            input_tokens,
            output_tokens,
        });
        self.trace
            .record(&end, self.facts.as_ref(), self.instruments.as_ref());
    }
}

/// `error.type` of a stream interrupted after its first event.
fn interruption_name(cause: Interruption) -> &'static str {
    match cause {
        Interruption::Cut => "stream_cut",
        Interruption::Timeout => "timeout",
        Interruption::Stalled => "stream_stalled",
        Interruption::Malformed => "malformed_event",
        Interruption::ErrorEvent => "error_event",
        Interruption::Unfinished => "stream_unfinished",
        Interruption::TooLarge => "body_too_large",
    }
}

/// The model an attempt to an endpoint asks for: the one the endpoint forces, else the
/// request's.
fn model<'a>(facts: Option<&'a EndpointFacts>, request: Option<&'a str>) -> Option<&'a str> {
    facts.and_then(|f| f.model.as_deref()).or(request)
}

fn fallback_name(via: FallbackKind) -> &'static str {
    match via {
        FallbackKind::Endpoint => "endpoint",
        FallbackKind::Stored => "stored",
        FallbackKind::Template => "template",
    }
}

/// The request's messages and system prompt as JSON.
fn prompt_of(request: &Value) -> Prompt {
    let json = |v: &Value| serde_json::to_string(v).ok();
    Prompt {
        messages: request.get("messages").and_then(json),
        system: request.get("system").and_then(json),
    }
}

impl<E> Session<'_, E> {
    /// The call's span: a face runs its driver loop in it (`call_span().instrument(..)`
    /// around an async loop, `call_span().entered()` for a blocking one).
    pub fn call_span(&self) -> SpanHandle {
        self.trace.spans.call_span()
    }

    /// The span of the attempt just handed out by [`Session::poll`]: a face runs the
    /// attempt's exchange in it.
    pub fn attempt_span(&self) -> SpanHandle {
        self.trace.spans.attempt_span()
    }
}
