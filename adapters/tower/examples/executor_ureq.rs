//! Blocking ureq calls through the executor's blocking twin. The agent keeps error
//! responses whole (`http_status_as_error(false)`), so their `Retry-After` and
//! rate-limit headers reach the core.
//!
//! ```text
//! cargo run -p steadfast-tower --features ureq --example executor_ureq
//! ```
//!
//! It starts steadfast-mock's `flaky` scenario on 127.0.0.1, makes 10 calls, and prints
//! each answer and what the server saw.

use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Provider};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::builtin("flaky")?)?;
    let steadfast = Client::builder()
        .endpoint(EndpointDef::new(
            server.base_url(),
            Provider::OpenAi,
            "sk-example",
        ))
        .build()?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for i in 0..10 {
        let body = serde_json::json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": format!("hello {i}")}]
        })
        .to_string();
        let mut reply = steadfast.run_blocking(|a| {
            let mut request = agent
                .post(&a.url)
                .config()
                .timeout_global(Some(a.timeout))
                .build();
            for (name, value) in &a.headers {
                request = request.header(name, value);
            }
            request.send(body.as_str())
        })?;
        let reply: serde_json::Value = serde_json::from_str(&reply.body_mut().read_to_string()?)?;
        println!("{}", reply["choices"][0]["message"]["content"]);
    }
    let s = server.stats();
    println!(
        "server: {} requests, {:?}, early {}",
        s.total_requests, s.by_status, s.early
    );
    Ok(())
}
