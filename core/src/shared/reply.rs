//! A store's raw answer to a [`LeaseAsk`](super::LeaseAsk), and the lease it grants
//! this process: what the store counted, shortened by what the round trip took.

use core::time::Duration;

use super::LeaseAnswer;
use crate::time::Timestamp;

/// What a store's script returned to a lease ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreReply {
    /// A slice of a request limit: `granted` requests (0 when none is free) valid
    /// for `valid_for` from the store's instant; with 0, the next is free in
    /// `retry_in`.
    Requests {
        /// Requests leased.
        granted: u32,
        /// How long the store counts them.
        valid_for: Duration,
        /// With 0 granted: how long until one is free.
        retry_in: Duration,
    },
    /// `granted` tokens reserved from a bucket refilling `per_minute` tokens a minute.
    Tokens {
        /// Tokens reserved.
        granted: u32,
        /// The bucket's refill rate.
        per_minute: u32,
    },
    /// No tokens are free before `wait`.
    TokensNotBefore {
        /// How long until the ask's tokens are free.
        wait: Duration,
    },
    /// The store could not be asked (an error, a timeout, a limit it does not know).
    Failed,
}

impl StoreReply {
    /// The lease this reply grants to an ask sent at `asked` and answered at
    /// `answered`. The store counted the lease from an instant between the two, so
    /// its validity is shortened by the whole round trip: spent later, a request
    /// could land in a window that did not count it. A token lease is valid for as
    /// long as the bucket takes to earn its tokens back ([`earn_back`]).
    pub fn lease_answer(self, asked: Timestamp, answered: Timestamp) -> LeaseAnswer {
        let (requests, valid_for, retry_in) = match self {
            StoreReply::Requests {
                granted,
                valid_for,
                retry_in,
            } => (granted, valid_for, retry_in),
            StoreReply::Tokens {
                granted,
                per_minute,
            } => (granted, earn_back(granted, per_minute), Duration::ZERO),
            StoreReply::TokensNotBefore { wait } => (0, Duration::ZERO, wait),
            StoreReply::Failed => return LeaseAnswer::Failed,
        };
        let trip = answered.saturating_duration_since(asked);
        LeaseAnswer::Granted {
            requests,
            valid_for: valid_for.saturating_sub(trip),
            retry_in,
        }
    }
}

/// How long a bucket refilling `per_minute` tokens a minute takes to earn `tokens`
/// back (a rate of 0 counts as 1): a lease of them is spent within it.
pub fn earn_back(tokens: u32, per_minute: u32) -> Duration {
    let per_minute = u64::from(per_minute.max(1));
    let micros = u64::from(tokens).saturating_mul(60_000_000);
    Duration::from_micros(micros.checked_div(per_minute).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_request_lease_loses_its_round_trip() {
        let reply = StoreReply::Requests {
            granted: 5,
            valid_for: ms(500),
            retry_in: Duration::ZERO,
        };
        assert_eq!(
            reply.lease_answer(Timestamp::from_millis(100), Timestamp::from_millis(112)),
            LeaseAnswer::Granted {
                requests: 5,
                valid_for: ms(488),
                retry_in: Duration::ZERO,
            }
        );
        // A round trip longer than the lease leaves nothing to spend.
        assert_eq!(
            reply.lease_answer(Timestamp::from_millis(0), Timestamp::from_millis(900)),
            LeaseAnswer::Granted {
                requests: 5,
                valid_for: Duration::ZERO,
                retry_in: Duration::ZERO,
            }
        );
        let empty = StoreReply::Requests {
            granted: 0,
            valid_for: Duration::ZERO,
            retry_in: ms(90),
        };
        assert_eq!(
            empty.lease_answer(Timestamp::ZERO, Timestamp::from_millis(3)),
            LeaseAnswer::Granted {
                requests: 0,
                valid_for: Duration::ZERO,
                retry_in: ms(90),
            }
        );
    }

    #[test]
    fn a_token_lease_lasts_while_the_bucket_earns_it_back() {
        // 60 000 tokens a minute: 1 000 a second, so 250 tokens take 250 ms.
        let reply = StoreReply::Tokens {
            granted: 250,
            per_minute: 60_000,
        };
        assert_eq!(
            reply.lease_answer(Timestamp::from_millis(10), Timestamp::from_millis(15)),
            LeaseAnswer::Granted {
                requests: 250,
                valid_for: ms(245),
                retry_in: Duration::ZERO,
            }
        );
        assert_eq!(
            StoreReply::TokensNotBefore { wait: ms(40) }
                .lease_answer(Timestamp::ZERO, Timestamp::from_millis(2)),
            LeaseAnswer::Granted {
                requests: 0,
                valid_for: Duration::ZERO,
                retry_in: ms(40),
            }
        );
        assert_eq!(
            StoreReply::Failed.lease_answer(Timestamp::ZERO, Timestamp::ZERO),
            LeaseAnswer::Failed
        );
        assert_eq!(
            earn_back(1, 0),
            Duration::from_secs(60),
            "a rate of 0 counts as 1"
        );
        assert_eq!(
            earn_back(u32::MAX, 1),
            Duration::from_micros(u64::from(u32::MAX) * 60_000_000)
        );
    }
}
