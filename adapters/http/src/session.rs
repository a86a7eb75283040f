//! One logical call's bookkeeping, independent of the HTTP client: the adapter asks
//! [`Session::poll`] what to do, does it (send, or sleep), and reports what happened.
//! The session reads no clock: every input carries its instant. It locks the engine
//! only around the core's calls, counts the events once the lock is released, keeps
//! what the result or the error needs, and runs the fallbacks of a call that gave up.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::ids::{AttemptId, EndpointId, EndpointSet, Target};
use steadfast_core::outcome::{Outcome, Transport};
use steadfast_core::retry::{Attempt, Call, Decision, Finish, GiveUp, RetryConfig};
use steadfast_core::shared::{LeaseAnswer, LeaseAsk};
use steadfast_core::time::Timestamp;

use crate::body;
use crate::chain::Chain;
use crate::chat;
use crate::clock::Now;
use crate::error::{CallError, Exceeded, RequestError};
use crate::metrics::CallTally;
use crate::options::CallOptions;
use crate::outcome::{self, is_payload};
use crate::provider::{IDEMPOTENCY_KEY, Provider};
use crate::raw_request::RequestRef;
use crate::reply::{Answered, Reply};
use crate::shared::Shared;
use crate::stream::EventReader;
use crate::telemetry::CallTrace;

