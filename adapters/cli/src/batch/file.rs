//! The `--config` file of `steadfast batch`: the policy (as `steadfast sim` reads it,
//! on top of the `batch` preset unless the file names another) plus `[[endpoint]]`
//! tables.
//!
//! ```toml
//! preset = "batch"            # the default for `steadfast batch`
//!
//! [retry]
//! max_attempts = 6
//!
//! [[endpoint]]
//! name = "primary"            # optional: shown in progress and summary [default: provider]
//! priority = 0                # lower is preferred; equal priorities share the load
//! provider = "openai"         # or "anthropic"
//! base_url = "https://api.openai.com"
//! keys_env = ["OPENAI_KEY_1", "OPENAI_KEY_2"]   # names of variables, never keys
//! model = "gpt-4o-mini"       # optional: forced into every request
//! rpm = 500                   # optional: this endpoint's own limits
//! tpm = 200000
//! share_breaker = true        # optional: with [shared], share its breaker's "open until"
//!
//! [shared]                    # optional: limits shared with other processes
//! redis = "redis://127.0.0.1:6379"   # each `rpm` is then the total of all of them
//! breaker = true              # optional: every endpoint's breaker "open until" too
//!
//! [[endpoint]]
//! priority = 1
//! provider = "anthropic"
//! base_url = "https://api.anthropic.com"
//! keys_env = ["ANTHROPIC_API_KEY"]
//! model = "claude-3-5-haiku-latest"
//! ```

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use steadfast_core::limiter::LimiterConfig;
use steadfast_core::policy::{Policy, Preset};
use steadfast_http::{ApiKey, EndpointDef, Provider};

use crate::config::{PolicyFileError, policy_from_toml_based};
use crate::shared::SharedEntry;

/// The default policy of `steadfast batch`: the `batch` preset.
pub fn default_policy() -> Policy {
    Policy::batch()
}

/// One `[[endpoint]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointEntry {
    /// The name progress lines and the summary show [default: the provider's name].
    #[serde(default)]
    pub name: Option<String>,
    /// Lower is preferred.
    #[serde(default)]
    pub priority: u8,
    /// `openai` (default) or `anthropic`.
    #[serde(default)]
    pub provider: Provider,
    /// The API root, with or without `/v1`.
    pub base_url: String,
    /// Names of the environment variables holding the keys (rotated).
    pub keys_env: Vec<String>,
    /// Forced into every request's `model` field.
    #[serde(default)]
    pub model: Option<String>,
    /// Requests per minute for this endpoint.
    #[serde(default)]
    pub rpm: Option<u32>,
    /// Tokens per minute for this endpoint.
    #[serde(default)]
    pub tpm: Option<u64>,
    /// With `[shared]`: whether its breaker's "open until" is shared with the other
    /// processes [default: `[shared] breaker`].
    #[serde(default)]
    pub share_breaker: Option<bool>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchFile {
    /// The policy.
    pub policy: Policy,
    /// The endpoints, in file order.
    pub endpoints: Vec<EndpointEntry>,
    /// The `[shared]` table's Redis, when limits are shared with other processes.
    pub shared: Option<SharedEntry>,
}

/// Why a config file cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum FileError {
    /// The policy part (or the file as a whole).
    Policy(PolicyFileError),
    /// An `[[endpoint]]` table (1-based index).
    Endpoint {
        /// Which one.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Policy(e) => e.fmt(f),
            FileError::Endpoint { index, message } => {
                write!(f, "endpoint {index}: {}", message.trim_end())
            }
        }
    }
}

impl std::error::Error for FileError {}

/// Reads the file at `path`.
pub fn load(path: &Path) -> Result<BatchFile, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        FileError::Policy(PolicyFileError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    })?;
    from_toml(&text)
}

/// Parses the file's text.
pub fn from_toml(text: &str) -> Result<BatchFile, FileError> {
    from_toml_with(text, Preset::Batch, Policy::from, &[]).map(|(file, _)| file)
}

