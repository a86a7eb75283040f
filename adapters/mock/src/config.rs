//! Scenarios and the server configuration.

use crate::fault::{Fault, ScriptError, faults_from_toml_tables};
use serde::Deserialize;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The behaviour applied to every API request that no scripted fault claims.
///
/// Where a scenario draws at random, the draw is a pure function of the seed, the
/// request's identity (its `Idempotency-Key`, or its path and body when it has none)
/// and how many times that identity was seen before, never of arrival order. The
/// failure probability is [`MockConfig::fault_rate`] / 2^k where k counts the
/// identity's failed attempts since its last success (for a keyed request: its
/// attempts so far, as a success is then replayed), so a client that retries 4+ times
/// nearly always gets through, while unkeyed requests with equal bodies keep failing
/// at the full rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scenario {
    /// Every request succeeds.
    #[default]
    Ok,
    /// A seeded mix of retryable failures: 429 with `retry-after`, 500, 502 (an HTML
    /// gateway page), 503, 529 `overloaded_error` (Anthropic; 503 for OpenAI) and an
    /// occasional connection reset.
    Flaky,
    /// 503 (OpenAI) / 529 (Anthropic) for the first [`MockConfig::outage_for`] after
    /// the start and the first [`MockConfig::outage_requests`] requests, then success.
    Outage,
    /// An enforced requests-per-minute limit per API key, with the providers'
    /// rate-limit headers on every answer and 429 with `retry-after` past the limit.
    Ratelimit,
    /// Success after a seeded latency in
    /// [`MockConfig::latency_min`]..=[`MockConfig::latency_max`].
    Slow,
    /// 401 for keys containing `bad` or `revoked`; other keys succeed.
    Auth,
    /// Keys containing `quota` get 429 `insufficient_quota` (OpenAI) / 402
    /// `billing_error` (Anthropic); other keys succeed.
    Quota,
    /// Connection resets after the request was read (work done), mixed with successes.
    Reset,
    /// `200 OK` with a broken JSON body (work done), mixed with successes.
    Malformed,
    /// Requests that are never answered, mixed with successes.
    Hang,
    /// Streams cut after [`MockConfig::stream_cut_after`] events (non-stream requests:
    /// truncated bodies), work done, mixed with successes.
    StreamCut,
}

const ALL: [Scenario; 11] = [
    Scenario::Ok,
    Scenario::Flaky,
    Scenario::Outage,
    Scenario::Ratelimit,
    Scenario::Slow,
    Scenario::Auth,
    Scenario::Quota,
    Scenario::Reset,
    Scenario::Malformed,
    Scenario::Hang,
    Scenario::StreamCut,
];

const NAMES: [&str; 11] = [
    "ok",
    "flaky",
    "outage",
    "ratelimit",
    "slow",
    "auth",
    "quota",
    "reset",
    "malformed",
    "hang",
    "stream-cut",
];

impl Scenario {
    /// The scenario with this name (ASCII case-insensitive; `_` may stand for `-`).
    pub fn from_name(name: &str) -> Option<Scenario> {
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        ALL.iter().copied().find(|s| s.name() == wanted)
    }

