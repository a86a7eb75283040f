//! What a call returns when every attempt failed: a cheaper model on another
//! provider, then the last good answer for the same business id, then a fixed reply
//! written once in the canonical (OpenAI) shape. Keys from `OPENAI_API_KEY` and
//! `ANTHROPIC_API_KEY`.

use serde_json::json;
use steadfast_reqwest::{CallOptions, Client, EndpointDef, Fallback, Policy, Provider};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let openai =
        std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com".into());
    let anthropic =
        std::env::var("ANTHROPIC_BASE_URL").unwrap_or_else(|_| "https://api.anthropic.com".into());
    let client = Client::builder()
        .policy(Policy::interactive()) // give up fast, fall back
        .endpoint(EndpointDef::from_env(openai, Provider::OpenAi).model("gpt-4o"))
        .fallback(Fallback::Endpoint(
            EndpointDef::from_env(anthropic, Provider::Anthropic).name("cheap").model("claude-3-5-haiku-latest"),
        ))
        .fallback(Fallback::Stored)
        .fallback(Fallback::Template(json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Please try again in a minute."}}]
        })))
        .build()?;
    let options = CallOptions::new().idempotency_key("order-1234");
    let request = json!({"messages": [{"role": "user", "content": "Summarise order 1234."}]});
    let reply = client.chat_with_options(request, &options).await?;
    match &reply.degraded {
        Some(d) => println!(
            "degraded ({:?} after {}): {:?}",
            d.via,
            d.reason,
            reply.text()
        ),
        None => println!("{:?}", reply.text()),
    }
    Ok(())
}
