//! `steadfast-http`: what steadfast's HTTP adapters share, without an HTTP client or
//! an async runtime.
//!
//! - [`ProviderExt`]: the request URL and authentication headers of the core's
//!   [`Provider`]s (OpenAI-compatible and Anthropic), and the `Idempotency-Key` header.
//! - [`ApiKey`]: a secret that prints as `ApiKey(****)`.
//! - [`EndpointDef`]: a base URL, its provider, name, keys (or the provider's key
//!   variable), model, priority and limits, turned into the core's
//!   [`EndpointSpec`](steadfast_core::engine::EndpointSpec).
//! - [`body`]: request bodies (the endpoint's model, `stream: true`), what response
//!   bodies say (token usage, the error message), and [`body::LimitedBody`], a response
//!   body read under the client's size limit ([`DEFAULT_MAX_BODY`]; a response that
//!   breaks a limit fails its attempt with a typed [`Exceeded`]).
//! - [`outcome`]: a finished HTTP exchange, or a client error, as the core's
//!   [`Outcome`](steadfast_core::outcome::Outcome).
//! - [`sse`]: an incremental server-sent-events parser and the reading of both
//!   providers' event streams.
//! - [`Fallback`], [`Degraded`]: the fallback chain run when a call gives up
//!   (fallback endpoints are standby endpoints of the client's one engine).
//! - [`Reply`]: a call's result and what one reads of it (text, usage, who served it,
//!   the body as one's own type); [`TextFold`]: a stream read as text deltas and the
//!   whole message.
//! - [`CallOptions`], [`RetryOverrides`]: one call's own attempts, timeout, deadline,
//!   headers and idempotency key, and the builder's changes to the policy.
//! - [`Metrics`]: counters fed from the core's events (and `tracing` events with the
//!   `tracing` feature), recorded after the engine's lock is released.
//! - [`telemetry`]: spans (the `tracing` feature) and metrics (the `otel` feature)
//!   after the OpenTelemetry GenAI conventions, and `steadfast.*` events for the
//!   resilience decisions; the faces run their loops in [`Session::call_span`] and
//!   their exchanges in [`Session::attempt_span`].
//! - [`chat`]: the canonical chat shape (OpenAI Chat Completions) and its faithful
//!   translation to and from Anthropic Messages: requests, responses, streams, errors.
//!   A client whose endpoints speak more than one API (or set canonical) takes and
//!   returns this shape, translated per endpoint by its sessions.
//! - [`clock`]: the instants a session takes ([`Now`]) and the faces' conversions
//!   from their runtime's clock ([`clock::Epoch`]). Nothing here reads a clock for a
//!   session: the face does, so a paused or virtual clock drives it.
//! - [`Shared`] and [`Session`]: the driver loop's bookkeeping. An adapter keeps a
//!   `Shared` and an `Epoch` per client and runs, per call:
//!
//! ```text
//! // `clock_now()`: the face's runtime clock (tokio's, or std's).
//! let mut s = Session::with_options(&shared, epoch.timestamp(clock_now()), request, stream, &options);
//! loop {
//!     match s.poll(epoch.timestamp(clock_now())) {
//!         Step::Send(out) => { /* send out.body to out.url with out.headers within
//!                                 out.timeout(); report, at now = epoch.now(clock_now()),
//!                                 with s.on_response(now, ..), s.on_body_error(now, ..)
//!                                 or s.on_transport(now, ..) */ }
//!         Step::Sleep(until) => { /* sleep until epoch.instant(until) */ }
//!         Step::Lease(ask) => { /* ask the shared store; s.on_lease(now, &ask, answer) */ }
//!         Step::Done => return s.into_reply(),
//!     }
//! }
//! ```
//!
//! A call that gives up runs its fallbacks inside the same session: a fallback
//! endpoint's attempts come out of `poll` like the primary call's, and `into_reply`
//! returns the degraded reply.
//!
//! The adapters hold no policy: every decision is the core's.

#![forbid(unsafe_code)]

pub mod body;
mod builder;
mod chain;
pub mod chat;
pub mod clock;
mod endpoint;
mod error;
pub mod example;
mod fallback;
mod key;
mod metrics;
mod options;
pub mod outcome;
mod peek;
mod provider;
mod raw_request;
mod reply;
mod scan;
mod session;
mod shared;
pub mod sse;
pub mod stream;
pub mod telemetry;
mod text;

pub use clock::Now;
pub use endpoint::{EndpointDef, RequestLimit, host_header, names as endpoint_names, specs};
pub use error::{
    CallError, DEFAULT_MAX_BODY, Exceeded, GiveUpReason, Interruption, RequestError, SetupError,
    StreamError, request_value,
};
pub use fallback::{Degraded, Fallback, FallbackKind};
pub use key::ApiKey;
pub use metrics::{CallTally, Fallbacks, GiveUps, Metrics, MetricsSnapshot};
pub use options::{CallOptions, RetryOverrides};
pub use provider::{
    ANTHROPIC_VERSION, ANTHROPIC_VERSION_VALUE, IDEMPOTENCY_KEY, Provider, ProviderExt,
    UnknownProvider, X_API_KEY,
};
pub use raw_request::{RawRequest, RawRequestError, RequestRef};
pub use reply::{Reply, ServedBy, TokenUsage};
pub use session::{Outgoing, Session, Started, Step};
pub use shared::{Setup, Shared};
pub use sse::{SseEvent, SseParser, StreamText};
pub use stream::{EventReader, Next};
pub use telemetry::{EnteredSpan, SpanHandle, StreamClock, StreamTrace, TelemetryConfig};
pub use text::{TextEvent, TextFold, TextStep};

/// The OpenTelemetry API this crate records metrics through (the `otel` feature), so
/// that a caller's `Meter` is of the same version.
#[cfg(feature = "otel")]
pub use opentelemetry;

pub use steadfast_core;
pub use steadfast_core::backoff::BackoffConfig;
pub use steadfast_core::breaker::BreakerConfig;
pub use steadfast_core::budget::BudgetConfig;
pub use steadfast_core::classify::ClassifyConfig;
pub use steadfast_core::health::{HealthConfig, SlaTargets};
pub use steadfast_core::idempotency::StoreConfig;
pub use steadfast_core::ids::{EndpointId, EndpointSet};
pub use steadfast_core::limiter::LimiterConfig;
pub use steadfast_core::policy::{Policy, Preset};
pub use steadfast_core::retry::RetryConfig;
pub use steadfast_core::shared::breakers::{BreakerPublish, SharedOpen};
pub use steadfast_core::shared::keys::{KeyPublish, SharedKeyState};
pub use steadfast_core::shared::{
    FailMode, LeaseAnswer, LeaseAsk, LeaseKind, SharedConfig, TokenSettle,
};
