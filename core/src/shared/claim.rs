//! One process's claim on an entry of a shared idempotency ledger (a business id that
//! batch workers or gateway replicas must run once between them), as a machine that
//! says when to ask the store, when to renew, and what an answer means.
//!
//! The driver owns the store; the machine owns the timing and the policy:
//!
//! 1. [`Claim::poll_claim`] says [`ClaimStep::Ask`]: the driver asks the store to claim
//!    the entry for [`ClaimConfig::claim_for`] and reports the answer with
//!    [`Claim::handle_claim`].
//! 2. The entry is another process's ([`ClaimAnswer::Held`]): the machine waits
//!    [`ClaimConfig::claim_for`] / 8 and asks again, so a process that died leaves its
//!    entries to the others once their claims lapse.
//! 3. The claim is won: [`ClaimStep::Run`] once, then [`ClaimStep::Renew`] every
//!    [`ClaimConfig::claim_for`] / 3 while the work runs (a renewal's answer is
//!    reported like an ask's; a renewal that fails or finds the entry taken changes
//!    nothing: the work runs on, its idempotency key still guards the provider).
//! 4. Another process finished the entry ([`ClaimAnswer::Done`]): [`ClaimStep::Done`],
//!    the driver uses what it stored.
//! 5. The store failed ([`ClaimAnswer::Failed`]): under [`FailMode::Open`] the work
//!    runs anyway (and renews, which claims the entry once the store is back); under
//!    [`FailMode::Closed`] the machine asks again after [`ClaimConfig::claim_for`] / 8.
//!
//! With [`ClaimConfig::give_up_after`], a turn not had by then ends in
//! [`ClaimStep::GaveUp`]; by default a turn waits as long as it takes.

use core::time::Duration;

use super::FailMode;
use crate::config::nonzero;
use crate::error::ConfigError;
use crate::time::Timestamp;

/// How a claim is asked for, renewed and given up.
///
/// Defaults: `claim_for: 30s`, `fail: open`, `give_up_after: none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimConfig {
    /// How long a claim lasts in the store without renewal (a process that dies
    /// leaves its entries after this).
    pub claim_for: Duration,
    /// What a store failure means: run anyway (`Open`) or ask again (`Closed`).
    pub fail: FailMode,
    /// The longest a turn waits for its claim; `None`: as long as it takes.
    pub give_up_after: Option<Duration>,
}

impl Default for ClaimConfig {
    fn default() -> ClaimConfig {
        ClaimConfig {
            claim_for: Duration::from_secs(30),
            fail: FailMode::Open,
            give_up_after: None,
        }
    }
}

impl ClaimConfig {
    /// A claim lasting `claim_for` under `fail`, waiting as long as it takes.
    pub fn new(claim_for: Duration, fail: FailMode) -> ClaimConfig {
        ClaimConfig {
            claim_for,
            fail,
            give_up_after: None,
        }
    }

    /// Checks the parameters; the error names the first bad field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        nonzero(self.claim_for.is_zero(), "shared.claim_for")
    }

    /// How long after an answer that found the entry held (or, failing closed, no
    /// answer) the store is asked again.
    pub fn retry_every(&self) -> Duration {
        self.claim_for.checked_div(8).unwrap_or_default()
    }

    /// How often a held claim is renewed.
    pub fn renew_every(&self) -> Duration {
        self.claim_for.checked_div(3).unwrap_or_default()
    }
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimStep {
    /// Ask the store for the claim (for [`ClaimConfig::claim_for`]) and report its
    /// answer with [`Claim::handle_claim`].
    Ask,
    /// Run the work: the claim is this process's (`held`), or the store failed and
    /// the claim fails open (`!held`). Given once; renewals follow.
    Run {
        /// Whether the store granted the claim.
        held: bool,
    },
    /// Renew the claim (the same ask as [`ClaimStep::Ask`]) and report the answer.
    Renew,
    /// Another process finished the entry: use what it stored.
    Done,
    /// No turn before [`ClaimConfig::give_up_after`].
    GaveUp,
    /// Nothing to do before this instant (or before the outstanding answer).
    Wait(Timestamp),
}

