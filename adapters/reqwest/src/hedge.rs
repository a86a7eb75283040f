//! The driver loop of a hedged call: up to two exchanges in flight at once, polled
//! together with the session's next wake-up; each outcome is reported by its attempt,
//! and an attempt the core cancels is dropped (which closes its request).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use futures_util::future::Either;

use reqwest::header::HeaderMap;
use steadfast_core::ids::AttemptId;
use steadfast_core::outcome::Transport;
use steadfast_http::body::LimitedBody;
use steadfast_http::{Outgoing, Reply, Step};

use crate::drive::{S, request};
use crate::errors::{head_too_large, transport};
use crate::{CallError, Inner};

/// What one whole exchange came to, reported once it is over.
enum Exchanged {
    Response {
        status: u16,
        headers: HeaderMap,
        body: LimitedBody,
    },
    BodyError {
        status: u16,
        headers: HeaderMap,
        transport: Transport,
        error: reqwest::Error,
    },
    BodyTooLarge {
        status: u16,
        headers: HeaderMap,
    },
    HeadTooLarge(reqwest::Error),
    Transport(Transport, reqwest::Error),
}

type Flying<'a> = Pin<Box<dyn Future<Output = Exchanged> + Send + 'a>>;

/// A hedged call, with its fallbacks.
pub(crate) async fn chat(c: &Inner, mut s: S<'_>) -> Result<Reply, CallError> {
    let span = s.call_span();
    span.instrument(async move {
        let mut flying: Vec<(AttemptId, Flying<'_>)> = Vec::new();
        loop {
            let step = s.poll(c.clock.timestamp());
            // The loser of a race: dropping its future closes its request.
            while let Some(id) = s.poll_cancel() {
                flying.retain(|(f, _)| *f != id);
            }
            match step {
                Step::Send(out) => {
                    let id = out.attempt.id;
                    let (span, max) = (s.attempt_span(), s.max_body());
                    let fut = async move { span.instrument(exchange(c, out, max)).await };
                    flying.push((id, Box::pin(fut)));
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
                        report(c, &mut s, done);
                    }
                }
                Step::Lease(ask) => crate::lease::ask(c, &mut s, ask).await,
                Step::Done => {
                    drop(flying);
                    return s.into_reply();
                }
            }
        }
    })
    .await
}

/// The first exchange of `flying` to end, taken out of it.
fn next<'f, 'a>(
    flying: &'f mut Vec<(AttemptId, Flying<'a>)>,
) -> impl Future<Output = (AttemptId, Exchanged)> + 'f {
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

/// Sends `out` and reads its body whole within `max_body`, touching no session.
async fn exchange(c: &Inner, out: Outgoing<'_>, max_body: u64) -> Exchanged {
    let mut resp = match request(c, out, true).send().await {
        Ok(r) => r,
        Err(e) if head_too_large(&e) => return Exchanged::HeadTooLarge(e),
        Err(e) => return Exchanged::Transport(transport(&e, false), e),
    };
    let status = resp.status().as_u16();
    let headers = std::mem::take(resp.headers_mut());
    let Ok(mut body) = LimitedBody::new(max_body, resp.content_length()) else {
        return Exchanged::BodyTooLarge { status, headers };
    };
    loop {
        match resp.chunk().await {
            Ok(Some(piece)) => {
                if body.push(&piece).is_err() {
                    return Exchanged::BodyTooLarge { status, headers };
                }
            }
            Ok(None) => {
                return Exchanged::Response {
                    status,
                    headers,
                    body,
                };
            }
            Err(e) => {
                return Exchanged::BodyError {
                    status,
                    headers,
                    transport: transport(&e, true),
                    error: e,
                };
            }
        }
    }
}

/// Reports what an exchange came to (to the attempt selected).
fn report(c: &Inner, s: &mut S<'_>, done: Exchanged) {
    let now = c.clock.now();
    match done {
        Exchanged::Response {
            status,
            headers,
            body,
        } => s.on_response(now, status, &headers, body.as_slice()),
        Exchanged::BodyError {
            status,
            headers,
            transport,
            error,
        } => s.on_body_error(now, status, &headers, transport, error),
        Exchanged::BodyTooLarge { status, headers } => s.on_body_too_large(now, status, &headers),
        Exchanged::HeadTooLarge(e) => s.on_head_too_large(now, Some(e)),
        Exchanged::Transport(t, e) => s.on_transport(now, t, Some(e)),
    }
}
