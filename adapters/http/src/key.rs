//! API keys: secrets that never print.

use core::fmt;

/// An API key. `Debug` and `Display` print `ApiKey(****)` and nothing else; the only
/// way to the secret is [`ApiKey::expose`], called where the auth header is built.
///
/// With serde it deserializes from a plain string (it has no `Serialize`, so it
/// cannot be written out by accident).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> ApiKey {
        ApiKey(secret.into())
    }

    /// The key in the environment variable `var`, when it is set and not blank.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .map(ApiKey)
    }

    /// The secret itself. Use it only to build the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of this key in `text` with `****`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            return text.to_owned();
        }
        text.replace(self.0.as_str(), "****")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> ApiKey {
        ApiKey::new(s)
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> ApiKey {
        ApiKey(s)
    }
}

impl<'de> serde::Deserialize<'de> for ApiKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ApiKey, D::Error> {
        String::deserialize(d).map(ApiKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_secret() {
        let k = ApiKey::new("sk-live-abcdef");
        assert_eq!(format!("{k:?}"), "ApiKey(****)");
        assert_eq!(format!("{k}"), "ApiKey(****)");
        assert_eq!(format!("{:?}", vec![k.clone()]), "[ApiKey(****)]");
        assert_eq!(k.expose(), "sk-live-abcdef");
        assert_eq!(k.redact("bad key sk-live-abcdef!"), "bad key ****!");
        let k: ApiKey = serde_json::from_str("\"sk-x\"").unwrap();
        assert_eq!(k.expose(), "sk-x");
    }
}
