//! Endpoints as the caller describes them, and as the core sees them.

use http::uri::Scheme;
use http::{HeaderValue, Uri};
use steadfast_core::engine::EndpointSpec;
use steadfast_core::limiter::LimiterConfig;
use steadfast_core::policy::Policy;

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
    /// The name replies, errors, metrics and summaries show (default: the provider's
    /// name, numbered when several endpoints would share it; see [`names`]).
    #[serde(default)]
    pub name: Option<String>,
    /// The API root, with or without a trailing `/v1` or `/`.
    pub base_url: String,
    /// The API shape.
    #[serde(default)]
    pub provider: Provider,
    /// The keys, rotated round-robin. Empty: the provider's usual environment variable
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) is read when the client is built.
    #[serde(default)]
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
    /// With a shared store: whether this endpoint's breaker "open until" is shared
    /// with the other processes (default: the policy's `shared.breaker`).
    #[serde(default)]
    pub share_breaker: Option<bool>,
}

impl EndpointDef {
    /// An endpoint at `base_url` speaking `provider` with one key, priority 0.
    pub fn new(base_url: impl Into<String>, provider: Provider, key: impl Into<ApiKey>) -> Self {
        EndpointDef::from_env(base_url, provider).key(key)
    }

    /// An endpoint at `base_url` speaking `provider` with no key given: the client
    /// reads it from the provider's environment variable when it is built
    /// ([`ProviderExt::key_env`]).
    ///
    /// ```
    /// use steadfast_http::{EndpointDef, Provider};
    /// let e = EndpointDef::from_env("https://api.anthropic.com", Provider::Anthropic);
    /// assert!(e.keys.is_empty());
    /// ```
    pub fn from_env(base_url: impl Into<String>, provider: Provider) -> Self {
        EndpointDef {
            name: None,
            base_url: base_url.into(),
            provider,
            keys: Vec::new(),
            model: None,
            priority: 0,
            limiter: None,
            share_breaker: None,
        }
    }

