//! The subcommands, one module each.

pub mod batch;
pub mod mock;
pub mod sim;

/// Reads a human duration flag (`500ms`, `2s`, `1m30s`).
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    steadfast_core::duration::parse(s.as_bytes())
        .ok_or_else(|| format!("`{s}` is not a duration (e.g. 500ms, 2s, 1m30s)"))
}
