//! The state objects of steadfast and of the peers, for a size table: `size_of` of the
//! value, plus the heap it owns right after construction (measured by the counting
//! allocator, see [`crate::alloc_count`]).

use steadfast_core::backoff::{Backoff, BackoffConfig};
use steadfast_core::breaker::{Breaker, BreakerConfig};
use steadfast_core::budget::{BudgetConfig, RetryBudget};
use steadfast_core::classify::ClassifyConfig;
use steadfast_core::health::{HealthConfig, HealthWindow};
use steadfast_core::hints::Hints;
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::limiter::Limiter;
use steadfast_core::policy::Policy;
use steadfast_core::retry::Call;
use steadfast_core::rng::{self, CoreRng};
use steadfast_core::time::Timestamp;

use crate::{backoff, breaker, budget, engine, limiter, parsing};

/// Receives each state object's constructor.
pub trait SizeVisitor {
    /// `make` builds one `what` of `lib`.
    fn state<T>(&mut self, what: &'static str, lib: &'static str, make: fn() -> T);
}

/// Hands every state object to `v`: per job, steadfast first, then the peers.
pub fn visit<V: SizeVisitor>(v: &mut V) {
    v.state("breaker", "steadfast", || {
        Breaker::new(&BreakerConfig::default())
    });
    v.state("breaker", "failsafe (consecutive)", || {
        breaker::failsafe_consecutive(true)
    });
    v.state("breaker", "failsafe (success rate)", || {
        breaker::failsafe_rate(true)
    });
    v.state("breaker", "recloser", || breaker::recloser(true));

    v.state("backoff", "steadfast", || {
        Backoff::new(BackoffConfig::default())
    });
    v.state(
        "backoff",
        "steadfast RNG (one per engine)",
        || -> CoreRng { rng::from_u64(1) },
    );
    v.state("backoff", "backon", backoff::backon_running);
    v.state("backoff", "backoff", backoff::backoff_running);
    v.state("backoff", "retry-policies", backoff::retry_policies_policy);
    v.state(
        "backoff",
        "exponential-backoff",
        backoff::exponential_backoff_running,
    );

    v.state("rate limiter", "steadfast", || {
        Limiter::new(&limiter::generous())
    });
    v.state(
        "rate limiter",
        "governor (default clock)",
        limiter::governor_limiter,
    );
    v.state(
        "rate limiter",
        "governor (fake clock)",
        limiter::governor_fake_limiter,
    );

    v.state("retry budget", "steadfast", || {
        RetryBudget::new(BudgetConfig::default())
    });
    v.state("retry budget", "tower TpsBudget", budget::tps_budget);

    v.state("call", "steadfast Call", || {
        let policy = Policy::default();
        Call::new(
            Timestamp::ZERO,
            &policy.retry,
            &policy.backoff,
            IdempotencyKey::from_u128(1),
        )
    });
    v.state(
        "engine",
        "steadfast Engine (1 endpoint, 2 keys)",
        engine::engine,
    );
    v.state(
        "engine",
        "steadfast Pool (3 endpoints, 9 keys)",
        parsing::pool,
    );
    v.state(
        "engine",
        "steadfast ClassifyConfig",
        ClassifyConfig::default,
    );
    v.state("engine", "steadfast HealthWindow", || {
        HealthWindow::new(&HealthConfig::default())
    });
    v.state("engine", "steadfast Hints", Hints::default);
}