    /// The same endpoint named `name` (in replies' `served_by`, errors, metrics and
    /// the batch summary).
    ///
    /// ```
    /// use steadfast_http::{EndpointDef, Provider};
    /// let e = EndpointDef::new("https://api.openai.com", Provider::OpenAi, "sk-1").name("primary");
    /// assert_eq!(e.name.as_deref(), Some("primary"));
    /// ```
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// With no key given, the key from the provider's environment variable as `lookup`
    /// reads it (`std::env::var` when a client is built); unchanged otherwise.
    #[must_use]
    pub fn with_env_key(mut self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        if self.keys.is_empty()
            && let Some(key) = lookup(self.provider.key_env()).filter(|k| !k.trim().is_empty())
        {
            self.keys.push(ApiKey::from(key.trim().to_owned()));
        }
        self
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

    /// The same endpoint sharing its breaker's "open until" through the client's
    /// store (`true`) or keeping it to itself (`false`), whatever the policy's
    /// `shared.breaker` says: with a store, a breaker one process opens keeps the
    /// others from sending until its next probe.
    ///
    /// ```
    /// use steadfast_http::{EndpointDef, Provider};
    /// let e = EndpointDef::new("https://api.openai.com", Provider::OpenAi, "sk-1").share_breaker(true);
    /// assert_eq!(e.share_breaker, Some(true));
    /// ```
    #[must_use]
    pub fn share_breaker(mut self, share: bool) -> Self {
        self.share_breaker = Some(share);
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
            return Err(SetupError::NoKeys {
                endpoint: index,
                env: self.provider.key_env(),
            });
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

/// Names for endpoints, by index: each its own `name`, else its provider's; a name two
/// endpoints share gets its 1-based index (`openai#2`).
///
/// ```
/// use steadfast_http::{EndpointDef, Provider, endpoint_names};
/// let e = |p| EndpointDef::new("http://127.0.0.1:1", p, "k");
/// let defs = [e(Provider::OpenAi), e(Provider::OpenAi).name("b"), e(Provider::Anthropic), e(Provider::OpenAi)];
/// assert_eq!(endpoint_names(&defs), ["openai#1", "b", "anthropic", "openai#4"]);
/// ```
pub fn names(endpoints: &[EndpointDef]) -> Vec<String> {
    let base: Vec<String> = endpoints
        .iter()
        .map(|e| {
            e.name
                .clone()
                .unwrap_or_else(|| e.provider.name().to_owned())
        })
        .collect();
    base.iter()
        .enumerate()
        .map(|(i, n)| {
            if base.iter().filter(|m| *m == n).count() > 1 {
                format!("{n}#{}", i + 1)
            } else {
                n.clone()
            }
        })
        .collect()
}

/// A request limit as a shared store counts it: `requests` per `period`, at most
/// `burst` at once (the local limiter's burst: `⌊requests × burst share⌋`, at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimit {
    /// Requests per period.
    pub requests: u32,
    /// The period.
    pub period: std::time::Duration,
    /// Requests at once on a full bucket.
    pub burst: u32,
}

impl RequestLimit {
    /// The rate per minute, rounded down, at least 1.
    pub fn per_minute(&self) -> u32 {
        let period = self.period.as_nanos().max(1);
        let per_minute = u128::from(self.requests) * 60_000_000_000 / period;
        u32::try_from(per_minute).unwrap_or(u32::MAX).max(1)
    }
}

/// `def`'s token limit as a shared store counts it: tokens per minute and the
/// bucket's burst (the local limiter's), if it has one.
pub fn token_limit(def: &EndpointDef, policy: &Policy) -> Option<(u64, u64)> {
    let limiter = def.limiter.as_ref().unwrap_or(&policy.limiter);
    let tokens = limiter.tokens?;
    let period = limiter.period.as_nanos().max(1);
    let per_minute = u128::from(tokens) * 60_000_000_000 / period;
    Some((
        u64::try_from(per_minute).unwrap_or(u64::MAX).max(1),
        limiter.token_burst()?,
    ))
}

/// `def`'s request limit (its own limiter, else the policy's), if it has one.
pub fn request_limit(def: &EndpointDef, policy: &Policy) -> Option<RequestLimit> {
    let limiter = def.limiter.as_ref().unwrap_or(&policy.limiter);
    let requests = limiter.requests?;
    let burst = (f64::from(requests) * limiter.burst).floor() as u32;
    Some(RequestLimit {
        requests,
        period: limiter.period,
        burst: burst.clamp(1, requests),
    })
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

/// The `Host` header of a request to `url`: its host, and its port when that is not
/// the scheme's own (`None` for a URL without a host).
pub fn host_header(url: &Uri) -> Option<HeaderValue> {
    let authority = url.authority()?;
    let own_port = if url.scheme() == Some(&Scheme::HTTPS) {
        443
    } else {
        80
    };
    let host = match authority.port_u16() {
        Some(port) if port != own_port => format!("{}:{port}", authority.host()),
        _ => authority.host().to_owned(),
    };
    HeaderValue::try_from(host).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_header_names_the_port_only_when_it_is_not_the_scheme_s() {
        let host = |url: &str| host_header(&Uri::try_from(url).unwrap());
        for (url, want) in [
            ("http://api.example.com/v1", "api.example.com"),
            ("http://api.example.com:80/v1", "api.example.com"),
            ("http://127.0.0.1:8080", "127.0.0.1:8080"),
            ("https://api.example.com:443/v1", "api.example.com"),
            ("https://api.example.com:80/v1", "api.example.com:80"),
            ("http://[::1]:9/", "[::1]:9"),
        ] {
            assert_eq!(host(url), Some(HeaderValue::from_static(want)), "{url}");
        }
        assert_eq!(host("/v1/chat/completions"), None);
    }

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
            Err(SetupError::NoKeys {
                endpoint: 4,
                env: "OPENAI_API_KEY"
            })
        );
        assert_eq!(
            EndpointDef::new("ftp://x", Provider::OpenAi, "k").spec(1),
            Err(SetupError::BaseUrl { endpoint: 1 })
        );
        assert_eq!(specs(&[]), Err(SetupError::NoEndpoints));
        assert!(!format!("{e:?}").contains("k1"));
    }

    #[test]
    fn a_missing_key_comes_from_the_providers_variable() {
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| " sk-ant ".to_owned());
        let e = EndpointDef::from_env("http://h", Provider::Anthropic).with_env_key(env);
        assert_eq!(e.keys, [ApiKey::from("sk-ant")]);
        let e = EndpointDef::from_env("http://h", Provider::OpenAi).with_env_key(env);
        assert!(e.keys.is_empty());
        assert_eq!(
            e.spec(2),
            Err(SetupError::NoKeys {
                endpoint: 2,
                env: "OPENAI_API_KEY"
            })
        );
        let given = EndpointDef::new("http://h", Provider::Anthropic, "mine").with_env_key(env);
        assert_eq!(given.keys, [ApiKey::from("mine")]);
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
