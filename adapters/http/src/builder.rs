//! The builder settings every client shares, written once.

/// Expands, inside a client's `impl ClientBuilder`, to the settings every client
/// shares: `policy`, `endpoint`, `fallback`, `seed`, `seed_u64`, `max_retries`,
/// `timeout`, `deadline` and `max_body`. The
/// builder must have a `setup: steadfast_http::Setup` field.
#[macro_export]
macro_rules! shared_builder_settings {
    () => {
        /// The policy (default: the `standard` preset).
        #[must_use]
        pub fn policy(mut self, policy: impl Into<$crate::Policy>) -> Self {
            self.setup.policy = policy.into();
            self
        }

        /// Adds an endpoint (at least one is needed).
        #[must_use]
        pub fn endpoint(mut self, endpoint: $crate::EndpointDef) -> Self {
            self.setup.endpoints.push(endpoint);
            self
        }

        /// Adds a fallback, tried (after the ones added before it) when a call gives up.
        #[must_use]
        pub fn fallback(mut self, fallback: $crate::Fallback) -> Self {
            self.setup.fallbacks.push(fallback);
            self
        }

        /// Seeds the RNG (jitter, idempotency keys); by default it is seeded from the OS.
        #[must_use]
        pub fn seed(mut self, seed: [u8; 32]) -> Self {
            self.setup.seed = Some(seed);
            self
        }

        /// Seeds the RNG from a `u64` (for tests and reproducible runs).
        #[must_use]
        pub fn seed_u64(self, seed: u64) -> Self {
            let mut s = [0u8; 32];
            s[..8].copy_from_slice(&seed.to_le_bytes());
            self.seed(s)
        }

        /// Retries after the first attempt, whatever the policy says
        /// (`max_retries(2)`: three attempts in all).
        #[must_use]
        pub fn max_retries(mut self, retries: u32) -> Self {
            self.setup.retry.max_attempts = Some(retries.saturating_add(1));
            self
        }

        /// Each attempt's timeout, whatever the policy says (for a stream: its whole
        /// length; the first event has the policy's `first_event_timeout`).
        #[must_use]
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.setup.retry.attempt_timeout = Some(timeout);
            self
        }

        /// The deadline of every call, whatever the policy says: no attempt starts later
        /// than this after the call's start.
        #[must_use]
        pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
            self.setup.retry.deadline = Some(Some(deadline));
            self
        }

        /// The largest response body read, in bytes (default
        /// [`DEFAULT_MAX_BODY`]($crate::DEFAULT_MAX_BODY), 32 MiB). A body that announces
        /// or reaches more fails its attempt at once, unread, and a call that gives up
        /// after it carries [`Exceeded::BodyTooLarge`]($crate::Exceeded::BodyTooLarge);
        /// for a stream, the limit is on an unfinished event and on the text kept.
        /// Response heads are limited by the HTTP client
        /// ([`Exceeded::HeadTooLarge`]($crate::Exceeded::HeadTooLarge) past it).
        #[must_use]
        pub fn max_body(mut self, bytes: u64) -> Self {
            self.setup.max_body = bytes;
            self
        }
    };
}
