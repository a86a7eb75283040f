//! Sends one chat request with the default policy and prints the JSON body, or the
//! typed error (exit status 1).
//!
//! ```text
//! STEADFAST_API_KEY=sk-... cargo run -p steadfast-ureq --example chat -- \
//!     --base-url https://api.openai.com --provider openai --model gpt-4o-mini [--message "Hi"]
//! ```
//!
//! The key comes from `STEADFAST_API_KEY`, else `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`
//! by provider.

use std::process::ExitCode;

use steadfast_http::example::{ChatArgs, USAGE};
use steadfast_ureq::Client;

fn main() -> ExitCode {
    let args = match ChatArgs::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let client = match args.endpoint().and_then(|e| {
        Client::builder()
            .endpoint(e)
            .build()
            .map_err(|e| e.to_string())
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match client.chat(args.request()) {
        Ok(reply) => {
            println!("{:#}", reply.body);
            eprintln!("attempts: {}", reply.attempts);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("{e:?}");
            ExitCode::FAILURE
        }
    }
}
