//! One breaker "open until" for every process: an endpoint whose breaker opens here
//! stays unsent-to everywhere until its next probe.
//!
//! It rides on the key sync ([`super::keys`]): every time the breaker of an endpoint
//! that shares it ([`EndpointSpec::share_breaker`](crate::engine::EndpointSpec::share_breaker))
//! opens on its own (a trip, or a failed probe), the engine queues a
//! [`BreakerPublish`] with the instant it half-opens
//! ([`Engine::poll_breaker_publish`](crate::engine::Engine::poll_breaker_publish)); the
//! driver writes it to the store as a key that lives until then (a store only ever
//! extends it). On the key-sync cadence the driver reads each endpoint's open time
//! back and hands it to
//! [`Engine::handle_shared_breaker`](crate::engine::Engine::handle_shared_breaker): a
//! breaker closed or half-open here opens until the same instant (a
//! [`SharedEvent::BreakerOpened`](crate::shared::SharedEvent::BreakerOpened) says
//! where it came from), then half-opens and probes as after a trip of its own.
//!
//! What came from the store is never published back. Nor is an open time read back
//! that ends within [`SharedConfig::ask_timeout`](crate::shared::SharedConfig::ask_timeout)
//! of one this engine already knows: that is the same open (this engine's own,
//! returned by the store a round trip later, or another replica's that tripped at the
//! same moment), and re-opening a breaker that half-opened for it would only cut its
//! probes short.
//!
//! A store that cannot be reached leaves every breaker to its own decisions, under
//! [`FailMode::Open`](crate::shared::FailMode::Open) and
//! [`FailMode::Closed`](crate::shared::FailMode::Closed) alike: a missing read opens
//! nothing and closes nothing, and a lost publish only leaves the others to find the
//! outage themselves.

use core::time::Duration;

use crate::ids::EndpointId;
use crate::time::Timestamp;

/// Publishes kept before the oldest are dropped.
pub const BREAKER_PUBLISH_CAPACITY: usize = 16;

/// A breaker that opened here, for the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPublish {
    /// The endpoint.
    pub endpoint: EndpointId,
    /// When it opened.
    pub at: Timestamp,
    /// When it half-opens (its next probe).
    pub until: Timestamp,
}

impl BreakerPublish {
    /// How long the store keeps it open, written at `now` (zero once it is over: a
    /// driver then writes nothing).
    pub fn open_for(&self, now: Timestamp) -> Duration {
        self.until.saturating_duration_since(now)
    }
}

/// When a store's open time, read at `now` with `open_for` left, opens a breaker that
/// already knows an open until `known`: only when it ends later than `known` by more
/// than `tolerance` (see the module documentation). Returns the instant to open until.
pub fn store_open_until(
    now: Timestamp,
    open_for: Option<Duration>,
    known: Timestamp,
    tolerance: Duration,
) -> Option<Timestamp> {
    let until = now.saturating_add(open_for.filter(|d| !d.is_zero())?);
    (until > known.saturating_add(tolerance)).then_some(until)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_open_time_opens_only_past_the_known_one_and_its_tolerance() {
        let now = Timestamp::from_millis(1_000);
        let known = Timestamp::from_millis(1_500);
        assert_eq!(store_open_until(now, None, known, ms(250)), None);
        assert_eq!(store_open_until(now, Some(ms(0)), known, ms(250)), None);
        // Its own open, back a round trip later: the same instant, give or take.
        assert_eq!(store_open_until(now, Some(ms(740)), known, ms(250)), None);
        assert_eq!(
            store_open_until(now, Some(ms(751)), known, ms(250)),
            Some(Timestamp::from_millis(1_751))
        );
        assert_eq!(
            store_open_until(now, Some(ms(30)), Timestamp::ZERO, ms(0)),
            Some(Timestamp::from_millis(1_030))
        );
    }

    #[test]
    fn a_publish_is_written_for_the_time_it_has_left() {
        let p = BreakerPublish {
            endpoint: EndpointId(0),
            at: Timestamp::from_millis(0),
            until: Timestamp::from_millis(30_000),
        };
        assert_eq!(p.open_for(Timestamp::from_millis(250)), ms(29_750));
        assert_eq!(p.open_for(Timestamp::from_millis(31_000)), Duration::ZERO);
    }
}
