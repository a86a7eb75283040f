//! Endpoints as the caller describes them, and as the core sees them.

use steadfast_core::engine::EndpointSpec;
use steadfast_core::limiter::LimiterConfig;

use crate::error::SetupError;
use crate::key::ApiKey;
use crate::provider::{Provider, ProviderExt};

/// One upstream: a base URL speaking `provider`, with its keys.
///
/// The core knows an endpoint only by its index and its keys by theirs; the secrets
/// stay here. With serde it deserializes from a table such as
/// `{ base_url = "https://api.openai.com", provider = "openai", keys = ["sk-..."] }`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EndpointDef {
    /// The API root, with or without a trailing `/v1` or `/`.
    pub base_url: String,
    /// The API shape.
    #[serde(default)]
    pub provider: Provider,
    /// The keys, rotated round-robin; at least one.
    pub keys: Vec<ApiKey>,
    /// When set, written into every request's `model` field.
    #[serde(default)]
    pub model: Option<String>,
    /// Lower is preferred; equal priorities share the load.
    #[serde(default)]
    pub priority: u8,
    /// This endpoint's client-side rate limits, when they differ from the policy's.
    #[serde(default)]
    pub limiter: Option<LimiterConfig>,
}

impl EndpointDef {
    /// An endpoint at `base_url` speaking `provider` with one key, priority 0.
    pub fn new(base_url: impl Into<String>, provider: Provider, key: impl Into<ApiKey>) -> Self {
        EndpointDef {
            base_url: base_url.into(),
            provider,
            keys: vec![key.into()],
            model: None,
            priority: 0,
            limiter: None,
        }
    }

    /// The same endpoint with one more key.
    #[must_use]
    pub fn key(mut self, key: impl Into<ApiKey>) -> Self {
        self.keys.push(key.into());
        self
    }

    /// The same endpoint with exactly these keys.
    #[must_use]
    pub fn keys<K: Into<ApiKey>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// The same endpoint forcing `model` into every request.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The same endpoint with `priority` (lower is preferred).
    #[must_use]
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// The same endpoint with its own rate limits.
    #[must_use]
    pub fn limiter(mut self, limiter: LimiterConfig) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// The request URL.
    pub fn url(&self) -> String {
        self.provider.url(&self.base_url)
    }

    /// The core's view: priority, key count and limits. Fails on a definition that
    /// cannot work (no keys, too many, a base URL that is not `http(s)://`).
    pub fn spec(&self, index: usize) -> Result<EndpointSpec, SetupError> {
        let base = self.base_url.trim();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(SetupError::BaseUrl { endpoint: index });
        }
        let keys = u16::try_from(self.keys.len())
            .map_err(|_| SetupError::TooManyKeys { endpoint: index })?;
        if keys == 0 {
            return Err(SetupError::NoKeys { endpoint: index });
        }
        let spec = EndpointSpec::new(self.priority, keys);
        Ok(match &self.limiter {
            Some(l) => spec.with_limiter(l.clone()),
            None => spec,
        })
    }

    /// Replaces every configured key found in `text` with `****`.
    pub fn redact(&self, text: &str) -> String {
        self.keys.iter().fold(text.to_owned(), |t, k| k.redact(&t))
    }
}

/// The core's view of a list of endpoints, in order.
pub fn specs(endpoints: &[EndpointDef]) -> Result<Vec<EndpointSpec>, SetupError> {
    if endpoints.is_empty() {
        return Err(SetupError::NoEndpoints);
    }
    endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| e.spec(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_check_keys_and_urls() {
        let e = EndpointDef::new("http://127.0.0.1:1", Provider::OpenAi, "k1")
            .key("k2")
            .priority(3);
        let s = e.spec(0).unwrap();
        assert_eq!(s.pool.keys, 2);
        assert_eq!(s.pool.priority, 3);
        assert_eq!(
            e.clone().keys(Vec::<ApiKey>::new()).spec(4),
            Err(SetupError::NoKeys { endpoint: 4 })
        );
        assert_eq!(
            EndpointDef::new("ftp://x", Provider::OpenAi, "k").spec(1),
            Err(SetupError::BaseUrl { endpoint: 1 })
        );
        assert_eq!(specs(&[]), Err(SetupError::NoEndpoints));
        assert!(!format!("{e:?}").contains("k1"));
    }

    #[test]
    fn deserializes_without_printing_keys() {
        let e: EndpointDef = serde_json::from_str(
            r#"{"base_url":"http://h","provider":"anthropic","keys":["sk-a"],"model":"m","priority":1}"#,
        )
        .unwrap();
        assert_eq!(e.provider, Provider::Anthropic);
        assert_eq!(e.model.as_deref(), Some("m"));
        assert_eq!(e.redact("x sk-a y"), "x **** y");
    }
}
