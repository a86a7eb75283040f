//! `steadfast-ureq`: a blocking client (ureq, no async runtime) for OpenAI-compatible
//! and Anthropic APIs that survives rate limits, overloads, outages and bad keys.
//!
//! Every decision — whether, when, where and with which key to try again — is made
//! by [`steadfast_core`]; this crate sends, sleeps (`std::thread::sleep`) and reports.
//!
//! ```no_run
//! use std::time::Duration;
//! use steadfast_ureq::{CallOptions, Client, EndpointDef, Provider, TextEvent};
//! // The key comes from ANTHROPIC_API_KEY.
//! let client = Client::builder()
//!     .endpoint(EndpointDef::from_env("https://api.anthropic.com", Provider::Anthropic)
//!         .model("claude-3-5-haiku-latest"))
//!     .max_retries(3)
//!     .build()?;
//! let reply = client.chat(serde_json::json!({
//!     "max_tokens": 100,
//!     "messages": [{"role": "user", "content": "Hi"}]
//! }))?;
//! println!("{}", reply.text().unwrap_or_default());
//! // One call with its own deadline and idempotency key.
//! let options = CallOptions::new().deadline(Duration::from_secs(20)).idempotency_key("order-7");
//! let again = client.chat_with_options(serde_json::json!({
//!     "max_tokens": 100,
//!     "messages": [{"role": "user", "content": "Hi again"}]
//! }), &options)?;
//! println!("{:?} served it", again.served_by());
//! // A stream, as text.
//! let stream = client.stream(serde_json::json!({
//!     "max_tokens": 100,
//!     "messages": [{"role": "user", "content": "Count to five"}]
//! }))?;
//! for event in stream.text() {
//!     match event? {
//!         TextEvent::Delta(text) => print!("{text}"),
//!         TextEvent::Done(message) => println!("\n{}", message["stop_reason"]),
//!         _ => {}
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each attempt gets the core's timeout as ureq's global timeout and the core's connect
//! timeout as ureq's (both per request). For streams, the first-event timeout bounds
//! the wait for the first event, response head and body alike: ureq fixes its timeouts
//! when a request starts, so a stream attempt is sent and read up to its first event
//! on a short-lived thread of its own, which the calling thread stops waiting for at
//! that deadline. After the first event, the attempt timeout bounds the stream.
//!
//! With the policy's `[hedge]` on, every attempt of a call or a stream (until its
//! first event) runs on a thread of its own, and the calling thread waits for the first
//! usable answer; ureq cannot abort a request, so a cancelled attempt's thread runs on
//! to its timeout and its answer is dropped.

#![forbid(unsafe_code)]
// `CallError` holds the last `ureq::Error` by value, and ureq's error alone is close to
// clippy's 128-byte threshold; boxing it would allocate on every failure and change the
// public error type for a few bytes.
#![allow(clippy::result_large_err)]

mod drive;
mod errors;
mod hedge;
#[cfg(feature = "redis")]
mod shared_store;
mod stream;

use std::sync::Arc;

use drive::Clock;
/// ureq's errors as the core's transport failures (for integrations that drive
/// their own ureq calls).
pub use errors::transport as transport_of;
use serde::Serialize;
use steadfast_core::time::Timestamp;
/// The canonical chat shape: typed requests and replies (`chat::types`) and the
/// OpenAI ⇄ Anthropic translation.
pub use steadfast_http::chat;
/// Every type the builder and the calls take, so that no other crate is needed.
pub use steadfast_http::{
    ApiKey, BackoffConfig, BreakerConfig, BudgetConfig, CallOptions, ClassifyConfig,
    DEFAULT_MAX_BODY, Degraded, EndpointDef, EndpointSet, Exceeded, Fallback, FallbackKind,
    GiveUpReason, HealthConfig, Interruption, LimiterConfig, MetricsSnapshot, Policy, Preset,
    Provider, ProviderExt, Reply, RequestError, RetryConfig, ServedBy, SetupError, SlaTargets,
    SseEvent, StoreConfig, TextEvent, TokenUsage,
};
use steadfast_http::{Setup, Shared};
pub use stream::{EventIter, TextIter};

/// A call that gave up; its source is the last attempt's ureq error.
pub type CallError = steadfast_http::CallError<ureq::Error>;
/// A stream that failed after its first event; its source is ureq's error.
pub type StreamError = steadfast_http::StreamError<ureq::Error>;
/// A client that cannot be built.
pub type BuildError = SetupError;

/// Builds a [`Client`].
#[derive(Debug, Default)]
pub struct ClientBuilder {
    setup: Setup,
    agent: Option<ureq::Agent>,
    #[cfg(feature = "redis")]
    redis: Option<steadfast_redis::RedisConfig>,
}

impl ClientBuilder {
    steadfast_http::shared_builder_settings!(steadfast_ureq);

