//! What one client shares among its calls: the engine behind a lock, the endpoints
//! with their prepared headers, the counters, the fallbacks and their store.

use std::sync::{Arc, Mutex, MutexGuard};

use http::header::{ACCEPT, CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use steadfast_core::engine::{Engine, EngineEvent};
use steadfast_core::idempotency::{Begin, IdempotencyKey, IdempotencyStore, MemoryStore};
use steadfast_core::ids::{EndpointId, EndpointSet, Target};
use steadfast_core::policy::Policy;
use steadfast_core::retry::GiveUpReason;
use steadfast_core::rng::Seed;
use steadfast_core::shared::breakers::{BreakerPublish, SharedOpen};
use steadfast_core::shared::keys::{KeyPublish, SharedKeyState};
use steadfast_core::shared::{LeaseAnswer, LeaseAsk, TokenSettle};
use steadfast_core::time::Timestamp;

use crate::endpoint::{self, EndpointDef};
use crate::error::{DEFAULT_MAX_BODY, SetupError};
use crate::fallback::{Degraded, Fallback, FallbackKind};
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::options::RetryOverrides;
use crate::provider::{IDEMPOTENCY_KEY, Provider, ProviderExt};
use crate::reply::{Answered, Reply, ServedBy};
use crate::telemetry::{Telemetry, TelemetryConfig};

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
    /// Changes to the policy's retry rules (the builder's `max_retries`, `timeout`,
    /// `deadline`), laid over whichever policy is set.
    pub retry: RetryOverrides,
    /// Whether requests and replies are in the canonical shape (OpenAI Chat
    /// Completions, translated for Anthropic endpoints) rather than each provider's
    /// own. `None` (the default): canonical when the endpoints, fallback endpoints
    /// included, speak more than one API.
    pub canonical: Option<bool>,
    /// Whether the request limits of endpoints that have one are shared with other
    /// processes through a store the adapter talks to (see
    /// [`steadfast_core::shared`]): the session then yields [`crate::Step::Lease`].
    /// Every key's state is shared too, and each endpoint's breaker when its
    /// [`EndpointDef::share_breaker`] (default: the policy's `shared.breaker`) says
    /// so. Only adapters with a store set it.
    pub shared_limits: bool,
    /// Spans and metrics (see [`crate::telemetry`]).
    pub telemetry: TelemetryConfig,
    /// Whether the attempts' headers are complete for a transport that sends the
    /// headers it is given as they are (hyper's `client::conn`): each endpoint's `Host`
    /// ([`host_header`](crate::host_header)) is prepared with its other headers, and each
    /// attempt's `Content-Length` goes into a place kept for it, so that the transport
    /// need not add them to the attempt's copy (which grows it). Off by default:
    /// reqwest, ureq and hyper-util's client set both themselves.
    pub complete_headers: bool,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            policy: Policy::default(),
            endpoints: Vec::new(),
            fallbacks: Vec::new(),
            seed: None,
            max_body: DEFAULT_MAX_BODY,
            retry: RetryOverrides::default(),
            canonical: None,
            shared_limits: false,
            telemetry: TelemetryConfig::default(),
            complete_headers: false,
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
    pub name: String,
    pub provider: Provider,
    pub model: Option<String>,
    pub url: String,
    /// Per key: content type, auth (marked sensitive) and version headers, and a
    /// placeholder `Idempotency-Key` that each attempt's replaces; when complete
    /// ([`Setup::complete_headers`]), the `Host` and a placeholder `Content-Length` too.
    pub headers: Vec<HeaderMap>,
    /// The placeholder `Idempotency-Key`'s place in each key's headers (in their
    /// order): each attempt's key goes there without looking its name up.
    pub key_at: Option<usize>,
    /// The `Content-Length` placeholder's place, when the headers are complete
    /// ([`Setup::complete_headers`]).
    pub length_at: Option<usize>,
    /// Whether its breaker's "open until" is shared through the store.
    share_breaker: bool,
    def: EndpointDef,
}

pub(crate) enum FallbackSlot {
    /// A standby endpoint of the engine.
    Endpoint(EndpointId),
    Stored,
    Template(Value),
}

/// Engine events taken per lock: drained under it, recorded after it is released.
const EVENT_BATCH: usize = 16;

