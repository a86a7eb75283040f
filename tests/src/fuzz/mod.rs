//! The bodies of the cargo-fuzz targets, on stable: each function takes the fuzzer's
//! bytes and **panics** when a property does not hold (that is how a fuzz target
//! reports). The targets in `fuzz/` are one-line wrappers, and the `corpus` test
//! replays every committed corpus and regression file through the same functions, so
//! the corpora are a regression suite on stable too.

mod body;
mod chat;
mod config;
mod dates;
mod headers;
mod request;

pub use body::error_body;
pub use chat::chat;
pub use config::config;
pub use dates::{duration, retry_after, rfc3339};
pub use headers::ratelimit_headers;
pub use request::request_body;

use crate::harness::{Checks, Harness};
use crate::ops::Scenario;

/// `engine_ops`: the bytes become a [`Scenario`] run through the [`Harness`]; a broken
/// invariant panics with the violation and the operations up to it.
pub fn engine_ops(data: &[u8]) {
    let scenario = Scenario::from_bytes(data);
    if let Err(v) = Harness::run(&scenario, Checks::default()) {
        let upto = v.step.min(scenario.ops.len());
        panic!(
            "{v}\nsetup: {:?}\nops: {:#?}",
            scenario.setup,
            &scenario.ops[..upto]
        );
    }
}

/// A fuzz target's check: panics when a property fails for the input.
pub type Check = fn(&[u8]);

/// Every fuzz target by name, for replaying files.
pub const TARGETS: [(&str, Check); 9] = [
    ("retry_after", retry_after),
    ("ratelimit_headers", ratelimit_headers),
    ("duration", duration),
    ("rfc3339", rfc3339),
    ("error_body", error_body),
    ("config", config),
    ("engine_ops", engine_ops),
    ("request_body", request_body),
    ("chat", chat),
];

/// The wall clocks the parser targets feed the core stay within four-digit years:
/// a two-digit RFC 850 year resolved against a wall clock past about year 4·10^9
/// loops forever in the core (`hints::year_of` compares against the unclamped clock),
/// and is slow from year 10 000 on. Core fix pending; see `core_bugs.rs`.
pub(crate) fn sane_wall_clock(now: u64) -> u64 {
    now % 253_402_300_800
}

/// Splits a leading little-endian `u64` (zero-padded) off `data`.
pub(crate) fn split_u64(data: &[u8]) -> (u64, &[u8]) {
    let n = data.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&data[..n]);
    (u64::from_le_bytes(b), &data[n..])
}

/// Trims ASCII spaces and tabs, as every hint value is trimmed.
pub(crate) fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}
