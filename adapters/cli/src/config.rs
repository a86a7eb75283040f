//! Policy files: the core `Policy` in TOML, optionally on top of a preset.
//!
//! A file may start with `preset = "batch"` (any of the core's presets). The preset's
//! policy is serialised to a TOML table, the rest of the file is deep-merged over it
//! (tables merge key by key, any other value replaces), and the result is deserialised
//! and validated. Every subcommand that reads a policy goes through [`load_policy`].

use std::fmt;
use std::path::Path;

use steadfast_core::policy::{Policy, Preset};

/// Why a policy file could not be used.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyFileError {
    /// The file could not be read.
    Read {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The text is not TOML, or not of the policy's shape.
    Parse {
        /// The parser's message (it names the line or the field).
        message: String,
    },
    /// `preset` names no preset.
    UnknownPreset {
        /// The name given.
        name: String,
    },
    /// A value is out of range (the core's validation).
    Invalid(steadfast_core::error::ConfigError),
}

impl fmt::Display for PolicyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyFileError::Read { path, message } => write!(f, "cannot read {path}: {message}"),
            PolicyFileError::Parse { message } => f.write_str(message.trim_end()),
            PolicyFileError::UnknownPreset { name } => {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                write!(
                    f,
                    "preset: `{name}` is not a preset (one of: {})",
                    names.join(", ")
                )
            }
            PolicyFileError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PolicyFileError {}

/// Reads and parses the policy file at `path`.
pub fn load_policy(path: &Path) -> Result<Policy, PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| PolicyFileError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    policy_from_toml(&text)
}

/// Parses a policy from TOML text, applying a leading `preset = "NAME"`.
pub fn policy_from_toml(text: &str) -> Result<Policy, PolicyFileError> {
    policy_from_toml_on(text, Preset::Standard)
}

/// Like [`policy_from_toml`], with `default` as the base when the file names no preset
/// (`steadfast batch` starts from the `batch` preset).
pub fn policy_from_toml_on(text: &str, default: Preset) -> Result<Policy, PolicyFileError> {
    policy_from_toml_based(text, default, Policy::from)
}

/// Like [`policy_from_toml_on`], with `base` giving the policy a preset stands for
/// (a subcommand may adjust a preset for its own use).
pub fn policy_from_toml_based(
    text: &str,
    default: Preset,
    base: impl Fn(Preset) -> Policy,
) -> Result<Policy, PolicyFileError> {
    let parse = |e: toml::de::Error| PolicyFileError::Parse {
        message: e.to_string(),
    };
    let mut table: toml::Table = toml::from_str(text).map_err(parse)?;
    let (named, own) = match table.remove("preset") {
        None if default == Preset::Standard && base(Preset::Standard) == Policy::default() => {
            (None, None)
        }
        None => (
            Some(toml::Value::String(default.name().to_owned())),
            Some(text.to_owned()),
        ),
        some => (some, without_preset_line(text)),
    };
    let policy = match named {
        None => toml::from_str::<Policy>(text).map_err(parse)?,
        Some(toml::Value::String(name)) => {
            let preset = Preset::from_name(&name).ok_or(PolicyFileError::UnknownPreset { name })?;
            // Check the file's own shape first, so that errors point into it.
            if let Some(own) = own {
                toml::from_str::<Policy>(&own).map_err(parse)?;
            }
            let mut tree =
                toml::Value::try_from(base(preset)).map_err(|e| PolicyFileError::Parse {
                    message: e.to_string(),
                })?;
            merge(&mut tree, toml::Value::Table(table));
            // Read back through text so that any error still names the field.
            let merged = toml::to_string(&tree).map_err(|e| PolicyFileError::Parse {
                message: e.to_string(),
            })?;
            toml::from_str::<Policy>(&merged).map_err(parse)?
        }
        Some(other) => {
            return Err(PolicyFileError::Parse {
                message: format!("preset: expected a string, found {}", other.type_str()),
            });
        }
    };
    policy.validate().map_err(PolicyFileError::Invalid)?;
    Ok(policy)
}

/// `text` with its top-level `preset = ...` line commented out (line numbers kept), or
/// `None` when that line cannot be found by a plain scan (e.g. a quoted key).
fn without_preset_line(text: &str) -> Option<String> {
    let (mut found, mut top) = (false, true);
    let mut out = String::with_capacity(text.len() + 1);
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        top &= !t.starts_with('[');
        let is_preset = t
            .strip_prefix("preset")
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if top && is_preset && !found {
            found = true;
            out.push('#');
        }
        out.push_str(line);
    }
    found.then_some(out)
}

/// Deep-merges `over` into `base`: tables merge key by key, recursively; any other
/// value in `over` replaces the one in `base`.
pub fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn a_preset_is_the_base_and_the_file_wins() {
        let p = policy_from_toml("preset = \"batch\"\n[retry]\nmax_attempts = 3\n").unwrap();
        let mut want = Policy::batch();
        want.retry.max_attempts = 3;
        assert_eq!(p, want);
        assert!(p.retry.hold, "the preset's other fields stay");
        assert_eq!(p.backoff.base, Duration::from_secs(1));
    }

    #[test]
    fn no_preset_means_the_defaults() {
        assert_eq!(policy_from_toml("").unwrap(), Policy::default());
        let p = policy_from_toml("[breaker]\nenabled = false\n").unwrap();
        assert!(!p.breaker.enabled);
    }

    #[test]
    fn errors_name_the_field() {
        let e = policy_from_toml("preset = \"fast\"").unwrap_err();
        assert!(e.to_string().contains("preset: `fast`"), "{e}");
        let e = policy_from_toml("[retry]\nmax_atempts = 3\n").unwrap_err();
        assert!(e.to_string().contains("max_atempts"), "{e}");
        let e = policy_from_toml("preset = \"batch\"\n[retry]\nmax_atempts = 3\n").unwrap_err();
        assert!(e.to_string().contains("max_atempts"), "{e}");
        let e = policy_from_toml("[retry]\nhint_jitter = 3.0\n").unwrap_err();
        assert!(e.to_string().starts_with("retry.hint_jitter"), "{e}");
    }

    #[test]
    fn merge_is_deep() {
        let mut base: toml::Value = toml::from_str("[a]\nx = 1\ny = 2\n[b]\nz = 3\n").unwrap();
        let over: toml::Value = toml::from_str("[a]\ny = 5\n[c]\nw = 1\n").unwrap();
        merge(&mut base, over);
        let want: toml::Value =
            toml::from_str("[a]\nx = 1\ny = 5\n[b]\nz = 3\n[c]\nw = 1\n").unwrap();
        assert_eq!(base, want);
    }
}
