//! What one client shares among its calls: the engine behind a lock, the endpoints
//! with their prepared headers, the counters, the fallbacks and their store.

use std::sync::{Arc, Mutex, MutexGuard};

use http::HeaderMap;
use serde_json::Value;
use steadfast_core::engine::Engine;
use steadfast_core::idempotency::{Begin, IdempotencyKey, IdempotencyStore, MemoryStore};
use steadfast_core::ids::{EndpointId, Target};
use steadfast_core::policy::Policy;
use steadfast_core::retry::GiveUpReason;
use steadfast_core::rng::Seed;

use crate::clock;
use crate::endpoint::{self, EndpointDef};
use crate::error::{DEFAULT_MAX_BODY, SetupError};
use crate::fallback::{Degraded, Fallback, FallbackKind, Reply};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::provider::{Provider, ProviderExt};

/// How to build a client: the policy, the endpoints, the fallbacks, the seed and the
/// body limit. Each adapter's builder wraps one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Setup {
    /// The policy (default: the `standard` preset).
    pub policy: Policy,
    /// The endpoints, in registration order.
    pub endpoints: Vec<EndpointDef>,
    /// The fallbacks, tried in order when a call gives up.
    pub fallbacks: Vec<Fallback>,
    /// The RNG seed (default: from the operating system).
    pub seed: Option<Seed>,
    /// The largest response body read, in bytes (default [`DEFAULT_MAX_BODY`]); for a
    /// stream, the largest unfinished event and the most text kept.
    pub max_body: u64,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            policy: Policy::default(),
            endpoints: Vec::new(),
            fallbacks: Vec::new(),
            seed: None,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

impl Setup {
    /// The seed: the one given, or 32 bytes from the operating system.
    pub fn resolve_seed(&self) -> Result<Seed, SetupError> {
        if let Some(seed) = self.seed {
            return Ok(seed);
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|_| SetupError::Seed)?;
        Ok(seed)
    }
}

pub(crate) struct EndpointSlot {
    pub provider: Provider,
    pub model: Option<String>,
    pub url: String,
    /// Per key: content type, auth (marked sensitive) and version headers.
    pub headers: Vec<HeaderMap>,
    def: EndpointDef,
}

pub(crate) enum FallbackSlot {
    Endpoint(Box<Shared>),
    Stored,
    Template(Value),
}

/// What a client shares among its calls. Adapters hold one (in an `Arc`) and start a
/// [`crate::Session`] per call.
pub struct Shared {
    engine: Mutex<Engine>,
    pub(crate) endpoints: Vec<EndpointSlot>,
    pub(crate) policy: Policy,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) estimate_tokens: bool,
    pub(crate) max_body: u64,
    /// Endpoint ids of this pool start here in replies (fallback pools come after the
    /// primary one).
    pub(crate) id_offset: u16,
    store: Option<Mutex<MemoryStore<Value>>>,
    fallbacks: Vec<FallbackSlot>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let endpoints: Vec<&EndpointDef> = self.endpoints.iter().map(|e| &e.def).collect();
        f.debug_struct("Shared")
            .field("endpoints", &endpoints)
            .field("fallbacks", &self.fallbacks.len())
            .finish_non_exhaustive()
    }
}

/// What to do for one fallback of a call that gave up.
#[derive(Debug)]
pub enum FallbackStep<'a> {
    /// Run the call against this pool (a fallback endpoint).
    Call(&'a Shared),
    /// Answer with this body.
    Ready(Value, FallbackKind),
}

impl Shared {
    /// Builds the engine and prepares every endpoint's headers.
    pub fn new(setup: Setup) -> Result<Shared, SetupError> {
        let seed = setup.resolve_seed()?;
        let stored = setup
            .fallbacks
            .iter()
            .any(|f| matches!(f, Fallback::Stored));
        let mut fallbacks = Vec::with_capacity(setup.fallbacks.len());
        let mut next_id = setup.endpoints.len();
        for (i, f) in setup.fallbacks.into_iter().enumerate() {
            fallbacks.push(match f {
                Fallback::Endpoint(def) => {
                    let mut sub_seed = seed;
                    sub_seed[0] ^= 0x5a;
                    sub_seed[1] ^= u8::try_from(i % 256).unwrap_or(0);
                    let mut sub = Shared::pool(&setup.policy, vec![def], sub_seed, None)?;
                    sub.id_offset = u16::try_from(next_id).unwrap_or(u16::MAX);
                    sub.max_body = setup.max_body;
                    next_id += 1;
                    FallbackSlot::Endpoint(Box::new(sub))
                }
                Fallback::Stored => FallbackSlot::Stored,
                Fallback::Template(v) => FallbackSlot::Template(v),
            });
        }
        let metrics = Arc::new(Metrics::default());
        let mut shared = Shared::pool(&setup.policy, setup.endpoints, seed, Some(metrics))?;
        shared.max_body = setup.max_body;
        for f in &mut fallbacks {
            if let FallbackSlot::Endpoint(sub) = f {
                sub.metrics = Arc::clone(&shared.metrics);
            }
        }
        shared.fallbacks = fallbacks;
        if stored {
            let store = MemoryStore::new(&setup.policy.idempotency)?;
            shared.store = Some(Mutex::new(store));
        }
        Ok(shared)
    }

