//! The one driving loop of every integration: read the clock, poll the session, make
//! the attempt (through the caller's client) or sleep, report what happened.

use std::future::Future;
use std::time::Duration;

use http::HeaderMap;
use serde_json::Value;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::retry::{GiveUp, GiveUpReason};
use steadfast_core::time::Timestamp;
use steadfast_http::{CallError, LeaseAnswer, LeaseAsk, Now, Outgoing, Session, Started, Step};

use crate::Client;
use crate::attempt::{Attempt, AttemptEdit};
use crate::outcome::{IntoOutcome, Observed};

/// The session's request: the caller's client builds the body, so the session's own
/// is never sent.
static NO_BODY: Value = Value::Null;

/// What the attempt closure is handed, made from the session's request for one
/// attempt: the public [`Attempt`], or the layer's and the middleware's
/// [`AttemptEdit`] (which needs none of the attempt's strings).
pub(crate) trait FromOutgoing {
    /// The value for attempt `number` (1 for the first).
    fn from_outgoing(out: Outgoing<'_>, number: u32, client: &Client) -> Self;
}

impl FromOutgoing for Attempt {
    fn from_outgoing(out: Outgoing<'_>, number: u32, client: &Client) -> Attempt {
        let e = out.attempt.target.endpoint;
        let name = client.shared().endpoint_name(e).unwrap_or_default();
        let base = client.base_url(usize::from(e.0));
        Attempt::new(out, number, base, name)
    }
}

impl FromOutgoing for AttemptEdit {
    fn from_outgoing(out: Outgoing<'_>, _number: u32, client: &Client) -> AttemptEdit {
        AttemptEdit::from_outgoing(out, client)
    }
}

/// What the next step is.
// Boxing `Send` would allocate per attempt; a `Next` is consumed at once.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Next<A> {
    /// Make this attempt, within this span.
    Send(A, Duration),
    /// Sleep until this instant, then poll again.
    Sleep(Timestamp),
    /// Ask the shared store, report with [`Driver::on_lease`], then poll again.
    Lease(LeaseAsk),
    /// The call is over.
    Done,
}

/// One logical call: its session and the last attempt's result.
pub(crate) struct Driver<'c, R: IntoOutcome> {
    client: &'c Client,
    // Boxed: the session is 2 KB, and the driver moves with the call's future.
    session: Box<Session<'c, R::Error>>,
    last: Option<R>,
    attempts: u32,
}

/// How a call ended: where it succeeded or why it gave up, and the last attempt's
/// result (the successful one, or the last failure's).
pub(crate) struct Ended<R: IntoOutcome> {
    pub started: Result<Started, CallError<R::Error>>,
    pub last: Option<R>,
}

impl<'c, R: IntoOutcome> Driver<'c, R> {
    pub(crate) fn new(client: &'c Client, now: Timestamp, business_id: Option<&'c [u8]>) -> Self {
        Driver {
            client,
            session: Box::new(Session::new(
                client.shared(),
                now,
                business_id,
                &NO_BODY,
                false,
            )),
            last: None,
            attempts: 0,
        }
    }

    pub(crate) fn poll<A: FromOutgoing>(&mut self, now: Timestamp) -> Next<A> {
        match self.session.poll(now) {
            Step::Send(out) => {
                self.attempts = self.attempts.saturating_add(1);
                let timeout = out.timeout();
                Next::Send(A::from_outgoing(out, self.attempts, self.client), timeout)
            }
            Step::Sleep(until) => Next::Sleep(until),
            Step::Lease(ask) => Next::Lease(ask),
            Step::Done => Next::Done,
        }
    }

    /// Reports the store's answer to a lease ask at `now`.
    pub(crate) fn on_lease(&mut self, now: Timestamp, ask: &LeaseAsk, answer: LeaseAnswer) {
        self.session.on_lease(now, ask, answer);
    }

    /// Reports the attempt's result at `now`.
    pub(crate) fn on_result(&mut self, now: Now, r: R) {
        let s = &mut self.session;
        match r.observe() {
            Observed::Response {
                status,
                headers,
                body,
            } => {
                let empty = HeaderMap::new();
                let headers = headers.unwrap_or(&empty);
                if steadfast_http::outcome::is_payload(status) {
                    s.on_stream_started(now, status, headers, true);
                } else {
                    s.on_response(now, status, headers, &body);
                }
            }
            Observed::Transport(t) => s.on_transport(now, t, None),
            Observed::Success => s.on_stream_started(now, 200, &HeaderMap::new(), true),
            Observed::Malformed { status } => s.on_stream_empty(now, status, &HeaderMap::new()),
            // What the core reads as a request-scope failure: the request as sent
            // cannot succeed.
            Observed::Invalid => s.on_response(now, 400, &HeaderMap::new(), b""),
        }
        self.last = Some(r);
    }

