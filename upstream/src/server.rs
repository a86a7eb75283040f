//! One endpoint of the scenario: what a request that reached it gets.
//!
//! In order: a bad key is refused; an outage window covering the instant (or the
//! endpoint's first requests) applies; the key's rate limits count the request; then a
//! random fault by the scenario's rates, fewer on repeats when the rates decay; else a
//! success after the latency.

use core::time::Duration;
use std::collections::HashMap;

use steadfast_core::provider::Provider;
use steadfast_core::rng::{CoreRng, below, unit_f64};
use steadfast_core::time::Timestamp;

use crate::answer::{Body, Delivery};
use crate::idem::Idem;
use crate::limits::KeyLimits;
use crate::scenario::{BadKeyKind, EndpointSpec, OutageKind};
use crate::stats::bump;
use crate::verdict::{Fate, Verdict};
use crate::wire::call::Call;
use crate::wire::errors::{error_body, gateway_page, mask_key};
use crate::wire::headers::{Header, openai_duration, retry_after};

/// One endpoint's state.
pub(crate) struct Server {
    pub spec: EndpointSpec,
    pub idem: Idem,
    limits: HashMap<String, KeyLimits>,
    /// Per request identity: (times seen, failures since its last success).
    seen: HashMap<u64, (u64, u64)>,
    requests: u64,
    max_keys: usize,
}

/// What the scenario looks at for one request.
pub(crate) struct Ctx<'a> {
    pub now: Timestamp,
    pub wall: u64,
    pub provider: Provider,
    pub api_key: &'a str,
    pub call: &'a Call,
    pub request_id: &'a str,
}

impl Server {
    pub(crate) fn new(spec: EndpointSpec, max_keys: usize) -> Server {
        Server {
            spec,
            idem: Idem::new(max_keys),
            limits: HashMap::new(),
            seen: HashMap::new(),
            requests: 0,
            max_keys: max_keys.max(1),
        }
    }

    /// Counts a request of `identity`: how often it was seen before, and its failures
    /// since its last success.
    pub(crate) fn see(&mut self, identity: u64) -> (u64, u64) {
        if self.seen.len() >= self.max_keys && !self.seen.contains_key(&identity) {
            self.seen.clear();
        }
        let entry = self.seen.entry(identity).or_insert((0, 0));
        let before = *entry;
        bump(&mut entry.0);
        before
    }

    /// Records how the request of `identity` ended.
    pub(crate) fn seen_end(&mut self, identity: u64, clean: bool, failures_before: u64) {
        if let Some(entry) = self.seen.get_mut(&identity) {
            entry.1 = if clean {
                0
            } else {
                failures_before.saturating_add(1)
            };
        }
    }

    /// What the scenario does with the request.
    pub(crate) fn scenario(&mut self, c: &Ctx, rng: &mut CoreRng, failures_before: u64) -> Verdict {
        let index = self.requests;
        bump(&mut self.requests);
        if let Some(v) = self.bad_key(c, rng) {
            return v;
        }
        let mut slow = None;
        if let Some(v) = self.outage(c, index, rng, &mut slow) {
            return v;
        }
        let mut headers = Vec::new();
        if let Err(wait) = self.count(c, &mut headers) {
            let mut v = self.limited(c, wait, rng);
            headers.append(&mut v.headers);
            v.headers = headers;
            return v;
        }
        let mut v = self
            .fault(c, rng, failures_before, slow)
            .unwrap_or_else(|| Verdict::ok(slow.unwrap_or(self.spec.latency).sample(rng)));
        headers.append(&mut v.headers);
        v.headers = headers;
        v
    }

    fn error_after(&self, v: Verdict, rng: &mut CoreRng) -> Verdict {
        v.after(self.spec.error_latency.sample(rng))
    }

    fn bad_key(&self, c: &Ctx, rng: &mut CoreRng) -> Option<Verdict> {
        let since = Duration::from_nanos(c.now.as_nanos());
        let index = self.spec.key_index(c.api_key);
        let by_index = self
            .spec
            .bad_keys
            .iter()
            .find(|b| b.key == index && b.from <= since)
            .map(|b| b.kind);
        let by_name = || {
            let named = self.spec.bad_key_names.iter();
            named.copied().find(|k| k.named_in(c.api_key))
        };
        let kind = by_index.or_else(by_name)?;
        Some(self.error_after(bad_key_answer(c, kind), rng))
    }

    fn outage(
        &self,
        c: &Ctx,
        index: u64,
        rng: &mut CoreRng,
        slow: &mut Option<crate::dist::Dist>,
    ) -> Option<Verdict> {
        let since = Duration::from_nanos(c.now.as_nanos());
        for o in &self.spec.outages {
            let covered = o.covers(since) || index < o.first_requests;
            if !covered || !(o.rate >= 1.0 || unit_f64(rng) < o.rate) {
                continue;
            }
            let v = match o.kind {
                OutageKind::Status => {
                    let status = o.status.unwrap_or(overloaded(c.provider));
                    Verdict::status(c.provider, status, c.request_id)
                }
                OutageKind::Timeout => Verdict::of(Fate::Hang),
                OutageKind::Reset => Verdict::of(Fate::Reset),
                OutageKind::Refused => Verdict::of(Fate::Refused),
                // A slow window stretches the answer; later windows may still fail it.
                OutageKind::Slow => {
                    *slow = slow.or(o.latency);
                    continue;
                }
            };
            return Some(self.error_after(v.label("outage"), rng));
        }
        None
    }

