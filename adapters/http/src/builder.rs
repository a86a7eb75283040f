//! The builder settings every client shares, written once.

/// Expands, inside a client's `impl ClientBuilder`, to the settings every client
/// shares: `policy`, `endpoint`, `fallback`, `seed`, `seed_u64`, `max_retries`,
/// `timeout`, `deadline`, `canonical`, `max_body` and `record_prompts`, each with a doc
/// test through the client crate `$krate`, and `meter` when this crate has the `otel`
/// feature. The builder must have a `setup: steadfast_http::Setup` field.
#[macro_export]
macro_rules! shared_builder_settings {
    ($krate:ident) => {
        /// The policy (default: the `standard` preset).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .policy(", stringify!($krate), "::Preset::Batch)\n    .build()?;\nassert!(client.shared().policy().retry.hold);\n# Ok(()) }\n```")]
        #[must_use]
        pub fn policy(mut self, policy: impl Into<$crate::Policy>) -> Self {
            self.setup.policy = policy.into();
            self
        }

        /// Adds an endpoint (at least one is needed).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::Anthropic, \"sk-2\").name(\"claude\"))\n    .build()?;\nassert_eq!(client.shared().endpoint_name(steadfast_http::steadfast_core::ids::EndpointId(1)), Some(\"claude\"));\n# Ok(()) }\n```")]
        #[must_use]
        pub fn endpoint(mut self, endpoint: $crate::EndpointDef) -> Self {
            self.setup.endpoints.push(endpoint);
            self
        }

        /// Adds a fallback, tried (after the ones added before it) when a call gives up.
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .fallback(", stringify!($krate), "::Fallback::Template(serde_json::json!({\"choices\": []})))\n    .build()?;\nassert!(format!(\"{:?}\", client.shared()).contains(\"fallbacks: 1\"));\n# Ok(()) }\n```")]
        #[must_use]
        pub fn fallback(mut self, fallback: $crate::Fallback) -> Self {
            self.setup.fallbacks.push(fallback);
            self
        }

        /// Seeds the RNG (jitter, idempotency keys); by default it is seeded from the OS.
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .seed([7; 32])\n    .build()?;\nlet key = |c: &", stringify!($krate), "::Client| c.shared().with_engine(|e| e.start_call(c.now(), None).idempotency_key());\nlet again = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .seed([7; 32])\n    .build()?;\nassert_eq!(key(&client), key(&again), \"the same seed draws the same keys\");\n# Ok(()) }\n```")]
        #[must_use]
        pub fn seed(mut self, seed: [u8; 32]) -> Self {
            self.setup.seed = Some(seed);
            self
        }

        /// Seeds the RNG from a `u64` (for tests and reproducible runs).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .seed_u64(7)\n    .build()?;\nlet key = |c: &", stringify!($krate), "::Client| c.shared().with_engine(|e| e.start_call(c.now(), None).idempotency_key());\nlet again = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .seed_u64(7)\n    .build()?;\nassert_eq!(key(&client), key(&again), \"the same seed draws the same keys\");\n# Ok(()) }\n```")]
        #[must_use]
        pub fn seed_u64(self, seed: u64) -> Self {
            let mut s = [0u8; 32];
            s[..8].copy_from_slice(&seed.to_le_bytes());
            self.seed(s)
        }

        /// Retries after the first attempt, whatever the policy says
        /// (`max_retries(2)`: three attempts in all).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .max_retries(2)\n    .build()?;\nassert_eq!(client.shared().policy().retry.max_attempts, 3);\n# Ok(()) }\n```")]
        #[must_use]
        pub fn max_retries(mut self, retries: u32) -> Self {
            self.setup.retry.max_attempts = Some(retries.saturating_add(1));
            self
        }

        /// Each attempt's timeout, whatever the policy says (for a stream: its whole
        /// length; the first event has the policy's `first_event_timeout`).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .timeout(std::time::Duration::from_secs(20))\n    .build()?;\nassert_eq!(client.shared().policy().retry.attempt_timeout, std::time::Duration::from_secs(20));\n# Ok(()) }\n```")]
        #[must_use]
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.setup.retry.attempt_timeout = Some(timeout);
            self
        }

        /// The deadline of every call, whatever the policy says: no attempt starts later
        /// than this after the call's start.
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .deadline(std::time::Duration::from_secs(30))\n    .build()?;\nassert_eq!(client.shared().policy().retry.deadline, Some(std::time::Duration::from_secs(30)));\n# Ok(()) }\n```")]
        #[must_use]
        pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
            self.setup.retry.deadline = Some(Some(deadline));
            self
        }

        /// Whether calls are in the canonical shape — OpenAI Chat Completions requests,
        /// replies and stream chunks, translated to and from Anthropic Messages for
        /// Anthropic endpoints — or each provider's own (`false`). By default, canonical
        /// when the endpoints (fallback endpoints included) speak more than one API.
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .canonical(true)\n    .build()?;\nassert!(client.shared().is_canonical());\n# Ok(()) }\n```")]
        #[must_use]
        pub fn canonical(mut self, canonical: bool) -> Self {
            self.setup.canonical = Some(canonical);
            self
        }

        /// The largest response body read, in bytes (default
        /// [`DEFAULT_MAX_BODY`]($crate::DEFAULT_MAX_BODY), 32 MiB). A body that announces
        /// or reaches more fails its attempt at once, unread, and a call that gives up
        /// after it carries [`Exceeded::BodyTooLarge`]($crate::Exceeded::BodyTooLarge);
        /// for a stream, the limit is on an unfinished event and on the text kept.
        /// Response heads are limited by the HTTP client
        /// ([`Exceeded::HeadTooLarge`]($crate::Exceeded::HeadTooLarge) past it).
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .max_body(1 << 20)\n    .build()?;\nassert_eq!(client.shared().max_body(), 1 << 20);\n# Ok(()) }\n```")]
        #[must_use]
        pub fn max_body(mut self, bytes: u64) -> Self {
            self.setup.max_body = bytes;
            self
        }

        /// Whether call spans carry the prompt (`gen_ai.input.messages`,
        /// `gen_ai.system_instructions`; with the `tracing` feature). Off by default:
        /// prompts are user data. Completions and keys are never recorded.
        ///
        #[doc = concat!("```\n# fn main() -> Result<(), Box<dyn std::error::Error>> {\nlet client = ", stringify!($krate), "::Client::builder()\n    .endpoint(", stringify!($krate), "::EndpointDef::new(\"http://127.0.0.1:9\", ", stringify!($krate), "::Provider::OpenAi, \"sk-1\"))\n    .record_prompts(true)\n    .build()?;\n# let _ = client;\n# Ok(()) }\n```")]
        #[must_use]
        pub fn record_prompts(mut self, record: bool) -> Self {
            self.setup.telemetry.record_prompts = record;
            self
        }

        $crate::__meter_setting!();
    };
}

/// The builder's `meter` setting, present when this crate has the `otel` feature
/// (decided here, whichever crate expands [`shared_builder_settings`]).
#[cfg(feature = "otel")]
#[doc(hidden)]
#[macro_export]
macro_rules! __meter_setting {
    () => {
        /// Records the `gen_ai.client.*` histograms (operation duration, token usage,
        /// time to first chunk) on this OpenTelemetry meter, e.g.
        /// `opentelemetry::global::meter("steadfast")` or one of one's own provider.
        #[must_use]
        pub fn meter(mut self, meter: $crate::opentelemetry::metrics::Meter) -> Self {
            self.setup.telemetry.meter = Some(meter);
            self
        }
    };
}

/// Without the `otel` feature there is no `meter` setting.
#[cfg(not(feature = "otel"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __meter_setting {
    () => {};
}
