//! The simplest gate: one endpoint, one key, a retry budget.

use core::time::Duration;

use rand_core::Rng;

use super::{Admit, Gate, GiveUpReason, Grant, Query, Report, WaitCause};
use crate::budget::{BudgetConfig, RetryBudget};
use crate::classify::{ClassifyConfig, Scope, Verdict};
use crate::hedge::{HedgeBudget, HedgeConfig};
use crate::ids::{EndpointId, Target};
use crate::time::Timestamp;

/// The simplest [`Gate`]: one endpoint with one key, a retry budget, a hedge budget
/// (the default [`HedgeConfig`]'s share unless [`SingleEndpoint::with_hedge`] says
/// otherwise), and the RNG. Key-scope failures leave it with no usable key. It keeps no
/// health window, so a hedge trigger on a quantile falls back to its `after`.
#[derive(Debug, Clone)]
pub struct SingleEndpoint<R> {
    classify: ClassifyConfig,
    budget: RetryBudget,
    hedges: HedgeBudget,
    rng: R,
    key_disabled: bool,
}

impl<R: Rng> SingleEndpoint<R> {
    /// A gate with these rules, this budget and this RNG.
    pub fn new(classify: ClassifyConfig, budget: &BudgetConfig, rng: R) -> Self {
        SingleEndpoint {
            classify,
            budget: RetryBudget::new(*budget),
            hedges: HedgeBudget::new(&HedgeConfig::default()),
            rng,
            key_disabled: false,
        }
    }

    /// The same gate with the hedge budget of `hedge`.
    #[must_use]
    pub fn with_hedge(mut self, hedge: &HedgeConfig) -> Self {
        self.hedges = HedgeBudget::new(hedge);
        self
    }

    /// The hedge budget (calls counted, hedges paid).
    pub fn hedge_budget(&self) -> &HedgeBudget {
        &self.hedges
    }
}

impl<R> super::GateSeal for SingleEndpoint<R> {}

impl<R: Rng> Gate for SingleEndpoint<R> {
    type Rng = R;

    fn classifier(&self) -> &ClassifyConfig {
        &self.classify
    }

    fn rng(&mut self) -> &mut R {
        &mut self.rng
    }

    fn admit(&mut self, now: Timestamp, query: &Query) -> Admit {
        if self.key_disabled {
            return Admit::Refuse(GiveUpReason::NoUsableKey);
        }
        let target = Target::default();
        if let Some(avoid) = query.avoid.filter(|a| a.rules_out(now, target)) {
            return Admit::NotBefore(avoid.until, avoid.cause);
        }
        if query.hedge {
            if !self.hedges.try_spend() {
                return Admit::NotBefore(Timestamp::MAX, WaitCause::Budget);
            }
        } else if query.charges_budget(target.endpoint) && !self.budget.try_withdraw(now) {
            return Admit::Refuse(GiveUpReason::BudgetExhausted);
        } else if query.attempt == 1 {
            self.hedges.on_call();
        }
        Admit::Go(Grant::plain(target, query.tokens))
    }

    /// It never reserves a slot, so every grant it made goes as it is.
    fn confirm(&mut self, _now: Timestamp, grant: &Grant) -> Option<Grant> {
        Some(*grant)
    }

    /// Its grants hold nothing to give back.
    fn release(&mut self, _now: Timestamp, _grant: &Grant) {}

    fn on_attempt_end(&mut self, now: Timestamp, report: &Report) {
        match report.verdict {
            Verdict::Success => self.budget.on_success(now),
            Verdict::Failure(f) if f.scope == Scope::Key => self.key_disabled = true,
            Verdict::Failure(_) => {}
        }
    }

    fn latency_quantile(&self, _: Timestamp, _: EndpointId, _: u64, _: u32) -> Option<Duration> {
        None
    }
}
