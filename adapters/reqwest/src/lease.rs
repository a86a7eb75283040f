//! Leases of shared request limits: the session's [`steadfast_http::Step::Lease`]
//! asks, taken to the store (Redis, with the `redis` feature) and answered. Without a
//! store an ask fails at once, and the endpoint runs on its fallback.

use steadfast_http::LeaseAsk;

use crate::Inner;
use crate::drive::S;

/// Takes `ask` to the store and reports the answer to the session.
pub(crate) async fn ask(c: &Inner, s: &mut S<'_>, ask: LeaseAsk) {
    #[cfg(feature = "redis")]
    let answer = c.store.lease(&c.clock, ask).await;
    #[cfg(not(feature = "redis"))]
    let answer = steadfast_http::LeaseAnswer::Failed;
    s.on_lease(c.clock.timestamp(), &ask, answer);
}

#[cfg(feature = "redis")]
pub(crate) use redis_store::{Store, spawn_key_sync};

#[cfg(feature = "redis")]
mod redis_store {
    use std::sync::{Arc, Weak};

    use steadfast_core::ids::EndpointId;
    use steadfast_http::{KeyPublish, LeaseAnswer, LeaseAsk, Shared, SharedKeyState};
    use steadfast_redis::{LimitKey, Rate, RedisStore};

    use crate::Inner;
    use crate::drive::Clock;

    /// Starts the key-state sync of a client with a store, on the current Tokio
    /// runtime (none: nothing is synced). It ends when the client is dropped.
    pub(crate) fn spawn_key_sync(inner: &Arc<Inner>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if inner.store.store.is_none() {
            return;
        }
        let every = inner.shared.policy().shared.key_sync;
        let weak = Arc::downgrade(inner);
        runtime.spawn(sync_loop(weak, every));
    }

    async fn sync_loop(weak: Weak<Inner>, every: std::time::Duration) {
        loop {
            tokio::time::sleep(every).await;
            let Some(inner) = weak.upgrade() else {
                return;
            };
            inner.store.sync_keys(&inner.shared, &inner.clock).await;
        }
    }

    /// The Redis store and, per endpoint (in engine order), the shared limit's key
    /// and rate.
    #[derive(Debug, Default)]
    pub(crate) struct Store {
        pub(super) store: Option<RedisStore>,
        limits: Vec<Option<(LimitKey, Rate)>>,
    }

    impl Store {
        /// Writes what this client learned of its keys to Redis, then reads back the
        /// state of every key (one pipeline per endpoint). A failed Redis call skips
        /// its part: the next round tries again.
        pub(crate) async fn sync_keys(&self, shared: &Shared, clock: &Clock) {
            let Some(store) = &self.store else {
                return;
            };
            let disable_for = shared.policy().shared.disable_for;
            for publish in shared.take_key_publishes() {
                let Some(id) =
                    shared.shared_key_id(publish.target().endpoint, publish.target().key.0)
                else {
                    continue;
                };
                let _ = match publish {
                    KeyPublish::Cool { for_, .. } => store.cool_key(&id, for_).await.map(|_| ()),
                    KeyPublish::Disable { .. } => store.disable_key(&id, disable_for).await,
                    KeyPublish::Enable { .. } => store.enable_key(&id).await,
                };
            }
            for e in 0..shared.endpoint_count() {
                let endpoint = EndpointId(u16::try_from(e).unwrap_or(u16::MAX));
                let ids: Vec<String> = (0..u16::MAX)
                    .map_while(|k| shared.shared_key_id(endpoint, k))
                    .collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let Ok(states) = store.key_states(&refs).await else {
                    continue;
                };
                let states: Vec<SharedKeyState> = states
                    .into_iter()
                    .map(|s| SharedKeyState {
                        cooling_for: s.cooling_for,
                        disabled: s.disabled,
                    })
                    .collect();
                shared.on_shared_keys(clock.timestamp(), endpoint, &states);
            }
        }

        /// The limits of `shared`'s endpoints, named after the endpoints (an endpoint
        /// whose name is no valid store id is never granted a lease: it runs on its
        /// fallback).
        pub(crate) fn new(store: Option<RedisStore>, shared: &Shared) -> Store {
            let limits = (0..shared.endpoint_count())
                .map(|i| {
                    let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
                    let (name, limit) = shared.shared_limit(id)?;
                    let key = LimitKey::new(name).ok()?;
                    let rate = Rate {
                        per_minute: limit.per_minute(),
                        burst: limit.burst,
                    };
                    Some((key, rate))
                })
                .collect();
            Store { store, limits }
        }

        /// Asks Redis for `ask`'s lease, waiting no longer than the ask lives. Its
        /// validity is shortened by the round trip, so it never outlives the window
        /// the store counted it in.
        pub(crate) async fn lease(&self, clock: &Clock, ask: LeaseAsk) -> LeaseAnswer {
            let limit = self.limits.get(usize::from(ask.endpoint.0));
            let (Some(store), Some(Some((key, rate)))) = (&self.store, limit) else {
                return LeaseAnswer::Failed;
            };
            let asked = clock.timestamp();
            let bounded = tokio::time::timeout_at(
                clock.instant(ask.expires),
                store.lease(key, *rate, ask.want),
            );
            match bounded.await {
                Ok(Ok(lease)) => {
                    let trip = clock.timestamp().saturating_duration_since(asked);
                    LeaseAnswer::Granted {
                        requests: lease.requests,
                        valid_for: lease.valid_for.saturating_sub(trip),
                        retry_in: lease.retry_in,
                    }
                }
                Ok(Err(_)) | Err(_) => LeaseAnswer::Failed,
            }
        }
    }
}
