//! One logical call's bookkeeping, independent of the HTTP client: the adapter asks
//! [`Session::poll`] what to do, does it (send, or sleep), and reports what happened.
//! The session reads the clock, locks the engine only around the core's calls, drains
//! the events into the counters and keeps what the result or the error needs.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::ids::Target;
use steadfast_core::outcome::{Outcome, Transport};
use steadfast_core::retry::{Attempt, Call, Decision, Finish, GiveUp};
use steadfast_core::time::Timestamp;

use crate::body;
use crate::clock;
use crate::error::{CallError, Exceeded};
use crate::fallback::Reply;
use crate::outcome;
use crate::provider::{IDEMPOTENCY_KEY, Provider};
use crate::shared::Shared;
use crate::stream::EventReader;

/// What the adapter must do next.
// Boxing `Send` would allocate per attempt; a `Step` is consumed at once.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step<'c> {
    /// Send this request, then report its outcome.
    Send(Outgoing<'c>),
    /// Sleep until this instant (see [`clock::instant`]), then poll again.
    Sleep(Timestamp),
    /// The call is over: take the result with [`Session::into_reply`] or
    /// [`Session::into_stream`].
    Done,
}

/// One attempt's request, ready to send.
#[derive(Debug)]
pub struct Outgoing<'c> {
    /// The core's attempt (timeouts, target, idempotency key).
    pub attempt: Attempt,
    /// `POST` here.
    pub url: &'c str,
    /// Content type, authentication (marked sensitive), API version, `Idempotency-Key`.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Bytes,
}

impl Outgoing<'_> {
    /// The span the whole exchange may take (for a stream: its whole length).
    pub fn timeout(&self) -> Duration {
        self.attempt.timeout
    }

    /// The span until the first event of a stream must arrive.
    pub fn first_event_timeout(&self) -> Duration {
        self.attempt
            .first_event_timeout
            .unwrap_or(self.attempt.timeout)
    }
}

/// A started stream: where it goes and how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Where the stream comes from.
    pub target: Target,
    /// Its provider (how to read its events).
    pub provider: Provider,
    /// Attempts it took.
    pub attempts: u32,
}

/// One logical call. `E` is the HTTP client's error type, kept as the source of the
/// error when the call gives up.
pub struct Session<'c, E> {
    shared: &'c Shared,
    call: Call,
    request: &'c Value,
    stream: bool,
    business_key: Option<IdempotencyKey>,
    bodies: Vec<Option<Bytes>>,
    in_flight: Option<Attempt>,
    last_target: Option<Target>,
    last_message: Option<String>,
    last_source: Option<E>,
    last_exceeded: Option<Exceeded>,
    success: Option<Value>,
    finish: Option<Finish>,
}

