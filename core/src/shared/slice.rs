//! One dimension of a shared limit — requests or tokens — as this process holds it:
//! the current lease, the outstanding ask and what the store last said.

use crate::time::Timestamp;

/// A lease that ended, as the store must hear of it: `reserved` units were taken,
/// `spent` were used (more than `reserved` when usage overran the estimates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Ended {
    pub reserved: u64,
    pub spent: u64,
}

/// One dimension's lease state.
#[derive(Debug, Clone, Default)]
pub(super) struct Slice {
    /// Units of the current lease not yet spent.
    left: u64,
    /// Units the current lease granted, and spent of it so far.
    granted: u64,
    spent: u64,
    /// When the current lease expires.
    expires: Timestamp,
    /// The outstanding ask: its ticket and when it times out.
    pub asking: Option<(u64, Timestamp)>,
    /// The ticket of the last ask that timed out, while no newer one is out: its
    /// answer, when it comes late, still counts (see [`Slice::answers_late`]).
    late: Option<u64>,
    /// Units a waiting call needs (0: nothing is wanted).
    wanted: u64,
    /// The store said nothing is free before this.
    not_before: Timestamp,
    /// The store's last answer was empty: ask for just what is needed next time.
    pub shrink: bool,
}

impl Slice {
    /// Units free at `now`.
    pub fn available(&self, now: Timestamp) -> u64 {
        if now < self.expires { self.left } else { 0 }
    }

    /// When a call needing `need` units may go: `None` for now. Notes the need when
    /// nothing is asked yet.
    pub fn check(&mut self, now: Timestamp, need: u64, recheck: Timestamp) -> Option<Timestamp> {
        if need == 0 || self.available(now) >= need {
            return None;
        }
        if now < self.not_before {
            return Some(self.not_before);
        }
        if let Some((_, timeout)) = self.asking {
            return Some(timeout.min(recheck));
        }
        self.wanted = self.wanted.max(need);
        Some(recheck)
    }

    /// Spends `n` units of the current lease (nothing when it does not hold them).
    pub fn spend(&mut self, now: Timestamp, n: u64) {
        if n > 0 && self.available(now) >= n {
            self.left = self.left.saturating_sub(n);
            self.spent = self.spent.saturating_add(n);
        }
    }

    /// The units wanted, marking the ask `ticket` outstanding until `timeout`.
    pub fn take_ask(&mut self, ticket: u64, timeout: Timestamp) -> Option<u64> {
        if self.wanted == 0 || self.asking.is_some() {
            return None;
        }
        self.asking = Some((ticket, timeout));
        Some(core::mem::take(&mut self.wanted))
    }

    /// Whether `ticket` is this slice's outstanding ask; clears it when it is.
    pub fn answers(&mut self, ticket: u64) -> bool {
        if self.asking.map(|(t, _)| t) == Some(ticket) {
            self.asking = None;
            self.late = None;
            return true;
        }
        false
    }

    /// The outstanding ask timed out: nothing is out any more, but its answer, if it
    /// still comes before another ask goes out, is [`Slice::answers_late`].
    pub fn time_out(&mut self) {
        if let Some((ticket, _)) = self.asking.take() {
            self.late = Some(ticket);
        }
    }

    /// The ask `ticket` was answered with a failure (a driver that gave up waiting
    /// at its deadline says so): its real answer may still come, late.
    pub fn await_late(&mut self, ticket: u64) {
        self.late = Some(ticket);
    }

    /// Whether `ticket` is the ask that timed out, no newer ask being out (it is then
    /// answered).
    pub fn answers_late(&mut self, ticket: u64) -> bool {
        if self.asking.is_none() && self.late == Some(ticket) {
            self.late = None;
            return true;
        }
        false
    }

    /// A new lease of `n` units until `expires`: the current one ends.
    pub fn grant(&mut self, n: u64, expires: Timestamp) -> Ended {
        let ended = self.end();
        self.left = n;
        self.granted = n;
        self.expires = expires;
        self.shrink = false;
        ended
    }

    /// Nothing is free before `at`.
    pub fn empty_until(&mut self, at: Timestamp) {
        self.not_before = at;
        self.shrink = true;
    }

    /// Ends the current lease (its unspent units are lost to this process).
    pub fn end(&mut self) -> Ended {
        let ended = Ended {
            reserved: self.granted,
            spent: self.spent,
        };
        self.left = 0;
        self.granted = 0;
        self.spent = 0;
        ended
    }

    /// Ends the current lease if it has expired by `now`.
    pub fn end_expired(&mut self, now: Timestamp) -> Option<Ended> {
        (self.granted > 0 && now >= self.expires).then(|| self.end())
    }

    /// When the current lease expires, if one is held.
    pub fn expiry(&self) -> Option<Timestamp> {
        (self.granted > 0).then_some(self.expires)
    }

    /// Usage that differs from what was spent for it: `more` units over the
    /// estimates, or `less` under. It is charged to (or refunded within) the current
    /// lease; with no lease held, it is returned as a lease of its own to settle.
    pub fn correct(&mut self, now: Timestamp, more: u64, less: u64) -> Option<Ended> {
        if self.granted == 0 || now >= self.expires {
            return Some(Ended {
                reserved: less,
                spent: more,
            });
        }
        self.spent = self.spent.saturating_add(more).saturating_sub(less);
        self.left = self.granted.saturating_sub(self.spent);
        None
    }
}