/// What the adapter must do next.
// Boxing `Send` would allocate per attempt; a `Step` is consumed at once.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step<'c> {
    /// Send this request, then report its outcome.
    Send(Outgoing<'c>),
    /// Sleep until this instant (see [`crate::clock::Epoch::instant`]), then poll
    /// again.
    Sleep(Timestamp),
    /// The call is over: take the result with [`Session::into_reply`] or
    /// [`Session::into_stream`].
    Done,
    /// The call waits for a shared limit's lease: ask the store (see
    /// [`Shared::shared_limit`] for what to ask), report the answer with
    /// [`Session::on_lease`], then poll again. Only with [`crate::Setup::shared_limits`].
    Lease(LeaseAsk),
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

/// What the session keeps of the last attempt, for the error of a call that gives up.
struct Last<E> {
    target: Option<Target>,
    message: Option<String>,
    source: Option<E>,
    exceeded: Option<Exceeded>,
}

/// One logical call (and, when it gives up, its fallbacks). `E` is the HTTP client's
/// error type, kept as the source of the error when the call gives up.
pub struct Session<'c, E> {
    shared: &'c Shared,
    /// Boxed: a call is over 1 KB, and it is made under the engine's lock and kept
    /// here without being copied again.
    call: Box<Call>,
    request: RequestRef<'c>,
    stream: bool,
    business_id: Option<&'c [u8]>,
    /// The call's own retry rules, when it changes the client's.
    retry: Option<RetryConfig>,
    /// Headers the caller adds to every attempt.
    extra: HeaderMap,
    /// Why the request was refused before any attempt, if it was.
    refused: Option<RequestError>,
    /// The API the request and the reply are in, when they are translated for the
    /// endpoints of the other (`None`: each endpoint gets the request as it is).
    shape: Option<Provider>,
    /// The request as the other API takes it (when some endpoint it may use speaks it).
    translated: Option<Value>,
    tally: CallTally,
    bodies: Vec<Option<Bytes>>,
    /// The attempt the next report is about.
    in_flight: Option<Attempt>,
    /// Every attempt in flight (two while a hedge races its attempt) when the session
    /// hedges; an unhedged one has only `in_flight` (and allocates nothing for this).
    flights: Vec<Attempt>,
    /// Attempts the core cancelled, for the driver to drop (see [`Session::poll_cancel`]).
    cancelled: Vec<AttemptId>,
    /// Whether calls hedge (the driver runs two attempts at once).
    hedge: bool,
    /// Whether the face passes whole answers on as they came (see
    /// [`Session::passing_through`]).
    pass_through: bool,
    /// The latest instant an input carried: a session dropped before it is done is
    /// cancelled at that instant.
    latest: Timestamp,
    last: Last<E>,
    success: Option<Answered>,
    finish: Option<Finish>,
    chain: Chain<E>,
    pub(crate) trace: CallTrace,
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
    /// Starts a call of `request` (a stream when `stream`) at `now`: a parsed
    /// [`Value`], or a [`RawRequest`](crate::RawRequest) whose bytes go out as they came
    /// to every endpoint that takes them unchanged. Its idempotency key is derived from
    /// `business_id` when given, else drawn from the engine's RNG.
    pub fn new(
        shared: &'c Shared,
        now: Timestamp,
        business_id: Option<&'c [u8]>,
        request: impl Into<RequestRef<'c>>,
        stream: bool,
    ) -> Session<'c, E> {
        let opening = Opening {
            business_id,
            retry: None,
            extra: HeaderMap::new(),
            only: None,
            shape: None,
            refused: None,
        };
        Session::start(shared, now, request.into(), stream, opening)
    }

    /// Starts a call of `request` with the caller's [`CallOptions`]: its own
    /// attempts, timeout and deadline, extra headers, the business id its
    /// idempotency key is derived from, and the endpoints it may use. Options that
    /// break the policy's rules refuse the call before any attempt
    /// ([`CallError::request`] names the field).
    pub fn with_options(
        shared: &'c Shared,
        now: Timestamp,
        request: impl Into<RequestRef<'c>>,
        stream: bool,
        options: &'c CallOptions,
    ) -> Session<'c, E> {
        let retry = options.retry.apply(&shared.policy.retry);
        let invalid = retry.validate().err();
        let opening = Opening {
            business_id: options.idempotency_key.as_deref().map(str::as_bytes),
            retry: (!options.retry.is_empty() && invalid.is_none()).then_some(retry),
            extra: options.headers.clone(),
            only: options.endpoints,
            shape: options.shape,
            refused: invalid.map(RequestError::Options),
        };
        Session::start(shared, now, request.into(), stream, opening)
    }

    // Inlined into its two callers: the session is 2 KB, and a call returns it. It is
    // made whole in one place, the value returned, so that it is not copied again.
    #[inline(always)]
    fn start(
        shared: &'c Shared,
        now: Timestamp,
        request: RequestRef<'c>,
        stream: bool,
        opening: Opening<'c>,
    ) -> Session<'c, E> {
        let Opening {
            business_id,
            retry,
            extra,
            only,
            shape,
            refused,
        } = opening;
        let shape = shape.or(shared.canonical.then_some(Provider::OpenAi));
        let first = Start {
            request,
            stream,
            business_id,
            retry: retry.as_ref(),
            only,
        };
        let mut call = first.call(shared, now);
        let mut tally = CallTally::new(stream);
        let mut trace = CallTrace::start(shared, request, stream, now);
        drain_events(&mut call, shared, &mut tally, &mut trace);
        let (translated, untranslatable) = match shape.filter(|&p| shared.translates(only, p)) {
            Some(shape) => match translate(shape, request) {
                Ok(body) => (Some(body), None),
                Err(e) => (None, Some(RequestError::Untranslatable(e))),
            },
            None => (None, None),
        };
        Session {
            shared,
            call,
            request,
            stream,
            business_id,
            retry,
            extra,
            refused: refused.or(untranslatable),
            shape,
            translated,
            tally,
            bodies: Vec::new(),
            in_flight: None,
            flights: Vec::new(),
            cancelled: Vec::new(),
            hedge: false,
            pass_through: false,
            latest: now,
            last: Last {
                target: None,
                message: None,
                source: None,
                exceeded: None,
            },
            success: None,
            finish: None,
            chain: Chain::new(),
            trace,
        }
    }

    /// Whether the exchange with `endpoint` is translated: the call is in the other
    /// API's shape.
    fn translates_for(&self, endpoint: EndpointId) -> bool {
        self.shape
            .is_some_and(|shape| shape != self.shared.provider(endpoint))
    }

    /// The same session hedged as the policy's `[hedge]` says, for a driver that runs
    /// two attempts at once: it sends every [`Step::Send`] while the other attempt keeps
    /// running, names the attempt each report is about ([`Session::select_attempt`]),
    /// and drops the attempts [`Session::poll_cancel`] names. Call it before the first
    /// poll; a policy without hedging leaves the session as it is.
    #[must_use]
    pub fn hedged(mut self) -> Self {
        if self.shared.policy.hedge.is_on() {
            self.hedge = true;
            self.call.set_hedge(&self.shared.policy.hedge);
        }
        self
    }

    /// Makes the session one for a face that passes a whole answer on as it came (a
    /// gateway whose client speaks the endpoint's API; call it before the first
    /// poll): a 2xx body that needs no translation is read only for what the policy
    /// and the reply's facts need — whether it is JSON, its `model` (a string) and its
    /// `usage` counts (the non-negative integers `prompt_tokens`, `completion_tokens`,
    /// `input_tokens`, `output_tokens`, `total_tokens`). Such a reply is
    /// [passed through](Reply::is_passed_through): its [`body`](Reply::body) is `null`,
    /// and it is the last answer the face read, which the face sends.
    /// A call with a business id (its result is stored whole) and a fallback
    /// endpoint's call read their answers whole as ever.
    pub fn passing_through(&mut self) -> &mut Self {
        self.pass_through = true;
        self
    }

    /// Whether the session hedges (see [`Session::hedged`]).
    pub fn is_hedged(&self) -> bool {
        self.hedge
    }

    /// Directs the next report to attempt `id`; false when it is no longer in flight
    /// (it was cancelled or timed out): its result is then to be dropped.
    pub fn select_attempt(&mut self, id: AttemptId) -> bool {
        if !self.hedge {
            return self.in_flight.is_some_and(|a| a.id == id);
        }
        self.in_flight = self.flights.iter().copied().find(|a| a.id == id);
        self.in_flight.is_some()
    }

    /// The next attempt to drop: it lost a hedge's race (its grant is already back).
    pub fn poll_cancel(&mut self) -> Option<AttemptId> {
        self.cancelled.pop()
    }

    /// The idempotency key every attempt of the running call carries.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.call.idempotency_key()
    }

    /// [`Session::poll`] until there is an attempt to send (returned) or the call is
    /// done (`None`), starting at `now`; every [`Step::Sleep`] goes to `wait`, which
    /// returns the instant it woke at (a blocking driver sleeps its thread, a test
    /// jumps its virtual clock).
    pub fn next_send(
        &mut self,
        now: Timestamp,
        wait: impl FnMut(Timestamp) -> Timestamp,
    ) -> Option<Outgoing<'c>> {
        // No store to ask: an endpoint whose limits are shared runs on its fallback.
        self.next_send_leasing(now, wait, |_| (LeaseAnswer::Failed, now))
    }

    /// [`Session::next_send`], taking every [`Step::Lease`] ask to `lease` (a blocking
    /// driver's store call, bounded by the ask's `expires`), which returns the answer
    /// and the instant it came.
    pub fn next_send_leasing(
        &mut self,
        mut now: Timestamp,
        mut wait: impl FnMut(Timestamp) -> Timestamp,
        mut lease: impl FnMut(&LeaseAsk) -> (LeaseAnswer, Timestamp),
    ) -> Option<Outgoing<'c>> {
        loop {
            match self.poll(now) {
                Step::Send(out) => return Some(out),
                Step::Sleep(until) => now = wait(until),
                Step::Lease(ask) => {
                    let (answer, at) = lease(&ask);
                    now = now.max(at);
                    self.on_lease(now, &ask, answer);
                }
                Step::Done => return None,
            }
        }
    }

    /// What to do next, at `now`.
    pub fn poll(&mut self, now: Timestamp) -> Step<'c> {
        self.latest = self.latest.max(now);
        if self.refused.is_some() && self.finish.is_none() {
            // Nothing was sent: the core's call ends unseen by the counters (it was
            // refused, not cancelled by the caller).
            let (call, latest) = (&mut self.call, self.latest);
            self.finish = Some(self.shared.with_engine(|e| call.cancel(latest, e)));
            while self.call.poll_event().is_some() {}
        }
        loop {
            if self.finish.is_some() {
                return Step::Done;
            }
            let call = &mut self.call;
            let shares = self.shared.shares;
            let (decision, ask) = self.shared.with_engine(|e| {
                let decision = call.poll_decision(now, e);
                // Only a waiting call has time to take an ask to the store.
                let waits = shares && matches!(decision, Decision::Wait(_));
                (decision, waits.then(|| e.poll_lease_ask(now)).flatten())
            });
            self.drain_call_events();
            while let Some(id) = self.call.poll_cancel() {
                self.flights.retain(|a| a.id != id);
                if self.in_flight.is_some_and(|a| a.id == id) {
                    self.in_flight = None;
                }
                self.trace.on_cancel(id);
                self.cancelled.push(id);
            }
            match (decision, ask) {
                (Decision::Send(attempt), _) => return Step::Send(self.outgoing(attempt)),
                (Decision::Wait(_), Some(ask)) => return Step::Lease(ask),
                (Decision::Wait(until), None) => return Step::Sleep(until),
                (Decision::Done(finish), _) => self.on_finish(now, finish),
            }
        }
    }

    /// The store's answer to a [`Step::Lease`] ask, at `now`.
    pub fn on_lease(&mut self, now: Timestamp, ask: &LeaseAsk, answer: LeaseAnswer) {
        self.latest = self.latest.max(now);
        self.shared.on_lease(now, ask, answer);
    }

    /// The running call finished: the session is done, unless it gave up and a
    /// fallback endpoint's call starts in its place.
    fn on_finish(&mut self, now: Timestamp, finish: Finish) {
        let Finish::GaveUp(g) = finish else {
            if let (Some(key), Some(Answered::Whole(body)), false) =
                (self.business_key(), &self.success, self.chain.started())
            {
                self.shared.store_result(now, key, body);
            }
            self.finish = Some(finish);
            return;
        };
        if self.stream {
            self.finish = Some(finish);
            return;
        }
        let error = self.error(&g);
        self.chain.gave_up(error);
        match self.chain.next_call(self.shared, now, self.business_id) {
            Some(endpoint) => self.start_fallback(now, endpoint),
            None => self.finish = Some(finish),
        }
    }

    /// Runs the call again as a new call restricted to a fallback endpoint.
    fn start_fallback(&mut self, now: Timestamp, endpoint: EndpointId) {
        let next = Start {
            request: self.request,
            stream: self.stream,
            business_id: self.business_id,
            retry: self.retry.as_ref(),
            only: Some(EndpointSet::one(endpoint)),
        };
        self.call = next.call(self.shared, now);
        if self.hedge {
            self.call.set_hedge(&self.shared.policy.hedge);
        }
        self.in_flight = None;
        self.flights.clear();
        self.success = None;
        self.drain_call_events();
    }

    fn business_key(&self) -> Option<IdempotencyKey> {
        self.business_id.map(|_| self.call.idempotency_key())
    }

    fn drain_call_events(&mut self) {
        drain_events(
            &mut self.call,
            self.shared,
            &mut self.tally,
            &mut self.trace,
        );
    }

    fn outgoing(&mut self, attempt: Attempt) -> Outgoing<'c> {
        let shared: &'c Shared = self.shared;
        let e = usize::from(attempt.target.endpoint.0);
        let k = usize::from(attempt.target.key.0);
        self.in_flight = Some(attempt);
        if self.hedge {
            self.flights.push(attempt);
        }
        self.trace.on_attempt(shared, &attempt);
        self.last.target = Some(attempt.target);
        let slot = shared.endpoints.get(e);
        let url = slot.map_or("", |s| s.url.as_str());
        let model = slot.and_then(|s| s.model.as_deref());
        let mut headers = slot
            .and_then(|s| s.headers.get(k))
            .cloned()
            .unwrap_or_default();
        let mut buf = [0u8; 36];
        match HeaderValue::from_bytes(attempt.idempotency_key.as_ascii(&mut buf)) {
            Ok(v) => set_at(
                &mut headers,
                slot.and_then(|s| s.key_at),
                &IDEMPOTENCY_KEY,
                v,
            ),
            Err(_) => drop(headers.remove(IDEMPOTENCY_KEY)),
        }
        for (name, value) in &self.extra {
            if !headers.contains_key(name) {
                headers.append(name, value.clone());
            }
        }
        let request = match &self.translated {
            Some(t) if self.translates_for(attempt.target.endpoint) => RequestRef::Value(t),
            _ => self.request,
        };
        let body = match request.as_it_is(model, self.stream) {
            Some(bytes) => bytes,
            None => {
                let endpoints = shared.endpoints.len();
                let bodies = &mut self.bodies;
                prepared_body(bodies, endpoints, e, || {
                    request.body_for(model, self.stream)
                })
            }
        };
        if let Some(at) = slot.and_then(|s| s.length_at) {
            set_at(
                &mut headers,
                Some(at),
                &CONTENT_LENGTH,
                HeaderValue::from(body.len()),
            );
        }
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

    /// Reports the in-flight attempt's outcome at `now`; false when there was none.
    fn report(&mut self, now: Timestamp, outcome: Outcome) -> bool {
        self.latest = self.latest.max(now);
        self.last.exceeded = None;
        let Some(attempt) = self.in_flight.take() else {
            return false;
        };
        self.flights.retain(|a| a.id != attempt.id);
        self.trace
            .on_outcome(attempt.id, &outcome, self.success.as_ref());
        // A late report (the call already timed the attempt out) is dropped: the
        // core has counted it as a timeout.
        self.call.on_outcome(now, attempt.id, outcome).is_ok()
    }

    /// Reports a response that arrived whole.
    pub fn on_response(&mut self, now: Now, status: u16, headers: &HeaderMap, body: &[u8]) {
        let translated = self
            .in_flight
            .is_some_and(|a| self.translates_for(a.target.endpoint));
        let peek =
            self.pass_through && !translated && self.business_id.is_none() && !self.chain.started();
        let (mut outcome, mut answer) = if peek {
            outcome::response_peeked(status, headers, body, now.wall_unix)
        } else {
            let (outcome, json) = outcome::response(status, headers, body, now.wall_unix);
            (outcome, json.map(Answered::Whole))
        };
        if let (true, Some(Answered::Whole(json))) = (translated, &answer) {
            let translated = match self.shape {
                Some(Provider::Anthropic) => chat::to_anthropic_response(json),
                _ => chat::from_anthropic_response(json, now.wall_unix),
            };
            match translated {
                Ok(json) => answer = Some(Answered::Whole(json)),
                Err(_) => (outcome, answer) = (outcome::malformed(outcome), None),
            }
        }
        self.last.source = None;
        self.last.message = if answer.is_some() {
            None
        } else {
            body::error_message(body).map(|m| self.shared.redact(&m))
        };
        self.success = answer;
        self.report(now.at, outcome);
    }

    /// Reports a response whose body could not be read whole: for a 2xx, the body's
    /// loss is the failure `t`; otherwise the status (and headers) still tell.
    pub fn on_body_error(
        &mut self,
        now: Now,
        status: u16,
        headers: &HeaderMap,
        t: Transport,
        source: E,
    ) {
        if is_payload(status) {
            self.on_transport(now, t, Some(source));
        } else {
            self.on_response(now, status, headers, b"");
            self.last.source = Some(source);
        }
    }

    /// Reports a response whose body broke the body limit (announced, or reached while
    /// reading; for a stream, before its first event): for a 2xx, a malformed body;
    /// otherwise the status (and headers) still tell. The rest is not to be read.
    pub fn on_body_too_large(&mut self, now: Now, status: u16, headers: &HeaderMap) {
        self.last.message = None;
        self.last.source = None;
        let o = if is_payload(status) {
            outcome::oversized(status, headers, now.wall_unix)
        } else {
            outcome::response(status, headers, b"", now.wall_unix).0
        };
        if self.report(now.at, o) {
            self.last.exceeded = Some(Exceeded::BodyTooLarge);
        }
    }

    /// Reports a response whose status line and headers were larger than the client
    /// accepts, with the client's error.
    pub fn on_head_too_large(&mut self, now: Now, source: Option<E>) {
        self.last.message = None;
        self.last.source = source;
        if self.report(now.at, outcome::head_too_large()) {
            self.last.exceeded = Some(Exceeded::HeadTooLarge);
        }
    }

    /// Reports a failure below HTTP, with the client's error when there is one.
    pub fn on_transport(&mut self, now: Now, t: Transport, source: Option<E>) {
        self.last.message = None;
        self.last.source = source;
        self.report(now.at, outcome::transport(t));
    }

    /// The reader for a stream's body when its status line says events follow (2xx);
    /// `None` when the body is an error to read whole and report with
    /// [`Session::on_response`].
    pub fn stream_reader(&self, now: Now, status: u16) -> Option<EventReader> {
        is_payload(status).then(|| self.event_reader(now))
    }

    /// The reader for the in-flight attempt's events, whatever the status (a driver
    /// that prepares it before the response arrives checks [`outcome::is_payload`] itself).
    pub fn event_reader(&self, now: Now) -> EventReader {
        let endpoint = self.in_flight.map(|a| a.target.endpoint);
        let provider = endpoint.map_or(Provider::OpenAi, |e| self.shared.provider(e));
        let mut reader = EventReader::new(provider).with_limit(self.shared.max_body);
        if endpoint.is_some_and(|e| self.translates_for(e)) {
            reader = match self.shape {
                Some(Provider::Anthropic) => reader.translating_to_anthropic(),
                _ => reader.translating(now.wall_unix, chat::wants_usage(self.request.value())),
            };
        }
        reader.with_metrics(Arc::clone(&self.shared.metrics))
    }

    /// Reports a 2xx stream whose first event arrived; `first_event_ok` is false when
    /// it was not what the API sends (the attempt then counts as a malformed body).
    pub fn on_stream_started(
        &mut self,
        now: Now,
        status: u16,
        headers: &HeaderMap,
        first_event_ok: bool,
    ) {
        self.last.source = None;
        self.last.message = None;
        let o = outcome::stream_started(status, headers, first_event_ok, now.wall_unix);
        self.report(now.at, o);
    }

    /// Reports a 2xx stream that ended cleanly before any event: a malformed body.
    pub fn on_stream_empty(&mut self, now: Now, status: u16, headers: &HeaderMap) {
        self.on_stream_started(now, status, headers, false);
    }

    fn error(&mut self, g: &GiveUp) -> CallError<E> {
        let mut e = CallError::new(
            g,
            self.last.target,
            self.last.message.take(),
            self.last.source.take(),
        )
        .with_exceeded(self.last.exceeded.take());
        let name = |t: Target| self.shared.endpoint_name(t.endpoint).map(Box::from);
        e.endpoint = self.last.target.and_then(name);
        e
    }

    /// The result of a finished non-stream call: its reply, or a fallback's (marked
    /// degraded), or the primary call's error when no fallback answered.
    pub fn into_reply(mut self) -> Result<Reply, CallError<E>> {
        self.take_reply()
    }

    /// [`Session::into_reply`] for a session kept behind a pointer (a boxed one is not
    /// moved out to end): the result, taken once; the session is finished after.
    pub fn take_reply(&mut self) -> Result<Reply, CallError<E>> {
        let r = self.reply();
        self.trace.on_reply(self.shared, self.latest, &r);
        r
    }

    fn reply(&mut self) -> Result<Reply, CallError<E>> {
        let finish = self.finished();
        if let Some(e) = self.refused.take() {
            return Err(CallError::refused(e));
        }
        let chain = std::mem::replace(&mut self.chain, Chain::new());
        match finish {
            Finish::Success { attempts, target } => {
                let answer = self.success.take();
                let answer = answer.unwrap_or(Answered::Whole(Value::Null));
                Ok(chain.succeeded(self.shared, answer, attempts, target))
            }
            Finish::GaveUp(g) => chain
                .ended(self.shared)
                .unwrap_or_else(|| Err(self.error(&g))),
        }
    }

    /// The result of a finished stream call: where it started. Its call's span and
    /// metrics end here, at the first event (see [`Session::into_stream_reading`]).
    pub fn into_stream(mut self) -> Result<Started, CallError<E>> {
        self.take_stream()
    }

    /// [`Session::into_stream`] for a session kept behind a pointer: the result, taken
    /// once; the session is finished after.
    pub fn take_stream(&mut self) -> Result<Started, CallError<E>> {
        let r = self.started();
        self.trace.on_stream(self.shared, self.latest, &r);
        r
    }

    /// [`Session::into_stream`] for a face that reads the stream with `reader` (the
    /// started attempt's, none when the call gave up): the call's span and metrics go
    /// on in the reader until the stream ends, at the instant `clock` reads then.
    pub fn into_stream_reading(
        mut self,
        reader: Option<&mut EventReader>,
        clock: impl Fn() -> Timestamp + Send + Sync + 'static,
    ) -> Result<Started, CallError<E>> {
        let r = self.started();
        match reader {
            Some(reader) => {
                let clock = Box::new(clock);
                self.trace
                    .on_stream_reading(self.shared, self.latest, &r, reader, clock);
            }
            None => self.trace.on_stream(self.shared, self.latest, &r),
        }
        r
    }

    fn started(&mut self) -> Result<Started, CallError<E>> {
        let finish = self.finished();
        if let Some(e) = self.refused.take() {
            return Err(CallError::refused(e));
        }
        match finish {
            Finish::Success { attempts, target } => Ok(Started {
                target,
                provider: self.shared.provider(target.endpoint),
                attempts,
            }),
            Finish::GaveUp(g) => Err(self.error(&g)),
        }
    }

    /// The finish, cancelling the call first (at the latest instant seen) if it is
    /// still running.
    fn finished(&mut self) -> Finish {
        if let Some(f) = self.finish {
            return f;
        }
        let f = self.cancel();
        self.finish = Some(f);
        f
    }

    fn cancel(&mut self) -> Finish {
        let (call, now) = (&mut self.call, self.latest);
        let f = self.shared.with_engine(|e| call.cancel(now, e));
        self.drain_call_events();
        f
    }
}