impl<E> std::fmt::Debug for Session<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("idempotency_key", &self.call.idempotency_key())
            .field("attempts", &self.call.attempts())
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl<'c, E> Session<'c, E> {
    /// Starts a call of `request` (a stream when `stream`). Its idempotency key is
    /// derived from `business_id` when given, else drawn from the engine's RNG.
    pub fn new(
        shared: &'c Shared,
        business_id: Option<&[u8]>,
        request: &'c Value,
        stream: bool,
    ) -> Session<'c, E> {
        let now = clock::now();
        let mut call = shared.lock().start_call(now, business_id);
        if shared.estimate_tokens {
            let len = body::prepare(request, None, stream).len();
            call = call.with_tokens(body::estimate_tokens(request, len));
        }
        Session {
            shared,
            business_key: business_id.map(|_| call.idempotency_key()),
            call,
            request,
            stream,
            bodies: vec![None; shared.endpoints.len()],
            in_flight: None,
            last_target: None,
            last_message: None,
            last_source: None,
            last_exceeded: None,
            success: None,
            finish: None,
        }
    }

    /// The idempotency key every attempt carries.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.call.idempotency_key()
    }

    /// [`Session::poll`] for a blocking driver: sleeps this thread through every
    /// [`Step::Sleep`]; the next attempt to send, or `None` when the call is done.
    pub fn next_send_blocking(&mut self) -> Option<Outgoing<'c>> {
        loop {
            match self.poll() {
                Step::Send(out) => return Some(out),
                Step::Sleep(until) => std::thread::sleep(crate::clock::until(until)),
                Step::Done => return None,
            }
        }
    }

    /// What to do next.
    pub fn poll(&mut self) -> Step<'c> {
        if self.finish.is_some() {
            return Step::Done;
        }
        let now = clock::now();
        let decision = {
            let mut engine = self.shared.lock();
            let d = self.call.poll_decision(now, &mut *engine);
            while let Some(ev) = engine.poll_event() {
                self.shared.metrics.on_engine_event(&ev);
            }
            d
        };
        self.drain_call_events();
        match decision {
            Decision::Send(attempt) => Step::Send(self.outgoing(attempt)),
            Decision::Wait(until) => Step::Sleep(until),
            Decision::Done(finish) => {
                self.finish = Some(finish);
                if let (Finish::Success { .. }, Some(key), Some(body)) =
                    (finish, self.business_key, &self.success)
                {
                    self.shared.store_result(key, body);
                }
                Step::Done
            }
        }
    }

    fn drain_call_events(&mut self) {
        while let Some(ev) = self.call.poll_event() {
            self.shared.metrics.on_call_event(&ev);
        }
    }

    fn outgoing(&mut self, attempt: Attempt) -> Outgoing<'c> {
        let shared: &'c Shared = self.shared;
        let e = usize::from(attempt.target.endpoint.0);
        let k = usize::from(attempt.target.key.0);
        self.in_flight = Some(attempt);
        self.last_target = Some(attempt.target);
        let (url, mut headers, model) = match shared.endpoints.get(e) {
            Some(slot) => (
                slot.url.as_str(),
                slot.headers.get(k).cloned().unwrap_or_default(),
                slot.model.as_deref(),
            ),
            None => ("", HeaderMap::new(), None),
        };
        let mut buf = [0u8; 36];
        if let Ok(v) = HeaderValue::from_str(attempt.idempotency_key.as_str(&mut buf)) {
            headers.insert(IDEMPOTENCY_KEY, v);
        }
        let body = match self.bodies.get_mut(e) {
            Some(Some(b)) => b.clone(),
            Some(slot) => slot
                .insert(body::prepare(self.request, model, self.stream))
                .clone(),
            None => body::prepare(self.request, model, self.stream),
        };
        Outgoing {
            attempt,
            url,
            headers,
            body,
        }
    }

    /// The largest response body to read (see [`crate::body::LimitedBody`]).
    pub fn max_body(&self) -> u64 {
        self.shared.max_body
    }

    /// Reports the in-flight attempt's outcome; false when there was none.
    fn report(&mut self, outcome: Outcome) -> bool {
        self.last_exceeded = None;
        let Some(attempt) = self.in_flight.take() else {
            return false;
        };
        // A late report (the call already timed the attempt out) is dropped: the
        // core has counted it as a timeout.
        self.call
            .on_outcome(clock::now(), attempt.id, outcome)
            .is_ok()
    }

    /// Reports a response that arrived whole.
    pub fn on_response(&mut self, status: u16, headers: &HeaderMap, body: &[u8]) {
        let (outcome, json) = outcome::response(status, headers, body, clock::wall_unix());
        self.last_source = None;
        self.last_message = if json.is_some() {
            None
        } else {
            body::error_message(body).map(|m| self.shared.redact(&m))
        };
        self.success = json;
        self.report(outcome);
    }

    /// Reports a response whose body could not be read whole: for a 2xx, the body's
    /// loss is the failure `t`; otherwise the status (and headers) still tell.
    pub fn on_body_error(&mut self, status: u16, headers: &HeaderMap, t: Transport, source: E) {
        if (200..300).contains(&status) {
            self.on_transport(t, Some(source));
        } else {
            self.on_response(status, headers, b"");
            self.last_source = Some(source);
        }
    }

    /// Reports a response whose body broke the body limit (announced, or reached while
    /// reading; for a stream, before its first event): for a 2xx, a malformed body;
    /// otherwise the status (and headers) still tell. The rest is not to be read.
    pub fn on_body_too_large(&mut self, status: u16, headers: &HeaderMap) {
        self.last_message = None;
        self.last_source = None;
        let wall = clock::wall_unix();
        let o = if (200..300).contains(&status) {
            outcome::oversized(status, headers, wall)
        } else {
            outcome::response(status, headers, b"", wall).0
        };
        if self.report(o) {
            self.last_exceeded = Some(Exceeded::BodyTooLarge);
        }
    }

    /// Reports a response whose status line and headers were larger than the client
    /// accepts, with the client's error.
    pub fn on_head_too_large(&mut self, source: Option<E>) {
        self.last_message = None;
        self.last_source = source;
        if self.report(outcome::head_too_large()) {
            self.last_exceeded = Some(Exceeded::HeadTooLarge);
        }
    }

    /// Reports a failure below HTTP, with the client's error when there is one.
    pub fn on_transport(&mut self, t: Transport, source: Option<E>) {
        self.last_message = None;
        self.last_source = source;
        self.report(outcome::transport(t));
    }

    /// The reader for a stream's body when its status line says events follow (2xx);
    /// `None` when the body is an error to read whole and report with
    /// [`Session::on_response`].
    pub fn stream_reader(&self, status: u16) -> Option<EventReader> {
        if !(200..300).contains(&status) {
            return None;
        }
        let provider = self.in_flight.map_or(Provider::OpenAi, |a| {
            self.shared.provider(a.target.endpoint)
        });
        let reader = EventReader::new(provider).with_limit(self.shared.max_body);
        Some(reader.with_metrics(Arc::clone(&self.shared.metrics)))
    }

    /// Reports a 2xx stream whose first event arrived; `first_event_ok` is false when
    /// it was not what the API sends (the attempt then counts as a malformed body).
    pub fn on_stream_started(&mut self, status: u16, headers: &HeaderMap, first_event_ok: bool) {
        self.last_source = None;
        self.last_message = None;
        let o = outcome::stream_started(status, headers, first_event_ok, clock::wall_unix());
        self.report(o);
    }

    /// Reports a 2xx stream that ended cleanly before any event: a malformed body.
    pub fn on_stream_empty(&mut self, status: u16, headers: &HeaderMap) {
        self.on_stream_started(status, headers, false);
    }

    fn error(&mut self, g: &GiveUp) -> CallError<E> {
        let target = self.last_target.map(|t| self.shared.public_target(t));
        CallError::new(g, target, self.last_message.take(), self.last_source.take())
            .with_exceeded(self.last_exceeded.take())
    }

    /// The result of a finished non-stream call.
    pub fn into_reply(mut self) -> Result<Reply, CallError<E>> {
        let finish = self.finished();
        match finish {
            Finish::Success { attempts, target } => Ok(Reply {
                body: self.success.take().unwrap_or(Value::Null),
                attempts,
                target: Some(self.shared.public_target(target)),
                degraded: None,
            }),
            Finish::GaveUp(g) => Err(self.error(&g)),
        }
    }

    /// The result of a finished stream call: where it started.
    pub fn into_stream(mut self) -> Result<Started, CallError<E>> {
        match self.finished() {
            Finish::Success { attempts, target } => Ok(Started {
                target: self.shared.public_target(target),
                provider: self.shared.provider(target.endpoint),
                attempts,
            }),
            Finish::GaveUp(g) => Err(self.error(&g)),
        }
    }

    /// The finish, cancelling the call first if it is still running.
    fn finished(&mut self) -> Finish {
        if let Some(f) = self.finish {
            return f;
        }
        let f = self.cancel();
        self.finish = Some(f);
        f
    }

    fn cancel(&mut self) -> Finish {
        let now = clock::now();
        let f = {
            let mut engine = self.shared.lock();
            let f = self.call.cancel(now, &mut *engine);
            while let Some(ev) = engine.poll_event() {
                self.shared.metrics.on_engine_event(&ev);
            }
            f
        };
        self.drain_call_events();
        f
    }
}

impl<E> Drop for Session<'_, E> {
    /// A call dropped mid-flight (its future was cancelled) is cancelled in the core,
    /// so the engine releases what its attempt held.
    fn drop(&mut self) {
        if self.finish.is_none() && !self.call.is_done() {
            self.cancel();
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
