//! Decisions no peer crate makes on its own: key/endpoint selection, classification,
//! and reading a response's headers and error body.
//!
//! - pool: two endpoints of priority 0 with four keys each and a fallback of priority
//!   1; [`Pool::pick_key`] on one endpoint, and [`Pool::select`] walking the whole order
//!   (every endpoint admitted, as when breakers, budgets and limiters all say yes);
//! - classification: [`ClassifyConfig::classify`] of a bare 503 and of an OpenAI 429
//!   whose body says `rate_limit_exceeded` (the per-kind rule wins over the status);
//! - headers: [`Hints::from_headers`] over the full header set of a real-looking
//!   OpenAI and Anthropic 429 (24 and 27 headers, most of them irrelevant);
//! - error body: [`ErrorFacts::scan`] of OpenAI's 429 body.

use std::hint::black_box;

use steadfast_core::classify::{ClassifyConfig, ErrorFacts, Verdict};
use steadfast_core::hints::Hints;
use steadfast_core::ids::EndpointId;
use steadfast_core::outcome::{Outcome, Response};
use steadfast_core::pool::{EndpointConfig, KeyPick, Pool, PoolConfig, Selection};
use steadfast_core::time::Timestamp;

use crate::{Case, Group, STEADFAST, Target, Visitor, Workload};

/// Picking a key of one endpoint.
pub const POOL_PICK_KEY: Group = Group {
    id: "pool_pick_key",
    label: "pool: pick_key (round-robin over 4 keys)",
    per_iteration: 1,
    target: Target::None,
};

/// Selecting a target across the pool.
pub const POOL_SELECT: Group = Group {
    id: "pool_select",
    label: "pool: select (3 endpoints, 2 priorities)",
    per_iteration: 1,
    target: Target::None,
};

/// Classifying a 503.
pub const CLASSIFY_503: Group = Group {
    id: "classify_503",
    label: "classify: 503",
    per_iteration: 1,
    target: Target::None,
};

/// Classifying a 429 with an error body.
pub const CLASSIFY_429: Group = Group {
    id: "classify_429",
    label: "classify: 429 rate_limit_exceeded",
    per_iteration: 1,
    target: Target::None,
};

/// Parsing OpenAI's 429 headers.
pub const HINTS_OPENAI: Group = Group {
    id: "hints_openai_429",
    label: "headers: Hints::from_headers, OpenAI 429 (24 headers)",
    per_iteration: 1,
    target: Target::None,
};

/// Parsing Anthropic's 429 headers.
pub const HINTS_ANTHROPIC: Group = Group {
    id: "hints_anthropic_429",
    label: "headers: Hints::from_headers, Anthropic 429 (27 headers)",
    per_iteration: 1,
    target: Target::None,
};

/// Scanning an error body.
pub const ERROR_BODY: Group = Group {
    id: "error_body_scan",
    label: "error body: ErrorFacts::scan, OpenAI 429 body",
    per_iteration: 1,
    target: Target::None,
};

/// The headers of an OpenAI 429 (request- and token-window headers, `retry-after`,
/// and the usual CDN and tracing noise).
pub const OPENAI_429: &[(&str, &str)] = &[
    ("date", "Tue, 14 Jan 2025 10:00:00 GMT"),
    ("content-type", "application/json; charset=utf-8"),
    ("content-length", "337"),
    ("connection", "keep-alive"),
    ("vary", "Origin"),
    ("x-ratelimit-limit-requests", "10000"),
    ("x-ratelimit-limit-tokens", "2000000"),
    ("x-ratelimit-remaining-requests", "9999"),
    ("x-ratelimit-remaining-tokens", "0"),
    ("x-ratelimit-reset-requests", "6ms"),
    ("x-ratelimit-reset-tokens", "1m30.5s"),
    ("x-request-id", "req_0a1b2c3d4e5f60718293a4b5c6d7e8f9"),
    ("retry-after", "20"),
    ("retry-after-ms", "19876.5"),
    (
        "strict-transport-security",
        "max-age=31536000; includeSubDomains; preload",
    ),
    ("cf-cache-status", "DYNAMIC"),
    (
        "set-cookie",
        "__cf_bm=Zm9vYmFyYmF6cXV4cXV1eA; path=/; expires=Tue, 14-Jan-25 10:30:00 GMT; \
         domain=.api.openai.com; HttpOnly; Secure; SameSite=None",
    ),
    ("x-content-type-options", "nosniff"),
    ("server", "cloudflare"),
    ("cf-ray", "8f1c2d3e4f5a6b7c-AMS"),
    ("alt-svc", "h3=\":443\"; ma=86400"),
    ("openai-organization", "org-abcdefghijklmnopqrstuvwx"),
    ("openai-processing-ms", "12"),
    ("openai-version", "2020-10-01"),
];

/// The headers of an Anthropic 429 (three token windows with RFC 3339 resets).
pub const ANTHROPIC_429: &[(&str, &str)] = &[
    ("date", "Tue, 14 Jan 2025 10:00:00 GMT"),
    ("content-type", "application/json"),
    ("content-length", "134"),
    ("connection", "keep-alive"),
    ("retry-after", "15"),
    ("x-should-retry", "true"),
    ("anthropic-ratelimit-requests-limit", "4000"),
    ("anthropic-ratelimit-requests-remaining", "3999"),
    ("anthropic-ratelimit-requests-reset", "2025-01-14T10:00:01Z"),
    ("anthropic-ratelimit-tokens-limit", "480000"),
    ("anthropic-ratelimit-tokens-remaining", "0"),
    ("anthropic-ratelimit-tokens-reset", "2025-01-14T10:00:15Z"),
    ("anthropic-ratelimit-input-tokens-limit", "400000"),
    ("anthropic-ratelimit-input-tokens-remaining", "0"),
    (
        "anthropic-ratelimit-input-tokens-reset",
        "2025-01-14T10:00:15Z",
    ),
    ("anthropic-ratelimit-output-tokens-limit", "80000"),
    ("anthropic-ratelimit-output-tokens-remaining", "80000"),
    (
        "anthropic-ratelimit-output-tokens-reset",
        "2025-01-14T10:00:00Z",
    ),
    ("request-id", "req_011CQ4a5b6c7d8e9f0a1b2c3"),
    (
        "anthropic-organization-id",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ),
    ("via", "1.1 google"),
    ("cf-cache-status", "DYNAMIC"),
    ("x-robots-tag", "none"),
    ("server", "cloudflare"),
    ("cf-ray", "8f1c2d3e4f5a6b7d-AMS"),
    (
        "strict-transport-security",
        "max-age=31536000; includeSubDomains; preload",
    ),
    ("x-content-type-options", "nosniff"),
];

