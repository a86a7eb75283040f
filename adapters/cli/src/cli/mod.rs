//! The subcommands, one module each, and what they share: flags' durations and the
//! scenarios (`sim`, `mock` and `batch --mock` run the same ones).

use std::path::Path;

use steadfast_upstream::{Scenario, builtin};

pub mod batch;
pub mod mock;
pub mod serve;
pub mod sim;

/// Reads a human duration flag (`500ms`, `2s`, `1m30s`).
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    steadfast_core::duration::parse(s.as_bytes())
        .ok_or_else(|| format!("`{s}` is not a duration (e.g. 500ms, 2s, 1m30s)"))
}

/// A built-in scenario by name, else a scenario file (named after the file when it
/// names itself not).
pub fn scenario(which: &str) -> Result<Scenario, String> {
    if let Some(text) = builtin::text(which) {
        return Scenario::from_toml(text).map_err(|e| format!("built-in scenario {which}: {e}"));
    }
    let path = Path::new(which);
    if !path.exists() {
        return Err(format!(
            "unknown scenario `{which}`: {}, and no file {which} exists",
            unknown_builtin(which)
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {which}: {e}"))?;
    let mut scenario = Scenario::from_toml(&text).map_err(|e| format!("{which}: {e}"))?;
    if scenario.name.is_empty() {
        scenario.name = file_stem(path);
    }
    Ok(scenario)
}

/// No built-in has this name: the message lists them.
pub fn unknown_builtin(name: &str) -> String {
    let names: Vec<&str> = builtin::names().collect();
    format!(
        "no built-in scenario named `{name}` (built-ins: {})",
        names.join(", ")
    )
}

/// The built-in scenarios, one a line: the name and what it shows (`sim --list` and
/// `mock --list`).
pub fn scenario_list() -> String {
    builtin::ALL
        .iter()
        .map(|(name, text)| {
            let about = Scenario::from_toml(text)
                .map(|s| s.description)
                .unwrap_or_default();
            format!("{name:<20} {about}\n")
        })
        .collect()
}

/// A file's name without its extension.
pub fn file_stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}
