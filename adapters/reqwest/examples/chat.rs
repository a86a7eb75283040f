//! Sends one chat request with the default policy and prints the JSON body, or the
//! typed error (exit status 1).
//!
//! ```text
//! STEADFAST_API_KEY=sk-... cargo run -p steadfast-reqwest --example chat -- \
//!     --base-url https://api.openai.com --provider openai --model gpt-4o-mini [--message "Hi"]
//! ```
//!
//! The key comes from `STEADFAST_API_KEY`, else `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`
//! by provider.

use std::process::ExitCode;

use steadfast_http::example::{self, ChatArgs};
use steadfast_reqwest::Client;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match ChatArgs::from_env() {
        Ok(a) => a,
        Err(code) => return code,
    };
    let built = args.endpoint().and_then(|e| {
        Client::builder()
            .endpoint(e)
            .build()
            .map_err(|e| e.to_string())
    });
    match built {
        Ok(client) => example::print_reply(client.chat(args.request()).await),
        Err(e) => example::setup_failed(e),
    }
}
