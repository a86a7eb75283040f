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

use steadfast_ureq::{ApiKey, Client, EndpointDef, Provider};

struct Args {
    base_url: String,
    provider: Provider,
    model: Option<String>,
    message: String,
}

fn parse() -> Result<Args, String> {
    let mut base_url = None;
    let mut provider = None;
    let mut model = None;
    let mut message = "Say hello in five words.".to_owned();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--base-url" => base_url = Some(value()?),
            "--provider" => provider = Some(value()?.parse().map_err(|e| format!("{e}"))?),
            "--model" => model = Some(value()?),
            "--message" => message = value()?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        base_url: base_url.ok_or("--base-url is required")?,
        provider: provider.ok_or("--provider openai|anthropic is required")?,
        model,
        message,
    })
}

fn key(provider: Provider) -> Option<ApiKey> {
    let by_provider = match provider {
        Provider::OpenAi => "OPENAI_API_KEY",
        Provider::Anthropic => "ANTHROPIC_API_KEY",
    };
    ApiKey::from_env("STEADFAST_API_KEY").or_else(|| ApiKey::from_env(by_provider))
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "error: {e}\nusage: chat --base-url URL --provider openai|anthropic [--model M] [--message TEXT]"
            );
            return ExitCode::FAILURE;
        }
    };
    let Some(key) = key(args.provider) else {
        eprintln!("error: set STEADFAST_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY)");
        return ExitCode::FAILURE;
    };
    let mut endpoint = EndpointDef::new(args.base_url, args.provider, key);
    if let Some(m) = args.model {
        endpoint = endpoint.model(m);
    }
    let client = match Client::builder().endpoint(endpoint).build() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let request = serde_json::json!({
        "max_tokens": 256,
        "messages": [{"role": "user", "content": args.message}],
    });
    match client.chat(request) {
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
