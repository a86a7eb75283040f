//! `steadfast-mock`: a fault-injecting OpenAI/Anthropic-compatible HTTP server on
//! loopback, for testing clients that must survive what LLM APIs really do.
//!
//! The server binds `127.0.0.1` only (port 0 by default) and speaks plain HTTP/1.1 with
//! keep-alive. It serves:
//!
//! - `POST /v1/chat/completions` (OpenAI: `Authorization: Bearer KEY`, 401 without);
//! - `POST /v1/messages` (Anthropic: `x-api-key` required, 401 without;
//!   `anthropic-version` required, 400 without);
//!
//! with realistic success bodies (the reply echoes the last user message; token counts
//! are characters / 4 rounded up), SSE streams when the request has `"stream": true`,
//! and realistic error bodies; plus control endpoints:
//!
//! - `GET /__stats`: the [`Stats`] as JSON;
//! - `POST /__faults`: a JSON array of [`Fault`]s appended to the script;
//! - `POST /__reset`: clears the counters and the idempotency memory;
//! - `POST /__down`: `{"down": true|false}`, the outage switch.
//!
//! What a request gets is decided in this order:
//!
//! 1. the outage switch ([`MockServer::set_down`]);
//! 2. missing credentials (401/400) and an unreadable JSON body (400);
//! 3. server-side idempotency: a request whose `Idempotency-Key` already succeeded gets
//!    the stored response again with `idempotent-replayed: true` (no work, no scripted
//!    fault consumed); one whose earlier attempt is still in progress gets 409 with
//!    code `idempotency_key_in_use` (retryable, like Stripe); failed attempts are
//!    not stored;
//! 4. the next scripted [`Fault`], if any;
//! 5. the [`Scenario`].
//!
//! Random draws are a pure function of the seed, the request's identity (its
//! `Idempotency-Key`, or else its path and body) and how many times that identity was
//! seen, never of arrival order, so concurrent clients see reproducible behaviour.
//!
//! # Scenarios
//!
//! | name | behaviour |
//! | --- | --- |
//! | `ok` | every request succeeds |
//! | `flaky` | a first attempt fails with [`MockConfig::fault_rate`] (0.3), each further failed attempt of the same identity half as often; a failure is 429 (20%, `retry-after` = [`MockConfig::retry_after`] rounded up to seconds, `retry-after-ms` exact for OpenAI, and the rate-limit headers with 0 remaining), 500 (20%), 502 with an HTML gateway page (10%), 503 (20%), 529 `overloaded_error` for Anthropic / 503 for OpenAI (20%), or a connection reset after the request, work done (10%) |
//! | `outage` | 503 (OpenAI) / 529 (Anthropic), or [`MockConfig::outage_status`], while less than [`MockConfig::outage_for`] (3 s) has passed since the start or fewer than [`MockConfig::outage_requests`] (0) requests reached the scenario; then success |
//! | `ratelimit` | a token bucket per API key: [`MockConfig::rpm`] (60) per minute, [`MockConfig::rate_burst`] (= rpm) at once; every answer carries `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests` (time to a full bucket, `1.5s` style) for OpenAI, or `anthropic-ratelimit-requests-limit`, `-remaining`, `-reset` (RFC 3339, rounded up to the second) for Anthropic; past the limit 429 with `retry-after` (whole seconds, at least 1, until one request is allowed) and, for OpenAI, `retry-after-ms` |
//! | `slow` | success after a seeded latency in [`MockConfig::latency_min`]..[`MockConfig::latency_max`] (200-800 ms) |
//! | `auth` | 401 for keys containing `bad` or `revoked` (any case): OpenAI `invalid_api_key`, Anthropic `authentication_error`; other keys succeed |
//! | `quota` | keys containing `quota`: OpenAI 429 `insufficient_quota` (no `retry-after`), Anthropic 402 `billing_error`; other keys succeed |
//! | `reset` | connection reset after the request (work done) at the flaky rate, else success |
//! | `malformed` | `200` with a cut JSON body (work done) at the flaky rate, else success |
//! | `hang` | never answered at the flaky rate, else success |
//! | `stream-cut` | streams cut after [`MockConfig::stream_cut_after`] (2) events, other requests truncated (work done), at the flaky rate, else success |
//!
//! With [`MockConfig::key_rules`] the `auth` and `quota` key rules apply in every
//! scenario.
//!
//! # Script and configuration files
//!
//! TOML: optional top-level settings (see [`MockConfig::from_toml_str`]) and
//! `[[fault]]` entries (see [`Fault::script_from_toml`]), each with a `kind`, that
//! kind's fields and an optional `repeat`:
//!
//! ```toml
//! scenario = "flaky"
//! seed = 7
//!
//! [[fault]]
//! kind = "status"
//! status = 429
//! retry_after = "2"
//! repeat = 2
//!
//! [[fault]]
//! kind = "stream_cut"
//! after_events = 3
//! ```
//!
//! An error names the 1-based position of the bad entry (`fault entry 2: ...`).

mod bodies;
mod config;
mod engine;
mod fault;
mod http;
mod server;
mod stats;
mod util;

pub use config::{MockConfig, Scenario, UnknownScenario};
pub use fault::{Fault, ScriptError};
pub use server::MockServer;
pub use stats::{KeyStats, Stats};

/// The largest request head the server reads; a longer one gets 431.
pub const MAX_REQUEST_HEAD: usize = http::MAX_HEAD;
/// The largest request body the server reads; a longer one gets 413.
pub const MAX_REQUEST_BODY: usize = http::MAX_BODY;
