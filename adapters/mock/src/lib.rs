//! `steadfast-mock`: a fault-injecting OpenAI/Anthropic-compatible HTTP server on
//! loopback, for testing clients that must survive what LLM APIs really do.
//!
//! It is a socket loop around `steadfast-upstream`'s sans-IO provider model: it accepts
//! connections, frames HTTP/1.1, maps its monotonic clock to the upstream's `now` (the
//! one place it reads time; the scenario's clock starts at the first API request, so an
//! outage 20 s into the scenario comes 20 s into the client's run) and carries out each [`Answer`](steadfast_upstream::Answer)
//! — its delay, then its bytes (whole, truncated, cut after some events, trickled,
//! paced event by event), a reset or a hang. Every decision is the upstream's, so a
//! scenario file means the same world here as in `steadfast sim`.
//!
//! The server binds `127.0.0.1` only (port 0 by default), speaks plain HTTP/1.1 with
//! keep-alive, and serves:
//!
//! - `POST /v1/chat/completions` (OpenAI: `Authorization: Bearer KEY`, 401 without) and
//!   `POST /v1/messages` (Anthropic: `x-api-key`, 401 without; `anthropic-version`,
//!   400 without), for the scenario's first endpoint, and the same under `/{name}` for
//!   the endpoint named so (`/anthropic/v1/messages`);
//! - with request bodies checked as the real APIs check them (a body they would refuse
//!   gets their 400 and real error body; [`MockConfig::strict`] off serves any JSON
//!   object), success bodies and SSE streams for `"stream": true` in each provider's
//!   documented shape (the reply echoes the last user turn, cut at `max_tokens` or a
//!   stop sequence; token counts are characters / 4 rounded up; a tool call instead of
//!   text when `tool_choice` demands one or [`Knobs::tool_use`] says so), realistic
//!   error bodies, `date` and request-id headers, the providers' rate-limit headers;
//! - `GET /__stats`: the [`Stats`] as JSON; `POST /__faults`: a JSON array of
//!   [`Fault`]s appended to the script; `POST /__reset`: clears the counters and the
//!   idempotency memory; `POST /__down`: `{"down": true|false}`, the outage switch.
//!
//! What a request gets, and why, is told in `steadfast_upstream`'s documentation: the
//! outage switch, the provider's own checks, server-side idempotency (a stored success
//! replayed with `idempotent-replayed: true`, 409 `idempotency_key_in_use` for a key
//! still in progress), the next scripted [`Fault`], then the scenario. Random draws are
//! a pure function of the seed, the request's identity and how many times it was seen,
//! never of arrival order.
//!
//! # Scenarios and knobs
//!
//! Any scenario of `steadfast_upstream::builtin` (`ok`, `flaky`, `outage`, `ratelimit`,
//! `slow`, `auth`, `quota`, `reset`, `malformed`, `hang`, `stream-cut`, `steady`,
//! `brownout`, `provider-failover`, `ratelimit-storm`, `quota-exhausted-key`) or a
//! scenario file; [`Knobs`] override its fields (`--rpm`, `--burst`, `--outage-for`,
//! `--fault-rate`, `--retry-after`, `--latency-min/max`, `--key-rules`, a time scale,
//! `--tool-calls`).
//!
//! # Settings and script files
//!
//! TOML: optional settings (see [`MockConfig::apply_toml_str`]) and `[[fault]]` entries
//! (see [`Fault::script_from_toml`]), each with a `kind`, that kind's fields and an
//! optional `repeat`:
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

mod clock;
mod config;
mod control;
mod endpoints;
mod http;
mod send;
mod server;
mod shared;

pub use config::{MockConfig, UnknownScenario};
pub use endpoints::{MOCK_KEY, MockEndpoint};
pub use server::MockServer;
pub use steadfast_upstream::scenario::ToolUse;
pub use steadfast_upstream::{Fault, KeyStats, Knobs, Scenario, ScriptError, Stats, builtin};

/// The largest request head the server reads; a longer one gets 431.
pub const MAX_REQUEST_HEAD: usize = http::MAX_HEAD;
/// The largest request body the server reads; a longer one gets 413.
pub const MAX_REQUEST_BODY: usize = http::MAX_BODY;
