//! Scenario files: parsing, validation errors that name the field, and round trips.

use steadfast_sim::{Scenario, ScenarioError, builtin};

fn error(text: &str) -> String {
    Scenario::from_toml(text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("accepted:\n{text}"))
}

const BASE: &str = r#"
name = "t"
[[endpoints]]
name = "a"
[[endpoints]]
name = "b"
keys = 2
"#;

#[test]
fn a_minimal_scenario_takes_the_defaults() {
    let s = Scenario::from_toml(BASE).unwrap();
    assert_eq!(s.load.calls, 1000);
    assert_eq!(s.endpoints[0].keys, 1);
    assert_eq!(s.endpoints[1].keys, 2);
}

#[test]
fn validation_names_the_field_by_its_path() {
    let cases = [
        (
            "[endpoints.faults]\nrate_429 = 1.5\n",
            "endpoints[1].faults.rate_429: 1.5 is outside [0, 1]",
        ),
        (
            "[endpoints.faults]\nrate_5xx = 0.6\nrate_529 = 0.6\n",
            "endpoints[1].faults: the rates add up to 1.2, more than 1",
        ),
        (
            "[[endpoints.outages]]\nstart = \"5s\"\nend = \"2s\"\nkind = \"timeout\"\n",
            "endpoints[1].outages[0].end: must be later than start",
        ),
        (
            "[[endpoints.outages]]\nstart = \"1s\"\nend = \"2s\"\nkind = \"slow\"\n",
            "endpoints[1].outages[0].latency: is required for kind = \"slow\"",
        ),
        (
            "[[endpoints.bad_keys]]\nkey = 2\nkind = \"revoked\"\n",
            "endpoints[1].bad_keys[0].key: 2 is not a key of this endpoint (it has 2)",
        ),
        (
            "latency = { uniform = { min = \"2s\", max = \"1s\" } }\n",
            "endpoints[1].latency.uniform.min: 2s is greater than max (1s)",
        ),
        (
            "[endpoints.limits]\ntokens_per_minute = 100\n",
            "endpoints[1].limits.tokens_per_minute: 100 is less than one call's load.tokens (500)",
        ),
    ];
    for (extra, want) in cases {
        assert_eq!(error(&format!("{BASE}{extra}")), want);
    }
    let dup = BASE.replace("name = \"b\"", "name = \"a\"");
    assert_eq!(
        error(&dup),
        "endpoints[1].name: `a` is also the name of endpoints[0]"
    );
    let load = BASE.replace("name = \"t\"\n", "name = \"t\"\n[load]\nrate = 0.0\n");
    assert_eq!(error(&load), "load.rate: 0 is outside (0, 1000000]");
}

#[test]
fn unknown_fields_and_bad_values_are_parse_errors_naming_them() {
    let e = Scenario::from_toml(&format!("{BASE}[endpoints.faults]\nrate_492 = 0.1\n"));
    let Err(ScenarioError::Parse { message }) = e else {
        panic!("{e:?}")
    };
    assert!(message.contains("rate_492"), "{message}");
    let e = error(&format!("{BASE}latency = {{ fixed = \"soon\" }}\n"));
    assert!(e.contains("soon"), "{e}");
    let e = error("name = \"x\"\n");
    assert!(e.contains("endpoints"), "{e}");
}

#[test]
fn every_builtin_round_trips_through_toml() {
    for name in builtin::names() {
        let s = builtin::scenario(name).unwrap();
        let back = Scenario::from_toml(&s.to_toml()).unwrap();
        assert_eq!(back, s, "{name}");
    }
}
