//! Breaker modes and resets: forced open, disabled, metrics only, and back.

use super::*;

fn with_mode(mode: BreakerMode) -> Fixture {
    Fixture::new(BreakerConfig { mode, ..exact() })
}

/// Reports a result as the engine does: a probe only while its period lasts.
fn report(f: &mut Fixture, at: Timestamp, input: BreakerInput, period: Option<u32>) {
    let was_probe = period == Some(f.b.probe_period());
    f.b.on_result(at, input, was_probe, &mut f.rng);
}

#[test]
fn forced_open_denies_every_call_and_ignores_results_until_the_mode_changes() {
    let mut f = Fixture::new(exact());
    assert_eq!(
        f.b.set_mode(ms(10), BreakerMode::ForcedOpen),
        BreakerMode::Auto
    );
    assert_eq!(f.b.mode(), BreakerMode::ForcedOpen);
    for i in 10..100 {
        // No lift instant is known: the denial names a recheck `open_for` away.
        let until = ms(i) + secs(5);
        assert_eq!(f.b.peek(ms(i)), Permit::Deny { until });
        assert_eq!(f.b.permit(ms(i)), Permit::Deny { until });
        f.fail(ms(i));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!((f.b.trips(), f.b.counts()), (0, WindowCounts::default()));
    assert_eq!(f.b.poll_timeout(), None);
    assert!(f.events().is_empty());
    assert_eq!(
        f.b.set_mode(ms(100), BreakerMode::Auto),
        BreakerMode::ForcedOpen
    );
    assert_eq!(f.b.permit(ms(100)), Permit::Allow);
}

#[test]
fn forced_open_sends_no_probe_and_freezes_an_open_breaker() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    f.b.set_mode(ms(1), BreakerMode::ForcedOpen);
    assert_eq!(f.b.poll_timeout(), None);
    f.b.handle_timeout(ms(5000));
    assert_eq!(f.b.permit(ms(9000)), Permit::Deny { until: ms(14_000) });
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5000) });
    assert_eq!(f.events(), [ev(ms(0), StateKind::Closed, StateKind::Open)]);
    // Back to automatic, the open time is long over: the next call is a probe.
    f.b.set_mode(ms(9000), BreakerMode::Auto);
    assert_eq!(f.b.poll_timeout(), Some(ms(5000)));
    assert_eq!(f.b.permit(ms(9000)), Permit::Probe);
    assert_eq!(
        f.events(),
        [ev(ms(9000), StateKind::Open, StateKind::HalfOpen)]
    );
}

#[test]
fn a_probe_in_flight_when_forced_open_frees_its_slot_and_judges_nothing() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    let period = Some(f.b.probe_period());
    f.b.set_mode(ms(5001), BreakerMode::ForcedOpen);
    report(&mut f, ms(5002), BreakerInput::Failure, period);
    assert_eq!(f.b.state(), BreakerState::HalfOpen);
    assert_eq!((f.b.probes_in_flight(), f.b.trips()), (0, 1));
    f.b.set_mode(ms(5003), BreakerMode::Auto);
    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(5003)), Permit::Probe);
    }
}

#[test]
fn disabled_always_allows_and_never_changes_state() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    f.events();
    f.b.set_mode(ms(1), BreakerMode::Disabled);
    for i in 1..20_000 {
        assert_eq!(f.b.peek(ms(i)), Permit::Allow);
        assert_eq!(f.b.permit(ms(i)), Permit::Allow);
        f.fail(ms(i));
    }
    f.b.handle_timeout(ms(20_000));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(5000) });
    assert_eq!((f.b.trips(), f.b.poll_timeout()), (1, None));
    assert!(f.events().is_empty());
    // `enabled = false` is the same mode.
    let off = Breaker::new(&BreakerConfig {
        enabled: false,
        ..exact()
    });
    assert_eq!(off.mode(), BreakerMode::Disabled);
}

#[test]
fn metrics_only_runs_the_state_machine_but_never_denies() {
    let mut f = with_mode(BreakerMode::MetricsOnly);
    f.trip(ms(0));
    let until = ms(5000);
    // Open: the call Auto would deny goes out as a plain call; its result is not
    // recorded, as for any call admitted before the trip.
    assert_eq!(f.b.peek(ms(100)), Permit::Allow);
    assert_eq!(f.b.permit(ms(100)), Permit::Allow);
    f.fail(ms(200));
    assert_eq!(f.b.state(), BreakerState::Open { until });
    assert_eq!(f.b.poll_timeout(), Some(until));
    // Half-open: probes while slots last, then plain calls instead of denials.
    for _ in 0..3 {
        assert_eq!(f.b.permit(until), Permit::Probe);
    }
    assert_eq!(f.b.permit(until), Permit::Allow);
    f.probe(ms(5100), OK);
    f.probe(ms(5200), OK);
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(
        f.events(),
        [
            ev(ms(0), StateKind::Closed, StateKind::Open),
            ev(until, StateKind::Open, StateKind::HalfOpen),
            ev(ms(5200), StateKind::HalfOpen, StateKind::Closed),
        ]
    );
}

