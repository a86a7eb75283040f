use super::*;

#[test]
fn every_preset_is_valid_and_named() {
    for preset in Preset::ALL {
        Policy::from(preset).validate().unwrap();
        assert_eq!(Preset::from_name(preset.name()), Some(preset));
    }
    assert_eq!(Preset::from_name("nope"), None);
    assert_eq!(Policy::from(Preset::Standard), Policy::default());
}

#[test]
fn presets_differ_where_they_promise() {
    let (i, b, s) = (Policy::interactive(), Policy::batch(), Policy::streaming());
    assert!(i.retry.deadline < Policy::default().retry.deadline);
    assert!(b.retry.max_attempts > Policy::default().retry.max_attempts);
    assert!(b.retry.hold);
    assert!(s.retry.first_event_timeout.is_some());
}

#[test]
fn validation_names_the_first_bad_field() {
    let mut p = Policy::default();
    p.backoff.base = Duration::from_secs(60);
    assert_eq!(p.validate().map_err(|e| e.field()), Err("backoff.base"));
    let mut p = Policy::default();
    p.retry.hint_jitter = 2.0;
    assert_eq!(
        p.validate().map_err(|e| e.field()),
        Err("retry.hint_jitter")
    );
    let mut p = Policy::default();
    p.breaker.half_open_probes = 0;
    assert_eq!(
        p.validate().map_err(|e| e.field()),
        Err("breaker.half_open_probes")
    );
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use alloc::string::ToString;

    /// The serialized default, as a config file would spell it.
    const DEFAULT_TOML: &str = include_str!("default.toml");

    #[test]
    fn the_default_serializes_to_the_snapshot() {
        let text = toml::to_string(&Policy::default()).unwrap();
        if std::env::var_os("STEADFAST_BLESS").is_some() {
            std::fs::write(
                concat!(env!("CARGO_MANIFEST_DIR"), "/src/policy/default.toml"),
                &text,
            )
            .unwrap();
        }
        assert_eq!(text, DEFAULT_TOML);
    }

    #[test]
    fn the_readme_shows_the_default_policy_as_it_is() {
        let readme = include_str!("../../../README.md");
        let block = alloc::format!("```toml\n{DEFAULT_TOML}```");
        assert!(
            readme.contains(&block),
            "README.md's default policy block differs from core/src/policy/default.toml"
        );
    }

    #[test]
    fn every_preset_round_trips() {
        for preset in Preset::ALL {
            let p = Policy::from(preset);
            let text = toml::to_string(&p).unwrap();
            assert_eq!(toml::from_str::<Policy>(&text).unwrap(), p, "{preset}");
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(
                serde_json::from_str::<Policy>(&json).unwrap(),
                p,
                "{preset}"
            );
        }
    }

    #[test]
    fn missing_fields_keep_defaults_and_unknown_ones_are_named() {
        let p: Policy =
            toml::from_str("[retry]\nmax_attempts = 7\n[backoff]\nbase = \"250ms\"\n").unwrap();
        assert_eq!(p.retry.max_attempts, 7);
        assert_eq!(p.backoff.base, Duration::from_millis(250));
        assert_eq!(p.backoff.cap, Duration::from_secs(30));
        let err = toml::from_str::<Policy>("[retry]\nmax_attempt = 7\n").unwrap_err();
        assert!(err.to_string().contains("max_attempt"), "{err}");
        let err = toml::from_str::<Policy>("[backoff]\nbase = \"soon\"\n").unwrap_err();
        assert!(err.to_string().contains("soon"), "{err}");
    }

    #[test]
    fn presets_have_serde_names() {
        assert_eq!(serde_json::to_string(&Preset::Batch).unwrap(), "\"batch\"");
        assert_eq!(
            serde_json::from_str::<Preset>("\"interactive\"").unwrap(),
            Preset::Interactive
        );
    }
}

#[test]
fn without_jitter_turns_every_spread_off_and_nothing_else() {
    for preset in Preset::ALL {
        let p = Policy::from(preset);
        let exact = p.clone().without_jitter();
        assert_eq!(exact.backoff.jitter, crate::backoff::Jitter::None);
        assert_eq!(exact.retry.hint_jitter, 0.0);
        assert_eq!(exact.breaker.open_jitter, 0.0);
        assert_eq!(exact.validate(), Ok(()));
        let mut back = exact;
        back.backoff.jitter = p.backoff.jitter;
        back.retry.hint_jitter = p.retry.hint_jitter;
        back.breaker.open_jitter = p.breaker.open_jitter;
        assert_eq!(back, p, "{preset:?}");
    }
}
