//! Random scenarios and policies, small N, with the core's invariants checked at every
//! step of the run (see `steadfast_sim::run_checked`): no send at or after a call's
//! deadline, attempts ≤ max, no send to an endpoint whose breaker denies at that
//! instant, no send to a disabled or cooling key, no send to an endpoint the call's
//! last failure ruled out, no send to a key before a 429's hint, every call finishes.

use core::time::Duration;

use proptest::prelude::*;
use steadfast_core::policy::Policy;
use steadfast_core::provider::Provider;
use steadfast_sim::dist::Dist;
use steadfast_sim::scenario::{
    Arrival, BadKey, BadKeyKind, EndpointSpec, Faults, Load, Outage, OutageKind, ReportSpec,
    Scenario, ServerLimits,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn dist() -> impl Strategy<Value = Dist> {
    prop_oneof![
        (1u64..3000).prop_map(|m| Dist::Fixed(ms(m))),
        (1u64..2000, 0u64..5000).prop_map(|(a, b)| Dist::Uniform {
            min: ms(a),
            max: ms(a + b)
        }),
        (1u64..5000, 0.0f64..2.0).prop_map(|(m, s)| Dist::Lognormal {
            median: ms(m),
            sigma: s
        }),
    ]
}

fn faults() -> impl Strategy<Value = Faults> {
    (
        proptest::collection::vec(0.0f64..0.4, 6),
        proptest::option::of(dist()),
    )
        .prop_map(|(mut r, retry_after)| {
            let sum: f64 = r.iter().sum();
            if sum > 1.0 {
                r.iter_mut().for_each(|x| *x /= sum + 1e-6);
            }
            Faults {
                rate_429: r[0],
                retry_after,
                rate_5xx: r[1],
                rate_529: r[2],
                rate_timeout: r[3] / 4.0,
                rate_reset: r[4],
                rate_malformed: r[5],
                decay: if r[0] < 0.2 { 1.0 } else { 0.5 },
                ..Faults::default()
            }
        })
}

fn outage() -> impl Strategy<Value = Outage> {
    (
        0u64..30_000,
        1u64..30_000,
        0usize..5,
        0.0f64..=1.0,
        dist(),
        prop_oneof![Just(500u16), Just(503), Just(529), Just(429), Just(401)],
    )
        .prop_map(|(start, len, kind, rate, latency, status)| Outage {
            start: ms(start),
            end: ms(start + len),
            kind: [
                OutageKind::Status,
                OutageKind::Timeout,
                OutageKind::Reset,
                OutageKind::Refused,
                OutageKind::Slow,
            ][kind],
            status: Some(status),
            rate,
            latency: Some(latency),
            first_requests: 0,
        })
}

fn endpoint(i: usize) -> impl Strategy<Value = EndpointSpec> {
    (
        0u8..3,
        1u16..4,
        dist(),
        dist(),
        faults(),
        proptest::option::of((1u64..200, proptest::option::of(2_000u64..100_000))),
        proptest::collection::vec(outage(), 0..3),
        proptest::option::of((0u16..3, any::<bool>(), 0u64..20_000)),
    )
        .prop_map(
            move |(priority, keys, latency, error_latency, faults, limits, outages, bad)| {
                EndpointSpec {
                    name: format!("e{i}"),
                    priority,
                    keys,
                    api: if i % 2 == 0 {
                        Provider::OpenAi
                    } else {
                        Provider::Anthropic
                    },
                    latency,
                    error_latency,
                    event_latency: Dist::Fixed(Duration::ZERO),
                    faults,
                    limits: limits.map(|(r, t)| ServerLimits {
                        requests_per_minute: Some(r),
                        request_burst: (r % 3 == 0).then_some((r / 3).max(1)),
                        tokens_per_minute: t,
                        ..ServerLimits::default()
                    }),
                    outages,
                    bad_keys: bad
                        .filter(|(k, _, _)| *k < keys)
                        .map(|(key, quota, from)| BadKey {
                            key,
                            kind: if quota {
                                BadKeyKind::QuotaExhausted
                            } else {
                                BadKeyKind::Revoked
                            },
                            from: ms(from),
                        })
                        .into_iter()
                        .collect(),
                    ..EndpointSpec::named("")
                }
            },
        )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        (
            10u64..120,
            0.5f64..40.0,
            any::<bool>(),
            1u32..40,
            1u64..2000,
        ),
        (1usize..4).prop_flat_map(|n| (0..n).map(endpoint).collect::<Vec<_>>()),
    )
        .prop_map(
            |((calls, rate, fixed, concurrency, tokens), endpoints)| Scenario {
                name: "random".into(),
                description: String::new(),
                load: Load {
                    calls,
                    rate,
                    arrival: match (fixed, calls % 3) {
                        (_, 0) => Arrival::Closed,
                        (true, _) => Arrival::Fixed,
                        (false, _) => Arrival::Poisson,
                    },
                    concurrency,
                    tokens,
                    ids: (calls % 2 == 0).then(|| "line".to_owned()),
                },
                report: ReportSpec::default(),
                endpoints,
            },
        )
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        1u32..7,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1u64..60,
        5u64..200,
        proptest::option::of(1u32..60),
    )
        .prop_map(
            |(attempts, breaker, budget, hold, timeout, deadline, rpm)| {
                let mut p = Policy::default();
                p.retry.max_attempts = attempts;
                p.retry.attempt_timeout = Duration::from_secs(timeout);
                p.retry.deadline = Some(Duration::from_secs(deadline));
                p.retry.hold = hold;
                p.breaker.enabled = breaker;
                p.budget.enabled = budget;
                p.limiter.requests = rpm;
                p
            },
        )
}

proptest! {
    #[test]
    fn the_core_keeps_its_promises_at_every_step(
        s in scenario(),
        p in policy(),
        seed in any::<u64>(),
    ) {
        // Bad random values (a tokens-per-minute below one call's tokens) are skipped.
        prop_assume!(s.validate().is_ok());
        let run = steadfast_sim::run_checked(&s, &p, seed)
            .map_err(|e| TestCaseError::fail(format!("seed {seed}: {e}")))?;
        prop_assert!(
            run.violations.is_empty(),
            "seed {}: {} violations, first: {}",
            seed,
            run.violations.len(),
            run.violations[0]
        );
        prop_assert_eq!(run.calls.len() as u64, s.load.calls);
        for c in &run.calls {
            prop_assert!(c.finish.attempts() <= p.retry.max_attempts);
            prop_assert!(c.arrived <= c.started && c.started <= c.finished);
        }
    }
}
