//! The subcommands, one module each.

pub mod sim;
