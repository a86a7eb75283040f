//! The server's configuration: a scenario, a seed, a script, and the knobs that
//! override the scenario's fields.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use steadfast_upstream::scenario::ToolUse;
use steadfast_upstream::{Fault, Knobs, Scenario, ScriptError, UpstreamConfig, builtin};

/// The server's configuration. Build it with [`MockConfig::new`],
/// [`MockConfig::builtin`] or `Default` and change the fields you need.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// The world every request not claimed by the script meets. Default: the built-in
    /// `ok`.
    pub scenario: Scenario,
    /// The seed of every random draw. Default: 0.
    pub seed: u64,
    /// Faults consumed one per API request, in arrival order, before the scenario
    /// applies. Default: empty.
    pub script: Vec<Fault>,
    /// The port to bind on 127.0.0.1; 0 picks a free one. Default: 0.
    pub port: u16,
    /// Overrides of the scenario's fields (`--rpm`, `--outage-for`, …). Default: none.
    pub knobs: Knobs,
    /// See [`UpstreamConfig::max_keys`]. Default: 100 000.
    pub max_keys: usize,
    /// Worker threads of the server's own runtime ([`crate::MockServer::start`]);
    /// 0: as many as the machine has cores, at most 4. Default: 2.
    pub worker_threads: usize,
    /// See [`UpstreamConfig::strict`]: request bodies the real APIs would refuse get
    /// their 400. Default: on.
    pub strict: bool,
}

impl Default for MockConfig {
    fn default() -> MockConfig {
        MockConfig::new(builtin::scenario("ok").unwrap_or_else(Scenario::healthy))
    }
}

/// A scenario name that is neither a built-in nor a readable scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScenario(pub String);

impl fmt::Display for UnknownScenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = builtin::names().collect();
        write!(
            f,
            "unknown scenario `{}` (expected one of: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownScenario {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    scenario: Option<String>,
    seed: Option<u64>,
    port: Option<u16>,
    max_keys: Option<usize>,
    strict: Option<bool>,
    fault_rate: Option<f64>,
    outage_for_ms: Option<u64>,
    outage_requests: Option<u64>,
    outage_status: Option<u16>,
    rpm: Option<u64>,
    rate_burst: Option<u64>,
    latency_min_ms: Option<u64>,
    latency_max_ms: Option<u64>,
    retry_after_ms: Option<u64>,
    stream_cut_after: Option<u32>,
    key_rules: Option<bool>,
    time_scale: Option<f64>,
    tool_use: Option<ToolUse>,
    #[serde(default)]
    fault: Vec<toml::Table>,
}

impl MockConfig {
    /// The default configuration with this scenario.
    pub fn new(scenario: Scenario) -> MockConfig {
        MockConfig {
            scenario,
            seed: 0,
            script: Vec::new(),
            port: 0,
            knobs: Knobs::default(),
            max_keys: 100_000,
            worker_threads: 2,
            strict: true,
        }
    }

