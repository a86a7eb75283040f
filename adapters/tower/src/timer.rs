//! The attempt timeout's timers, kept armed from one attempt to the next.
//!
//! A fresh tokio timer registers in the runtime's timer wheel and, when its deadline
//! is the earliest there, wakes the runtime's driver (a write to its event fd and one
//! more turn of its loop): on loopback, most of what the layer added to a call. A
//! timer still registered moves to a later deadline with one atomic operation, so a
//! client keeps its attempts' timers when they end, one list per runtime, and resets
//! one to the next attempt's deadline. An idle timer lapses at its old deadline; its
//! firing wakes nothing that waits.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use tokio::runtime::{Handle, Id};
use tokio::task::coop;
use tokio::time::{Instant, Sleep};

/// The most idle timers a client keeps; past it, the oldest is dropped.
const KEEP: usize = 64;

/// One timer and the runtime whose wheel it is registered in.
type Timer = (Id, Pin<Box<Sleep>>);

/// A client's idle attempt timers.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    idle: Mutex<Vec<Timer>>,
}

impl Timers {
    /// `f`'s output, or `None` when `deadline` passes first: `tokio::time::timeout_at`
    /// (the future polled first, the timer armed only if it is pending), on a kept
    /// timer when there is one. No deadline: `f` unbounded.
    pub(crate) async fn within<F: Future>(
        &self,
        deadline: Option<Instant>,
        f: F,
    ) -> Option<F::Output> {
        let Some(deadline) = deadline else {
            return Some(f.await);
        };
        let mut f = std::pin::pin!(f);
        let mut lease = Lease {
            timers: self,
            timer: None,
        };
        std::future::poll_fn(|cx| {
            let had_budget = coop::has_budget_remaining();
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            let (_, sleep) = lease.timer.get_or_insert_with(|| self.take(deadline));
            // As tokio's own timeout: a future that spent the task's budget does not
            // keep the timer from firing.
            let elapsed = if had_budget && !coop::has_budget_remaining() {
                Pin::new(&mut coop::unconstrained(sleep.as_mut())).poll(cx)
            } else {
                sleep.as_mut().poll(cx)
            };
            elapsed.map(|()| None)
        })
        .await
    }

    /// A timer for `deadline`: a kept one of this runtime reset to it, or a new one.
    fn take(&self, deadline: Instant) -> Timer {
        let runtime = Handle::current().id();
        let kept = {
            let mut idle = self.lock();
            let found = idle.iter().rposition(|(id, _)| *id == runtime);
            found.map(|i| idle.remove(i))
        };
        match kept {
            Some((id, mut sleep)) => {
                sleep.as_mut().reset(deadline);
                (id, sleep)
            }
            None => (runtime, Box::pin(tokio::time::sleep_until(deadline))),
        }
    }

    fn keep(&self, timer: Timer) {
        let dropped = {
            let mut idle = self.lock();
            let oldest = (idle.len() >= KEEP).then(|| idle.remove(0));
            idle.push(timer);
            oldest
        };
        // Deregistered outside the lock.
        drop(dropped);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Timer>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The timer of one attempt, kept when the attempt ends (or its future is dropped).
struct Lease<'t> {
    timers: &'t Timers,
    timer: Option<Timer>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            self.timers.keep(timer);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `within` on a future that never ends, bounded (for the test's own liveness) by
    /// a span far longer than the deadline.
    async fn never_ends_within(timers: &Timers, deadline: Duration) -> Option<()> {
        let d = Instant::now() + deadline;
        let bounded = timers.within(Some(d), std::future::pending::<()>());
        let guard = tokio::time::timeout(Duration::from_secs(30), bounded).await;
        assert!(guard.is_ok(), "the deadline of {deadline:?} did not fire");
        guard.ok().flatten()
    }

    #[tokio::test]
    async fn a_kept_timer_bounds_the_next_attempt_at_that_attempts_deadline() {
        let timers = Timers::default();
        let far = Instant::now() + Duration::from_secs(3600);
        let first = timers.within(Some(far), tokio::task::yield_now()).await;
        assert_eq!(
            first,
            Some(()),
            "a future pending once ends before its deadline"
        );
        assert_eq!(timers.lock().len(), 1, "its timer is kept");
        // The kept timer, an hour out, reset to a deadline far earlier.
        assert_eq!(never_ends_within(&timers, 20 * MS).await, None);
        assert_eq!(timers.lock().len(), 1, "the same timer, kept again");
        // Armed again (it fired), 30 ms out; then moved an hour out while still armed:
        // it does not fire at the old deadline.
        let soon = Instant::now() + 30 * MS;
        let r = timers.within(Some(soon), tokio::task::yield_now()).await;
        assert_eq!(r, Some(()));
        let late = Instant::now() + Duration::from_secs(3600);
        let past_old = timers.within(Some(late), tokio::time::sleep(60 * MS)).await;
        assert_eq!(past_old, Some(()), "the timer fired at its old deadline");
        assert_eq!(timers.lock().len(), 1);
    }

    #[tokio::test]
    async fn a_future_ready_at_once_arms_no_timer_and_none_bounds_nothing() {
        let timers = Timers::default();
        let r = timers.within(Some(Instant::now()), async { 7 }).await;
        assert_eq!(r, Some(7), "the future is polled before the deadline is");
        assert!(timers.lock().is_empty());
        let r = timers.within(None, tokio::time::sleep(MS)).await;
        assert_eq!(r, Some(()));
        assert!(timers.lock().is_empty());
    }

    #[test]
    fn a_timer_kept_on_a_runtime_since_shut_down_is_not_reused() {
        let timers = Timers::default();
        let runtime = || {
            let mut b = tokio::runtime::Builder::new_current_thread();
            b.enable_time().build()
        };
        let Ok(first) = runtime() else {
            panic!("a runtime");
        };
        let far = Instant::now() + Duration::from_secs(3600);
        let done = first.block_on(timers.within(Some(far), tokio::task::yield_now()));
        assert_eq!(done, Some(()));
        drop(first);
        let Ok(second) = runtime() else {
            panic!("a runtime");
        };
        // Polling the first runtime's timer here would panic: it is shut down.
        let r = second.block_on(never_ends_within(&timers, 20 * MS));
        assert_eq!(r, None);
        assert_eq!(timers.lock().len(), 2, "one kept timer per runtime");
    }
}
