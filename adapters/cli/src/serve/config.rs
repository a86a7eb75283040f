//! The `--config` file of `steadfast serve`: the policy and `[[endpoint]]` tables as
//! `steadfast batch` reads them (on top of the `standard` preset unless the file names
//! another), plus the gateway's own `[gateway]` table and `[[route]]` tables.
//!
//! ```toml
//! [gateway]
//! keys_env = ["STEADFAST_GATEWAY_KEY"]  # the keys clients send (never the providers')
//! grace = "10s"                         # how long SIGTERM lets in-flight requests finish
//! max_request_body = 4194304            # bytes
//! replay_for = "10m"                    # how long a success is replayed to its key
//!
//! [[endpoint]]
//! name = "openai"
//! provider = "openai"
//! base_url = "https://api.openai.com"
//! keys_env = ["OPENAI_API_KEY"]
//! model = "gpt-4o-mini"
//!
//! [[endpoint]]
//! name = "claude"
//! priority = 1
//! provider = "anthropic"
//! base_url = "https://api.anthropic.com"
//! keys_env = ["ANTHROPIC_API_KEY"]
//! model = "claude-3-5-haiku-latest"
//!
//! [[route]]                             # what clients ask for → where it may go
//! model = "gpt-4o-mini"
//! endpoints = ["openai", "claude"]      # tried in their priority order
//! ```

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use steadfast_core::duration::serde_human;
use steadfast_core::policy::{Policy, Preset};

use crate::batch::file::{self, EndpointEntry, FileError};
use crate::config::PolicyFileError;

/// The `[gateway]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Names of the environment variables holding the keys clients authenticate with
    /// (`Authorization: Bearer KEY` or `x-api-key: KEY`). None: no authentication, and
    /// the gateway binds only loopback addresses.
    pub keys_env: Vec<String>,
    /// How long in-flight requests may run on after SIGINT/SIGTERM.
    #[serde(with = "serde_human")]
    pub grace: Duration,
    /// The largest request body accepted, in bytes.
    pub max_request_body: u64,
    /// How long a success is kept and replayed to a request with the same
    /// `Idempotency-Key` (zero: only concurrent requests share one).
    #[serde(with = "serde_human")]
    pub replay_for: Duration,
    /// The most stored successes kept for replay (the oldest go first).
    pub replay_entries: usize,
}

impl Default for GatewayConfig {
    fn default() -> GatewayConfig {
        GatewayConfig {
            keys_env: Vec::new(),
            grace: Duration::from_secs(10),
            max_request_body: 4 * 1024 * 1024,
            replay_for: Duration::from_secs(600),
            replay_entries: 10_000,
        }
    }
}

impl GatewayConfig {
    /// Checks the values; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_request_body == 0 {
            return Err("gateway.max_request_body: must be at least 1".into());
        }
        if self.grace > Duration::from_secs(3600) {
            return Err("gateway.grace: at most 1h".into());
        }
        Ok(())
    }
}

/// One `[[route]]` table: a model name clients ask for, and the endpoints (by name)
/// that may serve it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// The model name in the client's request.
    pub model: String,
    /// The endpoints' names, at least one.
    pub endpoints: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeFile {
    /// The policy (the `standard` preset unless the file names another).
    pub policy: Policy,
    /// The endpoints, in file order.
    pub endpoints: Vec<EndpointEntry>,
    /// The `[gateway]` table.
    pub gateway: GatewayConfig,
    /// The routes, in file order.
    pub routes: Vec<RouteEntry>,
    /// The `[shared]` table's Redis, when limits are shared with other replicas.
    pub shared: Option<crate::shared::SharedEntry>,
}

/// Why the file cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum ServeFileError {
    /// The policy or an endpoint.
    File(FileError),
    /// The `[gateway]` table.
    Gateway(String),
    /// A `[[route]]` table (1-based index).
    Route {
        /// Which one.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for ServeFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeFileError::File(e) => e.fmt(f),
            ServeFileError::Gateway(m) => write!(f, "gateway: {}", m.trim_end()),
            ServeFileError::Route { index, message } => {
                write!(f, "route {index}: {}", message.trim_end())
            }
        }
    }
}

impl std::error::Error for ServeFileError {}

