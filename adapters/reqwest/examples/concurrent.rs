//! Many calls at once through one client: its clones share the engine, so the limiter
//! paces them under the provider's limits (learned from its rate-limit headers, or set
//! here) and 429s wait as long as the server asks. Key from `OPENAI_API_KEY`.

use serde_json::json;
use steadfast_reqwest::{Client, EndpointDef, LimiterConfig, Provider};
use tokio::task::JoinSet;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com".into());
    let mut limits = LimiterConfig::default();
    limits.requests = Some(500); // per minute
    let client = Client::builder()
        .endpoint(
            EndpointDef::from_env(base, Provider::OpenAi)
                .model("gpt-4o-mini")
                .limiter(limits),
        )
        .build()?;
    let mut calls = JoinSet::new();
    for i in 0..200 {
        let client = client.clone();
        calls.spawn(async move {
            let request = json!({"messages": [{"role": "user", "content": format!("Say {i}.")}]});
            (i, client.chat_with(&format!("line-{i}"), request).await)
        });
    }
    while let Some(done) = calls.join_next().await {
        match done? {
            (i, Ok(reply)) => println!("{i}: {}", reply.text().unwrap_or_default()),
            (i, Err(e)) => eprintln!("{i}: {e}"),
        }
    }
    let m = client.metrics();
    println!(
        "{} attempts, {} retries, {} failovers",
        m.attempts, m.retries, m.failovers
    );
    Ok(())
}