/// OpenAI's 429 body.
pub const OPENAI_429_BODY: &str = r#"{
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-abcdefghijklmnopqrstuvwx on tokens per min (TPM): Limit 2000000, Used 2000000, Requested 1532. Please try again in 45ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
        "type": "tokens",
        "param": null,
        "code": "rate_limit_exceeded"
    }
}"#;

/// The wall clock (Unix seconds) of the header sets' `Date`.
pub const WALL_NOW: u64 = 1_736_848_800;

/// A pool of two priority-0 endpoints with four keys each and one fallback.
pub fn pool() -> Pool {
    let endpoints = vec![
        EndpointConfig::new(0, 4),
        EndpointConfig::new(0, 4),
        EndpointConfig::new(1, 1),
    ];
    Pool::new(&PoolConfig::new(endpoints)).unwrap_or_default()
}

fn pick_code(p: KeyPick) -> u64 {
    match p {
        KeyPick::Key(k) => u64::from(k.0),
        KeyPick::CoolingUntil(t) => t.as_nanos(),
        KeyPick::NoUsableKey => u64::MAX,
    }
}

fn selection_code(s: Selection) -> u64 {
    match s {
        Selection::Picked(t) => u64::from(t.endpoint.0) << 16 | u64::from(t.key.0),
        Selection::CoolingUntil(t) => t.as_nanos(),
        Selection::Unavailable => u64::MAX,
    }
}

/// The pool and the clock.
#[derive(Debug)]
pub struct PoolWorkload<const SELECT: bool> {
    pool: Pool,
    now: u64,
}

impl<const SELECT: bool> Workload for PoolWorkload<SELECT> {
    #[inline]
    fn step(&mut self) -> u64 {
        self.now += 1_000;
        let now = Timestamp::from_nanos(self.now);
        if SELECT {
            selection_code(
                self.pool
                    .select(now, |e| black_box(e).endpoint.0 < u16::MAX),
            )
        } else {
            pick_code(self.pool.pick_key(now, EndpointId(0)))
        }
    }
}

/// The classifier and one outcome.
#[derive(Debug)]
pub struct Classify {
    config: ClassifyConfig,
    outcome: Outcome,
}

impl Workload for Classify {
    #[inline]
    fn step(&mut self) -> u64 {
        match self.config.classify(black_box(&self.outcome)) {
            Verdict::Success => 0,
            Verdict::Failure(f) => u64::from(f.retryable) << 8 | f.scope as u64,
        }
    }
}

fn as_bytes(
    headers: &'static [(&'static str, &'static str)],
) -> Vec<(&'static [u8], &'static [u8])> {
    headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect()
}

/// A 429 as the adapter would report it: parsed headers and scanned body.
pub fn openai_429() -> Response {
    Response::from_http(
        429,
        as_bytes(OPENAI_429).iter().copied(),
        OPENAI_429_BODY.as_bytes(),
        WALL_NOW,
    )
}

/// One header set, parsed per step.
#[derive(Debug)]
pub struct Headers {
    headers: Vec<(&'static [u8], &'static [u8])>,
}

impl Workload for Headers {
    #[inline]
    fn step(&mut self) -> u64 {
        let hints = Hints::from_headers(black_box(&self.headers).iter().copied(), WALL_NOW);
        hints.wait_hint(0).map_or(0, |d| d.as_nanos() as u64)
    }
}

/// One error body, scanned per step.
#[derive(Debug)]
pub struct Body;

impl Workload for Body {
    #[inline]
    fn step(&mut self) -> u64 {
        let facts = ErrorFacts::scan(black_box(OPENAI_429_BODY.as_bytes()));
        facts.kind.map_or(0, |k| k as u64 + 1)
    }
}

/// Hands the steadfast-only workloads to `v`.
pub fn visit<V: Visitor>(v: &mut V) {
    let case = |group: Group| Case {
        group: group.id,
        name: STEADFAST,
    };
    v.visit(case(POOL_PICK_KEY), || PoolWorkload::<false> {
        pool: pool(),
        now: 0,
    });
    v.visit(case(POOL_SELECT), || PoolWorkload::<true> {
        pool: pool(),
        now: 0,
    });
    v.visit(case(CLASSIFY_503), || Classify {
        config: ClassifyConfig::default(),
        outcome: Outcome::Response(Response::new(503)),
    });
    v.visit(case(CLASSIFY_429), || Classify {
        config: ClassifyConfig::default(),
        outcome: Outcome::Response(openai_429()),
    });
    v.visit(case(HINTS_OPENAI), || Headers {
        headers: as_bytes(OPENAI_429),
    });
    v.visit(case(HINTS_ANTHROPIC), || Headers {
        headers: as_bytes(ANTHROPIC_429),
    });
    v.visit(case(ERROR_BODY), || Body);
}
