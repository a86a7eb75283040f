//! `steadfast-reqwest`: an async client (tokio + reqwest) for OpenAI-compatible and
//! Anthropic APIs that survives rate limits, overloads, outages and bad keys.
//!
//! Every decision — whether, when, where and with which key to try again — is made
//! by [`steadfast_core`]; this crate sends, sleeps and reports.
//!
//! ```no_run
//! use steadfast_reqwest::{Client, EndpointDef, Provider, StreamExt, TextEvent};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Two APIs: requests and replies are in the canonical (OpenAI) shape, translated
//! // for Anthropic; the keys come from OPENAI_API_KEY and ANTHROPIC_API_KEY.
//! let client = Client::builder()
//!     .endpoint(EndpointDef::from_env("https://api.openai.com", Provider::OpenAi).model("gpt-4o-mini"))
//!     .endpoint(EndpointDef::from_env("https://api.anthropic.com", Provider::Anthropic)
//!         .name("claude").model("claude-3-5-haiku-latest").priority(1))
//!     .build()?;
//! let reply = client
//!     .chat(serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]}))
//!     .await?;
//! println!("{} (from {:?})", reply.text().unwrap_or_default(), reply.served_by());
//! let mut text = client
//!     .stream(serde_json::json!({"messages": [{"role": "user", "content": "Count to five"}]}))
//!     .await?
//!     .text();
//! while let Some(event) = text.next().await {
//!     match event? {
//!         TextEvent::Delta(piece) => print!("{piece}"),
//!         TextEvent::Done(message) => println!("\n{}", message["choices"][0]["finish_reason"]),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! The engine sits behind a `std::sync::Mutex`, locked only for the core's decisions
//! (never across an `.await`). Time is tokio's (`tokio::time::Instant`), so a paused
//! runtime clock (`#[tokio::test(start_paused = true)]`) drives the waits. Each attempt gets the core's timeout as reqwest's
//! per-request timeout; the connect timeout is the policy's, set on the reqwest client.
//!
//! With the policy's `[hedge]` on, a call or a stream (until its first event) runs a
//! hedge beside a slow attempt: both exchanges are polled at once, the first usable
//! answer wins, and the other's future is dropped, which closes its request.

#![forbid(unsafe_code)]

mod drive;
mod errors;
mod exchange;
mod hedge;
mod lease;
mod stream;

use std::sync::Arc;

use drive::Clock;
pub use futures_util::StreamExt;
use serde::Serialize;
use steadfast_core::time::Timestamp;
/// The canonical chat shape: typed requests and replies (`chat::types`) and the
/// OpenAI ⇄ Anthropic translation.
pub use steadfast_http::chat;
/// Every type the builder and the calls take, so that no other crate is needed.
pub use steadfast_http::{
    ApiKey, BackoffConfig, BreakerConfig, BudgetConfig, CallOptions, ClassifyConfig,
    DEFAULT_MAX_BODY, Degraded, EndpointDef, EndpointSet, Exceeded, FailMode, Fallback,
    FallbackKind, GiveUpReason, HealthConfig, Interruption, LimiterConfig, MetricsSnapshot, Policy,
    Preset, Provider, ProviderExt, Reply, RequestError, RetryConfig, ServedBy, SetupError,
    SharedConfig, SlaTargets, SseEvent, StoreConfig, TextEvent, TokenUsage,
};
use steadfast_http::{Setup, Shared};
pub use stream::{EventStream, TextStream};

/// A call that gave up; its source is the last attempt's reqwest error.
pub type CallError = steadfast_http::CallError<reqwest::Error>;
/// A stream that failed after its first event; its source is reqwest's error.
pub type StreamError = steadfast_http::StreamError<reqwest::Error>;

/// A client that cannot be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The policy, an endpoint or the seed.
    Setup(SetupError),
    /// reqwest could not build its client (TLS backend, resolver).
    Client(reqwest::Error),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Setup(e) => e.fmt(f),
            BuildError::Client(e) => write!(f, "cannot build the HTTP client: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Setup(e) => Some(e),
            BuildError::Client(e) => Some(e),
        }
    }
}

impl From<SetupError> for BuildError {
    fn from(e: SetupError) -> BuildError {
        BuildError::Setup(e)
    }
}

/// Builds a [`Client`].
#[derive(Debug, Default)]
pub struct ClientBuilder {
    setup: Setup,
    http: Option<reqwest::Client>,
    #[cfg(feature = "redis")]
    store: Option<steadfast_redis::RedisStore>,
}

impl ClientBuilder {
    steadfast_http::shared_builder_settings!(steadfast_reqwest);

