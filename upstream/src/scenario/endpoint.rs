//! One endpoint of a scenario: its keys, latencies, faults, limits, outages and bad
//! keys.

use core::time::Duration;

use serde::{Deserialize, Serialize};
use steadfast_core::duration::serde_human;
use steadfast_core::provider::Provider;

use crate::dist::Dist;
use crate::wire::headers::Window;

/// One endpoint: a provider's base URL and model, with its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// Its name in reports; over HTTP the endpoint is also served under `/{name}`.
    pub name: String,
    /// Lower is preferred (the pool's priority).
    #[serde(default)]
    pub priority: u8,
    /// How many keys it has. Over HTTP, an API key ending in `-N` (N below `keys`) is
    /// key N and any other key is key 0; rate limits count per key text.
    #[serde(default = "one")]
    pub keys: u16,
    /// The wire format the simulator and `batch --mock` speak to it (the mock answers
    /// each request in the format of its path).
    #[serde(default)]
    pub api: Provider,
    /// How long a successful answer takes to start (its time to first byte).
    #[serde(default = "default_latency")]
    pub latency: Dist,
    /// How long an error answer (4xx, 5xx, reset, refusal) takes.
    #[serde(default = "default_error_latency")]
    pub error_latency: Dist,
    /// The pause before each streamed event after the first.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub event_latency: Dist,
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
    /// Keys bad by their text: `revoked` for keys containing `bad` or `revoked`,
    /// `quota_exhausted` for keys containing `quota` (any case), from the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad_key_names: Vec<BadKeyKind>,
    /// Whether a request that offers tools and leaves the choice to the model gets a
    /// tool call (see [`ToolUse`]).
    #[serde(default, skip_serializing_if = "ToolUse::is_never")]
    pub tool_use: ToolUse,
    /// Whether request bodies are checked as the real APIs check them (see
    /// [`crate::wire::check`]): a body they would refuse gets their 400. `false` serves
    /// any JSON object, for a scenario about something else that sends loose bodies on
    /// purpose. Default: `true`.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub strict: bool,
    /// Whether a request whose `Idempotency-Key` has an attempt still in progress is
    /// refused with 409 (`true`, as a server that dedupes does) or processed like any
    /// other (`false`, as OpenAI's and Anthropic's chat APIs do: they dedupe nothing,
    /// so a hedge beside a slow attempt is served). Default: `true`.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub conflicts: bool,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// When the endpoint answers with a tool call (OpenAI's `tool_calls` message with
/// `finish_reason: "tool_calls"`, Anthropic's `tool_use` block with `stop_reason:
/// "tool_use"`), beside the requests whose `tool_choice` demands one (`required`, a
/// named function, `any`, `tool`), which always get one.
///
/// ```toml
/// [[endpoints]]
/// name = "anthropic"
/// api = "anthropic"
/// tool_use = "auto"
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolUse {
    /// Only when `tool_choice` demands it (the default).
    #[default]
    Never,
    /// Also when the choice is left to the model (`auto`, or no `tool_choice`), unless
    /// the last turn is a tool's result: the first tool offered is called, so a tool
    /// round trip is a tool call and then text.
    Auto,
}

impl ToolUse {
    fn is_never(&self) -> bool {
        *self == ToolUse::Never
    }
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

fn zero() -> Dist {
    Dist::Fixed(Duration::ZERO)
}

fn is_zero(d: &Dist) -> bool {
    *d == zero()
}

impl EndpointSpec {
    /// An endpoint named `name` with every default.
    pub fn named(name: &str) -> EndpointSpec {
        EndpointSpec {
            name: name.to_owned(),
            priority: 0,
            keys: 1,
            api: Provider::OpenAi,
            latency: default_latency(),
            error_latency: default_error_latency(),
            event_latency: zero(),
            faults: Faults::default(),
            limits: None,
            outages: Vec::new(),
            bad_keys: Vec::new(),
            bad_key_names: Vec::new(),
            tool_use: ToolUse::Never,
            strict: true,
            conflicts: true,
        }
    }

