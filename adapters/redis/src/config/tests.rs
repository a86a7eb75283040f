use super::*;

#[test]
fn the_default_is_valid() {
    assert_eq!(RedisConfig::default().validate(), Ok(()));
}

#[test]
fn the_default_serializes_to_the_documented_values() {
    let text = toml::to_string(&RedisConfig::default()).unwrap();
    let expected = "url = \"redis://127.0.0.1:6379\"\n\
                    call_timeout = \"50ms\"\n\
                    connect_timeout = \"200ms\"\n\
                    prefix = \"sf\"\n\
                    reconnect_min = \"10ms\"\n\
                    reconnect_max = \"1s\"\n\
                    fail_mode = \"fail_open\"\n\
                    \n\
                    [limits]\n";
    assert_eq!(text, expected);
    assert_eq!(
        toml::from_str::<RedisConfig>(&text).unwrap(),
        RedisConfig::default()
    );
}

#[test]
fn a_file_sets_fail_modes_per_limit() {
    let c: RedisConfig = toml::from_str(
        "call_timeout = \"20ms\"\nfail_mode = \"fail_closed\"\n[limits]\n\"openai:k0\" = \"fail_open\"\n",
    )
    .unwrap();
    assert_eq!(c.validate(), Ok(()));
    let open = crate::LimitKey::new("openai:k0").unwrap();
    let other = crate::LimitKey::new("anthropic:k0").unwrap();
    assert_eq!(c.fail_mode_for(&open), FailMode::Open);
    assert_eq!(c.fail_mode_for(&other), FailMode::Closed);
    assert_eq!(c.call_timeout, Duration::from_millis(20));
}

#[test]
fn unknown_fields_are_refused() {
    assert!(toml::from_str::<RedisConfig>("timeout = \"1s\"\n").is_err());
}

#[test]
fn each_bad_field_is_named() {
    type Spoil = fn(&mut RedisConfig);
    let cases: [(Spoil, &str); 8] = [
        (|c| c.url = "http://x".into(), "url"),
        (|c| c.call_timeout = Duration::ZERO, "call_timeout"),
        (|c| c.call_timeout = Duration::from_secs(6), "call_timeout"),
        (|c| c.connect_timeout = Duration::ZERO, "connect_timeout"),
        (|c| c.prefix = "a{b".into(), "prefix"),
        (|c| c.reconnect_min = Duration::ZERO, "reconnect_min"),
        (
            |c| c.reconnect_max = Duration::from_millis(1),
            "reconnect_min",
        ),
        (
            |c| {
                c.limits.insert("a}".into(), FailMode::Open);
            },
            "limits",
        ),
    ];
    for (spoil, field) in cases {
        let mut c = RedisConfig::default();
        spoil(&mut c);
        assert_eq!(c.validate().map_err(|e| e.field()), Err(field));
    }
}

#[test]
fn debug_output_hides_the_password() {
    let c = RedisConfig {
        url: "redis://user:hunter2@127.0.0.1:6379/0".into(),
        ..RedisConfig::default()
    };
    let shown = format!("{c:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("redis://***@127.0.0.1:6379/0"), "{shown}");
}
