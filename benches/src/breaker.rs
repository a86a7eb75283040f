//! Circuit breaker: permit a call and record its result, on a closed breaker.
//!
//! Steadfast: [`Breaker::permit`] then [`Breaker::on_result`], with the default config
//! (consecutive-failures and failure-rate models over a 30 s time window), `now`
//! advancing 1 ms per call. Peers: `failsafe` with its consecutive-failures and its
//! success-rate policies (`is_call_permitted` then `on_success` / `on_error`), and
//! `recloser` (`call` with a closure that succeeds or fails: its only public API).
//!
//! The failure group records failures only, so every breaker is configured not to trip
//! (thresholds out of reach) and stays closed; the work per call is the same as with
//! reachable thresholds, since every model still counts and compares.

use std::time::Duration;

use steadfast_core::breaker::{Breaker, BreakerConfig, BreakerInput};
use steadfast_core::rng::{self, CoreRng};
use steadfast_core::time::Timestamp;

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// Permit + record success.
pub const SUCCESS: Group = Group {
    id: "breaker_success",
    label: "breaker: permit + record success (closed)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 5.0,
        against: None,
    },
};

/// Permit + record failure.
pub const FAILURE: Group = Group {
    id: "breaker_failure",
    label: "breaker: permit + record failure (closed)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 5.0,
        against: None,
    },
};

const STEP_NS: u64 = 1_000_000;
const LATENCY: Duration = Duration::from_millis(300);

/// Steadfast's breaker fed one outcome kind.
#[derive(Debug)]
pub struct Steadfast {
    breaker: Breaker,
    rng: CoreRng,
    now: u64,
    input: BreakerInput,
}

impl Steadfast {
    /// The default breaker, fed successes.
    pub fn success() -> Steadfast {
        Steadfast::with(
            &BreakerConfig::default(),
            BreakerInput::Success { latency: LATENCY },
        )
    }

    /// A breaker that cannot trip, fed failures.
    pub fn failure() -> Steadfast {
        Steadfast::with(&never_trips(), BreakerInput::Failure)
    }

    fn with(config: &BreakerConfig, input: BreakerInput) -> Steadfast {
        Steadfast {
            breaker: Breaker::new(config),
            rng: rng::from_u64(1),
            now: 0,
            input,
        }
    }
}

/// The default config with both models out of reach (the rate model off, the
/// consecutive one at `u32::MAX`): closed for ever, whatever it records.
pub fn never_trips() -> BreakerConfig {
    let mut config = BreakerConfig::default();
    config.consecutive_failures = Some(u32::MAX);
    config.failure_rate = None;
    config
}

impl Workload for Steadfast {
    #[inline]
    fn step(&mut self) -> u64 {
        self.now += STEP_NS;
        let now = Timestamp::from_nanos(self.now);
        let permit = self.breaker.permit(now);
        self.breaker
            .on_result(now, self.input, false, &mut self.rng);
        u64::from(permit.is_granted())
    }
}

/// The backoff `failsafe` waits between trips (never used here: nothing trips).
pub type FailsafeBackoff = failsafe::backoff::Exponential;

/// `failsafe`'s consecutive-failures breaker.
pub type FailsafeConsecutive =
    failsafe::StateMachine<failsafe::failure_policy::ConsecutiveFailures<FailsafeBackoff>, ()>;

/// `failsafe`'s success-rate breaker.
pub type FailsafeRate = failsafe::StateMachine<
    failsafe::failure_policy::SuccessRateOverTimeWindow<FailsafeBackoff>,
    (),
>;

fn failsafe_backoff() -> FailsafeBackoff {
    failsafe::backoff::exponential(Duration::from_secs(5), Duration::from_secs(60))
}

/// A `failsafe` consecutive-failures breaker (5 in a row, or never).
pub fn failsafe_consecutive(trips: bool) -> FailsafeConsecutive {
    let n = if trips { 5 } else { u32::MAX };
    let policy = failsafe::failure_policy::consecutive_failures(n, failsafe_backoff());
    failsafe::Config::new().failure_policy(policy).build()
}

/// A `failsafe` success-rate breaker (below 50 % over 30 s with 20 calls, or never).
pub fn failsafe_rate(trips: bool) -> FailsafeRate {
    let required = if trips { 0.5 } else { 0.0 };
    let policy = failsafe::failure_policy::success_rate_over_time_window(
        required,
        20,
        Duration::from_secs(30),
        failsafe_backoff(),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

/// A `failsafe` breaker and the outcome it is fed.
#[derive(Debug)]
pub struct Failsafe<P> {
    breaker: failsafe::StateMachine<P, ()>,
    fail: bool,
}

impl<P: failsafe::FailurePolicy> Workload for Failsafe<P> {
    #[inline]
    fn step(&mut self) -> u64 {
        let permitted = self.breaker.is_call_permitted();
        if self.fail {
            self.breaker.on_error();
        } else {
            self.breaker.on_success();
        }
        u64::from(permitted)
    }
}

/// A `recloser` breaker (error rate over the last 20 calls) and the outcome it is fed.
#[derive(Debug)]
pub struct Recloser {
    breaker: recloser::Recloser,
    fail: bool,
}

/// A `recloser` that trips at a 50 % error rate over 20 calls, or never.
pub fn recloser(trips: bool) -> recloser::Recloser {
    let rate = if trips { 0.5 } else { 1.5 };
    recloser::Recloser::custom()
        .error_rate(rate)
        .closed_len(20)
        .open_wait(Duration::from_secs(5))
        .build()
}

impl Workload for Recloser {
    #[inline]
    fn step(&mut self) -> u64 {
        let fail = self.fail;
        let r = self.breaker.call(|| if fail { Err(()) } else { Ok(()) });
        u64::from(r.is_ok())
    }
}

/// Hands the breaker workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    for (group, fail) in [(SUCCESS, false), (FAILURE, true)] {
        let case = |name| Case {
            group: group.id,
            name,
        };
        if fail {
            v.visit(case(STEADFAST), Steadfast::failure);
            v.visit(case("failsafe_consecutive"), || Failsafe {
                breaker: failsafe_consecutive(false),
                fail: true,
            });
            v.visit(case("failsafe_success_rate"), || Failsafe {
                breaker: failsafe_rate(false),
                fail: true,
            });
            v.visit(case("recloser"), || Recloser {
                breaker: recloser(false),
                fail: true,
            });
        } else {
            v.visit(case(STEADFAST), Steadfast::success);
            v.visit(case("failsafe_consecutive"), || Failsafe {
                breaker: failsafe_consecutive(true),
                fail: false,
            });
            v.visit(case("failsafe_success_rate"), || Failsafe {
                breaker: failsafe_rate(true),
                fail: false,
            });
            v.visit(case("recloser"), || Recloser {
                breaker: recloser(true),
                fail: false,
            });
        }
    }
}