    fn count(&mut self, c: &Ctx, headers: &mut Vec<Header>) -> Result<(), Duration> {
        let Some(l) = &self.spec.limits else {
            return Ok(());
        };
        if self.limits.len() >= self.max_keys && !self.limits.contains_key(c.api_key) {
            self.limits.clear();
        }
        let key = self
            .limits
            .entry(c.api_key.to_owned())
            .or_insert_with(|| KeyLimits::new(l));
        key.count(c.now, c.wall, c.call, headers)
    }

    fn limited(&self, c: &Ctx, wait: Duration, rng: &mut CoreRng) -> Verdict {
        let rpm = self
            .limits
            .get(c.api_key)
            .and_then(KeyLimits::request_limit)
            .unwrap_or(0);
        let body = match c.provider {
            Provider::OpenAi => error_body(
                c.provider,
                "requests",
                Some("rate_limit_exceeded"),
                &format!(
                    "Rate limit reached for requests per min (RPM): Limit {rpm}, Used {rpm}, Requested 1. Please try again in {}.",
                    openai_duration(wait)
                ),
                c.request_id,
            ),
            Provider::Anthropic => error_body(
                c.provider,
                "rate_limit_error",
                None,
                &format!(
                    "This request would exceed your organization's rate limit of {rpm} requests per minute. Please try again later."
                ),
                c.request_id,
            ),
        };
        self.throttled(c.provider, Verdict::error(429, body), wait, rng)
    }

    fn throttled(&self, p: Provider, v: Verdict, wait: Duration, rng: &mut CoreRng) -> Verdict {
        let mut v = self.error_after(v.label("rate_limit"), rng);
        retry_after(p, wait, &mut v.headers);
        v.retry_after = Some(wait);
        v
    }

    /// A random fault, or none.
    fn fault(
        &self,
        c: &Ctx,
        rng: &mut CoreRng,
        failures_before: u64,
        slow: Option<crate::dist::Dist>,
    ) -> Option<Verdict> {
        let f = &self.spec.faults;
        let exponent = i32::try_from(failures_before.min(60)).unwrap_or(60);
        let weight = f.decay.powi(exponent);
        let u = unit_f64(rng);
        let mut edge = 0.0;
        let mut which = None;
        for (i, (_, rate)) in f.rates().iter().enumerate() {
            edge += rate * weight;
            if u < edge {
                which = Some(i);
                break;
            }
        }
        let (p, id) = (c.provider, c.request_id);
        let v = match which? {
            0 => {
                let v = Verdict::status(p, 429, id);
                return Some(match f.retry_after.map(|d| d.sample(rng)) {
                    Some(wait) => self.throttled(p, v, wait, rng),
                    None => self.error_after(v.label("rate_limit"), rng),
                });
            }
            1 => match below(rng, 3) {
                0 => Verdict::status(p, 500, id),
                1 => Verdict::of(Fate::Error {
                    status: 502,
                    body: Body::Bytes {
                        content_type: "text/html".to_owned(),
                        bytes: gateway_page(502),
                    },
                }),
                _ => Verdict::status(p, 503, id),
            }
            .label("status"),
            2 => Verdict::status(p, overloaded(p), id).label("status"),
            3 => Verdict::of(Fate::Hang).label("hang"),
            4 => Verdict::of(Fate::Lost).label("reset"),
            5 => lost(Delivery::Whole, true).label("malformed"),
            6 => lost(Delivery::Truncated, false).label("truncated_body"),
            _ => {
                let delivery = match c.call.stream {
                    true => Delivery::Cut(f.stream_cut_after),
                    false => Delivery::Truncated,
                };
                lost(delivery, false).label("stream_cut")
            }
        };
        // A success broken on the way starts as a success does.
        Some(match v.fate {
            Fate::Done { .. } => {
                let after = slow.unwrap_or(self.spec.latency).sample(rng);
                v.after(after)
            }
            _ => self.error_after(v, rng),
        })
    }
}

/// A success that goes out broken (the work is done).
fn lost(delivery: Delivery, malformed: bool) -> Verdict {
    Verdict::of(Fate::Done {
        delivery,
        malformed,
        pad: 0,
    })
}

/// The provider's overloaded status: Anthropic's 529, OpenAI's 503.
pub(crate) fn overloaded(p: Provider) -> u16 {
    match p {
        Provider::OpenAi => 503,
        Provider::Anthropic => 529,
    }
}

fn bad_key_answer(c: &Ctx, kind: BadKeyKind) -> Verdict {
    let (p, id) = (c.provider, c.request_id);
    match (p, kind) {
        (Provider::OpenAi, BadKeyKind::Revoked) => Verdict::error(
            401,
            error_body(
                p,
                "invalid_request_error",
                Some("invalid_api_key"),
                &format!(
                    "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                    mask_key(c.api_key)
                ),
                id,
            ),
        )
        .label("auth"),
        (Provider::Anthropic, BadKeyKind::Revoked) => Verdict::status(p, 401, id).label("auth"),
        (Provider::OpenAi, BadKeyKind::QuotaExhausted) => Verdict::error(
            429,
            error_body(
                p,
                "insufficient_quota",
                Some("insufficient_quota"),
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                id,
            ),
        )
        .label("quota"),
        (Provider::Anthropic, BadKeyKind::QuotaExhausted) => {
            Verdict::status(p, 402, id).label("quota")
        }
    }
}
