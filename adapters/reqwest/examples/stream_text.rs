//! Streaming text: deltas print as they arrive, then the whole message. Attempts are
//! retried until the first event; a cut after it ends the stream with the text so far.
//! Key from `OPENAI_API_KEY`; base URL from `OPENAI_BASE_URL` when set.

use serde_json::json;
use steadfast_reqwest::{Client, EndpointDef, Provider, StreamExt, TextEvent};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com".into());
    let client = Client::builder()
        .endpoint(EndpointDef::from_env(base, Provider::OpenAi).model("gpt-4o-mini"))
        .build()?;
    let request = json!({"messages": [{"role": "user", "content": "Count to ten in words."}]});
    let mut text = client.stream(request).await?.text();
    while let Some(event) = text.next().await {
        match event {
            Ok(TextEvent::Delta(piece)) => print!("{piece}"),
            Ok(TextEvent::Done(message)) => {
                println!(
                    "\nfinish reason: {}",
                    message["choices"][0]["finish_reason"]
                );
            }
            Ok(_) => {}
            Err(e) => eprintln!("\ninterrupted after {:?}: {e}", e.partial()),
        }
    }
    Ok(())
}