    /// Reports an attempt that did not end within its timeout.
    pub(crate) fn on_timeout(&mut self, now: Now) {
        self.last = None;
        let t = Transport::new(TransportKind::Timeout, Phase::AfterSend);
        self.session.on_transport(now, t, None);
    }

    pub(crate) fn finish(mut self) -> Ended<R> {
        Ended {
            started: self.session.take_stream(),
            last: self.last,
        }
    }
}

impl<R: IntoOutcome> Ended<R> {
    /// The successful attempt's value, or the give-up with the last error as its
    /// source.
    pub(crate) fn into_result(self) -> Result<R::Value, CallError<R::Error>> {
        match (self.started, self.last.map(IntoOutcome::into_result)) {
            (Ok(_), Some(Ok(v))) => Ok(v),
            (Ok(started), Some(Err(e))) => Err(inconsistent(started.attempts, Some(e))),
            (Ok(started), None) => Err(inconsistent(started.attempts, None)),
            (Err(mut error), Some(Err(e))) => {
                error.source = Some(e);
                Err(error)
            }
            (Err(error), _) => Err(error),
        }
    }
}

/// A success reported for a result that is an error (an [`IntoOutcome`] that
/// observes what it does not return): not retried.
fn inconsistent<E>(attempts: u32, source: Option<E>) -> CallError<E> {
    let g = GiveUp {
        reason: GiveUpReason::NotRetryable,
        attempts,
        last_failure: None,
        last_status: None,
    };
    CallError::new(&g, None, None, source)
}

/// A call driven on tokio's clock, each attempt within its timeout. The clock is read
/// once per step: the instant the session decides an attempt at is the one its
/// timeout counts from, and the instant its outcome is reported at is the one the
/// session decides the next step at.
pub(crate) async fn run<'c, A, R, F, Fut>(
    client: &'c Client,
    business_id: Option<&'c [u8]>,
    mut attempt: F,
) -> Ended<R>
where
    A: FromOutgoing,
    R: IntoOutcome,
    F: FnMut(A) -> Fut,
    Fut: Future<Output = R>,
{
    let epoch = client.epoch();
    let mut at = tokio::time::Instant::now();
    let mut d = Driver::new(client, epoch.timestamp(at.into_std()), business_id);
    loop {
        match d.poll(epoch.timestamp(at.into_std())) {
            Next::Send(a, limit) => {
                // A span past the clock's range bounds nothing (as `tokio::time::timeout`).
                let r = client
                    .timers()
                    .within(at.checked_add(limit), attempt(a))
                    .await;
                at = tokio::time::Instant::now();
                let now = epoch.now(at.into_std());
                match r {
                    Some(r) => d.on_result(now, r),
                    None => d.on_timeout(now),
                }
            }
            Next::Sleep(until) => {
                let until = tokio::time::Instant::from_std(epoch.instant(until));
                tokio::time::sleep_until(until).await;
                at = tokio::time::Instant::now();
            }
            Next::Lease(ask) => {
                let answer = client.lease(ask).await;
                at = tokio::time::Instant::now();
                d.on_lease(epoch.timestamp(at.into_std()), &ask, answer);
            }
            Next::Done => return d.finish(),
        }
    }
}

fn std_now(c: &Client) -> Now {
    c.epoch().now(std::time::Instant::now())
}

/// A call driven on the thread, sleeping it between attempts.
pub(crate) fn run_blocking<'c, R, F>(
    client: &'c Client,
    business_id: Option<&'c [u8]>,
    mut attempt: F,
) -> Ended<R>
where
    R: IntoOutcome,
    F: FnMut(Attempt) -> R,
{
    let mut d = Driver::new(client, std_now(client).at, business_id);
    loop {
        match d.poll(std_now(client).at) {
            Next::Send(a, _) => {
                let r = attempt(a);
                d.on_result(std_now(client), r);
            }
            Next::Sleep(until) => {
                let at = client.epoch().instant(until);
                std::thread::sleep(at.saturating_duration_since(std::time::Instant::now()));
            }
            // No runtime to ask the store on: the endpoint runs on its fallback.
            Next::Lease(ask) => d.on_lease(std_now(client).at, &ask, LeaseAnswer::Failed),
            Next::Done => return d.finish(),
        }
    }
}
