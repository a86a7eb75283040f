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
pub(crate) use redis_store::Store;

#[cfg(feature = "redis")]
mod redis_store {
    use steadfast_core::ids::EndpointId;
    use steadfast_http::{LeaseAnswer, LeaseAsk, Shared};
    use steadfast_redis::{LimitKey, Rate, RedisStore};

    use crate::drive::Clock;

    /// The Redis store and, per endpoint (in engine order), the shared limit's key
    /// and rate.
    #[derive(Debug, Default)]
    pub(crate) struct Store {
        store: Option<RedisStore>,
        limits: Vec<Option<(LimitKey, Rate)>>,
    }

    impl Store {
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