/// What a client shares among its calls. Adapters hold one (in an `Arc`) and start a
/// [`crate::Session`] per call.
///
/// Fallback endpoints are endpoints of the same engine, on standby after the primary
/// ones (so they are numbered after them): no ordinary call uses them, and a fallback
/// call is [restricted](steadfast_core::retry::Call::restricted_to) to one of them.
pub struct Shared {
    engine: Mutex<Engine>,
    pub(crate) endpoints: Vec<EndpointSlot>,
    pub(crate) policy: Policy,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) estimate_tokens: bool,
    pub(crate) max_body: u64,
    pub(crate) canonical: bool,
    /// Some endpoint's request limit is shared: sessions poll for lease asks.
    pub(crate) shares: bool,
    store: Option<Mutex<MemoryStore<Value>>>,
    fallbacks: Vec<FallbackSlot>,
    pub(crate) telemetry: Telemetry,
    complete_headers: bool,
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
pub(crate) enum FallbackStep {
    /// Run the call again, restricted to this standby endpoint.
    Call(EndpointId),
    /// Answer with this body.
    Ready(Value, FallbackKind),
}

impl Shared {
    /// Builds the engine and prepares every endpoint's headers.
    pub fn new(setup: Setup) -> Result<Shared, SetupError> {
        let seed = setup.resolve_seed()?;
        let mut defs = setup.endpoints;
        let primary = defs.len();
        if primary == 0 {
            return Err(SetupError::NoEndpoints);
        }
        let fallbacks = fallback_slots(&mut defs, setup.fallbacks);
        let env = |name: &str| std::env::var(name).ok();
        let defs: Vec<EndpointDef> = defs.into_iter().map(|d| d.with_env_key(env)).collect();
        let names = endpoint::names(&defs);
        let first = defs.first().map(|d| d.provider);
        let mixed = defs.iter().any(|d| Some(d.provider) != first);
        let canonical = setup.canonical.unwrap_or(mixed);
        let mut specs = endpoint::specs(&defs)?;
        for spec in specs.iter_mut().skip(primary) {
            spec.standby = true;
        }
        let mut policy = setup.policy;
        if setup.shared_limits {
            for (spec, def) in specs.iter_mut().zip(&defs) {
                spec.shared = endpoint::request_limit(def, &policy).is_some();
                spec.shared_tokens = spec.shared && endpoint::token_limit(def, &policy).is_some();
                spec.share_keys = true;
                spec.share_breaker = def.share_breaker.unwrap_or(policy.shared.breaker);
            }
        }
        let shares = specs.iter().any(|s| s.shared);
        policy.retry = setup.retry.apply(&policy.retry);
        let engine = Engine::new(policy.clone(), &specs, seed)?;
        let mut endpoints = defs
            .into_iter()
            .zip(names)
            .enumerate()
            .map(|(e, (def, name))| EndpointSlot::new(e, def, name, setup.complete_headers))
            .collect::<Result<Vec<_>, _>>()?;
        for (slot, spec) in endpoints.iter_mut().zip(&specs) {
            slot.share_breaker = spec.share_breaker;
        }
        let stored = fallbacks.iter().any(|f| matches!(f, FallbackSlot::Stored));
        let store = stored
            .then(|| MemoryStore::new(&policy.idempotency))
            .transpose()?
            .map(Mutex::new);
        let telemetry = Telemetry::new(&setup.telemetry, &endpoints);
        Ok(Shared {
            telemetry,
            engine: Mutex::new(engine),
            estimate_tokens: estimates_tokens(&policy, &endpoints),
            endpoints,
            policy,
            metrics: Arc::default(),
            max_body: setup.max_body,
            canonical,
            shares,
            complete_headers: setup.complete_headers,
            store,
            fallbacks,
        })
    }