#[test]
fn reset_from_open_closes_and_forgets_the_growth() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    f.probe(ms(5000), BreakerInput::Failure);
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(15_000) });
    f.events();
    f.b.reset(ms(6000));
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.counts(), WindowCounts::default());
    assert_eq!(f.b.permit(ms(6000)), Permit::Allow);
    assert_eq!(
        f.events(),
        [ev(ms(6000), StateKind::Open, StateKind::Closed)]
    );
    // The next trip opens for `open_for` again, not the grown 20 s.
    f.trip(ms(7000));
    assert_eq!(f.b.state(), BreakerState::Open { until: ms(12_000) });
}

#[test]
fn reset_from_half_open_ends_the_probe_period() {
    let mut f = Fixture::new(exact());
    f.trip(ms(0));
    for _ in 0..3 {
        assert_eq!(f.b.permit(ms(5000)), Permit::Probe);
    }
    let period = Some(f.b.probe_period());
    f.b.reset(ms(5100));
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(f.b.probes_in_flight(), 0);
    assert_ne!(Some(f.b.probe_period()), period);
    // A late answer of a probe of the ended period counts as a plain closed call.
    report(&mut f, ms(5200), BreakerInput::Failure, period);
    assert_eq!(f.b.counts().failures, 1);
    assert_eq!(f.b.state(), BreakerState::Closed);
    assert_eq!(
        f.events(),
        [
            ev(ms(0), StateKind::Closed, StateKind::Open),
            ev(ms(5000), StateKind::Open, StateKind::HalfOpen),
            ev(ms(5100), StateKind::HalfOpen, StateKind::Closed),
        ]
    );
}

#[test]
fn reset_of_a_closed_breaker_clears_its_window_silently_and_keeps_the_mode() {
    let mut f = with_mode(BreakerMode::ForcedOpen);
    f.b.set_mode(ms(0), BreakerMode::Auto);
    for i in 0..4 {
        f.fail(ms(i));
    }
    f.b.set_mode(ms(5), BreakerMode::ForcedOpen);
    f.b.reset(ms(10));
    assert_eq!(f.b.counts(), WindowCounts::default());
    assert_eq!(f.b.mode(), BreakerMode::ForcedOpen);
    assert!(f.events().is_empty());
    // The failure run started afresh: four more do not trip the five-in-a-row model.
    f.b.set_mode(ms(10), BreakerMode::Auto);
    for i in 10..14 {
        f.fail(ms(i));
    }
    assert_eq!(f.b.state(), BreakerState::Closed);
}

