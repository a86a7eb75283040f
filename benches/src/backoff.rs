//! Backoff: the next delay, with jitter.
//!
//! All implementations use base 500 ms, factor 2, cap 30 s and their own jitter
//! (steadfast: full jitter from its ChaCha8 stream, drawn once and never re-seeded;
//! `backon`: additive jitter from its own `fastrand`; `backoff`: ±50 % from
//! `rand::random`; `retry-policies`: full jitter from `rand::rng()`;
//! `exponential-backoff`: ±30 % from its own `fastrand`).
//!
//! - *first five*: a fresh backoff for a new call, then the delays before retries 1–5
//!   (one iteration = one sequence of five delays);
//! - *steady*: one more delay from a backoff already past its cap.

use std::time::{Duration, SystemTime};

use backon::BackoffBuilder;
use retry_policies::RetryPolicy;
use steadfast_core::backoff::{Backoff, BackoffConfig};
use steadfast_core::rng::{self, CoreRng};

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// A fresh backoff and its first five delays.
pub const FIRST_FIVE: Group = Group {
    id: "backoff_first5",
    label: "backoff: new + first 5 delays (per sequence)",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 25.0,
        against: None,
    },
};

/// One delay past the cap.
pub const STEADY: Group = Group {
    id: "backoff_steady",
    label: "backoff: next delay, steady state",
    per_iteration: 1,
    target: Target::Peer {
        ratio: 0.5,
        ns: 5.0,
        against: None,
    },
};

const BASE: Duration = Duration::from_millis(500);
const CAP: Duration = Duration::from_secs(30);
/// Retries made before the steady-state measurement starts (well past the cap).
const WARM_RETRIES: u32 = 12;

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Steadfast's backoff with its RNG stream.
#[derive(Debug)]
pub struct Steadfast {
    config: BackoffConfig,
    backoff: Backoff,
    rng: CoreRng,
    retry: u32,
}

impl Steadfast {
    fn new() -> Steadfast {
        let config = BackoffConfig::default();
        Steadfast {
            config,
            backoff: Backoff::new(config),
            rng: rng::from_u64(2),
            retry: WARM_RETRIES,
        }
    }
}

/// Steadfast, first five delays of a fresh backoff.
#[derive(Debug)]
pub struct SteadfastFirstFive(Steadfast);

impl Workload for SteadfastFirstFive {
    #[inline]
    fn step(&mut self) -> u64 {
        let s = &mut self.0;
        let mut backoff = Backoff::new(s.config);
        (1..=5).fold(0, |sum, retry| {
            sum ^ nanos(backoff.next_delay(retry, &mut s.rng))
        })
    }
}

/// Steadfast, steady state.
#[derive(Debug)]
pub struct SteadfastSteady(Steadfast);

impl Workload for SteadfastSteady {
    #[inline]
    fn step(&mut self) -> u64 {
        let s = &mut self.0;
        s.retry = s.retry.saturating_add(1);
        nanos(s.backoff.next_delay(s.retry, &mut s.rng))
    }
}

fn backon_builder() -> backon::ExponentialBuilder {
    backon::ExponentialBuilder::default()
        .with_min_delay(BASE)
        .with_factor(2.0)
        .with_max_delay(CAP)
        .with_jitter()
        .without_max_times()
}

fn backoff_crate() -> backoff::ExponentialBackoff {
    backoff::ExponentialBackoffBuilder::new()
        .with_initial_interval(BASE)
        .with_multiplier(2.0)
        .with_max_interval(CAP)
        .with_max_elapsed_time(None)
        .build()
}

fn retry_policies() -> retry_policies::policies::ExponentialBackoff {
    retry_policies::policies::ExponentialBackoff::builder()
        .retry_bounds(BASE, CAP)
        .jitter(retry_policies::Jitter::Full)
        .base(2)
        .build_with_max_retries(u32::MAX)
}

fn exponential_backoff() -> exponential_backoff::Backoff {
    exponential_backoff::Backoff::new(u32::MAX, BASE, CAP)
}

/// A running `backon` backoff (for the size table).
pub fn backon_running() -> backon::ExponentialBackoff {
    backon_builder().build()
}

/// A running `backoff` backoff (for the size table).
pub fn backoff_running() -> backoff::ExponentialBackoff {
    backoff_crate()
}

/// The `retry-policies` policy (stateless; for the size table).
pub fn retry_policies_policy() -> retry_policies::policies::ExponentialBackoff {
    retry_policies()
}

/// A running `exponential-backoff` iterator (for the size table).
pub fn exponential_backoff_running() -> exponential_backoff::IntoIter {
    exponential_backoff().iter()
}

