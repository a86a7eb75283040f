//! Several replicas of one client behind one provider key, sharing its request limit
//! (or not).
//!
//! A run with [`Replicas`] starts `count` engines, each its own process with its own
//! seed ([`replica_seed`]), its own concurrency slots (the scenario's `concurrency`
//! each) and its own queue. The scenario's calls are split among them, call `i` going
//! to replica `i mod count`, so the total load (calls, rate) is the scenario's. Every
//! replica sends to the same simulated upstream with the same keys, so the upstream's
//! buckets are the provider's real limits and count every replica's requests.
//!
//! The endpoints' request limit is the policy's `limiter.requests` (and
//! `limiter.burst`), and [`Sharing`] says whose it is:
//!
//! - [`Sharing::Local`]: each replica has only its own limiter, so the configured
//!   rate applies per replica (as most gateways apply a deployment's `rpm`);
//! - [`Sharing::Shared`]: every admission asks the store for one request
//!   (`policy.shared.lease = 1`);
//! - [`Sharing::Leased`]: admissions spend leases of up to `policy.shared.lease`
//!   requests (the core's default is 8).
//!
//! The store is a model of steadfast-redis's: one GCRA bucket per endpoint at the
//! limiter's rate and burst, leasing with [`steadfast_redis::model::lease`], the
//! arithmetic its Lua script runs. An ask reaches it `store_lag / 2` after the engine
//! asks, is decided on the store's own clock (microseconds, as Redis `TIME` gives
//! them), and its answer returns after the other half of the lag.
//!
//! With [`Replicas::share_breaker`] (in any mode) the replicas share their breakers'
//! "open until" through a store of their own, synced every `policy.shared.key_sync`
//! (see steadfast-core's `shared::breakers`).
//!
//! A run of one local replica is the plain run ([`crate::run`]): replica 0 runs on the
//! run's own seed.

use core::time::Duration;

use serde::Serialize;
use steadfast_core::engine::EndpointSpec;
use steadfast_core::ids::EndpointId;
use steadfast_core::limiter::LimiterConfig;
use steadfast_core::policy::Policy;
use steadfast_core::shared::{LeaseAnswer, SharedCounters};
use steadfast_core::time::Timestamp;
use steadfast_redis::model;
use steadfast_redis::rate::{GcraParams, Rate};
use steadfast_upstream::{Scenario, WALL_START};

use crate::{SimError, split_seed};

/// The most replicas a run may have (each is a whole engine).
pub const MAX_REPLICAS: u16 = 1024;

/// Whose request limit the replicas admit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// Each replica has its own limiter: the configured rate applies per replica.
    Local,
    /// Each admission asks the store for one request.
    Shared,
    /// Admissions spend leases of up to `policy.shared.lease` requests.
    Leased,
}

impl Sharing {
    /// Every mode, in the order they are reported.
    pub const ALL: [Sharing; 3] = [Sharing::Local, Sharing::Shared, Sharing::Leased];

    /// Its name (`local`, `shared`, `leased`).
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Local => "local",
            Sharing::Shared => "shared",
            Sharing::Leased => "leased",
        }
    }

    /// The mode named `name`.
    pub fn from_name(name: &str) -> Option<Sharing> {
        Sharing::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The replicas of a run.
///
/// Defaults: `count: 1`, `sharing: local`, `store_lag: 2ms`, `share_breaker: false`
/// (one replica, no store: the plain run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replicas {
    /// Engines, `1..=MAX_REPLICAS`.
    pub count: u16,
    /// Whose request limit they admit on.
    pub sharing: Sharing,
    /// The store's round trip: an ask reaches it after half, the answer returns
    /// after the other half.
    pub store_lag: Duration,
    /// Whether the endpoints' breakers share their "open until" through the store
    /// (see [`crate::breakers`]); with any [`Sharing`].
    pub share_breaker: bool,
}

impl Default for Replicas {
    fn default() -> Replicas {
        Replicas {
            count: 1,
            sharing: Sharing::Local,
            store_lag: Duration::from_millis(2),
            share_breaker: false,
        }
    }
}

impl Replicas {
    /// `count` replicas sharing as `sharing`, with the default store lag.
    pub fn new(count: u16, sharing: Sharing) -> Replicas {
        Replicas {
            count,
            sharing,
            ..Replicas::default()
        }
    }

    /// The same replicas sharing their breakers' "open until" through the store.
    pub fn with_shared_breaker(mut self) -> Replicas {
        self.share_breaker = true;
        self
    }

    /// The same replicas with the store answering after `lag`.
    pub fn with_store_lag(mut self, lag: Duration) -> Replicas {
        self.store_lag = lag;
        self
    }

    /// Checks the replicas against `policy`; the error names the bad field.
    pub fn validate(&self, policy: &Policy) -> Result<(), ReplicaError> {
        if self.count == 0 || self.count > MAX_REPLICAS {
            return Err(ReplicaError::Count(self.count));
        }
        if self.sharing != Sharing::Local {
            store_params(&policy.limiter)?;
        }
        Ok(())
    }