/// How a session starts a call: the primary one, or a fallback endpoint's.
struct Start<'a> {
    request: RequestRef<'a>,
    stream: bool,
    business_id: Option<&'a [u8]>,
    retry: Option<&'a RetryConfig>,
    /// The endpoints the call may use (the caller's choice, or the standby endpoint
    /// of a fallback call).
    only: Option<EndpointSet>,
}

/// What a call starts with besides its request.
struct Opening<'a> {
    business_id: Option<&'a [u8]>,
    retry: Option<RetryConfig>,
    extra: HeaderMap,
    only: Option<EndpointSet>,
    shape: Option<Provider>,
    /// Why the call is refused before any attempt (its options break the rules).
    refused: Option<RequestError>,
}

impl Start<'_> {
    /// The call, started at `now` on the shared engine.
    fn call(&self, shared: &Shared, now: Timestamp) -> Box<Call> {
        let id = self.business_id;
        let rules = self.retry.unwrap_or(&shared.policy.retry);
        // The first-event timeout is a stream's: a whole answer has the attempt timeout.
        let whole = (!self.stream && rules.first_event_timeout.is_some()).then(|| {
            let mut r = *rules;
            r.first_event_timeout = None;
            r
        });
        let mut call = shared.with_engine(|e| {
            Box::new(match whole.as_ref().or(self.retry) {
                Some(retry) => e.start_call_with(now, retry, id),
                None => e.start_call(now, id),
            })
        });
        if let Some(only) = self.only {
            call.restrict_to_set(only);
        }
        if shared.estimate_tokens {
            call.set_tokens(self.request.estimate_tokens(self.stream));
        }
        call
    }
}

