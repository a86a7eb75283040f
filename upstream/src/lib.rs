//! `steadfast-upstream`: a sans-IO model of an LLM provider, the one fake upstream of
//! steadfast's simulator, mock server and tests (in the spirit of str0m's netem).
//!
//! An [`Upstream`] runs a [`Scenario`] (TOML; the [`builtin`]s or a user's file) with a
//! seed: [`Upstream::handle`]`(now, wall, &RequestFacts) -> Answer`. No clock and no IO:
//! `now` is the time since the upstream's start (a
//! [`Timestamp`](steadfast_core::time::Timestamp)), `wall` the Unix time in seconds. A
//! face turns the [`Answer`] into bytes on a socket (`steadfast-mock`) or into the
//! outcome a client would see, in virtual time (`steadfast-sim`); both see the same
//! world for the same scenario and seed.
//!
//! What a request gets, in order:
//!
//! 1. its path routes it to an endpoint ([`Scenario::route`]), else 404; a method other
//!    than `POST` gets 405;
//! 2. the outage switch ([`Upstream::set_down`]): 503 (OpenAI) / 529 (Anthropic);
//! 3. missing credentials (401), a missing `anthropic-version` (400), a body that is not
//!    a JSON object (400), with the providers' error bodies;
//! 4. server-side idempotency: a request whose `Idempotency-Key` already succeeded gets
//!    the stored success again with `idempotent-replayed: true` (no work, no scripted
//!    fault consumed); one whose earlier attempt is still in progress gets 409
//!    `idempotency_key_in_use`; failed attempts are not stored;
//! 5. the next scripted [`Fault`], if any;
//! 6. the scenario's endpoint: bad keys (401 `invalid_api_key` / 429
//!    `insufficient_quota`, Anthropic 401 / 402 `billing_error`), outage windows, the
//!    key's rate limits (token buckets refilled continuously; OpenAI's
//!    `x-ratelimit-{limit,remaining,reset}-*` with the reset as the time until the
//!    bucket is full, Anthropic's `anthropic-ratelimit-*` with the RFC 3339 instant it
//!    is; past the limit 429 with `retry-after` in whole seconds, rounded up, and for
//!    OpenAI `retry-after-ms`), random faults (429, 5xx, overloaded, hangs, resets,
//!    malformed, truncated and cut bodies), latencies.
//!
//! Random draws are a pure function of the seed, the endpoint, the request's identity
//! (its `Idempotency-Key`, else its path and body) and how many times that identity
//! was seen, never of arrival order, so concurrent clients see reproducible worlds.
//!
//! ```
//! use steadfast_core::provider::Provider;
//! use steadfast_core::time::Timestamp;
//! use steadfast_upstream::{RequestFacts, Upstream, UpstreamConfig, builtin};
//!
//! let scenario = builtin::scenario("ratelimit").unwrap();
//! let mut up = Upstream::new(scenario, UpstreamConfig::default());
//! let body = br#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#;
//! let facts = RequestFacts::client(Provider::OpenAi, "/v1/chat/completions", "sk-1", None, body);
//! let answer = up.handle(Timestamp::ZERO, 1_767_225_600, &facts);
//! assert_eq!(answer.status(), Some(200));
//! assert_eq!(answer.header("x-ratelimit-remaining-requests"), Some("59"));
//! ```

mod answer;
mod bucket;
pub mod builtin;
pub mod dist;
mod draw;
mod facts;
mod fault;
mod idem;
mod limits;
pub mod scenario;
mod script;
mod server;
mod stats;
mod upstream;
mod verdict;
pub mod wire;

pub use answer::{Answer, Body, Delivery, Filler, Http, Reply, Ticket};
pub use bucket::Bucket;
pub use draw::splitmix;
pub use facts::RequestFacts;
pub use fault::{Fault, ScriptError, faults_from_toml_tables};
pub use scenario::{Knobs, Scenario, ScenarioError};
pub use stats::{KeyStats, Stats};
pub use upstream::{Upstream, UpstreamConfig};

/// The Unix time (seconds) a virtual run starts at: 2026-01-01T00:00:00Z. Fixed, so
/// simulated reports never depend on the real clock.
pub const WALL_START: u64 = 1_767_225_600;