/// The store's answer to an ask or a renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimAnswer {
    /// The claim is this process's (won, or renewed).
    Won,
    /// Another process holds it.
    Held,
    /// Another process finished the entry and stored its result.
    Done,
    /// The store could not be asked.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Ask at this instant.
    Idle {
        ask_at: Timestamp,
    },
    /// An ask is out.
    Asking,
    /// The turn is had: [`ClaimStep::Run`] is due.
    Won {
        held: bool,
    },
    /// Running: renew at this instant.
    Holding {
        renew_at: Timestamp,
    },
    /// A renewal is out.
    Renewing,
    /// Over.
    Done,
    GaveUp,
}

/// One claim. See the module documentation.
#[derive(Debug, Clone)]
pub struct Claim {
    config: ClaimConfig,
    state: State,
    give_up_at: Timestamp,
    asks: u32,
}

impl Claim {
    /// A claim wanted from `now`: the first ask is due at once.
    pub fn new(now: Timestamp, config: &ClaimConfig) -> Claim {
        Claim {
            config: *config,
            state: State::Idle { ask_at: now },
            give_up_at: config
                .give_up_after
                .map_or(Timestamp::MAX, |d| now.saturating_add(d)),
            asks: 0,
        }
    }

    /// Asks and renewals sent so far.
    pub fn asks(&self) -> u32 {
        self.asks
    }

    /// What to do at `now`. An [`ClaimStep::Ask`] or [`ClaimStep::Renew`] is given
    /// once: the next step waits for its answer.
    pub fn poll_claim(&mut self, now: Timestamp) -> ClaimStep {
        match self.state {
            State::Idle { .. } | State::Asking if now >= self.give_up_at => {
                self.state = State::GaveUp;
                ClaimStep::GaveUp
            }
            State::Idle { ask_at } if now >= ask_at => {
                self.state = State::Asking;
                self.asks = self.asks.saturating_add(1);
                ClaimStep::Ask
            }
            State::Idle { ask_at } => ClaimStep::Wait(ask_at.min(self.give_up_at)),
            State::Asking => ClaimStep::Wait(self.give_up_at),
            State::Won { held } => {
                self.state = State::Holding {
                    renew_at: now.saturating_add(self.config.renew_every()),
                };
                ClaimStep::Run { held }
            }
            State::Holding { renew_at } if now >= renew_at => {
                self.state = State::Renewing;
                self.asks = self.asks.saturating_add(1);
                ClaimStep::Renew
            }
            State::Holding { renew_at } => ClaimStep::Wait(renew_at),
            State::Renewing => ClaimStep::Wait(Timestamp::MAX),
            State::Done => ClaimStep::Done,
            State::GaveUp => ClaimStep::GaveUp,
        }
    }

