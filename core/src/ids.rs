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

/// The endpoints a call may use: one endpoint (of any id), or a set of the first
/// [`EndpointSet::CAPACITY`] endpoints (a gateway's route, a caller's choice).
/// Fixed size and `Copy`, so a [`Call`](crate::retry::Call) stays allocation-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointSet(Members);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Members {
    One(EndpointId),
    Among(u128),
}

impl EndpointSet {
    /// How many endpoints (ids `0..CAPACITY`) a set of several can name.
    pub const CAPACITY: usize = 128;

    /// Only `endpoint`.
    pub const fn one(endpoint: EndpointId) -> EndpointSet {
        EndpointSet(Members::One(endpoint))
    }

    /// The set of `endpoints`, or `None` when one of them is beyond
    /// [`EndpointSet::CAPACITY`] or there are none.
    pub fn of(endpoints: impl IntoIterator<Item = EndpointId>) -> Option<EndpointSet> {
        let mut bits: u128 = 0;
        for e in endpoints {
            bits |= 1u128.checked_shl(u32::from(e.0)).filter(|_| e.0 < 128)?;
        }
        (bits != 0).then_some(EndpointSet(Members::Among(bits)))
    }

    /// Whether `endpoint` is in the set.
    pub fn contains(&self, endpoint: EndpointId) -> bool {
        match self.0 {
            Members::One(only) => only == endpoint,
            Members::Among(bits) => 1u128
                .checked_shl(u32::from(endpoint.0))
                .is_some_and(|bit| endpoint.0 < 128 && bits & bit != 0),
        }
    }
}

impl From<EndpointId> for EndpointSet {
    fn from(endpoint: EndpointId) -> EndpointSet {
        EndpointSet::one(endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_it_was_given_and_nothing_else() {
        let set = EndpointSet::of([EndpointId(0), EndpointId(5), EndpointId(127)]).unwrap();
        for i in 0..300u16 {
            let want = matches!(i, 0 | 5 | 127);
            assert_eq!(set.contains(EndpointId(i)), want, "endpoint {i}");
        }
        assert_eq!(EndpointSet::of([EndpointId(128)]), None, "beyond capacity");
        assert_eq!(EndpointSet::of([]), None, "empty");
        let one = EndpointSet::one(EndpointId(4000));
        assert!(one.contains(EndpointId(4000)) && !one.contains(EndpointId(0)));
    }
}
