//! What the clients' `chat` examples share: their arguments, the key lookup, the
//! request and the printing, so that each example is only its client's build and send.

use std::fmt;
use std::process::ExitCode;

use serde_json::Value;

use crate::{ApiKey, EndpointDef, Provider, Reply};

/// How the examples are called.
pub const USAGE: &str =
    "usage: chat --base-url URL --provider openai|anthropic [--model M] [--message TEXT]";

/// The arguments of a `chat` example.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatArgs {
    /// `--base-url`.
    pub base_url: String,
    /// `--provider`.
    pub provider: Provider,
    /// `--model`.
    pub model: Option<String>,
    /// `--message` (default: a short greeting request).
    pub message: String,
}

impl ChatArgs {
    /// The process's arguments, or the error and [`USAGE`] on stderr and the exit
    /// status to end with.
    pub fn from_env() -> Result<ChatArgs, ExitCode> {
        ChatArgs::parse(std::env::args().skip(1)).map_err(|e| {
            eprintln!("error: {e}\n{USAGE}");
            ExitCode::FAILURE
        })
    }

    /// Reads the flags (the program name already skipped).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<ChatArgs, String> {
        let (mut base_url, mut provider, mut model) = (None, None, None);
        let mut message = "Say hello in five words.".to_owned();
        let mut it = args.into_iter();
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
        Ok(ChatArgs {
            base_url: base_url.ok_or("--base-url is required")?,
            provider: provider.ok_or("--provider openai|anthropic is required")?,
            model,
            message,
        })
    }

    /// The endpoint, its key from `STEADFAST_API_KEY`, else `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY` by provider.
    pub fn endpoint(&self) -> Result<EndpointDef, String> {
        let by_provider = match self.provider {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        };
        let key = ApiKey::from_env("STEADFAST_API_KEY")
            .or_else(|| ApiKey::from_env(by_provider))
            .ok_or("set STEADFAST_API_KEY (or OPENAI_API_KEY / ANTHROPIC_API_KEY)")?;
        let endpoint = EndpointDef::new(self.base_url.clone(), self.provider, key);
        Ok(match &self.model {
            Some(m) => endpoint.model(m.clone()),
            None => endpoint,
        })
    }

    /// The chat request: the message as one user turn.
    pub fn request(&self) -> Value {
        serde_json::json!({
            "max_tokens": 256,
            "messages": [{"role": "user", "content": self.message}],
        })
    }
}

/// A client that could not be set up: the error on stderr, and the exit status.
pub fn setup_failed(e: impl fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
}

/// The reply's JSON body on stdout and its attempts on stderr, or the error (shown and
/// debug-printed) on stderr; the exit status.
pub fn print_reply<E: fmt::Display + fmt::Debug>(result: Result<Reply, E>) -> ExitCode {
    match result {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<ChatArgs, String> {
        ChatArgs::parse(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_are_read_and_required_ones_named() {
        let a = args(&[
            "--base-url",
            "http://127.0.0.1:1",
            "--provider",
            "anthropic",
            "--model",
            "m",
        ])
        .unwrap();
        assert_eq!(
            (a.provider, a.model.as_deref()),
            (Provider::Anthropic, Some("m"))
        );
        assert_eq!(
            args(&["--provider", "openai"]).unwrap_err(),
            "--base-url is required"
        );
        assert!(args(&["--base-url"]).unwrap_err().contains("needs a value"));
        assert!(args(&["--nope"]).unwrap_err().contains("unknown argument"));
    }
}