    /// The index of the key an API key's text names (see [`EndpointSpec::keys`]).
    pub fn key_index(&self, api_key: &str) -> u16 {
        let digits = api_key.rsplit('-').next().unwrap_or("");
        match digits.parse::<u16>() {
            Ok(k) if k < self.keys && api_key.len() > digits.len() => k,
            _ => 0,
        }
    }
}

/// The fraction of requests that fail, by class; the rest succeed. Applied after the
/// rate limits and outside outage windows. The rates add up to at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// 429 rate-limit answers (the server's shared capacity, not the key's own limit).
    pub rate_429: f64,
    /// The wait a random 429 asks for (`retry-after`); none when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Dist>,
    /// 500, 502 (a gateway's HTML page) and 503 answers, in equal shares.
    pub rate_5xx: f64,
    /// Overloaded answers: 529 `overloaded_error` from Anthropic, 503 from OpenAI.
    pub rate_529: f64,
    /// No answer at all: the attempt times out (no work done).
    pub rate_timeout: f64,
    /// The connection is reset after the request was read, before a status line (work
    /// done: a keyed retry gets the stored success).
    pub rate_reset: f64,
    /// A 200 whose body is not the promised JSON (work done).
    pub rate_malformed: f64,
    /// A 200 whose body stops halfway (work done).
    #[serde(skip_serializing_if = "is_zero_rate")]
    pub rate_truncated: f64,
    /// A stream cut after `stream_cut_after` events; a request that is not a stream
    /// gets a truncated body (work done).
    #[serde(skip_serializing_if = "is_zero_rate")]
    pub rate_stream_cut: f64,
    /// How many events a cut stream delivers.
    #[serde(skip_serializing_if = "is_two")]
    pub stream_cut_after: u32,
    /// Each failed attempt of a request since its last success multiplies the rates by
    /// this (1: every attempt fails alike; 0.5: a retrying client gets through). A
    /// request is known by its `Idempotency-Key`, else its path and body.
    #[serde(skip_serializing_if = "is_one")]
    pub decay: f64,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            rate_429: 0.0,
            retry_after: None,
            rate_5xx: 0.0,
            rate_529: 0.0,
            rate_timeout: 0.0,
            rate_reset: 0.0,
            rate_malformed: 0.0,
            rate_truncated: 0.0,
            rate_stream_cut: 0.0,
            stream_cut_after: 2,
            decay: 1.0,
        }
    }
}

fn is_zero_rate(r: &f64) -> bool {
    *r == 0.0
}

fn is_one(r: &f64) -> bool {
    *r == 1.0
}

fn is_two(n: &u32) -> bool {
    *n == 2
}

impl Faults {
    /// Every rate with its field name, in the order faults are drawn.
    pub fn rates(&self) -> [(&'static str, f64); 8] {
        [
            ("rate_429", self.rate_429),
            ("rate_5xx", self.rate_5xx),
            ("rate_529", self.rate_529),
            ("rate_timeout", self.rate_timeout),
            ("rate_reset", self.rate_reset),
            ("rate_malformed", self.rate_malformed),
            ("rate_truncated", self.rate_truncated),
            ("rate_stream_cut", self.rate_stream_cut),
        ]
    }

    /// The sum of the rates.
    pub fn total(&self) -> f64 {
        self.rates().iter().map(|(_, r)| r).sum()
    }

    /// Every rate multiplied by `k`.
    pub fn scale(&mut self, k: f64) {
        for r in [
            &mut self.rate_429,
            &mut self.rate_5xx,
            &mut self.rate_529,
            &mut self.rate_timeout,
            &mut self.rate_reset,
            &mut self.rate_malformed,
            &mut self.rate_truncated,
            &mut self.rate_stream_cut,
        ] {
            *r *= k;
        }
    }
}

/// Limits the server enforces per key: token buckets refilled continuously at the
/// limit per minute, holding at most the burst (the limit by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerLimits {
    /// Requests per minute per key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    /// Requests a full bucket allows at once (at most the limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_burst: Option<u64>,
    /// Tokens per minute per key (input and output together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    /// Tokens a full bucket allows at once (at most the limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_burst: Option<u64>,
    /// Input tokens per minute per key (Anthropic's `input-tokens` limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_minute: Option<u64>,
    /// Output tokens per minute per key (Anthropic's `output-tokens` limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_minute: Option<u64>,
}