    /// Locks the engine. A poisoned lock is taken over: the engine's state is updated
    /// in single steps that a panic elsewhere cannot leave half done.
    fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the engine (for health reports, breaker and key states). The
    /// events it caused are taken under the lock and turned into counters and
    /// `tracing` events after it is released.
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut batch = [None; EVENT_BATCH];
        let mut engine = self.lock();
        // `r` is not moved until it is returned: it may be a whole call.
        let r = f(&mut engine);
        let mut more = take_events(&mut engine, &mut batch);
        drop(engine);
        loop {
            for ev in batch.iter().map_while(Option::as_ref) {
                self.metrics.on_engine_event(ev);
            }
            if !more {
                return r;
            }
            more = take_events(&mut self.lock(), &mut batch);
        }
    }

    /// The name and the request limit of `endpoint` when its limit is shared: a store
    /// counts it under that name (the same on every replica with the same config).
    pub fn shared_limit(&self, endpoint: EndpointId) -> Option<(&str, endpoint::RequestLimit)> {
        if !self.shares {
            return None;
        }
        let slot = self.endpoints.get(usize::from(endpoint.0))?;
        let limit = endpoint::request_limit(&slot.def, &self.policy)?;
        Some((slot.name.as_str(), limit))
    }

    /// `endpoint`'s token limit when it is shared: tokens per minute and the bucket's
    /// burst (counted under [`Shared::shared_limit`]'s name).
    pub fn shared_token_limit(&self, endpoint: EndpointId) -> Option<(u64, u64)> {
        self.shared_limit(endpoint)?;
        let slot = self.endpoints.get(usize::from(endpoint.0))?;
        endpoint::token_limit(&slot.def, &self.policy)
    }

    /// The store's answer, at `now`, to the lease ask `ask` (one a session took to
    /// the store, or whose answer came after its deadline).
    pub fn on_lease(&self, now: Timestamp, ask: &LeaseAsk, answer: LeaseAnswer) {
        self.with_engine(|e| e.handle_lease(now, ask, answer));
    }

    /// The token leases to settle with the store, oldest first.
    pub fn take_token_settles(&self) -> Vec<TokenSettle> {
        self.with_engine(|e| core::iter::from_fn(|| e.poll_token_settle()).collect())
    }

    /// The store's id of `endpoint`'s key `key`: `<endpoint name>.k<index>`, the same
    /// on every replica with the same config, never the secret.
    pub fn shared_key_id(&self, endpoint: EndpointId, key: u16) -> Option<String> {
        let slot = self.endpoints.get(usize::from(endpoint.0))?;
        (usize::from(key) < slot.headers.len()).then(|| format!("{}.k{key}", slot.name))
    }

    /// The changes of shared key states to write to the store, oldest first.
    pub fn take_key_publishes(&self) -> Vec<KeyPublish> {
        self.with_engine(|e| core::iter::from_fn(|| e.poll_key_publish()).collect())
    }

    /// What the store says of `endpoint`'s keys, by index (see
    /// [`Engine::handle_shared_keys`]).
    pub fn on_shared_keys(&self, now: Timestamp, endpoint: EndpointId, states: &[SharedKeyState]) {
        self.with_engine(|e| e.handle_shared_keys(now, endpoint, states));
    }

    /// The store's id of `endpoint`'s breaker when it is shared: the endpoint's name
    /// (the same on every replica with the same config).
    pub fn shared_breaker_id(&self, endpoint: EndpointId) -> Option<&str> {
        let slot = self.endpoints.get(usize::from(endpoint.0))?;
        slot.share_breaker.then_some(slot.name.as_str())
    }

    /// The breaker opens to write to the store, oldest first.
    pub fn take_breaker_publishes(&self) -> Vec<BreakerPublish> {
        self.with_engine(|e| core::iter::from_fn(|| e.poll_breaker_publish()).collect())
    }

    /// What the store says of `endpoint`'s breaker: open, or not (see
    /// [`Engine::handle_shared_breaker`]).
    pub fn on_shared_breaker(
        &self,
        now: Timestamp,
        endpoint: EndpointId,
        open: Option<SharedOpen>,
    ) {
        self.with_engine(|e| e.handle_shared_breaker(now, endpoint, open));
    }

    /// Whether calls are in the canonical shape (see [`Setup::canonical`]).
    pub fn is_canonical(&self) -> bool {
        self.canonical
    }

    /// Whether a call in `shape` must be translated for some endpoint it may use:
    /// one of `only` (any, when `None`) or a fallback's.
    pub(crate) fn translates(&self, only: Option<EndpointSet>, shape: Provider) -> bool {
        let usable = |id: EndpointId| {
            only.is_none_or(|set| set.contains(id))
                || self
                    .fallbacks
                    .iter()
                    .any(|f| matches!(f, FallbackSlot::Endpoint(e) if *e == id))
        };
        (0..self.endpoints.len()).any(|i| {
            let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            usable(id) && self.provider(id) != shape
        })
    }

    /// The largest response body read, in bytes.
    pub fn max_body(&self) -> u64 {
        self.max_body
    }

    /// Whether some endpoint's request limit is shared with other processes: the
    /// sessions then ask for leases ([`crate::Step::Lease`]), which a driver takes to
    /// the store.
    pub fn shares_limits(&self) -> bool {
        self.shares
    }

    /// Whether the attempts' headers carry their endpoint's `Host` and their body's
    /// `Content-Length` (see [`Setup::complete_headers`]); a transport that sets its
    /// own drops them.
    pub fn complete_headers(&self) -> bool {
        self.complete_headers
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The counters so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// The live counters.
    pub fn metrics_handle(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The provider of an endpoint (fallback endpoints after the primary ones).
    pub fn provider(&self, endpoint: EndpointId) -> Provider {
        self.endpoints
            .get(usize::from(endpoint.0))
            .map_or(Provider::OpenAi, |e| e.provider)
    }

    /// The name of an endpoint (fallback endpoints after the primary ones), as replies,
    /// errors and summaries show it.
    pub fn endpoint_name(&self, endpoint: EndpointId) -> Option<&str> {
        self.endpoints
            .get(usize::from(endpoint.0))
            .map(|e| e.name.as_str())
    }

    /// The URL every attempt to an endpoint is posted to.
    pub fn endpoint_url(&self, endpoint: EndpointId) -> Option<&str> {
        self.endpoints
            .get(usize::from(endpoint.0))
            .map(|e| e.url.as_str())
    }

    /// How many endpoints there are (fallback endpoints included).
    pub fn endpoint_count(&self) -> usize {
        self.endpoints.len()
    }

    /// Who answered with `body` at `target`.
    pub(crate) fn served_by(&self, target: Target, model: Option<&str>) -> Option<ServedBy> {
        let slot = self.endpoints.get(usize::from(target.endpoint.0))?;
        Some(ServedBy {
            endpoint: slot.name.clone(),
            provider: slot.provider,
            model: model.map(str::to_owned).or_else(|| slot.model.clone()),
        })
    }

    /// The reply of a call that succeeded at `target` with `answer`.
    pub(crate) fn reply(&self, answer: Answered, attempts: u32, target: Target) -> Reply {
        let mut reply = Reply::answered(answer, attempts, |model| self.served_by(target, model));
        reply.target = Some(target);
        reply
    }

    /// Replaces every configured key of every endpoint found in `text` with `****`.
    pub fn redact(&self, text: &str) -> String {
        self.endpoints
            .iter()
            .fold(text.to_owned(), |out, e| e.def.redact(&out))
    }

    /// Fallback `index` for a call that gave up; `None` past the last one, and
    /// `Some(None)` when this one has nothing to offer (no stored result for this
    /// business id, or no business id).
    pub(crate) fn fallback(
        &self,
        index: usize,
        now: Timestamp,
        business_id: Option<&[u8]>,
    ) -> Option<Option<FallbackStep>> {
        Some(match self.fallbacks.get(index)? {
            FallbackSlot::Endpoint(id) => Some(FallbackStep::Call(*id)),
            FallbackSlot::Template(v) => {
                Some(FallbackStep::Ready(v.clone(), FallbackKind::Template))
            }
            FallbackSlot::Stored => business_id.and_then(|id| self.stored(now, id)),
        })
    }

    /// The result stored for a business id.
    fn stored(&self, now: Timestamp, business_id: &[u8]) -> Option<FallbackStep> {
        let key = IdempotencyKey::from_business_id(business_id);
        let mut store = self
            .store
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // The store has no read-only lookup: a `begin` that finds nothing is undone.
        match store.begin(now, key) {
            Begin::Done(v) => Some(FallbackStep::Ready(v, FallbackKind::Stored)),
            Begin::New => {
                store.abandon(now, key);
                None
            }
            Begin::InFlight { .. } | Begin::Busy { .. } => None,
        }
    }

    /// Records a successful body for a business id, for the `Stored` fallback.
    pub(crate) fn store_result(&self, now: Timestamp, key: IdempotencyKey, body: &Value) {
        if let Some(store) = &self.store {
            let mut store = store.lock().unwrap_or_else(|e| e.into_inner());
            store.complete(now, key, body.clone());
        }
    }

    /// The reply of a fallback that answered after the primary call gave up for
    /// `reason` with `attempts` attempts in all, counted in the metrics.
    pub(crate) fn degraded(
        &self,
        body: Value,
        via: FallbackKind,
        reason: GiveUpReason,
        attempts: u32,
        target: Option<Target>,
    ) -> Reply {
        self.metrics.on_fallback(via, &reason);
        let answer = Answered::Whole(body);
        let mut reply = Reply::answered(answer, attempts, |model| {
            target.and_then(|t| self.served_by(t, model))
        });
        reply.target = target;
        reply.degraded = Some(Degraded { reason, via });
        reply
    }

    /// Whether the engine is locked right now (for the tests that check no event is
    /// recorded under the lock).
    #[cfg(all(test, feature = "tracing"))]
    pub(crate) fn engine_locked(&self) -> bool {
        matches!(
            self.engine.try_lock(),
            Err(std::sync::TryLockError::WouldBlock)
        )
    }
}

/// The fallbacks, their endpoints appended to `defs` (after the primary ones).
fn fallback_slots(defs: &mut Vec<EndpointDef>, fallbacks: Vec<Fallback>) -> Vec<FallbackSlot> {
    let slot = |f| match f {
        Fallback::Endpoint(def) => {
            // Past `u16::MAX` endpoints the engine refuses the whole list.
            let id = u16::try_from(defs.len()).unwrap_or(u16::MAX);
            defs.push(def);
            FallbackSlot::Endpoint(EndpointId(id))
        }
        Fallback::Stored => FallbackSlot::Stored,
        Fallback::Template(v) => FallbackSlot::Template(v),
    };
    fallbacks.into_iter().map(slot).collect()
}

/// Moves the engine's pending events into `batch`; true when it filled up (more may
/// be pending).
fn take_events(engine: &mut Engine, batch: &mut [Option<EngineEvent>; EVENT_BATCH]) -> bool {
    for slot in batch.iter_mut() {
        *slot = engine.poll_event();
        if slot.is_none() {
            return false;
        }
    }
    true
}

/// What holds the `Idempotency-Key`'s place in an endpoint's prepared headers (never
/// sent: each attempt's key replaces it).
const KEY_PLACEHOLDER: &str = "00000000-0000-0000-0000-000000000000";

/// The headers an attempt's copy of the prepared ones can take (or look up by entry)
/// without growing its index.
const ROOM: usize = 4;

/// The `Accept` every attempt sends: what reqwest sends unless told otherwise, for
/// every face alike (a JSON answer or an event stream, as the request asks).
const ACCEPT_ANY: &str = "*/*";

impl EndpointSlot {
    /// Endpoint `e` with every key's headers prepared (complete, with its `Host` and
    /// a place for the `Content-Length`, when `complete`).
    fn new(
        e: usize,
        def: EndpointDef,
        name: String,
        complete: bool,
    ) -> Result<EndpointSlot, SetupError> {
        let url = def.url();
        let host = complete
            .then(|| http::Uri::try_from(url.as_str()).ok())
            .flatten()
            .and_then(|u| crate::host_header(&u));
        let headers = def
            .keys
            .iter()
            .enumerate()
            .map(|(k, key)| {
                let mut h = def
                    .provider
                    .headers(key)
                    .map_err(|_| SetupError::InvalidKey {
                        endpoint: e,
                        key: k,
                    })?;
                // Its place, so that each attempt's key replaces it in the copy instead
                // of growing it.
                h.insert(IDEMPOTENCY_KEY, HeaderValue::from_static(KEY_PLACEHOLDER));
                h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_ANY));
                if let Some(host) = &host {
                    h.insert(HOST, host.clone());
                }
                if complete {
                    h.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
                }
                // Room in its index, which every attempt's copy keeps: hyper looks up
                // `Transfer-Encoding` by an entry, which grows a full index first.
                h.reserve(ROOM);
                Ok::<_, SetupError>(h)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let place = |of: &HeaderName| {
            headers
                .first()
                .and_then(|h| h.iter().position(|(name, _)| name == of))
        };
        let key_at = place(&IDEMPOTENCY_KEY);
        let length_at = place(&CONTENT_LENGTH);
        Ok(EndpointSlot {
            name,
            provider: def.provider,
            model: def.model.clone(),
            url,
            headers,
            key_at,
            length_at,
            share_breaker: false,
            def,
        })
    }
}

/// Whether some endpoint (or the policy) limits tokens, so calls must estimate theirs.
fn estimates_tokens(policy: &Policy, endpoints: &[EndpointSlot]) -> bool {
    policy.limiter.tokens.is_some()
        || endpoints
            .iter()
            .any(|e| e.def.limiter.as_ref().is_some_and(|l| l.tokens.is_some()))
}
