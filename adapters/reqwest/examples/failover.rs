//! One request shape across providers: OpenAI first, Anthropic when OpenAI is down.
//! The request is OpenAI's Chat Completions body; for Anthropic it is translated
//! (`system`, `max_tokens`, `stop_sequences`, tools), and the reply comes back as a
//! `chat.completion` whoever served it. Keys from `OPENAI_API_KEY` and
//! `ANTHROPIC_API_KEY`; base URLs from `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL` when set.

use serde_json::json;
use steadfast_reqwest::{Client, EndpointDef, Provider};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.into());
    let client = Client::builder()
        .endpoint(
            EndpointDef::from_env(
                base("OPENAI_BASE_URL", "https://api.openai.com"),
                Provider::OpenAi,
            )
            .name("openai")
            .model("gpt-4o-mini"),
        )
        .endpoint(
            EndpointDef::from_env(
                base("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
                Provider::Anthropic,
            )
            .name("claude")
            .model("claude-3-5-haiku-latest")
            .priority(1), // takes over while the first is down
        )
        .max_retries(3)
        .build()?;
    let reply = client
        .chat(json!({
            "messages": [
                {"role": "system", "content": "Answer in one sentence."},
                {"role": "user", "content": "Why do clients retry with jitter?"}
            ],
            "stop": ["\n\n"]
        }))
        .await?;
    let served = reply
        .served_by()
        .map_or("a fallback", |s| s.endpoint.as_str());
    println!("{} (served by {served})", reply.text().unwrap_or_default());
    if let Some(usage) = reply.usage() {
        println!(
            "{} tokens in, {} out",
            usage.input_tokens, usage.output_tokens
        );
    }
    Ok(())
}
