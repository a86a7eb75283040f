//! `steadfast-tower`: steadfast inside the LLM clients people already use.
//!
//! Every decision — whether, when, where and with which key to try again — is made by
//! [`steadfast_core`], through the same [`Session`](steadfast_http::Session) the
//! steadfast clients drive. This crate sends each attempt through the caller's own
//! client and reports what happened:
//!
//! - [`SteadfastLayer`]: a `tower::Layer` around any service that turns a rebuildable
//!   request ([`Replay`]) into a response ([`PeekBody`]): async-openai's
//!   `Client::with_http_service` (feature `async-openai`), or any
//!   `tower::Service<http::Request<B>>` with a `Clone` body.
//! - [`SteadfastMiddleware`] (feature `reqwest-middleware`): the same behaviour as a
//!   `reqwest_middleware::Middleware`, for `ClientWithMiddleware` and rig.
//! - [`Client::run`] and [`Client::run_blocking`]: an executor for clients with no hook
//!   (genai, ureq, plain reqwest): the closure makes one attempt and returns its
//!   result, which [`IntoOutcome`] maps for the core.
//!
//! Each attempt carries the chosen key's authentication headers (the inner client's
//! own key is replaced, so keys rotate), the call's `Idempotency-Key` (the same on
//! every attempt; a request that already carries one keeps it, as the call's business
//! id), and the endpoint's base URL when there are several (failover). Error bodies
//! are read (within the body limit) so that the provider's error type refines the
//! class, and handed on whole; a 2xx is handed on at its head, unread: a stream is
//! retried only before its body starts.
//!
//! **Turn the inner client's own retries off.** Stacked retries multiply: a 429
//! retried by two layers of 3 attempts becomes 9 or more requests, and the inner
//! layer's waits ignore what steadfast knows. async-openai's default retry layer is
//! not used once a service is given to `with_http_service`; do not add
//! `OpenAIRetryLayer` to the stack. Do not add `reqwest-retry` beside the middleware.
//! genai and ureq do not retry.
//!
//! ```no_run
//! # #[cfg(feature = "async-openai")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! # use reqwest13 as reqwest;
//! use async_openai::middleware::ReqwestService;
//! use steadfast_tower::{Client, EndpointDef, Provider, SteadfastLayer};
//! let steadfast = Client::builder()
//!     .endpoint(EndpointDef::from_env("https://api.openai.com", Provider::OpenAi))
//!     .build()?;
//! let service = tower::ServiceBuilder::new()
//!     .layer(SteadfastLayer::new(&steadfast))
//!     .service(ReqwestService::new(reqwest::Client::new()));
//! let openai = async_openai::Client::new().with_http_service(service);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod attempt;
mod drive;
mod error;
mod layer;
mod map_error;
#[cfg(feature = "reqwest-middleware")]
mod middleware;
#[cfg(feature = "async-openai")]
mod openai;
mod outcome;
mod peek;
mod timer;

#[cfg(feature = "genai")]
mod genai_map;
#[cfg(feature = "reqwest")]
mod reqwest_map;
#[cfg(feature = "ureq")]
mod ureq_map;

use std::sync::Arc;

pub use attempt::{Attempt, AttemptEdit};
pub use error::{GaveUp, GaveUpNote};
pub use layer::{Replay, SteadfastLayer, SteadfastService};
pub use map_error::transport_of;
#[cfg(feature = "reqwest-middleware")]
pub use middleware::SteadfastMiddleware;
pub use outcome::{IntoOutcome, Observed};
pub use peek::{PeekBody, Peeked};
#[cfg(feature = "reqwest")]
pub use reqwest_map::transport_of_reqwest;
/// Every type the builder takes, so that no other steadfast crate is needed.
pub use steadfast_http::{
    ApiKey, BackoffConfig, BreakerConfig, BudgetConfig, CallError, ClassifyConfig,
    DEFAULT_MAX_BODY, EndpointDef, Fallback, GiveUpReason, HealthConfig, IDEMPOTENCY_KEY,
    LimiterConfig, MetricsSnapshot, Policy, Preset, Provider, ProviderExt, RetryConfig, SetupError,
    StoreConfig,
};
use steadfast_http::{LeaseAnswer, LeaseAsk, Setup, Shared, clock::Epoch};
use timer::Timers;

/// Builds a [`Client`].
#[derive(Debug, Default)]
pub struct ClientBuilder {
    setup: Setup,
    #[cfg(feature = "redis")]
    store: Option<steadfast_redis::RedisStore>,
}

impl ClientBuilder {
    steadfast_http::shared_builder_settings!(steadfast_tower);