    /// Every scenario name, in a stable order.
    pub fn names() -> &'static [&'static str] {
        &NAMES
    }

    /// Every scenario, in the order of [`Scenario::names`].
    pub fn all() -> &'static [Scenario] {
        &ALL
    }

    /// This scenario's name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Ok => "ok",
            Scenario::Flaky => "flaky",
            Scenario::Outage => "outage",
            Scenario::Ratelimit => "ratelimit",
            Scenario::Slow => "slow",
            Scenario::Auth => "auth",
            Scenario::Quota => "quota",
            Scenario::Reset => "reset",
            Scenario::Malformed => "malformed",
            Scenario::Hang => "hang",
            Scenario::StreamCut => "stream-cut",
        }
    }

    /// A one-line description, for help texts.
    pub fn description(self) -> &'static str {
        match self {
            Scenario::Ok => "every request succeeds",
            Scenario::Flaky => {
                "~30% retryable failures (429 with retry-after, 500, 502, 503, 529, resets)"
            }
            Scenario::Outage => "503/529 for the first seconds (default 3 s), then success",
            Scenario::Ratelimit => "enforced requests per minute per key (default 60), 429 past it",
            Scenario::Slow => "200-800 ms latency, then success",
            Scenario::Auth => "401 for keys containing `bad` or `revoked`",
            Scenario::Quota => "insufficient_quota / billing_error for keys containing `quota`",
            Scenario::Reset => "connection resets after the request, mixed with successes",
            Scenario::Malformed => "200 with broken JSON, mixed with successes",
            Scenario::Hang => "requests never answered, mixed with successes",
            Scenario::StreamCut => "streams cut after a few events, mixed with successes",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scenario name that is not one of [`Scenario::names`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScenario(pub String);

impl fmt::Display for UnknownScenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown scenario `{}` (expected one of: {})",
            self.0,
            NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownScenario {}

impl FromStr for Scenario {
    type Err = UnknownScenario;

    fn from_str(s: &str) -> Result<Scenario, UnknownScenario> {
        Scenario::from_name(s).ok_or_else(|| UnknownScenario(s.to_owned()))
    }
}

/// The server's configuration. Build it with [`MockConfig::new`] or `Default` and
/// change the fields you need.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// What happens to requests no scripted fault claims. Default: [`Scenario::Ok`].
    pub scenario: Scenario,
    /// The seed of every random draw. Default: 0.
    pub seed: u64,
    /// Faults consumed one per API request, in arrival order, before the scenario
    /// applies. Default: empty.
    pub script: Vec<Fault>,
    /// The port to bind on 127.0.0.1; 0 picks a free one. Default: 0.
    pub port: u16,
    /// The failure probability of a first attempt in the mixed scenarios (`flaky`,
    /// `reset`, `malformed`, `hang`, `stream-cut`); after k failures in a row the same
    /// identity fails with `fault_rate / 2^k`. Default: 0.3.
    pub fault_rate: f64,
    /// `outage`: how long after the start the outage lasts. Default: 3 s.
    pub outage_for: Duration,
    /// `outage`: the outage also lasts for this many API requests. Default: 0.
    pub outage_requests: u64,
    /// The status of outage answers (the `outage` scenario and
    /// [`crate::MockServer::set_down`]); `None`: 503 for OpenAI paths, 529 for
    /// Anthropic paths. Default: `None`.
    pub outage_status: Option<u16>,
    /// `ratelimit`: requests per minute per API key. Default: 60.
    pub rpm: u32,
    /// `ratelimit`: the bucket size (requests allowed at once); `None`: `rpm`.
    /// Default: `None`.
    pub rate_burst: Option<u32>,
    /// `slow`: the shortest latency. Default: 200 ms.
    pub latency_min: Duration,
    /// `slow`: the longest latency. Default: 800 ms.
    pub latency_max: Duration,
    /// `flaky`: the wait its 429 answers ask for (`retry-after` in whole seconds
    /// rounded up, `retry-after-ms` exact). Default: 1 s.
    pub retry_after: Duration,
    /// `stream-cut`: how many events reach the client before the cut. Default: 2.
    pub stream_cut_after: u32,
    /// Apply the `auth` and `quota` key rules in every scenario, not only in `auth`
    /// and `quota`. Default: false.
    pub key_rules: bool,
    /// The most idempotency keys remembered (stored responses and per-key counters)
    /// and request identities tracked: past it the oldest stored responses are
    /// forgotten, new keys go uncounted in [`crate::Stats::keys`], and the per-identity
    /// attempt counts (and rate-limit buckets) start afresh. Default: 100 000.
    pub max_keys: usize,
    /// Worker threads of the server's own runtime ([`crate::MockServer::start`]);
    /// 0: as many as the machine has cores, at most 4. Default: 2.
    pub worker_threads: usize,
}

impl Default for MockConfig {
    fn default() -> MockConfig {
        MockConfig {
            scenario: Scenario::Ok,
            seed: 0,
            script: Vec::new(),
            port: 0,
            fault_rate: 0.3,
            outage_for: Duration::from_secs(3),
            outage_requests: 0,
            outage_status: None,
            rpm: 60,
            rate_burst: None,
            latency_min: Duration::from_millis(200),
            latency_max: Duration::from_millis(800),
            retry_after: Duration::from_secs(1),
            stream_cut_after: 2,
            key_rules: false,
            max_keys: 100_000,
            worker_threads: 2,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    scenario: Option<String>,
    seed: Option<u64>,
    port: Option<u16>,
    fault_rate: Option<f64>,
    outage_for_ms: Option<u64>,
    outage_requests: Option<u64>,
    outage_status: Option<u16>,
    rpm: Option<u32>,
    rate_burst: Option<u32>,
    latency_min_ms: Option<u64>,
    latency_max_ms: Option<u64>,
    retry_after_ms: Option<u64>,
    stream_cut_after: Option<u32>,
    key_rules: Option<bool>,
    max_keys: Option<usize>,
    #[serde(default)]
    fault: Vec<toml::Table>,
}

impl MockConfig {
    /// The default configuration with this scenario.
    pub fn new(scenario: Scenario) -> MockConfig {
        MockConfig {
            scenario,
            ..MockConfig::default()
        }
    }

    /// This configuration with this seed.
    pub fn with_seed(mut self, seed: u64) -> MockConfig {
        self.seed = seed;
        self
    }

    /// This configuration with these faults appended to the script.
    pub fn with_script(mut self, faults: impl IntoIterator<Item = Fault>) -> MockConfig {
        self.script.extend(faults);
        self
    }

    /// Reads a configuration file: every key is optional (the default stays), durations
    /// are integer milliseconds, and `[[fault]]` entries (see
    /// [`Fault::script_from_toml`]) make the script.
    ///
    /// ```toml
    /// scenario = "flaky"        # any of Scenario::names()
    /// seed = 42
    /// port = 0
    /// fault_rate = 0.3
    /// outage_for_ms = 3000
    /// outage_requests = 0
    /// outage_status = 503
    /// rpm = 60
    /// rate_burst = 60
    /// latency_min_ms = 200
    /// latency_max_ms = 800
    /// retry_after_ms = 1000
    /// stream_cut_after = 2
    /// key_rules = false
    /// max_keys = 100000
    ///
    /// [[fault]]
    /// kind = "status"
    /// status = 429
    /// retry_after = "2"
    /// ```
    pub fn from_toml_str(text: &str) -> Result<MockConfig, ScriptError> {
        let mut config = MockConfig::default();
        config.apply_toml_str(text)?;
        Ok(config)
    }

    /// Applies a configuration file (see [`MockConfig::from_toml_str`]) over this
    /// configuration: the keys it has replace fields, its faults are appended.
    pub fn apply_toml_str(&mut self, text: &str) -> Result<(), ScriptError> {
        let file: FileConfig =
            toml::from_str(text).map_err(|e| ScriptError::whole(e.to_string()))?;
        if let Some(name) = file.scenario {
            self.scenario = Scenario::from_name(&name)
                .ok_or_else(|| ScriptError::whole(UnknownScenario(name).to_string()))?;
        }
        let ms = Duration::from_millis;
        set(&mut self.seed, file.seed);
        set(&mut self.port, file.port);
        set(&mut self.fault_rate, file.fault_rate);
        set(&mut self.outage_for, file.outage_for_ms.map(ms));
        set(&mut self.outage_requests, file.outage_requests);
        if file.outage_status.is_some() {
            self.outage_status = file.outage_status;
        }
        set(&mut self.rpm, file.rpm);
        if file.rate_burst.is_some() {
            self.rate_burst = file.rate_burst;
        }
        set(&mut self.latency_min, file.latency_min_ms.map(ms));
        set(&mut self.latency_max, file.latency_max_ms.map(ms));
        set(&mut self.retry_after, file.retry_after_ms.map(ms));
        set(&mut self.stream_cut_after, file.stream_cut_after);
        set(&mut self.key_rules, file.key_rules);
        set(&mut self.max_keys, file.max_keys);
        self.script.extend(faults_from_toml_tables(file.fault)?);
        self.validate().map_err(ScriptError::whole)
    }

    /// Checks the fields; the error names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.fault_rate) {
            return Err(format!(
                "fault_rate must be within 0..=1, not {}",
                self.fault_rate
            ));
        }
        if self.rpm == 0 {
            return Err("rpm must be at least 1".to_owned());
        }
        if self.rate_burst == Some(0) {
            return Err("rate_burst must be at least 1".to_owned());
        }
        if self.latency_min > self.latency_max {
            return Err("latency_min must not exceed latency_max".to_owned());
        }
        if let Some(status) = self.outage_status {
            if !(100..=999).contains(&status) {
                return Err(format!("outage_status {status} is not an HTTP status"));
            }
        }
        for (i, fault) in self.script.iter().enumerate() {
            if let Fault::Status { status, .. } = fault {
                if !(100..=999).contains(status) {
                    return Err(format!(
                        "script entry {}: status {status} is not an HTTP status",
                        i + 1
                    ));
                }
            }
        }
        Ok(())
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (s, n) in Scenario::all().iter().zip(Scenario::names()) {
            assert_eq!(s.name(), *n);
            assert_eq!(Scenario::from_name(n), Some(*s));
            assert!(!s.description().is_empty());
        }
        assert_eq!(Scenario::from_name("STREAM_CUT"), Some(Scenario::StreamCut));
        assert_eq!(Scenario::from_name("nope"), None);
        assert!(
            "nope"
                .parse::<Scenario>()
                .unwrap_err()
                .to_string()
                .contains("flaky")
        );
    }

    #[test]
    fn toml_config() {
        let c = MockConfig::from_toml_str(
            "scenario = \"ratelimit\"\nseed = 9\nrpm = 5\noutage_for_ms = 10\n\
             [[fault]]\nkind = \"hang\"\nrepeat = 2\n",
        )
        .unwrap();
        assert_eq!(c.scenario, Scenario::Ratelimit);
        assert_eq!(c.seed, 9);
        assert_eq!(c.rpm, 5);
        assert_eq!(c.outage_for, Duration::from_millis(10));
        assert_eq!(c.script, vec![Fault::Hang, Fault::Hang]);
        assert!(MockConfig::from_toml_str("scenario = \"x\"").is_err());
        assert!(MockConfig::from_toml_str("rpm = 0").is_err());
        assert!(MockConfig::from_toml_str("unknown = 0").is_err());
        let err =
            MockConfig::from_toml_str("[[fault]]\nkind=\"ok\"\n[[fault]]\nkind=1\n").unwrap_err();
        assert_eq!(err.entry, Some(2));
    }
}
