//! The one driving loop of every integration: read the clock, poll the session, make
//! the attempt (through the caller's client) or sleep, report what happened.

use std::future::Future;

use http::HeaderMap;
use serde_json::Value;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_core::retry::{GiveUp, GiveUpReason};
use steadfast_core::time::Timestamp;
use steadfast_http::{CallError, LeaseAnswer, Now, Outgoing, Session, Started, Step};

use crate::Client;
use crate::attempt::Attempt;
use crate::outcome::{IntoOutcome, Observed};

/// The session's request: the caller's client builds the body, so the session's own
/// is never sent.
static NO_BODY: Value = Value::Null;

/// What the next step is.
// Boxing `Send` would allocate per attempt; a `Next` is consumed at once.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Next {
    /// Make this attempt.
    Send(Attempt),
    /// Sleep until this instant, then poll again.
    Sleep(Timestamp),
    /// The call is over.
    Done,
}

/// One logical call: its session and the last attempt's result.
pub(crate) struct Driver<'c, R: IntoOutcome> {
    client: &'c Client,
    session: Session<'c, R::Error>,
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
            session: Session::new(client.shared(), now, business_id, &NO_BODY, false),
            last: None,
            attempts: 0,
        }
    }

    pub(crate) fn poll(&mut self, now: Timestamp) -> Next {
        loop {
            match self.session.poll(now) {
                Step::Send(out) => return Next::Send(self.attempt(&out)),
                Step::Sleep(until) => return Next::Sleep(until),
                Step::Done => return Next::Done,
                // The layer has no shared store (its client never shares limits).
                Step::Lease(ask) => self.session.on_lease(now, &ask, LeaseAnswer::Failed),
            }
        }
    }

    fn attempt(&mut self, out: &Outgoing<'_>) -> Attempt {
        self.attempts = self.attempts.saturating_add(1);
        let e = out.attempt.target.endpoint;
        let shared = self.client.shared();
        let name = shared.endpoint_name(e).unwrap_or_default();
        let base = self.client.base_url(usize::from(e.0));
        Attempt::new(out, self.attempts, base, name)
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

    pub(crate) fn finish(self) -> Ended<R> {
        Ended {
            started: self.session.into_stream(),
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

fn tokio_now(c: &Client) -> Now {
    c.epoch().now(tokio::time::Instant::now().into_std())
}

/// A call driven on tokio's clock, each attempt within its timeout.
pub(crate) async fn run<'c, R, F, Fut>(
    client: &'c Client,
    business_id: Option<&'c [u8]>,
    mut attempt: F,
) -> Ended<R>
where
    R: IntoOutcome,
    F: FnMut(Attempt) -> Fut,
    Fut: Future<Output = R>,
{
    let mut d = Driver::new(client, tokio_now(client).at, business_id);
    loop {
        match d.poll(tokio_now(client).at) {
            Next::Send(a) => {
                let limit = a.timeout;
                match tokio::time::timeout(limit, attempt(a)).await {
                    Ok(r) => d.on_result(tokio_now(client), r),
                    Err(_) => d.on_timeout(tokio_now(client)),
                }
            }
            Next::Sleep(until) => {
                let at = client.epoch().instant(until);
                tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
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
            Next::Send(a) => {
                let r = attempt(a);
                d.on_result(std_now(client), r);
            }
            Next::Sleep(until) => {
                let at = client.epoch().instant(until);
                std::thread::sleep(at.saturating_duration_since(std::time::Instant::now()));
            }
            Next::Done => return d.finish(),
        }
    }
}