    /// Makes the attempts' headers complete, each endpoint's `Host` and each attempt's
    /// `Content-Length` included, for a caller that also sends the client's attempts
    /// over a transport of its own that sends headers as it is given them (hyper's
    /// `client::conn`, as `steadfast serve` does). This client's own sends drop both,
    /// since reqwest sets them itself (and a redirect to another host must not carry
    /// the first one's).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = steadfast_reqwest::Client::builder()
    ///     .endpoint(steadfast_reqwest::EndpointDef::new("http://127.0.0.1:9", steadfast_reqwest::Provider::OpenAi, "sk-1"))
    ///     .complete_headers(true)
    ///     .build()?;
    /// assert!(client.shared().complete_headers());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn complete_headers(mut self, on: bool) -> Self {
        self.setup.complete_headers = on;
        self
    }

    /// Uses this reqwest client (its own connect timeout, TLS, proxies) instead of one
    /// built with the policy's connect timeout.
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Shares the request limits (`rpm`) of the endpoints that have one, and every
    /// key's cooldowns and disables, with every process using the same Redis and the
    /// same endpoint names: a limit is then the total of all of them, and a key one
    /// process found revoked or throttled is left alone by the others (and, with the
    /// policy's `shared.breaker` or an endpoint's `share_breaker`, a breaker one
    /// process opened keeps the others from sending until its probe). Build the client
    /// inside a Tokio runtime: a task on it syncs the key states every
    /// `shared.key_sync` while the client lives. Each process spends leases of the shared budget; while
    /// Redis cannot be reached, the policy's `shared.fail` decides (local limits
    /// alone, or nothing admitted), and sharing resumes when it answers.
    #[cfg(feature = "redis")]
    #[must_use]
    pub fn shared_store(mut self, store: steadfast_redis::RedisStore) -> Self {
        self.setup.shared_limits = true;
        self.store = Some(store);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<Client, BuildError> {
        let http = match self.http {
            Some(c) => c,
            None => reqwest::Client::builder()
                .connect_timeout(self.setup.policy.retry.connect_timeout)
                .build()
                .map_err(BuildError::Client)?,
        };
        let shared = Shared::new(self.setup)?;
        let clock = Clock::new();
        let urls = drive::parsed_urls(&shared);
        let inner = Arc::new(Inner {
            #[cfg(feature = "redis")]
            store: self
                .store
                .map(|store| steadfast_redis::client::ClientStore::new(store, &shared)),
            http,
            shared,
            clock,
            urls,
        });
        #[cfg(feature = "redis")]
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            steadfast_redis::client::spawn_sync(&runtime, &inner);
        }
        Ok(Client { inner })
    }
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    shared: Shared,
    clock: Clock,
    /// Each endpoint's URL, parsed once (`None` where reqwest cannot parse it: the
    /// attempt then fails as reqwest reports it).
    urls: Vec<Option<reqwest::Url>>,
    /// The store shared limits are leased from.
    #[cfg(feature = "redis")]
    store: Option<steadfast_redis::client::ClientStore>,
}

#[cfg(feature = "redis")]
impl steadfast_redis::client::SharesState for Inner {
    fn client_store(&self) -> Option<&steadfast_redis::client::ClientStore> {
        self.store.as_ref()
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn now(&self) -> Timestamp {
        self.clock.timestamp()
    }
}

/// The client. Cheap to clone (the clones share the engine, keys and counters).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// A builder.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Sends one chat request — a `serde_json::Value`, async-openai's request types or
    /// one's own `Serialize` struct (the endpoint's `model` is set in it) — retried as
    /// the policy says, with a fresh idempotency key; runs the fallbacks if it gives up.
    pub async fn chat<R: Serialize>(&self, request: R) -> Result<Reply, CallError> {
        self.chat_with_options(request, &CallOptions::new()).await
    }

    /// Like [`Client::chat`], with the idempotency key derived from `business_id` (an
    /// order number, a batch line's id): a resubmission carries the same key, and the
    /// `Stored` fallback can answer with its last result.
    pub async fn chat_with<R: Serialize>(
        &self,
        business_id: &str,
        request: R,
    ) -> Result<Reply, CallError> {
        let options = CallOptions::new().idempotency_key(business_id);
        self.chat_with_options(request, &options).await
    }

    /// Like [`Client::chat`], with this call's own [`CallOptions`] (attempts, timeout,
    /// deadline, extra headers, idempotency key).
    pub async fn chat_with_options<R: Serialize>(
        &self,
        request: R,
        options: &CallOptions,
    ) -> Result<Reply, CallError> {
        let body = steadfast_http::request_value(&request)?;
        drive::chat(&self.inner, options, &body).await
    }

    /// Starts a streamed chat (`"stream": true` is set). Attempts are retried until
    /// the first event arrives; the stream then yields it and the rest. A failure after
    /// that is a [`StreamError`] carrying the text so far, never a retry.
    pub async fn stream<R: Serialize>(&self, request: R) -> Result<EventStream, CallError> {
        self.stream_with_options(request, &CallOptions::new()).await
    }

    /// Like [`Client::stream`], with this call's own [`CallOptions`].
    pub async fn stream_with_options<R: Serialize>(
        &self,
        request: R,
        options: &CallOptions,
    ) -> Result<EventStream, CallError> {
        let body = steadfast_http::request_value(&request)?;
        drive::stream(&self.inner, options, &body).await
    }

    /// The counters so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.shared.metrics()
    }

    /// The shared state (engine, endpoints), for health reports and inspection.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The instant now by this client's clock (tokio's), as its engine counts it: the
    /// `now` of `shared().with_engine(|e| e.health(now, endpoint))`.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.timestamp()
    }

    /// The origin of this client's timestamps (an instant of tokio's clock), for a
    /// face that drives sessions of this client's [`Shared`] with its own transport.
    pub fn epoch(&self) -> steadfast_http::clock::Epoch {
        self.inner.clock.epoch()
    }
}