#[test]
fn validate_refuses_a_mode_that_contradicts_enabled() {
    for (mode, ok) in [
        (BreakerMode::Auto, true),
        (BreakerMode::Disabled, true),
        (BreakerMode::ForcedOpen, false),
        (BreakerMode::MetricsOnly, false),
    ] {
        let c = BreakerConfig {
            enabled: false,
            mode,
            ..BreakerConfig::default()
        };
        let want = if ok {
            Ok(())
        } else {
            Err(ConfigError::Conflict {
                field: "breaker.mode",
                with: "breaker.enabled",
            })
        };
        assert_eq!(c.validate(), want, "{mode}");
        let on = BreakerConfig { mode, ..c };
        assert_eq!(
            BreakerConfig {
                enabled: true,
                ..on
            }
            .validate(),
            Ok(()),
            "{mode}"
        );
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_mode_reads_by_its_snake_case_name() {
    for mode in [
        BreakerMode::Auto,
        BreakerMode::ForcedOpen,
        BreakerMode::Disabled,
        BreakerMode::MetricsOnly,
    ] {
        let text = alloc::format!("mode = \"{}\"\n", mode.name());
        let c: BreakerConfig = toml::from_str(&text).unwrap();
        assert_eq!(c.mode, mode);
        assert_eq!(
            serde_json::to_string(&mode).unwrap(),
            alloc::format!("\"{mode}\"")
        );
    }
    assert_eq!(BreakerConfig::default().mode, BreakerMode::Auto);
    assert!(toml::from_str::<BreakerConfig>("mode = \"open\"").is_err());
}

// --- properties ---

#[derive(Debug, Clone)]
enum ModeOp {
    Step(u64),
    Permit,
    Resolve { pick: usize, kind: u8 },
    Timeout,
    Mode(BreakerMode),
    Reset,
}

fn mode() -> impl Strategy<Value = BreakerMode> {
    prop_oneof![
        Just(BreakerMode::Auto),
        Just(BreakerMode::ForcedOpen),
        Just(BreakerMode::Disabled),
        Just(BreakerMode::MetricsOnly),
    ]
}

fn mode_op() -> impl Strategy<Value = ModeOp> {
    prop_oneof![
        3 => (0u64..3000).prop_map(ModeOp::Step),
        5 => Just(ModeOp::Permit),
        5 => (any::<usize>(), 0u8..4).prop_map(|(pick, kind)| ModeOp::Resolve { pick, kind }),
        1 => Just(ModeOp::Timeout),
        1 => mode().prop_map(ModeOp::Mode),
        1 => Just(ModeOp::Reset),
    ]
}

/// Drives a breaker through `ops` with its mode switched at random, checking each
/// answer against the mode in force and the probe accounting across switches.
fn drive_modes(config: &BreakerConfig, ops: &[ModeOp], seed: u64) {
    let mut b = Breaker::new(config);
    let mut rng = from_u64(seed);
    let mut now = Timestamp::ZERO;
    let mut outstanding: Vec<Option<u32>> = Vec::new();
    for op in ops {
        match *op {
            ModeOp::Step(d) => now = now + Duration::from_millis(d),
            ModeOp::Permit => {
                let peeked = b.peek(now);
                let permit = b.permit(now);
                assert_eq!(peeked, permit);
                match b.mode() {
                    BreakerMode::ForcedOpen => assert!(!permit.is_granted(), "{permit:?}"),
                    BreakerMode::Disabled => assert_eq!(permit, Permit::Allow),
                    BreakerMode::MetricsOnly => assert!(permit.is_granted(), "{permit:?}"),
                    BreakerMode::Auto => {}
                }
                match permit {
                    Permit::Allow => outstanding.push(None),
                    Permit::Probe => outstanding.push(Some(b.probe_period())),
                    Permit::Deny { until } => assert!(until > now),
                }
            }
            ModeOp::Resolve { pick, kind } => {
                if outstanding.is_empty() {
                    continue;
                }
                let period = outstanding.swap_remove(pick % outstanding.len());
                let input = match kind {
                    0 | 1 => BreakerInput::Failure,
                    2 => BreakerInput::Ignored,
                    _ => OK,
                };
                let frozen = (b.state(), b.counts(), b.trips());
                let mode = b.mode();
                b.on_result(now, input, period == Some(b.probe_period()), &mut rng);
                if matches!(mode, BreakerMode::ForcedOpen | BreakerMode::Disabled) {
                    assert_eq!((b.state(), b.counts(), b.trips()), frozen);
                }
            }
            ModeOp::Timeout => {
                let state = b.state();
                b.handle_timeout(now);
                if matches!(b.mode(), BreakerMode::ForcedOpen | BreakerMode::Disabled) {
                    assert_eq!(b.state(), state);
                }
            }
            ModeOp::Mode(m) => {
                let state = b.state();
                b.set_mode(now, m);
                assert_eq!((b.mode(), b.state()), (m, state));
            }
            ModeOp::Reset => {
                b.reset(now);
                assert_eq!(b.state(), BreakerState::Closed);
                assert_eq!(b.counts(), WindowCounts::default());
            }
        }
        let current = Some(b.probe_period());
        let probes = outstanding.iter().filter(|p| **p == current).count();
        if b.state() == BreakerState::HalfOpen {
            assert_eq!(b.probes_in_flight() as usize, probes);
        }
        assert!(probes <= config.half_open_probes as usize);
        while b.poll_event().is_some() {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0b4e_a6e4),
        ..ProptestConfig::default()
    })]

    /// Under `ForcedOpen` nothing is granted, under `Disabled` and `MetricsOnly`
    /// nothing is denied, and probe slots stay consistent across mode switches and
    /// resets.
    #[test]
    fn each_mode_keeps_its_promise_under_any_sequence(
        config in config(),
        start in mode(),
        ops in proptest::collection::vec(mode_op(), 1..300),
        seed in any::<u64>(),
    ) {
        let config = BreakerConfig { mode: start, ..config };
        drive_modes(&config, &ops, seed);
    }
}
