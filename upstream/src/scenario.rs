//! Scenarios: the traffic, the endpoints and everything that goes wrong with them.
//!
//! A scenario is TOML (the built-ins are in `upstream/scenarios/`, printed by
//! `steadfast sim --print-scenario NAME`). The same file means the same world in the
//! simulator (virtual time), the mock server (real HTTP on loopback) and the tests.
//! Every field but `endpoints` has a default; unknown fields are errors, and
//! [`Scenario::validate`] names the bad field as a path
//! (`endpoints[1].faults.rate_429: 1.5 is outside [0, 1]`).
//!
//! `[load]` describes the client's traffic: the simulator makes it; the mock ignores it
//! (its clients bring their own).

use serde::{Deserialize, Serialize};
use steadfast_core::duration::serde_human;

mod check;
mod endpoint;
mod knobs;
mod scale;

pub use check::{MAX_CALLS, MAX_ENDPOINTS, MAX_KEYS, ScenarioError};
pub use endpoint::{
    BadKey, BadKeyKind, EndpointSpec, Faults, Outage, OutageKind, ServerLimits, ToolUse,
};
pub use knobs::Knobs;

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name, shown in reports.
    #[serde(default)]
    pub name: String,
    /// One line on what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// The client's traffic.
    #[serde(default)]
    pub load: Load,
    /// The report's time resolution.
    #[serde(default)]
    pub report: ReportSpec,
    /// The endpoints, in the pool's order (`EndpointId` = position).
    pub endpoints: Vec<EndpointSpec>,
}

/// How calls arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced, `1 / rate` apart.
    Fixed,
    /// A Poisson process of intensity `rate` (exponential gaps from the seed).
    #[default]
    Poisson,
    /// A closed loop: every call is there at the start and `concurrency` of them run at
    /// once, the next starting as one finishes (a batch of `calls` lines at a fixed
    /// concurrency); `rate` is not used.
    Closed,
}

/// The client's traffic. Defaults: 1000 calls, Poisson at 10/s, 64 at once, 500 tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Load {
    /// Logical calls to make.
    pub calls: u64,
    /// Calls arriving per second.
    pub rate: f64,
    /// How arrivals are spaced.
    pub arrival: Arrival,
    /// Calls in progress at once; later arrivals queue (first come, first served).
    pub concurrency: u32,
    /// Tokens each call costs (charged by the server's and the client's token limits).
    pub tokens: u64,
    /// Business ids: with a prefix `p`, call `i` (from 1) is `p-i` and its idempotency
    /// key is derived from that id, as a batch derives its lines' keys; without one,
    /// keys are drawn from the seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids: Option<String>,
}

impl Default for Load {
    fn default() -> Self {
        Load {
            calls: 1000,
            rate: 10.0,
            arrival: Arrival::Poisson,
            concurrency: 64,
            tokens: 500,
            ids: None,
        }
    }
}

impl Load {
    /// The business id of call `index` (from 0), when the load names its calls.
    pub fn id(&self, index: u64) -> Option<String> {
        let prefix = self.ids.as_deref()?;
        Some(format!("{prefix}-{}", index.saturating_add(1)))
    }
}

/// Report settings.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportSpec {
    /// The width of a time bucket; by default about a fortieth of the run, rounded to
    /// 1, 2 or 5 × a power of ten seconds.
    #[serde(with = "serde_human::option", skip_serializing_if = "Option::is_none")]
    pub bucket: Option<core::time::Duration>,
}

impl Scenario {
    /// One OpenAI endpoint that answers every request at once, successfully (the
    /// built-in `ok`).
    pub fn healthy() -> Scenario {
        let mut endpoint = EndpointSpec::named("openai");
        endpoint.latency = crate::dist::Dist::Fixed(core::time::Duration::ZERO);
        endpoint.error_latency = endpoint.latency;
        Scenario {
            name: "ok".to_owned(),
            description: "Every request succeeds at once.".to_owned(),
            load: Load::default(),
            report: ReportSpec::default(),
            endpoints: vec![endpoint],
        }
    }

    /// Parses and validates a scenario from TOML text.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            message: e.to_string(),
        })?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// The scenario as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The endpoint a request path names, and the provider it speaks: the provider's
    /// own path (`/v1/chat/completions`, `/v1/messages`) is the first endpoint, and
    /// `/{name}` before it names an endpoint (`/anthropic/v1/messages`).
    pub fn route(&self, path: &str) -> Option<(usize, steadfast_core::provider::Provider)> {
        let provider = steadfast_core::provider::Provider::from_path(path)?;
        let prefix = path.strip_suffix(provider.path())?;
        if prefix.is_empty() {
            return (!self.endpoints.is_empty()).then_some((0, provider));
        }
        let name = prefix.strip_prefix('/')?;
        let index = self.endpoints.iter().position(|e| e.name == name)?;
        Some((index, provider))
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use steadfast_core::provider::Provider;

    #[test]
    fn paths_route_to_endpoints() {
        let s = Scenario::from_toml(
            "[[endpoints]]\nname = \"a\"\n[[endpoints]]\nname = \"b\"\napi = \"anthropic\"\n",
        )
        .unwrap();
        assert_eq!(s.route("/v1/chat/completions"), Some((0, Provider::OpenAi)));
        assert_eq!(s.route("/v1/messages"), Some((0, Provider::Anthropic)));
        assert_eq!(s.route("/b/v1/messages"), Some((1, Provider::Anthropic)));
        assert_eq!(
            s.route("/a/v1/chat/completions"),
            Some((0, Provider::OpenAi))
        );
        assert_eq!(s.route("/c/v1/messages"), None);
        assert_eq!(s.route("/v1/models"), None);
        let load = Load {
            ids: Some("line".into()),
            ..Load::default()
        };
        assert_eq!(load.id(0).as_deref(), Some("line-1"));
        assert_eq!(Load::default().id(0), None);
    }
}
