//! `steadfast batch`: JSONL requests in, JSONL results out, each id exactly once, across
//! crashes and reruns.
//!
//! Three parts run at once:
//!
//! - the **reader** reads the input line by line with [`crate::input::parse_line`],
//!   skips ids an earlier run finished, reports bad lines and hands good ones on;
//! - the **dispatcher** (tokio, on the same thread) runs up to `concurrency` lines at a
//!   time through one
//!   [`steadfast_reqwest::Client`] (`chat_with(id, request)`: every attempt of a line
//!   carries the idempotency key derived from its id, so a rerun reuses it);
//! - the **writer** (a thread) makes finished lines durable in the order documented in
//!   [`store`], then counts them.

pub mod file;
pub mod progress;
mod reader;
pub mod record;
pub mod store;
pub mod summary;

mod run;

use std::path::PathBuf;

use steadfast_core::policy::Policy;
use steadfast_http::EndpointDef;

pub use run::run;

/// Everything a batch needs, resolved from the flags and the config file.
#[derive(Debug, Clone)]
pub struct Options {
    /// The JSONL input.
    pub input: PathBuf,
    /// The output, journal and dead-letter files.
    pub paths: store::Paths,
    /// The policy.
    pub policy: Policy,
    /// The endpoints (at least one).
    pub endpoints: Vec<EndpointDef>,
    /// Lines in flight at once (at least 1).
    pub concurrency: usize,
    /// The client's RNG seed (jitter); from the OS when `None`.
    pub seed: Option<u64>,
    /// How progress is shown.
    pub progress: progress::Mode,
}

/// Why a batch could not run, or stopped.
#[derive(Debug)]
pub enum RunError {
    /// Bad arguments, configuration or files found before any work (exit code 2).
    Setup(String),
    /// Writing failed mid-run (exit code 1); what was written stays valid.
    Io(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Setup(m) | RunError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}
