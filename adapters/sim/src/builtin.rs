//! The built-in scenarios, kept as TOML text so a user can print one and edit it.

use crate::scenario::Scenario;

/// Every built-in: its name and its TOML text.
pub const ALL: [(&str, &str); 7] = [
    ("steady", include_str!("../scenarios/steady.toml")),
    ("flaky", include_str!("../scenarios/flaky.toml")),
    ("outage", include_str!("../scenarios/outage.toml")),
    (
        "ratelimit-storm",
        include_str!("../scenarios/ratelimit-storm.toml"),
    ),
    ("brownout", include_str!("../scenarios/brownout.toml")),
    (
        "provider-failover",
        include_str!("../scenarios/provider-failover.toml"),
    ),
    (
        "quota-exhausted-key",
        include_str!("../scenarios/quota-exhausted-key.toml"),
    ),
];

/// The names of the built-ins, in documentation order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALL.iter().map(|(n, _)| *n)
}

/// The TOML text of the built-in `name`.
pub fn text(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The built-in `name`, parsed. Every built-in parses and validates (a test checks).
pub fn scenario(name: &str) -> Option<Scenario> {
    Scenario::from_toml(text(name)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_validates_and_is_named_as_listed() {
        for (name, text) in ALL {
            let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.name, name);
        }
    }
}
