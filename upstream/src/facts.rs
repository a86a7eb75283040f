//! What the upstream reads of a request.

use steadfast_core::provider::Provider;

/// The facts of one request the provider model looks at. A socket face reads them
/// from the request line and headers; the simulator fills in what its client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestFacts<'a> {
    /// The method (`POST` for the API).
    pub method: &'a str,
    /// The path without its query (see [`crate::Scenario::route`]).
    pub path: &'a str,
    /// The token of `Authorization: Bearer TOKEN` (OpenAI's key).
    pub bearer: Option<&'a str>,
    /// `x-api-key` (Anthropic's key).
    pub x_api_key: Option<&'a str>,
    /// `anthropic-version`.
    pub anthropic_version: Option<&'a str>,
    /// `Idempotency-Key`.
    pub idempotency_key: Option<&'a str>,
    /// The body.
    pub body: &'a [u8],
}

impl<'a> RequestFacts<'a> {
    /// What a steadfast client sends to `path` speaking `provider` with `key`.
    pub fn client(
        provider: Provider,
        path: &'a str,
        key: &'a str,
        idempotency_key: Option<&'a str>,
        body: &'a [u8],
    ) -> RequestFacts<'a> {
        let openai = provider == Provider::OpenAi;
        RequestFacts {
            method: "POST",
            path,
            bearer: openai.then_some(key),
            x_api_key: (!openai).then_some(key),
            anthropic_version: (!openai).then_some("2023-06-01"),
            idempotency_key,
            body,
        }
    }

    /// The API key the provider reads: the bearer token for OpenAI, `x-api-key` for
    /// Anthropic; none when absent or empty.
    pub fn api_key(&self, provider: Provider) -> Option<&'a str> {
        let key = match provider {
            Provider::OpenAi => self.bearer,
            Provider::Anthropic => self.x_api_key,
        };
        key.map(str::trim).filter(|k| !k.is_empty())
    }

    /// The `Idempotency-Key`, when not empty.
    pub fn key(&self) -> Option<&'a str> {
        self.idempotency_key.filter(|k| !k.is_empty())
    }
}
