//! The end of a shutdown's grace period as the gateway's calls see it. A call reads
//! one flag each time it is polled; the wake-up that gets it polled is armed once
//! per connection (the connection's task polls its calls), not once per request.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use super::idle::Idle;

/// Whether the grace period is over, and the connections to wake when it ends.
#[derive(Debug, Default)]
pub struct Ending {
    over: AtomicBool,
    woken: Notify,
}

impl Ending {
    /// Ends the grace period: every call polled from now on ends.
    pub fn end(&self) {
        self.over.store(true, Ordering::Release);
        self.woken.notify_waiters();
    }

    /// Whether the grace period is over.
    pub fn is_over(&self) -> bool {
        self.over.load(Ordering::Acquire)
    }

    /// Runs `call`, unless the grace period ends first (`None`). It is seen ending
    /// when the call is next polled: by its connection's task, which
    /// [`Ending::serve`] wakes. `call` is taken pinned where it is (`pin!`), so that
    /// a large call is not moved into this future.
    pub fn unless<F: Future + Unpin>(
        &self,
        mut call: F,
    ) -> impl Future<Output = Option<F::Output>> {
        poll_fn(move |cx| {
            if self.is_over() {
                return Poll::Ready(None);
            }
            Pin::new(&mut call).poll(cx).map(Some)
        })
    }

    /// Runs a connection until it ends (`Some`), woken when the grace period ends so
    /// that its calls see it; or until the idle watch closes it (`None`: dropped,
    /// which closes its socket). One layer for both: each layer costs every poll.
    pub async fn serve<F: Future>(&self, connection: F, idle: &Idle) -> Option<F::Output> {
        let mut connection = pin!(connection);
        let mut woken = pin!(self.woken.notified());
        let mut idled = pin!(idle.notified());
        let mut armed = false;
        poll_fn(|cx| {
            if !armed {
                armed = true;
                arm(woken.as_mut(), cx);
                arm(idled.as_mut(), cx);
            }
            if idle.closes(idled.as_mut(), cx) {
                return Poll::Ready(None);
            }
            connection.as_mut().poll(cx).map(Some)
        })
        .await
    }
}

/// Polls `woken` once: that registers the task's waker, which a `notify_waiters`
/// wakes.
// Not inlined: inlined into the connection's poll, it made every request on the
// connection cost about 2.5 k more instructions (callgrind), from the poll's codegen.
#[inline(never)]
pub(super) fn arm(woken: Pin<&mut Notified<'_>>, cx: &mut Context<'_>) {
    let _ = woken.poll(cx);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn a_call_waiting_in_a_served_connection_ends_when_the_grace_period_does() {
        let ending = Arc::new(Ending::default());
        let connection = {
            let ending = Arc::clone(&ending);
            async move {
                let call = std::future::pending::<()>();
                ending.unless(pin!(call)).await
            }
        };
        let served = tokio::spawn({
            let ending = Arc::clone(&ending);
            async move { ending.serve(connection, &Idle::default()).await }
        });
        tokio::task::yield_now().await;
        assert!(!served.is_finished());
        assert!(!ending.is_over());
        ending.end();
        assert_eq!(served.await.ok(), Some(Some(None)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_finishes_first_keeps_its_output_and_a_late_one_ends_at_once() {
        let ending = Ending::default();
        assert_eq!(ending.unless(pin!(async { 7 })).await, Some(7));
        ending.end();
        assert_eq!(ending.unless(pin!(async { 7 })).await, None);
        assert_eq!(ending.serve(async { 8 }, &Idle::default()).await, Some(8));
    }
}