    /// The policy each replica runs: `policy` with, when every admission asks the
    /// store, leases of one request.
    pub fn policy(&self, policy: &Policy) -> Policy {
        let mut p = policy.clone();
        if self.sharing == Sharing::Shared {
            p.shared.lease = 1;
        }
        p
    }

    /// The endpoints as each replica's engine sees them: shared unless local.
    pub(crate) fn specs(&self, scenario: &Scenario) -> Vec<EndpointSpec> {
        scenario
            .endpoints
            .iter()
            .map(|e| {
                let mut spec = EndpointSpec::new(e.priority, e.keys);
                spec.share_breaker = self.share_breaker;
                match self.sharing {
                    Sharing::Local => spec,
                    Sharing::Shared | Sharing::Leased => spec.with_shared_limit(),
                }
            })
            .collect()
    }
}

/// Why a run's replicas are invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaError {
    /// The count is 0 or above [`MAX_REPLICAS`].
    Count(u16),
    /// A shared limit needs the policy's request limit, `limiter.requests`.
    NoRequestLimit,
    /// The request limit is out of the store's range (the field is named).
    OutOfRange(&'static str),
}

impl core::fmt::Display for ReplicaError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReplicaError::Count(n) => {
                write!(f, "replicas: {n} is outside [1, {MAX_REPLICAS}]")
            }
            ReplicaError::NoRequestLimit => f.write_str(
                "limiter.requests: a shared limit shares the policy's request limit, \
                 and the policy sets none",
            ),
            ReplicaError::OutOfRange(field) => {
                write!(f, "limiter.requests: out of the store's range ({field})")
            }
        }
    }
}

impl std::error::Error for ReplicaError {}

/// The seed replica `replica` of a run with `seed` runs on: the run's own for replica
/// 0 (so one replica is the plain run), an independent stream for the others.
pub fn replica_seed(seed: u64, replica: u16) -> u64 {
    match replica {
        0 => seed,
        r => split_seed(seed, 200 + u64::from(r)),
    }
}

/// Runs `scenario` under `policy` with `seed` on `replicas`.
pub fn run_replicas(
    scenario: &Scenario,
    policy: &Policy,
    seed: u64,
    replicas: &Replicas,
) -> Result<crate::Run, SimError> {
    run_on(scenario, policy, seed, replicas, false)
}

/// Runs like [`run_replicas`], checking the core's invariants in every replica at
/// every step (see [`crate::run_checked`]); a hint binds the replica it was given to.
pub fn run_replicas_checked(
    scenario: &Scenario,
    policy: &Policy,
    seed: u64,
    replicas: &Replicas,
) -> Result<crate::Run, SimError> {
    run_on(scenario, policy, seed, replicas, true)
}

/// [`run_replicas`], checking the invariants when `checked`.
fn run_on(
    scenario: &Scenario,
    policy: &Policy,
    seed: u64,
    replicas: &Replicas,
    checked: bool,
) -> Result<crate::Run, SimError> {
    scenario.validate().map_err(SimError::Scenario)?;
    replicas.validate(policy).map_err(SimError::Replicas)?;
    crate::driver::Driver::with_replicas(scenario, policy, seed, checked, true, replicas)?.run()
}

/// What a run's replicas were and what their shared limits did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRun {
    /// The replicas.
    pub replicas: Replicas,
    /// The most requests a lease asks for (0 when local).
    pub lease: u32,
    /// Each replica's seed ([`replica_seed`]).
    pub seeds: Vec<u64>,
    /// Each replica's shared-limit counters, summed over its endpoints.
    pub shared: Vec<SharedCounters>,
}

/// The store microseconds at virtual instant `at`: Redis `TIME` on the simulated
/// upstream's wall clock.
fn store_us(at: Timestamp) -> u64 {
    WALL_START
        .saturating_mul(1_000_000)
        .saturating_add(at.as_nanos() / 1_000)
}

/// The store's GCRA parameters for a limiter: its rate per minute, and its burst in
/// whole requests as the core's limiter counts it (`⌊requests × burst⌋`, at least 1,
/// at most the limit).
fn store_params(limiter: &LimiterConfig) -> Result<GcraParams, ReplicaError> {
    let requests = limiter.requests.ok_or(ReplicaError::NoRequestLimit)?;
    let period = limiter.period.as_nanos().max(1);
    let per_minute = (u128::from(requests) * 60_000_000_000).div_ceil(period);
    let per_minute = u32::try_from(per_minute).unwrap_or(u32::MAX);
    let burst = ((f64::from(requests) * limiter.burst.clamp(0.0, 1.0)) as u32).clamp(1, requests);
    Rate { per_minute, burst }
        .params()
        .map_err(|_| ReplicaError::OutOfRange("its rate per minute or burst"))
}

