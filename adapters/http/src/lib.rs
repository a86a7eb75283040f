//! `steadfast-http`: what steadfast's HTTP adapters share, without an HTTP client or
//! an async runtime.
//!
//! - [`ProviderExt`]: the request URL and authentication headers of the core's
//!   [`Provider`]s (OpenAI-compatible and Anthropic), and the `Idempotency-Key` header.
//! - [`ApiKey`]: a secret that prints as `ApiKey(****)`.
//! - [`EndpointDef`]: a base URL, its provider, keys, model, priority and limits,
//!   turned into the core's [`EndpointSpec`](steadfast_core::engine::EndpointSpec).
//! - [`body`]: request bodies (the endpoint's model, `stream: true`), what response
//!   bodies say (token usage, the error message), and [`body::LimitedBody`], a response
//!   body read under the client's size limit ([`DEFAULT_MAX_BODY`]; a response that
//!   breaks a limit fails its attempt with a typed [`Exceeded`]).
//! - [`outcome`]: a finished HTTP exchange, or a client error, as the core's
//!   [`Outcome`](steadfast_core::outcome::Outcome).
//! - [`sse`]: an incremental server-sent-events parser and the reading of both
//!   providers' event streams.
//! - [`Fallback`], [`Reply`], [`Degraded`]: the fallback chain run when a call gives up.
//! - [`Metrics`]: counters fed from the core's events (and `tracing` events with the
//!   `tracing` feature).
//! - [`Shared`] and [`Session`]: the driver loop's bookkeeping. An adapter keeps a
//!   `Shared` per client and runs, per call:
//!
//! ```text
//! let mut s = Session::new(&shared, business_id, request, stream);
//! loop {
//!     match s.poll() {
//!         Step::Send(out) => { /* send out.body to out.url with out.headers within
//!                                 out.timeout(); report with s.on_response(..),
//!                                 s.on_body_error(..) or s.on_transport(..) */ }
//!         Step::Sleep(until) => { /* sleep until clock::instant(until) */ }
//!         Step::Done => return s.into_reply(),
//!     }
//! }
//! ```
//!
//! The adapters hold no policy: every decision is the core's.

#![forbid(unsafe_code)]

pub mod body;
mod builder;
mod chain;
pub mod clock;
mod endpoint;
mod error;
pub mod example;
mod fallback;
mod key;
mod metrics;
pub mod outcome;
mod provider;
mod session;
mod shared;
pub mod sse;
pub mod stream;

pub use chain::FallbackChain;
pub use endpoint::{EndpointDef, specs};
pub use error::{
    CallError, DEFAULT_MAX_BODY, Exceeded, GiveUpReason, Interruption, SetupError, StreamError,
};
pub use fallback::{Degraded, Fallback, FallbackKind, Reply};
pub use key::ApiKey;
pub use metrics::{Fallbacks, GiveUps, Metrics, MetricsSnapshot};
pub use provider::{
    ANTHROPIC_VERSION, ANTHROPIC_VERSION_VALUE, IDEMPOTENCY_KEY, Provider, ProviderExt,
    UnknownProvider, X_API_KEY,
};
pub use session::{Outgoing, Session, Started, Step};
pub use shared::{FallbackStep, Setup, Shared};
pub use sse::{SseEvent, SseParser, StreamText};
pub use stream::{EventReader, Next};

pub use steadfast_core;
pub use steadfast_core::policy::Policy;
