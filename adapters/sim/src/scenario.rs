//! Scenarios: the traffic, the endpoints and everything that goes wrong with them.
//!
//! A scenario is TOML (see the built-ins in `adapters/sim/scenarios/`, printed by
//! `steadfast sim --print-scenario NAME`). Every field but `endpoints` has a default;
//! unknown fields are errors, and [`Scenario::validate`] names the bad field as a path
//! (`endpoints[1].faults.rate_429: 1.5 is outside [0, 1]`).

use core::time::Duration;

use serde::{Deserialize, Serialize};
use steadfast_core::duration::serde_human;

use crate::dist::Dist;

#[path = "scenario_check.rs"]
mod check;

pub use check::ScenarioError;

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
}

impl Default for Load {
    fn default() -> Self {
        Load {
            calls: 1000,
            rate: 10.0,
            arrival: Arrival::Poisson,
            concurrency: 64,
            tokens: 500,
        }
    }
}

/// Report settings.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportSpec {
    /// The width of a time bucket; by default about a fortieth of the run, rounded to
    /// 1, 2 or 5 × a power of ten seconds.
    #[serde(with = "serde_human::option", skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Duration>,
}

/// Which provider's wire format an endpoint speaks (error bodies, rate-limit headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI-compatible: `x-ratelimit-*` with duration resets, `retry-after-ms`.
    #[default]
    Openai,
    /// Anthropic: `anthropic-ratelimit-*` with RFC 3339 resets, `retry-after` seconds.
    Anthropic,
}

/// One endpoint: a provider's base URL and model, with its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// Its name in reports.
    pub name: String,
    /// Lower is preferred (the pool's priority).
    #[serde(default)]
    pub priority: u8,
    /// How many keys it has.
    #[serde(default = "one")]
    pub keys: u16,
    /// The wire format.
    #[serde(default)]
    pub api: Api,
    /// How long a successful answer takes.
    #[serde(default = "default_latency")]
    pub latency: Dist,
    /// How long an error answer (4xx, 5xx, reset, refusal) takes.
    #[serde(default = "default_error_latency")]
    pub error_latency: Dist,
    /// Random faults, by class.
    #[serde(default)]
    pub faults: Faults,
    /// Limits the server enforces per key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ServerLimits>,
    /// Windows in which the endpoint misbehaves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
    /// Keys that are bad from some instant on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad_keys: Vec<BadKey>,
}

fn one() -> u16 {
    1
}

fn default_latency() -> Dist {
    Dist::Lognormal {
        median: Duration::from_millis(800),
        sigma: 0.5,
    }
}

fn default_error_latency() -> Dist {
    Dist::Fixed(Duration::from_millis(30))
}

/// The fraction of requests that fail, by class; the rest succeed. Applied after the
/// rate limits and outside outage windows. The rates add up to at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// 429 rate-limit answers (the server's shared capacity, not the key's own limit).
    pub rate_429: f64,
    /// The wait a random 429 asks for (`retry-after`); none when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Dist>,
    /// 500, 502 and 503 answers, in equal shares.
    pub rate_5xx: f64,
    /// 529 "overloaded" answers.
    pub rate_529: f64,
    /// No answer at all: the attempt times out.
    pub rate_timeout: f64,
    /// The connection is reset before a status line.
    pub rate_reset: f64,
    /// A 200 whose body is not the promised JSON.
    pub rate_malformed: f64,
}

/// Limits the server enforces per key, in fixed one-minute windows from the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerLimits {
    /// Requests per minute per key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    /// Tokens per minute per key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
}

/// What an endpoint does during an outage window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageKind {
    /// Answers with `status` (503 by default).
    Status,
    /// Never answers: attempts time out.
    Timeout,
    /// Resets the connection before a status line.
    Reset,
    /// Refuses the connection (nothing listens).
    Refused,
    /// Answers, but with the window's `latency`.
    Slow,
}

/// A window `[start, end)` in which the endpoint misbehaves for a share of requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// When it begins, from the start of the run.
    #[serde(with = "serde_human")]
    pub start: Duration,
    /// When it ends.
    #[serde(with = "serde_human")]
    pub end: Duration,
    /// What happens.
    pub kind: OutageKind,
    /// The status for `kind = "status"`.
    #[serde(default = "default_outage_status")]
    pub status: u16,
    /// The share of requests affected, in `[0, 1]`.
    #[serde(default = "full")]
    pub rate: f64,
    /// The latency for `kind = "slow"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Dist>,
}

fn default_outage_status() -> u16 {
    503
}

fn full() -> f64 {
    1.0
}

impl Outage {
    /// Whether `at` (from the start of the run) falls in the window.
    pub fn covers(&self, at: Duration) -> bool {
        self.start <= at && at < self.end
    }
}

/// How a key is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadKeyKind {
    /// The account is out of quota: 429 `insufficient_quota` (Anthropic: 400 `billing_error`).
    QuotaExhausted,
    /// The key was revoked: 401 `invalid_api_key` (Anthropic: `authentication_error`).
    Revoked,
}

/// A key that is bad from `from` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadKey {
    /// The key's index within the endpoint.
    pub key: u16,
    /// How it is bad.
    pub kind: BadKeyKind,
    /// From when, since the start of the run.
    #[serde(default, with = "serde_human")]
    pub from: Duration,
}

impl Scenario {
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
}