    /// Shares the request and token limits of the endpoints that have them, and every
    /// key's cooldowns and disables (and breakers, with the policy's `shared.breaker`),
    /// with every process using the same Redis and the same endpoint names (see
    /// steadfast-reqwest's `shared_store`). Build the client inside a Tokio runtime:
    /// a task on it syncs the key and breaker states. The blocking
    /// executor (`run_blocking`) does not ask the store: it runs on the local limits.
    #[cfg(feature = "redis")]
    #[must_use]
    pub fn shared_store(mut self, store: steadfast_redis::RedisStore) -> Self {
        self.setup.shared_limits = true;
        self.store = Some(store);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<Client, SetupError> {
        let fallbacks = self.setup.fallbacks.iter().filter_map(|f| match f {
            Fallback::Endpoint(def) => Some(def),
            _ => None,
        });
        // Numbered as the engine numbers them: the primary endpoints, then the
        // fallback ones.
        let bases = self.setup.endpoints.iter().chain(fallbacks);
        let bases = bases.map(|d| d.base_url.trim().to_owned()).collect();
        let shared = Shared::new(self.setup)?;
        let epoch = Epoch::new(tokio::time::Instant::now().into_std());
        let inner = Arc::new(Inner {
            #[cfg(feature = "redis")]
            store: self
                .store
                .map(|store| steadfast_redis::client::ClientStore::new(store, &shared)),
            shared,
            epoch,
            bases,
            timers: Timers::default(),
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
    shared: Shared,
    epoch: Epoch,
    /// Each endpoint's base URL, by engine index.
    bases: Vec<String>,
    /// The attempt timeout's idle timers.
    timers: Timers,
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

    fn now(&self) -> steadfast_core::time::Timestamp {
        self.epoch.timestamp(std::time::Instant::now())
    }
}

/// What the layer, the middleware and the executor share: the engine (breakers,
/// limiters, key pool, retry budget), the endpoints and their keys, the counters.
/// Cheap to clone; clones share everything. Build one per upstream set and give it to
/// every integration that calls it.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// A builder.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The shared state (engine, endpoints), for health reports and inspection.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The counters so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.shared.metrics()
    }

    /// The instant now by tokio's clock, as the engine counts it: the `now` of
    /// `shared().with_engine(|e| e.health(now, endpoint))`.
    pub fn now(&self) -> steadfast_core::time::Timestamp {
        self.epoch()
            .timestamp(tokio::time::Instant::now().into_std())
    }

    /// Runs one logical call: `attempt` makes one attempt with whatever client (sending
    /// [`Attempt::headers`], within [`Attempt::timeout`]) and returns its result; the
    /// core decides whether, when, where and with which key to call it again. Waits
    /// and the per-attempt timeout run on tokio's clock.
    ///
    /// The result of the successful attempt, or the give-up, its source the last
    /// attempt's error when it had one.
    pub async fn run<R, F, Fut>(&self, attempt: F) -> Result<R::Value, CallError<R::Error>>
    where
        R: IntoOutcome,
        F: FnMut(Attempt) -> Fut,
        Fut: std::future::Future<Output = R>,
    {
        let ended = drive::run(self, None, attempt).await;
        ended.into_result()
    }

    /// Like [`Client::run`], the call's idempotency key derived from `business_id`
    /// (the same on a resubmission).
    pub async fn run_with<R, F, Fut>(
        &self,
        business_id: &str,
        attempt: F,
    ) -> Result<R::Value, CallError<R::Error>>
    where
        R: IntoOutcome,
        F: FnMut(Attempt) -> Fut,
        Fut: std::future::Future<Output = R>,
    {
        let ended = drive::run(self, Some(business_id.as_bytes()), attempt).await;
        ended.into_result()
    }

    /// The blocking twin of [`Client::run`]: waits sleep the thread. The closure
    /// enforces [`Attempt::timeout`] itself (as the client's per-request timeout).
    pub fn run_blocking<R, F>(&self, attempt: F) -> Result<R::Value, CallError<R::Error>>
    where
        R: IntoOutcome,
        F: FnMut(Attempt) -> R,
    {
        drive::run_blocking(self, None, attempt).into_result()
    }

    /// Takes a lease ask to the shared store (none: it fails, and the endpoint runs
    /// on its fallback).
    pub(crate) async fn lease(&self, ask: LeaseAsk) -> LeaseAnswer {
        #[cfg(feature = "redis")]
        if let Some(store) = &self.inner.store {
            let deadline = tokio::time::Instant::from_std(self.inner.epoch.instant(ask.expires));
            let epoch = self.inner.epoch;
            return store
                .lease(ask, || epoch.timestamp(std::time::Instant::now()), deadline)
                .await;
        }
        let _ = ask;
        LeaseAnswer::Failed
    }

    pub(crate) fn epoch(&self) -> Epoch {
        self.inner.epoch
    }

    /// The timers that bound the attempts on tokio's clock.
    pub(crate) fn timers(&self) -> &Timers {
        &self.inner.timers
    }

    /// The base URL of endpoint `index` (engine numbering).
    pub(crate) fn base_url(&self, index: usize) -> &str {
        self.inner.bases.get(index).map_or("", String::as_str)
    }

    /// Whether a request may have to move between endpoints.
    pub(crate) fn fails_over(&self) -> bool {
        self.inner.bases.len() > 1
    }

    /// The endpoint whose base URL `url` is under, by engine index.
    pub(crate) fn endpoint_of(&self, url: &str) -> Option<usize> {
        let mut bases = self.inner.bases.iter();
        bases.position(|b| attempt::rebase(url, b, b).is_some())
    }
}
