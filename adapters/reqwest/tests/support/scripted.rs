//! The mock that answers a script of faults first and then as the `ok` scenario does,
//! and one for hedging, with the policy that hedges on it. Shared by the reqwest and
//! ureq suites.
#![allow(dead_code)]

use std::time::Duration;

use steadfast_core::hedge::HedgeConfig;
use steadfast_core::policy::Policy;
use steadfast_mock::{Fault, MockConfig, MockServer, Scenario};

/// `p` hedging an attempt still unanswered after `ms`, with a budget for every call.
pub fn hedged_after(mut p: Policy, ms: u64) -> Policy {
    p.hedge = HedgeConfig::after(Duration::from_millis(ms)).with_budget(1.0);
    p
}

/// The mock with `seed` (printed), answering `script` first.
pub fn mock(seed: u64, script: Vec<Fault>) -> MockServer {
    eprintln!("seed {seed:#x}");
    let config = MockConfig::builtin("ok")
        .expect("built-in")
        .with_seed(seed)
        .with_script(script);
    MockServer::start(config).expect("the mock starts")
}

/// A mock answering at once after `script`, that serves a request beside one in
/// progress with the same idempotency key (as the real chat APIs do: a hedge beside a
/// held request is served), and whose stream events after the first come `event_ms`
/// apart.
pub fn hedgeable(seed: u64, event_ms: u64, script: Vec<Fault>) -> MockServer {
    eprintln!("seed {seed:#x}");
    let scenario = Scenario::from_toml(&format!(
        "name = \"hedgeable\"\n[[endpoints]]\nname = \"openai\"\nlatency = {{ fixed = \"0s\" }}\n\
         event_latency = {{ fixed = \"{event_ms}ms\" }}\nconflicts = false\n"
    ))
    .expect("a scenario");
    let config = MockConfig::new(scenario)
        .with_seed(seed)
        .with_script(script);
    MockServer::start(config).expect("the mock starts")
}
