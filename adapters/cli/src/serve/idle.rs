//! Closing the connections that wait too long for a request: a client that sends its
//! request's head slowly, or keeps a connection open and sends nothing. A watch looks
//! at every connection once a [`TICK`] and closes one that has had no request in
//! flight at more than [`IDLE_TICKS`] looks in a row: after it waited 30 to 31 s
//! (hyper's own header-read timeout is 30 s).
//! A request costs its connection two counter updates; hyper's timer cost an
//! allocation and a timer set and cleared a request (1.5 k instructions, callgrind).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Response;
use http_body_util::Either;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use super::ending::arm;
use super::reply;
use super::ticks::{self, TICK};

/// Ticks a connection may wait for a request: it is closed at the look after (the
/// first look may come at once, so it has waited at least this many).
pub const IDLE_TICKS: u32 = 30;

/// Every open connection, looked at once a [`TICK`] by [`Watch::run`].
#[derive(Debug, Default)]
pub struct Watch {
    connections: Mutex<Vec<Weak<Idle>>>,
}

impl Watch {
    /// A new connection's state, watched from now on (a connection that never sends
    /// a request is closed like one that stopped sending them).
    pub fn register(&self) -> Arc<Idle> {
        let idle = Arc::new(Idle::default());
        self.lock().push(Arc::downgrade(&idle));
        idle
    }

    /// One look at every connection (closed ones are forgotten); how many were asked
    /// to close.
    pub fn look(&self) -> usize {
        let mut asked = 0;
        self.lock().retain(|c| match c.upgrade() {
            Some(idle) => {
                asked += usize::from(idle.look());
                true
            }
            None => false,
        });
        asked
    }

    /// Looks once a [`TICK`] while `watch` is alive (the server holds it).
    pub async fn run(watch: Weak<Watch>) {
        let first = tokio::time::Instant::now() + TICK;
        ticks::every(TICK, first, watch, |w| {
            w.look();
        })
        .await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Idle>>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection as the watch sees it.
#[derive(Debug, Default)]
pub struct Idle {
    /// Its requests in flight (until each answer's body is done or dropped).
    busy: AtomicU32,
    /// The watch's looks in a row that found it without a request in flight.
    quiet: AtomicU32,
    /// Set by the watch: close the connection unless a request has come since.
    closing: AtomicBool,
    /// Wakes the connection's task when `closing` is set.
    wake: Notify,
}

impl Idle {
    /// A request starts: the connection is busy until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(self))
    }

    /// One look by the watch; true when it asks the connection to close.
    fn look(&self) -> bool {
        if self.busy.load(Ordering::Acquire) > 0 {
            self.quiet.store(0, Ordering::Relaxed);
            return false;
        }
        let quiet = self.quiet.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if quiet <= IDLE_TICKS {
            return false;
        }
        self.closing.store(true, Ordering::Release);
        self.wake.notify_waiters();
        true
    }

    /// A wake-up for the connection's task when the watch asks it to close.
    pub fn notified(&self) -> Notified<'_> {
        self.wake.notified()
    }

    /// Whether the connection closes now: the watch asked and no request has come
    /// since. When one has, the ask is dropped and `woken` (this connection's
    /// [`Idle::notified`], armed) is armed again for the next.
    #[inline]
    pub fn closes<'a>(&'a self, woken: Pin<&mut Notified<'a>>, cx: &mut Context<'_>) -> bool {
        self.closing.load(Ordering::Acquire) && self.asked_to_close(woken, cx)
    }

    #[cold]
    #[inline(never)]
    fn asked_to_close<'a>(
        &'a self,
        mut woken: Pin<&mut Notified<'a>>,
        cx: &mut Context<'_>,
    ) -> bool {
        if self.busy.load(Ordering::Acquire) == 0 {
            return true;
        }
        self.closing.store(false, Ordering::Release);
        woken.set(self.wake.notified());
        arm(woken, cx);
        false
    }
}

/// A request in flight on its connection (see [`Idle::enter`]).
#[derive(Debug)]
pub struct Busy(Arc<Idle>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.quiet.store(0, Ordering::Relaxed);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `response`, with its request kept in flight until its body is done: a whole body
/// is done now (it is written at once), a stream when it ends or is dropped (it may
/// run far longer than the idle timeout).
pub fn keep_busy(response: Response<reply::Body>, busy: Busy) -> Response<reply::Body> {
    if matches!(response.body(), Either::Left(_)) {
        return response;
    }
    response.map(|body| match body {
        Either::Right(stream) => Either::Right(UnsyncBoxBody::new(Tracked::new(stream, busy))),
        whole => whole,
    })
}

/// A response body that keeps its request in flight until it is done or dropped.
#[derive(Debug)]
pub struct Tracked<B> {
    body: B,
    _busy: Busy,
}

impl<B> Tracked<B> {
    /// `body`, with its request's guard.
    pub fn new(body: B, busy: Busy) -> Tracked<B> {
        Tracked { body, _busy: busy }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[path = "idle_tests.rs"]
mod tests;
