//! One key's rate limits: a bucket per limited quantity, checked and taken together,
//! and their headers on every answer the key gets.

use core::time::Duration;

use steadfast_core::provider::Provider;
use steadfast_core::time::Timestamp;

use crate::bucket::Bucket;
use crate::scenario::ServerLimits;
use crate::wire::call::Call;
use crate::wire::headers::{Header, Window, rate_limit};

/// The buckets of one key.
#[derive(Debug, Clone)]
pub(crate) struct KeyLimits {
    buckets: Vec<(Window, Bucket)>,
}

impl KeyLimits {
    pub(crate) fn new(l: &ServerLimits) -> KeyLimits {
        let buckets = l
            .windows()
            .map(|(w, limit, burst)| (w, Bucket::new(limit, burst)))
            .collect();
        KeyLimits { buckets }
    }

    /// Counts the request when every bucket has room (`Ok`), else the wait until they
    /// all do; either way the buckets' headers are written to `out`.
    pub(crate) fn count(
        &mut self,
        now: Timestamp,
        wall: u64,
        call: &Call,
        out: &mut Vec<Header>,
    ) -> Result<(), Duration> {
        let wait = self
            .buckets
            .iter()
            .filter_map(|(w, b)| b.check(now, w.cost(call)).err())
            .max();
        if wait.is_none() {
            for (w, b) in &mut self.buckets {
                b.take(now, w.cost(call));
            }
        }
        self.headers(call.provider, now, wall, out);
        wait.map_or(Ok(()), Err)
    }

    fn headers(&self, provider: Provider, now: Timestamp, wall: u64, out: &mut Vec<Header>) {
        for (w, b) in &self.buckets {
            rate_limit(provider, *w, b.state(now), wall, out);
        }
    }

    /// The limit of the request bucket (for error messages).
    pub(crate) fn request_limit(&self) -> Option<u64> {
        self.buckets
            .iter()
            .find(|(w, _)| *w == Window::Requests)
            .map(|(_, b)| b.state(Timestamp::ZERO).limit)
    }
}
