//! `steadfast`: the command-line face of steadfast.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use steadfast_cli::cli;

/// steadfast: LLM API calls that survive rate limits, overloads, outages and bad keys.
#[derive(Debug, Parser)]
#[command(name = "steadfast", version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a JSONL file of requests: one result line per id, exactly once, resumable.
    Batch(cli::batch::BatchArgs),
    /// Serve the fault-injecting mock API on 127.0.0.1 until interrupted.
    Mock(cli::mock::MockArgs),
    /// Serve an OpenAI- and Anthropic-compatible gateway that makes every request survive.
    Serve(cli::serve::ServeArgs),
    /// Simulate a policy against a fault scenario in virtual time.
    Sim(cli::sim::SimArgs),
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.command {
        Command::Batch(a) => ExitCode::from(cli::batch::run(&a)),
        Command::Mock(a) => ExitCode::from(cli::mock::run(&a)),
        Command::Serve(a) => ExitCode::from(cli::serve::run(&a)),
        Command::Sim(a) => match cli::sim::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("steadfast: error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
