//! The capacity a perfect client schedules over: per endpoint its keys (their
//! buckets, and when they go bad) and its outage windows.
//!
//! Buckets are the upstream's own [`Bucket`] (GCRA in integer nanoseconds) counting
//! millionths of a request, so a call can take its expected requests (1.25 for a 20%
//! failure rate) and a call of exactly one request takes exactly what the upstream's
//! bucket takes.

use core::time::Duration;

use steadfast_core::time::Timestamp;
use steadfast_upstream::Bucket;
use steadfast_upstream::scenario::{EndpointSpec, Load, Outage, OutageKind};
use steadfast_upstream::wire::call::Call;

use super::spread::mean_of;
use crate::driver::{body, key_text};

/// A bucket's unit: a millionth of a request (or of a token).
const UNIT: u64 = 1_000_000;

/// How many times a search for room may move on (outage ends, bucket waits) before it
/// gives the key up; each move is past an outage or to a bucket's room, so a handful
/// suffice.
const MAX_MOVES: usize = 64;

/// One key of an endpoint.
#[derive(Debug, Clone)]
struct Key {
    /// From when it is bad (never usable again).
    bad_from: Option<Timestamp>,
    /// Its buckets with what one request takes from each, in units.
    buckets: Vec<(Bucket, u64)>,
}

/// One endpoint as the schedule sees it.
#[derive(Debug, Clone)]
pub(crate) struct Lane<'a> {
    pub spec: &'a EndpointSpec,
    keys: Vec<Key>,
    /// The expected failed requests of windows covering the endpoint's first requests,
    /// and their expected time, paid by the first call sent here.
    pub head: Option<(f64, f64)>,
}

impl<'a> Lane<'a> {
    /// The endpoint `spec` with fresh buckets, under `load`.
    pub(crate) fn new(spec: &'a EndpointSpec, load: &Load) -> Lane<'a> {
        let call = Call::parse(spec.api, &body(load)).ok();
        let keys = (0..spec.keys)
            .map(|k| key(spec, k, call.as_ref()))
            .collect();
        Lane {
            spec,
            keys,
            head: head(spec),
        }
    }

    /// The earliest instant from `from` on at which key `k` may send: not bad, outside
    /// every full outage window, with room in its buckets; none if never.
    pub(crate) fn earliest(&self, k: usize, from: Timestamp) -> Option<Timestamp> {
        let key = self.keys.get(k)?;
        let mut t = from;
        for _ in 0..MAX_MOVES {
            if key.bad_from.is_some_and(|b| b <= t) {
                return None;
            }
            if let Some(end) = self.full_outage_end(t) {
                t = end;
                continue;
            }
            let wait = key
                .buckets
                .iter()
                .filter_map(|(b, cost)| b.check(t, *cost).err())
                .max();
            match wait {
                None => return Some(t),
                Some(w) => t = t.saturating_add(w.max(Duration::from_nanos(1))),
            }
        }
        None
    }

    /// Takes `units` requests from key `k`'s buckets at `at`.
    pub(crate) fn take(&mut self, k: usize, at: Timestamp, units: f64) {
        let Some(key) = self.keys.get_mut(k) else {
            return;
        };
        for (bucket, cost) in &mut key.buckets {
            bucket.take(at, (*cost as f64 * units).round() as u64);
        }
    }

    /// How many keys it has.
    pub(crate) fn keys(&self) -> usize {
        self.keys.len()
    }

    /// Whether its keys are interchangeable (no buckets): only the first usable one
    /// need be tried.
    pub(crate) fn unlimited(&self) -> bool {
        self.spec.limits.is_none()
    }

    /// The outage windows covering `at` that let some requests through (partial or
    /// slow), by index.
    pub(crate) fn covering(&self, at: Timestamp) -> Vec<usize> {
        let since = Duration::from_nanos(at.as_nanos());
        let outages = self.spec.outages.iter().enumerate();
        outages
            .filter(|(_, o)| o.covers(since) && !full(o))
            .map(|(i, _)| i)
            .collect()
    }

    fn full_outage_end(&self, at: Timestamp) -> Option<Timestamp> {
        let since = Duration::from_nanos(at.as_nanos());
        let o = self
            .spec
            .outages
            .iter()
            .find(|o| o.covers(since) && full(o))?;
        Some(Timestamp::from_nanos(
            u64::try_from(o.end.as_nanos()).unwrap_or(u64::MAX),
        ))
    }
}

/// A window no request gets through.
fn full(o: &Outage) -> bool {
    o.kind != OutageKind::Slow && o.rate >= 1.0
}

fn key(spec: &EndpointSpec, k: u16, call: Option<&Call>) -> Key {
    let text = key_text(spec, k);
    let named = spec.bad_key_names.iter().any(|b| b.named_in(&text));
    let listed = spec
        .bad_keys
        .iter()
        .filter(|b| b.key == k)
        .map(|b| b.from)
        .min();
    let bad_from = match named {
        true => Some(Timestamp::ZERO),
        false => {
            listed.map(|d| Timestamp::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
        }
    };
    let mut buckets = Vec::new();
    for (w, limit, burst) in spec.limits.iter().flat_map(|l| l.windows()) {
        let cost = call.map_or(1, |c| w.cost(c));
        if cost > burst.clamp(1, limit.max(1)) {
            // More than a full bucket holds: the key can never send this call.
            return Key {
                bad_from: Some(Timestamp::ZERO),
                buckets,
            };
        }
        let scaled = |n: u64| n.saturating_mul(UNIT);
        buckets.push((Bucket::new(scaled(limit), scaled(burst)), scaled(cost)));
    }
    Key { bad_from, buckets }
}

/// The expected failed requests and time of the windows covering the endpoint's first
/// requests.
fn head(spec: &EndpointSpec) -> Option<(f64, f64)> {
    let mut requests = 0.0;
    let mut secs = 0.0;
    for o in spec.outages.iter().filter(|o| o.kind != OutageKind::Slow) {
        let failed = o.first_requests as f64 * o.rate;
        let each = match o.kind {
            OutageKind::Timeout => mean_of(&spec.latency),
            _ => mean_of(&spec.error_latency),
        };
        requests += failed;
        secs += failed * each;
    }
    (requests > 0.0).then_some((requests, secs))
}
