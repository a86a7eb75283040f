//! The keys clients authenticate to the gateway with: `Authorization: Bearer KEY` (the
//! OpenAI SDKs) or `x-api-key: KEY` (the Anthropic SDKs). They are the gateway's own,
//! never a provider's; with none configured every request is let in, and the gateway
//! binds only loopback addresses.

use http::HeaderMap;
use steadfast_http::ApiKey;

/// The accepted keys.
#[derive(Clone, Default)]
pub struct GatewayKeys {
    keys: Vec<ApiKey>,
}

impl std::fmt::Debug for GatewayKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GatewayKeys({} keys)", self.keys.len())
    }
}

/// Who a request comes from, once let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The gateway takes no keys.
    Anyone,
    /// The gateway key at this index.
    Key(usize),
}

impl GatewayKeys {
    /// These keys (none: no authentication).
    pub fn new(keys: Vec<ApiKey>) -> GatewayKeys {
        GatewayKeys { keys }
    }

    /// Whether any key is required.
    pub fn required(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The caller of a request with these headers, or `None` when it must be refused.
    pub fn check(&self, headers: &HeaderMap) -> Option<Caller> {
        if self.keys.is_empty() {
            return Some(Caller::Anyone);
        }
        let sent = presented(headers)?;
        // Every key is compared in full, so the time taken does not tell which matched.
        let mut found = None;
        for (i, key) in self.keys.iter().enumerate() {
            if same(key.expose().as_bytes(), sent) && found.is_none() {
                found = Some(Caller::Key(i));
            }
        }
        found
    }
}

/// The key a request presents, from `Authorization: Bearer` or `x-api-key`.
fn presented(headers: &HeaderMap) -> Option<&[u8]> {
    if let Some(v) = headers.get(http::header::AUTHORIZATION) {
        let v = v.as_bytes();
        let scheme = v.get(..7)?;
        return scheme
            .eq_ignore_ascii_case(b"bearer ")
            .then(|| v.get(7..))
            .flatten()
            .map(<[u8]>::trim_ascii);
    }
    headers.get("x-api-key").map(|v| v.as_bytes().trim_ascii())
}

/// Equality whose time depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    diff == 0 && a.len() == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::HeaderName::try_from(name).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn either_header_carries_the_key_and_nothing_else_lets_in() {
        let keys = GatewayKeys::new(vec![ApiKey::new("gw-one"), ApiKey::new("gw-two")]);
        assert_eq!(
            keys.check(&headers("authorization", "Bearer gw-two")),
            Some(Caller::Key(1))
        );
        assert_eq!(
            keys.check(&headers("authorization", "bearer gw-one")),
            Some(Caller::Key(0))
        );
        assert_eq!(
            keys.check(&headers("x-api-key", "gw-one")),
            Some(Caller::Key(0))
        );
        assert_eq!(keys.check(&headers("x-api-key", "gw-on")), None);
        assert_eq!(keys.check(&headers("x-api-key", "gw-one-more")), None);
        assert_eq!(keys.check(&headers("authorization", "Basic gw-one")), None);
        assert_eq!(keys.check(&HeaderMap::new()), None);
        assert!(!format!("{keys:?}").contains("gw-one"), "keys never print");
        let open = GatewayKeys::default();
        assert_eq!(open.check(&HeaderMap::new()), Some(Caller::Anyone));
        assert!(!open.required());
    }
}
