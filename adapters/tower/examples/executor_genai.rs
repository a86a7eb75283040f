//! genai (which has no retries and no hook) through the executor: the closure makes
//! one attempt with a genai client pointed at the attempt's endpoint, key and headers.
//!
//! ```text
//! cargo run -p steadfast-tower --features genai --example executor_genai
//! ```
//!
//! It starts steadfast-mock's `flaky` scenario on 127.0.0.1, makes 10 calls, and prints
//! each answer and what the server saw.

use genai::adapter::AdapterKind;
use genai::chat::{ChatMessage, ChatRequest};
use genai::resolver::{AuthData, Endpoint, ServiceTargetResolver};
use genai::{ModelIden, ServiceTarget, WebConfig};
use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Attempt, Client, EndpointDef, Provider};

/// A genai client for one attempt.
fn genai_for(a: &Attempt) -> Result<genai::Client, genai::Error> {
    let endpoint = Endpoint::from_owned(format!("{}/v1/", a.base_url.trim_end_matches('/')));
    let key = a.api_key().unwrap_or_default().to_owned();
    let resolver = ServiceTargetResolver::from_resolver_fn(
        move |t: ServiceTarget| -> Result<ServiceTarget, genai::resolver::Error> {
            Ok(ServiceTarget {
                endpoint: endpoint.clone(),
                auth: AuthData::from_single(key.clone()),
                model: ModelIden::new(AdapterKind::OpenAI, t.model.model_name),
            })
        },
    );
    let web = WebConfig::default()
        .with_default_headers(a.headers.clone())
        .with_timeout(a.timeout);
    genai::Client::builder()
        .with_service_target_resolver(resolver)
        .with_web_config(web)
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::builtin("flaky")?)?;
    let steadfast = Client::builder()
        .endpoint(EndpointDef::new(
            server.base_url(),
            Provider::OpenAi,
            "sk-example",
        ))
        .build()?;
    for i in 0..10 {
        let chat = ChatRequest::new(vec![ChatMessage::user(format!("hello {i}"))]);
        let reply = steadfast
            .run(|a| {
                let chat = chat.clone();
                async move { genai_for(&a)?.exec_chat("gpt-4o-mini", chat, None).await }
            })
            .await?;
        println!("{}", reply.first_text().unwrap_or(""));
    }
    let s = server.stats();
    println!(
        "server: {} requests, {:?}, early {}",
        s.total_requests, s.by_status, s.early
    );
    Ok(())
}
