//! The driver loop of a hedged call or stream: up to two exchanges in flight at once,
//! polled together with the session's next wake-up; each outcome is reported by its
//! attempt, and an attempt the core cancels is dropped (which closes its request).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use futures_util::future::Either;
use steadfast_core::ids::AttemptId;
use steadfast_http::{Outgoing, Reply, Step};

use crate::drive::{Opened, S};
use crate::exchange::{self, Exchanged, Opening};
use crate::stream::EventStream;
use crate::{CallError, Inner};

type Flying<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A hedged call, with its fallbacks.
pub(crate) async fn chat(c: &Inner, mut s: S<'_>) -> Result<Reply, CallError> {
    let span = s.call_span();
    span.instrument(async move {
        let max = s.max_body();
        race(
            c,
            &mut s,
            |_, out| exchange::whole(c, out, max),
            |s, done: Exchanged| exchange::report(c, s, done),
        )
        .await;
        s.into_reply()
    })
    .await
}

/// A hedged stream, retried and hedged until its first event.
pub(crate) async fn stream(c: &Inner, mut s: S<'_>) -> Result<EventStream, CallError> {
    let span = s.call_span();
    span.instrument(async move {
        let max = s.max_body();
        let mut opened: Option<Opened> = None;
        race(
            c,
            &mut s,
            |s, out| {
                let reader = s.event_reader(c.clock.now());
                exchange::open(c, out, reader, max)
            },
            |s, done: Opening| {
                if let Some(o) = exchange::report_opening(c, s, done) {
                    opened = Some(o);
                }
            },
        )
        .await;
        crate::drive::started(c, s, opened)
    })
    .await
}

/// Runs the session until it is done: each `Send` starts an exchange with `start`
/// (beside any still running), each exchange that ends is reported with `report` to
/// its attempt, and the attempts the core cancels are dropped.
async fn race<'a, T, F>(
    c: &Inner,
    s: &mut S<'a>,
    mut start: impl FnMut(&S<'a>, Outgoing<'a>) -> F,
    mut report: impl FnMut(&mut S<'a>, T),
) where
    F: Future<Output = T> + Send + 'a,
{
    let mut flying: Vec<(AttemptId, Flying<'a, T>)> = Vec::new();
    loop {
        let step = s.poll(c.clock.timestamp());
        // The loser of a race: dropping its future closes its request.
        while let Some(id) = s.poll_cancel() {
            flying.retain(|(f, _)| *f != id);
        }
        match step {
            Step::Send(out) => {
                let id = out.attempt.id;
                let (span, exchange) = (s.attempt_span(), start(s, out));
                flying.push((id, Box::pin(async move { span.instrument(exchange).await })));
            }
            Step::Sleep(until) if flying.is_empty() => c.clock.sleep_until(until).await,
            Step::Sleep(until) => {
                let ended = {
                    let first = next(&mut flying);
                    let wake = c.clock.sleep_until(until);
                    futures_util::pin_mut!(first, wake);
                    match futures_util::future::select(first, wake).await {
                        Either::Left((ended, _)) => Some(ended),
                        Either::Right(_) => None,
                    }
                };
                // An attempt the core already timed out is not reported.
                if let Some((id, done)) = ended
                    && s.select_attempt(id)
                {
                    report(s, done);
                }
            }
            Step::Lease(ask) => crate::lease::ask(c, s, ask).await,
            Step::Done => return,
        }
    }
}

/// The first exchange of `flying` to end, taken out of it.
fn next<'f, 'a, T>(
    flying: &'f mut Vec<(AttemptId, Flying<'a, T>)>,
) -> impl Future<Output = (AttemptId, T)> + 'f {
    std::future::poll_fn(move |cx| {
        let ready =
            flying
                .iter_mut()
                .enumerate()
                .find_map(|(i, (id, f))| match f.as_mut().poll(cx) {
                    Poll::Ready(done) => Some((i, *id, done)),
                    Poll::Pending => None,
                });
        match ready {
            Some((i, id, done)) => {
                drop(flying.swap_remove(i));
                Poll::Ready((id, done))
            }
            None => Poll::Pending,
        }
    })
}