/// Reads the file at `path`.
pub fn load(path: &Path) -> Result<ServeFile, ServeFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ServeFileError::File(FileError::Policy(PolicyFileError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        }))
    })?;
    from_toml(&text)
}

/// The gap between two events of a stream after which the gateway ends it, unless the
/// file sets `retry.stall_timeout`: a stream that keeps producing is never cut for its
/// length, one that goes silent is.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The policy a preset stands for in a gateway: the preset with [`STALL_TIMEOUT`].
pub fn base_policy(preset: Preset) -> Policy {
    let mut p = Policy::from(preset);
    p.retry.stall_timeout = p.retry.stall_timeout.or(Some(STALL_TIMEOUT));
    p
}

/// Parses the file's text.
pub fn from_toml(text: &str) -> Result<ServeFile, ServeFileError> {
    let own = ["gateway", "route"];
    let (f, mut own) = file::from_toml_with(text, Preset::Standard, base_policy, &own)
        .map_err(ServeFileError::File)?;
    let gateway = match own.remove("gateway") {
        None => GatewayConfig::default(),
        Some(v) => v
            .try_into()
            .map_err(|e: toml::de::Error| ServeFileError::Gateway(e.to_string()))?,
    };
    gateway.validate().map_err(ServeFileError::Gateway)?;
    let routes = match own.remove("route") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => route_entries(items)?,
        Some(_) => {
            return Err(ServeFileError::Route {
                index: 1,
                message: "expected [[route]] tables".into(),
            });
        }
    };
    Ok(ServeFile {
        policy: f.policy,
        endpoints: f.endpoints,
        gateway,
        routes,
        shared: f.shared,
    })
}

fn route_entries(items: Vec<toml::Value>) -> Result<Vec<RouteEntry>, ServeFileError> {
    let entry = |(i, item): (usize, toml::Value)| {
        let index = i + 1;
        let route: RouteEntry =
            item.try_into()
                .map_err(|e: toml::de::Error| ServeFileError::Route {
                    index,
                    message: e.to_string(),
                })?;
        if route.endpoints.is_empty() {
            return Err(ServeFileError::Route {
                index,
                message: "endpoints: name at least one endpoint".into(),
            });
        }
        Ok(route)
    };
    items.into_iter().enumerate().map(entry).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
[retry]
max_attempts = 5

[gateway]
keys_env = [\"GW\"]
grace = \"3s\"

[[endpoint]]
name = \"a\"
base_url = \"http://127.0.0.1:1\"
keys_env = [\"K\"]
model = \"m-a\"

[[route]]
model = \"fast\"
endpoints = [\"a\"]
";

    #[test]
    fn the_file_has_a_policy_endpoints_a_gateway_and_routes() {
        let f = from_toml(FILE).unwrap();
        assert_eq!(f.policy.retry.max_attempts, 5);
        assert_eq!(f.endpoints.len(), 1);
        assert_eq!(f.gateway.keys_env, ["GW"]);
        assert_eq!(f.gateway.grace, Duration::from_secs(3));
        assert_eq!(f.gateway.replay_for, GatewayConfig::default().replay_for);
        assert_eq!(f.routes[0].model, "fast");
        assert!(
            !f.policy.retry.hold,
            "the standard preset underneath, not batch"
        );
    }

    #[test]
    fn errors_name_the_table_and_the_field() {
        let e = from_toml("[gateway]\ngrace = \"soon\"\n").unwrap_err();
        assert!(e.to_string().starts_with("gateway: "), "{e}");
        let e = from_toml("[gateway]\nkey_env = []\n").unwrap_err();
        assert!(e.to_string().contains("key_env"), "{e}");
        let e = from_toml("[[route]]\nmodel = \"x\"\nendpoints = []\n").unwrap_err();
        assert!(e.to_string().starts_with("route 1: endpoints"), "{e}");
        let e = from_toml("[[route]]\nmodel = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("endpoints"), "{e}");
        let e = from_toml("[retry]\nmax_atempts = 3\n[gateway]\ngrace = \"1s\"\n").unwrap_err();
        assert!(e.to_string().contains("max_atempts"), "{e}");
        let e = from_toml("[gateway]\nmax_request_body = 0\n").unwrap_err();
        assert!(e.to_string().contains("max_request_body"), "{e}");
    }
}