    /// The default configuration with the built-in scenario `name`.
    pub fn builtin(name: &str) -> Result<MockConfig, UnknownScenario> {
        builtin::scenario(name)
            .map(MockConfig::new)
            .ok_or_else(|| UnknownScenario(name.to_owned()))
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

    /// Reads a configuration file over the defaults (see [`MockConfig::apply_toml_str`]).
    pub fn from_toml_str(text: &str) -> Result<MockConfig, ScriptError> {
        let mut config = MockConfig::default();
        config.apply_toml_str(text)?;
        Ok(config)
    }

    /// Applies a configuration file over this configuration: the keys it has replace
    /// fields, its faults are appended. Every key is optional; durations are integer
    /// milliseconds; `scenario` names a built-in; `[[fault]]` entries (see
    /// [`Fault::script_from_toml`]) make the script.
    ///
    /// ```toml
    /// scenario = "flaky"        # a built-in
    /// seed = 42
    /// port = 0
    /// fault_rate = 0.3          # the knobs: see Knobs
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
    /// time_scale = 1.0
    /// max_keys = 100000
    /// strict = true             # refuse bodies the real APIs refuse
    /// tool_use = "auto"         # answer requests offering tools with a tool call
    ///
    /// [[fault]]
    /// kind = "status"
    /// status = 429
    /// retry_after = "2"
    /// ```
    pub fn apply_toml_str(&mut self, text: &str) -> Result<(), ScriptError> {
        let file: FileConfig =
            toml::from_str(text).map_err(|e| ScriptError::whole(e.to_string()))?;
        self.knobs = self.knobs.overridden(&file.knobs());
        if let Some(name) = file.scenario {
            self.scenario = builtin::scenario(&name)
                .ok_or_else(|| ScriptError::whole(UnknownScenario(name).to_string()))?;
        }
        set(&mut self.seed, file.seed);
        set(&mut self.port, file.port);
        set(&mut self.max_keys, file.max_keys);
        set(&mut self.strict, file.strict);
        self.script
            .extend(steadfast_upstream::faults_from_toml_tables(file.fault)?);
        self.validate().map_err(ScriptError::whole)
    }

    /// The scenario the server runs: [`MockConfig::scenario`] with the knobs applied.
    pub fn effective_scenario(&self) -> Scenario {
        self.knobs.applied(&self.scenario)
    }

    /// The upstream's own configuration.
    pub fn upstream(&self) -> UpstreamConfig {
        UpstreamConfig {
            seed: self.seed,
            max_keys: self.max_keys,
            down_status: self.knobs.outage_status,
            strict: self.strict,
        }
    }

    /// Checks the fields; the error names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        self.knobs.validate()?;
        for (i, fault) in self.script.iter().enumerate() {
            if let Fault::Status { status, .. } = fault {
                if !(100..=999).contains(status) {
                    return Err(format!(
                        "script entry {}: status {status} is not an HTTP status",
                        i.saturating_add(1)
                    ));
                }
            }
        }
        self.effective_scenario()
            .validate()
            .map_err(|e| format!("scenario {}: {e}", self.scenario.name))
    }
}

impl FileConfig {
    fn knobs(&self) -> Knobs {
        Knobs {
            fault_rate: self.fault_rate,
            outage_for: self.outage_for_ms.map(ms),
            outage_requests: self.outage_requests,
            outage_status: self.outage_status,
            rpm: self.rpm,
            rate_burst: self.rate_burst,
            latency_min: self.latency_min_ms.map(ms),
            latency_max: self.latency_max_ms.map(ms),
            retry_after: self.retry_after_ms.map(ms),
            stream_cut_after: self.stream_cut_after,
            key_rules: self.key_rules.unwrap_or(false),
            time_scale: self.time_scale,
            tool_use: self.tool_use,
        }
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

fn ms(a: u64) -> Duration {
    Duration::from_millis(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_config() {
        let c = MockConfig::from_toml_str(
            "scenario = \"ratelimit\"\nseed = 9\nrpm = 5\noutage_for_ms = 10\n\
             [[fault]]\nkind = \"hang\"\nrepeat = 2\n",
        )
        .unwrap();
        assert_eq!(c.scenario.name, "ratelimit");
        assert_eq!(c.seed, 9);
        assert_eq!(c.knobs.rpm, Some(5));
        assert_eq!(c.knobs.outage_for, Some(Duration::from_millis(10)));
        assert_eq!(c.script, vec![Fault::Hang, Fault::Hang]);
        let limits = c.effective_scenario().endpoints[0].limits.unwrap();
        assert_eq!(limits.requests_per_minute, Some(5));
        assert!(MockConfig::from_toml_str("scenario = \"x\"").is_err());
        assert!(MockConfig::from_toml_str("rpm = 0").is_err());
        assert!(MockConfig::from_toml_str("unknown = 0").is_err());
        let err =
            MockConfig::from_toml_str("[[fault]]\nkind=\"ok\"\n[[fault]]\nkind=1\n").unwrap_err();
        assert_eq!(err.entry, Some(2));
        assert!(MockConfig::builtin("stream_cut").is_ok());
        assert!(
            MockConfig::builtin("nope")
                .unwrap_err()
                .to_string()
                .contains("flaky")
        );
    }
}
