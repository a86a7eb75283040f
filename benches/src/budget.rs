//! Retry budget: deposits (one per success) and withdrawals (one per retry).
//!
//! Steadfast: [`RetryBudget`] with its default config (ratio 0.2, floor 10 retries a
//! second, ttl 10 s), `now` advancing 1 µs per operation. tower: `TpsBudget` with the
//! same parameters (`TpsBudget::new(10 s, 10, 0.2)`, also tower's default), which reads
//! tokio's clock and takes a lock inside.
//!
//! - *deposit*: one success;
//! - *withdraw, spent*: a retry asked of a budget with nothing left (denied; the
//!   floor grants one now and then);
//! - *cycle*: five deposits then one withdrawal, which the deposits pay for (one
//!   iteration = six operations).

use std::time::Duration;

use steadfast_core::budget::{BudgetConfig, RetryBudget};
use steadfast_core::time::Timestamp;
use tower::retry::budget::{Budget as _, TpsBudget};

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// One deposit.
pub const DEPOSIT: Group = Group {
    id: "budget_deposit",
    label: "retry budget: deposit",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.1,
        ns: f64::INFINITY,
        against: None,
    },
};

/// One withdrawal from a spent budget.
pub const WITHDRAW_SPENT: Group = Group {
    id: "budget_withdraw_spent",
    label: "retry budget: withdraw, spent (denied)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.1,
        ns: f64::INFINITY,
        against: None,
    },
};

/// Five deposits and a withdrawal.
pub const CYCLE: Group = Group {
    id: "budget_cycle",
    label: "retry budget: 5 deposits + 1 withdraw (granted)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.1,
        ns: f64::INFINITY,
        against: None,
    },
};

const STEP_NS: u64 = 1_000;

/// One step is one deposit.
pub const OPS_DEPOSIT: u8 = 0;
/// One step is one withdrawal.
pub const OPS_WITHDRAW: u8 = 1;
/// One step is five deposits and one withdrawal.
pub const OPS_CYCLE: u8 = 2;

/// Steadfast's budget.
#[derive(Debug)]
pub struct Steadfast<const OPS: u8> {
    budget: RetryBudget,
    now: u64,
}

impl<const OPS: u8> Steadfast<OPS> {
    fn new() -> Steadfast<OPS> {
        let mut budget = RetryBudget::new(BudgetConfig::default());
        let now = 1_000_000_000;
        if OPS == OPS_WITHDRAW {
            // Spend the floor's first retry.
            let _ = budget.try_withdraw(Timestamp::from_nanos(now));
        }
        Steadfast { budget, now }
    }

    #[inline]
    fn tick(&mut self) -> Timestamp {
        self.now += STEP_NS;
        Timestamp::from_nanos(self.now)
    }
}

impl<const OPS: u8> Workload for Steadfast<OPS> {
    #[inline]
    fn step(&mut self) -> u64 {
        match OPS {
            OPS_DEPOSIT => {
                let now = self.tick();
                self.budget.on_success(now);
                0
            }
            OPS_WITHDRAW => {
                let now = self.tick();
                u64::from(self.budget.try_withdraw(now))
            }
            _ => {
                for _ in 0..5 {
                    let now = self.tick();
                    self.budget.on_success(now);
                }
                let now = self.tick();
                u64::from(self.budget.try_withdraw(now))
            }
        }
    }
}

/// tower's budget.
#[derive(Debug)]
pub struct Tower<const OPS: u8> {
    budget: TpsBudget,
}

/// tower's `TpsBudget` with steadfast's default parameters.
pub fn tps_budget() -> TpsBudget {
    TpsBudget::new(Duration::from_secs(10), 10, 0.2)
}

impl<const OPS: u8> Tower<OPS> {
    fn new() -> Tower<OPS> {
        let budget = tps_budget();
        if OPS == OPS_WITHDRAW {
            // Spend the reserve (tower's floor: min_per_sec × ttl retries at once).
            while budget.withdraw() {}
        }
        Tower { budget }
    }
}

impl<const OPS: u8> Workload for Tower<OPS> {
    #[inline]
    fn step(&mut self) -> u64 {
        match OPS {
            OPS_DEPOSIT => {
                self.budget.deposit();
                0
            }
            OPS_WITHDRAW => u64::from(self.budget.withdraw()),
            _ => {
                for _ in 0..5 {
                    self.budget.deposit();
                }
                u64::from(self.budget.withdraw())
            }
        }
    }
}

/// Hands the budget workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    let case = |group: Group, name| Case {
        group: group.id,
        name,
    };
    v.visit(case(DEPOSIT, STEADFAST), Steadfast::<OPS_DEPOSIT>::new);
    v.visit(case(DEPOSIT, "tower_tps_budget"), Tower::<OPS_DEPOSIT>::new);
    v.visit(
        case(WITHDRAW_SPENT, STEADFAST),
        Steadfast::<OPS_WITHDRAW>::new,
    );
    v.visit(
        case(WITHDRAW_SPENT, "tower_tps_budget"),
        Tower::<OPS_WITHDRAW>::new,
    );
    v.visit(case(CYCLE, STEADFAST), Steadfast::<OPS_CYCLE>::new);
    v.visit(case(CYCLE, "tower_tps_budget"), Tower::<OPS_CYCLE>::new);
}
