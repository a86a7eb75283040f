//! The built-in scenarios, kept as TOML text so a user can print one and edit it.
//!
//! `steadfast sim --list` and `steadfast mock --list` name these same scenarios, and
//! each means the same world in both.

use crate::scenario::Scenario;

/// Every built-in: its name and its TOML text.
pub const ALL: [(&str, &str); 16] = [
    ("ok", include_str!("../scenarios/ok.toml")),
    ("steady", include_str!("../scenarios/steady.toml")),
    ("slow", include_str!("../scenarios/slow.toml")),
    ("flaky", include_str!("../scenarios/flaky.toml")),
    ("reset", include_str!("../scenarios/reset.toml")),
    ("malformed", include_str!("../scenarios/malformed.toml")),
    ("hang", include_str!("../scenarios/hang.toml")),
    ("stream-cut", include_str!("../scenarios/stream-cut.toml")),
    ("outage", include_str!("../scenarios/outage.toml")),
    ("brownout", include_str!("../scenarios/brownout.toml")),
    (
        "provider-failover",
        include_str!("../scenarios/provider-failover.toml"),
    ),
    ("ratelimit", include_str!("../scenarios/ratelimit.toml")),
    (
        "ratelimit-storm",
        include_str!("../scenarios/ratelimit-storm.toml"),
    ),
    ("auth", include_str!("../scenarios/auth.toml")),
    ("quota", include_str!("../scenarios/quota.toml")),
    (
        "quota-exhausted-key",
        include_str!("../scenarios/quota-exhausted-key.toml"),
    ),
];

/// The names of the built-ins, in documentation order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALL.iter().map(|(n, _)| *n)
}

/// The TOML text of the built-in `name` (`_` may stand for `-`, any case).
pub fn text(name: &str) -> Option<&'static str> {
    let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
    ALL.iter().find(|(n, _)| *n == wanted).map(|(_, t)| *t)
}

/// The built-in `name`, parsed. Every built-in parses and validates (a test checks).
pub fn scenario(name: &str) -> Option<Scenario> {
    Scenario::from_toml(text(name)?).ok()
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_validates_and_is_named_as_listed() {
        for (name, text) in ALL {
            let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.name, name);
            assert!(!s.description.is_empty(), "{name}");
            let back = Scenario::from_toml(&s.to_toml()).unwrap();
            assert_eq!(back, s, "{name}");
        }
        assert_eq!(
            scenario("STREAM_CUT").map(|s| s.name).as_deref(),
            Some("stream-cut")
        );
        assert!(scenario("nope").is_none());
        assert_eq!(scenario("ok"), Some(Scenario::healthy()));
    }
}
