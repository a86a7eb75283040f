//! The driver of a hedged call or stream. A blocking request cannot be polled beside
//! another, so each attempt runs on a thread of its own and sends what it came to back
//! on a channel; this thread waits on the channel until the session's next wake-up and
//! reports each result to its attempt. ureq cannot abort a request either: the thread
//! of an attempt the core cancels runs on to the attempt's own timeout, and what it
//! brings back is dropped.

use std::sync::mpsc;
use std::thread;

use steadfast_core::ids::AttemptId;
use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::{Outgoing, Reply, Step};

use crate::drive::{Opened, Opening, Request, S, lease, opening, report_opening, whole};
use crate::stream::EventIter;
use crate::{CallError, Inner};

/// A hedged call, with its fallbacks.
pub(crate) fn chat(c: &Inner, mut s: S<'_>) -> Result<Reply, CallError> {
    let _call = s.call_span().entered();
    race(c, &mut s, false);
    s.into_reply()
}

/// A hedged stream, retried and hedged until its first event.
pub(crate) fn stream(c: &Inner, mut s: S<'_>) -> Result<EventIter, CallError> {
    let _call = s.call_span().entered();
    let opened = race(c, &mut s, true);
    crate::drive::started(c, s, opened)
}

/// Runs the session until it is done, each attempt on its own thread; the stream, for
/// a stream whose first event came.
fn race(c: &Inner, s: &mut S<'_>, stream: bool) -> Option<Opened> {
    let (tx, rx) = mpsc::channel::<(AttemptId, Opening)>();
    let mut opened = None;
    let mut now = c.clock.timestamp();
    loop {
        match s.poll(now) {
            Step::Send(out) => {
                if !spawn(c, s, out, stream, tx.clone()) {
                    let t = Transport::new(TransportKind::Other, Phase::BeforeSend);
                    s.on_transport(c.clock.now(), t, None);
                }
            }
            Step::Sleep(until) => {
                if let Ok((id, done)) = rx.recv_timeout(c.clock.until(until))
                    && s.select_attempt(id)
                    && let Some(o) = report_opening(c, s, done)
                {
                    opened = Some(o);
                }
            }
            Step::Lease(ask) => {
                let (answer, at) = lease(c, &ask);
                s.on_lease(now.max(at), &ask, answer);
            }
            Step::Done => return opened,
        }
        now = c.clock.timestamp();
    }
}

/// Starts the attempt `out` on a thread of its own, which sends what it came to on
/// `tx`; false when no thread could be started.
fn spawn(
    c: &Inner,
    s: &S<'_>,
    out: Outgoing<'_>,
    stream: bool,
    tx: mpsc::Sender<(AttemptId, Opening)>,
) -> bool {
    let id = out.attempt.id;
    let (agent, max, span) = (c.agent.clone(), s.max_body(), s.attempt_span());
    let reader = stream.then(|| s.event_reader(c.clock.now()));
    let request = Request::from(out);
    thread::Builder::new()
        .name("steadfast-attempt".to_owned())
        .spawn(move || {
            let _attempt = span.entered();
            let done = match reader {
                Some(reader) => opening(&agent, request, reader, max),
                None => whole(&agent, request, max),
            };
            // The call may be over: then nobody listens, and the result is dropped.
            let _ = tx.send((id, done));
        })
        .is_ok()
}
