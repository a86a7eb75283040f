//! Leases of shared limits: the session's [`steadfast_http::Step::Lease`] asks, taken
//! to the store (Redis, with the `redis` feature; see [`crate::redis_store`]) and
//! answered. Without a store an ask fails at once, and the endpoint runs on its
//! fallback.

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
