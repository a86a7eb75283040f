//! `steadfast`: the command-line face of steadfast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;
mod config;

/// steadfast: LLM API calls that survive rate limits, overloads, outages and bad keys.
#[derive(Debug, Parser)]
#[command(name = "steadfast", version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate a policy against a fault scenario in virtual time.
    Sim(cli::sim::SimArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Sim(a) => cli::sim::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            ExitCode::FAILURE
        }
    }
}