/// Sets `headers`' `name` to `value`: in place when its placeholder is the header at
/// `at` (in their order), else by name.
fn set_at(headers: &mut HeaderMap, at: Option<usize>, name: &HeaderName, value: HeaderValue) {
    match at.and_then(|at| headers.iter_mut().nth(at)) {
        Some((n, v)) if n == name => *v = value,
        _ => drop(headers.insert(name.clone(), value)),
    }
}

/// Counts `call`'s events and adds them to its trace.
fn drain_events(call: &mut Call, shared: &Shared, tally: &mut CallTally, trace: &mut CallTrace) {
    while let Some(ev) = call.poll_event() {
        shared.metrics.on_call_event(&ev, tally);
        trace.on_call_event(&ev);
    }
}

/// `request`, in `shape`, as the other API takes it.
fn translate(shape: Provider, request: RequestRef<'_>) -> Result<Value, chat::TranslateError> {
    match shape {
        Provider::OpenAi => chat::to_anthropic(request.value()),
        Provider::Anthropic => chat::from_anthropic_request(request.value()),
    }
}

/// The body for endpoint `e` of `endpoints`, made by `prepare` once per endpoint and
/// kept in `bodies` for the attempts after.
fn prepared_body(
    bodies: &mut Vec<Option<Bytes>>,
    endpoints: usize,
    e: usize,
    prepare: impl FnOnce() -> Bytes,
) -> Bytes {
    if bodies.is_empty() {
        *bodies = vec![None; endpoints];
    }
    match bodies.get_mut(e) {
        Some(Some(b)) => b.clone(),
        Some(slot) => slot.insert(prepare()).clone(),
        None => prepare(),
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
