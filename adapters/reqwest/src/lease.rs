//! Leases of shared limits: the session's [`steadfast_http::Step::Lease`] asks, taken
//! to the store (Redis, with the `redis` feature; see `steadfast_redis::client`) and
//! answered. Without a store an ask fails at once, and the endpoint runs on its
//! fallback.

use steadfast_http::LeaseAsk;

use crate::Inner;
use crate::drive::S;

/// Takes `ask` to the store and reports the answer to the session.
pub(crate) async fn ask(c: &Inner, s: &mut S<'_>, ask: LeaseAsk) {
    #[cfg(feature = "redis")]
    let answer = match &c.store {
        Some(store) => {
            let deadline = c.clock.instant(ask.expires);
            store.lease(ask, || c.clock.timestamp(), deadline).await
        }
        None => steadfast_http::LeaseAnswer::Failed,
    };
    #[cfg(not(feature = "redis"))]
    let answer = steadfast_http::LeaseAnswer::Failed;
    s.on_lease(c.clock.timestamp(), &ask, answer);
}
