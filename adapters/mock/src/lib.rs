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
