//! async-openai's typed client with steadfast under it: `with_http_service` takes the
//! layer over async-openai's own `ReqwestService` (async-openai's default retry layer
//! is then not used; do not add `OpenAIRetryLayer` to the stack).
//!
//! ```text
//! cargo run -p steadfast-tower --features async-openai --example async_openai
//! ```
//!
//! It starts steadfast-mock's `flaky` scenario on 127.0.0.1, makes 10 calls, and prints
//! each answer and what the server saw.

use async_openai::config::OpenAIConfig;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
};
use steadfast_mock::{MockConfig, MockServer};
use steadfast_tower::{Client, EndpointDef, Provider, SteadfastLayer};

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
    let service = tower::ServiceBuilder::new()
        .layer(SteadfastLayer::new(&steadfast))
        .service(ReqwestService::new(reqwest13::Client::new()));
    let config = OpenAIConfig::new().with_api_base(format!("{}/v1", server.base_url()));
    let openai = async_openai::Client::with_config(config).with_http_service(service);
    for i in 0..10 {
        let user = ChatCompletionRequestUserMessageArgs::default()
            .content(format!("hello {i}"))
            .build()?;
        let request = CreateChatCompletionRequestArgs::default()
            .model("gpt-4o-mini")
            .messages([user.into()])
            .build()?;
        let reply = openai.chat().create(request).await?;
        println!(
            "{}",
            reply.choices[0].message.content.as_deref().unwrap_or("")
        );
    }
    let s = server.stats();
    println!(
        "server: {} requests, {:?}, early {}",
        s.total_requests, s.by_status, s.early
    );
    println!("client: {:?}", steadfast.metrics());
    Ok(())
}