impl ServerLimits {
    /// Every limited window with its limit per minute and its burst (the limit when
    /// none is set), in the order the server checks them.
    pub fn windows(&self) -> impl Iterator<Item = (Window, u64, u64)> + use<> {
        [
            (
                Window::Requests,
                self.requests_per_minute,
                self.request_burst,
            ),
            (Window::Tokens, self.tokens_per_minute, self.token_burst),
            (Window::InputTokens, self.input_tokens_per_minute, None),
            (Window::OutputTokens, self.output_tokens_per_minute, None),
        ]
        .into_iter()
        .filter_map(|(w, limit, burst)| {
            let limit = limit?;
            Some((w, limit, burst.unwrap_or(limit)))
        })
    }
}

/// What an endpoint does during an outage window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageKind {
    /// Answers with `status`.
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
    /// The status for `kind = "status"`; by default 503 for OpenAI requests and 529
    /// (`overloaded_error`) for Anthropic ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The share of requests affected, in `[0, 1]`.
    #[serde(default = "full")]
    pub rate: f64,
    /// The latency for `kind = "slow"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Dist>,
    /// The window also covers the endpoint's first this many requests, whenever they
    /// come.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub first_requests: u64,
}

fn full() -> f64 {
    1.0
}

fn is_zero_count(n: &u64) -> bool {
    *n == 0
}

impl Outage {
    /// A `status` outage in `[start, end)` with the provider's default status.
    pub fn status(start: Duration, end: Duration) -> Outage {
        Outage {
            start,
            end,
            kind: OutageKind::Status,
            status: None,
            rate: 1.0,
            latency: None,
            first_requests: 0,
        }
    }

    /// Whether `at` (from the start of the run) falls in the window.
    pub fn covers(&self, at: Duration) -> bool {
        self.start <= at && at < self.end
    }
}

/// How a key is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadKeyKind {
    /// The account is out of quota: 429 `insufficient_quota` (Anthropic: 402
    /// `billing_error`).
    QuotaExhausted,
    /// The key was revoked: 401 `invalid_api_key` (Anthropic: `authentication_error`).
    Revoked,
}

impl BadKeyKind {
    /// Whether an API key's text marks it bad this way (see
    /// [`EndpointSpec::bad_key_names`]).
    pub fn named_in(self, api_key: &str) -> bool {
        let lower = api_key.to_ascii_lowercase();
        match self {
            BadKeyKind::Revoked => lower.contains("bad") || lower.contains("revoked"),
            BadKeyKind::QuotaExhausted => lower.contains("quota"),
        }
    }
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

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn key_texts_name_their_index() {
        let mut e = EndpointSpec::named("e");
        e.keys = 3;
        assert_eq!(e.key_index("sk-mock-2"), 2);
        assert_eq!(e.key_index("sk-mock-3"), 0);
        assert_eq!(e.key_index("sk-mock"), 0);
        assert_eq!(e.key_index("1"), 0);
        assert_eq!(e.key_index("sk-test-key-one"), 0);
        assert!(BadKeyKind::Revoked.named_in("sk-ant-REVOKED-1"));
        assert!(BadKeyKind::QuotaExhausted.named_in("sk-Quota"));
        assert!(!BadKeyKind::QuotaExhausted.named_in("sk-bad"));
    }
}