    /// The store's answer, at `now`, to the ask or renewal outstanding (any other
    /// answer changes nothing).
    pub fn handle_claim(&mut self, now: Timestamp, answer: ClaimAnswer) {
        let retry = State::Idle {
            ask_at: now.saturating_add(self.config.retry_every()),
        };
        self.state = match (self.state, answer) {
            (State::Asking, ClaimAnswer::Won) => State::Won { held: true },
            (State::Asking, ClaimAnswer::Done) => State::Done,
            (State::Asking, ClaimAnswer::Held) => retry,
            (State::Asking, ClaimAnswer::Failed) => match self.config.fail {
                FailMode::Open => State::Won { held: false },
                FailMode::Closed => retry,
            },
            (State::Renewing, _) => State::Holding {
                renew_at: now.saturating_add(self.config.renew_every()),
            },
            (state, _) => state,
        };
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Timestamp {
        Timestamp::from_millis(n)
    }

    fn config(fail: FailMode) -> ClaimConfig {
        ClaimConfig::new(ms(24_000), fail)
    }

    #[test]
    fn a_won_claim_runs_once_and_renews_every_third_of_its_time() {
        let mut c = Claim::new(at(0), &config(FailMode::Open));
        assert_eq!(c.poll_claim(at(0)), ClaimStep::Ask);
        assert_eq!(c.poll_claim(at(1)), ClaimStep::Wait(Timestamp::MAX));
        c.handle_claim(at(2), ClaimAnswer::Won);
        assert_eq!(c.poll_claim(at(2)), ClaimStep::Run { held: true });
        assert_eq!(c.poll_claim(at(3)), ClaimStep::Wait(at(8_002)));
        assert_eq!(c.poll_claim(at(8_002)), ClaimStep::Renew);
        assert_eq!(c.poll_claim(at(8_003)), ClaimStep::Wait(Timestamp::MAX));
        // A failed renewal changes nothing: the next one is a third later.
        c.handle_claim(at(8_050), ClaimAnswer::Failed);
        assert_eq!(c.poll_claim(at(8_050)), ClaimStep::Wait(at(16_050)));
        assert_eq!(c.asks(), 2);
    }

    #[test]
    fn a_held_entry_is_asked_again_every_eighth_until_it_is_won_or_done() {
        let mut c = Claim::new(at(0), &config(FailMode::Closed));
        assert_eq!(c.poll_claim(at(0)), ClaimStep::Ask);
        c.handle_claim(at(5), ClaimAnswer::Held);
        assert_eq!(c.poll_claim(at(5)), ClaimStep::Wait(at(3_005)));
        assert_eq!(c.poll_claim(at(3_004)), ClaimStep::Wait(at(3_005)));
        assert_eq!(c.poll_claim(at(3_005)), ClaimStep::Ask);
        c.handle_claim(at(3_010), ClaimAnswer::Done);
        assert_eq!(c.poll_claim(at(3_010)), ClaimStep::Done);
        assert_eq!(c.poll_claim(at(9_000)), ClaimStep::Done);
        // An answer nobody waits for changes nothing.
        c.handle_claim(at(9_000), ClaimAnswer::Won);
        assert_eq!(c.poll_claim(at(9_000)), ClaimStep::Done);
    }

    #[test]
    fn a_store_failure_runs_the_work_failing_open_and_asks_again_failing_closed() {
        let mut open = Claim::new(at(0), &config(FailMode::Open));
        assert_eq!(open.poll_claim(at(0)), ClaimStep::Ask);
        open.handle_claim(at(50), ClaimAnswer::Failed);
        assert_eq!(open.poll_claim(at(50)), ClaimStep::Run { held: false });
        // It renews like a won claim: once the store is back, the entry is its.
        assert_eq!(open.poll_claim(at(8_050)), ClaimStep::Renew);
        let mut closed = Claim::new(at(0), &config(FailMode::Closed));
        assert_eq!(closed.poll_claim(at(0)), ClaimStep::Ask);
        closed.handle_claim(at(50), ClaimAnswer::Failed);
        assert_eq!(closed.poll_claim(at(50)), ClaimStep::Wait(at(3_050)));
        assert_eq!(closed.poll_claim(at(3_050)), ClaimStep::Ask);
        closed.handle_claim(at(3_060), ClaimAnswer::Won);
        assert_eq!(closed.poll_claim(at(3_060)), ClaimStep::Run { held: true });
    }

    #[test]
    fn a_turn_with_a_limit_gives_up_at_it_and_not_before() {
        let mut limited = config(FailMode::Closed);
        limited.give_up_after = Some(ms(5_000));
        let mut c = Claim::new(at(0), &limited);
        assert_eq!(c.poll_claim(at(0)), ClaimStep::Ask);
        c.handle_claim(at(10), ClaimAnswer::Failed);
        assert_eq!(c.poll_claim(at(3_010)), ClaimStep::Ask);
        assert_eq!(c.poll_claim(at(4_000)), ClaimStep::Wait(at(5_000)));
        c.handle_claim(at(4_000), ClaimAnswer::Held);
        assert_eq!(c.poll_claim(at(4_999)), ClaimStep::Wait(at(5_000)));
        assert_eq!(c.poll_claim(at(5_000)), ClaimStep::GaveUp);
        c.handle_claim(at(5_001), ClaimAnswer::Won);
        assert_eq!(c.poll_claim(at(5_001)), ClaimStep::GaveUp);
        // Without a limit nothing gives up, however long it waits.
        let mut patient = Claim::new(at(0), &config(FailMode::Closed));
        for i in 0..100u64 {
            assert_eq!(patient.poll_claim(at(i * 3_000)), ClaimStep::Ask);
            patient.handle_claim(at(i * 3_000), ClaimAnswer::Held);
        }
        assert_eq!(patient.asks(), 100);
    }

    #[test]
    fn the_config_names_a_bad_field() {
        let mut c = ClaimConfig::default();
        assert_eq!(c.validate(), Ok(()));
        c.claim_for = Duration::ZERO;
        assert!(c.validate().is_err());
    }
}
