//! The retry budget shared by all calls to one endpoint.
//!
//! STUB: filled in by the budget work; the types below are the contract.

use crate::time::Timestamp;

/// Retry budget parameters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct BudgetConfig {}

impl BudgetConfig {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), crate::error::ConfigError> {
        Ok(())
    }
}

/// A token bucket of retries.
#[derive(Debug, Clone)]
pub struct RetryBudget {
    config: BudgetConfig,
}

impl RetryBudget {
    /// A budget with `config`.
    pub fn new(config: BudgetConfig) -> RetryBudget {
        RetryBudget { config }
    }

    /// A success deposits its share.
    pub fn on_success(&mut self, now: Timestamp) {
        let _ = (now, &self.config);
    }

    /// A retry asks for one token; `false` means the budget is spent.
    pub fn try_withdraw(&mut self, now: Timestamp) -> bool {
        let _ = now;
        true
    }
}
