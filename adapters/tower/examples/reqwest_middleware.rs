//! A `reqwest_middleware::ClientWithMiddleware` with steadfast's middleware (rig takes
//! such a client as its HTTP client). Do not add `reqwest-retry` beside it.
//!
//! ```text
//! cargo run -p steadfast-tower --features reqwest-middleware --example reqwest_middleware
//! ```
//!
//! It starts steadfast-mock's `ratelimit` scenario on 127.0.0.1, makes 20 calls, and
//! prints each answer and what the server saw.

use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Provider, SteadfastMiddleware};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = MockConfig::builtin("ratelimit")?;
    config.knobs.rpm = Some(600);
    config.knobs.rate_burst = Some(2);
    let server = MockServer::start(config)?;
    let steadfast = Client::builder()
        .endpoint(EndpointDef::new(
            server.base_url(),
            Provider::OpenAi,
            "sk-example",
        ))
        .build()?;
    let http = reqwest_middleware::ClientBuilder::new(reqwest13::Client::new())
        .with(SteadfastMiddleware::new(&steadfast))
        .build();
    let url = format!("{}/v1/chat/completions", server.base_url());
    for i in 0..20 {
        let body = serde_json::json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": format!("hello {i}")}]
        });
        let reply: serde_json::Value = http.post(&url).json(&body).send().await?.json().await?;
        println!("{}", reply["choices"][0]["message"]["content"]);
    }
    let s = server.stats();
    println!(
        "server: {} requests, {:?}, early {}",
        s.total_requests, s.by_status, s.early
    );
    Ok(())
}