/// Parses a file that also holds the top-level tables named in `own` (a subcommand's
/// own sections, such as `serve`'s `[gateway]` and `[[route]]`): they are returned,
/// untouched, beside the policy (on top of `default` unless the file names a preset;
/// `base` gives the policy a preset stands for) and the endpoints.
pub fn from_toml_with(
    text: &str,
    default: Preset,
    base: impl Fn(Preset) -> Policy,
    own: &[&str],
) -> Result<(BatchFile, toml::Table), FileError> {
    let parse = |message: String| FileError::Policy(PolicyFileError::Parse { message });
    let mut table: toml::Table = toml::from_str(text).map_err(|e| parse(e.to_string()))?;
    let mut taken = toml::Table::new();
    for name in own {
        if let Some(v) = table.remove(*name) {
            taken.insert((*name).to_owned(), v);
        }
    }
    let shared = table.remove("shared").map(crate::shared::split).transpose();
    let shared = shared.map_err(|message| FileError::Policy(PolicyFileError::Parse { message }))?;
    let endpoints = match table.remove("endpoint") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => endpoint_entries(items)?,
        Some(_) => return Err(parse("endpoint: expected [[endpoint]] tables".to_owned())),
    };
    // Parse the policy from the text with the other tables commented out, so that
    // its errors keep their line numbers; fall back to the table for inline forms.
    let mut blanked = text.to_owned();
    const TAKEN: [&str; 2] = ["endpoint", "shared"];
    for name in own.iter().copied().chain(TAKEN) {
        blanked = blank_section(&blanked, name);
    }
    let still = toml::from_str::<toml::Table>(&blanked)
        .is_ok_and(|t| own.iter().chain(&TAKEN).any(|n| t.contains_key(*n)));
    let policy_text = match still {
        true => toml::to_string(&table).map_err(|e| parse(e.to_string()))?,
        false => blanked,
    };
    let mut policy =
        policy_from_toml_based(&policy_text, default, base).map_err(FileError::Policy)?;
    let shared = shared.and_then(|(entry, config)| {
        policy.shared = config;
        entry
    });
    Ok((
        BatchFile {
            policy,
            endpoints,
            shared,
        },
        taken,
    ))
}

fn endpoint_entries(items: Vec<toml::Value>) -> Result<Vec<EndpointEntry>, FileError> {
    let entry = |(i, item): (usize, toml::Value)| {
        item.try_into()
            .map_err(|e: toml::de::Error| FileError::Endpoint {
                index: i + 1,
                message: e.to_string(),
            })
    };
    items.into_iter().enumerate().map(entry).collect()
}

/// `text` with every table headed `[name]`, `[name.*]`, `[[name]]` or `[[name.*]]`
/// commented out, line numbers kept.
fn blank_section(text: &str, name: &str) -> String {
    let mut inside = false;
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(header) = t.strip_prefix('[') {
            let header = header.trim_start_matches('[').trim_start();
            let first = header
                .split(['.', ']'])
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            inside = first == name;
        }
        if inside {
            out.push('#');
        }
        out.push_str(line);
    }
    out
}

