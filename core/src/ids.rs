//! Identifiers of the things the core decides between. Secrets never enter the core:
//! a key is known by its [`KeyId`], an index the adapter maps to the real credential.

/// An endpoint (a provider's base URL with its model and keys), by index in the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct EndpointId(pub u16);

/// A key of an endpoint, by index among that endpoint's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct KeyId(pub u16);

/// Where one attempt goes: an endpoint and one of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Target {
    /// The endpoint.
    pub endpoint: EndpointId,
    /// The key used on it.
    pub key: KeyId,
}

impl Target {
    /// The target `(endpoint, key)`.
    pub const fn new(endpoint: u16, key: u16) -> Target {
        Target {
            endpoint: EndpointId(endpoint),
            key: KeyId(key),
        }
    }
}

/// One attempt of one call: its 1-based number within the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AttemptId(pub u32);

impl core::fmt::Display for EndpointId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "endpoint#{}", self.0)
    }
}

impl core::fmt::Display for KeyId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "key#{}", self.0)
    }
}

impl core::fmt::Display for Target {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.endpoint, self.key)
    }
}