/// The modelled store: one GCRA state per endpoint.
pub(crate) struct Store {
    params: GcraParams,
    lag: Duration,
    tats: Vec<Option<u64>>,
}

impl Store {
    /// The store of `replicas` under `policy`, or none when they share nothing.
    pub(crate) fn new(
        replicas: &Replicas,
        policy: &Policy,
        endpoints: usize,
    ) -> Result<Option<Store>, ReplicaError> {
        if replicas.sharing == Sharing::Local {
            return Ok(None);
        }
        Ok(Some(Store {
            params: store_params(&policy.limiter)?,
            lag: replicas.store_lag,
            tats: vec![None; endpoints],
        }))
    }

    /// How long an ask takes to reach the store.
    pub(crate) fn there(&self) -> Duration {
        self.lag / 2
    }

    /// How long an answer takes to come back.
    pub(crate) fn back(&self) -> Duration {
        self.lag.saturating_sub(self.lag / 2)
    }

    /// Leases up to `want` requests of `endpoint`'s limit at virtual instant `at`.
    pub(crate) fn lease(&mut self, at: Timestamp, endpoint: EndpointId, want: u32) -> LeaseAnswer {
        let Some(tat) = self.tats.get_mut(usize::from(endpoint.0)) else {
            return LeaseAnswer::Failed;
        };
        let now = store_us(at);
        let a = model::lease(*tat, now, self.params, u64::from(want));
        *tat = Some(a.tat_us);
        LeaseAnswer::Granted {
            requests: u32::try_from(a.granted).unwrap_or(want),
            valid_for: Duration::from_micros(a.expires_us.saturating_sub(now)),
            retry_in: Duration::from_micros(a.wait_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(requests: u32, burst: f64) -> LimiterConfig {
        let mut l = LimiterConfig::default();
        l.requests = Some(requests);
        l.burst = burst;
        l
    }

    #[test]
    fn the_store_runs_the_limiters_rate_and_burst() {
        let p = store_params(&limiter(600, 0.034)).unwrap();
        assert_eq!(
            p,
            Rate {
                per_minute: 600,
                burst: 20
            }
            .params()
            .unwrap()
        );
        let mut per_second = limiter(10, 0.0);
        per_second.period = Duration::from_secs(1);
        assert_eq!(store_params(&per_second).unwrap().interval_us, 100_000);
        assert_eq!(store_params(&per_second).unwrap().burst, 1);
        assert_eq!(
            store_params(&LimiterConfig::default()),
            Err(ReplicaError::NoRequestLimit)
        );
    }

    #[test]
    fn the_store_leases_a_quarter_of_what_is_left_and_then_says_when() {
        let mut policy = Policy::default();
        policy.limiter = limiter(600, 0.034);
        let replicas = Replicas::new(4, Sharing::Leased);
        let mut store = Store::new(&replicas, &policy, 1).unwrap().unwrap();
        let e = EndpointId(0);
        let granted = |a: LeaseAnswer| match a {
            LeaseAnswer::Granted { requests, .. } => requests,
            LeaseAnswer::Failed => 0,
        };
        // 20 free: a quarter is 5; then 15 → 3; 12 → 3; …
        let first = store.lease(Timestamp::ZERO, e, 8);
        assert_eq!(
            first,
            LeaseAnswer::Granted {
                requests: 5,
                valid_for: Duration::from_millis(500),
                retry_in: Duration::ZERO,
            }
        );
        let mut total = 5;
        while total < 20 {
            total += granted(store.lease(Timestamp::ZERO, e, 8));
        }
        assert_eq!(total, 20);
        let empty = store.lease(Timestamp::from_millis(10), e, 8);
        assert_eq!(
            empty,
            LeaseAnswer::Granted {
                requests: 0,
                valid_for: Duration::ZERO,
                retry_in: Duration::from_millis(90),
            }
        );
        assert_eq!(
            store.lease(Timestamp::ZERO, EndpointId(1), 8),
            LeaseAnswer::Failed
        );
    }

    #[test]
    fn replicas_are_validated_and_named() {
        let policy = Policy::default();
        assert_eq!(
            Replicas::new(0, Sharing::Local).validate(&policy),
            Err(ReplicaError::Count(0))
        );
        assert!(Replicas::new(4, Sharing::Local).validate(&policy).is_ok());
        let err = Replicas::new(4, Sharing::Leased).validate(&policy);
        assert_eq!(err, Err(ReplicaError::NoRequestLimit));
        assert!(
            err.unwrap_err().to_string().starts_with("limiter.requests"),
            "names the field"
        );
        for s in Sharing::ALL {
            assert_eq!(Sharing::from_name(s.name()), Some(s));
        }
        assert_eq!(Sharing::from_name("global"), None);
        assert_eq!(
            Replicas::new(2, Sharing::Shared)
                .policy(&policy)
                .shared
                .lease,
            1
        );
        assert_eq!(replica_seed(7, 0), 7);
        assert_ne!(replica_seed(7, 1), replica_seed(7, 2));
    }
}
