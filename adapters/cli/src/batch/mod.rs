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
mod ledger;
pub mod progress;
mod reader;
pub mod record;
pub mod status;
pub mod store;
pub mod summary;

mod run;

use std::path::PathBuf;

use steadfast_core::policy::Policy;
use steadfast_http::EndpointDef;

pub use run::run;

/// The exit statuses of `steadfast batch`.
pub mod exit {
    /// Every input line was a request and ended (succeeded or failed).
    pub const OK: u8 = 0;
    /// Writing failed mid-run; what was written stays valid (rerun to resume).
    pub const IO: u8 = 1;
    /// Bad arguments, configuration or files, found before any work.
    pub const SETUP: u8 = 2;
    /// The run ended, but some input lines were not requests: each has a `bad_input`
    /// output line (and a dead letter); the good lines ran.
    pub const BAD_INPUT: u8 = 3;
    /// Interrupted by a signal (rerun the same command to finish).
    pub const INTERRUPTED: u8 = 130;
}

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
    /// The endpoints' names for people, by index (see [`steadfast_http::endpoint_names`]).
    pub names: Vec<String>,
    /// Lines are canonical whatever the endpoints speak (`--canonical`); without it,
    /// canonical when they speak more than one API.
    pub canonical: bool,
    /// Lines in flight at once (at least 1).
    pub concurrency: usize,
    /// The client's RNG seed (jitter); from the OS when `None`.
    pub seed: Option<u64>,
    /// How progress is shown.
    pub progress: progress::Mode,
    /// The Redis the endpoints' request limits are shared through, if any.
    pub shared: Option<crate::shared::SharedEntry>,
}

/// Why a batch could not run, or stopped.
#[derive(Debug)]
pub enum RunError {
    /// Bad arguments, configuration or files found before any work ([`exit::SETUP`]).
    Setup(String),
    /// Writing failed mid-run ([`exit::IO`]); what was written stays valid.
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

impl RunError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Setup(_) => exit::SETUP,
            RunError::Io(_) => exit::IO,
        }
    }
}