fn retry_policies_delay(
    policy: &retry_policies::policies::ExponentialBackoff,
    start: SystemTime,
    past: u32,
) -> u64 {
    match policy.should_retry(start, past) {
        retry_policies::RetryDecision::Retry { execute_after } => execute_after
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, nanos),
        retry_policies::RetryDecision::DoNotRetry => 0,
    }
}

/// A peer backoff in its idle form and, for the steady state, a running sequence.
#[derive(Debug)]
pub struct Peer<B, S> {
    builder: B,
    running: S,
    start: SystemTime,
    past: u32,
}

fn peer<B, S>(builder: B, running: S) -> Peer<B, S> {
    Peer {
        builder,
        running,
        start: SystemTime::now(),
        past: WARM_RETRIES,
    }
}

fn advanced<I: Iterator>(mut it: I) -> I {
    for _ in 0..WARM_RETRIES {
        let _ = it.next();
    }
    it
}

/// Which peer, and which measurement.
macro_rules! peer_workload {
    ($name:ident, $b:ty, $s:ty, |$p:ident| first5 $first:block steady $steady:block) => {
        /// A peer workload (see the module documentation).
        #[derive(Debug)]
        pub struct $name<const STEADY: bool>(Peer<$b, $s>);

        impl<const STEADY: bool> Workload for $name<STEADY> {
            #[inline]
            fn step(&mut self) -> u64 {
                let $p = &mut self.0;
                if STEADY { $steady } else { $first }
            }
        }
    };
}

peer_workload!(Backon, backon::ExponentialBuilder, backon::ExponentialBackoff, |p| first5 {
    p.builder.build().take(5).fold(0, |sum, d| sum ^ nanos(d))
} steady {
    p.running.next().map_or(0, nanos)
});

peer_workload!(BackoffCrate, backoff::ExponentialBackoff, backoff::ExponentialBackoff, |p| first5 {
    use backoff::backoff::Backoff as _;
    let mut b = p.builder.clone();
    b.reset();
    (0..5).fold(0, |sum, _| sum ^ b.next_backoff().map_or(0, nanos))
} steady {
    use backoff::backoff::Backoff as _;
    p.running.next_backoff().map_or(0, nanos)
});

peer_workload!(RetryPolicies, retry_policies::policies::ExponentialBackoff, (), |p| first5 {
    let start = SystemTime::now();
    (0..5).fold(0, |sum, past| sum ^ retry_policies_delay(&p.builder, start, past))
} steady {
    p.past = p.past.saturating_add(1).min(64);
    retry_policies_delay(&p.builder, p.start, p.past)
});

peer_workload!(ExponentialBackoff, exponential_backoff::Backoff, exponential_backoff::IntoIter, |p| first5 {
    p.builder.iter().take(5).fold(0, |sum, d| sum ^ d.map_or(0, nanos))
} steady {
    p.running.next().flatten().map_or(0, nanos)
});

/// Hands the backoff workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    let first = |name| Case {
        group: FIRST_FIVE.id,
        name,
    };
    v.visit(first(STEADFAST), || SteadfastFirstFive(Steadfast::new()));
    v.visit(first("backon"), || {
        Backon::<false>(peer(backon_builder(), backon_builder().build()))
    });
    v.visit(first("backoff"), || {
        BackoffCrate::<false>(peer(backoff_crate(), backoff_crate()))
    });
    v.visit(first("retry_policies"), || {
        RetryPolicies::<false>(peer(retry_policies(), ()))
    });
    v.visit(first("exponential_backoff"), || {
        ExponentialBackoff::<false>(peer(exponential_backoff(), exponential_backoff().iter()))
    });

    let steady = |name| Case {
        group: STEADY.id,
        name,
    };
    v.visit(steady(STEADFAST), || SteadfastSteady(Steadfast::new()));
    v.visit(steady("backon"), || {
        Backon::<true>(peer(backon_builder(), advanced(backon_builder().build())))
    });
    v.visit(steady("backoff"), || {
        let mut running = backoff_crate();
        for _ in 0..WARM_RETRIES {
            let _ = backoff::backoff::Backoff::next_backoff(&mut running);
        }
        BackoffCrate::<true>(peer(backoff_crate(), running))
    });
    v.visit(steady("retry_policies"), || {
        RetryPolicies::<true>(peer(retry_policies(), ()))
    });
    v.visit(steady("exponential_backoff"), || {
        ExponentialBackoff::<true>(peer(
            exponential_backoff(),
            advanced(exponential_backoff().iter()),
        ))
    });
}
