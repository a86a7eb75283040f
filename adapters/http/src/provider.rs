//! What the HTTP faces do with each [`Provider`]: its URL and its request headers.

use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
pub use steadfast_core::provider::{Provider, UnknownProvider};

use crate::key::ApiKey;

/// `Idempotency-Key`: the same value on every attempt of one logical call.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Anthropic's key header.
pub const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// Anthropic's API version header.
pub const ANTHROPIC_VERSION: HeaderName = HeaderName::from_static("anthropic-version");
/// The `anthropic-version` value sent.
pub const ANTHROPIC_VERSION_VALUE: &str = "2023-06-01";

/// What the HTTP faces do with a [`Provider`]: its URLs and its request headers.
pub trait ProviderExt {
    /// The full request URL for a base URL given with or without a trailing `/v1`
    /// or `/` (`https://api.openai.com`, `https://api.openai.com/v1/` and
    /// `http://127.0.0.1:8080` all work).
    fn url(self, base_url: &str) -> String;

    /// The headers every request to this provider with `key` carries: authentication
    /// (marked sensitive, so `http`'s `Debug` hides it), the API version where one is
    /// required, and `content-type: application/json`.
    fn headers(self, key: &ApiKey) -> Result<HeaderMap, http::header::InvalidHeaderValue>;

    /// The environment variable the provider's own SDK reads its key from
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`): an endpoint given no key takes it.
    ///
    /// ```
    /// use steadfast_http::{Provider, ProviderExt};
    /// assert_eq!(Provider::Anthropic.key_env(), "ANTHROPIC_API_KEY");
    /// ```
    fn key_env(self) -> &'static str;
}

impl ProviderExt for Provider {
    fn url(self, base_url: &str) -> String {
        let mut base = base_url.trim().trim_end_matches('/');
        if let Some(stripped) = base.strip_suffix("/v1") {
            base = stripped;
        }
        let mut url = String::with_capacity(base.len() + self.path().len());
        url.push_str(base);
        url.push_str(self.path());
        url
    }

    fn headers(self, key: &ApiKey) -> Result<HeaderMap, http::header::InvalidHeaderValue> {
        let mut map = HeaderMap::with_capacity(4);
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        match self {
            Provider::OpenAi => {
                let mut v = HeaderValue::try_from(format!("Bearer {}", key.expose()))?;
                v.set_sensitive(true);
                map.insert(AUTHORIZATION, v);
            }
            Provider::Anthropic => {
                let mut v = HeaderValue::try_from(key.expose())?;
                v.set_sensitive(true);
                map.insert(X_API_KEY, v);
                map.insert(
                    ANTHROPIC_VERSION,
                    HeaderValue::from_static(ANTHROPIC_VERSION_VALUE),
                );
            }
        }
        Ok(map)
    }

    fn key_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_accepts_base_with_or_without_v1_and_slash() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
            " http://h:1 ",
        ] {
            assert_eq!(
                Provider::OpenAi.url(base),
                "http://h:1/v1/chat/completions",
                "{base}"
            );
            assert_eq!(Provider::Anthropic.url(base), "http://h:1/v1/messages");
        }
        assert_eq!(
            Provider::OpenAi.url("https://proxy.example/openai/v1"),
            "https://proxy.example/openai/v1/chat/completions"
        );
    }

    #[test]
    fn auth_headers_are_sensitive_and_shaped_per_provider() {
        let key = ApiKey::new("sk-secret-123");
        let h = Provider::OpenAi.headers(&key).unwrap();
        assert_eq!(h[AUTHORIZATION], "Bearer sk-secret-123");
        assert!(h[AUTHORIZATION].is_sensitive());
        assert!(!format!("{h:?}").contains("secret"));
        let h = Provider::Anthropic.headers(&key).unwrap();
        assert_eq!(h[X_API_KEY], "sk-secret-123");
        assert_eq!(h[ANTHROPIC_VERSION], "2023-06-01");
        assert!(h.get(AUTHORIZATION).is_none());
        assert!(!format!("{h:?}").contains("secret"));
        assert!(Provider::OpenAi.headers(&ApiKey::new("bad\nkey")).is_err());
    }
}
