//! Validation of a scenario, with errors that name the field.

use super::{EndpointSpec, OutageKind, Scenario};
use crate::dist::Dist;

/// Endpoints a scenario may have.
pub const MAX_ENDPOINTS: usize = 64;
/// Keys an endpoint may have.
pub const MAX_KEYS: u16 = 1024;
/// Calls a scenario may make.
pub const MAX_CALLS: u64 = 10_000_000;

/// A scenario that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The text is not TOML of the scenario's shape (the message names line and field).
    Parse {
        /// The TOML parser's message.
        message: String,
    },
    /// A value is out of its range.
    Invalid {
        /// The field's path, e.g. `endpoints[1].faults.rate_429`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl ScenarioError {
    fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl core::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScenarioError::Parse { message } => f.write_str(message.trim_end()),
            ScenarioError::Invalid { field, problem } => write!(f, "{field}: {problem}"),
        }
    }
}

impl std::error::Error for ScenarioError {}

fn fraction(field: String, v: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("{v} is outside [0, 1]"),
        ))
    }
}

impl Scenario {
    /// Checks every field; the error names the first bad one by its path.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let load = &self.load;
        if load.calls == 0 || load.calls > MAX_CALLS {
            return Err(ScenarioError::invalid(
                "load.calls",
                format!("{} is outside [1, {MAX_CALLS}]", load.calls),
            ));
        }
        if !(load.rate.is_finite() && load.rate > 0.0 && load.rate <= 1e6) {
            return Err(ScenarioError::invalid(
                "load.rate",
                format!("{} is outside (0, 1000000]", load.rate),
            ));
        }
        if load.concurrency == 0 {
            return Err(ScenarioError::invalid(
                "load.concurrency",
                "must be greater than zero",
            ));
        }
        if self.report.bucket.is_some_and(|b| b.is_zero()) {
            return Err(ScenarioError::invalid(
                "report.bucket",
                "must be greater than zero",
            ));
        }
        if self.endpoints.is_empty() {
            return Err(ScenarioError::invalid("endpoints", "must not be empty"));
        }
        if self.endpoints.len() > MAX_ENDPOINTS {
            return Err(ScenarioError::invalid(
                "endpoints",
                format!("at most {MAX_ENDPOINTS} are supported"),
            ));
        }
        for (i, e) in self.endpoints.iter().enumerate() {
            check_endpoint(&format!("endpoints[{i}]"), e, load.tokens)?;
            if let Some(j) = self.endpoints.iter().take(i).position(|o| o.name == e.name) {
                return Err(ScenarioError::invalid(
                    format!("endpoints[{i}].name"),
                    format!("`{}` is also the name of endpoints[{j}]", e.name),
                ));
            }
        }
        Ok(())
    }
}

fn check_endpoint(at: &str, e: &EndpointSpec, tokens: u64) -> Result<(), ScenarioError> {
    if e.name.is_empty() {
        return Err(ScenarioError::invalid(
            format!("{at}.name"),
            "must not be empty",
        ));
    }
    if e.keys == 0 || e.keys > MAX_KEYS {
        return Err(ScenarioError::invalid(
            format!("{at}.keys"),
            format!("{} is outside [1, {MAX_KEYS}]", e.keys),
        ));
    }
    let dist = |name: &str, d: &Dist| {
        d.check()
            .map_err(|(f, p)| ScenarioError::invalid(format!("{at}.{name}.{f}"), p))
    };
    dist("latency", &e.latency)?;
    dist("error_latency", &e.error_latency)?;
    dist("event_latency", &e.event_latency)?;
    let f = &e.faults;
    for (name, v) in f.rates() {
        fraction(format!("{at}.faults.{name}"), v)?;
    }
    fraction(format!("{at}.faults.decay"), f.decay)?;
    let sum = f.total();
    if sum > 1.0 + 1e-9 {
        return Err(ScenarioError::invalid(
            format!("{at}.faults"),
            format!("the rates add up to {sum}, more than 1"),
        ));
    }
    if let Some(d) = &f.retry_after {
        dist("faults.retry_after", d)?;
    }
    if let Some(l) = &e.limits {
        check_limits(at, l, tokens)?;
    }
    for (j, o) in e.outages.iter().enumerate() {
        let at = format!("{at}.outages[{j}]");
        if o.start > o.end || (o.start == o.end && o.first_requests == 0) {
            return Err(ScenarioError::invalid(
                format!("{at}.end"),
                "must be later than start",
            ));
        }
        fraction(format!("{at}.rate"), o.rate)?;
        if let Some(status) = o.status.filter(|s| !(100..=599).contains(s)) {
            return Err(ScenarioError::invalid(
                format!("{at}.status"),
                format!("{status} is not an HTTP status"),
            ));
        }
        match (&o.kind, &o.latency) {
            (OutageKind::Slow, None) => {
                return Err(ScenarioError::invalid(
                    format!("{at}.latency"),
                    "is required for kind = \"slow\"",
                ));
            }
            (_, Some(d)) => d
                .check()
                .map_err(|(f, p)| ScenarioError::invalid(format!("{at}.latency.{f}"), p))?,
            _ => {}
        }
    }
    for (j, b) in e.bad_keys.iter().enumerate() {
        if b.key >= e.keys {
            return Err(ScenarioError::invalid(
                format!("{at}.bad_keys[{j}].key"),
                format!(
                    "{} is not a key of this endpoint (it has {})",
                    b.key, e.keys
                ),
            ));
        }
    }
    Ok(())
}

fn check_limits(at: &str, l: &super::ServerLimits, tokens: u64) -> Result<(), ScenarioError> {
    let named = [
        ("requests_per_minute", l.requests_per_minute),
        ("request_burst", l.request_burst),
        ("tokens_per_minute", l.tokens_per_minute),
        ("token_burst", l.token_burst),
        ("input_tokens_per_minute", l.input_tokens_per_minute),
        ("output_tokens_per_minute", l.output_tokens_per_minute),
    ];
    for (name, v) in named {
        if v == Some(0) {
            return Err(ScenarioError::invalid(
                format!("{at}.limits.{name}"),
                "must be greater than zero",
            ));
        }
    }
    for (burst, limit, name) in [
        (l.request_burst, l.requests_per_minute, "request_burst"),
        (l.token_burst, l.tokens_per_minute, "token_burst"),
    ] {
        match (burst, limit) {
            (Some(b), Some(l)) if b > l => {
                return Err(ScenarioError::invalid(
                    format!("{at}.limits.{name}"),
                    format!("{b} is more than the limit per minute ({l})"),
                ));
            }
            (Some(_), None) => {
                return Err(ScenarioError::invalid(
                    format!("{at}.limits.{name}"),
                    "needs the limit per minute it belongs to",
                ));
            }
            _ => {}
        }
    }
    let capacity = l.token_burst.or(l.tokens_per_minute);
    if let Some(cap) = capacity.filter(|&t| t < tokens) {
        let name = match l.token_burst {
            Some(_) => "token_burst",
            None => "tokens_per_minute",
        };
        return Err(ScenarioError::invalid(
            format!("{at}.limits.{name}"),
            format!("{cap} is less than one call's load.tokens ({tokens})"),
        ));
    }
    Ok(())
}