    /// Uses this agent (its TLS, proxy and pool settings; timeouts are set per
    /// attempt) instead of a default one. It must not turn HTTP error statuses into errors (`http_status_as_error(false)`),
    /// or every error status becomes an `Other` transport failure.
    #[must_use]
    pub fn agent(mut self, agent: ureq::Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Shares the request and token limits of the endpoints that have them, and every
    /// key's cooldowns and disables (and breakers, with the policy's `shared.breaker`),
    /// with every process using the same Redis and the same endpoint names (see
    /// steadfast-reqwest's `shared_store`). The client runs a
    /// one-thread Tokio runtime for the store's connection and its key sync; its calls
    /// block on the store as on the network, never past the policy's `ask_timeout`.
    #[cfg(feature = "redis")]
    #[must_use]
    pub fn shared_redis(mut self, config: steadfast_redis::RedisConfig) -> Self {
        self.setup.shared_limits = true;
        self.redis = Some(config);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<Client, BuildError> {
        let agent = self.agent.unwrap_or_else(|| {
            let config = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(self.setup.policy.retry.connect_timeout))
                .build();
            ureq::Agent::new_with_config(config)
        });
        let shared = Shared::new(self.setup)?;
        let clock = Clock::new();
        #[cfg(feature = "redis")]
        let (runtime, store) = match self.redis {
            Some(config) => {
                let (runtime, store) = shared_store::start(config, &shared)?;
                (Some(runtime), Some(store))
            }
            None => (None, None),
        };
        let inner = Arc::new(Inner {
            agent,
            shared,
            clock,
            #[cfg(feature = "redis")]
            store,
        });
        #[cfg(feature = "redis")]
        if let Some(runtime) = &runtime {
            steadfast_redis::client::spawn_sync(runtime.handle(), &inner);
        }
        Ok(Client {
            inner,
            #[cfg(feature = "redis")]
            _runtime: runtime,
        })
    }
}

struct Inner {
    agent: ureq::Agent,
    shared: Shared,
    clock: Clock,
    /// The shared store and the runtime it runs on.
    #[cfg(feature = "redis")]
    store: Option<(tokio::runtime::Handle, steadfast_redis::client::ClientStore)>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

/// The client. Cheap to clone and `Send + Sync` (clones share the engine, keys and
/// counters), so one client serves many threads.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// The shared store's runtime: dropped with the last clone, on the caller's
    /// thread (never on the runtime's own).
    #[cfg(feature = "redis")]
    _runtime: Option<Arc<tokio::runtime::Runtime>>,
}

impl Client {
    /// A builder.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Sends one chat request — a `serde_json::Value`, async-openai's request types or
    /// one's own `Serialize` struct (the endpoint's `model` is set in it) — retried as
    /// the policy says, with a fresh idempotency key; runs the fallbacks if it gives up.
    pub fn chat<R: Serialize>(&self, request: R) -> Result<Reply, CallError> {
        self.chat_with_options(request, &CallOptions::new())
    }

    /// Like [`Client::chat`], with the idempotency key derived from `business_id` (an
    /// order number, a batch line's id): a resubmission carries the same key, and the
    /// `Stored` fallback can answer with its last result.
    pub fn chat_with<R: Serialize>(
        &self,
        business_id: &str,
        request: R,
    ) -> Result<Reply, CallError> {
        let options = CallOptions::new().idempotency_key(business_id);
        self.chat_with_options(request, &options)
    }

    /// Like [`Client::chat`], with this call's own [`CallOptions`] (attempts, timeout,
    /// deadline, extra headers, idempotency key).
    pub fn chat_with_options<R: Serialize>(
        &self,
        request: R,
        options: &CallOptions,
    ) -> Result<Reply, CallError> {
        let body = steadfast_http::request_value(&request)?;
        drive::chat(&self.inner, options, &body)
    }

    /// Starts a streamed chat (`"stream": true` is set). Attempts are retried until
    /// the first event arrives; the iterator then yields it and the rest. A failure after
    /// that is a [`StreamError`] carrying the text so far, never a retry.
    pub fn stream<R: Serialize>(&self, request: R) -> Result<EventIter, CallError> {
        self.stream_with_options(request, &CallOptions::new())
    }

    /// Like [`Client::stream`], with this call's own [`CallOptions`].
    pub fn stream_with_options<R: Serialize>(
        &self,
        request: R,
        options: &CallOptions,
    ) -> Result<EventIter, CallError> {
        let body = steadfast_http::request_value(&request)?;
        drive::stream(&self.inner, options, &body)
    }

    /// The counters so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.shared.metrics()
    }

    /// The shared state (engine, endpoints), for health reports and inspection.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The instant now by this client's clock, as its engine counts it: the `now` of
    /// `shared().with_engine(|e| e.health(now, endpoint))`.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.timestamp()
    }
}