impl EndpointEntry {
    /// The endpoint with its keys read from the environment through `env`; `policy`
    /// gives the limiter this endpoint's `rpm`/`tpm` refine. `index` is 1-based.
    pub fn resolve(
        &self,
        index: usize,
        policy: &Policy,
        env: &dyn Fn(&str) -> Option<ApiKey>,
    ) -> Result<EndpointDef, FileError> {
        let fail = |message: String| FileError::Endpoint { index, message };
        if self.keys_env.is_empty() {
            return Err(fail(
                "keys_env: name at least one environment variable".into(),
            ));
        }
        let mut keys = Vec::with_capacity(self.keys_env.len());
        for var in &self.keys_env {
            let key = env(var).ok_or_else(|| {
                fail(format!(
                    "keys_env: environment variable {var} is not set (or empty)"
                ))
            })?;
            keys.push(key);
        }
        let mut def = EndpointDef::new(self.base_url.clone(), self.provider, "")
            .keys(keys)
            .priority(self.priority);
        if let Some(n) = &self.name {
            def = def.name(n.clone());
        }
        if let Some(m) = &self.model {
            def = def.model(m.clone());
        }
        if let Some(share) = self.share_breaker {
            def = def.share_breaker(share);
        }
        if self.rpm.is_some() || self.tpm.is_some() {
            let mut l: LimiterConfig = policy.limiter.clone();
            if self.rpm.is_some() {
                l.requests = self.rpm;
            }
            if self.tpm.is_some() {
                l.tokens = self.tpm;
            }
            def = def.limiter(l);
        }
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "[retry]\nmax_attempts = 3\n\n[[endpoint]]\nbase_url = \"http://a\"\n\
                        keys_env = [\"K1\", \"K2\"]\nrpm = 10\n\n[[endpoint]]\npriority = 1\n\
                        name = \"backup\"\n\
                        provider = \"anthropic\"\nbase_url = \"http://b\"\nkeys_env = [\"K3\"]\n\
                        model = \"m\"\n\n[breaker]\nenabled = false\n";

    #[test]
    fn endpoints_beside_a_batch_policy() {
        let f = from_toml(FILE).unwrap();
        let mut want = default_policy();
        want.retry.max_attempts = 3;
        want.breaker.enabled = false;
        assert_eq!(f.policy, want);
        assert_eq!(f.endpoints.len(), 2);
        assert_eq!(f.endpoints[1].provider, Provider::Anthropic);
        assert_eq!(f.endpoints[0].rpm, Some(10));
        assert_eq!(f.endpoints[0].name, None);
        assert_eq!(f.endpoints[1].name.as_deref(), Some("backup"));
        let env = |v: &str| (v != "K3").then(|| ApiKey::new(format!("secret-{v}")));
        let d = f.endpoints[0].resolve(1, &f.policy, &env).unwrap();
        assert_eq!(d.keys.len(), 2);
        assert_eq!(d.limiter.as_ref().unwrap().requests, Some(10));
        let e = f.endpoints[1].resolve(2, &f.policy, &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "endpoint 2: keys_env: environment variable K3 is not set (or empty)"
        );
        assert!(!format!("{d:?}").contains("secret"));
    }

    #[test]
    fn no_endpoints_and_other_presets() {
        let f = from_toml("").unwrap();
        assert_eq!(f.policy, default_policy());
        assert!(f.policy.budget.enabled && f.policy.retry.hold);
        assert!(f.endpoints.is_empty());
        let f = from_toml("preset = \"batch\"\n[budget]\nenabled = true\n").unwrap();
        assert_eq!(f.policy, Policy::batch());
        let f = from_toml(
            "preset = \"interactive\"\n[[endpoint]]\nbase_url=\"http://a\"\nkeys_env=[\"A\"]\n",
        )
        .unwrap();
        assert_eq!(f.policy, Policy::interactive());
        let inline =
            from_toml("endpoint = [{base_url = \"http://a\", keys_env = [\"A\"]}]\n").unwrap();
        assert_eq!(inline.endpoints.len(), 1);
        assert_eq!(inline.endpoints[0].share_breaker, None);
        let own = from_toml(
            "[[endpoint]]\nbase_url=\"http://a\"\nkeys_env=[\"A\"]\nshare_breaker=false\n",
        )
        .unwrap();
        let env = |_: &str| Some(ApiKey::new("k".to_owned()));
        let def = own.endpoints[0].resolve(1, &own.policy, &env).unwrap();
        assert_eq!(def.share_breaker, Some(false));
    }

    #[test]
    fn errors_name_the_field() {
        let e = from_toml("[[endpoint]]\nbase_url = \"x\"\nkeys = [\"sk-1\"]\n").unwrap_err();
        assert!(e.to_string().starts_with("endpoint 1: "), "{e}");
        assert!(e.to_string().contains("keys"), "{e}");
        let e = from_toml("[[endpoint]]\nbase_url = \"x\"\nkeys_env = []\nprovider = \"azure\"\n")
            .unwrap_err();
        assert!(e.to_string().contains("azure"), "{e}");
        let e = from_toml("[retry]\nmax_atempts = 1\n[[endpoint]]\nbase_url=\"x\"\nkeys_env=[]\n")
            .unwrap_err();
        assert!(e.to_string().contains("max_atempts"), "{e}");
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = from_toml("preset = \"fast\"").unwrap_err();
        assert!(e.to_string().contains("fast"), "{e}");
    }
}
