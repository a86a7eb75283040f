//! Arbitrary operation sequences against the real engine: every invariant the harness
//! knows must hold after every step. The bytes are decoded exactly as the `engine_ops`
//! fuzz target decodes its input, so a fuzzer finding can be pasted here as a case.

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm, RngSeed};
use steadfast_tests::harness::{Checks, Harness};
use steadfast_tests::ops::Scenario;

/// The fixed seed of the proptest RNG, printed so a run can be replayed.
const SEED: u64 = 0x5eed_f457_0b5e_55ed;

fn config() -> ProptestConfig {
    println!("proptest seed {SEED:#x}");
    ProptestConfig {
        cases: 300,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(SEED),
        // Integration tests run in the crate root: tests/proptest-regressions/ops.txt.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/ops.txt",
        ))),
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_invariant_holds_after_every_step(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let scenario = Scenario::from_bytes(&bytes);
        if let Err(v) = Harness::run(&scenario, Checks::default()) {
            prop_assert!(false, "{v}\nsetup: {:?}\nops: {:#?}", scenario.setup, &scenario.ops[..v.step.min(scenario.ops.len())]);
        }
    }

    #[test]
    fn the_same_bytes_replay_the_same_run(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
        let scenario = Scenario::from_bytes(&bytes);
        let run = |s: &Scenario| {
            let (policy, endpoints, seed) = s.setup.build();
            let mut h = Harness::new(policy, &endpoints, seed).unwrap().with_checks(Checks::default()).with_trace();
            let result = h.apply_all(&s.ops);
            (result, h.trace().map(<[String]>::to_vec))
        };
        prop_assert_eq!(run(&scenario), run(&scenario));
    }
}

/// The scenarios reach the states the invariants are about: without this, a change to
/// the decoding could make every run trivially short and the proptest vacuous.
#[test]
fn random_scenarios_reach_every_ending_and_trip_breakers() {
    use std::collections::BTreeSet;
    use steadfast_core::ids::EndpointId;
    use steadfast_core::retry::Finish;

    let mut state: u64 = SEED;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 24) as u8
    };
    let (mut endings, mut trips, mut sends) = (BTreeSet::new(), 0, 0);
    for _ in 0..400 {
        let len = usize::from(next()) * 12;
        let bytes: Vec<u8> = (0..len).map(|_| next()).collect();
        let h = Harness::run(&Scenario::from_bytes(&bytes), Checks::default()).unwrap();
        for f in h.finishes().into_iter().flatten() {
            let name = match f {
                Finish::Success { .. } => "Success".to_owned(),
                Finish::GaveUp(g) => format!("{:?}", g.reason)
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_owned(),
            };
            endings.insert(name);
        }
        sends += h.attempts_sent();
        for e in 0..h.engine().pool().endpoint_count() {
            trips += h.engine().breaker(EndpointId(e)).unwrap().trips();
        }
    }
    println!("endings {endings:?}, {sends} attempts, {trips} breaker trips");
    let all = [
        "Success",
        "NotRetryable",
        "UnsafeToRetry",
        "RetriesExhausted",
        "DeadlineExceeded",
        "HintTooLong",
        "BudgetExhausted",
        "BreakerOpen",
        "NoUsableKey",
        "RateLimited",
        "Cancelled",
    ];
    for name in all {
        assert!(endings.contains(name), "no call ended {name}: {endings:?}");
    }
    assert!(
        sends > 2_000 && trips > 100,
        "{sends} attempts, {trips} trips"
    );
}
