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
//! The store keeps each open's whole length beside its time left, so a reader knows
//! when it began: an open that began before this engine's latest success of the
//! endpoint is older news than that success (another replica's probe failed just
//! before the endpoint came back) and opens nothing here.
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

impl BreakerPublish {
    /// The whole open, from the instant it opened: a store keeps it beside the time
    /// left, so a reader knows how long ago the open began.
    pub fn whole(&self) -> Duration {
        self.until.saturating_duration_since(self.at)
    }
}

/// What the store holds of an endpoint's breaker open: the time it has `left`, and
/// the `whole` open its writer published ([`BreakerPublish::whole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedOpen {
    /// How long it stays open.
    pub left: Duration,
    /// How long it was opened for, from the instant it opened.
    pub whole: Duration,
}

impl SharedOpen {
    /// When it opened, as read at `now`.
    pub fn opened_at(&self, now: Timestamp) -> Timestamp {
        now.saturating_sub(self.whole.saturating_sub(self.left))
    }
}

/// What this engine knows of an endpoint when the store's open comes in: the latest
/// instant its breaker was known open until, and its latest success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The latest open-until known here (its own, or the store's).
    pub open_until: Timestamp,
    /// The latest success here.
    pub succeeded_at: Timestamp,
}

/// When the store's `open`, read at `now`, opens a breaker that knows `known`: only
/// when it ends later than `known.open_until` by more than `tolerance`, and it began
/// after the latest success here (a success seen since is fresher news: the open
/// came from a failure before it). Returns the instant to open until.
pub fn store_open_until(
    now: Timestamp,
    open: Option<SharedOpen>,
    known: Known,
    tolerance: Duration,
) -> Option<Timestamp> {
    let open = open.filter(|o| !o.left.is_zero())?;
    let until = now.saturating_add(open.left);
    let later = until > known.open_until.saturating_add(tolerance);
    (later && open.opened_at(now) > known.succeeded_at).then_some(until)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn open(left: u64, whole: u64) -> Option<SharedOpen> {
        Some(SharedOpen {
            left: ms(left),
            whole: ms(whole),
        })
    }

    #[test]
    fn an_open_time_opens_only_past_the_known_one_and_its_tolerance() {
        let now = Timestamp::from_millis(1_000);
        let known = Known {
            open_until: Timestamp::from_millis(1_500),
            succeeded_at: Timestamp::ZERO,
        };
        assert_eq!(store_open_until(now, None, known, ms(250)), None);
        assert_eq!(store_open_until(now, open(0, 500), known, ms(250)), None);
        // Its own open, back a round trip later: the same instant, give or take.
        assert_eq!(
            store_open_until(now, open(740, 1_000), known, ms(250)),
            None
        );
        assert_eq!(
            store_open_until(now, open(751, 1_000), known, ms(250)),
            Some(Timestamp::from_millis(1_751))
        );
        let fresh = Known {
            open_until: Timestamp::ZERO,
            succeeded_at: Timestamp::ZERO,
        };
        assert_eq!(
            store_open_until(now, open(30, 40), fresh, ms(0)),
            Some(Timestamp::from_millis(1_030))
        );
    }

    #[test]
    fn an_open_that_began_before_a_success_here_is_old_news() {
        let now = Timestamp::from_millis(10_000);
        let known = |succeeded| Known {
            open_until: Timestamp::ZERO,
            succeeded_at: Timestamp::from_millis(succeeded),
        };
        // Opened 2 s ago (for 20 s, 18 s left).
        assert_eq!(
            open(18_000, 20_000).map(|o| o.opened_at(now)),
            Some(Timestamp::from_millis(8_000))
        );
        assert_eq!(
            store_open_until(now, open(18_000, 20_000), known(8_500), ms(0)),
            None
        );
        assert_eq!(
            store_open_until(now, open(18_000, 20_000), known(7_500), ms(0)),
            Some(Timestamp::from_millis(28_000))
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
        assert_eq!(p.whole(), ms(30_000));
        assert_eq!(p.open_for(Timestamp::from_millis(31_000)), Duration::ZERO);
    }
}
