//! Exchange deadlines many ticks away, kept by a look once a [`TICK`] instead of a
//! timer each. A timer is set and cleared in the runtime's wheel under its lock (its
//! making, polls and clearing took about 0.7 k instructions a request, callgrind); a
//! deadline here takes a slot in a list and gives it back (about 0.2 k). It passes at
//! the first look at or after it: never early, at most a tick late, so only spans of
//! at least [`COARSE_FROM`] (ten ticks; the policy's attempt timeout is 60 s by
//! default) are kept here, and shorter ones get a timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::future::Either;
use tokio::time::{Instant, Sleep};

use super::ticks::{self, TICK};

/// The shortest span kept by the looks; a shorter one gets its own timer.
pub const COARSE_FROM: Duration = Duration::from_secs(10);

/// Deadlines counted in ticks from an origin, and the tasks waiting on them.
#[derive(Debug)]
pub struct Deadlines {
    origin: Instant,
    /// Looks done: the n-th comes no earlier than `origin` plus n ticks.
    looked: AtomicU64,
    waiting: Mutex<Waiting>,
}

/// The tasks waiting, by slot (a free slot is `None`).
#[derive(Debug, Default)]
struct Waiting {
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
}

/// A deadline's tick, and the task to wake there (taken when woken).
#[derive(Debug)]
struct Slot {
    tick: u64,
    waker: Option<Waker>,
}

impl Deadlines {
    /// Deadlines counted from now.
    pub fn new() -> Deadlines {
        Deadlines {
            origin: Instant::now(),
            looked: AtomicU64::new(0),
            waiting: Mutex::new(Waiting::default()),
        }
    }

    /// Looks once a [`TICK`] while `deadlines` is alive.
    pub async fn run(deadlines: Weak<Deadlines>) {
        let Some(first) = deadlines.upgrade().map(|d| d.origin + TICK) else {
            return;
        };
        ticks::every(TICK, first, deadlines, Deadlines::look).await;
    }

    /// One look: wakes the tasks whose deadline's tick has come.
    pub fn look(&self) {
        let now = self.looked.fetch_add(1, Ordering::AcqRel).saturating_add(1);
        let mut waiting = self.lock();
        for slot in waiting.slots.iter_mut().flatten() {
            if slot.tick <= now {
                if let Some(waker) = slot.waker.take() {
                    waker.wake();
                }
            }
        }
    }

    /// A future that ends at `at` or at most a tick after: on the looks when `span`
    /// (how far `at` is) is at least [`COARSE_FROM`], else on a timer of its own.
    pub fn at(&self, at: Instant, span: Duration) -> Either<Deadline<'_>, Sleep> {
        if span < COARSE_FROM {
            return Either::Right(tokio::time::sleep_until(at));
        }
        let ticks = at
            .saturating_duration_since(self.origin)
            .as_nanos()
            .div_ceil(TICK.as_nanos());
        Either::Left(Deadline {
            deadlines: self,
            tick: u64::try_from(ticks).unwrap_or(u64::MAX),
            slot: None,
        })
    }

    fn passed(&self, tick: u64) -> bool {
        self.looked.load(Ordering::Acquire) >= tick
    }

    /// Waits for `tick` in `slot` (a new one when `None`), waking `waker`.
    fn wait(&self, slot: Option<usize>, tick: u64, waker: &Waker) -> usize {
        let mut waiting = self.lock();
        if let Some(i) = slot {
            if let Some(Some(s)) = waiting.slots.get_mut(i) {
                if !s.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    s.waker = Some(waker.clone());
                }
                return i;
            }
        }
        let s = Some(Slot {
            tick,
            waker: Some(waker.clone()),
        });
        match waiting.free.pop() {
            Some(i) => {
                if let Some(free) = waiting.slots.get_mut(i) {
                    *free = s;
                }
                i
            }
            None => {
                waiting.slots.push(s);
                waiting.slots.len().saturating_sub(1)
            }
        }
    }

    fn release(&self, slot: usize) {
        let mut waiting = self.lock();
        if let Some(s) = waiting.slots.get_mut(slot) {
            *s = None;
            waiting.free.push(slot);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines::new()
    }
}

/// A deadline on the looks (see [`Deadlines::at`]).
#[derive(Debug)]
pub struct Deadline<'d> {
    deadlines: &'d Deadlines,
    tick: u64,
    slot: Option<usize>,
}

impl Future for Deadline<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.deadlines.passed(this.tick) {
            return Poll::Ready(());
        }
        this.slot = Some(this.deadlines.wait(this.slot, this.tick, cx.waker()));
        // A look may have come between the check and the wait.
        if this.deadlines.passed(this.tick) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            self.deadlines.release(slot);
        }
    }
}

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod tests;
