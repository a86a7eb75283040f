//! The library behind the `steadfast` command: the subcommands (`batch`, `mock`,
//! `serve`, `sim`), the batch runner, its input parser and its durable files, and the
//! gateway.
//!
//! [`input::parse_line`] is the pure JSONL line reader `steadfast batch` uses; fuzz
//! targets call it directly.

#![forbid(unsafe_code)]

pub mod batch;
pub mod cli;
pub mod config;
pub mod input;
pub mod serve;
pub mod shared;
pub mod signal;