    fn pool(
        policy: &Policy,
        defs: Vec<EndpointDef>,
        seed: Seed,
        metrics: Option<Arc<Metrics>>,
    ) -> Result<Shared, SetupError> {
        let specs = endpoint::specs(&defs)?;
        let engine = Engine::new(policy.clone(), &specs, seed)?;
        let mut endpoints = Vec::with_capacity(defs.len());
        for (e, def) in defs.into_iter().enumerate() {
            let headers = def
                .keys
                .iter()
                .enumerate()
                .map(|(k, key)| {
                    def.provider
                        .headers(key)
                        .map_err(|_| SetupError::InvalidKey {
                            endpoint: e,
                            key: k,
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            endpoints.push(EndpointSlot {
                provider: def.provider,
                model: def.model.clone(),
                url: def.url(),
                headers,
                def,
            });
        }
        let estimate_tokens = policy.limiter.tokens.is_some()
            || endpoints
                .iter()
                .any(|e| e.def.limiter.as_ref().is_some_and(|l| l.tokens.is_some()));
        Ok(Shared {
            engine: Mutex::new(engine),
            endpoints,
            policy: policy.clone(),
            metrics: metrics.unwrap_or_default(),
            estimate_tokens,
            max_body: DEFAULT_MAX_BODY,
            id_offset: 0,
            store: None,
            fallbacks: Vec::new(),
        })
    }

    /// Locks the engine. A poisoned lock is taken over: the engine's state is updated
    /// in single steps that a panic elsewhere cannot leave half done.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the engine (for health reports, breaker and key states).
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut engine = self.lock();
        let r = f(&mut engine);
        while let Some(ev) = engine.poll_event() {
            self.metrics.on_engine_event(&ev);
        }
        r
    }

    /// The largest response body read, in bytes.
    pub fn max_body(&self) -> u64 {
        self.max_body
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The counters so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// The live counters (shared with the fallback endpoints).
    pub fn metrics_handle(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The provider of an endpoint of this pool.
    pub fn provider(&self, endpoint: EndpointId) -> Provider {
        self.endpoints
            .get(usize::from(endpoint.0))
            .map_or(Provider::OpenAi, |e| e.provider)
    }

    /// `target` as replies number it (fallback endpoints after the primary ones).
    pub fn public_target(&self, target: Target) -> Target {
        Target::new(
            target.endpoint.0.saturating_add(self.id_offset),
            target.key.0,
        )
    }

    /// Replaces every configured key of every endpoint found in `text` with `****`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for e in &self.endpoints {
            out = e.def.redact(&out);
        }
        for f in &self.fallbacks {
            if let FallbackSlot::Endpoint(sub) = f {
                out = sub.redact(&out);
            }
        }
        out
    }

    /// The number of fallbacks registered.
    pub fn fallback_count(&self) -> usize {
        self.fallbacks.len()
    }

    /// Fallback `index` for a call that gave up; `None` when it has nothing to offer
    /// (no stored result for this business id, or no business id).
    pub fn fallback(&self, index: usize, business_id: Option<&[u8]>) -> Option<FallbackStep<'_>> {
        match self.fallbacks.get(index)? {
            FallbackSlot::Endpoint(sub) => Some(FallbackStep::Call(sub)),
            FallbackSlot::Template(v) => {
                Some(FallbackStep::Ready(v.clone(), FallbackKind::Template))
            }
            FallbackSlot::Stored => {
                let key = IdempotencyKey::from_business_id(business_id?);
                let mut store = self
                    .store
                    .as_ref()?
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                match store.begin(clock::now(), key) {
                    Begin::Done(v) => Some(FallbackStep::Ready(v, FallbackKind::Stored)),
                    Begin::New => {
                        store.abandon(clock::now(), key);
                        None
                    }
                    Begin::InFlight { .. } | Begin::Busy { .. } => None,
                }
            }
        }
    }

    /// Records a successful body for a business id, for the `Stored` fallback.
    pub(crate) fn store_result(&self, key: IdempotencyKey, body: &Value) {
        if let Some(store) = &self.store {
            let mut store = store.lock().unwrap_or_else(|e| e.into_inner());
            store.complete(clock::now(), key, body.clone());
        }
    }

    /// The reply of a fallback that answered after the primary call gave up for
    /// `reason` with `attempts` attempts, counted in the metrics.
    pub fn degraded(
        &self,
        body: Value,
        via: FallbackKind,
        reason: GiveUpReason,
        attempts: u32,
        target: Option<Target>,
    ) -> Reply {
        self.metrics.on_fallback(via, &reason);
        Reply {
            body,
            attempts,
            target,
            degraded: Some(Degraded { reason, via }),
        }
    }
}
