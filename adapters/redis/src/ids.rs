//! Ids and the key layout. Every id lands inside a key's hash tag, so ids are
//! validated, never escaped: printable ASCII without `{` and `}`, 1 to
//! [`MAX_ID_LEN`] bytes.

use crate::error::Invalid;

/// The longest id (limit name, key id, endpoint id, business key, owner) in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The version of the key layout and of the scripts. A v2 layout gets other keys
/// (the version is inside the hash tag) and other script hashes, so processes of
/// both versions can run side by side during a rolling upgrade without either
/// reading the other's state.
pub const LAYOUT_VERSION: &str = "1";

/// The name of a shared limit, e.g. `"openai:key0"` (never a secret).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LimitKey(String);

impl LimitKey {
    /// A limit name, checked as every id is.
    pub fn new(name: impl Into<String>) -> Result<Self, Invalid> {
        let name = name.into();
        check("limit", &name)?;
        Ok(LimitKey(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks one id: 1 to [`MAX_ID_LEN`] bytes of printable ASCII (`!` to `~`)
/// except `{` and `}`.
pub(crate) fn check(what: &'static str, id: &str) -> Result<(), Invalid> {
    if id.is_empty() {
        return Err(Invalid::Empty { what });
    }
    if id.len() > MAX_ID_LEN {
        return Err(Invalid::TooLong {
            what,
            len: id.len(),
        });
    }
    match id
        .bytes()
        .find(|b| !b.is_ascii_graphic() || *b == b'{' || *b == b'}')
    {
        Some(byte) => Err(Invalid::Byte { what, byte }),
        None => Ok(()),
    }
}

/// Builds keys: `{<prefix><version>:<class>:<id>}:<field>`.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    namespace: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            namespace: format!("{prefix}{LAYOUT_VERSION}"),
        }
    }

    fn key(&self, class: char, id: &str, field: &str) -> String {
        format!("{{{}:{class}:{id}}}:{field}", self.namespace)
    }

    /// The GCRA state of a request limit (string: TAT in µs).
    pub(crate) fn requests(&self, limit: &LimitKey) -> String {
        self.key('l', limit.as_str(), "req")
    }

    /// The token bucket of a limit (hash: `l` level in units, `t` µs).
    pub(crate) fn tokens(&self, limit: &LimitKey) -> String {
        self.key('l', limit.as_str(), "tok")
    }

    /// A key id's cooldown (string, PX = the cooldown).
    pub(crate) fn cooling(&self, id: &str) -> String {
        self.key('k', id, "cool")
    }

    /// A key id's disable (string, PX = the disable's TTL).
    pub(crate) fn disabled(&self, id: &str) -> String {
        self.key('k', id, "off")
    }

    /// An endpoint's breaker "open until" (string, PX = time left open).
    pub(crate) fn open(&self, endpoint: &str) -> String {
        self.key('e', endpoint, "open")
    }

    /// An idempotency claim (hash: `s` state h|d, `o` owner, `r` result).
    pub(crate) fn claim(&self, business_key: &str) -> String {
        self.key('i', business_key, "claim")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_printable_ascii_without_braces() {
        assert_eq!(check("id", "openai:k0/9.a_b-c"), Ok(()));
        assert_eq!(check("id", ""), Err(Invalid::Empty { what: "id" }));
        assert_eq!(
            check("id", "a}b"),
            Err(Invalid::Byte {
                what: "id",
                byte: b'}'
            })
        );
        assert_eq!(
            check("id", "a b"),
            Err(Invalid::Byte {
                what: "id",
                byte: b' '
            })
        );
        assert_eq!(check("id", &"x".repeat(MAX_ID_LEN)), Ok(()));
        assert_eq!(
            check("id", &"x".repeat(MAX_ID_LEN + 1)),
            Err(Invalid::TooLong {
                what: "id",
                len: 129
            })
        );
        assert!(LimitKey::new("é").is_err());
    }

    #[test]
    fn one_limit_is_one_hash_slot() {
        let keys = Keys::new("sf");
        let limit = LimitKey::new("openai:k0").unwrap();
        assert_eq!(keys.requests(&limit), "{sf1:l:openai:k0}:req");
        assert_eq!(keys.tokens(&limit), "{sf1:l:openai:k0}:tok");
        assert_eq!(keys.cooling("ab12"), "{sf1:k:ab12}:cool");
        assert_eq!(keys.disabled("ab12"), "{sf1:k:ab12}:off");
        assert_eq!(keys.open("openai"), "{sf1:e:openai}:open");
        assert_eq!(keys.claim("order-7"), "{sf1:i:order-7}:claim");
    }
}
